"""``irc compile``, ``irc run``, ``irc bench`` and ``irc show``."""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import os
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .. import runtime
from .. import vm as irc_vm
from ..core.diagnostics import IRCError
from ..core.instrument import PrintIR
from ..core.transform import PassContext
from ..passes import BindSymbolicVars, get_pipeline, parameter_shape_vars
from . import options
from .models import (
    check_input_names,
    check_records,
    choose_function,
    compile_model,
    graph_functions,
    is_executable,
    load_executable_file,
    load_model,
    read_inputs,
)

TARGET_HELP = ("compilation target, e.g. 'llvm' (this CPU), 'llvm -mcpu=znver4 "
               "-num-cores 2', 'cuda' (default: llvm)")
MODEL_HELP = ("the model: a .ir file (irc's text format), a .onnx file, a Python module's "
              "IRModule as module:attribute or file.py:attribute, or a compiled .ircx "
              "executable")
SHAPE_HELP = ("the size of a symbolic dimension of the function's parameters: a model is "
              "built for it, a compiled .ircx gets random inputs of it; repeat for several")
# Options that build a model, refused for a compiled .ircx executable.
BUILD_OPTIONS = ("target", "pipeline", "records", "check_bounds")


def _add_build_options(p: argparse.ArgumentParser, records: bool = True) -> None:
    p.add_argument("--target", help=TARGET_HELP)
    p.add_argument("--pipeline", choices=["default", "zero"],
                   help="the pass pipeline: 'default' (fusion, default schedules) or "
                        "'zero' (legalize and fuse only) (default: default)")
    if records:
        p.add_argument("--records", metavar="DB",
                       help="build with the best schedules of these tuning records (a "
                            "record file or a work directory written by 'irc tune')")
    p.add_argument("--check-bounds", action="store_true",
                   help="check every buffer index at run time: an index outside its "
                        "buffer stops the kernel with an error naming the function, "
                        "buffer and index (slower; for finding bugs)")


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``compile``, ``run``, ``bench`` and ``show`` to the ``irc`` command."""
    comp = sub.add_parser("compile", help="compile a model to an executable file (.ircx)",
                          description="Compile a model and write the executable (kernels "
                                      "and bytecode) to a .ircx file that 'irc run' and "
                                      "irc.vm.Executable.load read.")
    comp.add_argument("model", help=MODEL_HELP.replace(", or a compiled .ircx executable",
                                                       ""))
    comp.add_argument("-o", "--output", metavar="FILE.ircx",
                      help="where to write the executable (default: the model's name "
                           "with .ircx)")
    comp.add_argument("--function", metavar="NAME",
                      help="the graph function --shape specializes (default: main, or the "
                           "only graph function)")
    comp.add_argument("--shape", action="append", default=[], type=options.binding,
                      metavar="NAME=INT",
                      help="build for this size of a symbolic dimension of the function's "
                           "parameters; repeat for several")
    _add_build_options(comp)
    comp.set_defaults(func=cmd_compile)

    run = sub.add_parser("run", help="run a model on inputs from files (or random ones) "
                                     "and save its outputs",
                         description="Compile a model (or load a .ircx executable), run one "
                                     "function on the given inputs, print a summary of the "
                                     "outputs and optionally save them.")
    run.add_argument("model", help=MODEL_HELP)
    _add_io_options(run)
    run.add_argument("--output", metavar="OUT.npz",
                     help="save the outputs to this .npz file (output0, output1, ...)")
    run.add_argument("--device", choices=["cpu", "cuda"],
                     help="where to run: cpu, or cuda for code compiled with --target cuda "
                          "(default: the target's device)")
    _add_build_options(run)
    run.set_defaults(func=cmd_run)

    bench = sub.add_parser("bench", help="time a model: latency median, p90, min, spread "
                                         "and throughput (optionally against ONNX Runtime)",
                           description="Compile a model and time its function; with "
                                       "--compare onnxruntime an ONNX model also runs in "
                                       "ONNX Runtime in the same run, timed the same way.")
    bench.add_argument("model", help=MODEL_HELP)
    _add_io_options(bench, random_default=True)
    bench.add_argument("--repeat", type=options.positive, default=50, metavar="N",
                       help="timed runs (default: 50)")
    bench.add_argument("--warmup", type=options.non_negative, default=5, metavar="N",
                       help="untimed runs first (default: 5)")
    bench.add_argument("--threads", type=options.threads, metavar="N",
                       help="threads for irc's parallel loops (the target's -num-cores) and "
                            "for ONNX Runtime, at most the machine's cores (default: every "
                            "core)")
    bench.add_argument("--compare", choices=["onnxruntime"],
                       help="also time the ONNX model in ONNX Runtime (CPU provider)")
    _add_build_options(bench)
    bench.set_defaults(func=cmd_bench)

    show = sub.add_parser("show", help="print a model in irc's text format, optionally "
                                       "after a pipeline",
                          description="Parse or import a model and print it; with "
                                      "--pipeline after that pipeline, with "
                                      "--print-after-all after each of its passes.")
    show.add_argument("model", help=MODEL_HELP.replace(", or a compiled .ircx executable",
                                                       ""))
    show.add_argument("--pipeline", choices=["zero", "default"],
                      help="print the module after this pipeline instead of as written")
    show.add_argument("--print-after-all", action="store_true",
                      help="print the module after every pass of the pipeline")
    show.add_argument("--show-meta", action="store_true",
                      help="print the values of constants (a metadata section), so that "
                           "the text parses back (irc.parse) to the same module")
    show.add_argument("--target", help=TARGET_HELP + "; with --pipeline")
    show.set_defaults(func=cmd_show)


def _add_io_options(p: argparse.ArgumentParser, random_default: bool = False) -> None:
    p.add_argument("--function", metavar="NAME",
                   help="the function to run (default: main, or the only graph function)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE",
                   help="an input: NAME=file.npy, NAME=file.npz, or file.npz (arrays by "
                        "parameter name); repeat for several, each input once")
    if not random_default:
        p.add_argument("--random", action="store_true",
                       help="make seeded random values for the inputs not given")
    p.add_argument("--seed", type=options.seed, default=0,
                   help="seed of random inputs, 0 or more (default: 0)")
    p.add_argument("--shape", action="append", default=[], type=options.binding,
                   metavar="NAME=INT", help=SHAPE_HELP)


# -- building -----------------------------------------------------------------------------

@dataclass
class Built:
    """A compiled (or loaded) executable, the function to run, and what random inputs of
    it need."""

    ex: Any
    function: str
    compile_secs: float
    random_shapes: dict[str, int]


def _check_build(args: argparse.Namespace) -> Any:
    """Check the build options before any work: the target (None for a compiled .ircx,
    which refuses them), the tuning records."""
    if is_executable(args.model):
        given = options.explicit(args, *BUILD_OPTIONS)
        if given:
            raise IRCError(f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} "
                           f"when compiling a model; {args.model} is compiled already",
                           hint="give the model (.ir, .onnx, module:attribute) to build it "
                                "with other options")
        return None
    target = options.check_target(args.target)
    check_records(args.records, args.pipeline, args.check_bounds)
    return target


def _build(args: argparse.Namespace, target: Any, given: dict[str, Any],
           random_ok: bool) -> Built:
    """Load or compile ``args.model``: a model is specialized to ``--shape`` first; a
    compiled executable keeps ``--shape`` for its random inputs. The inputs given, and
    what random ones need, are checked before the model is compiled."""
    shapes = options.bindings(args.shape)
    if is_executable(args.model):
        ex = load_executable_file(args.model)
        name = choose_function(list(ex.functions), args.function, args.model)
        fn = ex.functions[name]
        dims = [fn.slot_names[d[1]] for chk in fn.param_checks for d in chk.dims or ()
                if isinstance(d, list) and d[0] == "bind"]
        _check_arguments(name, list(fn.params), given, random_ok, shapes, dims)
        return Built(ex, name, 0.0, shapes)
    mod = load_model(args.model)
    name = choose_function(graph_functions(mod), args.function, args.model)
    dims = [v.name for v in parameter_shape_vars(mod[name])]
    _check_arguments(name, [p.name_hint for p in mod[name].params], given, random_ok,
                     shapes, dims)
    mod = _specialize(mod, name, shapes)
    ex, secs = compile_model(mod, target, args.pipeline or "default", args.records,
                             args.check_bounds)
    return Built(ex, name, secs, {})


def _check_arguments(function: str, params: list[str], given: dict[str, Any],
                     random_ok: bool, shapes: dict[str, int], dims: list[str]) -> None:
    """Inputs name parameters; missing ones may be random (``random_ok``), and then
    every symbolic dimension needs a size."""
    check_input_names(given, params, function)
    _check_shape_names(shapes, dims, function)
    missing = [p for p in params if p not in given]
    if missing and not random_ok:
        raise IRCError(f"{function} takes {', '.join(params)}; no input was given for "
                       f"{', '.join(missing)}",
                       hint="give --input NAME=file.npy (or file.npz), or --random for "
                            "seeded random values")
    unsized = [d for d in dims if d not in shapes]
    if missing and unsized:
        raise IRCError(f"random inputs of {function} need the size of its symbolic "
                       f"dimension{'s' if len(unsized) > 1 else ''} {', '.join(unsized)}",
                       hint=f"give --shape {' --shape '.join(d + '=INT' for d in unsized)}, "
                            "or every input from a file (--input)")


def _specialize(mod: Any, function: str, shapes: dict[str, int]) -> Any:
    if shapes:
        _check_shape_names(shapes, [v.name for v in parameter_shape_vars(mod[function])],
                           function)
        mod = BindSymbolicVars(function, shapes)(mod)
    return mod


def _check_shape_names(shapes: dict[str, int], dims: Sequence[str], function: str) -> None:
    unknown = [n for n in shapes if n not in dims]
    if not unknown:
        return
    lower = {d.lower(): d for d in dims}
    close = sorted({lower[m] for n in unknown
                    for m in difflib.get_close_matches(n.lower(), list(lower))})
    raise IRCError(f"--shape {', '.join(unknown)}: the parameters of {function} have no "
                   f"symbolic dimension of {'this name' if len(unknown) == 1 else 'these names'}"
                   f"; they have {', '.join(dims) if dims else 'none (all shapes are static)'}"
                   + (f" (did you mean {', '.join(close)}?)" if close else ""))


# -- compile ------------------------------------------------------------------------------

def cmd_compile(args: argparse.Namespace) -> int:
    """``irc compile``: write a compiled executable (.ircx)."""
    if is_executable(args.model):
        raise IRCError(f"{args.model} is already compiled")
    target = _check_build(args)
    out = args.output or os.path.splitext(os.path.basename(args.model.split(":")[-1]))[0] \
        + ".ircx"
    options.check_output(out, "-o", (".ircx",))
    shapes = options.bindings(args.shape)
    mod = load_model(args.model)
    if shapes or args.function is not None:
        name = choose_function(graph_functions(mod), args.function, args.model)
        mod = _specialize(mod, name, shapes)
    ex, secs = compile_model(mod, target, args.pipeline or "default", args.records,
                             args.check_bounds)
    ex.save(out)
    stats = ex.stats()
    print(f"wrote {out}: {stats['kernels']} kernels, {stats['instructions']} VM "
          f"instructions, target {ex.target} (compiled in {secs:.2f} s)")
    return 0


# -- inputs -------------------------------------------------------------------------------

def _arguments(built: Built, given: dict[str, Any], args: argparse.Namespace
               ) -> tuple[list[Any], str]:
    """The arguments of the function to run and a description of where they came
    from."""
    fn = built.ex.functions[built.function]
    missing = [p for p in fn.params if p not in given]
    randoms = built.ex.random_inputs(built.function, args.seed, built.random_shapes) \
        if missing else []
    values = [given[p] if p in given else randoms[i] for i, p in enumerate(fn.params)]
    if not missing:
        where = "inputs from files"
    elif len(missing) == len(fn.params):
        where = f"random inputs (seed {args.seed})"
    else:
        where = f"random {', '.join(missing)} (seed {args.seed}), the rest from files"
    return values, where


def _outputs(value: Any) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _outputs(v)]
    if hasattr(value, "numpy"):
        return [value.numpy()]
    return [np.asarray(value)]


def _summary(arr: np.ndarray) -> str:
    with np.printoptions(precision=5, suppress=True, threshold=20, edgeitems=4):
        return f"tensor {arr.shape} {arr.dtype}\n{arr}"


def _device(name: str) -> Any:
    if name != "cuda":
        return runtime.cpu()
    gpu = runtime.cuda()
    if not gpu.exist:
        raise IRCError("running code compiled for cuda needs an NVIDIA GPU, and this "
                       "machine has none (or its driver cannot be loaded)",
                       hint="compile for the CPU (--target llvm), or run on a machine with "
                            "a GPU")
    return gpu


def _check_device(device: str | None, target: str) -> str:
    """The device to run code compiled for ``target`` on: ``device`` when it fits."""
    own = "cuda" if target.startswith("cuda") else "cpu"
    if device is not None and device != own:
        raise IRCError(f"--device {device} runs code compiled for "
                       f"{'cuda' if device == 'cuda' else 'the CPU'}, but the target is "
                       f"{target}", hint="--device cuda goes with --target cuda")
    return own


# -- run ----------------------------------------------------------------------------------

def cmd_run(args: argparse.Namespace) -> int:
    """``irc run``: run one function on inputs from files (or random ones), print the
    outputs and optionally save them."""
    target = _check_build(args)
    if target is not None:
        _device(_check_device(args.device, str(target)))  # a missing GPU: before compiling
    if args.output:
        options.check_output(args.output, "--output", (".npz",))
    options.bindings(args.shape)
    given = read_inputs(args.input)
    built = _build(args, target, given, random_ok=args.random)
    ex = built.ex
    device = _check_device(args.device, str(ex.target))
    values, where = _arguments(built, given, args)
    machine = irc_vm.VirtualMachine(ex, _device(device))
    start = time.perf_counter()
    out = machine[built.function](*values)
    secs = time.perf_counter() - start
    outputs = _outputs(out)
    print(f"irc run {args.model} (target {ex.target})")
    if built.compile_secs:
        stats = ex.stats()
        print(f"compiled in {built.compile_secs:.2f} s: {stats['kernels']} kernels, "
              f"{stats['instructions']} VM instructions")
    print(f"{built.function}({', '.join(ex.functions[built.function].params)}) on {where}: "
          f"{len(outputs)} output{'s' if len(outputs) != 1 else ''} in {secs * 1e3:.3f} ms")
    for i, arr in enumerate(outputs):
        print(f"output{i}: {_summary(arr)}")
    if args.output:
        _save_outputs(args.output, outputs)
        print(f"wrote {args.output}")
    return 0


def _save_outputs(path: str, outputs: list[np.ndarray]) -> None:
    try:
        np.savez(path, **{f"output{i}": a for i, a in enumerate(outputs)})
    except OSError as err:
        raise IRCError(f"cannot write {path}: {err.strerror or err}") from None


# -- bench --------------------------------------------------------------------------------

def _times(fn: Callable[[], Any], repeat: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _stats_line(name: str, times: list[float], batch: int) -> str:
    ms = sorted(t * 1e3 for t in times)
    med = statistics.median(ms)
    p90 = ms[min(len(ms) - 1, int(round(0.9 * (len(ms) - 1))))]
    spread = statistics.pstdev(ms) if len(ms) > 1 else 0.0
    rate = batch * 1e3 / med if med > 0 else float("inf")
    return (f"{name:<14} median {med:9.3f} ms  p90 {p90:9.3f} ms  min {ms[0]:9.3f} ms  "
            f"std {spread:7.3f} ms  {rate:9.1f} samples/s")


def cmd_bench(args: argparse.Namespace) -> int:
    """``irc bench``: latency statistics of one function (and ONNX Runtime's)."""
    if args.threads is not None and is_executable(args.model):
        raise IRCError(f"--threads sets the threads a model is compiled for; {args.model} "
                       "is compiled already (with the -num-cores of its target)")
    target = _check_build(args)
    if args.threads is not None:
        if target.kind.name != "llvm":
            raise IRCError("--threads sets the CPU threads of an llvm target")
        target = options.check_target(f"{target} -num-cores {args.threads}")
    if target is not None:
        _device(_check_device(None, str(target)))  # a missing GPU: before compiling
    if args.compare:
        if not args.model.endswith(".onnx"):
            raise IRCError("--compare onnxruntime needs an ONNX model (.onnx)")
        if importlib.util.find_spec("onnxruntime") is None:
            raise IRCError("--compare onnxruntime needs ONNX Runtime: pip install "
                           "'irc[onnx]'")
    options.bindings(args.shape)
    given = read_inputs(args.input)
    built = _build(args, target, given, random_ok=True)
    ex = built.ex
    values, where = _arguments(built, given, args)
    machine = irc_vm.VirtualMachine(ex, _device("cuda" if "cuda" in str(ex.target) else "cpu"))
    f = machine[built.function]
    batch = int(values[0].shape[0]) if values and getattr(values[0], "ndim", 0) else 1
    print(f"irc bench {args.model}: target {ex.target}, {where}, {args.warmup} warm-up and "
          f"{args.repeat} timed runs" + (f", compiled in {built.compile_secs:.2f} s"
                                         if built.compile_secs else ""))
    ours = _times(lambda: f(*values), args.repeat, args.warmup)
    print(_stats_line("irc", ours, batch))
    if args.compare:
        theirs = _onnxruntime_times(args, built, values)
        print(_stats_line("onnxruntime", theirs, batch))
        ratio = statistics.median(ours) / statistics.median(theirs)
        print(f"irc / onnxruntime (median): {ratio:.2f}x "
              f"({'irc faster' if ratio < 1 else 'onnxruntime faster'})")
    return 0


def _onnxruntime_times(args: argparse.Namespace, built: Built, values: list[Any]
                       ) -> list[float]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    if args.threads is not None:
        opts.intra_op_num_threads = args.threads
        opts.inter_op_num_threads = 1
    try:
        sess = ort.InferenceSession(args.model, opts, providers=["CPUExecutionProvider"])
    except Exception as err:  # noqa: BLE001 - ONNX Runtime's own errors, reported as ours
        raise IRCError(f"ONNX Runtime cannot load {args.model}: {err}") from None
    names = [i.name for i in sess.get_inputs()]
    params = list(built.ex.functions[built.function].params)
    feeds = {}
    for name in names:
        if name not in params:
            raise IRCError(f"ONNX Runtime's input {name!r} is not a parameter of irc's "
                           f"{built.function} ({', '.join(params)})")
        v = values[params.index(name)]
        feeds[name] = v.numpy() if hasattr(v, "numpy") else np.asarray(v)
    try:
        return _times(lambda: sess.run(None, feeds), args.repeat, args.warmup)
    except Exception as err:  # noqa: BLE001 - ONNX Runtime's own errors, reported as ours
        raise IRCError(f"ONNX Runtime cannot run {args.model}: {err}") from None


# -- show ---------------------------------------------------------------------------------

def cmd_show(args: argparse.Namespace) -> int:
    """``irc show``: print a model, optionally after a pipeline (and after each pass)."""
    if args.print_after_all and not args.pipeline:
        raise IRCError("--print-after-all prints the passes of a pipeline: add --pipeline "
                       "default (or zero)")
    if args.target is not None and not args.pipeline:
        raise IRCError("--target chooses what a pipeline builds for: add --pipeline default "
                       "(or zero), or leave --target out")
    target = options.check_target(args.target)
    mod = load_model(args.model)
    if args.pipeline:
        instruments = [PrintIR(file=sys.stdout, show_meta=args.show_meta)] \
            if args.print_after_all else []
        with target, PassContext(instruments=instruments):
            mod = get_pipeline(args.pipeline)(mod)
        if args.print_after_all:
            return 0
    sys.stdout.write(mod.script(show_meta=args.show_meta))
    return 0

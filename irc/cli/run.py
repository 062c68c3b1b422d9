"""``irc compile``, ``irc run``, ``irc bench`` and ``irc show``."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

from ..core.diagnostics import IRCError
from .models import (
    is_executable,
    load_executable,
    load_model,
    parse_bindings,
    read_inputs,
)

TARGET_HELP = ("compilation target, e.g. 'llvm' (this CPU), 'llvm -mcpu=znver4 "
               "-num-cores 2', 'cuda' (default: llvm)")
MODEL_HELP = ("the model: a .ir file (irc's text format), a .onnx file, a Python module's "
              "IRModule as module:attribute or file.py:attribute, or a compiled .ircx "
              "executable")


def _add_build_options(p: argparse.ArgumentParser, records: bool = True) -> None:
    p.add_argument("--target", default="llvm", help=TARGET_HELP)
    p.add_argument("--pipeline", default="default", choices=["default", "zero"],
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
    comp.add_argument("model", help=MODEL_HELP)
    comp.add_argument("-o", "--output", metavar="FILE.ircx",
                      help="where to write the executable (default: the model's name "
                           "with .ircx)")
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
    run.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                     help="where to run (cuda needs --target cuda) (default: cpu)")
    _add_build_options(run)
    run.set_defaults(func=cmd_run)

    bench = sub.add_parser("bench", help="time a model: latency median, p90, min, spread "
                                         "and throughput (optionally against ONNX Runtime)",
                           description="Compile a model and time its function; with "
                                       "--compare onnxruntime an ONNX model also runs in "
                                       "ONNX Runtime in the same run, timed the same way.")
    bench.add_argument("model", help=MODEL_HELP)
    _add_io_options(bench, random_default=True)
    bench.add_argument("--repeat", type=_positive, default=50, metavar="N",
                       help="timed runs (default: 50)")
    bench.add_argument("--warmup", type=_non_negative, default=5, metavar="N",
                       help="untimed runs first (default: 5)")
    bench.add_argument("--threads", type=_positive, metavar="N",
                       help="threads for irc's parallel loops (the target's -num-cores) and "
                            "for ONNX Runtime (default: every core)")
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
    show.add_argument("--target", default="llvm", help=TARGET_HELP)
    show.set_defaults(func=cmd_show)


def _add_io_options(p: argparse.ArgumentParser, random_default: bool = False) -> None:
    p.add_argument("--function", default="main", metavar="NAME",
                   help="the function to run (default: main)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE",
                   help="an input: NAME=file.npy, NAME=file.npz, or file.npz (arrays by "
                        "parameter name); repeat for several")
    if not random_default:
        p.add_argument("--random", action="store_true",
                       help="make seeded random values for the inputs not given")
    p.add_argument("--seed", type=int, default=0, help="seed of random inputs (default: 0)")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=INT",
                   help="the value of a symbolic dimension (for random inputs); repeat "
                        "for several")


def _positive(text: str) -> int:
    return _int_at_least(text, 1)


def _non_negative(text: str) -> int:
    return _int_at_least(text, 0)


def _int_at_least(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"expected {low} or more, got {value}")
    return value


# -- compile ------------------------------------------------------------------------------

def cmd_compile(args: argparse.Namespace) -> int:
    """``irc compile``: write a compiled executable (.ircx)."""
    if is_executable(args.model):
        raise IRCError(f"{args.model} is already compiled")
    ex, secs = load_executable(args.model, args.target, args.pipeline, args.records,
                               args.check_bounds)
    out = args.output or os.path.splitext(os.path.basename(args.model.split(":")[-1]))[0] \
        + ".ircx"
    ex.save(out)
    stats = ex.stats()
    print(f"wrote {out}: {stats['kernels']} kernels, {stats['instructions']} VM "
          f"instructions, target {ex.target} (compiled in {secs:.2f} s)")
    return 0


# -- inputs -------------------------------------------------------------------------------

def _inputs(ex: Any, args: argparse.Namespace, random_ok: bool) -> tuple[list[Any], str]:
    """The arguments of ``args.function`` and a description of where they came from."""
    fn = ex.functions.get(args.function)
    if fn is None:
        raise IRCError(f"{args.model} has no function {args.function!r}; it has "
                       f"{', '.join(ex.functions)}")
    given = read_inputs(args.input, list(fn.params))
    missing = [p for p in fn.params if p not in given]
    if missing and not (random_ok or getattr(args, "random", False)):
        raise IRCError(f"{args.function} takes {', '.join(fn.params)}; no input was given "
                       f"for {', '.join(missing)}",
                       hint="give --input NAME=file.npy (or file.npz), or --random for "
                            "seeded random values")
    randoms = ex.random_inputs(args.function, args.seed, parse_bindings(args.shape)) \
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
    from .. import runtime

    return runtime.cuda() if name == "cuda" else runtime.cpu()


# -- run ----------------------------------------------------------------------------------

def cmd_run(args: argparse.Namespace) -> int:
    """``irc run``: run one function on inputs from files (or random ones), print the
    outputs and optionally save them."""
    from .. import vm as irc_vm

    ex, compile_s = load_executable(args.model, args.target, args.pipeline, args.records,
                                    args.check_bounds)
    values, where = _inputs(ex, args, random_ok=False)
    machine = irc_vm.VirtualMachine(ex, _device(args.device))
    start = time.perf_counter()
    out = machine[args.function](*values)
    secs = time.perf_counter() - start
    outputs = _outputs(out)
    print(f"irc run {args.model} (target {ex.target})")
    if compile_s:
        stats = ex.stats()
        print(f"compiled in {compile_s:.2f} s: {stats['kernels']} kernels, "
              f"{stats['instructions']} VM instructions")
    print(f"{args.function}({', '.join(ex.functions[args.function].params)}) on {where}: "
          f"{len(outputs)} output{'s' if len(outputs) != 1 else ''} in {secs * 1e3:.3f} ms")
    for i, arr in enumerate(outputs):
        print(f"output{i}: {_summary(arr)}")
    if args.output:
        _save_outputs(args.output, outputs)
        print(f"wrote {args.output}")
    return 0


def _save_outputs(path: str, outputs: list[np.ndarray]) -> None:
    if not path.endswith(".npz"):
        raise IRCError(f"--output writes a .npz file, got {path}")
    try:
        np.savez(path, **{f"output{i}": a for i, a in enumerate(outputs)})
    except OSError as err:
        raise IRCError(f"cannot write {path}: {err.strerror}") from None


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
    from .. import vm as irc_vm
    from ..core.target import Target

    target = args.target
    if args.threads is not None:
        t = Target.canon(target)
        if t.kind.name != "llvm":
            raise IRCError("--threads sets the CPU threads of an llvm target")
        target = f"{t} -num-cores {args.threads}"
    if args.compare and not args.model.endswith(".onnx"):
        raise IRCError("--compare onnxruntime needs an ONNX model (.onnx)")
    ex, compile_s = load_executable(args.model, target, args.pipeline, args.records,
                                    args.check_bounds)
    values, where = _inputs(ex, args, random_ok=True)
    machine = irc_vm.VirtualMachine(ex, _device("cuda" if "cuda" in str(ex.target) else "cpu"))
    f = machine[args.function]
    batch = int(values[0].shape[0]) if values and getattr(values[0], "ndim", 0) else 1
    print(f"irc bench {args.model}: target {ex.target}, {where}, {args.warmup} warm-up and "
          f"{args.repeat} timed runs" + (f", compiled in {compile_s:.2f} s" if compile_s
                                         else ""))
    ours = _times(lambda: f(*values), args.repeat, args.warmup)
    print(_stats_line("irc", ours, batch))
    if args.compare:
        theirs = _onnxruntime_times(args, ex, values)
        print(_stats_line("onnxruntime", theirs, batch))
        ratio = statistics.median(ours) / statistics.median(theirs)
        print(f"irc / onnxruntime (median): {ratio:.2f}x "
              f"({'irc faster' if ratio < 1 else 'onnxruntime faster'})")
    return 0


def _onnxruntime_times(args: argparse.Namespace, ex: Any, values: list[Any]) -> list[float]:
    try:
        import onnxruntime as ort
    except ImportError:
        raise IRCError("--compare onnxruntime needs ONNX Runtime: pip install "
                       "'irc[onnx]'") from None
    opts = ort.SessionOptions()
    if args.threads is not None:
        opts.intra_op_num_threads = args.threads
        opts.inter_op_num_threads = 1
    try:
        sess = ort.InferenceSession(args.model, opts, providers=["CPUExecutionProvider"])
    except Exception as err:  # noqa: BLE001 - ONNX Runtime's own errors, reported as ours
        raise IRCError(f"ONNX Runtime cannot load {args.model}: {err}") from None
    names = [i.name for i in sess.get_inputs()]
    params = list(ex.functions[args.function].params)
    feeds = {}
    for name in names:
        if name not in params:
            raise IRCError(f"ONNX Runtime's input {name!r} is not a parameter of irc's "
                           f"{args.function} ({', '.join(params)})")
        v = values[params.index(name)]
        feeds[name] = v.numpy() if hasattr(v, "numpy") else np.asarray(v)
    return _times(lambda: sess.run(None, feeds), args.repeat, args.warmup)


# -- show ---------------------------------------------------------------------------------

def cmd_show(args: argparse.Namespace) -> int:
    """``irc show``: print a model, optionally after a pipeline (and after each pass)."""
    from ..core.instrument import PrintIR
    from ..core.target import Target
    from ..core.transform import PassContext
    from ..passes import get_pipeline

    mod = load_model(args.model)
    if args.print_after_all and not args.pipeline:
        raise IRCError("--print-after-all prints the passes of a pipeline: add --pipeline "
                       "default (or zero)")
    if args.pipeline:
        instruments = [PrintIR(file=sys.stdout)] if args.print_after_all else []
        with Target(args.target), PassContext(instruments=instruments):
            mod = get_pipeline(args.pipeline)(mod)
        if args.print_after_all:
            return 0
    print(mod.script())
    return 0

"""irc's default CPU build against ONNX Runtime on real models (issue 13).

For each model, in one run on one machine:

- irc's latency: ``from_onnx`` then ``irc.compile(mod, "llvm")`` — the default pipeline,
  no tuning, no records, no library dispatch — and the VM's ``main``, median of
  ``--repeat`` calls after ``--warmup``;
- ONNX Runtime's latency on the same model file and inputs (CPU provider, 2 intra-op
  threads, one inter-op thread, default graph optimizations), median the same way; the
  two are timed in alternating blocks of 5 calls, each after a pause and 3 untimed
  calls (``interleaved_medians``), so a slow phase of the shared machine hits both;
- the ratio irc / ORT (below 1 means irc is faster), irc's import + compile time (with
  an empty kernel cache);
- irc's GFLOPS (the model's floating-point operations, counted on its loop functions
  before scheduling, over the latency) and their fraction of the machine's measured
  peak: a register-only FMA loop on as many threads as irc's kernels use
  (:mod:`irc.testing.cpu_peak`). Effective figures: a Winograd layer counts the
  operations of the direct convolution it replaces, so a model whose 3x3 layers run
  as Winograd convolutions can exceed the peak;
- irc's error against ONNX Runtime (``max |irc - ort| / max |ort|``);
- ``x-core``: how fast data moved from one core to the other right before and right
  after the timing (GB/s of a copy that each thread reads from another's cache,
  :func:`irc.testing.cpu_peak.cross_core_copy_gbps`). On the shared development VM it
  read about 11.5 GB/s in its usual state and about 3.4 GB/s in phases lasting minutes
  in which irc's two-thread builds ran up to 1.2x longer (and ONNX Runtime about 1.1x):
  compare lines measured at the same level; two figures far apart mean the phase
  changed during the timing.

Models: ResNet-18, ResNet-50 and MobileNet-V2 at 224x224, BERT-base (12 layers, width
768) at sequence 128 — PyTorch's modules with seeded weights, exported once to ONNX
(``irc.testing.models.onnx_zoo``, cached in ``--cache``) — and seed 000's layer
(conv2d 3x3, 512 to 512 channels on 7x7, bias, ReLU, NCHW), written with
``onnx.helper``, also timed in PyTorch (oneDNN, 2 threads).

``--profile`` prints irc's per-kernel profile of each model (``vm.profile``).

``--tune SECONDS`` also tunes each model with ``irc.tune.ms.tune_relax`` for at most that
long (the task scheduler measures every task's default schedule first, so a tuned
kernel never replaces a faster default one), builds it with the records
(``compile_relax``, which also keeps the default schedule of every kernel that its
tuned version does not beat inside the network) and prints the tuned latency against
ONNX Runtime's, the tuning time and the trials measured. The records go to a temporary
directory, or to ``--work-dir DIR``, which is kept; ``--work-dir DIR`` without
``--tune`` builds and times the tuned line from DIR's records without tuning (to time
an earlier tuning run's build again, or look into it with ``ms.compile_relax``).

Run on a quiet machine: ``python benchmarks/cpu_models.py [--models resnet18,conv]
[--repeat 50] [--profile] [--tune 600]``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import statistics
import tempfile
import time
from typing import Any, Callable

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx_models import median_seconds  # the same timing as the ONNX zoo benchmark

import irc
from irc.core.target import Target, host_cpu_model
from irc.core.transform import PassContext
from irc.frontend.onnx import from_onnx
from irc.testing.cpu_peak import cross_core_copy_gbps, fma_peak_gflops
from irc.testing.models import onnx_zoo
from irc.tune import ms
from irc.tune.database import JSONDatabase
from irc.tune.graph import graph_tasks, prepare_graph

MODELS = ("resnet18", "resnet50", "mobilenet_v2", "bert", "conv")
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "irc", "cpu_models")
THREADS = 2


def seed000_conv(seed: int = 0) -> tuple[Any, dict[str, np.ndarray]]:
    """Seed 000's layer as ONNX: relu(conv2d(x, w, stride 1, pad 1) + b), NCHW,
    x (1, 512, 7, 7), w (512, 512, 3, 3); and its seeded input."""
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((512, 512, 3, 3)) / np.sqrt(512 * 9)).astype("float32")
    b = rng.standard_normal(512).astype("float32") * 0.1
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1],
                          strides=[1, 1], kernel_shape=[3, 3]),
         helper.make_node("Relu", ["c"], ["y"])],
        "seed000_conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 512, 7, 7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 512, 7, 7])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model, {"x": rng.standard_normal((1, 512, 7, 7)).astype("float32")}


def interleaved_medians(fns: list[Callable[[], Any]], repeat: int, warmup: int,
                        block: int = 5, settle: int = 3, pause: float = 0.3) -> list[float]:
    """The median time of a call of each of ``fns``, timed in alternating blocks of
    ``block`` calls (``repeat`` calls of each in all, after ``warmup``), so that a slow
    phase of this shared machine (another tenant's load) hits every side alike. Each
    block starts after a ``pause`` and ``settle`` untimed calls: ONNX Runtime's threads
    keep spinning for tens of milliseconds after its calls, and irc's parallel kernels
    (measured when they were split statically between the cores) ran up to 2x slower
    while they did; after a pause, the first calls of either side wake a halted
    virtual core (up to 3x slower on this machine)."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    times: list[list[float]] = [[] for _ in fns]
    while len(times[0]) < repeat:
        for fn, acc in zip(fns, times):
            time.sleep(pause)
            for _ in range(settle):
                fn()
            for _ in range(min(block, repeat - len(acc))):
                t0 = time.perf_counter()
                fn()
                acc.append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def load_model(name: str, cache: str) -> tuple[Any, dict[str, np.ndarray]]:
    """The model and its inputs: seed 000's conv, or a full-size zoo model (exported
    with PyTorch the first time, then read from ``cache``)."""
    if name == "conv":
        return seed000_conv()
    path = os.path.join(cache, f"{name}_full.onnx")
    if not os.path.exists(path):
        os.makedirs(cache, exist_ok=True)
        onnx.save(onnx_zoo.build(name, full=True), path)
    return onnx.load(path), onnx_zoo.random_inputs(name, full=True)


def model_flops(mod: Any) -> float:
    """Floating-point operations of one run: every loop function's count times its
    call sites, before scheduling, with every convolution direct (a Winograd layer
    counts as the direct convolution it replaces: GFLOPS are effective)."""
    with PassContext(disabled_pass=["WinogradConv2D"]):
        prepared = prepare_graph(mod)
    return sum(t.weight * max(t.flop_count, 0.0)
               for t in graph_tasks(prepared, include_simple=True))


def torch_conv_seconds(model: Any, feeds: dict[str, np.ndarray], repeat: int,
                       warmup: int) -> tuple[float, str] | None:
    """PyTorch's time for seed 000's layer (oneDNN, ``THREADS`` threads), or None
    without PyTorch."""
    try:
        import torch  # optional: the peer of the conv row only
    except ImportError:
        return None
    torch.set_num_threads(THREADS)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    x = torch.from_numpy(feeds["x"])
    w = torch.from_numpy(np.array(inits["w"]))
    b = torch.from_numpy(np.array(inits["b"]))

    def run() -> Any:
        with torch.no_grad():
            return torch.relu(torch.nn.functional.conv2d(x, w, b, padding=1))
    return median_seconds(run, repeat, warmup), torch.__version__


def cross_core() -> float:
    """The cross-core copy probe, GB/s (see the module docstring)."""
    return cross_core_copy_gbps(THREADS)[1]


def relative_error(vm: Any, inputs: list[np.ndarray], want: list[np.ndarray]) -> float:
    """``max |irc - ort| / max |ort|`` over the outputs of the VM's ``main``."""
    out = vm["main"](*inputs)
    got = [o.numpy() for o in out] if isinstance(out, (list, tuple)) else [out.numpy()]
    return max(float(np.abs(g.astype("float64") - w).max() / max(np.abs(w).max(), 1e-30))
               for g, w in zip(got, want))


def ort_session(model: Any) -> Any:
    """ONNX Runtime's CPU session of ``model``: ``THREADS`` intra-op threads, one
    inter-op thread, default graph optimizations."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = THREADS
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])


def compile_cold_and_again(mod: irc.IRModule, again: bool = True
                           ) -> tuple[irc.vm.Executable, float, float]:
    """``irc.compile(mod, "llvm")`` with an empty kernel cache (on disk in a temporary
    directory), then, with ``again``, once more from a fresh in-memory state (the kernels
    from the disk cache): the executable and the two times (seconds; 0 without
    ``again``)."""
    builds = importlib.import_module("irc.codegen.build")
    with tempfile.TemporaryDirectory(prefix="irc-bench-cache-") as tmp, \
            irc.settings(cache_dir=tmp, cache=True):
        builds.clear_cache()
        t0 = time.perf_counter()
        ex = irc.compile(mod, "llvm")
        t1 = time.perf_counter()
        if again:
            builds.clear_cache()
            ex = irc.compile(mod, "llvm")
        t2 = time.perf_counter()
    return ex, t1 - t0, t2 - t1


def bench(name: str, args: argparse.Namespace, peak: float) -> list[str]:
    model, feeds = load_model(name, args.cache)
    sess = ort_session(model)
    want = sess.run(None, feeds)
    t0 = time.perf_counter()
    mod = from_onnx(model)
    import_s = time.perf_counter() - t0
    ex, cold_s, _ = compile_cold_and_again(mod, again=False)
    compile_s = import_s + cold_s  # import and a compile with an empty kernel cache
    vm = irc.vm.VirtualMachine(ex, irc.cpu())
    inputs = [feeds[i.name] for i in model.graph.input if i.name in feeds]
    err = relative_error(vm, inputs, want)
    before = cross_core()
    t_ort, t_irc = interleaved_medians(
        [lambda: sess.run(None, feeds), lambda: vm["main"](*inputs)], args.repeat,
        args.warmup)
    after = cross_core()
    gflops = model_flops(mod) / t_irc / 1e9
    lines = [f"{name:13s} {t_irc * 1e3:9.3f} {t_ort * 1e3:9.3f} {t_irc / t_ort:6.2f}x "
             f"{compile_s:8.2f} {gflops:8.1f} {gflops / peak:6.0%} {err:9.1e} "
             f"{before:5.1f}/{after:4.1f}"]
    if name == "conv":
        tt = torch_conv_seconds(model, feeds, args.repeat, args.warmup)
        if tt is None:
            lines.append(f"{'':13s} PyTorch not installed: no oneDNN figure")
        else:
            lines.append(f"{'':13s} PyTorch {tt[1]} (oneDNN, {THREADS} threads) "
                         f"{tt[0] * 1e3:.3f} ms: irc / PyTorch {t_irc / tt[0]:.2f}x")
    if args.profile:
        report = vm.profile("main", *inputs, repeat=args.repeat, warmup=1)
        lines.append(report.table(top=12))
    if args.tune or args.work_dir:
        lines.append(tuned_line(mod, inputs, want, [lambda: sess.run(None, feeds),
                                                    lambda: vm["main"](*inputs)], args))
    return lines


def tuned_line(mod: Any, inputs: list[np.ndarray], want: list[np.ndarray],
               peers: list[Callable[[], Any]], args: argparse.Namespace) -> str:
    """Tune ``mod`` for at most ``args.tune`` seconds (none: use the records already in
    ``args.work_dir``), build it with the records and time it, interleaved with
    ``peers`` (ONNX Runtime, the default build): one line of the table."""
    with contextlib.ExitStack() as stack:
        work = args.work_dir or stack.enter_context(tempfile.TemporaryDirectory())
        t0 = time.perf_counter()
        if args.tune:
            # Rounds of 16 trials: within minutes the scheduler can come back to the
            # tasks with the most to gain instead of giving every task 64 first.
            db = ms.tune_relax(mod, None, "llvm", work, max_trials_global=100000,
                               time_budget=args.tune, num_trials_per_iter=16, verbose=0,
                               out=io.StringIO())
        else:
            db = stack.enter_context(contextlib.closing(JSONDatabase.from_work_dir(work)))
        tune_s = time.perf_counter() - t0 if args.tune else 0.0
        trials = len(db)
        ex = ms.compile_relax(db, mod, "llvm")
    vm = irc.vm.VirtualMachine(ex, irc.cpu())
    err = relative_error(vm, inputs, want)
    before = cross_core()
    t_ort, t_default, t = interleaved_medians(peers + [lambda: vm["main"](*inputs)],
                                              args.repeat, args.warmup)
    after = cross_core()
    return (f"{'  tuned':13s} {t * 1e3:9.3f} {t_ort * 1e3:9.3f} {t / t_ort:6.2f}x "
            f"{tune_s:8.0f}s tuning, {trials} records {err:9.1e}; default "
            f"{t_default * 1e3:.3f} ms in this timing (tuned/default {t / t_default:.2f}x); "
            f"x-core {before:.1f}/{after:.1f} GB/s")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(MODELS),
                   help=f"comma-separated, of {', '.join(MODELS)} (default: all)")
    p.add_argument("--repeat", type=int, default=50, help="timed calls per model")
    p.add_argument("--warmup", type=int, default=5, help="untimed calls first")
    p.add_argument("--cache", default=CACHE, help="where the exported ONNX models are kept")
    p.add_argument("--profile", action="store_true", help="print irc's per-kernel profiles")
    p.add_argument("--tune", type=float, default=0.0, metavar="SECONDS",
                   help="also tune each model with ms.tune_relax for at most this long")
    p.add_argument("--work-dir", metavar="DIR",
                   help="keep the tuning records in DIR (one model); without --tune, "
                        "time the build of DIR's records")
    args = p.parse_args()
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        p.error(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    if args.work_dir and len(names) != 1:
        p.error("--work-dir holds one model's records: choose one with --models")
    if args.work_dir and not args.tune and not os.path.isdir(args.work_dir):
        p.error(f"--work-dir {args.work_dir}: no such directory (tune into it with --tune)")
    t = Target.canon("llvm")
    peak1 = fma_peak_gflops(1, t)
    peak = fma_peak_gflops(THREADS, t)
    print(f"{host_cpu_model()} ({t.mcpu}, {t.vector_width_bits()}-bit vectors), "
          f"{os.cpu_count()} CPUs; irc {irc.__version__}, ONNX Runtime {ort.__version__}; "
          f"{THREADS} threads; median of {args.repeat} calls after {args.warmup}")
    print(f"measured FMA peak: {peak1:.0f} GFLOPS on 1 thread, {peak:.0f} GFLOPS on "
          f"{THREADS}")
    print(f"{'model':13s} {'irc ms':>9s} {'ORT ms':>9s} {'irc/ORT':>7s} {'compile':>8s} "
          f"{'GFLOPS':>8s} {'peak':>6s} {'err':>9s} {'x-core GB/s':>11s}")
    for name in names:
        try:
            lines = bench(name, args, peak)
        except irc.IRCError as err:
            lines = [f"{name:13s} irc error: {str(err).splitlines()[0]}"]
        print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

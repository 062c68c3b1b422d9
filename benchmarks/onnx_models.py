"""Real ONNX models through irc next to ONNX Runtime (issue 12): for each model of the ONNX
zoo (``tests/data/onnx``, written by ``python -m irc.testing.models.onnx_zoo``: PyTorch's
exporter, seeded weights, reduced widths), in one run,

- irc's import + compile time (``from_onnx`` then ``irc.compile(mod, "llvm")``, the
  default build: no dispatch, no tuning);
- irc's latency: the VM's ``main`` on the model's seeded inputs, median of ``--repeat``
  calls after ``--warmup``;
- ONNX Runtime's latency on the same inputs (CPU provider, 2 intra-op threads, one
  inter-op thread, its default sequential execution and graph optimizations), median
  the same way;
- the ratio irc / ORT, and irc's error against ORT (``max |irc - ort| / max |ort|``; for the
  QDQ model against ORT with graph optimizations off, which computes the graph as
  written, while the timed ORT session runs its fused integer kernels).

A model irc cannot import or compile yet gets a row with irc's error instead of figures.
``--full`` adds the published sizes of ResNet-18/50 and MobileNet-V2 (224x224, built with
PyTorch in this run; skipped with a note without it).

``--target cuda`` compiles for the GPU (the default build's GPU rules) and times the VM on
``irc.cuda(0)``, synchronizing after each call; ONNX Runtime then uses its CUDA provider
when the installed build has one, else the CPU provider with all cores (the header says
which).

Run: ``python benchmarks/onnx_models.py [--repeat 50] [--models resnet18,bert] [--full]
[--target llvm|cuda]`` on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any, Callable

import numpy as np
import onnx
import onnxruntime as ort

import irc
from irc.frontend.onnx import from_onnx
from irc.testing.models import onnx_zoo

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "onnx")


def median_seconds(fn: Callable[[], Any], repeat: int, warmup: int) -> float:
    """Median wall time of ``repeat`` calls of ``fn`` after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def ort_providers(target: str) -> list[str]:
    """ONNX Runtime's providers for ``target``: CUDA's when the GPU is the target and the
    installed build has it."""
    if target == "cuda" and "CUDAExecutionProvider" in ort.get_available_providers():
        return ["CUDAExecutionProvider"]
    return ["CPUExecutionProvider"]


def _session(model: Any, optimized: bool = True, target: str = "llvm") -> Any:
    opts = ort.SessionOptions()
    if target == "llvm":  # the 2-core machines: as many threads as irc uses
        opts.intra_op_num_threads = 2
    opts.inter_op_num_threads = 1
    if not optimized:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=ort_providers(target))


def _rel_err(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    return max(float(np.abs(g.astype("float64") - w).max() / max(np.abs(w).max(), 1e-30))
               for g, w in zip(got, want))


def _one_line(err: Exception, limit: int = 240) -> str:
    """``err`` on one line, without its hint (for a table row)."""
    lines = [ln.strip() for ln in str(err).splitlines() if not ln.startswith("hint:")]
    text = f"{type(err).__name__}: {' '.join(lines)}"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def bench(label: str, model: Any, feeds: dict[str, np.ndarray], repeat: int, warmup: int,
          exact_reference: bool, target: str = "llvm") -> str:
    """One row: ``label``'s figures, or irc's error where it cannot run the model."""
    sess = _session(model, target=target)
    t_ort = median_seconds(lambda: sess.run(None, feeds), repeat, warmup)
    want = (_session(model, optimized=False) if exact_reference else sess).run(None, feeds)
    head = f"{label:22s} ORT {t_ort * 1e3:9.3f} ms"
    try:
        t0 = time.perf_counter()
        mod = from_onnx(model)
        ex = irc.compile(mod, target)
        compile_s = time.perf_counter() - t0
    except irc.IRCError as err:
        return f"{head} | irc: {_one_line(err)}"
    dev = irc.cuda(0) if target == "cuda" else irc.cpu()
    vm = irc.vm.VirtualMachine(ex, dev)
    args = [irc.tensor(feeds[i.name], dev) for i in model.graph.input if i.name in feeds]

    def run() -> Any:
        out = vm["main"](*args)
        dev.sync()
        return out

    try:
        out = run()
    except irc.IRCError as err:
        return f"{head} | irc run: {_one_line(err)}"
    got = [o.numpy() for o in out] if isinstance(out, (list, tuple)) else [out.numpy()]
    t_irc = median_seconds(run, repeat, warmup)
    return (f"{head} | irc {t_irc * 1e3:9.3f} ms | irc/ORT {t_irc / t_ort:6.2f}x | "
            f"import+compile {compile_s:6.1f} s | err {_rel_err(got, want):.1e}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=50, help="timed calls per model")
    p.add_argument("--warmup", type=int, default=5, help="untimed calls first")
    p.add_argument("--models", default=",".join(onnx_zoo.ZOO),
                   help="comma-separated zoo models (default: all)")
    p.add_argument("--full", action="store_true",
                   help="also the published ResNet-18/50 and MobileNet-V2 (needs PyTorch)")
    p.add_argument("--data", default=DATA, help="directory of the committed .onnx files")
    p.add_argument("--target", choices=("llvm", "cuda"), default="llvm",
                   help="irc's target (default llvm)")
    args = p.parse_args()
    threads = "2 intra-op threads" if args.target == "llvm" else "all cores"
    print(f"irc {irc.__version__} on {args.target}, ONNX Runtime {ort.__version__} "
          f"({ort_providers(args.target)[0]}, {threads}), {os.cpu_count()} CPUs; "
          f"median of {args.repeat} calls after {args.warmup}")
    for name in args.models.split(","):
        path = os.path.join(args.data, f"{name}.onnx")
        print(bench(name, onnx.load(path), onnx_zoo.random_inputs(name), args.repeat,
                    args.warmup, exact_reference=name == "qdq_cnn", target=args.target),
              flush=True)
    if args.full:
        for name in (n for n, e in onnx_zoo.ZOO.items() if e.full_size):
            try:
                model = onnx_zoo.build(name, full=True)
            except irc.IRCError as err:  # PyTorch missing
                print(f"{name + ' (full)':22s} skipped: {err}")
                continue
            print(bench(f"{name} (full)", model, onnx_zoo.random_inputs(name, full=True),
                        args.repeat, args.warmup, exact_reference=False, target=args.target),
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

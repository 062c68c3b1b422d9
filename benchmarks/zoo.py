"""irc's default CPU build against ONNX Runtime on third-party models (issue 42).

The models are :mod:`irc.testing.models.thirdparty`'s: torchvision, timm and transformers
architectures with seeded weights, each at two input sizes through PyTorch's two ONNX
exporters, built and cached the first time (``~/.cache/irc/zoo``; building needs torch,
torchvision, timm, transformers and onnxscript). For each variant, in one run:

- irc's import time (``from_onnx``) and compile time (``irc.compile(mod, "llvm")``, the
  default build: no tuning, no records, no library dispatch), cold (an empty disk cache of
  compiled modules, in a temporary directory) and again (a fresh in-memory state, the
  kernels from the disk cache: what compiling the same model in a new process costs);
- irc's and ONNX Runtime's latency (CPU provider, 2 intra-op threads, one inter-op
  thread, default graph optimizations), timed in alternating blocks
  (``cpu_models.interleaved_medians``) so a slow phase of the shared machine hits both;
- the ratio irc / ORT (below 1: irc is faster) and irc's error against ORT
  (``max |irc - ort| / max |ort|``);

then the geometric mean of the ratios and the largest. ``--profile`` prints irc's top
kernels per model (``vm.profile``); ``--tune SECONDS`` also tunes every model for that long
(``ms.tune_relax``) and prints the tuned build's line (``cpu_models.tuned_line``).

Run on a quiet machine: ``python benchmarks/zoo.py [--models vit_tiny,bert@77/dynamo]
[--first] [--repeat 30] [--profile] [--tune 300] [--compile-only]``.
"""

from __future__ import annotations

import argparse
import math
import os
import time

import onnxruntime as ort
from cpu_models import (
    THREADS,
    compile_cold_and_again,
    cross_core,
    interleaved_medians,
    ort_session,
    relative_error,
    tuned_line,
)

import irc
from irc.core.target import Target, host_cpu_model
from irc.frontend.onnx import from_onnx
from irc.testing.models import thirdparty


def bench(v: thirdparty.Variant, args: argparse.Namespace) -> tuple[list[str], float | None]:
    """The table lines of variant ``v`` and its ratio irc / ORT (None where irc failed)."""
    model = thirdparty.load(v, args.cache)
    feeds = thirdparty.random_inputs(v)
    try:
        t0 = time.perf_counter()
        mod = from_onnx(model)
        t_import = time.perf_counter() - t0
        ex, t_cold, t_again = compile_cold_and_again(mod)
        if args.compile_only:
            return [f"{v.name:36s} {t_import:6.2f} {t_cold:7.2f} {t_again:6.2f}"], None
        sess = ort_session(model)
        want = sess.run(None, feeds)
        vm = irc.vm.VirtualMachine(ex, irc.cpu())
        inputs = [feeds[i.name] for i in model.graph.input if i.name in feeds]
        err = relative_error(vm, inputs, want)
    except irc.IRCError as e:
        return [f"{v.name:36s} irc error: {str(e).splitlines()[0]}"], None
    before = cross_core()
    t_ort, t_irc = interleaved_medians(
        [lambda: sess.run(None, feeds), lambda: vm["main"](*inputs)], args.repeat,
        args.warmup)
    after = cross_core()
    ratio = t_irc / t_ort
    lines = [f"{v.name:36s} {t_irc * 1e3:9.3f} {t_ort * 1e3:9.3f} {ratio:6.2f}x "
             f"{t_import:6.2f} {t_cold:7.2f} {t_again:6.2f} {err:9.1e} "
             f"{before:5.1f}/{after:4.1f}"]
    if args.profile:
        lines.append(vm.profile("main", *inputs, repeat=args.repeat, warmup=1).table(top=10))
    if args.tune:
        args.work_dir = None
        lines.append(tuned_line(mod, inputs, want, [lambda: sess.run(None, feeds),
                                                    lambda: vm["main"](*inputs)], args))
    return lines, ratio


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="",
                   help="comma-separated architectures or variants (default: all)")
    p.add_argument("--first", action="store_true",
                   help="only each architecture's first variant (TorchScript exporter)")
    p.add_argument("--repeat", type=int, default=30, help="timed calls per side")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls first")
    p.add_argument("--cache", default=thirdparty.CACHE, help="where the ONNX files are kept")
    p.add_argument("--profile", action="store_true", help="print irc's top kernels")
    p.add_argument("--tune", type=float, default=0.0, metavar="SECONDS",
                   help="also tune each model for at most this long")
    p.add_argument("--compile-only", action="store_true",
                   help="only import and compile (cold and again); no timing, no ORT")
    args = p.parse_args()
    try:
        chosen = thirdparty.variants([n for n in args.models.split(",") if n] or None)
    except irc.IRCError as err:
        p.error(str(err))
    if args.first:
        seen: set[str] = set()
        chosen = [v for v in chosen if not (v.arch.name in seen or seen.add(v.arch.name))]
    t = Target.canon("llvm")
    print(f"{host_cpu_model()} ({t.mcpu}, {t.vector_width_bits()}-bit vectors), "
          f"{os.cpu_count()} CPUs; irc {irc.__version__}, ONNX Runtime {ort.__version__}; "
          f"{THREADS} threads; median of {args.repeat} calls after {args.warmup}")
    if args.compile_only:
        print(f"{'model':36s} {'import':>6s} {'compile':>7s} {'again':>6s}  (seconds)")
    else:
        print(f"{'model':36s} {'irc ms':>9s} {'ORT ms':>9s} {'irc/ORT':>7s} {'import':>6s} "
              f"{'compile':>7s} {'again':>6s} {'err':>9s} {'x-core GB/s':>11s}")
    ratios: dict[str, float] = {}
    for v in chosen:
        try:
            lines, ratio = bench(v, args)
        except irc.IRCError as err:  # the model could not be built (a missing library)
            lines, ratio = [f"{v.name:36s} not built: {str(err).splitlines()[0]}"], None
        print("\n".join(lines), flush=True)
        if ratio is not None:
            ratios[v.name] = ratio
    if ratios and not args.compile_only:
        geo = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
        worst = max(ratios, key=ratios.__getitem__)
        print(f"geometric mean irc/ORT over {len(ratios)} models: {geo:.2f}x; largest "
              f"{ratios[worst]:.2f}x ({worst}); {len(chosen) - len(ratios)} not run")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

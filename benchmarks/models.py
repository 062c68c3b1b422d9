"""The model zoo end to end (issue 5): for each model at batch 1, irc's latency (default
pipeline, weights bound as constants, no tuning) next to its numpy reference forward
(float32, BLAS convolutions) timed in the same run, irc's compile time, and the VM's
statically planned memory (``planned_bytes``) against the sum of all intermediate tensors
(``intermediate_bytes``): the saving from memory planning.

Run: ``python benchmarks/models.py`` (all models at ImageNet size / sequence 128), or pick:
``python benchmarks/models.py --models resnet18,bert --repeat 3``. Every model's output
is also compared with the float64 reference (the relative error column), so a figure
never comes from a wrong program. Kernels are unscheduled (LLVM's vectorizer only): the
irc column is a starting point for the scheduling issues, not a peak.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import irc
from irc.testing.models import get_model, reference_ops

# benchmark name -> (zoo name, keywords besides the input size)
BENCHMARKS = {
    "resnet18": ("resnet18", {"layout": "NCHW"}),
    "resnet18-nhwc": ("resnet18", {"layout": "NHWC"}),
    "resnet50": ("resnet50", {"layout": "NCHW"}),
    "mobilenet_v2": ("mobilenet_v2", {"layout": "NCHW"}),
    "bert": ("bert", {}),
}


def best_of(fn, repeat: int) -> list[float]:
    """Seconds of ``repeat`` calls of ``fn`` after one warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def bench_model(name: str, repeat: int, image_size: int, seq_len: int) -> dict:
    """Compile, check and time one benchmark; returns its figures."""
    zoo_name, kw = BENCHMARKS[name]
    kw = dict(kw)
    if zoo_name == "bert":
        kw["seq_len"] = seq_len
    else:
        kw["image_size"] = image_size
    model = get_model(zoo_name, **kw)
    weights = model.bound_params()

    t0 = time.perf_counter()
    ex = irc.compile(model.mod, "llvm", params=weights)
    compile_s = time.perf_counter() - t0

    vm = irc.vm.VirtualMachine(ex)
    x = model.random_input(0)
    x_irc = irc.tensor(x)
    out = vm[model.func_name](x_irc).numpy()
    ref64 = model.reference(x)
    rel_err = float(np.abs(out - ref64).max() / np.abs(ref64).max())

    timer = vm.time_evaluator(model.func_name, number=1, repeat=repeat)
    irc_s = timer(x_irc).median
    state32 = reference_ops.as_compute(model.state_dict(), "float32")
    numpy_s = float(np.median(best_of(lambda: model.reference(x, "float32", state32),
                                      repeat)))
    mem = vm.memory_stats(model.func_name)
    return {"name": name, "irc_ms": irc_s * 1e3, "numpy_ms": numpy_s * 1e3,
            "compile_s": compile_s, "planned_mib": mem["planned_bytes"] / 2**20,
            "intermediate_mib": mem["intermediate_bytes"] / 2**20, "rel_err": rel_err,
            "kernels": ex.stats()["kernels"]}


_HEADER = (f"{'model':<14} {'irc ms':>9} {'numpy ms':>9} {'irc/numpy':>9} {'compile s':>9} "
           f"{'kernels':>7} {'planned MiB':>11} {'interm. MiB':>11} {'saving':>7} "
           f"{'rel err':>8}")


def format_row(r: dict) -> str:
    """One line of the table."""
    saving = 1.0 - r["planned_mib"] / r["intermediate_mib"] if r["intermediate_mib"] else 0.0
    return (f"{r['name']:<14} {r['irc_ms']:9.1f} {r['numpy_ms']:9.1f} "
            f"{r['irc_ms'] / r['numpy_ms']:9.2f} {r['compile_s']:9.1f} {r['kernels']:7d} "
            f"{r['planned_mib']:11.2f} {r['intermediate_mib']:11.2f} {saving:7.0%} "
            f"{r['rel_err']:8.1e}")


def main(argv: list[str] | None = None) -> int:
    """Parse options, run the chosen benchmarks and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(BENCHMARKS),
                        help=f"comma-separated, from: {', '.join(BENCHMARKS)}")
    parser.add_argument("--repeat", type=int, default=5,
                        help="timed runs per model and peer (median reported)")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--seq-len", type=int, default=128)
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown or args.repeat < 1:
        parser.error(f"unknown model(s) {', '.join(unknown)}; choose from "
                     f"{', '.join(BENCHMARKS)}" if unknown else "--repeat must be >= 1")

    load = os.getloadavg()
    print(f"batch 1, images {args.image_size}x{args.image_size}, sequence {args.seq_len}; "
          f"median of {args.repeat}; {os.cpu_count()} CPUs, load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(_HEADER)
    for name in names:
        print(format_row(bench_model(name, args.repeat, args.image_size, args.seq_len)),
              flush=True)
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

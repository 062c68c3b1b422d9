"""End-to-end tuning benchmark (issue 6): ResNet-18 (NHWC, batch 1, float32, from
``irc.testing.models``) tuned with ``irc.tune.ms.tune_relax`` within a budget that fits
in 15 minutes, then compiled with the best records (``compile_relax``).

Prints the end-to-end latency of the default pipeline (``irc.compile``: default schedule
rules, no tuning) and of the tuned build, each checked against the model's numpy
reference, next to the numpy float32 reference forward measured in the same run; and the
tuning wall time, trials, and the task scheduler's table. Figures on this machine
(PERF_NOTES.md): ONNX Runtime 17.8 ms, PyTorch eager 27.8 ms, TVM MetaSchedule 99.5 ms
after 8 trials x 19 tasks (403 s of tuning).

Run: ``python benchmarks/tune_resnet.py [--trials 400] [--time-budget 660]
[--image-size 224] [--work-dir DIR]``. Uses both cores; run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

import irc
from irc.testing.models import get_model
from irc.tune import ms


def latency(fn, x, repeat: int = 10) -> float:
    """Best seconds of ``repeat`` calls (after a warm-up call)."""
    fn(x)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - t0)
    return min(times)


def check(y: np.ndarray, ref: np.ndarray, what: str) -> float:
    err = float(np.abs(y - ref).max() / max(np.abs(ref).max(), 1e-30))
    if err > 1e-3:
        raise SystemExit(f"{what}: output differs from the numpy reference (relative error "
                         f"{err:.2e})")
    return err


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=400)
    p.add_argument("--time-budget", type=float, default=660.0,
                   help="seconds of tuning at most")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--work-dir", default=None, help="keep the database here (resumes)")
    p.add_argument("--verbose", type=int, default=0)
    args = p.parse_args()
    t_all = time.perf_counter()
    print(f"target: {irc.target.Target('llvm')}; load average: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    m = get_model("resnet18", image_size=args.image_size, layout="NHWC")
    params = m.bound_params()
    x = m.random_input()
    ref = m.reference(x)
    xt = irc.tensor(x)

    t0 = time.perf_counter()
    ex0 = irc.compile(m.mod, "llvm", params=params)
    compile0 = time.perf_counter() - t0
    f0 = irc.vm.VirtualMachine(ex0, irc.cpu())["forward"]
    err0 = check(f0(xt).numpy(), ref, "default build")
    lat0 = latency(f0, xt)
    print(f"default pipeline: {lat0 * 1e3:.1f} ms (compile {compile0:.1f} s, rel. error "
          f"{err0:.1e})", flush=True)

    with tempfile.TemporaryDirectory(prefix="irc-resnet-") as tmp:
        work_dir = args.work_dir or tmp
        t0 = time.perf_counter()
        db = ms.tune_relax(m.mod, params, "llvm", work_dir, args.trials,
                           time_budget=args.time_budget, verbose=max(1, args.verbose))
        tune_s = time.perf_counter() - t0
        n_records = len(db)
        t0 = time.perf_counter()
        ex1 = ms.compile_relax(db, m.mod, "llvm", params)
        compile1 = time.perf_counter() - t0
        db.close()
    f1 = irc.vm.VirtualMachine(ex1, irc.cpu())["forward"]
    err1 = check(f1(xt).numpy(), ref, "tuned build")
    lat1 = latency(f1, xt)
    state = m.state_dict()
    lat_np = latency(lambda a: m.reference(a, "float32", state), x, repeat=3)
    print(f"tuned: {lat1 * 1e3:.1f} ms after {tune_s:.0f} s of tuning ({n_records} records; "
          f"compile {compile1:.1f} s, rel. error {err1:.1e})")
    print(f"ResNet-18 NHWC {args.image_size}x{args.image_size}, batch 1: default "
          f"{lat0 * 1e3:.1f} ms -> tuned {lat1 * 1e3:.1f} ms ({lat0 / lat1:.2f}x); numpy "
          f"reference forward {lat_np * 1e3:.1f} ms; total benchmark time "
          f"{time.perf_counter() - t_all:.0f} s; load average "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()

"""Auto-tuning benchmark (issue 6): seed 002's ``matmul_add`` (1024^3 float32) tuned with
64 and then 200 measured trials (the second stage resumes the first's record file), and
seed 000's conv2d + bias + relu (N=1, 7x7, 512 -> 512, 3x3, pad 1, NCHW) with 64 trials.

For each stage it prints the best kernel's GFLOPS (timed here with ``time_evaluator``,
weights pre-packed as seed 002's layout-free contract allows, and with the packing stage
``apply_best`` inserts by default), the peer measured in the same run (numpy/OpenBLAS
``A @ B + C``; for the conv, an im2col + numpy matmul), the ratio, the tuning wall time,
trials per minute and how many candidates per second the search scored. Figures to
beat on this machine (PERF_NOTES.md): TVM MetaSchedule reaches 76-81 GFLOPS on the matmul
with 64 trials in 268 s, and 64 GFLOPS on the conv in 103 s.

Run: ``python benchmarks/tune_matmul.py [--workload matmul|conv|all] [--trials 64 200]
[--conv-trials 64] [--log-dir DIR]``. Uses both cores; run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

import irc
from irc import te, topi
from irc.tune import JSONDatabase, auto_scheduler
from irc.tune.apply import LayoutRewriteOption


@auto_scheduler.register_workload
def matmul_add(N, L, M, dtype):
    """Seed 002's workload."""
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    C = te.placeholder((N, M), name="C", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    matmul = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul",
                        attrs={"layout_free_placeholders": [B]})
    out = te.compute((N, M), lambda i, j: matmul[i, j] + C[i, j], name="out")
    return [A, B, C, out]


@auto_scheduler.register_workload
def conv2d_layer(N, H, W, CO, CI, KH, KW, stride, padding):
    """Seed 000's workload."""
    data = te.placeholder((N, CI, H, W), name="data")
    kernel = te.placeholder((CO, CI, KH, KW), name="kernel")
    bias = te.placeholder((1, CO, 1, 1), name="bias")
    conv = topi.nn.conv2d_nchw(data, kernel, stride, padding, dilation=1, out_dtype="float32")
    out = topi.nn.relu(conv + bias)
    return [data, kernel, bias, out]


def best_of(fn, repeat: int = 10) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def time_kernel(task, log_file: str, arrays: list[np.ndarray], option: int) -> float:
    """Seconds per run of the best record's kernel built with ``option``."""
    sch, args = task.apply_best(log_file, layout_rewrite_option=option)
    f = irc.build(sch, args, "llvm")
    ins = task.pack_weights(sch, *arrays) if option == \
        LayoutRewriteOption.REWRITE_FOR_PRE_TRANSFORMED else arrays
    ts = [irc.tensor(np.ascontiguousarray(x)) for x in ins]
    f(*ts)
    return f.time_evaluator(f.entry_name, irc.cpu(), number=5, repeat=5)(*ts).min


def tune_stage(task, log_file: str, trials: int, verbose: int) -> tuple[float, object]:
    """Tune ``task`` until ``log_file`` holds ``trials`` measurements; returns the wall
    time and the task scheduler's summary."""
    db = JSONDatabase(log_file)
    have = len(db.records_of(task.tune_task.workload))
    db.close()
    opts = auto_scheduler.TuningOptions(
        num_measure_trials=max(0, trials - have), verbose=verbose,
        measure_callbacks=[auto_scheduler.RecordToFile(log_file)])
    sched = auto_scheduler.TaskScheduler([task])
    t0 = time.perf_counter()
    sched.tune(opts)
    wall = time.perf_counter() - t0
    n, secs = sched.engine.search_speed()
    print(f"  stage: {sched.summary.total_trials} new trials in {wall:.0f} s "
          f"({sched.engine.measure_seconds:.0f} s building and measuring); the search made "
          f"and scored {n} candidates at {n / max(secs, 1e-9):.0f}/s", flush=True)
    return wall, sched.summary


def report(name: str, trials: int, wall: float, total_wall: float, flops: float,
           kernel_s: float, staged_s: float | None, peer_s: float, peer_name: str) -> None:
    gf = flops / kernel_s / 1e9
    peer = flops / peer_s / 1e9
    line = (f"{name} @ {trials} trials: best {gf:.1f} GFLOPS, {peer_name} {peer:.1f} GFLOPS, "
            f"ratio {gf / peer:.2f}x; tuning {total_wall:.0f} s "
            f"({trials / (total_wall / 60):.1f} trials/min)")
    if staged_s is not None:
        line += f"; with the packing stage {flops / staged_s / 1e9:.1f} GFLOPS"
    print(line, flush=True)


def bench_matmul(stages: list[int], log_dir: str, verbose: int) -> None:
    n = 1024
    task = auto_scheduler.SearchTask(func=matmul_add, args=(n, n, n, "float32"), target="llvm")
    log_file = os.path.join(log_dir, "matmul_add_1024.json")
    g = np.random.default_rng(0)
    a, b, c = (g.random((n, n), dtype=np.float32) for _ in range(3))
    arrays = [a, b, c, np.zeros((n, n), np.float32)]
    flops = task.flop_ct
    total = 0.0
    for trials in stages:
        wall, summary = tune_stage(task, log_file, trials, verbose)
        total += wall
        kernel = time_kernel(task, log_file, arrays, LayoutRewriteOption
                             .REWRITE_FOR_PRE_TRANSFORMED)
        staged = time_kernel(task, log_file, arrays, LayoutRewriteOption
                             .INSERT_TRANSFORM_STAGE)
        peer = best_of(lambda: a @ b + c)
        report("matmul_add 1024^3", trials, wall, total, flops, kernel, staged, peer,
               "numpy A @ B + C")


def bench_conv(trials: int, log_dir: str, verbose: int) -> None:
    args = (1, 7, 7, 512, 512, 3, 3, (1, 1), (1, 1))
    task = auto_scheduler.SearchTask(func=conv2d_layer, args=args, target="llvm")
    log_file = os.path.join(log_dir, "conv2d_7x7_512.json")
    g = np.random.default_rng(1)
    data = g.random((1, 512, 7, 7), dtype=np.float32)
    kernel = g.random((512, 512, 3, 3), dtype=np.float32)
    bias = g.random((1, 512, 1, 1), dtype=np.float32)
    arrays = [data, kernel, bias, np.zeros((1, 512, 7, 7), np.float32)]
    wall, _ = tune_stage(task, log_file, trials, verbose)
    kernel_s = time_kernel(task, log_file, arrays, LayoutRewriteOption.INSERT_TRANSFORM_STAGE)
    k2 = kernel.reshape(512, -1)

    def im2col() -> np.ndarray:
        p = np.pad(data[0], ((0, 0), (1, 1), (1, 1)))
        cols = np.stack([p[:, i:i + 7, j:j + 7] for i in range(3) for j in range(3)], axis=1)
        return np.maximum(k2 @ cols.reshape(512 * 9, 49) + bias[0, :, 0, :], 0)

    peer = best_of(im2col)
    report("conv2d+bias+relu 7x7 512->512", trials, wall, wall, task.flop_ct, kernel_s, None,
           peer, "im2col + numpy")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", choices=("matmul", "conv", "all"), default="all")
    p.add_argument("--trials", type=int, nargs="+", default=[64, 200])
    p.add_argument("--conv-trials", type=int, default=64)
    p.add_argument("--log-dir", default=None, help="keep the record files here")
    p.add_argument("--verbose", type=int, default=0)
    args = p.parse_args()
    print(f"target: {irc.target.Target('llvm')}; load average: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory(prefix="irc-tune-bench-") as tmp:
        log_dir = args.log_dir or tmp
        os.makedirs(log_dir, exist_ok=True)
        if args.workload in ("matmul", "all"):
            bench_matmul(sorted(args.trials), log_dir, args.verbose)
        if args.workload in ("conv", "all"):
            bench_conv(args.conv_trials, log_dir, args.verbose)
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

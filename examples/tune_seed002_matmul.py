"""Seed 002 with irc's names: auto-scheduling a 1024x1024 matmul + add on the CPU, with
the layout-free weight B, the search log, the lowered loop IR, a numpy check, the
equivalent schedule as Python, and resuming the search from the record file.

Run: ``python examples/tune_seed002_matmul.py [--size 1024] [--trials 10]``.
"""

import argparse

import numpy as np

import irc
from irc import te
from irc.tune import auto_scheduler


@auto_scheduler.register_workload
def matmul_add(N, L, M, dtype):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    C = te.placeholder((N, M), name="C", dtype=dtype)

    k = te.reduce_axis((0, L), name="k")
    matmul = te.compute(
        (N, M),
        lambda i, j: te.sum(A[i, k] * B[k, j], axis=k),
        name="matmul",
        # let the search rewrite the layout of B (seed 002's layout-free placeholder)
        attrs={"layout_free_placeholders": [B]},
    )
    out = te.compute((N, M), lambda i, j: matmul[i, j] + C[i, j], name="out")
    return [A, B, C, out]


def resume_search(task, log_file, trials):
    print("Resume search:")
    cost_model = auto_scheduler.XGBModel()
    cost_model.update_from_file(log_file)
    search_policy = auto_scheduler.SketchPolicy(
        task, cost_model, init_search_callbacks=[auto_scheduler.PreloadMeasuredStates(log_file)]
    )
    tune_option = auto_scheduler.TuningOptions(
        num_measure_trials=trials, measure_callbacks=[auto_scheduler.RecordToFile(log_file)]
    )
    task.tune(tune_option, search_policy=search_policy)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--log-file", default="matmul.json")
    args = p.parse_args()

    target = irc.target.Target("llvm")
    N = L = M = args.size
    task = auto_scheduler.SearchTask(func=matmul_add, args=(N, L, M, "float32"), target=target)

    print("Computational DAG:")
    print(task.compute_dag)

    log_file = args.log_file
    tune_option = auto_scheduler.TuningOptions(
        num_measure_trials=args.trials,
        measure_callbacks=[auto_scheduler.RecordToFile(log_file)],
        verbose=2,
    )
    task.tune(tune_option)
    sch, args_ = task.apply_best(log_file)

    print("Lowered TIR:")
    print(irc.lower(sch, args_, simple_mode=True).script())

    func = irc.build(sch, args_, target)
    a_np = np.random.uniform(size=(N, L)).astype(np.float32)
    b_np = np.random.uniform(size=(L, M)).astype(np.float32)
    c_np = np.random.uniform(size=(N, M)).astype(np.float32)
    out_np = a_np.dot(b_np) + c_np

    dev = irc.cpu()
    a_t = irc.tensor(a_np, device=dev)
    b_t = irc.tensor(b_np, device=dev)
    c_t = irc.tensor(c_np, device=dev)
    out_t = irc.runtime.empty(out_np.shape, "float32")
    func(a_t, b_t, c_t, out_t)
    np.testing.assert_allclose(out_np, out_t.numpy(), rtol=1e-3)

    evaluator = func.time_evaluator(func.entry_name, dev, min_repeat_ms=500)
    print("Execution time of this operator: %.3f ms"
          % (np.median(evaluator(a_t, b_t, c_t, out_t).results) * 1000))

    print("Equivalent python schedule:")
    print(task.print_best(log_file))

    resume_search(task, log_file, max(1, args.trials // 2))


if __name__ == "__main__":
    main()

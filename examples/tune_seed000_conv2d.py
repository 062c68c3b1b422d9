"""Seed 000 with irc's names: auto-scheduling the last conv2d + bias + relu layer of
ResNet-50 for a GPU (``cuda``, as the seed does) or the CPU (``llvm``) with isolated
measurement, applying the best schedule, checking it against numpy, timing it, printing
the schedule and (on the GPU) the CUDA source, and resuming the search.

Run: ``python examples/tune_seed000_conv2d.py [--trials 10] [--target auto|cuda|llvm]``;
``auto`` (the default) tunes for the GPU when this machine has one, else for the CPU.
"""

import argparse

import numpy as np

import irc
from irc import te, topi
from irc.testing.ref import conv2d_nchw as conv2d_nchw_python
from irc.tune import auto_scheduler


@auto_scheduler.register_workload
def conv2d_layer(N, H, W, CO, CI, KH, KW, stride, padding):
    data = te.placeholder((N, CI, H, W), name="data")
    kernel = te.placeholder((CO, CI, KH, KW), name="kernel")
    bias = te.placeholder((1, CO, 1, 1), name="bias")
    conv = topi.nn.conv2d_nchw(data, kernel, stride, padding, dilation=1, out_dtype="float32")
    out = topi.nn.relu(conv + bias)
    return [data, kernel, bias, out]


def resume_search(task, log_file, trials):
    print("Resume search:")
    cost_model = auto_scheduler.XGBModel()
    cost_model.update_from_file(log_file)
    search_policy = auto_scheduler.SketchPolicy(
        task, cost_model, init_search_callbacks=[auto_scheduler.PreloadMeasuredStates(log_file)]
    )
    measure_ctx = auto_scheduler.LocalRPCMeasureContext(min_repeat_ms=300)
    tune_option = auto_scheduler.TuningOptions(
        num_measure_trials=trials,
        runner=measure_ctx.runner,
        measure_callbacks=[auto_scheduler.RecordToFile(log_file)],
    )
    task.tune(tune_option, search_policy=search_policy)
    del measure_ctx


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--log-file", default="conv2d.json")
    p.add_argument("--target", choices=("auto", "cuda", "llvm"), default="auto")
    args = p.parse_args()

    on_gpu = args.target == "cuda" or (args.target == "auto" and irc.cuda(0).exist)
    # The GPU's own architecture (sm_90 on an H100), or the host CPU.
    target = irc.target.Target.from_device(irc.cuda(0)) if on_gpu \
        else irc.target.Target("llvm")
    dev = irc.cuda(0) if on_gpu else irc.cpu()
    print(f"Tuning for {target} on {dev}")
    N, H, W, CO, CI, KH, KW, strides, padding = 1, 7, 7, 512, 512, 3, 3, (1, 1), (1, 1)
    task = auto_scheduler.SearchTask(
        func=conv2d_layer, args=(N, H, W, CO, CI, KH, KW, strides, padding), target=target
    )
    print("Computational DAG:")
    print(task.compute_dag)

    log_file = args.log_file
    measure_ctx = auto_scheduler.LocalRPCMeasureContext(min_repeat_ms=300)
    tune_option = auto_scheduler.TuningOptions(
        num_measure_trials=args.trials,
        runner=measure_ctx.runner,
        measure_callbacks=[auto_scheduler.RecordToFile(log_file)],
        verbose=2,
    )
    task.tune(tune_option)
    sch, args_ = task.apply_best(log_file)
    del measure_ctx

    print("Lowered TIR:")
    print(irc.lower(sch, args_, simple_mode=True).script())

    func = irc.build(sch, args_, target)
    data_np = np.random.uniform(size=(N, CI, H, W)).astype(np.float32)
    weight_np = np.random.uniform(size=(CO, CI, KH, KW)).astype(np.float32)
    bias_np = np.random.uniform(size=(1, CO, 1, 1)).astype(np.float32)
    conv_np = conv2d_nchw_python(data_np, weight_np, strides, padding)
    out_np = np.maximum(conv_np + bias_np, 0.0)

    data_t = irc.tensor(data_np, device=dev)
    weight_t = irc.tensor(weight_np, device=dev)
    bias_t = irc.tensor(bias_np, device=dev)
    out_t = irc.runtime.empty(out_np.shape, "float32", dev)
    func(data_t, weight_t, bias_t, out_t)
    np.testing.assert_allclose(out_np, out_t.numpy(), rtol=1e-3)

    evaluator = func.time_evaluator(func.entry_name, dev, min_repeat_ms=500)
    print("Execution time of this operator: %.3f ms"
          % (np.median(evaluator(data_t, weight_t, bias_t, out_t).results) * 1000))

    print("Equivalent python schedule:")
    print(task.print_best(log_file, print_mode="schedule"))
    print("CUDA source code:")
    try:
        print(task.print_best(log_file, print_mode="cuda"))
    except irc.IRCError as err:
        print(f"(not available: {err})")

    resume_search(task, log_file, max(1, args.trials // 2))


if __name__ == "__main__":
    main()

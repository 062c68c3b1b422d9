"""Seed 004 with irc's names: tuning a whole network (ResNet-18, NHWC) for an NVIDIA
GPU (``cuda``, as the seed does) or the CPU (``llvm``) — extract the search tasks and
their weights, tune them with the task scheduler (which prints the seed's table),
compile with the best records and benchmark.

Run: ``python examples/tune_seed004_network.py [--trials 200] [--image-size 224]
[--target auto|cuda|llvm]``; ``auto`` (the default) tunes for the GPU when this machine
has one, else for the CPU.
"""

import argparse
import time

import numpy as np

import irc
from irc.testing.models import get_model
from irc.tune import auto_scheduler


def get_network(name, batch_size, layout="NHWC", image_size=224):
    """The network's module, weights, input and output shapes."""
    m = get_model(name.replace("-", ""), batch_size=batch_size, layout=layout,
                  image_size=image_size)
    return m.mod, m.bound_params(), m.input_shape, (batch_size, 1000)


def run_tuning(tasks, task_weights, log_file, trials):
    print("Begin tuning...")
    measure_ctx = auto_scheduler.LocalRPCMeasureContext(repeat=1, min_repeat_ms=300, timeout=10)
    tuner = auto_scheduler.TaskScheduler(tasks, task_weights)
    tune_option = auto_scheduler.TuningOptions(
        num_measure_trials=trials,
        runner=measure_ctx.runner,
        measure_callbacks=[auto_scheduler.RecordToFile(log_file)],
    )
    tuner.tune(tune_option)
    del measure_ctx


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=200)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--target", choices=("auto", "cuda", "llvm"), default="auto")
    args = p.parse_args()

    network, batch_size, layout, dtype = "resnet-18", 1, "NHWC", "float32"
    on_gpu = args.target == "cuda" or (args.target == "auto" and irc.cuda(0).exist)
    # The GPU's own architecture (sm_90 on an H100), or the host CPU.
    target = irc.target.Target.from_device(irc.cuda(0)) if on_gpu \
        else irc.target.Target("llvm")
    dev = irc.cuda(0) if on_gpu else irc.cpu()
    log_file = "%s-%s-B%d-%s.json" % (network, layout, batch_size, target.kind.name)

    print("Extract tasks...")
    mod, params, input_shape, output_shape = get_network(network, batch_size, layout,
                                                         args.image_size)
    tasks, task_weights = auto_scheduler.extract_tasks(mod, params, target)
    for idx, task in enumerate(tasks):
        print("========== Task %d  (workload key: %s) ==========" % (idx, task.workload_key))
        print(task.compute_dag)

    run_tuning(tasks, task_weights, log_file, args.trials)

    print("Compile...")
    with auto_scheduler.ApplyHistoryBest(log_file):
        ex = auto_scheduler.compile(mod, target=target, params=params)

    vm = irc.vm.VirtualMachine(ex, dev)
    data = irc.tensor(np.random.uniform(size=input_shape).astype(dtype), dev)
    print("Evaluate inference time cost...")
    f = vm["forward"]
    f(data)
    dev.sync()
    times = []
    for _ in range(10):
        t0 = time.perf_counter()
        f(data)
        dev.sync()  # GPU work is asynchronous: wait for it before reading the clock
        times.append((time.perf_counter() - t0) * 1e3)
    print("Execution time summary:")
    print(" mean (ms)   median (ms)    max (ms)     min (ms)     std (ms)")
    print("  %.4f      %.4f      %.4f      %.4f      %.4f"
          % (np.mean(times), np.median(times), np.max(times), np.min(times), np.std(times)))


if __name__ == "__main__":
    main()

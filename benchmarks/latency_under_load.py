"""Latency of small models on a quiet machine and beside a busy process, irc
next to ONNX Runtime in the same run and the same conditions.

Two models, each called back to back for ``--seconds`` (at most ``--calls`` calls):

- ``dynamic``: one ONNX layer, MatMul + Add + Relu of ``--width`` x ``--width`` with a
  symbolic batch, run at batch 1 (irc compiles it for any batch);
- ``mlp``: seed 003's MLP (784 -> 256 -> ReLU -> 10, the README's tour), batch 1, its
  weights passed as arguments (in ONNX Runtime too: graph inputs, not initializers).

Each is timed quiet, then with a busy loop (``while True: pass`` in another process)
pinned to the last CPU this process may use, which on a 2-core machine is the other
core. Printed per model, condition and runtime: calls, median, p90 and p99 in
microseconds, and irc / ONNX Runtime for each; above them the CPU model, the OpenMP wait
setting irc's libgomp runs with, and the load average before each timing (the busy
loop adds one to it). ONNX Runtime uses 2 intra-op threads, one inter-op thread.

Run: ``python benchmarks/latency_under_load.py [--seconds 4] [--models dynamic,mlp]``;
``GOMP_SPINCOUNT=N`` or ``OMP_WAIT_POLICY=...`` in the environment replace irc's bounded
spinning. Other processes change the figures: look at the load averages printed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from typing import Any, Callable

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import irc
from irc.frontend import nn
from irc.frontend.onnx import from_onnx
from irc.runtime import engine
from irc.testing.models.mlp import MLP


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def load_average() -> str:
    """The 1-minute load average and the running / all tasks, from /proc/loadavg."""
    try:
        with open("/proc/loadavg") as f:
            parts = f.read().split()
        return f"{parts[0]} ({parts[3]} tasks)"
    except OSError:
        return "?"


def wait_setting() -> str:
    """The OpenMP wait setting irc's libgomp is loaded with."""
    for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        if name in os.environ:
            return f"{name}={os.environ[name]} (from the environment)"
    return f"GOMP_SPINCOUNT={engine.OPENMP_SPIN_COUNT} (irc's bounded spinning)"


class BusyLoop:
    """A process spinning in Python on ``cpu`` while the block runs."""

    def __init__(self, cpu: int):
        self.cpu = cpu
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> BusyLoop:
        code = f"import os\nos.sched_setaffinity(0, {{{self.cpu}}})\nwhile True:\n    pass\n"
        self.proc = subprocess.Popen([sys.executable, "-c", code])
        time.sleep(0.3)  # running before the first call
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()


def time_calls(fn: Callable[[], Any], seconds: float, max_calls: int) -> np.ndarray:
    """Seconds per call of ``fn``, called back to back for ``seconds`` (at most
    ``max_calls`` calls) after a few warm-up calls."""
    for _ in range(20):
        fn()
    times = []
    end = time.perf_counter() + seconds
    while len(times) < max_calls:
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        times.append(t1 - t0)
        if t1 > end:
            break
    return np.array(times)


def ort_session(model: onnx.ModelProto) -> ort.InferenceSession:
    """ONNX Runtime on the CPU with 2 intra-op threads and one inter-op thread (its
    default sequential execution)."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = 2, 1
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])


def dynamic_layer(width: int) -> tuple[Callable[[], Any], Callable[[], Any], float]:
    """irc's and ONNX Runtime's call of the one-layer dynamic model at batch 1, and the
    largest difference of their outputs."""
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((width, width)) / np.sqrt(width)).astype("float32")
    b = rng.standard_normal(width).astype("float32")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"]),
         helper.make_node("Add", ["y", "b"], ["z"]),
         helper.make_node("Relu", ["z"], ["out"])], "layer",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", width])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    vm = irc.vm.VirtualMachine(irc.compile(from_onnx(model), target="llvm"))
    x = rng.standard_normal((1, width)).astype("float32")
    xt = irc.tensor(x)
    sess = ort_session(model)
    err = float(np.abs(vm["main"](xt).numpy() - sess.run(None, {"x": x})[0]).max())
    return (lambda: vm["main"](xt)), (lambda: sess.run(None, {"x": x})), err


def seed003_mlp() -> tuple[Callable[[], Any], Callable[[], Any], float]:
    """irc's and ONNX Runtime's call of seed 003's MLP with its weights as arguments, and
    the largest difference of their outputs."""
    mod, params = MLP().export_ir({"forward": {"x": nn.spec.Tensor((1, 784), "float32")}})
    vm = irc.vm.VirtualMachine(irc.compile(mod, target="llvm"))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 784)).astype("float32")
    weights = [(rng.standard_normal(p.shape) * 0.05).astype("float32") for _, p in params]
    args = [irc.tensor(a) for a in [x, *weights]]
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
         helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("Gemm", ["r", "w2"], ["out"], transB=1)], "mlp",
        [helper.make_tensor_value_info("x", f, [1, 784]),
         helper.make_tensor_value_info("w1", f, [256, 784]),
         helper.make_tensor_value_info("b1", f, [256]),
         helper.make_tensor_value_info("w2", f, [10, 256])],
        [helper.make_tensor_value_info("out", f, [1, 10])])
    sess = ort_session(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    feed = dict(zip(["x", "w1", "b1", "w2"], [x, *weights]))
    err = float(np.abs(vm["forward"](*args).numpy() - sess.run(None, feed)[0]).max())
    return (lambda: vm["forward"](*args)), (lambda: sess.run(None, feed)), err


def stats_us(times: np.ndarray) -> tuple[float, float, float]:
    """Median, p90 and p99 of ``times`` in microseconds."""
    return tuple(float(np.percentile(times, q)) * 1e6 for q in (50, 90, 99))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=4.0,
                   help="time per model, condition and runtime (default 4)")
    p.add_argument("--calls", type=int, default=5000, help="at most this many calls each")
    p.add_argument("--width", type=int, default=256, help="the dynamic layer's width")
    p.add_argument("--models", default="dynamic,mlp")
    args = p.parse_args()

    cpus = sorted(os.sched_getaffinity(0))
    print(f"CPU: {cpu_model()}, {len(cpus)} CPUs usable; irc {irc.__version__}, "
          f"ONNX Runtime {ort.__version__} (2 intra-op threads)")
    print(f"irc's OpenMP wait: {wait_setting()}")
    print(f"busy loop pinned to CPU {cpus[-1]}; figures in microseconds per call")
    builders = {"dynamic": lambda: dynamic_layer(args.width), "mlp": seed003_mlp}
    names = {"dynamic": f"dynamic {args.width}x{args.width} layer, batch 1",
             "mlp": "seed-003 MLP, weights as arguments"}
    header = (f"{'model':<38} {'condition':<9} {'load':<20} {'runtime':<8} {'calls':>6} "
              f"{'median':>9} {'p90':>9} {'p99':>9}")
    print(header)
    print("-" * len(header))
    for key in args.models.split(","):
        irc_call, ort_call, err = builders[key]()
        for condition in ("quiet", "busy"):
            busy = BusyLoop(cpus[-1]) if condition == "busy" else None
            if busy is not None:
                busy.__enter__()
            try:
                figures = {}
                for runtime, fn in (("irc", irc_call), ("ort", ort_call)):
                    load = load_average()
                    times = time_calls(fn, args.seconds, args.calls)
                    figures[runtime] = stats_us(times)
                    med, p90, p99 = figures[runtime]
                    print(f"{names[key]:<38} {condition:<9} {load:<20} {runtime:<8} "
                          f"{len(times):>6} {med:>9.1f} {p90:>9.1f} {p99:>9.1f}")
            finally:
                if busy is not None:
                    busy.__exit__(None, None, None)
            ratio = [a / b for a, b in zip(figures["irc"], figures["ort"])]
            print(f"{names[key]:<38} {condition:<9} {'':<20} {'irc/ort':<8} {'':>6} "
                  + " ".join(f"{r:>8.2f}x" for r in ratio))
        print(f"{names[key]}: max |irc - ort| = {err:.2e}")


if __name__ == "__main__":
    main()

"""The GPU backend (issue 10), measured on one NVIDIA GPU in one run:

- a 4096 x 4096 x 4096 matmul in float32 and float16 (float32 accumulation): irc's
  default build (``irc.compile(..., target="cuda")``: legalize, the dlight GPU rules)
  next to cuBLAS (through PyTorch's ``torch.matmul``, or CuPy's when PyTorch is
  missing), in milliseconds and TFLOPS with the ratio;
- ResNet-50 (224 x 224) and BERT-base (sequence 128) at batch 1: irc's default build on
  the VM on ``irc.cuda(0)`` (latency, build time, and the error against the zoo's numpy
  reference). PyTorch eager is not measured next to them yet: that needs the zoo's
  weights in a PyTorch model, which is not written (the script says so).

Timings use CUDA events after warm-up (``time_evaluator``; PyTorch's with
``torch.cuda.Event``). Tuned kernels are not measured: tuning on a GPU (the tuner's
NVRTC builder and GPU runner) is not built yet, and the script says so.

Run: ``python benchmarks/gpu.py`` (``--skip-models`` for the matmuls only). Without a
GPU it compiles the matmul kernels, prints the build times, and says that the timings
need a GPU.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import irc
from irc.testing.models import get_model


def matmul_module(n: int, dtype: str):
    from irc.frontend import nn

    class MatMul(nn.Module):
        def forward(self, a, b):
            return nn.op.matmul(a, b, out_dtype="float32" if dtype == "float16" else dtype)

    mod, _ = MatMul().export_ir({"forward": {"a": nn.spec.Tensor((n, n), dtype),
                                             "b": nn.spec.Tensor((n, n), dtype)}})
    return mod


def peer_matmul(a: np.ndarray, b: np.ndarray, repeat: int):
    """(ms per call, result) of cuBLAS through torch or cupy."""
    try:
        import torch
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        fn = (lambda: torch.matmul(ta, tb).float()) if a.dtype == np.float16 \
            else (lambda: torch.matmul(ta, tb))
        out = fn()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
            enable_timing=True)
        for _ in range(3):
            fn()
        start.record()
        for _ in range(repeat):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / repeat, out.cpu().numpy(), "torch (cuBLAS)"
    except ImportError:
        import cupy
        ca, cb = cupy.asarray(a), cupy.asarray(b)
        out = cupy.matmul(ca, cb)
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(repeat):
            cupy.matmul(ca, cb)
        end.record()
        end.synchronize()
        return cupy.cuda.get_elapsed_time(start, end) / repeat, \
            cupy.asnumpy(out).astype(np.float32), "cupy (cuBLAS)"


def bench_matmul(n: int, dtype: str, repeat: int, have_gpu: bool) -> None:
    t0 = time.perf_counter()
    ex = irc.compile(matmul_module(n, dtype), target="cuda")
    build = time.perf_counter() - t0
    print(f"matmul {n}^3 {dtype}: irc default build {build:.1f} s "
          f"({ex.stats()['kernels']} kernels)")
    if not have_gpu:
        return
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, n)).astype(dtype)
    b = rng.uniform(-1, 1, (n, n)).astype(dtype)
    dev = irc.cuda(0)
    vm = irc.vm.VirtualMachine(ex, dev)
    ta, tb = irc.tensor(a, dev), irc.tensor(b, dev)
    got = vm["forward"](ta, tb).numpy()
    sec = vm.time_evaluator("forward", dev, number=repeat, repeat=3)(ta, tb).median
    peer_ms, want, peer = peer_matmul(a, b, repeat)
    err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
    flops = 2.0 * n ** 3
    print(f"  irc default {sec * 1e3:8.3f} ms {flops / sec / 1e12:6.1f} TFLOPS | {peer} "
          f"{peer_ms:8.3f} ms {flops / (peer_ms / 1e3) / 1e12:6.1f} TFLOPS | irc/peer "
          f"{sec * 1e3 / peer_ms:5.2f}x | max rel err {err:.1e}")
    print("  irc tuned: not measured (tuning on the GPU is not built yet)")


def bench_model(name: str, kw: dict, repeat: int) -> None:
    m = get_model(name, **kw)
    t0 = time.perf_counter()
    ex = irc.compile(m.mod, target="cuda", params=m.bound_params())
    build = time.perf_counter() - t0
    dev = irc.cuda(0)
    vm = irc.vm.VirtualMachine(ex, dev)
    x = m.random_input()
    tx = irc.tensor(x, dev)
    got = vm["forward"](tx).numpy()
    sec = vm.time_evaluator("forward", dev, number=repeat, repeat=3)(tx).median
    want = m.reference(x)
    err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
    print(f"{name} batch 1: irc default {sec * 1e3:8.3f} ms (build {build:.0f} s) | "
          f"max rel err vs numpy reference {err:.1e}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--skip-models", action="store_true")
    args = p.parse_args()
    have_gpu = irc.cuda(0).exist
    if have_gpu:
        from irc.runtime.cuda_backend import device_attributes
        print(f"GPU: {device_attributes(0).name}")
    else:
        print("no CUDA GPU on this machine: building only (timings need a GPU)")
    for dtype in ("float32", "float16"):
        bench_matmul(args.n, dtype, args.repeat, have_gpu)
    if have_gpu and not args.skip_models:
        bench_model("resnet50", {"image_size": 224}, args.repeat)
        bench_model("bert", {"seq_len": 128}, args.repeat)
        print("PyTorch eager next to the models: not measured (no PyTorch port of the "
              "zoo's weights yet)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

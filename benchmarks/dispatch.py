"""Library dispatch (issue 11), CPU part: matrix products through the ``blas`` backend
(OpenBLAS from ``scipy-openblas32``, dispatched by pattern, called from the VM) next to
the same OpenBLAS called directly (``irc.runtime.blas.gemm`` on numpy arrays: the
library's own speed), numpy's ``@`` (its own OpenBLAS) and irc's default build without
dispatch, all measured in this run with both cores:

- ``matmul`` 1024^3 float32 (``x @ w``);
- a dense layer ``relu(x @ w.T + b)`` at 1 x 784 -> 256 (seed 003's) and 128 x 1024 ->
  1024 (the epilogue compiled by irc around the BLAS call).

The overhead irc adds to the library is the ratio of the first two columns. oneDNN
convolutions (``dnnl``) and ResNet-18 with dispatch next to ONNX Runtime are not measured:
those backends are not built yet. GPU figures (cuBLAS) are in ``benchmarks/gpu.py``.

Run: ``python benchmarks/dispatch.py [--repeat 20]`` on a quiet machine.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

import irc
from irc import passes
from irc.dispatch import get_patterns_with_prefix
from irc.runtime import blas


def _module(m: int, k: int, n: int, dense: bool) -> irc.IRModule:
    if dense:
        body = """            wt = R.permute_dims(w, axes=None)
            y = R.matmul(x, wt, out_dtype="void")
            y1 = R.add(y, b)
            gv = R.nn.relu(y1)"""
        params = (f'x: R.Tensor(({m}, {k}), dtype="float32"), w: R.Tensor(({n}, {k}), '
                  f'dtype="float32"), b: R.Tensor(({n},), dtype="float32")')
    else:
        body = '            gv = R.matmul(x, w, out_dtype="void")'
        params = (f'x: R.Tensor(({m}, {k}), dtype="float32"), w: R.Tensor(({k}, {n}), '
                  f'dtype="float32")')
    return irc.parse(f"""
@I.ir_module
class Module:
    @R.function
    def main({params}) -> R.Tensor(({m}, {n}), dtype="float32"):
        with R.dataflow():
{body}
            R.output(gv)
        return gv
""")


def _vm_time(mod: irc.IRModule, args: list[np.ndarray], repeat: int) -> tuple[float, Any]:
    ex = irc.compile(mod, target="llvm")
    vm = irc.vm.VirtualMachine(ex, irc.cpu())
    targs = [irc.tensor(a) for a in args]
    out = vm["main"](*targs).numpy()
    sec = vm.time_evaluator("main", irc.cpu(), number=repeat, repeat=5,
                            min_repeat_ms=100)(*targs).median
    return sec, out


def _host_time(fn, repeat: int) -> float:
    fn()
    best = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        best.append((time.perf_counter() - t0) / repeat)
    return float(np.median(best))


def bench(name: str, m: int, k: int, n: int, dense: bool, repeat: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((m, k)).astype("float32")
    w = rng.standard_normal((n, k) if dense else (k, n)).astype("float32")
    args = [x, w] + ([rng.standard_normal(n).astype("float32")] if dense else [])
    mod = _module(m, k, n, dense)
    lib_mod = passes.RunCodegen()(passes.FuseOpsByPattern(
        get_patterns_with_prefix("blas"), annotate_codegen=True)(mod))
    t_lib, got = _vm_time(lib_mod, args, repeat)
    t_irc, want = _vm_time(mod, args, repeat)
    err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
    c = np.empty((m, n), np.float32)
    t_direct = _host_time(lambda: blas.gemm(x, w, c, trans_b=dense), repeat)
    t_numpy = _host_time((lambda: x @ w.T) if dense else (lambda: x @ w), repeat)
    flops = 2.0 * m * n * k
    print(f"{name:34s} irc+blas {t_lib * 1e6:9.1f} us {flops / t_lib / 1e9:6.1f} GFLOPS | "
          f"OpenBLAS direct {t_direct * 1e6:9.1f} us | irc+blas/direct "
          f"{t_lib / t_direct:5.2f}x | numpy {t_numpy * 1e6:9.1f} us | irc default "
          f"{t_irc * 1e6:9.1f} us ({t_irc / t_lib:5.2f}x the blas path) | err {err:.1e}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=20)
    args = p.parse_args()
    print(f"CPU: {irc.target.Target('llvm')}; OpenBLAS threads: {blas.get_num_threads()}")
    bench("matmul 1024^3", 1024, 1024, 1024, False, args.repeat)
    bench("dense+relu 1x784->256 (seed 003)", 1, 784, 256, True, args.repeat)
    bench("dense+relu 128x1024->1024", 128, 1024, 1024, True, args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

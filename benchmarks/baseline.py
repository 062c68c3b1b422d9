"""Baseline figures of the compile-and-run spine (issue 3), each next to its peer measured
in the same run:

1. the VM's per-call overhead on the seed-003 MLP (``vm["forward"]`` vs the same math in
   numpy);
2. the GFLOPS of an unscheduled 1024x1024x1024 matmul kernel vs numpy's matmul (OpenBLAS);
3. an elementwise kernel with real arithmetic per element (SiLU, ``x * sigmoid(x)``) as a
   parallel + vectorized loop vs its serial scalar version (LLVM's own vectorizer and
   unroller switched off by loop annotations) — both cores and the vector units must show.

Run: ``python benchmarks/baseline.py``.
"""

from __future__ import annotations

import time

import numpy as np

import irc
from irc import tir
from irc.frontend import nn
from irc.testing.models.mlp import MLP
from irc.tir import te


def best_of(fn, repeat: int = 5, number: int = 1) -> float:
    """Minimum seconds per call over ``repeat`` rounds of ``number`` calls."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


def mlp_overhead() -> dict:
    model = MLP()
    model.init_random(0)
    mod, params = model.export_ir({"forward": {"x": nn.spec.Tensor((1, 784), "float32")}})
    t0 = time.perf_counter()
    ex = irc.compile(mod, "llvm")
    compile_s = time.perf_counter() - t0
    vm = irc.vm.VirtualMachine(ex)
    x = np.random.default_rng(0).random((1, 784), dtype=np.float32)
    weights = [p.numpy() for _, p in params]
    w1, b1, w2 = weights
    fwd = vm["forward"]
    irc_s = best_of(lambda: fwd(x, *weights), repeat=7, number=50)
    np_s = best_of(lambda: np.maximum(x @ w1.T + b1, 0) @ w2.T, repeat=7, number=200)
    out = fwd(x, *weights).numpy()
    ref = np.maximum(x @ w1.T + b1, 0) @ w2.T
    assert np.allclose(out, ref, rtol=1e-4, atol=1e-5)
    return {"irc_us": irc_s * 1e6, "numpy_us": np_s * 1e6, "compile_s": compile_s}


def naive_matmul(n: int = 1024) -> dict:
    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    f = irc.build(te.create_prim_func([a, b, c]), target="llvm")
    rng = np.random.default_rng(0)
    an = rng.random((n, n), dtype=np.float32)
    bn = rng.random((n, n), dtype=np.float32)
    cn = irc.runtime.empty((n, n), "float32")
    timer = f.time_evaluator(f.entry_name, irc.cpu(), number=1, repeat=3)
    irc_s = timer(an, bn, cn).min
    assert np.allclose(cn.numpy(), an @ bn, rtol=1e-3)
    np_s = best_of(lambda: an @ bn, repeat=10)
    flops = 2 * n ** 3
    return {"irc_gflops": flops / irc_s / 1e9, "numpy_gflops": flops / np_s / 1e9}


def _silu(x: tir.PrimExpr) -> tir.PrimExpr:
    return x * tir.sigmoid(x)


def _elementwise(n: int, parallel_vector: bool) -> tir.PrimFunc:
    a = tir.decl_buffer((n,), "float32", "A")
    c = tir.decl_buffer((n,), "float32", "C")
    if parallel_vector:
        io, ii, v = tir.var("io"), tir.var("ii"), tir.var("v")
        idx = io * 1024 + ii * 16 + v
        body = tir.BufferStore(buffer=c, value=_silu(a[idx]), indices=(idx,))
        body = tir.For(loop_var=v, min=tir.const(0), extent=tir.const(16), kind="vectorized",
                       body=body)
        body = tir.For(loop_var=ii, min=tir.const(0), extent=tir.const(64), kind="serial",
                       body=body)
        body = tir.For(loop_var=io, min=tir.const(0), extent=tir.const(n // 1024),
                       kind="parallel", body=body)
    else:
        i = tir.var("i")
        body = tir.BufferStore(buffer=c, value=_silu(a[i]), indices=(i,))
        body = tir.For(loop_var=i, min=tir.const(0), extent=tir.const(n), kind="serial",
                       body=body, annotations={"pragma_vectorize": False,
                                               "pragma_unroll": False})
    return tir.PrimFunc(params=(a.data, c.data), buffer_map={a.data: a, c.data: c}, body=body,
                        attrs={"tir.noalias": True})


def elementwise_speedup(n: int = 1 << 24) -> dict:
    x = irc.tensor(np.random.default_rng(0).uniform(-4, 4, n).astype("float32"))
    expected = x.numpy() / (1 + np.exp(-x.numpy()))
    out = {}
    for key, pv in (("serial_scalar", False), ("parallel_vector", True)):
        f = irc.build(_elementwise(n, pv), target="llvm")
        y = irc.runtime.empty((n,), "float32")
        timer = f.time_evaluator(f.entry_name, irc.cpu(), number=3, repeat=5)
        out[key] = timer(x, y).min
        assert np.allclose(y.numpy(), expected, rtol=1e-4, atol=1e-5)
    xn = x.numpy()
    out["numpy"] = best_of(lambda: xn / (1 + np.exp(-xn)), repeat=5)
    return out


def main() -> None:
    print("irc baseline benchmark (issue 3)")
    print(f"target: {irc.target.Target('llvm')}")
    m = mlp_overhead()
    print(f"MLP 784-256-10 through the VM: {m['irc_us']:.1f} us/call; numpy same math: "
          f"{m['numpy_us']:.1f} us/call; ratio irc/numpy {m['irc_us'] / m['numpy_us']:.1f}x; "
          f"compile {m['compile_s']:.2f} s")
    mm = naive_matmul()
    print(f"unscheduled matmul 1024^3: {mm['irc_gflops']:.2f} GFLOPS; numpy (OpenBLAS): "
          f"{mm['numpy_gflops']:.1f} GFLOPS; ratio {mm['irc_gflops'] / mm['numpy_gflops']:.3f}x")
    e = elementwise_speedup()
    n = 1 << 24
    print(f"elementwise SiLU on {n} floats: serial scalar "
          f"{e['serial_scalar'] * 1e3:.2f} ms, parallel+vectorized "
          f"{e['parallel_vector'] * 1e3:.2f} ms -> speedup "
          f"{e['serial_scalar'] / e['parallel_vector']:.1f}x; numpy {e['numpy'] * 1e3:.2f} ms")


if __name__ == "__main__":
    main()

"""Hand-written schedules vs BLAS (issue 4): proof that irc's code generator reaches
BLAS-class speed when given a good schedule. Each figure is printed next to its peer
measured in the same run:

1. seed 002's ``matmul_add`` (1024x1024x1024 float32, ``out = A @ B + C``) with a
   register-blocked schedule (8x32 micro-kernel in a local accumulator, B packed into
   32-wide panels by ``layout_rewrite`` — seed 002's ``layout_free_placeholders``, the
   epilogue fused into the write-back, parallel outer tiles) vs numpy's ``A @ B + C``
   (OpenBLAS);
2. a ResNet 3x3 conv2d layer (NHWC, 56x56x64 -> 64, pad 1) with a similar schedule vs an
   im2col + numpy matmul reference.

Run: ``python benchmarks/matmul_schedule.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import irc
from irc import topi
from irc.testing import ref
from irc.tir import Schedule, te
from irc.tir.schedule.layout import pack_weight


def best_of(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def matmul_add(n: int, l_: int, m: int, dtype: str):
    """Seed 002's workload."""
    a = te.placeholder((n, l_), name="A", dtype=dtype)
    b = te.placeholder((l_, m), name="B", dtype=dtype)
    c = te.placeholder((n, m), name="C", dtype=dtype)
    k = te.reduce_axis((0, l_), name="k")
    matmul = te.compute((n, m), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="matmul",
                        attrs={"layout_free_placeholders": [b]})
    out = te.compute((n, m), lambda i, j: matmul[i, j] + c[i, j], name="out")
    return [a, b, c, out]


def schedule_matmul_add(func, mr: int = 8, nr: int = 32, mb: int = 64, nb: int = 256):
    """Register-blocked matmul: per (i1, j1) an mr x nr accumulator tile in registers,
    k innermost-but-two, B packed in nr-wide panels contiguous along k."""
    sch = Schedule(func)
    mm = sch.get_block("matmul")
    i, j, k = sch.get_loops(mm)
    i0, i1, i2 = sch.split(i, [None, mb // mr, mr])
    j0, j1, j2 = sch.split(j, [None, nb // nr, nr])
    sch.reorder(i0, j0, i1, j1, k, i2, j2)
    acc = sch.cache_write(mm, 0, "local")
    sch.reverse_compute_at(acc, j1)
    sch.reverse_compute_inline(sch.get_block("out"))
    sch.parallel(sch.fuse(i0, j0))
    sch.unroll(i2)
    sch.vectorize(j2)
    sch.decompose_reduction(mm, k)
    sch.layout_rewrite(mm, 1, lambda kk, jj: (jj // nr, kk, jj % nr))
    sch.vectorize(sch.get_loops(sch.get_block("matmul_local"))[-1])
    return sch


def bench_matmul(repeat: int) -> dict:
    n = 1024
    func = te.create_prim_func(matmul_add(n, n, n, "float32"))
    sch = schedule_matmul_add(func)
    rt = irc.build(sch.mod, target="llvm")
    rng = np.random.default_rng(0)
    a, b, c = (rng.random((n, n), dtype=np.float32) for _ in range(3))
    args = [irc.tensor(a), irc.tensor(pack_weight(sch.mod["main"], 1, b)), irc.tensor(c),
            irc.runtime.empty((n, n), "float32")]
    rt(*args)
    np.testing.assert_allclose(args[3].numpy(), a @ b + c, rtol=1e-3, atol=1e-3)
    irc_s = rt.time_evaluator(rt.entry_name, irc.cpu(), number=3, repeat=repeat)(*args).min
    np_s = best_of(lambda: a @ b + c, repeat)
    flops = 2 * n ** 3 + n * n
    return {"irc": flops / irc_s / 1e9, "peer": flops / np_s / 1e9,
            "python": sch.trace.as_python()}


def schedule_conv_nhwc(func, wr: int = 8, cr: int = 32):
    """Register-blocked direct convolution: wr output columns x cr output channels per
    accumulator tile; the padding stage inlined; rows in parallel."""
    sch = Schedule(func)
    conv = sch.get_block("conv2d_nhwc")
    n, h, w, co, rh, rw, ci = sch.get_loops(conv)
    w0, w1 = sch.split(w, [None, wr])
    co0, co1 = sch.split(co, [None, cr])
    sch.reorder(n, h, w0, co0, rh, rw, ci, w1, co1)
    acc = sch.cache_write(conv, 0, "local")
    sch.reverse_compute_at(acc, co0)
    sch.compute_inline(sch.get_block("pad_temp"))
    sch.parallel(sch.fuse(n, h))
    sch.unroll(w1)
    sch.vectorize(co1)
    sch.decompose_reduction(conv, rh)
    sch.vectorize(sch.get_loops(sch.get_block("conv2d_nhwc_local"))[-1])
    return sch


def bench_conv(repeat: int) -> dict:
    n, h, w, ci, co = 1, 56, 56, 64, 64
    data = te.placeholder((n, h, w, ci), name="data")
    kernel = te.placeholder((3, 3, ci, co), name="kernel")
    out = topi.nn.conv2d_nhwc(data, kernel, 1, 1, 1)
    sch = schedule_conv_nhwc(te.create_prim_func([data, kernel, out]))
    rt = irc.build(sch.mod, target="llvm")
    rng = np.random.default_rng(0)
    d = rng.random((n, h, w, ci), dtype=np.float32)
    k = rng.random((3, 3, ci, co), dtype=np.float32)
    args = [irc.tensor(d), irc.tensor(k), irc.runtime.empty((n, h, w, co), "float32")]
    rt(*args)
    np.testing.assert_allclose(args[2].numpy(), ref.conv2d_nhwc(d, k, padding=1), rtol=1e-3,
                               atol=1e-3)

    def im2col():
        p = np.pad(d, ((0, 0), (1, 1), (1, 1), (0, 0)))
        cols = np.concatenate([p[:, i:i + h, j:j + w, :] for i in range(3) for j in range(3)],
                              axis=-1)
        return cols.reshape(h * w, 9 * ci) @ k.reshape(9 * ci, co)

    irc_s = rt.time_evaluator(rt.entry_name, irc.cpu(), number=5, repeat=repeat)(*args).min
    np_s = best_of(im2col, repeat)
    flops = 2 * n * h * w * co * ci * 9
    return {"irc": flops / irc_s / 1e9, "peer": flops / np_s / 1e9}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--show-schedule", action="store_true")
    args = p.parse_args()
    print(f"target: {irc.target.Target('llvm')}")
    m = bench_matmul(args.repeat)
    print(f"matmul_add 1024^3 f32, hand schedule: {m['irc']:.1f} GFLOPS; numpy (OpenBLAS) "
          f"A @ B + C: {m['peer']:.1f} GFLOPS; ratio {m['irc'] / m['peer']:.2f}x")
    if args.show_schedule:
        print(m["python"])
    c = bench_conv(args.repeat)
    print(f"conv2d NHWC 56x56x64->64 3x3 f32, hand schedule: {c['irc']:.1f} GFLOPS; "
          f"im2col + numpy: {c['peer']:.1f} GFLOPS; ratio {c['irc'] / c['peer']:.2f}x")


if __name__ == "__main__":
    main()

"""The whole lowering pipeline: lowered form invariants, results preserved (through the
reference interpreter) for te-built functions and a seed-002-style tiled schedule, and
``irc.lower``."""

from __future__ import annotations

import numpy as np
import pytest
from test_lower_cases import matmul, tiled_matmul_add

import irc
from irc import LoweringError, tir
from irc.ir import IRModule, assert_structural_equal, collect
from irc.script_parser import parse
from irc.tir import te
from irc.tir.analysis import verify_lowered
from irc.tir.interpreter import run
from irc.tir.transform import lower_module, lower_primfunc

RNG = np.random.default_rng(0)


def _random(shape, dtype):
    if dtype.startswith("float"):
        return RNG.uniform(-1, 1, size=shape).astype(dtype)
    return RNG.integers(-20, 20, size=shape).astype(dtype)


def _check_lowering(func, inputs, expected_fn, rtol=1e-5):
    """Lower ``func``; run both versions on the same inputs and compare with numpy."""
    lowered = lower_primfunc(func)
    verify_lowered(lowered)
    outs = []
    for f in (func, lowered):
        args = [np.array(x) for x in inputs]
        run(f, *args)
        outs.append(args)
    expected = expected_fn(*[np.array(x) for x in inputs])
    for before, after in zip(*outs):
        np.testing.assert_allclose(after, before, rtol=rtol, atol=1e-6)
    np.testing.assert_allclose(outs[1][-1], expected, rtol=rtol, atol=1e-5)
    return lowered


def _args(*specs):
    return [_random(shape, dtype) for shape, dtype in specs]


def test_elementwise_chain():
    A = te.placeholder((8, 12), name="A")
    B = te.compute((8, 12), lambda i, j: te.exp(A[i, j]) * 2.0, name="B")
    C = te.compute((8, 12), lambda i, j: B[i, j] + A[i, j], name="C")
    _check_lowering(te.create_prim_func([A, C]), _args(((8, 12), "float32"), ((8, 12), "float32")),
                    lambda a, c: np.exp(a) * 2 + a)


def test_broadcast_bias():
    A = te.placeholder((4, 6), name="A")
    b = te.placeholder((6,), name="b")
    C = te.compute((4, 6), lambda i, j: A[i, j] + b[j], name="C")
    _check_lowering(te.create_prim_func([A, b, C]),
                    _args(((4, 6), "float32"), ((6,), "float32"), ((4, 6), "float32")),
                    lambda a, bb, c: a + bb)


def test_sum_and_max_reductions():
    A = te.placeholder((6, 10), name="A")
    k = te.reduce_axis((0, 10), name="k")
    S = te.compute((6,), lambda i: te.sum(A[i, k], axis=k), name="S")
    k2 = te.reduce_axis((0, 10), name="k2")
    M = te.compute((6,), lambda i: te.max(A[i, k2], axis=k2), name="M")
    out = te.compute((6,), lambda i: S[i] - M[i], name="O")
    _check_lowering(te.create_prim_func([A, out]), _args(((6, 10), "float32"), ((6,), "float32")),
                    lambda a, o: a.sum(1) - a.max(1))


def test_matmul_int32():
    A = te.placeholder((5, 7), "int32", name="A")
    B = te.placeholder((7, 3), "int32", name="B")
    k = te.reduce_axis((0, 7), name="k")
    C = te.compute((5, 3), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    _check_lowering(te.create_prim_func([A, B, C]),
                    _args(((5, 7), "int32"), ((7, 3), "int32"), ((5, 3), "int32")),
                    lambda a, b, c: a @ b)


def test_conv2d_with_padding_and_pool():
    n, ci, h, w, co, kh = 1, 3, 6, 6, 4, 3
    data = te.placeholder((n, ci, h, w), name="data")
    weight = te.placeholder((co, ci, kh, kh), name="weight")
    pad = te.compute((n, ci, h + 2, w + 2), lambda b, c, y, x: te.if_then_else(
        te.all(y >= 1, y < h + 1, x >= 1, x < w + 1), data[b, c, y - 1, x - 1], 0.0),
        name="pad")
    rc = te.reduce_axis((0, ci), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kh), name="rx")
    conv = te.compute((n, co, h, w), lambda b, f, y, x: te.sum(
        pad[b, rc, ry + y, rx + x] * weight[f, rc, ry, rx], axis=[rc, ry, rx]), name="conv")
    py = te.reduce_axis((0, 2), name="py")
    px = te.reduce_axis((0, 2), name="px")
    pool = te.compute((n, co, h // 2, w // 2), lambda b, f, y, x: te.max(
        conv[b, f, py + y * 2, px + x * 2], axis=[py, px]), name="pool")

    def reference(d, wt, _):
        p = np.pad(d, ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = np.zeros((n, co, h, w), "float32")
        for y in range(h):
            for x in range(w):
                out[:, :, y, x] = np.einsum("bcij,fcij->bf", p[:, :, y:y + 3, x:x + 3], wt)
        return out.reshape(n, co, h // 2, 2, w // 2, 2).max(axis=(3, 5))

    _check_lowering(te.create_prim_func([data, weight, pool]),
                    _args(((n, ci, h, w), "float32"), ((co, ci, kh, kh), "float32"),
                          ((n, co, h // 2, w // 2), "float32")), reference, rtol=1e-4)


def test_index_arithmetic_and_casts():
    A = te.placeholder((4,), "int8", name="A")
    B = te.compute((16,), lambda i: A[i // 4].astype("int32") * 3 + i % 4 - (i // 4) * 4,
                   name="B")
    _check_lowering(te.create_prim_func([A, B]), _args(((4,), "int8"), ((16,), "int32")),
                    lambda a, b: np.repeat(a.astype("int32"), 4) * 3 + np.tile(np.arange(4), 4)
                    - np.repeat(np.arange(4), 4) * 4)


def test_tiled_matmul_like_seed_002():
    f = tiled_matmul_add(n=64, m=64, k=32, ti=16, tj=16, tk=4)
    lowered = _check_lowering(
        f, _args(((64, 32), "float32"), ((32, 64), "float32"), ((64, 64), "float32"),
                 ((64, 64), "float32")), lambda a, b, c, o: a @ b + c, rtol=1e-4)
    loops = collect(lowered.body, lambda x: type(x) is tir.For)
    assert loops[-1].kind == "parallel"
    assert all(lp.kind != "vectorized" for lp in loops)
    stores = collect(lowered.body, lambda x: type(x) is tir.BufferStore)
    assert all(type(s.indices[0]) is tir.Ramp for s in stores)


def test_seed_002_shape_of_lowered_matmul():
    """At seed-002 scale: the 1024-wide matmul stage computed at the fused parallel loop
    becomes a 512-element allocation with flat views of the parameters."""
    lowered = lower_primfunc(tiled_matmul_add(1024, 1024, 1024, ti=32, tj=16, tk=4))
    verify_lowered(lowered)
    (alloc,) = collect(lowered.body, lambda x: type(x) is tir.Allocate)
    assert [e.value for e in alloc.extents] == [512]
    outer = lowered.body
    decls = []
    while type(outer) is tir.DeclBuffer:
        decls.append(outer.buffer)
        outer = outer.body
    assert [(b.name, b.shape[0].value) for b in decls] == [
        ("A", 1048576), ("B", 1048576), ("C", 1048576), ("out", 1048576)]
    assert all(b.data is p.data for b, p in zip(decls, lowered.buffers))
    assert type(outer) is tir.For and outer.kind == "parallel" and outer.extent.value == 2048
    text = irc.lower(tiled_matmul_add(1024, 1024, 1024, ti=32, tj=16, tk=4)).script()
    assert 'T.allocate([512], "float32", "global")' in text
    assert "T.parallel(2048)" in text
    assert "data=A.data" in text


def test_lowering_twice_is_stable():
    once = lower_primfunc(matmul())
    assert_structural_equal(lower_primfunc(once), once)


def test_irc_lower_entry_points():
    f = matmul()
    expected = lower_primfunc(f)
    assert_structural_equal(irc.lower(f)["main"], expected)
    mod = IRModule(functions={"main": f})
    assert_structural_equal(irc.lower(mod)["main"], expected)
    assert_structural_equal(lower_module(mod)["main"], expected)

    class FakeSchedule:  # irc.tir.Schedule is duck-typed through .mod
        def __init__(self, mod):
            self.mod = mod

    assert_structural_equal(irc.lower(FakeSchedule(mod), args=None)["main"], expected)
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    lowered = irc.lower(None, args=[A, B])
    assert isinstance(lowered, IRModule) and "main" in lowered
    verify_lowered(lowered["main"])
    with pytest.raises(LoweringError, match="cannot lower"):
        irc.lower(42)


def test_symbolic_int64_shapes():
    n = tir.var("n", "int64")
    A = te.placeholder((n, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    C = te.compute((n,), lambda i: B[i] * 2.0, name="C")
    lowered = _check_lowering(te.create_prim_func([A, C]),
                              _args(((5, 8), "float32"), ((5,), "float32")),
                              lambda a, c: a.sum(1) * 2)
    (alloc,) = collect(lowered.body, lambda x: type(x) is tir.Allocate)
    assert alloc.extents[0] is lowered.buffers[1].shape[0]  # the intermediate stays n long


def test_gpu_shared_buffer_allocated_per_thread_block():
    f = parse('''
@T.prim_func
def main(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
    A_shared = T.alloc_buffer((256,), scope="shared")
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            with T.block("A_shared"):
                v = T.axis.spatial(256, bx * 64 + tx)
                A_shared[v] = A[v]
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            with T.block("B"):
                v = T.axis.spatial(256, bx * 64 + tx)
                B[v] = A_shared[v] * T.float32(2)
''')
    expected = parse('''
@T.prim_func
def main(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        A_shared = T.allocate([64], "float32", "shared")
        A_shared_1 = T.Buffer((64,), data=A_shared, scope="shared")
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            A_shared_1[tx] = A[bx * 64 + tx]
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            B[bx * 64 + tx] = A_shared_1[tx] * T.float32(2)
''')
    assert_structural_equal(lower_primfunc(f), expected)

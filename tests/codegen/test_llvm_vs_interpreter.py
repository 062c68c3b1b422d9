"""LLVM-compiled kernels against the reference interpreter, over te definitions.

Fixed kernels (elementwise, broadcast, reductions, matmul, conv2d, pooling; int and
float dtypes), the same kernels with their loops marked parallel/vectorized/unrolled
after lowering, and randomly generated expression kernels.
"""

import numpy as np
import pytest

import irc
from irc import te, topi
from irc.core.functor import Mutator
from irc.tir import interpreter
from irc.tir import stmt as S
from irc.tir.transform import lower_primfunc


def _inputs(func, rng):
    arrays = []
    for p in func.params:
        b = func.buffer_map[p]
        shape = tuple(int(s.value) for s in b.shape)
        if b.dtype == "bool":
            arrays.append(rng.random(shape) < 0.5)
        elif b.dtype.startswith(("int", "uint")):
            lo = 0 if b.dtype.startswith("uint") else -20
            arrays.append(rng.integers(lo, 20, shape).astype(b.dtype))
        elif b.dtype == "bfloat16":
            arrays.append(rng.integers(0x3F00, 0x4080, shape).astype(np.uint16))
        else:
            arrays.append(rng.uniform(-2, 2, shape).astype(b.dtype))
    return arrays


def _compare(func, n_outputs=1, seed=0, rtol=1e-5, atol=1e-5):
    rng = np.random.default_rng(seed)
    args_llvm = _inputs(func, rng)
    args_ref = [a.copy() for a in args_llvm]
    interpreter.run(func, *args_ref)
    irc.build(func)(*args_llvm)
    for got, want in zip(args_llvm[-n_outputs:], args_ref[-n_outputs:]):
        if got.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(got, want)


class _SetLoopKinds(Mutator):
    """Give the loops of each top-level nest kinds by depth (outermost first), leaving
    loops deeper than the list serial. Only valid for nests without reductions."""

    def __init__(self, kinds):
        super().__init__()
        self.kinds = kinds
        self.depth = 0

    def visit_For(self, s):
        kind = self.kinds[self.depth] if self.depth < len(self.kinds) else s.kind
        self.depth += 1
        body = self.visit(s.body)
        self.depth -= 1
        return s.replace(kind=kind, body=body)


def _with_kinds(func, kinds):
    low = lower_primfunc(func)
    return low.with_body(_SetLoopKinds(kinds).visit(low.body))


# -- fixed kernels --------------------------------------------------------------------


def _elementwise(dtype):
    A = te.placeholder((13, 37), dtype, name="A")
    B = te.placeholder((13, 37), dtype, name="B")
    if dtype.startswith("float"):
        C = te.compute((13, 37), lambda i, j: te.exp(A[i, j] * 0.25) - B[i, j] * B[i, j],
                       name="C")
    else:
        C = te.compute((13, 37), lambda i, j: te.max(A[i, j] * B[i, j] - A[i, j] // 3,
                                                     B[i, j] % 7), name="C")
    return te.create_prim_func([A, B, C])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "int16"])
def test_elementwise(dtype):
    _compare(_elementwise(dtype))


def test_broadcast_bias_relu():
    x = te.placeholder((8, 33), "float32", name="x")
    b = te.placeholder((33,), "float32", name="b")
    y = te.compute((8, 33), lambda i, j: te.max(x[i, j] + b[j], 0.0), name="y")
    _compare(te.create_prim_func([x, b, y]))


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_reductions(dtype):
    A = te.placeholder((9, 21), dtype, name="A")
    k = te.reduce_axis((0, 21), name="k")
    S_ = te.compute((9,), lambda i: te.sum(A[i, k], axis=k), name="S")
    k2 = te.reduce_axis((0, 21), name="k2")
    M = te.compute((9,), lambda i: te.max(A[i, k2], axis=k2), name="M")
    out = te.compute((9,), lambda i: S_[i] - M[i], name="out")
    _compare(te.create_prim_func([A, out]))


def test_matmul_with_transpose():
    A = te.placeholder((17, 23), "float32", name="A")
    B = te.placeholder((19, 23), "float32", name="B")
    k = te.reduce_axis((0, 23), name="k")
    C = te.compute((17, 19), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    _compare(te.create_prim_func([A, B, C]), rtol=1e-4)


def test_conv2d_nchw_with_padding():
    data = te.placeholder((1, 3, 10, 10), "float32", name="data")
    weight = te.placeholder((4, 3, 3, 3), "float32", name="weight")
    out = topi.nn.conv2d_nchw(data, weight, stride=1, padding=1)
    _compare(te.create_prim_func([data, weight, out]), rtol=1e-4, atol=1e-4)


def test_max_pool2d():
    data = te.placeholder((1, 2, 8, 8), "float32", name="data")
    out = topi.nn.pool2d(data, kernel=(2, 2), stride=(2, 2), dilation=(1, 1),
                         padding=(0, 0, 0, 0),
                         pool_type="max")
    _compare(te.create_prim_func([data, out]))


def test_mixed_dtypes_cast_chain():
    A = te.placeholder((40,), "uint8", name="A")
    B = te.placeholder((40,), "float16", name="B")
    C = te.compute((40,), lambda i: (A[i].astype("float32") * 0.5
                                     + B[i].astype("float32")).astype("float16"), name="C")
    _compare(te.create_prim_func([A, B, C]), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("kinds", [("parallel",), ("parallel", "vectorized"),
                                   ("serial", "unrolled"), ("parallel", "unrolled"),
                                   ("serial", "vectorized")])
def test_loop_kinds_on_elementwise(kinds):
    f = _with_kinds(_elementwise("float32"), kinds)
    _compare(f)
    g = _with_kinds(_elementwise("int32"), kinds)
    _compare(g)


# -- random expression kernels -----------------------------------------------------------


def _random_expr(rng, leaves, dtype, depth):
    if depth == 0 or rng.random() < 0.25:
        if rng.random() < 0.2:
            return te.const(int(rng.integers(1, 5)), dtype) if dtype.startswith("int") \
                else te.const(float(rng.uniform(-2, 2)), dtype)
        return leaves[int(rng.integers(len(leaves)))]
    a = _random_expr(rng, leaves, dtype, depth - 1)
    b = _random_expr(rng, leaves, dtype, depth - 1)
    if dtype.startswith("int"):
        ops = [lambda: a + b, lambda: a - b, lambda: a * b, lambda: te.max(a, b),
               lambda: te.min(a, b), lambda: a // int(rng.integers(1, 9)),
               lambda: a % int(rng.integers(1, 9)),
               lambda: te.select(a > b, a, b - 1)]
    else:
        ops = [lambda: a + b, lambda: a - b, lambda: a * b, lambda: te.max(a, b),
               lambda: te.min(a, b), lambda: te.select(a < b, a * 0.5, b),
               lambda: te.tanh(a), lambda: a / (te.abs(b) + 1.0), lambda: te.sigmoid(a)]
    return ops[int(rng.integers(len(ops)))]()


@pytest.mark.parametrize("seed", range(12))
def test_random_expression_kernels(seed):
    rng = np.random.default_rng(seed)
    dtype = ["float32", "int32", "float64", "int64"][seed % 4]
    shape = (int(rng.integers(1, 9)), int(rng.integers(1, 40)))
    X = te.placeholder(shape, dtype, name="X")
    Y = te.placeholder(shape, dtype, name="Y")
    bias = te.placeholder((shape[1],), dtype, name="bias")

    def body(i, j):
        return _random_expr(rng, [X[i, j], Y[i, j], bias[j]], dtype, 4)

    out = te.compute(shape, body, name="out")
    func = te.create_prim_func([X, Y, bias, out])
    _compare(func, seed=seed, rtol=1e-5, atol=1e-5)
    kinds = [("parallel", "vectorized"), ("serial", "unrolled"), ("parallel",)][seed % 3]
    _compare(_with_kinds(func, kinds), seed=seed, rtol=1e-5, atol=1e-5)


def test_symbolic_shape_te_kernel():
    n = te.var("n")
    A = te.placeholder((n, 4), "float32", name="A")
    B = te.compute((n, 4), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    mod = irc.build(te.create_prim_func([A, B]))
    for rows in (1, 5):
        a = np.random.rand(rows, 4).astype("float32")
        b = np.zeros((rows, 4), "float32")
        mod(a, b)
        np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


def test_build_schedule_like_object_and_te_args():
    A = te.placeholder((6,), "float32", name="A")
    B = te.compute((6,), lambda i: A[i] + 1.0, name="B")
    func = te.create_prim_func([A, B])

    class FakeSchedule:
        mod = irc.IRModule(functions={"main": func})

    m1 = irc.build(FakeSchedule(), [A, B], "llvm")
    m2 = irc.build(None, [A, B], target="llvm")
    for m in (m1, m2):
        a, b = np.arange(6, dtype="float32"), np.zeros(6, "float32")
        m(a, b)
        np.testing.assert_array_equal(b, a + 1)
    assert isinstance(S.PrimFunc, type)

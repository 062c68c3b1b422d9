"""topi elementwise and broadcast operators, checked against numpy through the interpreter."""

import math

import numpy as np
import pytest

from irc import IRCError, te, topi
from irc.tir.interpreter import run
from irc.tir.well_formed import check_prim_func

RNG = np.random.default_rng(7)


def evaluate(inputs, outputs):
    """Run the te program ``inputs -> outputs`` and return the output arrays."""
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    func = te.create_prim_func(list(inputs) + list(outputs))
    check_prim_func(func)
    outs = [np.zeros(tuple(int(s) for s in o.shape), dtype=o.dtype) for o in outputs]
    run(func, *inputs.values(), *outs)
    return outs if len(outs) > 1 else outs[0]


def placeholder(shape, dtype="float32", name="x", low=-2.0, high=2.0):
    t = te.placeholder(shape, name=name, dtype=dtype)
    if dtype == "bool":
        data = RNG.integers(0, 2, size=shape).astype(bool)
    elif dtype.startswith(("int", "uint")):
        data = RNG.integers(int(low) if low < 0 and dtype.startswith("int") else 1, 9,
                            size=shape).astype(dtype)
    else:
        data = RNG.uniform(low, high, size=shape).astype(dtype)
    return t, data


UNARY = [
    ("exp", np.exp, -2, 2), ("log", np.log, 0.1, 3), ("sqrt", np.sqrt, 0.1, 3),
    ("rsqrt", lambda v: 1 / np.sqrt(v), 0.1, 3), ("tanh", np.tanh, -2, 2),
    ("sigmoid", lambda v: 1 / (1 + np.exp(-v)), -3, 3), ("abs", np.abs, -2, 2),
    ("negative", np.negative, -2, 2), ("floor", np.floor, -2, 2), ("ceil", np.ceil, -2, 2),
    ("round", np.round, -3, 3), ("trunc", np.trunc, -2, 2), ("sin", np.sin, -2, 2),
    ("cos", np.cos, -2, 2), ("log2", np.log2, 0.1, 3), ("log10", np.log10, 0.1, 3),
    ("exp2", np.exp2, -2, 2), ("log1p", np.log1p, -0.5, 2), ("sign", np.sign, -2, 2),
    ("reciprocal", lambda v: 1 / v, 0.5, 2), ("square", np.square, -2, 2),
    ("erf", np.vectorize(math.erf), -2, 2), ("relu", lambda v: np.maximum(v, 0), -2, 2),
    ("silu", lambda v: v / (1 + np.exp(-v)), -3, 3), ("identity", lambda v: v, -2, 2),
]


@pytest.mark.parametrize("name,ref,low,high", UNARY, ids=[u[0] for u in UNARY])
def test_unary_float(name, ref, low, high):
    x, xv = placeholder((3, 4), low=low, high=high)
    out = evaluate({x: xv}, getattr(topi, name)(x))
    np.testing.assert_allclose(out, ref(xv.astype("float64")).astype("float32"), rtol=1e-5,
                               atol=1e-6)


def test_gelu_exact_and_tanh():
    x, xv = placeholder((2, 5), low=-3, high=3)
    exact = evaluate({x: xv}, topi.nn.gelu(x))
    ref = 0.5 * xv * (1 + np.vectorize(math.erf)(xv / math.sqrt(2)))
    np.testing.assert_allclose(exact, ref, rtol=1e-5, atol=1e-6)
    approx = evaluate({x: xv}, topi.nn.gelu(x, approximate="tanh"))
    ref = 0.5 * xv * (1 + np.tanh(math.sqrt(2 / math.pi) * (xv + 0.044715 * xv ** 3)))
    np.testing.assert_allclose(approx, ref, rtol=1e-5, atol=1e-6)


def test_leaky_relu_clip_cast_and_predicates():
    x, xv = placeholder((4, 3), low=-3, high=3)
    np.testing.assert_allclose(evaluate({x: xv}, topi.leaky_relu(x, 0.1)),
                               np.where(xv > 0, xv, 0.1 * xv), rtol=1e-6)
    np.testing.assert_array_equal(evaluate({x: xv}, topi.clip(x, -1.0, 0.5)),
                                  np.clip(xv, -1.0, 0.5))
    np.testing.assert_array_equal(evaluate({x: xv}, topi.cast(x, "int32")),
                                  xv.astype("int32"))
    np.testing.assert_array_equal(evaluate({x: xv}, topi.cast(x, "float16")),
                                  xv.astype("float16"))
    yv = xv.copy()
    yv[0, 0], yv[1, 1] = np.nan, np.inf
    np.testing.assert_array_equal(evaluate({x: yv}, topi.isnan(x)), np.isnan(yv))
    np.testing.assert_array_equal(evaluate({x: yv}, topi.isinf(x)), np.isinf(yv))
    np.testing.assert_array_equal(evaluate({x: yv}, topi.isfinite(x)), np.isfinite(yv))
    b, bv = placeholder((5,), "bool", "b")
    np.testing.assert_array_equal(evaluate({b: bv}, topi.logical_not(b)), ~bv)
    i, iv = placeholder((5,), "int32", "i")
    np.testing.assert_array_equal(evaluate({i: iv}, topi.abs(i)), np.abs(iv))
    np.testing.assert_array_equal(evaluate({i: iv}, topi.bitwise_not(i)), ~iv)
    np.testing.assert_array_equal(evaluate({i: iv}, topi.floor(i)), iv)


def test_unary_rejects_integers():
    i = te.placeholder((3,), name="i", dtype="int32")
    with pytest.raises(IRCError, match="topi.exp needs a floating-point tensor"):
        topi.exp(i)


BINARY = [
    ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
    ("divide", np.divide), ("maximum", np.maximum), ("minimum", np.minimum),
    ("power", np.power), ("floor_divide", np.floor_divide), ("floor_mod", np.mod),
    ("mod", np.fmod), ("equal", np.equal), ("not_equal", np.not_equal), ("less", np.less),
    ("less_equal", np.less_equal), ("greater", np.greater),
    ("greater_equal", np.greater_equal),
]


@pytest.mark.parametrize("name,ref", BINARY, ids=[b[0] for b in BINARY])
def test_broadcast_binary_float(name, ref):
    a, av = placeholder((2, 1, 4), name="a", low=0.5, high=3)
    b, bv = placeholder((3, 1), name="b", low=0.5, high=3)
    bv[0, 0] = av[0, 0, 0]  # exercise equality
    out = evaluate({a: av, b: bv}, getattr(topi, name)(a, b))
    np.testing.assert_allclose(out, ref(av, bv), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name,ref", [
    ("add", np.add), ("multiply", np.multiply), ("floor_divide", np.floor_divide),
    ("floor_mod", np.mod), ("maximum", np.maximum), ("bitwise_and", np.bitwise_and),
    ("bitwise_or", np.bitwise_or), ("bitwise_xor", np.bitwise_xor),
    ("left_shift", np.left_shift), ("right_shift", np.right_shift),
])
def test_broadcast_binary_int(name, ref):
    a, av = placeholder((3, 4), "int32", "a", low=-8)
    b, bv = placeholder((4,), "int32", "b", low=1)
    out = evaluate({a: av, b: bv}, getattr(topi, name)(a, b))
    np.testing.assert_array_equal(out, ref(av, bv))


def test_integer_divide_and_mod_truncate():
    a, av = placeholder((6,), "int32", "a")
    av[:] = [7, -7, 7, -7, 9, -9]
    b, bv = placeholder((6,), "int32", "b")
    bv[:] = [2, 2, -2, -2, 4, 4]
    np.testing.assert_array_equal(evaluate({a: av, b: bv}, topi.divide(a, b)),
                                  np.trunc(av / bv).astype("int32"))
    np.testing.assert_array_equal(evaluate({a: av, b: bv}, topi.mod(a, b)), np.fmod(av, bv))


def test_logical_ops_and_where():
    p, pv = placeholder((2, 3), "bool", "p")
    q, qv = placeholder((3,), "bool", "q")
    np.testing.assert_array_equal(evaluate({p: pv, q: qv}, topi.logical_and(p, q)), pv & qv)
    np.testing.assert_array_equal(evaluate({p: pv, q: qv}, topi.logical_or(p, q)), pv | qv)
    np.testing.assert_array_equal(evaluate({p: pv, q: qv}, topi.logical_xor(p, q)), pv ^ qv)
    x, xv = placeholder((2, 3), name="x")
    y, yv = placeholder((1, 3), name="y")
    np.testing.assert_array_equal(evaluate({p: pv, x: xv, y: yv}, topi.where(p, x, y)),
                                  np.where(pv, xv, yv))
    np.testing.assert_array_equal(evaluate({x: xv}, topi.where(topi.greater(x, 0.0), x, 0.0)),
                                  np.where(xv > 0, xv, 0))


def test_scalars_broadcast_to_and_tensor_operators():
    x, xv = placeholder((2, 3), name="x")
    y, yv = placeholder((3,), name="y")
    np.testing.assert_allclose(evaluate({x: xv}, topi.add(x, 1)), xv + 1)
    np.testing.assert_allclose(evaluate({x: xv}, topi.subtract(2.0, x)), 2 - xv)
    np.testing.assert_allclose(evaluate({x: xv, y: yv}, (x + y) * 2 - x / y), (xv + yv) * 2
                               - xv / yv, rtol=1e-6)
    np.testing.assert_allclose(evaluate({x: xv}, -x), -xv)
    np.testing.assert_array_equal(evaluate({y: yv}, topi.broadcast_to(y, (4, 3))),
                                  np.broadcast_to(yv, (4, 3)))
    with pytest.raises(IRCError, match=r"shapes \(2, 3\) and \(4\) do not broadcast"):
        topi.add(x, te.placeholder((4,), name="z"))
    i = te.placeholder((3,), name="i", dtype="int32")
    with pytest.raises(IRCError, match="cast the tensor"):
        topi.add(i, 0.5)


def test_broadcast_of_a_symbolic_dimension_against_a_constant_one():
    """``(4,) + (n,)`` has shape ``(4,)``: ``n`` may be 1 (broadcast) or 4 at run time."""
    import irc
    from irc.runtime import tensor
    from irc.tir import expr as E

    n = E.var("n", "int64")
    a = te.placeholder((4,), name="a")
    b = te.placeholder((n,), name="b")
    c = topi.add(a, b)
    assert [int(s) for s in c.shape] == [4]
    lib = irc.build(te.create_prim_func([a, b, c]), target="llvm")
    av = np.arange(4, dtype="float32")
    for bv in (np.array([10], "float32"), np.arange(4, dtype="float32") * 10):
        out = tensor(np.zeros(4, "float32"))
        lib(tensor(av), tensor(bv), out)
        np.testing.assert_array_equal(out.numpy(), av + bv)

"""topi reductions, checked against numpy through the interpreter."""

import numpy as np
import pytest

from irc import IRCError, te, topi
from irc.tir.interpreter import run
from irc.tir.well_formed import check_prim_func

RNG = np.random.default_rng(11)


def evaluate(inputs, output):
    func = te.create_prim_func(list(inputs) + [output])
    check_prim_func(func)
    out = np.zeros(tuple(int(s) for s in output.shape), dtype=output.dtype)
    run(func, *inputs.values(), out)
    return out


@pytest.mark.parametrize("name", ["sum", "max", "min", "prod", "mean"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), ((0, 2), True),
                                           (-1, True), ((), False)])
def test_reductions(name, axis, keepdims):
    x = te.placeholder((2, 3, 4), name="x")
    xv = RNG.uniform(0.5, 1.5, size=(2, 3, 4)).astype("float32")
    out = evaluate({x: xv}, getattr(topi, name)(x, axis=axis, keepdims=keepdims))
    np_axis = None if axis is None else axis
    ref = getattr(np, name)(xv.astype("float64"), axis=np_axis, keepdims=keepdims)
    np.testing.assert_allclose(out, ref, rtol=1e-5)


def test_integer_sum_and_max():
    x = te.placeholder((3, 5), name="x", dtype="int32")
    xv = RNG.integers(-50, 50, size=(3, 5)).astype("int32")
    np.testing.assert_array_equal(evaluate({x: xv}, topi.sum(x, axis=1)), xv.sum(axis=1))
    np.testing.assert_array_equal(evaluate({x: xv}, topi.max(x, axis=0)), xv.max(axis=0))


@pytest.mark.parametrize("fn", ["argmax", "argmin"])
def test_arg_reductions(fn):
    x = te.placeholder((3, 4, 5), name="x")
    xv = RNG.integers(0, 4, size=(3, 4, 5)).astype("float32")  # many ties: first wins
    for axis in (0, 1, -1):
        out = evaluate({x: xv}, getattr(topi, fn)(x, axis=axis))
        np.testing.assert_array_equal(out, getattr(np, fn)(xv, axis=axis))
    out = evaluate({x: xv}, getattr(topi, fn)(x, axis=1, keepdims=True, out_dtype="int64"))
    np.testing.assert_array_equal(out, getattr(np, fn)(xv, axis=1)[:, None, :])
    assert out.dtype == np.int64
    out = evaluate({x: xv}, getattr(topi, fn)(x))
    assert out.shape == () and out == getattr(np, fn)(xv)
    out = evaluate({x: xv}, getattr(topi, fn)(x, keepdims=True))
    assert out.shape == (1, 1, 1) and out.ravel()[0] == getattr(np, fn)(xv)
    last = evaluate({x: xv}, getattr(topi, fn)(x, axis=2, select_last_index=True))
    flipped = xv[:, :, ::-1]
    np.testing.assert_array_equal(last, 4 - getattr(np, fn)(flipped, axis=2))


def test_variance_and_boolean_reductions():
    x = te.placeholder((4, 6), name="x")
    xv = RNG.standard_normal((4, 6)).astype("float32") + 10
    np.testing.assert_allclose(evaluate({x: xv}, topi.variance(x, axis=1)), xv.var(axis=1),
                               rtol=1e-4)
    np.testing.assert_allclose(evaluate({x: xv}, topi.variance(x, axis=0, keepdims=True,
                                                               unbiased=True)),
                               xv.var(axis=0, ddof=1, keepdims=True), rtol=1e-4)
    b = te.placeholder((3, 4), name="b", dtype="bool")
    bv = RNG.integers(0, 2, size=(3, 4)).astype(bool)
    bv[0] = True
    np.testing.assert_array_equal(evaluate({b: bv}, topi.all(b, axis=1)), bv.all(axis=1))
    np.testing.assert_array_equal(evaluate({b: bv}, topi.any(b, axis=0)), bv.any(axis=0))


def test_reduction_errors():
    x = te.placeholder((2, 3), name="x")
    with pytest.raises(IRCError, match="axis 2 is out of range"):
        topi.sum(x, axis=2)
    with pytest.raises(IRCError, match="one axis"):
        topi.argmax(x, axis=[0, 1])

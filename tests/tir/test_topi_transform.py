"""topi shape manipulation and creation, checked against numpy through the interpreter."""

import numpy as np
import pytest

from irc import IRCError, te, topi
from irc.tir.interpreter import run
from irc.tir.well_formed import check_prim_func

RNG = np.random.default_rng(13)


def evaluate(inputs, outputs):
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    func = te.create_prim_func(list(inputs) + list(outputs))
    check_prim_func(func)
    outs = [np.zeros(tuple(int(s) for s in o.shape), dtype=o.dtype) for o in outputs]
    run(func, *inputs.values(), *outs)
    return outs if len(outs) > 1 else outs[0]


def data(shape, dtype="float32", name="x"):
    return te.placeholder(shape, name=name, dtype=dtype), \
        np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape) + 1


def test_reshape_transpose_expand_squeeze_flatten():
    x, xv = data((2, 3, 4))
    np.testing.assert_array_equal(evaluate({x: xv}, topi.reshape(x, (4, -1))), xv.reshape(4, -1))
    np.testing.assert_array_equal(evaluate({x: xv}, topi.reshape(x, (24,))), xv.ravel())
    np.testing.assert_array_equal(evaluate({x: xv}, topi.transpose(x)), xv.transpose())
    np.testing.assert_array_equal(evaluate({x: xv}, topi.transpose(x, (1, 0, 2))),
                                  xv.transpose(1, 0, 2))
    np.testing.assert_array_equal(evaluate({x: xv}, topi.expand_dims(x, 1, 2)),
                                  xv[:, None, None])
    np.testing.assert_array_equal(evaluate({x: xv}, topi.expand_dims(x, -1)), xv[..., None])
    y, yv = data((1, 3, 1, 2))
    np.testing.assert_array_equal(evaluate({y: yv}, topi.squeeze(y)), yv.squeeze())
    np.testing.assert_array_equal(evaluate({y: yv}, topi.squeeze(y, axis=[2])),
                                  yv.squeeze(axis=2))
    np.testing.assert_array_equal(evaluate({x: xv}, topi.flatten(x, 1)), xv.reshape(2, 12))
    np.testing.assert_array_equal(evaluate({x: xv}, topi.nn.flatten(x)), xv.reshape(2, 12))
    with pytest.raises(IRCError, match="cannot reshape 24 elements"):
        topi.reshape(x, (5, 5))
    with pytest.raises(IRCError, match="has size 3, not 1"):
        topi.squeeze(y, axis=1)


def test_concatenate_and_split():
    a, av = data((2, 3), name="a")
    b, bv = data((2, 1), name="b")
    c, cv = data((2, 2), name="c")
    np.testing.assert_array_equal(evaluate({a: av, b: bv, c: cv},
                                           topi.concatenate([a, b, c], axis=1)),
                                  np.concatenate([av, bv, cv], axis=1))
    x, xv = data((6, 2))
    parts = evaluate({x: xv}, topi.split(x, 3))
    for got, ref in zip(parts, np.split(xv, 3)):
        np.testing.assert_array_equal(got, ref)
    parts = evaluate({x: xv}, topi.split(x, [1, 4], axis=0))
    for got, ref in zip(parts, np.split(xv, [1, 4])):
        np.testing.assert_array_equal(got, ref)
    # n sections of ceil(size / n), the last the remainder (R.split's and ONNX's rule).
    y, yv = data((7, 2))
    parts = evaluate({y: yv}, topi.split(y, 3))
    for got, ref in zip(parts, np.split(yv, [3, 6])):
        np.testing.assert_array_equal(got, ref)
    with pytest.raises(IRCError, match="cannot be cut into 4 non-empty sections"):
        topi.split(x, 4)


@pytest.mark.parametrize("begin,end,strides,axes", [
    ([1], [3], None, None),
    ([0, -3], [2, 5], [1, 2], None),
    ([-1], [-6], [-2], [1]),
    ([1, 0], [100, -1], None, [1, 0]),
    ([5], [0], [-1], [1]),
])
def test_strided_slice(begin, end, strides, axes):
    x, xv = data((3, 6))
    out = evaluate({x: xv}, topi.strided_slice(x, begin, end, strides, axes))
    slices = [slice(None)] * 2
    ax = axes if axes is not None else list(range(len(begin)))
    st = strides if strides is not None else [1] * len(begin)
    for a, b, e, s in zip(ax, begin, end, st):
        slices[a] = slice(b, e, s)
    np.testing.assert_array_equal(out, xv[tuple(slices)])


def test_take_modes():
    x, xv = data((4, 5))
    i = te.placeholder((2, 3), name="i", dtype="int32")
    iv = np.array([[0, 3, 1], [2, 2, 0]], "int32")
    np.testing.assert_array_equal(evaluate({x: xv, i: iv}, topi.take(x, i, axis=1)),
                                  np.take(xv, iv, axis=1))
    np.testing.assert_array_equal(evaluate({x: xv, i: iv}, topi.take(x, i)), np.take(xv, iv))
    wild = np.array([[-1, 7, 1], [2, 9, -5]], "int32")
    np.testing.assert_array_equal(evaluate({x: xv, i: wild}, topi.take(x, i, axis=0)),
                                  np.take(xv, wild, axis=0, mode="clip"))
    np.testing.assert_array_equal(evaluate({x: xv, i: wild}, topi.take(x, i, axis=0,
                                                                        mode="wrap")),
                                  np.take(xv, wild, axis=0, mode="wrap"))


def test_tile_repeat_and_creation():
    x, xv = data((2, 3))
    np.testing.assert_array_equal(evaluate({x: xv}, topi.tile(x, (2, 1, 2))),
                                  np.tile(xv, (2, 1, 2)))
    np.testing.assert_array_equal(evaluate({x: xv}, topi.repeat(x, 2, axis=1)),
                                  np.repeat(xv, 2, axis=1))
    np.testing.assert_array_equal(evaluate({x: xv}, topi.repeat(x, 3)), np.repeat(xv, 3))
    np.testing.assert_array_equal(evaluate({}, topi.full((2, 2), "int32", 7)),
                                  np.full((2, 2), 7, "int32"))
    np.testing.assert_array_equal(evaluate({x: xv}, topi.full_like(x, 1.5)),
                                  np.full_like(xv, 1.5))
    np.testing.assert_array_equal(evaluate({}, topi.zeros((3,))), np.zeros(3))
    np.testing.assert_array_equal(evaluate({}, topi.ones((3,), "int8")), np.ones(3, "int8"))
    np.testing.assert_allclose(evaluate({}, topi.arange(1.0, 2.0, 0.25)),
                               np.arange(1.0, 2.0, 0.25, dtype="float32"))
    np.testing.assert_array_equal(evaluate({}, topi.arange(5, dtype="int32")),
                                  np.arange(5, dtype="int32"))
    np.testing.assert_array_equal(evaluate({}, topi.arange(10, 0, -3, dtype="int64")),
                                  np.arange(10, 0, -3))

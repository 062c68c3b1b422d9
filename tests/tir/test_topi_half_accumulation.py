"""topi's sums of 16-bit floats: every reduction stage of a float16 or bfloat16
computation (sums, products, means, variances, softmax, the normalizations, pooling,
matrix products, convolutions, col2im) accumulates in float32 and the result is rounded
to the input's dtype once; float32 computations keep float32 throughout."""

import numpy as np
import pytest

from irc import te, topi
from irc.core.functor import collect
from irc.tir.interpreter import run
from irc.tir.stmt import Block
from irc.tir.topi.image import col2im
from irc.tir.topi.nn.spatial_nd import (
    avg_pool_nd,
    conv_nd,
    conv_transpose_nd,
    deform_conv2d,
    lp_pool_nd,
)
from irc.tir.topi.utils import accumulator_dtype


def _ph(shape, dtype, name):
    return te.placeholder(shape, name=name, dtype=dtype)


def _nn(fn):
    """A builder ``dtype -> (inputs, output)`` from ``fn(x, w, ...)`` over placeholders of
    the shapes listed after it."""
    def make(*shapes):
        def build(dtype):
            ins = [_ph(s, dtype, f"p{i}") for i, s in enumerate(shapes)]
            return ins, fn(*ins)
        return build
    return make


BUILDERS = {
    "sum": _nn(lambda x: topi.sum(x, axis=1))((4, 64)),
    "prod": _nn(lambda x: topi.prod(x, axis=1))((4, 64)),
    "mean": _nn(lambda x: topi.mean(x, axis=(0, 1), keepdims=True))((4, 64)),
    "variance": _nn(lambda x: topi.variance(x, axis=1))((4, 64)),
    "softmax": _nn(lambda x: topi.nn.softmax(x))((4, 64)),
    "log_softmax": _nn(lambda x: topi.nn.log_softmax(x))((4, 64)),
    "layer_norm": _nn(lambda x, g, b: topi.nn.layer_norm(x, g, b, axis=-1))(
        (4, 64), (64,), (64,)),
    "group_norm": _nn(lambda x, g, b: topi.nn.group_norm(x, g, b, num_groups=2))(
        (1, 4, 8, 8), (4,), (4,)),
    "avg_pool2d": _nn(lambda x: topi.nn.avg_pool2d(x, (3, 3), padding=1,
                                                   count_include_pad=False))((1, 2, 8, 8)),
    "adaptive_avg_pool": _nn(lambda x: topi.nn.adaptive_pool(x, (3, 3), "avg"))(
        (1, 2, 8, 8)),
    "global_avg_pool": _nn(lambda x: topi.nn.global_pool(x, "avg"))((1, 2, 8, 8)),
    "avg_pool_nd": _nn(lambda x: avg_pool_nd(x, [2, 2, 2], [2, 2, 2], [0] * 6, [1] * 3))(
        (1, 2, 4, 4, 4)),
    "lp_pool_nd": _nn(lambda x: lp_pool_nd(x, [2, 2], [2, 2], [0] * 4, [1, 1]))(
        (1, 2, 4, 4)),
    "matmul": _nn(lambda a, b: topi.nn.matmul(a, b))((8, 32), (32, 4)),
    "batch_matmul": _nn(lambda a, b: topi.nn.batch_matmul(a, b))((2, 8, 32), (2, 4, 32)),
    "dense_bias": _nn(lambda x, w, b: topi.nn.dense(x, w, b))((8, 32), (4, 32), (4,)),
    "conv2d": _nn(lambda x, w: topi.nn.conv2d(x, w, padding=1))((1, 8, 6, 6), (4, 8, 3, 3)),
    "group_conv2d": _nn(lambda x, w: topi.nn.conv2d(x, w, groups=2))(
        (1, 8, 6, 6), (4, 4, 3, 3)),
    "depthwise_conv2d": _nn(lambda x, w: topi.nn.depthwise_conv2d_nchw(x, w, 1, 1))(
        (1, 4, 6, 6), (4, 1, 3, 3)),
    "conv2d_transpose": _nn(lambda x, w: topi.nn.conv2d_transpose_nchw(x, w, 1, 0))(
        (1, 8, 4, 4), (8, 4, 3, 3)),
    "conv_nd": _nn(lambda x, w: conv_nd(x, w, [1] * 3, [0] * 6, [1] * 3))(
        (1, 4, 4, 4, 4), (2, 4, 3, 3, 3)),
    "conv_transpose_nd": _nn(lambda x, w: conv_transpose_nd(x, w, [1] * 3, [0] * 6, [0] * 3,
                                                            [1] * 3))(
        (1, 4, 3, 3, 3), (4, 2, 2, 2, 2)),
    "deform_conv2d": _nn(lambda x, off, w: deform_conv2d(x, off, w, None, [1, 1], [0, 0],
                                                         [1, 1]))(
        (1, 4, 5, 5), (1, 18, 3, 3), (2, 4, 3, 3)),
    "col2im": _nn(lambda x: col2im(x, [6, 6], [3, 3], 2, [1, 1], [0] * 4, [1, 1]))(
        (1, 18, 16)),
}


def _blocks(func):
    return collect(func.body, lambda n: isinstance(n, Block))


def _written_dtype(block):
    return block.writes[0].buffer.dtype


def test_accumulator_dtype():
    assert accumulator_dtype("float16") == "float32"
    assert accumulator_dtype("bfloat16") == "float32"
    assert accumulator_dtype("float8_e4m3fn") == "float32"
    assert accumulator_dtype("float32") == "float32"
    assert accumulator_dtype("float64") == "float64"
    assert accumulator_dtype("int8") == "int8"
    assert accumulator_dtype("int32") == "int32"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", list(BUILDERS))
def test_narrow_reductions_accumulate_in_float32(name, dtype):
    ins, out = BUILDERS[name](dtype)
    assert out.dtype == dtype
    func = te.create_prim_func(ins + [out])
    reductions = [b for b in _blocks(func)
                  if any(iv.iter_type == "reduce" for iv in b.iter_vars)]
    assert reductions, f"{name}: no reduction block"
    sums = [b for b in reductions if not b.name.endswith("maxelem")]
    wrong = {b.name: _written_dtype(b) for b in sums if _written_dtype(b) != "float32"}
    assert not wrong, f"{name} {dtype}: reductions not in float32: {wrong}"


@pytest.mark.parametrize("name", list(BUILDERS))
def test_float32_stays_float32(name):
    ins, out = BUILDERS[name]("float32")
    func = te.create_prim_func(ins + [out])
    dtypes = {_written_dtype(b) for b in _blocks(func) if b.writes}
    assert dtypes == {"float32"}, f"{name}: {dtypes}"
    assert not any(b.name == "T_cast" for b in _blocks(func))


def test_float16_sum_rounds_once():
    """2048 positive values whose float16 running sum would stop growing: the sum is the
    exact one rounded to float16."""
    x = _ph((4, 2048), "float16", "x")
    y = topi.sum(x, axis=1)
    xv = np.exp(np.random.default_rng(3).uniform(-3, 3, (4, 2048))).astype("float16")
    out = np.zeros((4,), "float16")
    run(te.create_prim_func([x, y]), xv, out)
    np.testing.assert_array_equal(out, xv.astype("float64").sum(axis=1).astype("float16"))


def test_float16_softmax_within_one_step():
    """The softmax of 62 values (the size that showed a sum kept in float16 seven steps
    off) is within one float16 step of the float64 one."""
    x = _ph((8, 62), "float16", "x")
    xv = np.random.default_rng(4).normal(0, 3, (8, 62)).astype("float16")
    out = np.zeros((8, 62), "float16")
    run(te.create_prim_func([x, topi.nn.softmax(x)]), xv, out)
    wide = xv.astype("float64")
    e = np.exp(wide - wide.max(axis=1, keepdims=True))
    ref = (e / e.sum(axis=1, keepdims=True)).astype("float16")
    steps = np.abs(out.view(np.int16).astype(np.int32) - ref.view(np.int16).astype(np.int32))
    assert steps.max() <= 1

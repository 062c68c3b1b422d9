"""LegalizeOps: every graph operator compiles through its topi rule and matches numpy."""

import math

import numpy as np
import pytest

import irc
from irc.ir import BlockBuilder, Var, ops, tensor_sinfo
from irc.ir.op import AttrSpec, register_op
from irc.testing import ref

RNG = np.random.default_rng(0)


def _run(build, *arrays):
    """Build main(*arrays) -> build(*vars) with BlockBuilder, compile, run."""
    bb = BlockBuilder()
    params = [Var(name_hint=f"x{i}", struct_info=tensor_sinfo(a.shape, str(a.dtype)))
              for i, a in enumerate(arrays)]
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(build(*params))
        bb.emit_func_output(out)
    vm = irc.vm.VirtualMachine(irc.compile(bb.get(), "llvm", pipeline="zero"))
    result = vm["main"](*arrays)
    if isinstance(result, tuple):
        return tuple(r.numpy() for r in result)
    return result.numpy()


def f32(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, shape).astype("float32")


UNARY = [
    ("exp", ops.exp, np.exp, {}),
    ("log", ops.log, np.log, {"lo": 0.1, "hi": 3.0}),
    ("sqrt", ops.sqrt, np.sqrt, {"lo": 0.1, "hi": 3.0}),
    ("rsqrt", ops.rsqrt, lambda x: 1 / np.sqrt(x), {"lo": 0.1, "hi": 3.0}),
    ("tanh", ops.tanh, np.tanh, {}),
    ("sigmoid", ops.sigmoid, lambda x: 1 / (1 + np.exp(-x)), {}),
    ("erf", ops.erf, np.vectorize(math.erf), {}),
    ("abs", ops.abs, np.abs, {}),
    ("negative", ops.negative, np.negative, {}),
    ("floor", ops.floor, np.floor, {"lo": -3, "hi": 3}),
    ("ceil", ops.ceil, np.ceil, {"lo": -3, "hi": 3}),
    ("round", ops.round, np.round, {"lo": -3, "hi": 3}),
    ("sin", ops.sin, np.sin, {}),
    ("cos", ops.cos, np.cos, {}),
    ("relu", ops.nn.relu, ref.relu, {}),
    ("gelu", ops.nn.gelu, ref.gelu, {}),
    ("gelu_tanh", ops.nn.gelu_tanh,
     lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))), {}),
    ("silu", ops.nn.silu, lambda x: x / (1 + np.exp(-x)), {}),
]


@pytest.mark.parametrize("name,builder,expected,rng", UNARY, ids=[u[0] for u in UNARY])
def test_unary(name, builder, expected, rng):
    x = f32(3, 5, **rng)
    np.testing.assert_allclose(_run(builder, x), expected(x).astype("float32"), rtol=1e-5,
                               atol=1e-6)


BINARY = [
    ("add", ops.add, np.add), ("subtract", ops.subtract, np.subtract),
    ("multiply", ops.multiply, np.multiply), ("divide", ops.divide, np.divide),
    ("maximum", ops.maximum, np.maximum), ("minimum", ops.minimum, np.minimum),
    ("power", ops.power, lambda a, b: np.power(np.abs(a), b)),
    ("floor_divide", ops.floor_divide, np.floor_divide),
    ("equal", ops.equal, np.equal), ("not_equal", ops.not_equal, np.not_equal),
    ("less", ops.less, np.less), ("less_equal", ops.less_equal, np.less_equal),
    ("greater", ops.greater, np.greater), ("greater_equal", ops.greater_equal, np.greater_equal),
]


@pytest.mark.parametrize("name,builder,expected", BINARY, ids=[b[0] for b in BINARY])
def test_binary_with_broadcasting(name, builder, expected):
    a = f32(2, 3, 4)
    b = f32(3, 1, lo=0.5, hi=2.0)
    if name == "power":
        a = np.abs(a)
    got = _run(builder, a, b)
    np.testing.assert_allclose(got, expected(a, b), rtol=1e-5, atol=1e-6)


def test_logical_and_where():
    a = RNG.integers(0, 2, (4, 5)).astype(bool)
    b = RNG.integers(0, 2, (4, 5)).astype(bool)
    np.testing.assert_array_equal(_run(ops.logical_and, a, b), a & b)
    np.testing.assert_array_equal(_run(ops.logical_or, a, b), a | b)
    np.testing.assert_array_equal(_run(ops.logical_not, a), ~a)
    x, y = f32(4, 5), f32(4, 5)
    np.testing.assert_allclose(_run(ops.where, a, x, y), np.where(a, x, y))


def test_matmul_batched_and_linear():
    a, b = f32(2, 3, 5, 4), f32(3, 4, 6)
    np.testing.assert_allclose(_run(ops.matmul, a, b), a @ b, rtol=1e-5, atol=1e-5)
    v = f32(4)
    np.testing.assert_allclose(_run(ops.matmul, f32(3, 4) * 0 + a[0, 0, :3], v),
                               a[0, 0, :3] @ v, rtol=1e-5, atol=1e-5)
    x, w, bias = f32(2, 7), f32(5, 7), f32(5)
    np.testing.assert_allclose(_run(ops.linear, x, w, bias), x @ w.T + bias, rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("groups", [1, 2])
def test_conv2d(layout, groups):
    data = f32(1, 4, 9, 8)
    weight = f32(6, 4 // groups, 3, 3)
    expected = ref.conv2d_nchw(data, weight, strides=2, padding=(1, 0), dilation=1,
                               groups=groups)
    if layout == "NHWC":
        got = _run(lambda d, w: ops.nn.conv2d(d, w, strides=2, padding=(1, 0), groups=groups,
                                              data_layout="NHWC", kernel_layout="HWIO"),
                   data.transpose(0, 2, 3, 1), weight.transpose(2, 3, 1, 0))
        got = got.transpose(0, 3, 1, 2)
    else:
        got = _run(lambda d, w: ops.nn.conv2d(d, w, strides=2, padding=(1, 0), groups=groups),
                   data, weight)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_pooling_and_softmax():
    x = f32(1, 3, 8, 8)
    got = _run(lambda d: ops.nn.max_pool2d(d, pool_size=(3, 3), strides=(2, 2),
                                           padding=(1, 1, 1, 1)), x)
    np.testing.assert_allclose(got, ref.pool2d_nchw(x, 3, 2, 1, "max"), rtol=1e-6)
    got = _run(lambda d: ops.nn.avg_pool2d(d, pool_size=(2, 2), strides=(2, 2)), x)
    np.testing.assert_allclose(got, ref.pool2d_nchw(x, 2, 2, 0, "avg"), rtol=1e-5)
    got = _run(lambda d: ops.nn.adaptive_avg_pool2d(d, output_size=(1, 1)), x)
    np.testing.assert_allclose(got, ref.adaptive_avg_pool2d_nchw(x, 1), rtol=1e-5)
    y = f32(4, 7)
    np.testing.assert_allclose(_run(lambda d: ops.nn.softmax(d, axis=-1), y),
                               ref.softmax(y), rtol=1e-5)
    np.testing.assert_allclose(_run(lambda d: ops.nn.log_softmax(d, axis=0), y),
                               ref.log_softmax(y, 0), rtol=1e-5, atol=1e-6)


def test_normalizations():
    x, g, b = f32(2, 5, 8), f32(8), f32(8)
    got = _run(lambda d, gg, bb: ops.nn.layer_norm(d, gg, bb, axes=[-1]), x, g, b)
    np.testing.assert_allclose(got, ref.layer_norm(x, g, b), rtol=1e-4, atol=1e-5)
    x = f32(2, 4, 3, 3)
    g, b, m, v = f32(4), f32(4), f32(4), f32(4, lo=0.5, hi=1.5)
    got = _run(lambda *a: ops.nn.batch_norm(*a, axis=1), x, g, b, m, v)
    np.testing.assert_allclose(got[0], ref.batch_norm(x, g, b, m, v, axis=1), rtol=1e-4,
                               atol=1e-5)


def test_manipulation():
    x = f32(2, 3, 4)
    np.testing.assert_array_equal(_run(lambda d: ops.reshape(d, (4, -1)), x), x.reshape(4, 6))
    np.testing.assert_array_equal(_run(lambda d: ops.permute_dims(d, axes=[2, 0, 1]), x),
                                  x.transpose(2, 0, 1))
    np.testing.assert_array_equal(_run(lambda d: ops.expand_dims(d, axis=1), x), x[:, None])
    np.testing.assert_array_equal(_run(ops.flatten, x), x.reshape(-1))
    np.testing.assert_array_equal(
        _run(lambda a, b: ops.concat([a, b], axis=1), x, x), np.concatenate([x, x], 1))
    parts = _run(lambda d: ops.split(d, indices_or_sections=[1, 3], axis=2), x)
    for got, want in zip(parts, np.split(x, [1, 3], axis=2)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(
        _run(lambda d: ops.strided_slice(d, axes=[2], begin=[1], end=[4], strides=[2]), x),
        x[:, :, 1:4:2])
    idx = np.array([2, 0, 1], "int64")
    np.testing.assert_array_equal(_run(lambda d, i: ops.take(d, i, axis=1), x, idx),
                                  np.take(x, idx, axis=1))
    np.testing.assert_array_equal(_run(lambda d: ops.tile(d, repeats=[1, 2, 1]), x),
                                  np.tile(x, (1, 2, 1)))
    np.testing.assert_array_equal(_run(lambda d: ops.repeat(d, repeats=2, axis=0), x),
                                  np.repeat(x, 2, 0))
    np.testing.assert_array_equal(_run(lambda d: ops.broadcast_to(d, (2, 2, 3, 4)), x),
                                  np.broadcast_to(x, (2, 2, 3, 4)))


def test_reductions():
    x = f32(3, 4, 5)
    for name, fn in [("sum", np.sum), ("mean", np.mean), ("max", np.max), ("min", np.min),
                     ("prod", np.prod), ("variance", np.var)]:
        got = _run(lambda d, name=name: getattr(ops, name)(d, axis=[1], keepdims=True), x)
        np.testing.assert_allclose(got, fn(x, axis=1, keepdims=True), rtol=1e-5, atol=1e-6,
                                   err_msg=name)
    np.testing.assert_array_equal(_run(lambda d: ops.argmax(d, axis=2), x), x.argmax(2))
    np.testing.assert_array_equal(_run(lambda d: ops.argmin(d, axis=0), x), x.argmin(0))


def test_astype_and_clip():
    x = f32(4, 4, lo=-3, hi=3)
    np.testing.assert_array_equal(_run(lambda d: ops.astype(d, "int32"), x),
                                  x.astype("int32"))
    np.testing.assert_allclose(_run(lambda d: ops.clip(d, -1.0, 1.0), x), np.clip(x, -1, 1))


def test_missing_legalization_names_the_operator():
    name = "test.no_rule_identity"
    if not irc.ir.op.has_op(name):
        @register_op(name, operands=["x"], attrs=[AttrSpec("note", default="")])
        def _infer(call, ctx):
            return call.args[0].struct_info

    bb = BlockBuilder()
    x = Var(name_hint="x", struct_info=tensor_sinfo((2,)))
    with bb.function("main", [x]):
        lv = bb.emit(irc.ir.make_call(name, x), name_hint="ident")
        bb.emit_func_output(lv)
    with pytest.raises(irc.LegalizeError,
                       match=r"R.test.no_rule_identity has no legalization \(in function "
                             r"main, binding ident\)"):
        irc.passes.LegalizeOps()(bb.get())


def test_remaining_nn_operators():
    # conv2d_transpose (NCHW data, IOHW weight), against a direct scatter reference
    data, weight = f32(1, 3, 5, 4), f32(3, 2, 3, 3)
    got = _run(lambda d, w: ops.nn.conv2d_transpose(d, w, strides=(2, 2), padding=(1, 1)),
               data, weight)
    full = np.zeros((1, 2, (5 - 1) * 2 + 3, (4 - 1) * 2 + 3), "float64")
    for y in range(5):
        for x in range(4):
            full[0, :, 2 * y:2 * y + 3, 2 * x:2 * x + 3] += np.einsum(
                "c,cohw->ohw", data[0, :, y, x], weight)
    np.testing.assert_allclose(got, full[:, :, 1:-1, 1:-1], rtol=1e-5, atol=1e-5)
    # group_norm over channel groups
    x, g, b = f32(2, 6, 3, 3), f32(6), f32(6)
    got = _run(lambda d, gg, bb: ops.nn.group_norm(d, gg, bb, num_groups=3, channel_axis=1,
                                                   axes=[2, 3]), x, g, b)
    xg = x.reshape(2, 3, 2, 3, 3)
    mean = xg.mean(axis=(2, 3, 4), keepdims=True)
    var = xg.var(axis=(2, 3, 4), keepdims=True)
    expected = ((xg - mean) / np.sqrt(var + 1e-5)).reshape(x.shape) * g[:, None, None] \
        + b[:, None, None]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    # pad with a constant, dropout as identity at inference
    y = f32(2, 3)
    np.testing.assert_array_equal(
        _run(lambda d: ops.nn.pad(d, pad_width=[1, 0, 2, 1], pad_value=7.0), y),
        np.pad(y, ((1, 0), (2, 1)), constant_values=7.0))
    out = _run(lambda d: ops.nn.dropout(d, rate=0.3), y)
    np.testing.assert_array_equal(out[0], y)


def test_squeeze_and_creation_operators():
    x = f32(3, 1, 4)
    np.testing.assert_array_equal(_run(lambda d: ops.squeeze(d, axis=[1]), x), x[:, 0])
    np.testing.assert_array_equal(_run(lambda d: ops.zeros_like(d), x), np.zeros_like(x))
    np.testing.assert_array_equal(_run(lambda d: ops.ones_like(d), x), np.ones_like(x))
    np.testing.assert_array_equal(_run(lambda d: ops.full_like(d, 2.5), x), np.full_like(x, 2.5))
    # operators without tensor operands: build main(x) -> op(...) + 0 * x
    np.testing.assert_array_equal(
        _run(lambda d: ops.add(ops.zeros((3, 1, 4), "float32"), d), x), x)
    np.testing.assert_array_equal(
        _run(lambda d: ops.multiply(ops.ones((3, 1, 4), "float32"), d), x), x)
    np.testing.assert_array_equal(
        _run(lambda d: ops.add(ops.full((3, 1, 4), 1.5, "float32"), d), x), x + 1.5)
    idx = np.zeros((5,), "int64")
    np.testing.assert_array_equal(
        _run(lambda d: ops.add(ops.arange(2, 12, 2, "int64"), d), idx), np.arange(2, 12, 2))


def test_repeated_operators_share_one_function_and_compute_right():
    """The same operator on the same static shapes (and the same attributes) is built
    once (call_te's memo); a different attribute or shape gets its own function; every
    call still reads its own arguments."""
    from irc.ir import te_call  # makes the PrimFuncs of legalization

    built = []
    real = te_call.te.create_prim_func

    def counting(*args, **kwargs):
        built.append(1)
        return real(*args, **kwargs)

    bb = BlockBuilder()
    x = Var(name_hint="x", struct_info=tensor_sinfo((4, 6), "float32"))
    y = Var(name_hint="y", struct_info=tensor_sinfo((4, 6), "float32"))
    z = Var(name_hint="z", struct_info=tensor_sinfo((6, 4), "float32"))
    with bb.function("main", [x, y, z]):
        with bb.dataflow():
            a = bb.emit(ops.add(x, y))
            b = bb.emit(ops.add(a, x))  # same operator and shapes: memo hit
            c = bb.emit(ops.reshape(b, (6, 4)))
            d = bb.emit(ops.reshape(a, (6, 4)))  # memo hit
            e = bb.emit(ops.reshape(a, (3, 8)))  # another shape: a new function
            f = bb.emit(ops.add(c, d))
            g = bb.emit(ops.add(f, z))  # (6, 4) add: a new function, then a hit
            out = bb.emit_output(ops.add(ops.reshape(e, (6, 4)), g))
        bb.emit_func_output(out)
    mod = bb.get()
    te_call.te.create_prim_func = counting
    try:
        legal = irc.passes.LegalizeOps()(mod)
    finally:
        te_call.te.create_prim_func = real
    prim_funcs = [gv for gv, f in legal.functions.items()
                  if isinstance(f, irc.tir.PrimFunc)]
    assert len(prim_funcs) == 5  # add (4,6), reshape (6,4), reshape (3,8), add (6,4), ...
    assert len(built) == len(prim_funcs)  # ... and nothing built twice
    xs, ys, zs = f32(4, 6), f32(4, 6), f32(6, 4)
    vm = irc.vm.VirtualMachine(irc.compile(mod, "llvm", pipeline="zero"))
    a_ = xs + ys
    c_ = (a_ + xs).reshape(6, 4)
    want = a_.reshape(3, 8).reshape(6, 4) + (c_ + a_.reshape(6, 4) + zs)
    np.testing.assert_allclose(vm["main"](xs, ys, zs).numpy(), want, rtol=1e-6)


def test_split_of_a_symbolic_axis_cuts_as_the_types_say():
    # n sections of ceil(size / n), the last the remainder: the kernel's pieces have the
    # lengths R.split's struct info gives them, for every size at run time.
    mod = irc.parse("""
@R.function
def main(x: R.Tensor(("n", 2), "float32")):
    y = R.split(x, indices_or_sections=3, axis=0)
    return y
""")
    vm = irc.vm.VirtualMachine(irc.compile(mod, "llvm"))
    for n in (9, 10, 11):
        x = f32(n, 2)
        got = [p.numpy() for p in vm["main"](x)]
        step = -(-n // 3)
        for g, w in zip(got, np.split(x, [step, 2 * step])):
            np.testing.assert_array_equal(g, w)

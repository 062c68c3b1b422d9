"""topi.nn operators, checked against numpy references through the interpreter."""

import math

import numpy as np
import pytest

from irc import IRCError, te, topi
from irc.tir import IntImm, var
from irc.tir.interpreter import run
from irc.tir.well_formed import check_prim_func

RNG = np.random.default_rng(17)


def evaluate(inputs, output):
    func = te.create_prim_func(list(inputs) + [output])
    check_prim_func(func)
    out = np.zeros(tuple(int(s) for s in output.shape), dtype=output.dtype)
    run(func, *inputs.values(), out)
    return out


def rand(shape, name, dtype="float32"):
    return te.placeholder(shape, name=name, dtype=dtype), \
        RNG.standard_normal(shape).astype(dtype)


def conv2d_ref(x, w, stride, pad, dilation, groups):
    """NCHW x OIHW reference."""
    n, c, h, wd = x.shape
    o, i, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    oh = (h + pad[0] + pad[2] - (kh - 1) * dilation - 1) // stride + 1
    ow = (wd + pad[1] + pad[3] - (kw - 1) * dilation - 1) // stride + 1
    out = np.zeros((n, o, oh, ow), "float64")
    per = o // groups
    for f in range(o):
        g = f // per
        for y in range(kh):
            for xk in range(kw):
                patch = xp[:, g * i:(g + 1) * i, y * dilation:y * dilation + stride * oh:stride,
                           xk * dilation:xk * dilation + stride * ow:stride]
                out[:, f] += np.einsum("nchw,c->nhw", patch, w[f, :, y, xk])
    return out


@pytest.mark.parametrize("stride,padding,dilation,groups", [
    (1, 1, 1, 1), (2, (1, 0), 1, 1), (1, (0, 1, 2, 1), 2, 1), (1, 1, 1, 2), (2, 1, 1, 4),
])
def test_conv2d_nchw_and_nhwc(stride, padding, dilation, groups):
    x, xv = rand((1, 4, 7, 6), "x")
    w, wv = rand((4, 4 // groups, 3, 3), "w")
    pad = padding if isinstance(padding, tuple) and len(padding) == 4 else (
        (padding, padding, padding, padding) if isinstance(padding, int)
        else (padding[0], padding[1], padding[0], padding[1]))
    ref = conv2d_ref(xv, wv, stride, pad, dilation, groups)
    out = evaluate({x: xv, w: wv}, topi.nn.conv2d(x, w, stride, padding, dilation, groups))
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    xh = te.placeholder((1, 7, 6, 4), name="xh")
    wh = te.placeholder((3, 3, 4 // groups, 4), name="wh")
    out = evaluate({xh: xv.transpose(0, 2, 3, 1).copy(), wh: wv.transpose(2, 3, 1, 0).copy()},
                   topi.nn.conv2d(xh, wh, stride, padding, dilation, groups, "NHWC", "HWIO"))
    np.testing.assert_allclose(out, ref.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-4)


def test_conv2d_named_variants_and_depthwise():
    x, xv = rand((1, 3, 5, 5), "x")
    w, wv = rand((2, 3, 3, 3), "w")
    np.testing.assert_allclose(evaluate({x: xv, w: wv}, topi.nn.conv2d_nchw(x, w, 1, 0)),
                               conv2d_ref(xv, wv, 1, (0, 0, 0, 0), 1, 1), rtol=1e-4, atol=1e-4)
    k, kv = rand((3, 2, 3, 3), "k")  # (C, multiplier, KH, KW)
    out = evaluate({x: xv, k: kv}, topi.nn.depthwise_conv2d_nchw(x, k, 1, 1))
    grouped = kv.reshape(6, 1, 3, 3)
    np.testing.assert_allclose(out, conv2d_ref(xv, grouped, 1, (1, 1, 1, 1), 1, 3),
                               rtol=1e-4, atol=1e-4)
    xh = te.placeholder((1, 5, 5, 3), name="xh")
    kh = te.placeholder((3, 3, 3, 2), name="kh")
    out = evaluate({xh: xv.transpose(0, 2, 3, 1).copy(), kh: kv.transpose(2, 3, 0, 1).copy()},
                   topi.nn.depthwise_conv2d_nhwc(xh, kh, 2, 1))
    np.testing.assert_allclose(out, conv2d_ref(xv, grouped, 2, (1, 1, 1, 1), 1, 3)
                               .transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-4)
    with pytest.raises(IRCError, match="groups=2 must divide"):
        topi.nn.conv2d(x, w, 1, 0, 1, 2)


@pytest.mark.parametrize("stride,padding,output_padding", [(1, 0, 0), (2, 1, 1), (2, 0, 0)])
def test_conv2d_transpose(stride, padding, output_padding):
    x, xv = rand((1, 3, 4, 4), "x")
    w, wv = rand((3, 2, 3, 3), "w")  # (in, out, KH, KW)
    out = evaluate({x: xv, w: wv}, topi.nn.conv2d_transpose_nchw(
        x, w, stride, padding, output_padding=output_padding))
    h = 4
    full = (h - 1) * stride + 3
    ref = np.zeros((1, 2, full + output_padding, full + output_padding))
    for y in range(h):
        for xx in range(h):
            ref[:, :, y * stride:y * stride + 3, xx * stride:xx * stride + 3] += np.einsum(
                "nc,cokl->nokl", xv[:, :, y, xx], wv)
    size = full - 2 * padding + output_padding
    ref = ref[:, :, padding:padding + size, padding:padding + size]
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_dense_matmul_and_batch_matmul():
    x, xv = rand((3, 5), "x")
    w, wv = rand((4, 5), "w")
    b, bv = rand((4,), "b")
    np.testing.assert_allclose(evaluate({x: xv, w: wv, b: bv}, topi.nn.dense(x, w, b)),
                               xv @ wv.T + bv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(evaluate({x: xv, w: wv}, topi.matmul(x, w, transpose_b=True)),
                               xv @ wv.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(evaluate({x: xv, w: wv}, topi.matmul(w, x, transpose_b=True)),
                               wv @ xv.T, rtol=1e-5, atol=1e-5)
    at, atv = rand((5, 3), "at")
    np.testing.assert_allclose(evaluate({at: atv, w: wv},
                                        topi.matmul(at, w, transpose_a=True, transpose_b=True)),
                               atv.T @ wv.T, rtol=1e-5, atol=1e-5)
    a3, a3v = rand((2, 1, 3, 5), "a3")
    b3, b3v = rand((4, 5, 2), "b3")
    np.testing.assert_allclose(evaluate({a3: a3v, b3: b3v}, topi.matmul(a3, b3)), a3v @ b3v,
                               rtol=1e-5, atol=1e-5)
    v, vv = rand((5,), "v")
    np.testing.assert_allclose(evaluate({x: xv, v: vv}, topi.matmul(x, v)), xv @ vv,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(evaluate({v: vv, b3: b3v}, topi.matmul(v, b3)), vv @ b3v,
                               rtol=1e-5, atol=1e-5)
    p, pv = rand((2, 3, 5), "p")
    q, qv = rand((1, 4, 5), "q")
    np.testing.assert_allclose(evaluate({p: pv, q: qv}, topi.nn.batch_matmul(p, q)),
                               pv @ qv.transpose(0, 2, 1), rtol=1e-5, atol=1e-5)
    with pytest.raises(IRCError, match="reduction dimensions differ"):
        topi.matmul(x, w)


def test_pad_with_value():
    x, xv = rand((2, 3), "x")
    out = evaluate({x: xv}, topi.nn.pad(x, (1, 0), (0, 2), pad_value=-7.0))
    np.testing.assert_array_equal(out, np.pad(xv, ((1, 0), (0, 2)), constant_values=-7))


def pool_ref(x, k, s, d, pad, kind, ceil_mode=False, count_include_pad=True):
    """NCHW pooling reference that visits every window explicitly."""
    n, c, h, w = x.shape
    pt, pl, pb, pr = pad
    ek = [(k[0] - 1) * d[0] + 1, (k[1] - 1) * d[1] + 1]
    extra = [s[0] - 1, s[1] - 1] if ceil_mode else [0, 0]
    oh = (h + pt + pb + extra[0] - ek[0]) // s[0] + 1
    ow = (w + pl + pr + extra[1] - ek[1]) // s[1] + 1
    out = np.zeros((n, c, oh, ow))
    for y in range(oh):
        for xx in range(ow):
            vals, cells = [], 0
            for ky in range(k[0]):
                for kx in range(k[1]):
                    iy, ix = y * s[0] + ky * d[0] - pt, xx * s[1] + kx * d[1] - pl
                    inside_pad = -pt <= iy < h + pb and -pl <= ix < w + pr
                    if 0 <= iy < h and 0 <= ix < w:
                        vals.append(x[:, :, iy, ix])
                        cells += 1
                    elif inside_pad and count_include_pad:
                        cells += 1
            if kind == "max":
                out[:, :, y, xx] = np.max(vals, axis=0)
            else:
                out[:, :, y, xx] = np.sum(vals, axis=0) / max(cells, 1)
    return out


@pytest.mark.parametrize("kind,kernel,stride,dilation,padding,ceil_mode,count_pad", [
    ("max", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False, True),
    ("max", (2, 3), (1, 2), (2, 1), (0, 1, 1, 0), True, True),
    ("avg", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False, True),
    ("avg", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False, False),
    ("avg", (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), True, True),
    ("avg", (3, 2), (2, 1), (1, 2), (1, 0, 0, 1), True, False),
])
def test_pool2d(kind, kernel, stride, dilation, padding, ceil_mode, count_pad):
    x, xv = rand((1, 2, 7, 6), "x")
    ref = pool_ref(xv, kernel, stride, dilation, padding, kind, ceil_mode, count_pad)
    out = evaluate({x: xv}, topi.nn.pool2d(x, kernel, stride, dilation, padding, kind,
                                           ceil_mode, "NCHW", count_pad))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    xh = te.placeholder((1, 7, 6, 2), name="xh")
    out = evaluate({xh: xv.transpose(0, 2, 3, 1).copy()},
                   topi.nn.pool2d(xh, kernel, stride, dilation, padding, kind, ceil_mode,
                                  "NHWC", count_pad))
    np.testing.assert_allclose(out, ref.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-6)


def test_max_and_avg_pool2d_wrappers():
    x, xv = rand((1, 1, 4, 4), "x")
    np.testing.assert_allclose(evaluate({x: xv}, topi.nn.max_pool2d(x, 2)),
                               xv.reshape(1, 1, 2, 2, 2, 2).max(axis=(3, 5)))
    np.testing.assert_allclose(evaluate({x: xv}, topi.nn.avg_pool2d(x, 2)),
                               xv.reshape(1, 1, 2, 2, 2, 2).mean(axis=(3, 5)), rtol=1e-6)


def adaptive_ref(x, out_size, kind):
    n, c, h, w = x.shape
    oh, ow = out_size
    out = np.zeros((n, c, oh, ow))
    for y in range(oh):
        for xx in range(ow):
            hs, he = (y * h) // oh, math.ceil((y + 1) * h / oh)
            ws, we = (xx * w) // ow, math.ceil((xx + 1) * w / ow)
            win = x[:, :, hs:he, ws:we]
            out[:, :, y, xx] = win.max(axis=(2, 3)) if kind == "max" else win.mean(axis=(2, 3))
    return out


@pytest.mark.parametrize("out_size", [(1, 1), (2, 3), (3, 2), (7, 5), (5, 4)])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_adaptive_and_global_pool(out_size, kind):
    x, xv = rand((1, 2, 7, 6), "x")
    out = evaluate({x: xv}, topi.nn.adaptive_pool(x, out_size, kind))
    np.testing.assert_allclose(out, adaptive_ref(xv, out_size, kind), rtol=1e-5, atol=1e-6)
    if out_size == (1, 1):
        xh = te.placeholder((1, 7, 6, 2), name="xh")
        out = evaluate({xh: xv.transpose(0, 2, 3, 1).copy()}, topi.nn.global_pool(xh, kind,
                                                                                  "NHWC"))
        np.testing.assert_allclose(out, adaptive_ref(xv, (1, 1), kind).transpose(0, 2, 3, 1),
                                   rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_and_log_softmax(axis):
    x, xv = rand((3, 4, 5), "x")
    e = np.exp(xv - xv.max(axis=axis, keepdims=True))
    np.testing.assert_allclose(evaluate({x: xv}, topi.nn.softmax(x, axis)),
                               e / e.sum(axis=axis, keepdims=True), rtol=1e-5, atol=1e-6)
    ref = xv - xv.max(axis=axis, keepdims=True) - np.log(e.sum(axis=axis, keepdims=True))
    np.testing.assert_allclose(evaluate({x: xv}, topi.nn.log_softmax(x, axis)), ref,
                               rtol=1e-5, atol=1e-5)


def test_layer_norm_group_norm_batch_norm():
    x, xv = rand((2, 3, 8), "x")
    xv += 5.0  # a large mean: the two-pass variance keeps its accuracy
    g, gv = rand((8,), "g")
    b, bv = rand((8,), "b")
    mean = xv.mean(axis=-1, keepdims=True)
    var = xv.var(axis=-1, keepdims=True)
    np.testing.assert_allclose(evaluate({x: xv, g: gv, b: bv},
                                        topi.nn.layer_norm(x, g, b, -1, 1e-5)),
                               (xv - mean) / np.sqrt(var + 1e-5) * gv + bv, rtol=1e-4, atol=1e-4)
    g2, g2v = rand((3, 8), "g2")
    ref = (xv - xv.mean(axis=(1, 2), keepdims=True)) / np.sqrt(
        xv.var(axis=(1, 2), keepdims=True) + 1e-5)
    np.testing.assert_allclose(evaluate({x: xv, g2: g2v}, topi.nn.layer_norm(x, g2, None,
                                                                            [1, 2])),
                               ref * g2v, rtol=1e-4, atol=1e-4)
    y, yv = rand((2, 6, 3, 3), "y")
    gg, ggv = rand((6,), "gg")
    bb, bbv = rand((6,), "bb")
    grouped = yv.reshape(2, 3, 2, 3, 3)
    norm = ((grouped - grouped.mean(axis=(2, 3, 4), keepdims=True))
            / np.sqrt(grouped.var(axis=(2, 3, 4), keepdims=True) + 1e-5)).reshape(yv.shape)
    np.testing.assert_allclose(evaluate({y: yv, gg: ggv, bb: bbv},
                                        topi.nn.group_norm(y, gg, bb, 3)),
                               norm * ggv[:, None, None] + bbv[:, None, None], rtol=1e-4,
                               atol=1e-4)
    mu, muv = rand((6,), "mu")
    var6 = te.placeholder((6,), name="var6")
    var6v = RNG.uniform(0.5, 2.0, size=6).astype("float32")
    out = evaluate({y: yv, gg: ggv, bb: bbv, mu: muv, var6: var6v},
                   topi.nn.batch_norm(y, gg, bb, mu, var6, axis=1, epsilon=1e-3))
    ref = (yv - muv[:, None, None]) / np.sqrt(var6v[:, None, None] + 1e-3) \
        * ggv[:, None, None] + bbv[:, None, None]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(IRCError, match="do not split into 4 groups"):
        topi.nn.group_norm(y, gg, bb, 4)


def test_int64_shapes_with_a_symbolic_batch():
    # What graph-level legalization builds: int64 shapes, a symbolic batch dimension.
    def i64(v):
        return IntImm(dtype="int64", value=v)

    n = var("n", "int64")
    x = te.placeholder((n, i64(3), i64(6), i64(6)), name="x")
    w = te.placeholder((i64(2), i64(3), i64(3), i64(3)), name="w")
    out = topi.nn.softmax(topi.nn.conv2d(x, w, 2, 1), axis=1)
    func = te.create_prim_func([x, w, out], index_dtype_override="int64")
    check_prim_func(func)
    xv = RNG.standard_normal((3, 3, 6, 6)).astype("float32")
    wv = RNG.standard_normal((2, 3, 3, 3)).astype("float32")
    o = np.zeros((3, 2, 3, 3), "float32")
    run(func, xv, wv, o)
    conv = conv2d_ref(xv, wv, 2, (1, 1, 1, 1), 1, 1)
    e = np.exp(conv - conv.max(axis=1, keepdims=True))
    np.testing.assert_allclose(o, e / e.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-5)

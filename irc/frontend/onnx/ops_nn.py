"""Converters of ONNX's neural-network operators: ``Conv`` / ``ConvTranspose`` (any
number of spatial axes; 1-D and plain 2-D through the 2-D graph operators, the rest
through ``irc/ir/ops/nn_nd.py``), ``DeformConv``, pooling (``MaxPool`` with its
``Indices``, ``AveragePool``, ``LpPool``, ``GlobalAveragePool``, ``GlobalMaxPool``,
``GlobalLpPool``), normalizations (``BatchNormalization``, ``LayerNormalization`` with its
statistics, ``InstanceNormalization``, ``LpNormalization``, ``LRN``,
``MeanVarianceNormalization``), ``Softmax`` /
``LogSoftmax``, ``Gemm``, ``MatMul``, the ``Reduce*`` family and ``ArgMax`` / ``ArgMin``;
``Einsum`` lives in :mod:`.ops_einsum`, imported here."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core import dtype as dt
from ...ir import ops
from ...ir.expr import Constant, Expr, If, SeqExpr, ShapeExpr, TupleGetItem
from ...ir.ops import nn_nd
from ...ir.struct_info import TensorStructInfo
from ...tir import expr as E
from ...tir.arith.polynomial import const_value, prove_equal
from ...tir.topi.utils import accumulator_dtype
from . import ops_einsum  # noqa: F401 - registers the Einsum converter
from .importer import Node
from .ops_elementwise import broadcast_at_run_time, scalar
from .protos import valid_name
from .registry import converter


def _spatial(node: Node, what: str) -> int:
    n = node.ndim(0) - 2
    if n < 1:
        raise node.error(f"{what} need data (N, C, spatial...) of rank 3 or more, got rank "
                         f"{node.ndim(0)}")
    return n


def _ints_attr(node: Node, name: str, n: int, default: int) -> list[int]:
    values = [int(v) for v in node.attr(name, [default] * n)]
    if len(values) != n:
        raise node.error(f"{name} has {len(values)} entries for {n} spatial axes")
    return values


def _pads(node: Node, kernel: list[int], strides: list[int], dilations: list[int]) -> list[int]:
    """ONNX-ordered padding (the begins of every spatial axis, then the ends), auto_pad
    resolved."""
    auto = node.attr("auto_pad", "NOTSET")
    k = len(kernel)
    if auto in ("NOTSET", ""):
        return _ints_attr(node, "pads", 2 * k, 0)
    if auto == "VALID":
        return [0] * (2 * k)
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise node.error(f"auto_pad {auto!r} is not NOTSET, VALID, SAME_UPPER or SAME_LOWER")
    shape = node.static_shape(0)
    if shape is None:
        raise node.error("auto_pad SAME needs static spatial sizes")
    begin, end = [], []
    for i in range(k):
        size = shape[2 + i]
        eff = (kernel[i] - 1) * dilations[i] + 1
        out = -(-size // strides[i])
        total = max((out - 1) * strides[i] + eff - size, 0)
        small, big = total // 2, total - total // 2
        b, e = (small, big) if auto == "SAME_UPPER" else (big, small)
        begin.append(b)
        end.append(e)
    return begin + end


def _lift_1d(x: Expr, n: int) -> Expr:
    return ops.expand_dims(x, 2) if n == 1 else x


def _kernel(node: Node, n: int, index: int = 1) -> list[int]:
    """The spatial kernel size: the static shape of the weight (input ``index``), which
    the kernel_shape attribute (when given) must match."""
    shape = node.shape(index)[2:]
    if len(shape) != n:
        raise node.error(f"the weight has {len(shape)} spatial axes, the data {n}")
    if not all(isinstance(d, E.IntImm) for d in shape):
        raise node.error("the weight needs a static kernel size")
    kernel = [int(d.value) for d in shape]
    given = node.attr("kernel_shape")
    if given is not None and [int(v) for v in given] != kernel:
        raise node.error(f"kernel_shape {list(given)} does not match the weight's {kernel}")
    return kernel


def _add_bias(node: Node, y: Expr, n: int, index: int = 2) -> Expr:
    if not node.has_input(index):
        return y
    return ops.add(y, ops.reshape(node.input(index), [-1] + [1] * n))


def convolve(node: Node, x: Expr, w: Expr, n: int, kernel: list[int],
             out_dtype: str | None = None) -> Expr:
    """The convolution of ``x`` by ``w`` with ``n`` spatial axes, as the node's strides,
    dilations, pads (auto_pad) and group say: 1-D and 2-D as ``nn.conv2d`` (which layout
    conversion and library dispatch know), more axes as ``nn.conv_nd``."""
    strides = _ints_attr(node, "strides", n, 1)
    dilations = _ints_attr(node, "dilations", n, 1)
    pads = _pads(node, kernel, strides, dilations)
    groups = int(node.attr("group", 1))
    if n > 2:
        return nn_nd.conv_nd(x, w, strides, pads, dilations, groups, out_dtype=out_dtype)
    if n == 1:
        strides, dilations, pads = [1] + strides, [1] + dilations, [0, pads[0], 0, pads[1]]
    y = ops.nn.conv2d(_lift_1d(x, n), _lift_1d(w, n), strides=strides, padding=pads,
                      dilation=dilations, groups=groups, out_dtype=out_dtype)
    return ops.squeeze(y, [2]) if n == 1 else y


@converter("Conv", since=1)
def _conv(node: Node) -> Expr:
    n = _spatial(node, "convolutions")
    kernel = _kernel(node, n)
    # Half-precision products are summed in float32 (as ONNX Runtime and numpy do).
    acc = "float32" if node.dtype(0) == "float16" else None
    y = convolve(node, node.input(0), node.input(1), n, kernel, acc)
    if acc is not None:
        y = ops.astype(y, node.dtype(0))
    return _add_bias(node, y, n)


@converter("DeformConv", since=19)
def _deform_conv(node: Node) -> Expr:
    n = _spatial(node, "deformable convolutions")
    if n != 2:
        raise node.error(f"irc supports 2-D deformable convolutions, got {n}-D")
    if not dt.is_float(node.dtype(0)):
        raise node.error(f"needs a floating-point input, got {node.dtype(0)}")
    _kernel(node, n)
    strides = _ints_attr(node, "strides", n, 1)
    dilations = _ints_attr(node, "dilations", n, 1)
    pads = _ints_attr(node, "pads", 2 * n, 0)
    y = nn_nd.deform_conv2d(node.input(0), node.input(2), node.input(1), node.optional(4),
                            strides=strides, padding=pads, dilation=dilations,
                            groups=int(node.attr("group", 1)),
                            offset_groups=int(node.attr("offset_group", 1)))
    return _add_bias(node, y, n, index=3)


def _transpose_pads(node: Node, n: int, kernel: list[int], strides: list[int],
                    dilations: list[int], out_pad: list[int]) -> list[int]:
    """ConvTranspose's padding: from output_shape or auto_pad SAME (whose total may be
    negative: a larger output), else the pads attribute."""
    auto = node.attr("auto_pad", "NOTSET")
    out_shape = node.attr("output_shape")
    if out_shape is None and auto not in ("SAME_UPPER", "SAME_LOWER"):
        return [0] * (2 * n) if auto == "VALID" else _ints_attr(node, "pads", 2 * n, 0)
    shape = node.static_shape(0)
    if shape is None:
        raise node.error("output_shape and auto_pad SAME need static spatial sizes")
    sizes = shape[2:]
    if out_shape is None:
        out_shape = [sizes[i] * strides[i] for i in range(n)]
    out_shape = [int(v) for v in out_shape]
    if len(out_shape) == n + 2:  # some exporters give (N, C, spatial...)
        out_shape = out_shape[2:]
    if len(out_shape) != n:
        raise node.error(f"output_shape has {len(out_shape)} entries for {n} spatial axes")
    begin, end = [], []
    for i in range(n):
        total = (strides[i] * (sizes[i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1
                 - out_shape[i])
        half = total // 2
        b, e = (half, total - half) if auto == "SAME_UPPER" else (total - half, half)
        begin.append(b)
        end.append(e)
    return begin + end


@converter("ConvTranspose", since=1)
def _conv_transpose(node: Node) -> Expr:
    n = _spatial(node, "transposed convolutions")
    kernel = _kernel(node, n)
    strides = _ints_attr(node, "strides", n, 1)
    dilations = _ints_attr(node, "dilations", n, 1)
    out_pad = _ints_attr(node, "output_padding", n, 0)
    pads = _transpose_pads(node, n, kernel, strides, dilations, out_pad)
    groups = int(node.attr("group", 1))
    x, w = node.input(0), node.input(1)
    plain = n == 2 and groups == 1 and all(
        0 <= pads[i] <= (kernel[i % n] - 1) * dilations[i % n] for i in range(2 * n))
    if plain:
        y = ops.nn.conv2d_transpose(x, w, strides=strides, padding=pads,
                                    output_padding=out_pad, dilation=dilations)
    else:
        y = nn_nd.conv_transpose_nd(x, w, strides, pads, dilations, out_pad, groups)
    return _add_bias(node, y, n)


def _pool_params(node: Node) -> tuple[int, list[int], list[int], list[int], list[int], bool]:
    n = _spatial(node, "pooling operators")
    kernel = [int(k) for k in node.required_attr("kernel_shape")]
    if len(kernel) != n:
        raise node.error(f"kernel_shape has {len(kernel)} entries for {n} spatial axes")
    strides = _ints_attr(node, "strides", n, 1)
    dilations = _ints_attr(node, "dilations", n, 1)
    pads = _pads(node, kernel, strides, dilations)
    return n, kernel, strides, dilations, pads, bool(node.attr("ceil_mode", 0))


def _pool(node: Node, kind: str, **extra: Any) -> Expr:
    n, kernel, strides, dilations, pads, ceil = _pool_params(node)
    x = node.input(0)
    if n > 2 or ceil and not (kind == "max" and _ceil_windows_start_inside(
            node.static_shape(0), kernel, strides, dilations, pads)):
        # The 2-D operators' ceil mode keeps a last window that starts in the padding.
        build = nn_nd.max_pool_nd if kind == "max" else nn_nd.avg_pool_nd
        return build(x, kernel, strides, pads, dilations, ceil, **extra)
    if n == 1:
        kernel, strides, dilations = [1] + kernel, [1] + strides, [1] + dilations
        pads = [0, pads[0], 0, pads[1]]
    build = ops.nn.max_pool2d if kind == "max" else ops.nn.avg_pool2d
    y = build(_lift_1d(x, n), pool_size=kernel, strides=strides, padding=pads,
              dilation=dilations, ceil_mode=ceil, **extra)
    return ops.squeeze(y, [2]) if n == 1 else y


def _ceil_windows_start_inside(shape: list[int] | None, kernel: list[int],
                               strides: list[int], dilations: list[int], pads: list[int]
                               ) -> bool:
    """Whether, in ceil mode, every window of a 2-D pooling of an input of ``shape``
    starts inside the input or its left padding (then ONNX drops no window, and the 2-D
    operator, which keeps windows that start in the right padding, computes the same):
    known only for a static shape."""
    if shape is None or len(shape) != 4:
        return False
    for d in range(2):
        size, pad = shape[2 + d], pads[d] + pads[d + 2]
        span = (kernel[d] - 1) * dilations[d] + 1
        out = -(-(size + pad - span) // strides[d]) + 1
        if (out - 1) * strides[d] >= size + pads[d]:
            return False
    return True


@converter("MaxPool", since=1)
def _max_pool(node: Node) -> Any:
    order = int(node.attr("storage_order", 0))
    if order not in (0, 1):
        raise node.error(f"storage_order must be 0 or 1, got {order}")
    if len(node.output_names) < 2 or not node.output_names[1]:
        return _pool(node, "max")
    _n, kernel, strides, dilations, pads, ceil = _pool_params(node)
    x = node.input(0)
    return (nn_nd.max_pool_nd(x, kernel, strides, pads, dilations, ceil),
            nn_nd.max_pool_nd_indices(x, kernel, strides, pads, dilations, ceil, order))


@converter("AveragePool", since=7)
def _avg_pool(node: Node) -> Expr:
    return _pool(node, "avg", count_include_pad=bool(node.attr("count_include_pad", 0)))


@converter("LpPool", since=2)
def _lp_pool(node: Node) -> Expr:
    if not dt.is_float(node.dtype(0)):
        raise node.error(f"needs a floating-point input, got {node.dtype(0)}")
    _n, kernel, strides, dilations, pads, ceil = _pool_params(node)
    return nn_nd.lp_pool_nd(node.input(0), kernel, strides, pads, dilations, ceil,
                            p=int(node.attr("p", 2)))


@converter("GlobalAveragePool", "GlobalMaxPool", since=1)
def _global_pool(node: Node) -> Expr:
    axes = list(range(2, node.ndim(0)))
    fn = ops.mean if node.op_type == "GlobalAveragePool" else ops.max
    return fn(node.input(0), axes, keepdims=True)


def _p_norm(x: Expr, p: int, axes: list[int], d: str) -> Expr:
    """``(sum |x| ** p) ** (1 / p)`` over ``axes`` (kept); float16 and bfloat16 computed in
    float32 (|x| ** p overflows float16 from |x| = 41 for p = 3) and rounded once."""
    if dt.bits(d) < 32:
        return ops.astype(_p_norm(ops.astype(x, "float32"), p, axes, "float32"), d)
    if p == 1:
        return ops.sum(ops.abs(x), axes, keepdims=True)
    if p == 2:
        return ops.sqrt(ops.sum(ops.multiply(x, x), axes, keepdims=True))
    total = ops.sum(ops.power(ops.abs(x), scalar(float(p), d)), axes, keepdims=True)
    return ops.power(total, scalar(1.0 / p, d))


@converter("GlobalLpPool", since=2)
def _global_lp_pool(node: Node) -> Expr:
    d = node.dtype(0)
    if not dt.is_float(d):
        raise node.error(f"needs a floating-point input, got {d}")
    return _p_norm(node.input(0), int(node.attr("p", 2)), list(range(2, node.ndim(0))), d)


@converter("LpNormalization", since=1)
def _lp_normalization(node: Node) -> Expr:
    d, nd = node.dtype(0), node.ndim(0)
    if not dt.is_float(d):
        raise node.error(f"needs a floating-point input, got {d}")
    p = int(node.attr("p", 2))
    if p not in (1, 2):
        raise node.error(f"p must be 1 or 2, got {p}")
    axis = int(node.attr("axis", -1))
    if not -nd <= axis < nd:
        raise node.error(f"axis {axis} is out of range for rank {nd}")
    x = node.input(0)
    norm = node.emit(_p_norm(x, p, [axis % nd], d), "norm")
    # A zero norm gives zeros (not 0 / 0), as ONNX specifies.
    return ops.where(ops.equal(norm, scalar(0.0, d)), scalar(0.0, d), ops.divide(x, norm))


@converter("LRN", since=1)
def _lrn(node: Node) -> Expr:
    """``x / (bias + alpha / size * sum of x**2 over size neighbouring channels) ** beta``,
    the channel sum an average pooling of the squares viewed as (N, 1, C, rest)."""
    d = node.dtype(0)
    if not dt.is_float(d):
        raise node.error(f"needs a floating-point input, got {d}")
    if node.ndim(0) < 2:
        raise node.error(f"needs data (N, C, ...), got rank {node.ndim(0)}")
    size = int(node.required_attr("size"))
    if size < 1:
        raise node.error(f"size must be positive, got {size}")
    alpha = float(node.attr("alpha", 1e-4))
    beta = float(node.attr("beta", 0.75))
    bias = float(node.attr("bias", 1.0))
    x = node.input(0)
    shape = node.shape(0)
    square = ops.reshape(ops.multiply(x, x), [shape[0], 1, shape[1], -1])
    before = (size - 1) // 2
    mean = ops.nn.avg_pool2d(square, pool_size=[size, 1], strides=[1, 1],
                             padding=[before, 0, size - 1 - before, 0], count_include_pad=True)
    mean = ops.reshape(mean, list(shape))
    scale = ops.add(scalar(bias, d), ops.multiply(scalar(alpha, d), mean))
    return ops.divide(x, ops.power(scale, scalar(beta, d)))


@converter("BatchNormalization", since=7)
def _batch_norm(node: Node) -> Expr:
    if int(node.attr("training_mode", 0)):
        return _batch_norm_training(node)
    bn = node.emit(ops.nn.batch_norm(
        node.input(0), node.input(1), node.input(2), node.input(3), node.input(4), axis=1,
        epsilon=float(node.attr("epsilon", 1e-5)), training=False))
    return TupleGetItem(tuple_value=bn, index=0)


def _batch_norm_training(node: Node) -> list[Expr]:
    """``training_mode=1`` (opset 14 on): normalized with the batch's own statistics (the
    population variance over every axis but the channel's); the running mean and variance
    updated with ``momentum``."""
    nd = node.ndim(0)
    d = node.dtype(0)
    axes = [a for a in range(nd) if a != 1]
    x = node.input(0)
    mean = node.emit(ops.mean(x, axes, keepdims=True), "batch_mean")
    centered = node.emit(ops.subtract(x, mean), "centered")
    var = node.emit(ops.mean(ops.multiply(centered, centered), axes, keepdims=True),
                    "batch_var")
    shape = [-1] + [1] * (nd - 2)

    def per_channel(i: int) -> Expr:
        return ops.reshape(node.input(i), shape)

    eps = scalar(float(node.attr("epsilon", 1e-5)), d)
    y = ops.add(ops.multiply(ops.divide(centered, ops.sqrt(ops.add(var, eps))),
                             per_channel(1)), per_channel(2))
    momentum = float(node.attr("momentum", 0.9))

    def running(i: int, batch: Expr) -> Expr:
        return ops.add(ops.multiply(node.input(i), scalar(momentum, d)),
                       ops.multiply(ops.reshape(batch, [-1]), scalar(1 - momentum, d)))

    return [y, running(3, mean), running(4, var)][:len(node.output_names)]


@converter("InstanceNormalization", since=6)
def _instance_norm(node: Node) -> Expr:
    nd = node.ndim(0)
    c = node.shape(0)[1]
    if not isinstance(c, E.IntImm):
        raise node.error("needs a static channel count")
    return ops.nn.group_norm(node.input(0), node.input(1), node.input(2),
                             num_groups=int(c.value), channel_axis=1,
                             axes=list(range(2, nd)),
                             epsilon=float(node.attr("epsilon", 1e-5)))


@converter("LayerNormalization", since=17)
def _layer_norm(node: Node) -> Any:
    nd = node.ndim(0)
    axis = int(node.attr("axis", -1))
    if not -nd <= axis < nd:
        raise node.error(f"axis {axis} is out of range for rank {nd}")
    axis = axis + nd if axis < 0 else axis
    axes = list(range(axis, nd))
    x, d = node.input(0), node.dtype(0)
    if not dt.is_float(d):
        raise node.error(f"needs a floating-point input, got {d}")
    eps = float(node.attr("epsilon", 1e-5))
    stash = int(node.attr("stash_type", 1))
    if stash not in (1, 11, 10):
        raise node.error(f"stash_type {stash} is not float32, float64 or float16")
    stash_dtype = {1: "float32", 11: "float64", 10: "float16"}[stash]
    gamma, beta = node.input(1), node.optional(2)
    # The fused operator keeps its statistics in the input's accumulator dtype (float32
    # for 16-bit floats) and rounds once, at its output.
    if not any(node.output_names[1:]) and stash_dtype in (d, accumulator_dtype(d)):
        norm_shape = node.shape(0)[axis:]
        if beta is None:
            beta = ops.zeros(list(int(s.value) for s in norm_shape), d) if all(
                isinstance(s, E.IntImm) for s in norm_shape) else ops.zeros_like(gamma)
        if node.ndim(1) != len(axes):
            gamma = ops.broadcast_to(gamma, list(norm_shape))
            beta = ops.broadcast_to(beta, list(norm_shape))
        return ops.nn.layer_norm(x, gamma, beta, axes, epsilon=eps)
    # The statistics are outputs too (or are kept in another precision): the computation
    # spelled out, in the stash type.
    xs = x if stash_dtype == d else ops.astype(x, stash_dtype)
    mean = node.emit(ops.mean(xs, axes, keepdims=True), "mean")
    dev = node.emit(ops.subtract(xs, mean), "deviation")
    var = ops.mean(ops.multiply(dev, dev), axes, keepdims=True)
    inv = node.emit(ops.rsqrt(ops.add(var, scalar(eps, stash_dtype))), "inv_std_dev")
    y = ops.multiply(dev, inv)
    if stash_dtype != d:
        y = ops.astype(y, d)
    y = ops.multiply(y, gamma)
    if beta is not None:
        y = ops.add(y, beta)
    return y, mean, inv


@converter("MeanVarianceNormalization", since=9)
def _mean_variance_normalization(node: Node) -> Expr:
    """``(x - mean) / (sqrt(variance) + 1e-9)`` over ``axes``, the population variance
    computed from the deviations; 16-bit inputs compute in float32 and round once. (ONNX's
    function body adds a float32 constant, so it serves float32 inputs only.)"""
    d, nd = node.dtype(0), node.ndim(0)
    if not dt.is_float(d):
        raise node.error(f"needs a floating-point input, got {d}")
    axes = [int(a) for a in node.attr("axes", [0, 2, 3])]
    bad = [a for a in axes if not -nd <= a < nd]
    if bad:
        raise node.error(f"axes {bad} are out of range for rank {nd}")
    axes = sorted({a % nd for a in axes})
    acc = accumulator_dtype(d)
    x = node.input(0) if acc == d else ops.astype(node.input(0), acc)
    mean = node.emit(ops.mean(x, axes, keepdims=True), "mean")
    dev = node.emit(ops.subtract(x, mean), "deviation")
    std = ops.sqrt(ops.mean(ops.multiply(dev, dev), axes, keepdims=True))
    y = ops.divide(dev, ops.add(std, scalar(1e-9, acc)))
    return y if acc == d else ops.astype(y, d)


def _softmax(node: Node, log: bool) -> Expr:
    nd = node.ndim(0)
    fn = ops.nn.log_softmax if log else ops.nn.softmax
    if node.opset >= 13:
        return fn(node.input(0), int(node.attr("axis", -1)))
    # Before opset 13: softmax of the input flattened to 2-D at axis.
    axis = int(node.attr("axis", 1))
    axis = axis + nd if axis < 0 else axis
    shape = node.static_shape(0)
    if shape is None:
        raise node.error("softmax before opset 13 needs a static shape")
    outer = 1
    for s in shape[:axis]:
        outer *= s
    flat = ops.reshape(node.input(0), [outer, -1])
    return ops.reshape(fn(flat, 1), shape)


@converter("Softmax", since=1)
def _softmax_op(node: Node) -> Expr:
    return _softmax(node, False)


@converter("LogSoftmax", since=1)
def _log_softmax_op(node: Node) -> Expr:
    return _softmax(node, True)


@converter("MatMul", since=1)
def _matmul(node: Node) -> Expr:
    a, b = _matmul_operands(node)
    d = node.dtype(0)
    if d in ("float16", "bfloat16"):
        # Sums of 16-bit products accumulate in float32 and round once, as numpy,
        # ONNX Runtime and the GPU libraries do.
        return ops.astype(ops.matmul(a, b, out_dtype="float32"), d)
    return ops.matmul(a, b)


def _matmul_operands(node: Node) -> tuple[Expr, Expr]:
    """MatMul's operands, made to agree where symbolic dimensions meet that the types
    cannot equate (an attention score of run-time broadcast dimensions times the values):
    batch dimensions broadcast to a shape computed at run time, and, where both
    contraction dimensions are different symbolic ones, the second operand's matched at
    run time to the first's (``R.match_cast``: a mismatch fails the run)."""
    a, b = node.input(0), node.input(1)
    sa, sb = (node.graph.bb.normalize(x).struct_info for x in (a, b))
    if not (isinstance(sa, TensorStructInfo) and isinstance(sb, TensorStructInfo)) or \
            sa.shape is None or sb.shape is None or len(sa.shape) < 2 or len(sb.shape) < 2:
        return a, b
    sha, shb = list(sa.shape), list(sb.shape)
    bound = broadcast_at_run_time(node, [sha[:-2], shb[:-2]])
    if bound is not None:
        sha, shb = bound + sha[-2:], bound + shb[-2:]
        a = ops.broadcast_to(a, ShapeExpr(values=tuple(sha)))
        b = ops.broadcast_to(b, ShapeExpr(values=tuple(shb)))
    ka, kb = sha[-1], shb[-2]
    if const_value(ka) is None and const_value(kb) is None and not prove_equal(ka, kb):
        b = node.graph.bb.match_cast(
            b, TensorStructInfo(shape=tuple(shb[:-2] + [ka, shb[-1]]), dtype=sb.dtype),
            valid_name(f"{node.name}_rhs", "rhs"))
    return a, b


@converter("Gemm", since=7)
def _gemm(node: Node) -> Expr:
    a, b = node.input(0), node.input(1)
    if int(node.attr("transA", 0)):
        a = ops.permute_dims(a, [1, 0])
    if int(node.attr("transB", 0)):
        b = ops.permute_dims(b, [1, 0])
    d = node.dtype(0)
    y = ops.matmul(a, b)
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    if alpha != 1.0:
        y = ops.multiply(y, scalar(alpha, d))
    if node.has_input(2):
        c = node.input(2)
        if beta != 1.0:
            c = ops.multiply(c, scalar(beta, d))
        y = ops.add(y, c)
    return y


_REDUCE = {"ReduceSum": ops.sum, "ReduceMean": ops.mean, "ReduceMax": ops.max,
           "ReduceMin": ops.min, "ReduceProd": ops.prod}


def _reduce_axes(node: Node) -> list[int] | None:
    if node.op_type == "ReduceSum" and node.opset >= 13 or node.opset >= 18:
        empty = node.has_input(1) and node.static_shape(1) == [0]
        axes = node.ints(1, "axes") if node.has_input(1) and not empty else None
    else:
        axes = node.attr("axes")
    if axes is not None and len(axes) == 0:
        axes = None
    if axes is None and int(node.attr("noop_with_empty_axes", 0)):
        return []
    nd = node.ndim(0)
    return list(range(nd)) if axes is None else [int(a) % max(nd, 1) for a in axes]


def _runtime_axes(node: Node) -> bool:
    """Whether the axes are an input known only at run time (with at least one entry)."""
    uses_input = node.op_type == "ReduceSum" and node.opset >= 13 or node.opset >= 18
    return uses_input and node.has_input(1) and node.const(1) is None and \
        node.static_shape(1) not in ([0], None)


def i64(values: Any) -> Constant:
    return Constant.from_numpy(np.asarray(values, "int64"))


_PER_AXIS = {"ReduceSum": ops.sum, "ReduceMean": ops.sum, "ReduceMax": ops.max,
             "ReduceMin": ops.min, "ReduceProd": ops.prod, "ReduceL1": ops.sum,
             "ReduceL2": ops.sum, "ReduceSumSquare": ops.sum, "ReduceLogSum": ops.sum}


def _reduce_runtime(node: Node, kind: str) -> Expr:
    """A reduction over axes read at run time: each axis is reduced (keeping it) or not
    by a graph-level ``If`` on its entry of the axis mask, so every reduction is an
    ordinary compiled kernel; dropping the reduced axes (``keepdims=0``) reshapes to the
    kept dimensions, computed at run time too."""
    graph = node.graph
    r = node.ndim(0)
    shape = node.static_shape(0)
    if shape is None:
        raise node.error("axes known only at run time need a static input shape")
    k = int(node.static_shape(1)[0]) if node.ndim(1) == 1 else 1
    a = ops.astype(node.input(1), "int64")
    a = ops.reshape(a, [k])
    a = ops.where(ops.less(a, i64(0)), ops.add(a, i64(r)), a)
    node.runtime_check(ops.max(ops.astype(ops.logical_or(ops.less(a, i64(0)),
                                                         ops.greater_equal(a, i64(r))),
                                          "int64")), "axis_range")
    hits = ops.equal(i64(np.arange(r).reshape(r, 1)), ops.reshape(a, [1, k]))
    mask = node.emit(ops.max(ops.astype(hits, "int64"), axis=1), "axis_mask")
    x = node.input(0)
    dtype = node.dtype(0)

    def per_axis(y: Expr, fn: Any) -> Expr:
        for axis in range(r):
            cond = node.emit(ops.greater(ops.reshape(ops.take(mask, i64([axis]), 0), []),
                                         i64(0)), "reduce_axis")
            value = If(cond=cond, true_branch=SeqExpr(blocks=(), body=fn(y, axis,
                                                                         keepdims=True)),
                       false_branch=SeqExpr(blocks=(), body=y))
            y = node.emit(value, "partial")
            dims = [graph.fresh_dim(f"{valid_name(node.output_names[0], 'r')}_d{axis}_{j}")
                    for j in range(r)]
            y = graph.bb.match_cast(y, TensorStructInfo(shape=tuple(dims), dtype=dtype),
                                    "partial")
        return y

    if kind == "ReduceLogSumExp":
        m = per_axis(x, ops.max)
        total = per_axis(ops.exp(ops.subtract(x, m)), ops.sum)
        # both reduce the same axes: the sum has the maximum's shape
        total = graph.bb.match_cast(total, m.struct_info, "partial")
        out = ops.add(ops.log(total), m)
    else:
        pre = {"ReduceL1": ops.abs, "ReduceL2": lambda v: ops.multiply(v, v),
               "ReduceSumSquare": lambda v: ops.multiply(v, v)}.get(kind)
        out = per_axis(pre(x) if pre else x, _PER_AXIS[kind])
        if kind == "ReduceL2":
            out = ops.sqrt(out)
        elif kind == "ReduceLogSum":
            out = ops.log(out)
        elif kind == "ReduceMean":
            count = ops.prod(ops.where(ops.greater(mask, i64(0)), i64(shape), i64(1)))
            out = ops.divide(out, ops.astype(count, dtype))
    if bool(node.attr("keepdims", 1)):
        return out
    # The kept dimensions in order: output position q reads input axis src[q], the number
    # of axes whose running count of kept axes is at most q.
    kept = ops.subtract(i64(1), mask)
    lower = np.tril(np.ones((r, r), bool))
    cum = ops.sum(ops.where(Constant.from_numpy(lower), ops.reshape(kept, [1, r]), i64(0)),
                  axis=1)
    n_out = r - k
    q = i64(np.arange(max(n_out, 0)).reshape(-1, 1))
    src = ops.sum(ops.astype(ops.less_equal(ops.reshape(cum, [1, r]), q), "int64"), axis=1)
    node.runtime_check(ops.not_equal(ops.sum(kept), i64(n_out)), "repeated_axis")
    if n_out == 0:
        return ops.reshape(out, [])
    dims = node.runtime_dims(node.emit(ops.take(i64(shape), src, 0), "kept_shape"), "dim")
    return ops.reshape(out, ShapeExpr(values=tuple(dims)))


def _reduce(node: Node, kind: str) -> Expr:
    if _runtime_axes(node):
        return _reduce_runtime(node, kind)
    axes = _reduce_axes(node)
    x = node.input(0)
    keep = bool(node.attr("keepdims", 1))
    if axes == []:
        if kind in ("ReduceL1", "ReduceL2"):
            return ops.abs(x)
        if kind == "ReduceSumSquare":
            return ops.multiply(x, x)
        if kind == "ReduceLogSum":
            return ops.log(x)
        return x
    if kind in _REDUCE:
        out = _REDUCE[kind](x, axes, keepdims=keep)
        d = node.dtype(0)
        shape = node.shape(0)
        if kind in ("ReduceMax", "ReduceMin") and dt.is_float(d) and any(
                isinstance(shape[a], E.IntImm) and shape[a].value == 0 for a in axes):
            # The reduction of an empty set is the identity: -inf for max, inf for min.
            return ops.full_like(out, scalar(-np.inf if kind == "ReduceMax" else np.inf, d))
        return out
    if kind == "ReduceL1":
        return ops.sum(ops.abs(x), axes, keepdims=keep)
    if kind == "ReduceL2":
        return ops.sqrt(ops.sum(ops.multiply(x, x), axes, keepdims=keep))
    if kind == "ReduceSumSquare":
        return ops.sum(ops.multiply(x, x), axes, keepdims=keep)
    if kind == "ReduceLogSum":
        return ops.log(ops.sum(x, axes, keepdims=keep))
    if kind == "ReduceLogSumExp":
        m = ops.max(x, axes, keepdims=True)
        s = ops.log(ops.sum(ops.exp(ops.subtract(x, m)), axes, keepdims=keep))
        return ops.add(s, m if keep else ops.squeeze(m, axes))
    raise node.error(f"unknown reduction {kind}")


@converter(*_REDUCE, "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum",
           "ReduceLogSumExp", since=1)
def _reduce_op(node: Node) -> Expr:
    if node.op_type in ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp") and \
            not dt.is_float(node.dtype(0)) and node.op_type != "ReduceL1":
        raise node.error(f"needs a floating-point input, got {node.dtype(0)}")
    return _reduce(node, node.op_type)


@converter("ArgMax", "ArgMin", since=1)
def _arg(node: Node) -> Expr:
    fn = ops.argmax if node.op_type == "ArgMax" else ops.argmin
    nd = node.ndim(0)
    axis = int(node.attr("axis", 0))
    return fn(node.input(0), axis % max(nd, 1), keepdims=bool(node.attr("keepdims", 1)),
              select_last_index=bool(node.attr("select_last_index", 0)))


__all__: list[str] = []

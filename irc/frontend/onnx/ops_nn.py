"""Converters of ONNX's neural-network operators: ``Conv`` / ``ConvTranspose`` (1-D and
2-D), pooling (``MaxPool``, ``AveragePool``, ``GlobalAveragePool``, ``GlobalMaxPool``),
normalizations (``BatchNormalization``, ``LayerNormalization``,
``InstanceNormalization``), ``Softmax`` / ``LogSoftmax``, ``Gemm``, ``MatMul``, the
``Reduce*`` family and ``ArgMax`` / ``ArgMin``."""

from __future__ import annotations

from typing import Any, Callable

from ...core import dtype as dt
from ...ir import ops
from ...ir.expr import Expr, TupleGetItem
from ...tir import expr as E
from .importer import Node
from .ops_elementwise import scalar
from .registry import converter


def _spatial(node: Node, what: str) -> int:
    n = node.ndim(0) - 2
    if n not in (1, 2):
        raise node.error(f"irc supports 1-D and 2-D {what}, got {n}-D")
    return n


def _pads(node: Node, kernel: list[int], strides: list[int], dilations: list[int],
          transpose: bool = False) -> list[int]:
    """(top, left, bottom, right) padding for 2-D (auto_pad resolved)."""
    auto = node.attr("auto_pad", "NOTSET")
    k = len(kernel)
    if auto in ("NOTSET", ""):
        pads = list(node.attr("pads", [0] * (2 * k)))
        if len(pads) != 2 * k:
            raise node.error(f"pads has {len(pads)} entries for {k} spatial axes")
        return [int(p) for p in pads]
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
        if transpose:
            total = max(eff - strides[i], 0)
        else:
            out = -(-size // strides[i])
            total = max((out - 1) * strides[i] + eff - size, 0)
        small, big = total // 2, total - total // 2
        b, e = (small, big) if auto == "SAME_UPPER" else (big, small)
        begin.append(b)
        end.append(e)
    return begin + end


def _lift_1d(x: Expr, n: int) -> Expr:
    return ops.expand_dims(x, 2) if n == 1 else x


def _conv_attrs(node: Node, kernel: list[int], n: int) -> tuple[list[int], list[int], list]:
    strides = [int(v) for v in node.attr("strides", [1] * n)]
    dilations = [int(v) for v in node.attr("dilations", [1] * n)]
    pads = _pads(node, kernel, strides, dilations, node.op_type == "ConvTranspose")
    if n == 1:
        strides, dilations = [1] + strides, [1] + dilations
        pads = [0, pads[0], 0, pads[1]]
    return strides, dilations, pads


@converter("Conv", since=1)
def _conv(node: Node) -> Expr:
    n = _spatial(node, "convolutions")
    wshape = node.shape(1)
    kernel = node.attr("kernel_shape") or [int(d.value) if isinstance(d, E.IntImm) else d
                                           for d in wshape[2:]]
    strides, dilations, pads = _conv_attrs(node, [int(k) for k in kernel], n)
    x, w = _lift_1d(node.input(0), n), _lift_1d(node.input(1), n)
    y = ops.nn.conv2d(x, w, strides=strides, padding=pads, dilation=dilations,
                      groups=int(node.attr("group", 1)))
    if node.has_input(2):
        y = ops.add(y, ops.reshape(node.input(2), [-1, 1, 1]))
    return ops.squeeze(y, [2]) if n == 1 else y


@converter("ConvTranspose", since=1)
def _conv_transpose(node: Node) -> Expr:
    n = _spatial(node, "transposed convolutions")
    wshape = node.shape(1)
    kernel = node.attr("kernel_shape") or [int(d.value) for d in wshape[2:]]
    strides, dilations, pads = _conv_attrs(node, [int(k) for k in kernel], n)
    if node.attr("output_shape") is not None:
        raise node.error("output_shape is not supported; give pads and output_padding")
    out_pad = [int(v) for v in node.attr("output_padding", [0] * n)]
    if n == 1:
        out_pad = [0] + out_pad
    x, w = _lift_1d(node.input(0), n), _lift_1d(node.input(1), n)
    y = ops.nn.conv2d_transpose(x, w, strides=strides, padding=pads, output_padding=out_pad,
                                dilation=dilations, groups=int(node.attr("group", 1)))
    if node.has_input(2):
        y = ops.add(y, ops.reshape(node.input(2), [-1, 1, 1]))
    return ops.squeeze(y, [2]) if n == 1 else y


def _pool(node: Node, build: Callable[..., Expr], **extra: Any) -> Expr:
    n = _spatial(node, "pooling")
    kernel = [int(k) for k in node.required_attr("kernel_shape")]
    if n == 1:
        kernel = [1] + kernel
    strides = [int(v) for v in node.attr("strides", [1] * n)]
    dilations = [int(v) for v in node.attr("dilations", [1] * n)]
    pads = _pads(node, kernel[-n:], strides, dilations)
    if n == 1:
        strides, dilations, pads = [1] + strides, [1] + dilations, [0, pads[0], 0, pads[1]]
    y = build(_lift_1d(node.input(0), n), pool_size=kernel, strides=strides, padding=pads,
              dilation=dilations, ceil_mode=bool(node.attr("ceil_mode", 0)), **extra)
    return ops.squeeze(y, [2]) if n == 1 else y


@converter("MaxPool", since=8)
def _max_pool(node: Node) -> Expr:
    if len(node.output_names) > 1 and node.output_names[1]:
        raise node.error("the Indices output of MaxPool is not supported")
    if int(node.attr("storage_order", 0)):
        raise node.error("storage_order=1 is not supported")
    return _pool(node, ops.nn.max_pool2d)


@converter("AveragePool", since=7)
def _avg_pool(node: Node) -> Expr:
    return _pool(node, ops.nn.avg_pool2d,
                 count_include_pad=bool(node.attr("count_include_pad", 0)))


@converter("GlobalAveragePool", "GlobalMaxPool", since=1)
def _global_pool(node: Node) -> Expr:
    axes = list(range(2, node.ndim(0)))
    fn = ops.mean if node.op_type == "GlobalAveragePool" else ops.max
    return fn(node.input(0), axes, keepdims=True)


@converter("BatchNormalization", since=7)
def _batch_norm(node: Node) -> Expr:
    if int(node.attr("training_mode", 0)):
        raise node.error("training_mode=1 is not supported (inference only)")
    bn = node.emit(ops.nn.batch_norm(
        node.input(0), node.input(1), node.input(2), node.input(3), node.input(4), axis=1,
        epsilon=float(node.attr("epsilon", 1e-5)), training=False))
    return TupleGetItem(tuple_value=bn, index=0)


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
def _layer_norm(node: Node) -> Expr:
    if any(node.output_names[1:]):
        raise node.error("the Mean and InvStdDev outputs are not supported")
    nd = node.ndim(0)
    axis = int(node.attr("axis", -1))
    axis = axis + nd if axis < 0 else axis
    axes = list(range(axis, nd))
    x, d = node.input(0), node.dtype(0)
    gamma = node.input(1)
    beta = node.optional(2)
    norm_shape = node.shape(0)[axis:]
    if beta is None:
        beta = ops.zeros(list(int(s.value) for s in norm_shape), d) if all(
            isinstance(s, E.IntImm) for s in norm_shape) else ops.zeros_like(gamma)
    g_nd = node.ndim(1)
    if g_nd != len(axes):
        gamma = ops.broadcast_to(gamma, list(norm_shape))
        beta = ops.broadcast_to(beta, list(norm_shape))
    return ops.nn.layer_norm(x, gamma, beta, axes, epsilon=float(node.attr("epsilon", 1e-5)))


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
    return ops.matmul(node.input(0), node.input(1))


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
        axes = node.ints(1, "axes") if node.has_input(1) else None
    else:
        axes = node.attr("axes")
    if axes is not None and len(axes) == 0:
        axes = None
    if axes is None and int(node.attr("noop_with_empty_axes", 0)):
        return []
    nd = node.ndim(0)
    return list(range(nd)) if axes is None else [int(a) % max(nd, 1) for a in axes]


def _reduce(node: Node, kind: str) -> Expr:
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
        return _REDUCE[kind](x, axes, keepdims=keep)
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
    if int(node.attr("select_last_index", 0)):
        raise node.error("select_last_index=1 is not supported")
    fn = ops.argmax if node.op_type == "ArgMax" else ops.argmin
    nd = node.ndim(0)
    axis = int(node.attr("axis", 0))
    return fn(node.input(0), axis % max(nd, 1), keepdims=bool(node.attr("keepdims", 1)))


__all__: list[str] = []

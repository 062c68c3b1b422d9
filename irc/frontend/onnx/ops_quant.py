"""Converters of quantized and integer ONNX operators: ``QuantizeLinear``,
``DequantizeLinear``, ``DynamicQuantizeLinear``, ``MatMulInteger``, ``ConvInteger``,
``QLinearMatMul``, ``QLinearConv``; ``BitShift`` and the ``Bitwise*`` operators; ``IsNaN``,
``IsInf``, ``Asin``, ``Acos``, ``Atan``.

Integer products are integer kernels: the operands are widened to int32, their zero
points subtracted, and the product or convolution accumulates in int32. ``QLinear*``
requantize the accumulator as ONNX's reference does: ``acc * (scale_a * scale_b /
scale_y)`` (the multiplier computed in the scales' dtype) in float64, plus the output zero
point, rounded half to even and saturated. The QDQ form (``DequantizeLinear`` -> float
operator -> ``QuantizeLinear``) imports as ``R.dequantize``, the float operator and
``R.quantize``.
"""

from __future__ import annotations

import numpy as np

from ...core import dtype as dt
from ...ir import ops
from ...ir.expr import Expr
from ...ir.ops import integer, quantization, unary
from ...tir.topi.quantize import QUANT_FLOATS
from .importer import Node
from .ops_elementwise import scalar
from .ops_nn import _kernel, _spatial, convolve
from .protos import onnx_dtype
from .registry import converter

# The dtypes QuantizeLinear produces and DequantizeLinear reads.
_QUANTIZE_OUT = ("int8", "uint8", "int16", "uint16", "int4", "uint4", "int2", "uint2",
                 *QUANT_FLOATS)
_DEQUANTIZE_IN = (*_QUANTIZE_OUT, "int32")
_WIDER = {"float16": 1, "bfloat16": 1, "float32": 2, "float64": 3}


def _numel(node: Node, i: int) -> int | None:
    shape = node.static_shape(i)
    return None if shape is None else int(np.prod(shape, dtype=np.int64))


def _qparams(node: Node, i_scale: int) -> tuple[int, int]:
    """(axis, block_size) of a QuantizeLinear / DequantizeLinear node: per-tensor
    parameters take the graph op's default axis, others ONNX's ``axis`` (default 1)
    normalized against the input's rank."""
    block = int(node.attr("block_size", 0))
    if block < 0:
        raise node.error(f"block_size must be 0 or positive, got {block}")
    if not block and (node.ndim(i_scale) == 0 or _numel(node, i_scale) == 1):
        if node.ndim(i_scale) > 1:
            raise node.error("the scale must be a scalar or a 1-D tensor without block_size")
        return -1, 0
    nd = node.ndim(0)
    axis = int(node.attr("axis", 1))
    if not -nd <= axis < nd:
        raise node.error(f"axis {axis} is out of range for an input of rank {nd}")
    return axis % nd, block


def _compute_dtype(node: Node, x: str, scale: str) -> str:
    precision = int(node.attr("precision", 0))
    if precision:
        d = onnx_dtype(precision, f"node {node.name!r}: precision")
        if not dt.is_float(d):
            raise node.error(f"precision must be a floating-point type, got {d}")
        return d
    if x == scale:
        return x
    if _WIDER.get(x, 0) == _WIDER.get(scale, 0):
        return "float32"  # float16 with bfloat16
    return x if _WIDER.get(x, 0) > _WIDER.get(scale, 0) else scale


@converter("QuantizeLinear", since=10)
def _quantize_linear(node: Node) -> Expr:
    x, scale = node.input(0), node.input(1)
    xd, sd = node.dtype(0), node.dtype(1)
    if not dt.is_float(xd):
        raise node.error(f"needs a floating-point input, got {xd}")
    out_attr = int(node.attr("output_dtype", 0))
    out = onnx_dtype(out_attr, f"node {node.name!r}: output_dtype") if out_attr else None
    zp = node.optional(2)
    if zp is not None:
        zd = node.dtype(2)
        if out is not None and out != zd:
            raise node.error(f"output_dtype {out} differs from the zero point's dtype {zd}")
        out = zd
    out = out or "uint8"
    if out not in _QUANTIZE_OUT:
        raise node.error(f"quantizes to {', '.join(_QUANTIZE_OUT)}, not {out}")
    axis, block = _qparams(node, 1)
    work = _compute_dtype(node, xd, sd)
    if xd != work:
        x = ops.astype(x, work)
    if sd != work:
        scale = ops.astype(scale, work)
    return quantization.quantize(x, scale, zp, axis=axis, block_size=block, out_dtype=out,
                                 saturate=bool(node.attr("saturate", 1)))


@converter("DequantizeLinear", since=10)
def _dequantize_linear(node: Node) -> Expr:
    xd = node.dtype(0)
    if xd not in _DEQUANTIZE_IN:
        raise node.error(f"dequantizes {', '.join(_DEQUANTIZE_IN)}, not {xd}")
    if not dt.is_float(node.dtype(1)):
        raise node.error(f"the scale must be floating-point, got {node.dtype(1)}")
    out_attr = int(node.attr("output_dtype", 0))
    out = onnx_dtype(out_attr, f"node {node.name!r}: output_dtype") if out_attr else "void"
    zp = node.optional(2)
    if zp is not None and node.dtype(2) != xd:
        raise node.error(f"the zero point ({node.dtype(2)}) must have the input's dtype {xd}")
    axis, block = _qparams(node, 1)
    return quantization.dequantize(node.input(0), node.input(1), zp, axis=axis,
                                   block_size=block, out_dtype=out)


@converter("DynamicQuantizeLinear", since=11)
def _dynamic_quantize_linear(node: Node) -> list[Expr]:
    x = node.input(0)
    d = node.dtype(0)
    if d != "float32":
        raise node.error(f"needs a float32 input, got {d}")
    zero = scalar(0.0, d)
    hi = node.emit(ops.maximum(ops.max(x), zero), "x_max")
    lo = node.emit(ops.minimum(ops.min(x), zero), "x_min")
    span = ops.where(ops.equal(hi, lo), scalar(1.0, d), ops.subtract(hi, lo))
    scale = node.emit(ops.divide(span, scalar(255.0, d)), "y_scale")
    zp = ops.round(ops.clip(ops.subtract(zero, ops.divide(lo, scale)), 0.0, 255.0))
    zp = node.emit(ops.astype(zp, "uint8"), "y_zero_point")
    y = quantization.quantize(x, scale, zp, out_dtype="uint8")
    return [y, scale, zp]


# -- integer products -------------------------------------------------------------------------


def _widen(node: Node, i: int, i_zp: int, per_row: bool = False) -> Expr:
    """Input ``i`` as int32 minus its zero point (input ``i_zp``, when given). A 1-D zero
    point of several elements is per row of a matrix when ``per_row`` (its own axis
    otherwise follows numpy broadcasting)."""
    d = node.dtype(i)
    if not dt.is_integer(d) or dt.parse(d).bits > 8:
        raise node.error(f"input {i} must be int8 or uint8, got {d}")
    v = ops.astype(node.input(i), "int32")
    if not node.has_input(i_zp):
        return v
    if node.dtype(i_zp) != d:
        raise node.error(f"the zero point ({node.dtype(i_zp)}) must have input {i}'s dtype "
                         f"{d}")
    zp = ops.astype(node.input(i_zp), "int32")
    if per_row:
        zp = _per_row(node, i_zp, zp)
    return ops.subtract(v, zp)


def _per_row(node: Node, i: int, e: Expr) -> Expr:
    """A 1-D per-row parameter (input ``i``) shaped to broadcast over a matrix's rows."""
    if node.ndim(i) == 1 and _numel(node, i) != 1:
        return ops.expand_dims(e, [1])
    return e


def _requantize(node: Node, acc: Expr, scales: tuple[Expr, Expr, Expr], i_yzp: int,
                default_dtype: str) -> Expr:
    """``saturate(round(acc * (s_a * s_b / s_y) + y_zero_point))`` (module docstring)."""
    sa, sb, sy = scales
    mult = ops.astype(ops.divide(ops.multiply(sa, sb), sy), "float64")
    y = ops.multiply(ops.astype(acc, "float64"), mult)
    out = default_dtype
    if node.has_input(i_yzp):
        out = node.dtype(i_yzp)
        y = ops.add(y, ops.astype(node.input(i_yzp), "float64"))
    if out not in ("int8", "uint8"):
        raise node.error(f"the output must be int8 or uint8, got {out}")
    lo, hi = (-128.0, 127.0) if out == "int8" else (0.0, 255.0)
    return ops.astype(ops.round(ops.clip(y, lo, hi)), out)


def _scale(node: Node, i: int) -> Expr:
    if not dt.is_float(node.dtype(i)):
        raise node.error(f"input {i} (a scale) must be floating-point, got {node.dtype(i)}")
    return node.input(i)


@converter("MatMulInteger", since=10)
def _matmul_integer(node: Node) -> Expr:
    a = _widen(node, 0, 2, per_row=True)
    b = _widen(node, 1, 3)
    return ops.matmul(a, b)


@converter("QLinearMatMul", since=10)
def _qlinear_matmul(node: Node) -> Expr:
    a = _widen(node, 0, 2, per_row=True)
    b = _widen(node, 3, 5)
    acc = ops.matmul(a, b)
    sd = node.dtype(1)
    for i in (4, 6):
        if node.dtype(i) != sd:
            raise node.error(f"the scales differ in dtype ({sd}, {node.dtype(i)})")
    scales = (_per_row(node, 1, _scale(node, 1)), _scale(node, 4),
              _per_row(node, 6, _scale(node, 6)))
    return _requantize(node, acc, scales, 7, node.dtype(0))


def _per_channel(node: Node, i: int, e: Expr, spatial: int) -> Expr:
    """A 1-D per-output-channel parameter (input ``i``) shaped to broadcast over the
    weight (``spatial + 1`` trailing axes)."""
    if node.ndim(i) == 1 and _numel(node, i) != 1:
        return ops.reshape(e, [-1] + [1] * (spatial + 1))
    if node.ndim(i) > 1:
        raise node.error(f"input {i} must be a scalar or a 1-D tensor")
    return e


def _integer_conv(node: Node, i_x: int, i_xzp: int, i_w: int, i_wzp: int) -> Expr:
    """The int32 convolution of the zero-point-corrected data and weight."""
    n = _spatial(node, "convolutions")
    x = _widen(node, i_x, i_xzp)
    if node.has_input(i_xzp) and node.ndim(i_xzp) > 0 and _numel(node, i_xzp) != 1:
        raise node.error("the data's zero point must be a scalar (per tensor)")
    wd = node.dtype(i_w)
    if not dt.is_integer(wd) or dt.parse(wd).bits > 8:
        raise node.error(f"the weight must be int8 or uint8, got {wd}")
    w = ops.astype(node.input(i_w), "int32")
    if node.has_input(i_wzp):
        if node.dtype(i_wzp) != wd:
            raise node.error(f"the weight's zero point ({node.dtype(i_wzp)}) must have the "
                             f"weight's dtype {wd}")
        zp = ops.astype(node.input(i_wzp), "int32")
        w = ops.subtract(w, _per_channel(node, i_wzp, zp, n))
    return convolve(node, x, w, n, _kernel(node, n, i_w))


@converter("ConvInteger", since=10)
def _conv_integer(node: Node) -> Expr:
    return _integer_conv(node, 0, 2, 1, 3)


@converter("QLinearConv", since=10)
def _qlinear_conv(node: Node) -> Expr:
    acc = _integer_conv(node, 0, 2, 3, 5)
    n = node.ndim(0) - 2
    if node.has_input(8):
        if node.dtype(8) != "int32":
            raise node.error(f"the bias must be int32, got {node.dtype(8)}")
        acc = ops.add(acc, ops.reshape(node.input(8), [-1] + [1] * n))
    ws = _scale(node, 4)
    if node.ndim(4) == 1 and _numel(node, 4) != 1:
        ws = ops.reshape(ws, [-1] + [1] * n)
    return _requantize(node, acc, (_scale(node, 1), ws, _scale(node, 6)), 7, node.dtype(0))


# -- bitwise, shifts and float tests -----------------------------------------------------------


_BITWISE = {"BitwiseAnd": integer.bitwise_and, "BitwiseOr": integer.bitwise_or,
            "BitwiseXor": integer.bitwise_xor}


def _integer_input(node: Node, i: int) -> Expr:
    d = node.dtype(i)
    if not dt.is_integer(d):
        raise node.error(f"needs integer inputs, got {d}")
    return node.input(i)


@converter(*_BITWISE, since=18)
def _bitwise(node: Node) -> Expr:
    return _BITWISE[node.op_type](_integer_input(node, 0), _integer_input(node, 1))


@converter("BitwiseNot", since=18)
def _bitwise_not(node: Node) -> Expr:
    return integer.bitwise_not(_integer_input(node, 0))


@converter("BitCast", since=26)
def _bitcast(node: Node) -> Expr:
    to = onnx_dtype(int(node.required_attr("to")), f"node {node.name!r}: BitCast")
    return integer.bitcast(node.input(0), to)


@converter("BitShift", since=11)
def _bit_shift(node: Node) -> Expr:
    direction = node.required_attr("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise node.error(f"direction must be 'LEFT' or 'RIGHT', got {direction!r}")
    shift = integer.left_shift if direction == "LEFT" else integer.right_shift
    return shift(_integer_input(node, 0), _integer_input(node, 1))


@converter("IsNaN", since=9)
def _is_nan(node: Node) -> Expr:
    return unary.isnan(node.input(0))


@converter("IsInf", since=10)
def _is_inf(node: Node) -> Expr:
    x = node.input(0)
    pos, neg = int(node.attr("detect_positive", 1)), int(node.attr("detect_negative", 1))
    inf = unary.isinf(x)
    if pos and neg:
        return inf
    if not pos and not neg:
        return ops.zeros_like(inf)
    zero = scalar(0, node.dtype(0))
    sign = ops.greater(x, zero) if pos else ops.less(x, zero)
    return ops.logical_and(inf, sign)


_INVERSE_TRIG = {"Asin": unary.asin, "Acos": unary.acos, "Atan": unary.atan}


@converter(*_INVERSE_TRIG, since=7)
def _inverse_trig(node: Node) -> Expr:
    if not dt.is_float(node.dtype(0)):
        raise node.error(f"needs a floating-point input, got {node.dtype(0)}")
    return _INVERSE_TRIG[node.op_type](node.input(0))


__all__: list[str] = []

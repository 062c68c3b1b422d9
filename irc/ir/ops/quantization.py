"""Affine quantization: ``quantize`` (floats to integers) and ``dequantize`` (back).

``R.quantize(x, scale, zero_point, axis=-1, block_size=0, out_dtype="int8")`` computes
``clip(round_half_even(x / scale) + zero_point, qmin, qmax)`` in ``out_dtype`` (an
integer dtype, 2 to 32 bits; a narrow float format instead rounds ``x / scale`` to it,
clamping to its largest finite value with ``saturate``, see ``irc.tir.topi.quantize``);
``R.dequantize(x, scale, zero_point, axis=-1, block_size=0, out_dtype="void")`` computes
``(x - zero_point) * scale`` (in float32, float64 when ``scale`` is float64) converted to
``out_dtype`` (``"void"``: the scale's dtype). ``zero_point`` may be left out (0).

``scale`` and ``zero_point`` (which have the same shape) select the granularity:

- per tensor: a scalar or a one-element 1-D tensor;
- per axis: a 1-D tensor of length ``x.shape[axis]``;
- blocked (``block_size > 0``): a tensor of ``x``'s rank whose ``axis`` dimension is
  ``ceil(x.shape[axis] / block_size)`` and whose other dimensions are ``x``'s; element
  ``i`` along ``axis`` uses parameter ``i // block_size``.
"""

from __future__ import annotations

from typing import Any

from ...core import dtype as dt
from ...tir import expr as E
from ...tir.topi.quantize import QUANT_FLOATS, QUANT_RANGES
from ..expr import Call, Expr
from ..op import (
    BROADCAST,
    AttrSpec,
    _err,
    conv_bool,
    conv_dtype,
    conv_int,
    make_call,
    register_op,
)
from ..struct_info import StructInfo, TensorStructInfo
from ..struct_info_analysis import const_value, format_shape, prove_not_equal
from ._common import fail, normalize_axis, tensor_arg, with_dtype

_QUANTIZED = (*QUANT_RANGES, *QUANT_FLOATS)


def _conv_block_size(value: Any, op: str, attr: str) -> int:
    v = conv_int(value, op, attr)
    if v < 0:
        raise _err(op, attr, "0 (no blocks) or positive", value)
    return v


def _check_param(call: Call, x: TensorStructInfo, p: TensorStructInfo, what: str) -> None:
    """``p`` (scale or zero point) must fit one of the granularities of the module
    docstring."""
    axis, block = call.attrs["axis"], call.attrs["block_size"]
    if x.ndim < 0 or p.ndim < 0:
        return
    if x.ndim > 0:
        axis = normalize_axis(call, axis, x.ndim)
    if block:
        if p.ndim != x.ndim:
            raise fail(call, f"with block_size {block} the {what} must have the input's rank "
                             f"{x.ndim}, got rank {p.ndim}")
        if x.shape is None or p.shape is None:
            return
        for d, (xs, ps) in enumerate(zip(x.shape, p.shape)):
            want = xs
            if d == axis:
                n = const_value(xs)
                if n is None:
                    continue
                want = E.const(-(-n // block), "int64")
            if prove_not_equal(want, ps):
                raise fail(call, f"the {what} of shape {format_shape(p.shape)} does not "
                                 f"match blocks of {block} along axis {axis} of an input of "
                                 f"shape {format_shape(x.shape)}")
        return
    if p.ndim > 1:
        raise fail(call, f"the {what} must be a scalar or a 1-D tensor without block_size, "
                         f"got rank {p.ndim}")
    if p.ndim == 1 and p.shape is not None and x.shape is not None:
        n = const_value(p.shape[0])
        if n == 1:
            return
        if x.ndim == 0 or prove_not_equal(p.shape[0], x.shape[axis]):
            raise fail(call, f"the per-axis {what} has {format_shape(p.shape)} elements but "
                             f"the input has shape {format_shape(x.shape)} (axis {axis})")


_ATTRS = [AttrSpec("axis", -1, conv_int), AttrSpec("block_size", 0, _conv_block_size)]


@register_op("quantize", ["x", "scale", "zero_point"],
             [*_ATTRS, AttrSpec("out_dtype", "int8", conv_dtype),
              AttrSpec("saturate", True, conv_bool)], pattern=BROADCAST,
             optional=["zero_point"])
def _infer_quantize(call: Call, ctx: Any) -> StructInfo:
    """R.quantize(x, scale, zero_point=None, axis=-1, block_size=0, out_dtype="int8",
    saturate=True): ``clip(round(x / scale) + zero_point)`` as integers, or ``x / scale``
    rounded to a narrow float format (see the module docstring)."""
    x, scale = tensor_arg(call, 0), tensor_arg(call, 1)
    out = call.attrs["out_dtype"]
    if out not in _QUANTIZED:
        raise fail(call, f"out_dtype must be one of {', '.join(_QUANTIZED)}, got {out}")
    if x.dtype and not dt.is_float(x.dtype):
        raise fail(call, f"the input must have a floating-point dtype, got {x.dtype}")
    if x.dtype and scale.dtype and scale.dtype != x.dtype:
        raise fail(call, f"the scale ({scale.dtype}) must have the input's dtype {x.dtype}",
                   hint="insert R.astype")
    _check_param(call, x, scale, "scale")
    if len(call.args) > 2 and call.args[2] is not None:
        zp = tensor_arg(call, 2)
        if zp.dtype and zp.dtype != out:
            raise fail(call, f"the zero point ({zp.dtype}) must have the out_dtype {out}")
        _check_param(call, x, zp, "zero point")
    return with_dtype(x, out)


@register_op("dequantize", ["x", "scale", "zero_point"],
             [*_ATTRS, AttrSpec("out_dtype", "void", conv_dtype)], pattern=BROADCAST,
             optional=["zero_point"])
def _infer_dequantize(call: Call, ctx: Any) -> StructInfo:
    """R.dequantize(x, scale, zero_point=None, axis=-1, block_size=0, out_dtype="void"):
    ``(x - zero_point) * scale`` as floats (see the module docstring)."""
    x, scale = tensor_arg(call, 0), tensor_arg(call, 1)
    if x.dtype and x.dtype not in _QUANTIZED:
        raise fail(call, f"the input must be one of {', '.join(_QUANTIZED)}, got {x.dtype}")
    if scale.dtype and not dt.is_float(scale.dtype):
        raise fail(call, f"the scale must have a floating-point dtype, got {scale.dtype}")
    out = call.attrs["out_dtype"]
    if out == "void":
        out = scale.dtype
    elif not dt.is_float(out):
        raise fail(call, f"out_dtype must be a floating-point dtype, got {out}")
    _check_param(call, x, scale, "scale")
    if len(call.args) > 2 and call.args[2] is not None:
        zp = tensor_arg(call, 2)
        if zp.dtype and x.dtype and zp.dtype != x.dtype:
            raise fail(call, f"the zero point ({zp.dtype}) must have the input's dtype "
                             f"{x.dtype}")
        _check_param(call, x, zp, "zero point")
    return with_dtype(x, out)


def quantize(x: Expr, scale: Expr, zero_point: Expr | None = None, axis: int = -1,
             block_size: int = 0, out_dtype: str = "int8", saturate: bool = True) -> Expr:
    """``R.quantize(x, scale, zero_point, axis, block_size, out_dtype, saturate)``."""
    return make_call("quantize", x, scale, zero_point, axis=axis, block_size=block_size,
                     out_dtype=out_dtype, saturate=saturate)


def dequantize(x: Expr, scale: Expr, zero_point: Expr | None = None, axis: int = -1,
               block_size: int = 0, out_dtype: str | None = "void") -> Expr:
    """``R.dequantize(x, scale, zero_point, axis, block_size, out_dtype)``."""
    return make_call("dequantize", x, scale, zero_point, axis=axis, block_size=block_size,
                     out_dtype=out_dtype)


__all__ = ["quantize", "dequantize", "QUANT_RANGES"]

"""Affine quantization: ``quantize`` (floats to integers, or to the narrow float formats)
and ``dequantize`` (back), with a scale and zero point per tensor, per axis or per block
along one axis.

To a float8 format the result is ``x / scale`` rounded to the format (the zero point, 0
by ONNX's definition, is not added) and, with ``saturate``, clamped to its largest finite
value first (NaN stays NaN); to ``float4_e2m1fn`` it is ``x / scale + zero_point``
rounded, saturating.

A parameter tensor ``p`` (scale or zero point) is read for output position ``idx`` as:
``p[()]`` / ``p[0]`` when it holds one value, ``p[idx[axis]]`` when it is 1-D (per axis),
and ``p[idx[:axis], idx[axis] // block_size, idx[axis+1:]]`` when ``block_size > 0``.
"""

from __future__ import annotations

from ...core import dtype as dt
from ...core.diagnostics import IRTypeError
from .. import intrin
from ..expr import PrimExpr, cast, const, floordiv, select
from ..expr import max_ as _max
from ..expr import min_ as _min
from ..te.tensor import Tensor, compute
from .utils import BROADCAST, axis_names, const_int, normalize_axis

QUANT_RANGES: dict[str, tuple[int, int]] = {
    d: (dt.min_value(d), dt.max_value(d))
    for d in ("int8", "uint8", "int16", "uint16", "int32", "int4", "uint4", "int2", "uint2")}
"""The integer dtypes quantized values may have, with their ranges."""

QUANT_FLOATS = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
                "float4_e2m1fn")
"""The narrow float formats quantized values may have."""


def param_at(p: Tensor | None, x: Tensor, axis: int, block_size: int,
             idx: tuple[PrimExpr, ...]) -> PrimExpr | None:
    """The element of the scale or zero point ``p`` that applies to ``x[idx]`` (module
    docstring); None when ``p`` is None."""
    if p is None:
        return None
    if p.ndim == 0:
        return p[()]
    if block_size:
        if p.ndim != x.ndim:
            raise IRTypeError(f"a blocked quantization parameter has rank {x.ndim}, got "
                              f"{p.ndim}")
        src = list(idx)
        i = idx[axis]
        src[axis] = floordiv(i, const(block_size, i.dtype))
        return p[tuple(src)]
    if p.ndim != 1:
        raise IRTypeError(f"a quantization parameter is a scalar or a 1-D tensor, got rank "
                          f"{p.ndim}")
    if const_int(p.shape[0]) == 1:
        return p[(const(0, p.shape[0].dtype),)]
    i = idx[axis]
    return p[(i if i.dtype == p.shape[0].dtype else i.astype(p.shape[0].dtype),)]


def quantize(x: Tensor, scale: Tensor, zero_point: Tensor | None = None, axis: int = -1,
             block_size: int = 0, out_dtype: str = "int8", saturate: bool = True) -> Tensor:
    """``clip(round_half_even(x / scale) + zero_point, qmin, qmax)`` as ``out_dtype``; the
    division is done in ``x``'s dtype, the rest in float32 (float64 for float64 input).
    Narrow float ``out_dtype``: see the module docstring."""
    if out_dtype not in QUANT_RANGES and out_dtype not in QUANT_FLOATS:
        raise IRTypeError(f"topi.quantize: out_dtype must be one of "
                          f"{', '.join((*QUANT_RANGES, *QUANT_FLOATS))}, got {out_dtype}")
    if not dt.is_float(x.dtype):
        raise IRTypeError(f"topi.quantize needs a floating-point input, got {x.dtype}")
    ax = normalize_axis(axis, x.ndim) if x.ndim else 0
    if out_dtype in QUANT_FLOATS:
        return _quantize_float(x, scale, zero_point, ax, block_size, out_dtype, saturate)
    lo, hi = QUANT_RANGES[out_dtype]
    # float32 holds every int16 value exactly, and clamping before the conversion keeps
    # it defined; int32 needs float64 for its bounds.
    work = "float64" if x.dtype == "float64" or out_dtype == "int32" else "float32"

    def fn(*idx: PrimExpr) -> PrimExpr:
        s = param_at(scale, x, ax, block_size, idx)
        v = intrin.round(x[idx] / s)
        v = cast(v, work) if v.dtype != work else v
        zp = param_at(zero_point, x, ax, block_size, idx)
        if zp is not None:
            v = v + cast(zp, work)
        v = _min(_max(v, const(float(lo), work)), const(float(hi), work))
        return cast(v, out_dtype)

    return compute(x.shape, fn, name="T_quantize", tag=BROADCAST,
                   axis_names=axis_names(x.ndim))


def _quantize_float(x: Tensor, scale: Tensor, zero_point: Tensor | None, ax: int,
                    block_size: int, out_dtype: str, saturate: bool) -> Tensor:
    top = dt.FLOAT_FORMATS[out_dtype].max_value
    work = "float64" if x.dtype == "float64" else "float32"

    def fn(*idx: PrimExpr) -> PrimExpr:
        v = x[idx] / param_at(scale, x, ax, block_size, idx)
        v = cast(v, work) if v.dtype != work else v
        zp = param_at(zero_point, x, ax, block_size, idx)
        if zp is not None and out_dtype == "float4_e2m1fn":
            v = v + cast(zp, work)
        if saturate and out_dtype != "float4_e2m1fn":  # selects: NaN stays NaN
            hi, lo = const(top, work), const(-top, work)
            v = select(v > hi, hi, select(v < lo, lo, v))
        return cast(v, out_dtype)

    return compute(x.shape, fn, name="T_quantize", tag=BROADCAST,
                   axis_names=axis_names(x.ndim))


def dequantize(x: Tensor, scale: Tensor, zero_point: Tensor | None = None, axis: int = -1,
               block_size: int = 0, out_dtype: str | None = None) -> Tensor:
    """``(x - zero_point) * scale`` computed in float32 (float64 for a float64 scale) and
    converted to ``out_dtype`` (default: the scale's dtype)."""
    if not dt.is_float(scale.dtype):
        raise IRTypeError(f"topi.dequantize needs a floating-point scale, got {scale.dtype}")
    out_dtype = out_dtype or scale.dtype
    work = "float64" if scale.dtype == "float64" else "float32"
    ax = normalize_axis(axis, x.ndim) if x.ndim else 0

    def fn(*idx: PrimExpr) -> PrimExpr:
        v = cast(x[idx], work)
        zp = param_at(zero_point, x, ax, block_size, idx)
        if zp is not None:
            v = v - cast(zp, work)
        s = param_at(scale, x, ax, block_size, idx)
        v = v * (s if s.dtype == work else cast(s, work))
        return v if out_dtype == work else cast(v, out_dtype)

    return compute(x.shape, fn, name="T_dequantize", tag=BROADCAST,
                   axis_names=axis_names(x.ndim))


__all__ = ["quantize", "dequantize", "param_at", "QUANT_RANGES", "QUANT_FLOATS"]

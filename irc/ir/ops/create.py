"""Tensor creation: ``zeros``, ``ones``, ``full`` (from a shape), ``zeros_like``,
``ones_like``, ``full_like`` (from another tensor), ``arange``.

Shapes are ``ShapeExpr`` operands (Python tuples are converted); fill values are
scalars (a ``PrimValue`` or a rank-0 tensor); ``arange`` takes ``start``/``end``/``step``
as ``PrimValue`` operands, like TVM.
"""

from __future__ import annotations

import math
from typing import Any

from ...core import dtype as dt
from ...tir import expr as E
from ..expr import Call, Expr, PrimValue
from ..op import INJECTIVE, AttrSpec, conv_dtype, make_call, register_op
from ..struct_info import PrimStructInfo, ShapeStructInfo, StructInfo, TensorStructInfo
from ..struct_info_analysis import const_value, format_dim, simplify
from ._common import (
    arg_sinfo,
    conv_required_dtype,
    fail,
    scalar_dtype,
    scalar_sinfo,
    shape_values,
    tensor,
    tensor_arg,
    to_prim_value,
    to_shape_expr,
    with_dtype,
)


def _from_shape(call: Call, dtype: str) -> TensorStructInfo:
    values = shape_values(call, 0)
    if values is None:
        s = arg_sinfo(call, 0)
        assert isinstance(s, ShapeStructInfo)
        return TensorStructInfo(dtype=dtype, ndim=s.ndim)
    for d in values:
        v = const_value(d)
        if v is not None and v < 0:
            raise fail(call, f"shape dimensions must be non-negative, got {format_dim(d)}")
    return tensor(values, dtype)


def _canonicalize_shape(operands: list, attrs: dict, sinfo_args: list) -> tuple:
    operands[0] = to_shape_expr(operands[0], "shape")
    if len(operands) > 1:
        operands[1] = to_prim_value(operands[1], "fill_value",
                                    attrs.get("dtype") if attrs.get("dtype") != "void" else None)
    return operands, attrs, sinfo_args


def _infer_constant_fill(call: Call, ctx: Any) -> StructInfo:
    return _from_shape(call, call.attrs["dtype"])


for _name in ("zeros", "ones"):
    register_op(_name, ["shape"], [AttrSpec("dtype", convert=conv_required_dtype)],
                pattern=INJECTIVE, extra={"canonicalize": _canonicalize_shape},
                doc=f"R.{_name}(shape, dtype): a tensor of {_name}.")(_infer_constant_fill)


@register_op("full", ["shape", "fill_value"], [AttrSpec("dtype", "void", conv_dtype)],
             pattern=INJECTIVE, extra={"canonicalize": _canonicalize_shape})
def _infer_full(call: Call, ctx: Any) -> StructInfo:
    """R.full(shape, fill_value, dtype=None): a tensor filled with a scalar (dtype defaults
    to the fill value's)."""
    fill = scalar_sinfo(call, 1)
    dtype = call.attrs["dtype"]
    return _from_shape(call, scalar_dtype(fill) if dtype == "void" else dtype)


def _canonicalize_like(operands: list, attrs: dict, sinfo_args: list) -> tuple:
    if len(operands) > 1:
        dtype = attrs.get("dtype")
        if dtype in (None, "void") and isinstance(operands[0], Expr):
            dtype = getattr(operands[0].struct_info, "dtype", None) or None
        operands[1] = to_prim_value(operands[1], "fill_value", dtype)
    return operands, attrs, sinfo_args


def _infer_like(call: Call, ctx: Any) -> StructInfo:
    x = tensor_arg(call, 0)
    if len(call.args) > 1:
        scalar_sinfo(call, 1)
    dtype = call.attrs["dtype"]
    return x if dtype == "void" else with_dtype(x, dtype)


for _name, _what in (("zeros_like", "zeros"), ("ones_like", "ones")):
    register_op(_name, ["x"], [AttrSpec("dtype", "void", conv_dtype)], pattern=INJECTIVE,
                doc=f"R.{_name}(x, dtype=None): {_what} shaped like x.")(_infer_like)
register_op("full_like", ["x", "fill_value"], [AttrSpec("dtype", "void", conv_dtype)],
            pattern=INJECTIVE, extra={"canonicalize": _canonicalize_like},
            doc="R.full_like(x, fill_value, dtype=None): a scalar repeated in x's shape.",
            )(_infer_like)


def _prim(call: Call, i: int) -> PrimStructInfo:
    s = arg_sinfo(call, i)
    if not isinstance(s, PrimStructInfo):
        raise fail(call, f"start, end and step must be scalars (R.prim_value), got {s}")
    return s


def _value_of(call: Call, i: int) -> int | float | E.PrimExpr | None:
    arg = call.args[i]
    value = arg.value if isinstance(arg, PrimValue) else _prim(call, i).value
    if isinstance(value, (E.IntImm, E.FloatImm)):
        return value.value
    return value


def _canonicalize_arange(operands: list, attrs: dict, sinfo_args: list) -> tuple:
    return [to_prim_value(v, "R.arange: bound") for v in operands], attrs, sinfo_args


@register_op("arange", ["start", "end", "step"], [AttrSpec("dtype", "void", conv_dtype)],
             pattern=INJECTIVE, extra={"canonicalize": _canonicalize_arange})
def _infer_arange(call: Call, ctx: Any) -> StructInfo:
    """R.arange(start, end, step, dtype): the 1-D sequence start, start + step, ... < end."""
    prims = [_prim(call, i) for i in range(3)]
    dtype = call.attrs["dtype"]
    if dtype == "void":
        dtype = "int64" if all(dt.is_integer(p.dtype) for p in prims) else "float32"
    start, end, step = (_value_of(call, i) for i in range(3))
    if isinstance(step, (int, float)) and step == 0:
        raise fail(call, "step must not be 0")
    numbers = (int, float)
    if all(isinstance(v, numbers) for v in (start, end, step)):
        length = max(0, math.ceil((end - start) / step))
        return TensorStructInfo(shape=(E.const(length, "int64"),), dtype=dtype)
    if isinstance(step, int) and step > 0 and all(
            isinstance(v, int) or (isinstance(v, E.PrimExpr) and dt.is_integer(v.dtype))
            for v in (start, end)):
        length = simplify(E.max_((E.convert(end, "int64") - start + (step - 1)) // step,
                                  E.const(0, "int64")))
        return TensorStructInfo(shape=(length,), dtype=dtype)
    return TensorStructInfo(dtype=dtype, ndim=1)


def zeros(shape: Any, dtype: str) -> Expr:
    """``R.zeros(shape, dtype)``."""
    return make_call("zeros", shape, dtype=dtype)


def ones(shape: Any, dtype: str) -> Expr:
    """``R.ones(shape, dtype)``."""
    return make_call("ones", shape, dtype=dtype)


def full(shape: Any, fill_value: Any, dtype: str | None = None) -> Expr:
    """``R.full(shape, fill_value, dtype)``; a Python number becomes a ``PrimValue``."""
    return make_call("full", shape, fill_value, dtype=dtype)


def zeros_like(x: Expr, dtype: str | None = None) -> Expr:
    """``R.zeros_like(x, dtype)``."""
    return make_call("zeros_like", x, dtype=dtype)


def ones_like(x: Expr, dtype: str | None = None) -> Expr:
    """``R.ones_like(x, dtype)``."""
    return make_call("ones_like", x, dtype=dtype)


def full_like(x: Expr, fill_value: Any, dtype: str | None = None) -> Expr:
    """``R.full_like(x, fill_value, dtype)``."""
    return make_call("full_like", x, fill_value, dtype=dtype)


def arange(start: Any, end: Any = None, step: Any = 1, dtype: str | None = None) -> Expr:
    """``R.arange(start, end, step, dtype)``; ``arange(n)`` counts from 0. The dtype
    defaults to int64 for integer bounds, else float32."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        ints = all(isinstance(v, int) or (isinstance(v, E.PrimExpr) and dt.is_integer(v.dtype))
                   for v in (start, end, step))
        dtype = "int64" if ints else "float32"
    return make_call("arange", *(to_prim_value(v, "R.arange: bound") for v in (start, end, step)),
                     dtype=dtype)


__all__ = ["zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "arange"]

"""Reductions: ``sum``, ``mean``, ``max``, ``min``, ``prod``, ``variance`` over
``axis`` (an int, a list, or None for all axes) with ``keepdims``; ``argmax`` and
``argmin`` over one axis (or the flattened tensor) giving ``int64`` indices."""

from __future__ import annotations

from typing import Any, Sequence

from ...tir import expr as E
from ..expr import Call, Expr
from ..op import COMM_REDUCE, AttrSpec, conv_bool, conv_int, make_call, register_op
from ..struct_info import StructInfo, TensorStructInfo
from ._common import conv_axes, fail, normalize_axes, normalize_axis, require_float, tensor_arg

_REDUCTIONS = {
    "sum": "sum of the elements",
    "mean": "arithmetic mean of the elements",
    "max": "largest element",
    "min": "smallest element",
    "prod": "product of the elements",
    "variance": "population variance of the elements",
}


def reduce_sinfo(call: Call, x: TensorStructInfo, axes: Sequence[int] | None, keepdims: bool,
                 dtype: str) -> TensorStructInfo:
    """The struct info of reducing ``x`` over ``axes`` (None: all) with ``keepdims``."""
    if x.ndim < 0:
        return TensorStructInfo(dtype=dtype, vdevice=x.vdevice)
    reduced = set(range(x.ndim)) if axes is None else set(normalize_axes(call, axes, x.ndim))
    out_ndim = x.ndim if keepdims else x.ndim - len(reduced)
    if x.shape is None:
        return TensorStructInfo(dtype=dtype, ndim=out_ndim, vdevice=x.vdevice)
    one = E.const(1, "int64")
    dims = []
    for k, d in enumerate(x.shape):
        if k not in reduced:
            dims.append(d)
        elif keepdims:
            dims.append(one)
    return TensorStructInfo(shape=tuple(dims), dtype=dtype, vdevice=x.vdevice)


def _register_reduction(name: str, doc: str) -> None:
    def infer(call: Call, ctx: Any) -> StructInfo:
        x = tensor_arg(call, 0)
        if name in ("mean", "variance"):
            require_float(call, x)
        return reduce_sinfo(call, x, call.attrs["axis"], call.attrs["keepdims"], x.dtype)

    register_op(name, ["x"], [AttrSpec("axis", None, conv_axes),
                              AttrSpec("keepdims", False, conv_bool)],
                pattern=COMM_REDUCE,
                doc=f"R.{name}(x, axis=None, keepdims=False): the {doc} over axis.")(infer)


for _name, _doc in _REDUCTIONS.items():
    _register_reduction(_name, _doc)


def _infer_arg_reduce(call: Call, ctx: Any) -> StructInfo:
    x = tensor_arg(call, 0)
    axis = call.attrs["axis"]
    if x.ndim == 0 and axis is not None:
        raise fail(call, f"axis {axis} is out of range for a tensor of rank 0")
    if axis is not None and x.ndim >= 0:
        normalize_axis(call, axis, x.ndim)
    return reduce_sinfo(call, x, None if axis is None else (axis,), call.attrs["keepdims"],
                        "int64")


for _name in ("argmax", "argmin"):
    register_op(_name, ["x"], [
        AttrSpec("axis", None, lambda v, o, a: None if v is None else conv_int(v, o, a)),
        AttrSpec("keepdims", False, conv_bool),
        AttrSpec("select_last_index", False, conv_bool),
    ], pattern=COMM_REDUCE,
        doc=f"R.{_name}(x, axis=None, keepdims=False, select_last_index=False): int64 "
            f"index of the {'largest' if _name == 'argmax' else 'smallest'} element along "
            "axis (the last one among equals with select_last_index, else the first).",
    )(_infer_arg_reduce)


def _builder(name: str):
    def build(x: Expr, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Expr:
        return make_call(name, x, axis=axis, keepdims=keepdims)

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"``R.{name}(x, axis, keepdims)``: the {_REDUCTIONS[name]} over ``axis``."
    return build


def _arg_builder(name: str):
    def build(x: Expr, axis: int | None = None, keepdims: bool = False,
              select_last_index: bool = False) -> Expr:
        return make_call(name, x, axis=axis, keepdims=keepdims,
                         select_last_index=select_last_index)

    build.__name__ = build.__qualname__ = name
    build.__doc__ = (f"``R.{name}(x, axis, keepdims, select_last_index)``: the index of the "
                     "extreme element along ``axis``.")
    return build


sum = _builder("sum")
mean = _builder("mean")
max = _builder("max")
min = _builder("min")
prod = _builder("prod")
variance = _builder("variance")
argmax = _arg_builder("argmax")
argmin = _arg_builder("argmin")

__all__ = [*_REDUCTIONS, "argmax", "argmin", "reduce_sinfo"]

"""Reductions over axes: sum, prod, max, min, mean, variance, argmax/argmin, all/any.

A reduction stage keeps one ``Reduce`` as its whole body (as schedules expect); the
reduced axes are ``k<axis>``, the kept ones ``ax0, ax1, ...``. ``axis=None`` reduces
every axis; ``keepdims`` keeps reduced axes with size 1. Sums and products of floats
narrower than 32 bits accumulate in float32 (``accumulator_dtype``) and are rounded to
the input's dtype once, in the stage after the reduction.
"""

from __future__ import annotations

from typing import Any, Callable

from ...core import dtype as dt
from ...core.diagnostics import IRTypeError
from ..expr import PrimExpr, cast, const, select
from ..intrin import isnan
from ..te import tensor as te
from ..te.tensor import Tensor, compute
from .transform import reshape
from .utils import (
    COMM_REDUCE,
    COMM_REDUCE_IDX,
    accumulator_dtype,
    axis_names,
    normalize_axes,
    round_to,
)
from .utils import prod as shape_prod


def _check(data: Any, what: str) -> Tensor:
    if not isinstance(data, Tensor):
        raise IRTypeError(f"topi.{what} takes a tensor, got {type(data).__name__}")
    return data


def _reduce_shape(data: Tensor, axes: list[int], keepdims: bool) -> tuple[PrimExpr, ...]:
    out = []
    for d, s in enumerate(data.shape):
        if d in axes:
            if keepdims:
                out.append(const(1, s.dtype))
        else:
            out.append(s)
    return tuple(out)


def comm_reduce(data: Tensor, axis: Any, keepdims: bool,
                reducer: Callable[..., PrimExpr], name: str,
                fvalue: Callable[[PrimExpr], PrimExpr] | None = None,
                tag: str = COMM_REDUCE) -> Tensor:
    """A reduction stage: ``reducer(fvalue(data[...]), axis=[k...])`` for each kept
    position."""
    axes = normalize_axes(axis, data.ndim)
    out_shape = _reduce_shape(data, axes, keepdims)
    raxes = {d: te.reduce_axis((const(0, data.shape[d].dtype), data.shape[d]), name=f"k{d}")
             for d in axes}

    def fcompute(*idx: PrimExpr) -> PrimExpr:
        src, pos = [], 0
        for d in range(data.ndim):
            if d in raxes:
                src.append(raxes[d].var)
                if keepdims:
                    pos += 1
            else:
                src.append(idx[pos])
                pos += 1
        value = data[tuple(src)]
        if fvalue is not None:
            value = fvalue(value)
        if not raxes:
            return value
        return reducer(value, axis=[raxes[d] for d in axes])

    return compute(out_shape, fcompute, name=name, tag=tag,
                   axis_names=axis_names(len(out_shape)))


def _accumulate(data: Tensor, axis: Any, keepdims: bool, reducer: Callable[..., PrimExpr],
                name: str) -> Tensor:
    """A sum or product stage in the accumulator dtype of ``data``."""
    acc = accumulator_dtype(data.dtype)
    fvalue = None if acc == data.dtype else (lambda v: cast(v, acc))
    return comm_reduce(data, axis, keepdims, reducer, name, fvalue=fvalue)


def sum(data: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The sum over ``axis``."""
    data = _check(data, "sum")
    return round_to(_accumulate(data, axis, keepdims, te.sum, f"{data.name}_red"),
                    data.dtype)


def prod(data: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The product over ``axis``."""
    data = _check(data, "prod")
    return round_to(_accumulate(data, axis, keepdims, te.prod, f"{data.name}_red"),
                    data.dtype)


def max(data: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The maximum over ``axis``."""
    data = _check(data, "max")
    return comm_reduce(data, axis, keepdims, te.max, f"{data.name}_red")


def min(data: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The minimum over ``axis``."""
    data = _check(data, "min")
    return comm_reduce(data, axis, keepdims, te.min, f"{data.name}_red")


def _count(data: Tensor, axes: list[int]) -> PrimExpr:
    dtype = data.shape[0].dtype if data.ndim else "int32"
    return shape_prod([data.shape[d] for d in axes], dtype)


def _divide(total: Tensor, count: PrimExpr, name: str, dtype: str) -> Tensor:
    """``total / count`` (in ``total``'s dtype) rounded to ``dtype``."""
    def fn(*i: PrimExpr) -> PrimExpr:
        v = total[i]
        return cast(v / cast(count, v.dtype), dtype)
    return compute(total.shape, fn, name=name, tag="elemwise",
                   axis_names=axis_names(total.ndim))


def mean(data: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The arithmetic mean over ``axis`` (a sum stage, then a division)."""
    data = _check(data, "mean")
    axes = normalize_axes(axis, data.ndim)
    total = _accumulate(data, axes, keepdims, te.sum, f"{data.name}_red")
    return _divide(total, _count(data, axes), "T_divide", data.dtype)


def variance(data: Tensor, axis: Any = None, keepdims: bool = False,
             unbiased: bool = False) -> Tensor:
    """The variance over ``axis`` (two passes: mean, then mean squared deviation);
    ``unbiased`` divides by ``n - 1``."""
    data = _check(data, "variance")
    if not dt.is_float(data.dtype):
        raise IRTypeError(f"topi.variance needs a floating-point tensor, got {data.dtype}")
    axes = normalize_axes(axis, data.ndim)
    count = _count(data, axes)
    total = _accumulate(data, axes, True, te.sum, "T_variance_sum")
    acc = total.dtype
    n = cast(count, acc)

    def fcompute(*idx: PrimExpr) -> PrimExpr:
        raxes = {d: te.reduce_axis((const(0, data.shape[d].dtype), data.shape[d]),
                                   name=f"k{d}") for d in axes}
        src, mean_idx, pos = [], [], 0
        for d in range(data.ndim):
            if d in raxes:
                src.append(raxes[d].var)
                mean_idx.append(const(0, data.shape[d].dtype))
                if keepdims:
                    pos += 1
            else:
                src.append(idx[pos])
                mean_idx.append(idx[pos])
                pos += 1
        diff = cast(data[tuple(src)], acc) - total[tuple(mean_idx)] / n
        return te.sum(diff * diff, axis=[raxes[d] for d in axes])

    out_shape = _reduce_shape(data, axes, keepdims)
    sq = compute(out_shape, fcompute, name="T_variance_sqsum", tag=COMM_REDUCE,
                 axis_names=axis_names(len(out_shape)))
    denom = count - 1 if unbiased else count
    return _divide(sq, denom, "T_variance", data.dtype)


def _arg_reduce_axis(data: Tensor, ax: int, keepdims: bool, kind: str, out_dtype: str,
                     select_last_index: bool) -> Tensor:
    best = comm_reduce(data, [ax], True, te.max if kind == "max" else te.min,
                       f"T_arg{kind}_{kind}")
    extent = data.shape[ax]

    def fcompute(*idx: PrimExpr) -> PrimExpr:
        k = te.reduce_axis((const(0, extent.dtype), extent), name=f"k{ax}")
        src, best_idx, pos = [], [], 0
        for d in range(data.ndim):
            if d == ax:
                src.append(k.var)
                best_idx.append(const(0, extent.dtype))
                if keepdims:
                    pos += 1
            else:
                src.append(idx[pos])
                best_idx.append(idx[pos])
                pos += 1
        value, top = data[tuple(src)], best[tuple(best_idx)]
        hit = value == top
        if dt.is_float(data.dtype):
            # A NaN is the extreme of its row (max and min propagate it): its first (last)
            # position is the answer, as numpy's argmax/argmin give.
            hit = hit | (isnan(value) & isnan(top))
        position = cast(k.var, out_dtype)
        if select_last_index:
            return te.max(select(hit, position, const(-1, out_dtype)), axis=k)
        return te.min(select(hit, position, cast(extent, out_dtype)), axis=k)

    out_shape = _reduce_shape(data, [ax], keepdims)
    return compute(out_shape, fcompute, name=f"T_arg{kind}", tag=COMM_REDUCE_IDX,
                   axis_names=axis_names(len(out_shape)))


def _arg_reduce(data: Tensor, axis: Any, keepdims: bool, kind: str, out_dtype: str,
                select_last_index: bool) -> Tensor:
    if axis is None:
        flat = data if data.ndim == 1 else reshape(data, (_count(data, list(range(data.ndim))),))
        out = _arg_reduce_axis(flat, 0, False, kind, out_dtype, select_last_index)
        return reshape(out, (1,) * data.ndim) if keepdims else out
    if not isinstance(axis, int):
        axis = list(axis)
        if len(axis) != 1:
            raise IRTypeError(f"topi.arg{kind} reduces one axis (or all); got {axis}")
        axis = axis[0]
    ax = normalize_axes(axis, data.ndim)[0]
    return _arg_reduce_axis(data, ax, keepdims, kind, out_dtype, select_last_index)


def argmax(data: Tensor, axis: int | None = None, keepdims: bool = False,
           select_last_index: bool = False, out_dtype: str = "int32") -> Tensor:
    """The index of the largest element along ``axis`` (of the flattened tensor when
    ``axis`` is None); the first one wins unless ``select_last_index``."""
    return _arg_reduce(_check(data, "argmax"), axis, keepdims, "max", out_dtype,
                       select_last_index)


def argmin(data: Tensor, axis: int | None = None, keepdims: bool = False,
           select_last_index: bool = False, out_dtype: str = "int32") -> Tensor:
    """The index of the smallest element along ``axis`` (see :func:`argmax`)."""
    return _arg_reduce(_check(data, "argmin"), axis, keepdims, "min", out_dtype,
                       select_last_index)


def _bool_reduce(data: Tensor, axis: Any, keepdims: bool, kind: str) -> Tensor:
    red = comm_reduce(data, axis, keepdims, te.min if kind == "all" else te.max,
                      f"T_{kind}_red",
                      fvalue=lambda v: cast(v if dt.is_bool(v.dtype) else v != 0, "int8"))
    return compute(red.shape, lambda *i: red[i] != const(0, "int8"), name=f"T_{kind}",
                   tag="elemwise", axis_names=axis_names(red.ndim))


def all(data: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """True where every element along ``axis`` is true (non-zero)."""
    return _bool_reduce(_check(data, "all"), axis, keepdims, "all")


def any(data: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """True where some element along ``axis`` is true (non-zero)."""
    return _bool_reduce(_check(data, "any"), axis, keepdims, "any")

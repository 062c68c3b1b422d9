"""Operators that read or write tensors at run-time indices, and scans: ``gather_elements``,
``gather_nd``, ``scatter_elements``, ``scatter_nd``, ``one_hot``, ``trilu``, ``eye_like``,
``topk``, ``cumsum``, ``cumprod``, ``reverse_sequence``.

Index operands are integer tensors read at run time; a negative index counts from the end
of its axis. Operands that fix an output shape (``topk``'s ``k``, ``one_hot``'s
``depth``) are int64 scalars (``R.prim_value``): constants, or symbolic variables bound
at run time (``R.match_cast``).
"""

from __future__ import annotations

from typing import Any

from ...core import dtype as dt
from ...tir.expr import PrimExpr
from ..expr import Call, Expr
from ..op import (
    INJECTIVE,
    OPAQUE,
    AttrSpec,
    conv_bool,
    conv_choice,
    conv_int,
    make_call,
    register_op,
)
from ..struct_info import PrimStructInfo, StructInfo, TensorStructInfo, TupleStructInfo
from ..struct_info_analysis import const_value, format_sinfo, prove_not_equal
from ._common import (
    conv_required_dtype,
    fail,
    normalize_axis,
    scalar_sinfo,
    tensor,
    tensor_arg,
    to_prim_value,
)

REDUCTIONS = ("none", "add", "mul", "max", "min")


def _require_int(call: Call, s: TensorStructInfo, what: str) -> None:
    if s.dtype and not dt.is_integer(s.dtype):
        raise fail(call, f"{what} must be an integer tensor, got {s.dtype}")


def _same_dtype(call: Call, a: TensorStructInfo, b: TensorStructInfo, what: str) -> None:
    if a.dtype and b.dtype and a.dtype != b.dtype:
        raise fail(call, f"{what} has dtype {b.dtype}, the data {a.dtype}; insert R.astype")


def _check_dims(call: Call, got: Any, want: Any, what: str) -> None:
    for k, (g, w) in enumerate(zip(got, want)):
        if prove_not_equal(g, w):
            raise fail(call, f"{what}: dimension {k} is {g}, expected {w}")


# ---------------------------------------------------------------------------------
# gathers
# ---------------------------------------------------------------------------------


@register_op("gather_elements", ["data", "indices"], [AttrSpec("axis", 0, conv_int)],
             pattern=INJECTIVE)
def _infer_gather_elements(call: Call, ctx: Any) -> StructInfo:
    """R.gather_elements(data, indices, axis=0): ``out[i] = data[i with i[axis] replaced by
    indices[i]]``; the result has the shape of ``indices``."""
    x, idx = tensor_arg(call, 0), tensor_arg(call, 1)
    _require_int(call, idx, "indices")
    if x.ndim >= 0 and idx.ndim >= 0 and x.ndim != idx.ndim:
        raise fail(call, f"data and indices must have the same rank, got {format_sinfo(x)} "
                         f"and {format_sinfo(idx)}")
    if x.ndim >= 0:
        normalize_axis(call, call.attrs["axis"], x.ndim)
    return TensorStructInfo(shape=idx.shape, dtype=x.dtype, ndim=idx.ndim, vdevice=x.vdevice)


@register_op("gather_nd", ["data", "indices"], [AttrSpec("batch_dims", 0, conv_int)],
             pattern=INJECTIVE)
def _infer_gather_nd(call: Call, ctx: Any) -> StructInfo:
    """R.gather_nd(data, indices, batch_dims=0): slices of ``data`` addressed by the last
    axis of ``indices`` (ONNX GatherND); the first ``batch_dims`` axes are shared."""
    x, idx = tensor_arg(call, 0), tensor_arg(call, 1)
    _require_int(call, idx, "indices")
    b = call.attrs["batch_dims"]
    if x.shape is None or idx.shape is None:
        return TensorStructInfo(dtype=x.dtype, vdevice=x.vdevice)
    if idx.ndim < 1:
        raise fail(call, "indices must have rank at least 1")
    last = const_value(idx.shape[-1])
    if last is None:
        raise fail(call, "the last dimension of indices must be a constant")
    if not 0 <= b < min(x.ndim, idx.ndim) or b + last > x.ndim:
        raise fail(call, f"batch_dims {b} with index tuples of {last} do not fit data of "
                         f"rank {x.ndim} and indices of rank {idx.ndim}")
    _check_dims(call, idx.shape[:b], x.shape[:b], "batch dimensions of indices")
    return tensor([*idx.shape[:-1], *x.shape[b + last:]], x.dtype, vdevice=x.vdevice)


# ---------------------------------------------------------------------------------
# scatters
# ---------------------------------------------------------------------------------


@register_op("scatter_elements", ["data", "indices", "updates"], [
    AttrSpec("axis", 0, conv_int),
    AttrSpec("reduction", "none", conv_choice(*REDUCTIONS)),
], pattern=OPAQUE)
def _infer_scatter_elements(call: Call, ctx: Any) -> StructInfo:
    """R.scatter_elements(data, indices, updates, axis=0, reduction="none"): a copy of
    ``data`` where ``out[i with i[axis] = indices[i]]`` is ``updates[i]`` (or combined
    with it by ``reduction``), in row-major order of ``indices``."""
    x, idx, upd = tensor_arg(call, 0), tensor_arg(call, 1), tensor_arg(call, 2)
    _require_int(call, idx, "indices")
    _same_dtype(call, x, upd, "updates")
    if x.ndim >= 0:
        normalize_axis(call, call.attrs["axis"], x.ndim)
        for s, what in ((idx, "indices"), (upd, "updates")):
            if s.ndim >= 0 and s.ndim != x.ndim:
                raise fail(call, f"{what} must have the rank of data ({x.ndim}), got "
                                 f"{format_sinfo(s)}")
    if idx.shape is not None and upd.shape is not None:
        _check_dims(call, upd.shape, idx.shape, "updates")
    return x


@register_op("scatter_nd", ["data", "indices", "updates"], [
    AttrSpec("reduction", "none", conv_choice(*REDUCTIONS)),
], pattern=OPAQUE)
def _infer_scatter_nd(call: Call, ctx: Any) -> StructInfo:
    """R.scatter_nd(data, indices, updates, reduction="none"): a copy of ``data`` where
    the slice at each index tuple (last axis of ``indices``) is replaced by (or combined
    with) the matching slice of ``updates``, in row-major order."""
    x, idx, upd = tensor_arg(call, 0), tensor_arg(call, 1), tensor_arg(call, 2)
    _require_int(call, idx, "indices")
    _same_dtype(call, x, upd, "updates")
    if x.shape is not None and idx.shape is not None and upd.shape is not None:
        if idx.ndim < 1:
            raise fail(call, "indices must have rank at least 1")
        last = const_value(idx.shape[-1])
        if last is None or last > x.ndim:
            raise fail(call, f"the last dimension of indices must be a constant at most the "
                             f"rank of data ({x.ndim})")
        want = [*idx.shape[:-1], *x.shape[last:]]
        if len(want) != upd.ndim:
            raise fail(call, f"updates must have rank {len(want)}, got {format_sinfo(upd)}")
        _check_dims(call, upd.shape, want, "updates")
    return x


# ---------------------------------------------------------------------------------
# one_hot, trilu, eye_like
# ---------------------------------------------------------------------------------


def _canonicalize_dim_operand(operands: list, attrs: dict, sinfo_args: list) -> tuple:
    # The last operand is a dimension: an int or int64 expression becomes a PrimValue.
    operands[-1] = to_prim_value(operands[-1], "a dimension", "int64")
    return operands, attrs, sinfo_args


def _dim_operand(call: Call, i: int, what: str) -> Any:
    """The value of a dimension operand (an int64 PrimValue), None when unknown."""
    s = scalar_sinfo(call, i)
    if not isinstance(s, PrimStructInfo) or not dt.is_integer(s.dtype):
        raise fail(call, f"{what} must be an integer R.prim_value, got {format_sinfo(s)}")
    c = const_value(s.value) if s.value is not None else None
    if c is not None and c < 0:
        raise fail(call, f"{what} must be non-negative, got {c}")
    return s.value


@register_op("one_hot", ["indices", "values", "depth"], [AttrSpec("axis", -1, conv_int)],
             pattern=INJECTIVE, extra={"canonicalize": _canonicalize_dim_operand})
def _infer_one_hot(call: Call, ctx: Any) -> StructInfo:
    """R.one_hot(indices, values, depth, axis=-1): ``values[1]`` where the position along
    the new axis ``axis`` (of size ``depth``, an int64 scalar) equals the index (negative
    indices count from ``depth``), ``values[0]`` elsewhere; ``values`` holds (off, on)."""
    idx, values = tensor_arg(call, 0), tensor_arg(call, 1)
    depth = _dim_operand(call, 2, "depth")
    if values.shape is not None and (values.ndim != 1 or prove_not_equal(values.shape[0], 2)):
        raise fail(call, f"values must hold 2 elements (off, on), got {format_sinfo(values)}")
    if idx.ndim < 0:
        return TensorStructInfo(dtype=values.dtype, vdevice=values.vdevice)
    axis = normalize_axis(call, call.attrs["axis"], idx.ndim + 1)
    if idx.shape is None or depth is None:
        return TensorStructInfo(dtype=values.dtype, ndim=idx.ndim + 1, vdevice=values.vdevice)
    dims = list(idx.shape)
    dims.insert(axis, depth)
    return tensor(dims, values.dtype, vdevice=values.vdevice)


@register_op("trilu", ["x", "k"], [AttrSpec("upper", True, conv_bool)], pattern=INJECTIVE)
def _infer_trilu(call: Call, ctx: Any) -> StructInfo:
    """R.trilu(x, k, upper=True): the upper (lower) triangle of the last two axes of ``x``
    from diagonal ``k`` (a 0-d integer tensor read at run time), zeros elsewhere."""
    x, k = tensor_arg(call, 0), tensor_arg(call, 1)
    _require_int(call, k, "k")
    if k.ndim > 0:
        raise fail(call, f"k must be a 0-d tensor, got {format_sinfo(k)}")
    if 0 <= x.ndim < 2:
        raise fail(call, f"x must have rank 2 or more, got {format_sinfo(x)}")
    return x


@register_op("eye_like", ["x"], [
    AttrSpec("k", 0, conv_int),
    AttrSpec("dtype", convert=conv_required_dtype),
], pattern=INJECTIVE)
def _infer_eye_like(call: Call, ctx: Any) -> StructInfo:
    """R.eye_like(x, k=0, dtype): ones on diagonal ``k`` of a 2-d tensor shaped like
    ``x``, zeros elsewhere."""
    x = tensor_arg(call, 0)
    if x.ndim >= 0 and x.ndim != 2:
        raise fail(call, f"x must have rank 2, got {format_sinfo(x)}")
    return TensorStructInfo(shape=x.shape, dtype=call.attrs["dtype"], ndim=2,
                            vdevice=x.vdevice)


# ---------------------------------------------------------------------------------
# topk, scans, reverse_sequence
# ---------------------------------------------------------------------------------


@register_op("topk", ["x", "k"], [
    AttrSpec("axis", -1, conv_int),
    AttrSpec("largest", True, conv_bool),
], pattern=OPAQUE, extra={"canonicalize": _canonicalize_dim_operand})
def _infer_topk(call: Call, ctx: Any) -> StructInfo:
    """R.topk(x, k, axis=-1, largest=True): (values, int64 indices) of the ``k`` (an int64
    scalar) largest (smallest) elements along ``axis``, sorted, equal values in index
    order."""
    x = tensor_arg(call, 0)
    k = _dim_operand(call, 1, "k")
    if x.ndim < 0:
        return TupleStructInfo(fields=(x, TensorStructInfo(dtype="int64")))
    axis = normalize_axis(call, call.attrs["axis"], x.ndim)
    if x.shape is None or k is None:
        return TupleStructInfo(fields=(
            TensorStructInfo(dtype=x.dtype, ndim=x.ndim, vdevice=x.vdevice),
            TensorStructInfo(dtype="int64", ndim=x.ndim, vdevice=x.vdevice)))
    n, kc = const_value(x.shape[axis]), const_value(k)
    if n is not None and kc is not None and kc > n:
        raise fail(call, f"k {kc} exceeds the size {n} of axis {axis}")
    dims = list(x.shape)
    dims[axis] = k
    return TupleStructInfo(fields=(tensor(dims, x.dtype, vdevice=x.vdevice),
                                   tensor(dims, "int64", vdevice=x.vdevice)))


_SCAN_ATTRS = [
    AttrSpec("axis", 0, conv_int),
    AttrSpec("exclusive", False, conv_bool),
    AttrSpec("reverse", False, conv_bool),
]


def _infer_scan(call: Call, ctx: Any) -> StructInfo:
    x = tensor_arg(call, 0)
    if len(call.args) > 1:
        axis = tensor_arg(call, 1)
        _require_int(call, axis, "axis_value")
        if axis.ndim > 0:
            raise fail(call, f"axis_value must be a 0-d tensor, got {format_sinfo(axis)}")
        if x.ndim == 0:
            raise fail(call, "x must have rank 1 or more")
    elif x.ndim >= 0:
        normalize_axis(call, call.attrs["axis"], x.ndim)
    return x


_SCAN_DOC = ("R.{name}(x, axis_value=None, axis=0, exclusive=False, reverse=False): running "
             "{what} along ``axis`` (exclusive: without the element itself; reverse: from "
             "the end); when the 0-d integer tensor ``axis_value`` is given, the axis is "
             "read from it at run time instead.")
for _name, _what in (("cumsum", "sums"), ("cumprod", "products")):
    register_op(_name, ["x", "axis_value"], _SCAN_ATTRS, pattern=OPAQUE,
                optional=["axis_value"],
                doc=_SCAN_DOC.format(name=_name, what=_what))(_infer_scan)


@register_op("reverse_sequence", ["x", "seq_lengths"], [
    AttrSpec("batch_axis", 1, conv_int),
    AttrSpec("time_axis", 0, conv_int),
], pattern=INJECTIVE)
def _infer_reverse_sequence(call: Call, ctx: Any) -> StructInfo:
    """R.reverse_sequence(x, seq_lengths, batch_axis=1, time_axis=0): for each batch entry
    ``b``, the first ``seq_lengths[b]`` steps along ``time_axis`` reversed, the rest
    kept."""
    x, lens = tensor_arg(call, 0), tensor_arg(call, 1)
    _require_int(call, lens, "seq_lengths")
    if x.ndim >= 0:
        b = normalize_axis(call, call.attrs["batch_axis"], x.ndim, "batch_axis")
        t = normalize_axis(call, call.attrs["time_axis"], x.ndim, "time_axis")
        if b == t:
            raise fail(call, "batch_axis and time_axis must differ")
        if lens.ndim >= 0 and lens.ndim != 1:
            raise fail(call, f"seq_lengths must be 1-d, got {format_sinfo(lens)}")
        if x.shape is not None and lens.shape is not None:
            _check_dims(call, lens.shape, [x.shape[b]], "seq_lengths")
    return x


# ---------------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------------


def gather_elements(data: Expr, indices: Expr, axis: int = 0) -> Expr:
    """``R.gather_elements(data, indices, axis)``."""
    return make_call("gather_elements", data, indices, axis=axis)


def gather_nd(data: Expr, indices: Expr, batch_dims: int = 0) -> Expr:
    """``R.gather_nd(data, indices, batch_dims)``."""
    return make_call("gather_nd", data, indices, batch_dims=batch_dims)


def scatter_elements(data: Expr, indices: Expr, updates: Expr, axis: int = 0,
                     reduction: str = "none") -> Expr:
    """``R.scatter_elements(data, indices, updates, axis, reduction)``."""
    return make_call("scatter_elements", data, indices, updates, axis=axis,
                     reduction=reduction)


def scatter_nd(data: Expr, indices: Expr, updates: Expr, reduction: str = "none") -> Expr:
    """``R.scatter_nd(data, indices, updates, reduction)``."""
    return make_call("scatter_nd", data, indices, updates, reduction=reduction)


def one_hot(indices: Expr, values: Expr, depth: int | PrimExpr, axis: int = -1) -> Expr:
    """``R.one_hot(indices, values, depth, axis)``; ``depth`` an int or int64 expression."""
    return make_call("one_hot", indices, values, depth, axis=axis)


def trilu(x: Expr, k: Expr, upper: bool = True) -> Expr:
    """``R.trilu(x, k, upper)``."""
    return make_call("trilu", x, k, upper=upper)


def eye_like(x: Expr, dtype: str, k: int = 0) -> Expr:
    """``R.eye_like(x, k, dtype)``."""
    return make_call("eye_like", x, k=k, dtype=dtype)


def topk(x: Expr, k: int | PrimExpr, axis: int = -1, largest: bool = True) -> Expr:
    """``R.topk(x, k, axis, largest)``: a (values, indices) tuple; ``k`` an int or int64
    expression."""
    return make_call("topk", x, k, axis=axis, largest=largest)


def cumsum(x: Expr, axis: int | Expr = 0, exclusive: bool = False,
           reverse: bool = False) -> Expr:
    """``R.cumsum(x, ...)`` along ``axis``: an int, or a 0-d tensor read at run time."""
    if isinstance(axis, Expr):
        return make_call("cumsum", x, axis, exclusive=exclusive, reverse=reverse)
    return make_call("cumsum", x, axis=axis, exclusive=exclusive, reverse=reverse)


def cumprod(x: Expr, axis: int | Expr = 0, exclusive: bool = False,
            reverse: bool = False) -> Expr:
    """``R.cumprod(x, ...)`` along ``axis``: an int, or a 0-d tensor read at run time."""
    if isinstance(axis, Expr):
        return make_call("cumprod", x, axis, exclusive=exclusive, reverse=reverse)
    return make_call("cumprod", x, axis=axis, exclusive=exclusive, reverse=reverse)


def reverse_sequence(x: Expr, seq_lengths: Expr, batch_axis: int = 1,
                     time_axis: int = 0) -> Expr:
    """``R.reverse_sequence(x, seq_lengths, batch_axis, time_axis)``."""
    return make_call("reverse_sequence", x, seq_lengths, batch_axis=batch_axis,
                     time_axis=time_axis)


__all__ = [
    "gather_elements", "gather_nd", "scatter_elements", "scatter_nd", "one_hot", "trilu",
    "eye_like", "topk", "cumsum", "cumprod", "reverse_sequence",
]

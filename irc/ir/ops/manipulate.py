"""Tensor manipulation: ``reshape``, ``permute_dims``, ``expand_dims``, ``squeeze``,
``flatten``, ``concat``, ``split``, ``strided_slice``, ``take``, ``broadcast_to``,
``tile``, ``repeat``.

Shape operands (``reshape``, ``broadcast_to``) are ``ShapeExpr`` values; builders and
the parser may pass a Python tuple, which becomes one (for ``reshape`` a ``-1`` is
resolved at construction when the input's shape is already known, else at inference).
``squeeze`` without axes removes only dimensions provably equal to 1. ``strided_slice``
takes integer (not symbolic) begin/end/strides.
"""

from __future__ import annotations

from typing import Any, Sequence

from ...core import dtype as dt
from ...core.diagnostics import IRTypeError
from ...tir import expr as E
from ...tir.expr import PrimExpr
from ..expr import Call, Expr, ShapeExpr
from ..op import (
    INJECTIVE,
    AttrSpec,
    _err,
    _py_int,
    conv_bool,
    conv_choice,
    conv_int,
    make_call,
    register_op,
)
from ..struct_info import ShapeStructInfo, StructInfo, TensorStructInfo, TupleStructInfo
from ..struct_info_analysis import (
    const_value,
    exact_divide,
    format_dim,
    format_shape,
    prove_not_equal,
    shape_product,
    simplify,
)
from ._common import (
    arg_sinfo,
    conv_axes,
    conv_int_list,
    conv_opt_int_list,
    fail,
    normalize_axes,
    normalize_axis,
    same_dtype,
    shape_values,
    tensor,
    tensor_arg,
    to_shape_expr,
    to_tuple_expr,
    tuple_fields,
)


def _unknown(x: TensorStructInfo, dtype: str | None = None, ndim: int = -1) -> TensorStructInfo:
    return TensorStructInfo(dtype=x.dtype if dtype is None else dtype, ndim=ndim,
                            vdevice=x.vdevice)


# ---------------------------------------------------------------------------------
# reshape
# ---------------------------------------------------------------------------------


def _resolve_reshape(call: Call | None, in_shape: Sequence[PrimExpr],
                     target: Sequence[PrimExpr]) -> tuple[PrimExpr, ...]:
    """``target`` with a ``-1`` replaced by the dimension that keeps the element count."""
    def error(message: str) -> IRTypeError:
        return fail(call, message) if call is not None else IRTypeError(f"R.reshape: {message}")

    neg = [i for i, d in enumerate(target) if const_value(d) == -1]
    for d in target:
        v = const_value(d)
        if v is not None and v < -1:
            raise error(f"shape {format_shape(target)} has the negative dimension {v}; "
                        "only -1 (infer this dimension) is allowed")
    if len(neg) > 1:
        raise error(f"shape {format_shape(target)} has more than one -1")
    total = shape_product(in_shape)
    if not neg:
        count = shape_product(target)
        if prove_not_equal(total, count):
            raise error(f"cannot reshape {format_shape(in_shape)} ({format_dim(total)} "
                        f"elements) to {format_shape(target)} ({format_dim(count)} elements)")
        return tuple(target)
    known = shape_product(d for i, d in enumerate(target) if i != neg[0])
    t, k = const_value(total), const_value(known)
    if t is not None and k is not None and (k == 0 or t % k):
        raise error(f"cannot reshape {format_shape(in_shape)} ({t} elements) to "
                    f"{format_shape(target)}: {t} is not a multiple of {k}")
    inferred = exact_divide(total, known)
    if inferred is None:
        inferred = simplify(E.floordiv(total, known))
    out = list(target)
    out[neg[0]] = inferred
    return tuple(out)


def _canonicalize_reshape(operands: list, attrs: dict, sinfo_args: list) -> tuple:
    x, shape = operands
    if isinstance(shape, (tuple, list)):
        shape = to_shape_expr(shape, "R.reshape")
        in_sinfo = x.struct_info if isinstance(x, Expr) else None
        has_neg = any(const_value(d) == -1 for d in shape.values)
        if has_neg and isinstance(in_sinfo, TensorStructInfo) and in_sinfo.shape is not None:
            try:
                shape = ShapeExpr(values=_resolve_reshape(None, in_sinfo.shape, shape.values))
            except IRTypeError:
                pass  # inference reports it, with the call's location

        operands[1] = shape
    return operands, attrs, sinfo_args


@register_op("reshape", ["x", "shape"], pattern=INJECTIVE,
             extra={"canonicalize": _canonicalize_reshape})
def _infer_reshape(call: Call, ctx: Any) -> StructInfo:
    """R.reshape(x, shape): the same elements in a new shape; one -1 is inferred."""
    x = tensor_arg(call, 0)
    target = shape_values(call, 1)
    if target is None:
        s = arg_sinfo(call, 1)
        return _unknown(x, ndim=s.ndim)  # type: ignore[attr-defined]
    if x.shape is None:
        if any(const_value(d) == -1 for d in target):
            return _unknown(x, ndim=len(target))
        return tensor(target, x.dtype, vdevice=x.vdevice)
    return tensor(_resolve_reshape(call, x.shape, target), x.dtype, vdevice=x.vdevice)


# ---------------------------------------------------------------------------------
# permute_dims, expand_dims, squeeze, flatten
# ---------------------------------------------------------------------------------


@register_op("permute_dims", ["x"], [AttrSpec("axes", None, conv_opt_int_list)],
             pattern=INJECTIVE)
def _infer_permute_dims(call: Call, ctx: Any) -> StructInfo:
    """R.permute_dims(x, axes=None): dimensions reordered (None reverses them)."""
    x = tensor_arg(call, 0)
    axes = call.attrs["axes"]
    if x.ndim < 0:
        return x
    if axes is None:
        axes = tuple(range(x.ndim - 1, -1, -1))
    else:
        if len(axes) != x.ndim:
            raise fail(call, f"axes {list(axes)} must list each of the {x.ndim} axes of a "
                             f"tensor of rank {x.ndim} once")
        axes = normalize_axes(call, axes, x.ndim, "axes")
    if x.shape is None:
        return x
    return TensorStructInfo(shape=tuple(x.shape[a] for a in axes), dtype=x.dtype,
                            vdevice=x.vdevice)


@register_op("expand_dims", ["x"], [AttrSpec("axis", convert=conv_int_list)],
             pattern=INJECTIVE)
def _infer_expand_dims(call: Call, ctx: Any) -> StructInfo:
    """R.expand_dims(x, axis): new dimensions of size 1 at ``axis`` (positions in the
    result)."""
    x = tensor_arg(call, 0)
    axis = call.attrs["axis"]
    if x.ndim < 0:
        return x
    out_ndim = x.ndim + len(axis)
    axes = normalize_axes(call, axis, out_ndim)
    if x.shape is None:
        return _unknown(x, ndim=out_ndim)
    dims = iter(x.shape)
    one = E.const(1, "int64")
    return TensorStructInfo(shape=tuple(one if k in axes else next(dims)
                                        for k in range(out_ndim)),
                            dtype=x.dtype, vdevice=x.vdevice)


@register_op("squeeze", ["x"], [AttrSpec("axis", None, conv_axes)], pattern=INJECTIVE)
def _infer_squeeze(call: Call, ctx: Any) -> StructInfo:
    """R.squeeze(x, axis=None): dimensions of size 1 removed (the given ones, or all that
    are provably 1)."""
    x = tensor_arg(call, 0)
    axis = call.attrs["axis"]
    if x.ndim < 0:
        return x
    if axis is not None:
        axes = normalize_axes(call, axis, x.ndim)
        if x.shape is None:
            return _unknown(x, ndim=x.ndim - len(axes))
        for a in axes:
            if prove_not_equal(x.shape[a], 1):
                raise fail(call, f"cannot squeeze axis {a} of shape {format_shape(x.shape)}: "
                                 f"its size is {format_dim(x.shape[a])}, not 1")
    else:
        if x.shape is None:
            return _unknown(x)
        axes = tuple(k for k, d in enumerate(x.shape) if const_value(d) == 1)
    return TensorStructInfo(shape=tuple(d for k, d in enumerate(x.shape) if k not in axes),
                            dtype=x.dtype, vdevice=x.vdevice)


@register_op("flatten", ["x"], pattern=INJECTIVE)
def _infer_flatten(call: Call, ctx: Any) -> StructInfo:
    """R.flatten(x): all dimensions merged into one."""
    x = tensor_arg(call, 0)
    if x.shape is None:
        return _unknown(x, ndim=1)
    return tensor([shape_product(x.shape)], x.dtype, vdevice=x.vdevice)


# ---------------------------------------------------------------------------------
# concat, split
# ---------------------------------------------------------------------------------


def _canonicalize_concat(operands: list, attrs: dict, sinfo_args: list) -> tuple:
    operands[0] = to_tuple_expr(operands[0])
    return operands, attrs, sinfo_args


@register_op("concat", ["tensors"], [AttrSpec("axis", 0, lambda v, o, a: None if v is None
                                               else conv_int(v, o, a))],
             pattern=INJECTIVE, extra={"canonicalize": _canonicalize_concat})
def _infer_concat(call: Call, ctx: Any) -> StructInfo:
    """R.concat(tensors, axis=0): tensors joined along ``axis`` (None: flattened first)."""
    fields = tuple_fields(call, 0)
    if not fields:
        raise fail(call, "needs at least one tensor")
    tensors = []
    for k, f in enumerate(fields):
        if not isinstance(f, TensorStructInfo):
            raise fail(call, f"field {k} of the tuple is not a tensor")
        tensors.append(f)
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = same_dtype(call, dtype, t.dtype) if dtype and t.dtype else ""
    vdevice = tensors[0].vdevice
    axis = call.attrs["axis"]
    if axis is None:
        if any(t.shape is None for t in tensors):
            return TensorStructInfo(dtype=dtype, ndim=1, vdevice=vdevice)
        return tensor([shape_product(d for t in tensors for d in t.shape)], dtype,
                      vdevice=vdevice)
    ndims = {t.ndim for t in tensors if t.ndim >= 0}
    if len(ndims) > 1:
        raise fail(call, f"tensors have different ranks {sorted(ndims)}")
    if not ndims:
        return TensorStructInfo(dtype=dtype, vdevice=vdevice)
    ndim = ndims.pop()
    axis = normalize_axis(call, axis, ndim)
    if any(t.shape is None for t in tensors):
        return TensorStructInfo(dtype=dtype, ndim=ndim, vdevice=vdevice)
    first = tensors[0].shape
    for t in tensors[1:]:
        for k in range(ndim):
            if k != axis and prove_not_equal(first[k], t.shape[k]):
                raise fail(call, f"shapes {format_shape(first)} and {format_shape(t.shape)} "
                                 f"differ outside the concatenation axis {axis}")
    dims = list(first)
    dims[axis] = sum_dims(t.shape[axis] for t in tensors)
    return tensor(dims, dtype, vdevice=vdevice)


def sum_dims(dims: Any) -> PrimExpr:
    """The simplified sum of dimensions."""
    total: PrimExpr = E.const(0, "int64")
    for d in dims:
        total = total + d
    return simplify(total)


def conv_indices_or_sections(value: Any, op: str, attr: str) -> int | tuple[int, ...]:
    """A number of equal sections (int) or the split indices (a list of ints)."""
    if _py_int(value) is not None:
        if _py_int(value) < 1:
            raise _err(op, attr, "a positive number of sections or a list of indices", value)
        return _py_int(value)  # type: ignore[return-value]
    return conv_int_list(value, op, attr)


@register_op("split", ["x"], [
    AttrSpec("indices_or_sections", convert=conv_indices_or_sections),
    AttrSpec("axis", 0, conv_int),
], pattern=INJECTIVE)
def _infer_split(call: Call, ctx: Any) -> StructInfo:
    """R.split(x, indices_or_sections, axis=0): a tuple of pieces along ``axis``. With n
    sections each piece has ceil(size / n) elements, the last the remainder."""
    x = tensor_arg(call, 0)
    spec = call.attrs["indices_or_sections"]
    count = spec if isinstance(spec, int) else len(spec) + 1
    if x.ndim < 0:
        return TupleStructInfo(fields=tuple(x for _ in range(count)))
    axis = normalize_axis(call, call.attrs["axis"], x.ndim)
    if x.shape is None:
        return TupleStructInfo(fields=tuple(x for _ in range(count)))
    size = x.shape[axis]
    if isinstance(spec, int):
        piece = simplify((size + (spec - 1)) // spec)
        lengths = [piece] * (spec - 1) + [simplify(size - piece * (spec - 1))]
        s = const_value(size)
        if s is not None and spec > 1 and const_value(lengths[-1]) <= 0:
            raise fail(call, f"cannot split an axis of size {s} into {spec} non-empty "
                             f"sections")
    else:
        if list(spec) != sorted(spec):
            raise fail(call, f"indices {list(spec)} must be in increasing order")
        bounds = [0, *spec]
        s = const_value(size)
        lengths = []
        for k in range(len(bounds)):
            lo = bounds[k]
            if k + 1 < len(bounds):
                hi = bounds[k + 1]
                lengths.append(E.const(max(0, (min(hi, s) if s is not None else hi)
                                            - (min(lo, s) if s is not None else lo)), "int64"))
            else:
                lengths.append(E.const(max(0, s - min(lo, s)), "int64") if s is not None
                               else simplify(size - lo))
    fields = []
    for length in lengths:
        dims = list(x.shape)
        dims[axis] = length
        fields.append(tensor(dims, x.dtype, vdevice=x.vdevice))
    return TupleStructInfo(fields=tuple(fields))


# ---------------------------------------------------------------------------------
# strided_slice, take
# ---------------------------------------------------------------------------------

_END_OF_AXIS = 2**31 - 1  # an ``end`` at or past this means "to the end of the axis"


def _slice_length(size: PrimExpr, begin: int, end: int, stride: int,
                  assume_inbound: bool) -> PrimExpr:
    """The length of ``begin:end:stride`` on an axis of ``size``. On a symbolic axis it
    is ``max((e - b + stride - 1) // stride, 0)`` in the form ``topi.strided_slice``
    writes, so the ``call_tir`` LegalizeOps makes has a provably equal shape (the printed
    module parses back): a non-negative ``begin`` is not clamped to ``size``, as past the
    end ``e - b`` is negative anyway and the outer ``max`` gives 0. Non-negative bounds
    with ``end <= begin`` give 0 (in both)."""
    s = const_value(size)
    if s is not None:
        return E.const(len(range(*slice(begin, end, stride).indices(s))), "int64")
    if stride < 0:
        raise ValueError("negative strides on symbolic dimensions")
    if 0 <= end <= begin:
        return E.const(0, "int64")
    b = size + begin if begin < 0 else E.const(begin, "int64")
    e = size if end >= _END_OF_AXIS else (size + end if end < 0 else E.const(end, "int64"))
    if not assume_inbound:
        if begin < 0:
            b = E.max_(b, E.const(0, "int64"))
        e = E.min_(e, size) if end >= 0 and end < _END_OF_AXIS else e
    return simplify(E.max_((e - b + (stride - 1)) // stride, E.const(0, "int64")))


@register_op("strided_slice", ["x"], [
    AttrSpec("axes", convert=conv_int_list),
    AttrSpec("begin", convert=conv_int_list),
    AttrSpec("end", convert=conv_int_list),
    AttrSpec("strides", None, conv_opt_int_list),
    AttrSpec("assume_inbound", False, conv_bool),
], pattern=INJECTIVE)
def _infer_strided_slice(call: Call, ctx: Any) -> StructInfo:
    """R.strided_slice(x, axes, begin, end, strides=None, assume_inbound=False): numpy
    slicing ``x[begin:end:stride]`` on each listed axis (out-of-range bounds clip)."""
    x = tensor_arg(call, 0)
    axes, begin, end = call.attrs["axes"], call.attrs["begin"], call.attrs["end"]
    strides = call.attrs["strides"] or (1,) * len(axes)
    if not len(axes) == len(begin) == len(end) == len(strides):
        raise fail(call, f"axes, begin, end and strides must have the same length, got "
                         f"{len(axes)}, {len(begin)}, {len(end)} and {len(strides)}")
    if 0 in strides:
        raise fail(call, "strides must not be 0")
    if x.ndim < 0:
        return x
    axes = normalize_axes(call, axes, x.ndim, "axes")
    if x.shape is None:
        return x
    dims = list(x.shape)
    for a, b, e, s in zip(axes, begin, end, strides):
        try:
            dims[a] = _slice_length(x.shape[a], b, e, s, call.attrs["assume_inbound"])
        except ValueError:
            raise fail(call, f"a negative stride on the symbolic axis {a} "
                             f"({format_dim(x.shape[a])}) is not supported") from None
    return TensorStructInfo(shape=tuple(dims), dtype=x.dtype, vdevice=x.vdevice)


@register_op("take", ["x", "indices"], [
    AttrSpec("axis", None, lambda v, o, a: None if v is None else conv_int(v, o, a)),
    AttrSpec("mode", "fast", conv_choice("fast", "clip", "wrap", "raise")),
], pattern=INJECTIVE)
def _infer_take(call: Call, ctx: Any) -> StructInfo:
    """R.take(x, indices, axis=None, mode="fast"): elements of ``x`` at integer
    ``indices`` along ``axis`` (None: of the flattened ``x``). ``mode`` says what an index
    outside the axis does: "raise" counts negative indices from the end once and fails
    the run at any other (ONNX's Gather, numpy's take, embedding lookups); "wrap" takes it
    modulo the extent; "clip" clamps it into range; "fast" promises indices in range
    (irc clamps them, so a read stays in bounds)."""
    x, idx = tensor_arg(call, 0), tensor_arg(call, 1)
    if idx.dtype and not dt.is_integer(idx.dtype):
        raise fail(call, f"indices must be an integer tensor, got {idx.dtype}")
    axis = call.attrs["axis"]
    if axis is None:
        if idx.ndim < 0:
            return _unknown(x)
        return idx.replace(dtype=x.dtype, vdevice=x.vdevice) if idx.dtype != x.dtype or \
            idx.vdevice != x.vdevice else idx
    if x.ndim < 0:
        return _unknown(x)
    axis = normalize_axis(call, axis, x.ndim)
    if idx.ndim < 0:
        return _unknown(x)
    out_ndim = x.ndim - 1 + idx.ndim
    if x.shape is None or idx.shape is None:
        return _unknown(x, ndim=out_ndim)
    return TensorStructInfo(shape=(*x.shape[:axis], *idx.shape, *x.shape[axis + 1:]),
                            dtype=x.dtype, vdevice=x.vdevice)


# ---------------------------------------------------------------------------------
# broadcast_to, tile, repeat
# ---------------------------------------------------------------------------------


def _canonicalize_shape_operand(operands: list, attrs: dict, sinfo_args: list) -> tuple:
    operands[1] = to_shape_expr(operands[1], "R.broadcast_to")
    return operands, attrs, sinfo_args


@register_op("broadcast_to", ["x", "shape"], pattern=INJECTIVE,
             extra={"canonicalize": _canonicalize_shape_operand})
def _infer_broadcast_to(call: Call, ctx: Any) -> StructInfo:
    """R.broadcast_to(x, shape): ``x`` repeated along its size-1 (and new leading) axes."""
    x = tensor_arg(call, 0)
    target = shape_values(call, 1)
    if target is None:
        s = arg_sinfo(call, 1)
        assert isinstance(s, ShapeStructInfo)
        return _unknown(x, ndim=s.ndim)
    if x.ndim > len(target):
        raise fail(call, f"cannot broadcast a tensor of rank {x.ndim} to the lower rank "
                         f"{len(target)} shape {format_shape(target)}")
    if x.shape is not None:
        for d, t in zip(x.shape, target[len(target) - x.ndim:]):
            if prove_not_equal(d, 1) and prove_not_equal(d, t):
                raise fail(call, f"cannot broadcast {format_shape(x.shape)} to "
                                 f"{format_shape(target)}")
    return tensor(target, x.dtype, vdevice=x.vdevice)


@register_op("tile", ["data"], [AttrSpec("repeats", convert=conv_int_list)], pattern=INJECTIVE)
def _infer_tile(call: Call, ctx: Any) -> StructInfo:
    """R.tile(data, repeats): ``data`` repeated ``repeats[k]`` times along each axis
    (numpy.tile: the shorter of rank and repeats is padded with leading 1s)."""
    x = tensor_arg(call, 0)
    reps = call.attrs["repeats"]
    if min(reps, default=1) < 0:
        raise fail(call, f"repeats must be non-negative, got {list(reps)}")
    if x.ndim < 0:
        return x
    ndim = max(x.ndim, len(reps))
    if x.shape is None:
        return _unknown(x, ndim=ndim)
    one = E.const(1, "int64")
    dims = [one] * (ndim - x.ndim) + list(x.shape)
    reps = (1,) * (ndim - len(reps)) + tuple(reps)
    return tensor([d * r for d, r in zip(dims, reps)], x.dtype, vdevice=x.vdevice)


@register_op("repeat", ["data"], [
    AttrSpec("repeats", convert=conv_int),
    AttrSpec("axis", None, lambda v, o, a: None if v is None else conv_int(v, o, a)),
], pattern=INJECTIVE)
def _infer_repeat(call: Call, ctx: Any) -> StructInfo:
    """R.repeat(data, repeats, axis=None): each element repeated (None: of the flattened
    input)."""
    x = tensor_arg(call, 0)
    reps = call.attrs["repeats"]
    if reps < 0:
        raise fail(call, f"repeats must be non-negative, got {reps}")
    axis = call.attrs["axis"]
    if axis is None:
        if x.shape is None:
            return _unknown(x, ndim=1)
        return tensor([shape_product(x.shape) * reps], x.dtype, vdevice=x.vdevice)
    if x.ndim < 0:
        return x
    axis = normalize_axis(call, axis, x.ndim)
    if x.shape is None:
        return x
    dims = list(x.shape)
    dims[axis] = dims[axis] * reps
    return tensor(dims, x.dtype, vdevice=x.vdevice)


# ---------------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------------


def reshape(x: Expr, shape: Any) -> Expr:
    """``R.reshape(x, shape)``: ``shape`` a tuple (one -1 allowed) or a shape value."""
    return make_call("reshape", x, shape)


def permute_dims(x: Expr, axes: Sequence[int] | None = None) -> Expr:
    """``R.permute_dims(x, axes)``: None reverses the dimensions."""
    return make_call("permute_dims", x, axes=axes)


def expand_dims(x: Expr, axis: int | Sequence[int]) -> Expr:
    """``R.expand_dims(x, axis)``: insert size-1 dimensions."""
    return make_call("expand_dims", x, axis=axis)


def squeeze(x: Expr, axis: int | Sequence[int] | None = None) -> Expr:
    """``R.squeeze(x, axis)``: remove size-1 dimensions."""
    return make_call("squeeze", x, axis=axis)


def flatten(x: Expr) -> Expr:
    """``R.flatten(x)``: a 1-D view of all elements."""
    return make_call("flatten", x)


def concat(tensors: Any, axis: int | None = 0) -> Expr:
    """``R.concat(tensors, axis)``: ``tensors`` a tuple expression or a list of tensors."""
    return make_call("concat", tensors, axis=axis)


def split(x: Expr, indices_or_sections: int | Sequence[int], axis: int = 0) -> Expr:
    """``R.split(x, indices_or_sections, axis)``: a tuple of pieces."""
    return make_call("split", x, indices_or_sections=indices_or_sections, axis=axis)


def strided_slice(x: Expr, axes: Sequence[int], begin: Sequence[int], end: Sequence[int],
                  strides: Sequence[int] | None = None, assume_inbound: bool = False) -> Expr:
    """``R.strided_slice``: numpy-style slicing of the listed axes."""
    return make_call("strided_slice", x, axes=axes, begin=begin, end=end, strides=strides,
                     assume_inbound=assume_inbound)


def take(x: Expr, indices: Expr, axis: int | None = None, mode: str = "fast") -> Expr:
    """``R.take(x, indices, axis, mode)``: gather along ``axis``."""
    return make_call("take", x, indices, axis=axis, mode=mode)


def broadcast_to(x: Expr, shape: Any) -> Expr:
    """``R.broadcast_to(x, shape)``."""
    return make_call("broadcast_to", x, shape)


def tile(data: Expr, repeats: int | Sequence[int]) -> Expr:
    """``R.tile(data, repeats)``."""
    return make_call("tile", data, repeats=repeats)


def repeat(data: Expr, repeats: int, axis: int | None = None) -> Expr:
    """``R.repeat(data, repeats, axis)``."""
    return make_call("repeat", data, repeats=repeats, axis=axis)


__all__ = [
    "reshape", "permute_dims", "expand_dims", "squeeze", "flatten", "concat", "split",
    "strided_slice", "take", "broadcast_to", "tile", "repeat", "sum_dims",
]

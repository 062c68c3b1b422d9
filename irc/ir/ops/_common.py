"""Helpers shared by the operator families: argument access with precise errors, axis
normalization, dtype agreement, broadcasting, attribute converters, shape operands."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...core import dtype as dt
from ...core.diagnostics import IRTypeError
from ...tir import expr as E
from ...tir.expr import PrimExpr
from ..expr import Call, Expr, PrimValue, ShapeExpr, Tuple
from ..op import _err, _py_int, get_op_def
from ..struct_info import (
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
    shape_of,
)
from ..struct_info_analysis import (
    broadcast_dims,
    format_shape,
    format_sinfo,
    simplify,
)

Shape = tuple[PrimExpr, ...]


def op_name(call: Call) -> str:
    """The registry name of the operator ``call`` calls (``"nn.conv2d"``)."""
    return call.op.name  # type: ignore[attr-defined]


def fail(call: Call, message: str, hint: str | None = None) -> IRTypeError:
    """An IRTypeError ``R.<op>: <message>`` located at ``call``."""
    return IRTypeError(f"R.{op_name(call)}: {message}", node=call, span=call.span, hint=hint)


def operand_name(call: Call, i: int) -> str:
    """The declared name of operand ``i`` of the called operator (for messages)."""
    names = get_op_def(op_name(call)).operands
    return names[i] if i < len(names) else f"#{i}"


def arg_sinfo(call: Call, i: int) -> StructInfo:
    """The struct info of operand ``i`` (operands are normalized before inference)."""
    s = call.args[i].struct_info
    if s is None:
        raise fail(call, f"operand {operand_name(call, i)} has no struct info; normalize it "
                         "with irc.ir.BlockBuilder first")
    return s


def tensor_arg(call: Call, i: int) -> TensorStructInfo:
    """Operand ``i`` as a tensor; anything else raises naming the operand."""
    s = arg_sinfo(call, i)
    if not isinstance(s, TensorStructInfo):
        raise fail(call, f"operand {operand_name(call, i)} must be a tensor, "
                         f"got {format_sinfo(s)}")
    return s


def require_float(call: Call, s: TensorStructInfo, what: str = "the input") -> None:
    """Raise unless ``s`` has a floating-point (or unknown) dtype."""
    if s.dtype and not dt.is_float(s.dtype):
        raise fail(call, f"{what} must have a floating-point dtype, got {s.dtype}",
                   hint="convert it first with R.astype(x, \"float32\")")


def require_ndim(call: Call, s: TensorStructInfo, ndims: Sequence[int], what: str) -> None:
    """Raise unless the (known) rank of ``s`` is one of ``ndims``."""
    if s.ndim >= 0 and s.ndim not in ndims:
        want = " or ".join(str(n) for n in ndims)
        raise fail(call, f"{what} must have rank {want}, got {format_sinfo(s)}")


def same_dtype(call: Call, a: str, b: str) -> str:
    """The common dtype of two operands ("" when either is unknown); differing dtypes raise
    with the fix (an explicit cast)."""
    if not a or not b:
        return ""
    if a != b:
        raise fail(call, f"dtypes {a} and {b} differ; insert R.astype")
    return a


def with_dtype(s: TensorStructInfo, dtype: str) -> TensorStructInfo:
    """``s`` with another dtype (the same object when unchanged)."""
    return s if s.dtype == dtype else TensorStructInfo(shape=s.shape, dtype=dtype, ndim=s.ndim,
                                                       vdevice=s.vdevice)


def tensor(shape: Sequence[PrimExpr] | None, dtype: str, ndim: int = -1,
           vdevice: str | None = None) -> TensorStructInfo:
    """A TensorStructInfo whose known dimensions are simplified int64 expressions."""
    if shape is None:
        return TensorStructInfo(dtype=dtype, ndim=ndim, vdevice=vdevice)
    return TensorStructInfo(shape=tuple(simplify(d) for d in shape_of(shape)), dtype=dtype,
                            vdevice=vdevice)


def normalize_axis(call: Call, axis: int, ndim: int, attr: str = "axis") -> int:
    """``axis`` in ``[0, ndim)`` (negative axes count from the end); out of range raises."""
    if not -ndim <= axis < ndim:
        raise fail(call, f"{attr} {axis} is out of range for a tensor of rank {ndim} "
                         f"(valid: {-ndim} to {ndim - 1})" if ndim else
                   f"{attr} {axis} is out of range for a tensor of rank 0")
    return axis + ndim if axis < 0 else axis


def normalize_axes(call: Call, axes: Sequence[int], ndim: int, attr: str = "axis") -> \
        tuple[int, ...]:
    """Each axis normalized; repeated axes raise."""
    out = tuple(normalize_axis(call, a, ndim, attr) for a in axes)
    if len(set(out)) != len(out):
        raise fail(call, f"{attr} {list(axes)} names an axis twice")
    return out


def broadcast_shapes(call: Call, shapes: Sequence[Shape], what: str = "shapes") -> \
        tuple[PrimExpr | None, ...]:
    """Numpy broadcasting of several shapes (:func:`broadcast_dims`); provably different
    dimensions, neither 1, raise naming ``call``."""
    dims = broadcast_dims(shapes)
    if dims is None:
        shown = " and ".join(format_shape(s) for s in shapes)
        raise fail(call, f"{what} {shown} do not broadcast")
    return dims


def broadcast_sinfo(call: Call, sinfos: Sequence[TensorStructInfo], dtype: str) -> \
        TensorStructInfo:
    """The struct info of an elementwise result over broadcast operands."""
    vdevice = next((s.vdevice for s in sinfos if s.vdevice is not None), None)
    if any(s.ndim < 0 for s in sinfos):
        return TensorStructInfo(dtype=dtype, vdevice=vdevice)
    ndim = max(s.ndim for s in sinfos)
    if any(s.shape is None for s in sinfos):
        return TensorStructInfo(dtype=dtype, ndim=ndim, vdevice=vdevice)
    dims = broadcast_shapes(call, [s.shape for s in sinfos])  # type: ignore[misc]
    if any(d is None for d in dims):
        return TensorStructInfo(dtype=dtype, ndim=ndim, vdevice=vdevice)
    return TensorStructInfo(shape=dims, dtype=dtype, vdevice=vdevice)  # type: ignore[arg-type]


def shape_values(call: Call, i: int) -> tuple[PrimExpr, ...] | None:
    """The values of a shape operand (a ShapeExpr or a value of ShapeStructInfo); None when
    only its rank is known. Anything else raises."""
    s = arg_sinfo(call, i)
    if not isinstance(s, ShapeStructInfo):
        raise fail(call, f"operand {operand_name(call, i)} must be a shape such as "
                         f"R.shape([2, 3]), got {format_sinfo(s)}")
    return s.values


def to_shape_expr(value: Any, what: str) -> Any:
    """A Python tuple/list of dimensions becomes a ``ShapeExpr``; expressions pass through."""
    if isinstance(value, (tuple, list)) and not isinstance(value, Expr):
        dims = []
        for v in value:
            if isinstance(v, PrimValue):
                v = v.value
            if not isinstance(v, (int, PrimExpr)) or isinstance(v, bool):
                raise IRTypeError(f"{what}: shape entries must be integers or int64 "
                                  f"expressions, got {v!r}")
            dims.append(v)
        return ShapeExpr(values=shape_of(dims))
    return value


def to_tuple_expr(value: Any) -> Any:
    """A Python tuple/list of graph expressions becomes a ``Tuple`` node."""
    if isinstance(value, (tuple, list)) and not isinstance(value, Expr):
        bad = [v for v in value if not isinstance(v, Expr)]
        if bad:
            raise IRTypeError(f"expected a tuple of graph expressions, but it contains "
                              f"{type(bad[0]).__name__} {bad[0]!r}")
        return Tuple(fields=tuple(value))
    return value


def to_prim_value(value: Any, what: str, dtype: str | None = None) -> Any:
    """A Python number (or loop-IR expression) becomes a ``PrimValue`` (ints as int64,
    floats as float32, unless ``dtype`` names another type of the same kind)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, PrimExpr):
        return PrimValue(value=value)
    if isinstance(value, bool):
        return PrimValue(value=E.const(value, "bool"))
    if isinstance(value, int):
        if dtype is not None and dt.is_float(dtype):
            return PrimValue(value=E.const(float(value), dtype))
        if dtype is not None and not dt.is_integer(dtype):
            dtype = None
        return PrimValue(value=E.const(value, dtype or "int64"))
    if isinstance(value, float):
        if dtype is not None and not dt.is_float(dtype):
            dtype = None
        return PrimValue(value=E.const(value, dtype or "float32"))
    try:
        if isinstance(value, np.generic):
            return to_prim_value(value.item(), what, dtype)
    except ImportError:  # pragma: no cover
        pass
    raise IRTypeError(f"{what} must be a number or a graph expression, got {value!r}")


def scalar_sinfo(call: Call, i: int) -> StructInfo:
    """Operand ``i`` as a scalar: a PrimValue or a rank-0 tensor (a Constant)."""
    s = arg_sinfo(call, i)
    if isinstance(s, PrimStructInfo):
        return s
    if isinstance(s, TensorStructInfo) and s.ndim in (0, -1):
        return s
    raise fail(call, f"operand {operand_name(call, i)} must be a scalar (R.prim_value or a "
                     f"rank-0 tensor), got {format_sinfo(s)}")


def scalar_dtype(s: StructInfo) -> str:
    """The dtype of a scalar operand's struct info ("" when unknown)."""
    if isinstance(s, (PrimStructInfo, TensorStructInfo)):
        return s.dtype
    return ""


def tuple_fields(call: Call, i: int) -> tuple[StructInfo, ...]:
    """The field struct infos of a tuple operand."""
    s = arg_sinfo(call, i)
    if not isinstance(s, TupleStructInfo):
        raise fail(call, f"operand {operand_name(call, i)} must be a tuple, got "
                         f"{format_sinfo(s)}")
    return s.fields


def _ints(value: Any, op: str, attr: str) -> tuple[int, ...]:
    if _py_int(value) is not None:
        return (_py_int(value),)  # type: ignore[return-value]
    if not isinstance(value, (list, tuple)):
        raise _err(op, attr, "an integer or a list of integers", value)
    out = []
    for v in value:
        iv = _py_int(v)
        if iv is None:
            raise _err(op, attr, "a list of integers", value)
        out.append(iv)
    return tuple(out)


def conv_pair(value: Any, op: str, attr: str) -> tuple[int, int]:
    """An int or 1 or 2 ints, canonicalized to 2 ints (strides, dilation, pool size)."""
    v = _ints(value, op, attr)
    if len(v) == 1:
        return (v[0], v[0])
    if len(v) != 2:
        raise _err(op, attr, "1 or 2 integers", value)
    return v  # type: ignore[return-value]


def conv_positive_pair(value: Any, op: str, attr: str) -> tuple[int, int]:
    """Like :func:`conv_pair`, with every value at least 1 (strides, dilation)."""
    v = conv_pair(value, op, attr)
    if min(v) < 1:
        raise _err(op, attr, "positive integers", value)
    return v


def conv_nonneg_pair(value: Any, op: str, attr: str) -> tuple[int, int]:
    """Like :func:`conv_pair`, with every value at least 0 (output padding)."""
    v = conv_pair(value, op, attr)
    if min(v) < 0:
        raise _err(op, attr, "non-negative integers", value)
    return v


def conv_padding2d(value: Any, op: str, attr: str) -> tuple[int, int, int, int]:
    """1, 2 or 4 paddings canonicalized to (top, left, bottom, right)."""
    v = _ints(value, op, attr)
    if len(v) == 1:
        v = v * 4
    elif len(v) == 2:
        v = (v[0], v[1], v[0], v[1])
    elif len(v) != 4:
        raise _err(op, attr, "1, 2 or 4 integers (top, left, bottom, right)", value)
    if min(v) < 0:
        raise _err(op, attr, "non-negative integers", value)
    return v  # type: ignore[return-value]


def conv_axes(value: Any, op: str, attr: str) -> tuple[int, ...] | None:
    """``None`` (all axes), an int or a list of ints, canonicalized to a tuple or None."""
    if value is None:
        return None
    return _ints(value, op, attr)


def conv_axes_required(value: Any, op: str, attr: str) -> tuple[int, ...]:
    """An int or a list of ints (no None), canonicalized to a tuple."""
    if value is None:
        raise _err(op, attr, "an integer or a list of integers", value)
    return _ints(value, op, attr)


def conv_int_list(value: Any, op: str, attr: str) -> tuple[int, ...]:
    """An int or a list of ints, canonicalized to a tuple."""
    return _ints(value, op, attr)


def conv_opt_int_list(value: Any, op: str, attr: str) -> tuple[int, ...] | None:
    """None, an int or a list of ints, canonicalized to None or a tuple."""
    return None if value is None else _ints(value, op, attr)


def conv_pad_width(value: Any, op: str, attr: str) -> tuple[int, ...]:
    """Flattened (before, after) pairs; nested pairs ``((1, 1), (2, 2))`` are flattened."""
    if isinstance(value, (list, tuple)) and value and all(
            isinstance(v, (list, tuple)) for v in value):
        if any(len(v) != 2 for v in value):
            raise _err(op, attr, "(before, after) pairs", value)
        value = [x for v in value for x in v]
    return _ints(value, op, attr)


def conv_positive_int(value: Any, op: str, attr: str) -> int:
    """An integer of at least 1 (groups, sections)."""
    v = _py_int(value)
    if v is None or v < 1:
        raise _err(op, attr, "a positive integer", value)
    return v


def conv_required_dtype(value: Any, op: str, attr: str) -> str:
    """A dtype string that must be given (no "void" meaning "same as the input")."""
    if not isinstance(value, str) or value in ("", "void"):
        raise _err(op, attr, "a dtype such as 'float32'", value)
    try:
        dt.check(value)
    except IRTypeError:
        raise _err(op, attr, "a dtype such as 'float32'", value) from None
    return value

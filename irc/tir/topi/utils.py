"""Shared helpers of the topi compute definitions: constants, shapes, broadcasting."""

from __future__ import annotations

from typing import Any, Sequence

from ...core import dtype as dt
from ...core.diagnostics import IRTypeError
from ..arith.polynomial import prove_equal
from ..expr import IntImm, PrimExpr, as_int, cast, const, convert, select
from ..te.tensor import Tensor, compute

# Tags of compute stages (what kind of computation a stage is), as in TVM's topi.
ELEMWISE = "elemwise"
BROADCAST = "broadcast"
INJECTIVE = "injective"
COMM_REDUCE = "comm_reduce"
COMM_REDUCE_IDX = "comm_reduce_idx"


# The Python int of an integer constant (or int), else None.
const_int = as_int


def get_const_int(e: Any, what: str = "value") -> int:
    """``e`` as a Python int; IRTypeError when it is symbolic."""
    v = const_int(e)
    if v is None:
        raise IRTypeError(f"{what} must be a constant integer, got {e!r}")
    return v


def get_const_tuple(shape: Sequence[Any], what: str = "shape") -> tuple[int, ...]:
    """A shape of constants as Python ints; IRTypeError for symbolic dimensions."""
    return tuple(get_const_int(s, what) for s in shape)


def index_dtype(*tensors: Any) -> str:
    """int64 when any shape dimension of the tensors is int64, else int32."""
    for t in tensors:
        if isinstance(t, Tensor):
            for s in t.shape:
                if s.dtype == "int64":
                    return "int64"
    return "int32"


def as_index(x: Any, dtype: str) -> PrimExpr:
    """An integer ``x`` (Python int or expression) as an index expression of ``dtype``."""
    if isinstance(x, IntImm) or isinstance(x, int):
        return const(int(x), dtype)
    e = convert(x)
    return e if e.dtype == dtype else e.astype(dtype)


def normalize_axis(axis: int, ndim: int, what: str = "axis") -> int:
    """``axis`` (negative counts from the end) checked against ``ndim``."""
    a = int(axis)
    if not -ndim <= a < max(ndim, 1) or (ndim == 0 and a not in (0, -1)):
        raise IRTypeError(f"{what} {axis} is out of range for a tensor of rank {ndim}")
    return a + ndim if a < 0 else a


def normalize_axes(axis: Any, ndim: int) -> list[int]:
    """A sorted list of distinct axes; None means all axes."""
    if axis is None:
        return list(range(ndim))
    if isinstance(axis, (int, IntImm)):
        axis = [axis]
    out = sorted({normalize_axis(int(a), ndim) for a in axis})
    return out


def axis_names(ndim: int, prefix: str = "ax") -> list[str]:
    """``ax0``, ``ax1``, ... (one name per axis)."""
    return [f"{prefix}{i}" for i in range(ndim)]


def _is_one(e: PrimExpr) -> bool:
    return const_int(e) == 1


def broadcast_shape(a: Sequence[PrimExpr], b: Sequence[PrimExpr], what: str = "broadcast"
                    ) -> tuple[PrimExpr, ...]:
    """The numpy broadcast of two shapes; IRTypeError when constant dimensions clash."""
    n = max(len(a), len(b))
    pa = [None] * (n - len(a)) + list(a)
    pb = [None] * (n - len(b)) + list(b)
    out = []
    for x, y in zip(pa, pb):
        if x is None:
            out.append(y)
        elif y is None:
            out.append(x)
        elif _is_one(x):
            out.append(y)
        elif _is_one(y):
            out.append(x)
        elif const_int(x) is not None and const_int(y) is not None:
            if const_int(x) != const_int(y):
                sa = ", ".join(str(const_int(s) if const_int(s) is not None else s) for s in a)
                sb = ", ".join(str(const_int(s) if const_int(s) is not None else s) for s in b)
                raise IRTypeError(f"{what}: shapes ({sa}) and ({sb}) do not broadcast")
            out.append(x)
        else:
            # A constant against a symbolic dimension is the constant (the symbolic one
            # can only be 1 or equal to it); two symbolic ones are assumed equal (as the
            # graph-level inference checked).
            out.append(x if isinstance(x, IntImm) or not isinstance(y, IntImm) else y)
    dtype = "int64" if any(s.dtype == "int64" for s in out) else "int32"
    return tuple(s if s.dtype == dtype else as_index(s, dtype) for s in out)


def broadcast_indices(shape: Sequence[PrimExpr], out_shape: Sequence[PrimExpr],
                      idx: Sequence[PrimExpr]) -> list[PrimExpr]:
    """Indices into a tensor of ``shape`` for output position ``idx`` of a broadcast to
    ``out_shape``: size-1 dimensions that are broadcast read index 0."""
    r, n = len(shape), len(out_shape)
    out = []
    for d in range(r):
        od = n - r + d
        s, o = shape[d], out_shape[od]
        if _is_one(s) and not _is_one(o):
            out.append(const(0, s.dtype))
        elif const_int(s) is None and not _is_one(o) and not prove_equal(s, o):
            # a symbolic dimension broadcast to another dimension (a constant, or another
            # symbolic one): 1 at run time, or equal to it
            i = idx[od]
            i = i if i.dtype == s.dtype else as_index(i, s.dtype)
            out.append(select(s == const(1, s.dtype), const(0, s.dtype), i))
        else:
            i = idx[od]
            out.append(i if i.dtype == s.dtype else as_index(i, s.dtype))
    return out


def read(x: Any, out_shape: Sequence[PrimExpr], idx: Sequence[PrimExpr]) -> PrimExpr:
    """The element of ``x`` (tensor or scalar) at broadcast output position ``idx``."""
    if isinstance(x, Tensor):
        return x[tuple(broadcast_indices(x.shape, out_shape, idx))]
    return x


def scalar_like(value: Any, ref_dtype: str) -> PrimExpr:
    """A Python number (or expression) as a scalar of ``ref_dtype`` where that is lossless;
    integer numbers next to float tensors become float constants."""
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, bool):
        return const(value, ref_dtype) if not dt.is_float(ref_dtype) else const(float(value),
                                                                                   ref_dtype)
    if isinstance(value, int):
        if dt.is_float(ref_dtype):
            return const(float(value), ref_dtype)
        if dt.is_integer(ref_dtype) and dt.min_value(ref_dtype) <= value <= dt.max_value(
                ref_dtype):
            return const(value, ref_dtype)
        return convert(value)
    if isinstance(value, float):
        if dt.is_float(ref_dtype):
            return const(value, ref_dtype)
        raise IRTypeError(f"cannot combine the float {value} with a tensor of dtype "
                          f"{ref_dtype}; cast the tensor to a float dtype first")
    return convert(value)


def accumulator_dtype(dtype: str) -> str:
    """The dtype that sums and products of ``dtype`` values accumulate in: float32 for
    floats narrower than 32 bits (float16, bfloat16, the float8 formats), as PyTorch and
    ONNX Runtime do, ``dtype`` itself otherwise (float32 and float64 keep theirs,
    integers wrap as the operator's dtype says). A reduction over a narrow float reads
    its operands into this dtype, computes in it and rounds once, at its output."""
    return "float32" if dt.is_float(dtype) and dt.bits(dtype) < 32 else dtype


def round_to(total: Tensor, dtype: str, name: str = "T_cast") -> Tensor:
    """``total`` (a reduction in its accumulator dtype) rounded to ``dtype`` in an
    elementwise stage; ``total`` itself when it already has ``dtype``."""
    if total.dtype == dtype:
        return total
    return compute(total.shape, lambda *i: cast(total[i], dtype), name=name, tag=ELEMWISE,
                   axis_names=axis_names(total.ndim))


def prod(values: Sequence[PrimExpr], dtype: str) -> PrimExpr:
    """The product of shape dimensions (constant-folded)."""
    out: PrimExpr = const(1, dtype)
    for v in values:
        out = out * as_index(v, dtype)
    return out

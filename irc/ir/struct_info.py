"""Struct info: the static description (shape, dtype, structure) of a graph-level value.

Shapes are tuples of loop-IR integer expressions (``int64`` immediates or symbolic
``Var``s), so ``R.Tensor(("n", 784), "float32")`` has shape ``(n, 784)`` with ``n`` a
``tir.Var`` of dtype int64.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core import dtype as dt
from ..core.diagnostics import IRTypeError
from ..core.node import Node, node
from ..tir.expr import IntImm, PrimExpr, convert


@node
class StructInfo(Node):
    """Base of struct info."""


@node
class ObjectStructInfo(StructInfo):
    """Any value (nothing is known)."""


@node
class PrimStructInfo(StructInfo):
    """A scalar of ``dtype``, optionally with a known ``value``."""

    dtype: str
    value: PrimExpr | None = None


@node
class ShapeStructInfo(StructInfo):
    """A shape value: ``values`` when known, else only ``ndim`` (-1 when unknown)."""

    values: tuple[PrimExpr, ...] | None = None
    ndim: int = -1

    def __post_init__(self) -> None:
        if self.values is not None and self.ndim not in (-1, len(self.values)):
            raise IRTypeError(f"ShapeStructInfo: ndim {self.ndim} but {len(self.values)} values")
        if self.values is not None and self.ndim == -1:
            object.__setattr__(self, "ndim", len(self.values))


@node
class TensorStructInfo(StructInfo):
    """A tensor: ``shape`` (None when unknown), ``dtype`` ("" when unknown) and ``ndim``
    (-1 when unknown), on ``vdevice`` (None: the default device)."""

    shape: tuple[PrimExpr, ...] | None = None
    dtype: str = ""
    ndim: int = -1
    vdevice: str | None = None

    def __post_init__(self) -> None:
        if self.dtype:
            dt.check(self.dtype)
        if self.shape is not None:
            if type(self.shape) is not tuple or \
                    not all(isinstance(d, PrimExpr) for d in self.shape):
                object.__setattr__(self, "shape", _as_dims(self.shape))
            _check_dims(self.shape)
            if self.ndim not in (-1, len(self.shape)):
                raise IRTypeError(f"R.Tensor: ndim={self.ndim} but the shape has "
                                  f"{len(self.shape)} dimensions")
            if self.ndim == -1:
                object.__setattr__(self, "ndim", len(self.shape))

    @property
    def static_shape(self) -> tuple[int, ...] | None:
        """The shape as Python ints when every dimension is a constant, else None."""
        if self.shape is None:
            return None
        out = []
        for s in self.shape:
            if not isinstance(s, IntImm):
                return None
            out.append(s.value)
        return tuple(out)


def _as_dims(shape: Sequence[int | PrimExpr]) -> tuple[PrimExpr, ...]:
    """A shape given with Python ints (or as a list) as a tuple of int64 expressions."""
    out = []
    for i, d in enumerate(shape):
        if isinstance(d, PrimExpr):
            out.append(d)
        elif isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_)):
            out.append(IntImm(dtype="int64", value=int(d)))
        else:
            raise IRTypeError(f"R.Tensor: shape dimension {i} is {d!r}; a dimension is an "
                              "integer or an integer expression (a tir.Var of dtype int64 "
                              "for one known only at run time)")
    return tuple(out)


def _check_dims(shape: tuple[PrimExpr, ...]) -> None:
    """An IRTypeError for a negative constant dimension, which would otherwise pass here
    and fail only when the operator using it is legalized."""
    for i, d in enumerate(shape):
        if isinstance(d, IntImm) and d.value < 0:
            text = ", ".join(str(x.value) if isinstance(x, IntImm) else repr(x) for x in shape)
            raise IRTypeError(
                f"R.Tensor: shape dimension {i} of ({text}{',' if len(shape) == 1 else ''}) is "
                f"{d.value}; dimensions cannot be negative (a dimension known only at run "
                "time is a tir.Var of dtype int64)")


@node
class TupleStructInfo(StructInfo):
    """A tuple whose fields have ``fields``."""

    fields: tuple[StructInfo, ...]


@node
class FuncStructInfo(StructInfo):
    """A function: parameter struct infos (None: unknown) and the return's."""

    params: tuple[StructInfo, ...] | None
    ret: StructInfo
    purity: bool = True


def shape_of(values: Sequence[int | PrimExpr]) -> tuple[PrimExpr, ...]:
    """Normalize Python ints / expressions to an int64 shape tuple."""
    out = []
    for v in values:
        e = convert(v, "int64")
        if isinstance(e, IntImm) and e.dtype != "int64":
            e = IntImm(dtype="int64", value=e.value)
        if not dt.is_integer(e.dtype):
            raise IRTypeError(f"shape dimension {v!r} is not an integer")
        out.append(e)
    return tuple(out)


def tensor_sinfo(shape: Sequence[int | PrimExpr] | None, dtype: str = "float32") -> \
        TensorStructInfo:
    """Shorthand: ``tensor_sinfo((1, 784), "float32")``."""
    if shape is None:
        return TensorStructInfo(dtype=dtype)
    return TensorStructInfo(shape=shape_of(shape), dtype=dtype)

"""AnnotateIndexExtents: record, per integer parameter of a graph function, the extent its
values index.

Algorithm: every call of an indexing operator (the table ``INDEXING``: ``take``, the
gathers and scatters, ``one_hot``, ``image.roi_align``) reads an index operand into an
axis of static extent ``n`` (valid indices ``0 .. n-1``). The operand is traced back
through the operators that pass values through unchanged — casts, reshapes, transposes,
slices, broadcasts, concatenation and splits, selections (``PASS_THROUGH``) — and through
variables, tuples and ``match_cast``; every integer parameter it reaches gets the extent,
the smallest one when several operators read it. The result is the function attribute
``index_extents`` (parameter name -> extent), which ``irc.compile`` keeps in the
executable so that ``Executable.random_inputs`` draws such a parameter in ``[0, n)``.

Preconditions: operators not legalized yet (run it first in a pipeline).
Postconditions: the module computes the same; graph functions where some integer parameter
indexes a static extent carry ``index_extents``; nothing else changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from ..core import dtype as dt
from ..core.functor import Visitor
from ..core.module import IRModule
from ..core.transform import Pass, PassContext
from ..ir.expr import (
    Call,
    Expr,
    Function,
    MatchCast,
    Op,
    PrimValue,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..ir.struct_info import TensorStructInfo
from ..tir import expr as E

ATTR = "index_extents"


def _dims(e: Expr) -> tuple[int | None, ...] | None:
    """The dimensions of a tensor operand (None for a symbolic one), or None."""
    s = e.struct_info
    if not isinstance(s, TensorStructInfo) or s.shape is None:
        return None
    return tuple(d.value if isinstance(d, E.IntImm) else None for d in s.shape)


def _axis_extent(data: Expr, axis: int | None) -> int | None:
    dims = _dims(data)
    if dims is None or not dims:
        return None
    if axis is None:  # a flattened take
        return None if None in dims else math.prod(dims)
    if not -len(dims) <= axis < len(dims):
        return None
    return dims[axis]


def _tuple_extent(data: Expr, indices: Expr, first: int) -> int | None:
    """The smallest of the axes ``first .. first+k-1`` of ``data`` that the index tuples
    (the last axis of ``indices``, of length k) address."""
    dims, idx = _dims(data), _dims(indices)
    if dims is None or not idx or idx[-1] is None:
        return None
    addressed = dims[first:first + idx[-1]]
    if not addressed or None in addressed:
        return None
    return min(addressed)


def _depth(e: Expr) -> int | None:
    if isinstance(e, PrimValue) and isinstance(e.value, E.IntImm):
        return e.value.value
    return None


# operator -> (position of its index operand, the extent that operand indexes)
INDEXING: dict[str, tuple[int, Callable[[Call], int | None]]] = {
    "take": (1, lambda c: _axis_extent(c.args[0], c.attrs.get("axis"))),
    "gather_elements": (1, lambda c: _axis_extent(c.args[0], c.attrs.get("axis", 0))),
    "gather_nd": (1, lambda c: _tuple_extent(c.args[0], c.args[1],
                                             c.attrs.get("batch_dims", 0))),
    "scatter_elements": (1, lambda c: _axis_extent(c.args[0], c.attrs.get("axis", 0))),
    "scatter_nd": (1, lambda c: _tuple_extent(c.args[0], c.args[1], 0)),
    "one_hot": (0, lambda c: _depth(c.args[2]) if len(c.args) > 2 else None),
    "image.roi_align": (2, lambda c: _axis_extent(c.args[0], 0)),
}

# operator -> the operands whose values its result holds unchanged (some of them, moved)
PASS_THROUGH: dict[str, tuple[int, ...]] = {
    "astype": (0,), "reshape": (0,), "permute_dims": (0,), "expand_dims": (0,),
    "squeeze": (0,), "flatten": (0,), "broadcast_to": (0,), "tile": (0,), "repeat": (0,),
    "strided_slice": (0,), "concat": (0,), "split": (0,), "where": (1, 2),
    "take": (0,), "gather_elements": (0,), "gather_nd": (0,),
}


class _Definitions(Visitor):
    """Each variable's defining value, and the calls of indexing operators."""

    def __init__(self) -> None:
        self.value_of: dict[int, Expr] = {}
        self.index_calls: list[Call] = []

    def visit_VarBinding(self, b: VarBinding) -> None:
        self.value_of[id(b.var)] = b.value
        self.generic_visit(b)

    def visit_Var(self, v: Var) -> None:
        # A use holds no call; its struct info (a split's tuple of a thousand tensors,
        # met at each of a thousand uses) is not walked.
        return None

    def visit_MatchCast(self, b: MatchCast) -> None:
        self.value_of[id(b.var)] = b.value
        self.generic_visit(b)

    def visit_Call(self, c: Call) -> None:
        if isinstance(c.op, Op) and c.op.name in INDEXING:
            self.index_calls.append(c)
        self.generic_visit(c)


def index_extents(func: Function) -> dict[str, int]:
    """Integer parameter name -> the smallest static extent its values index in ``func``
    (see the module docstring); parameters that index nothing are absent."""
    found = _Definitions()
    found.visit(func.body)
    params = {id(p): p for p in func.params
              if isinstance(p.struct_info, TensorStructInfo) and p.struct_info.dtype
              and dt.is_integer(p.struct_info.dtype)}
    memo: dict[int, frozenset[int]] = {}

    def sources(e: Expr) -> frozenset[int]:
        """The integer parameters whose values reach ``e`` unchanged."""
        key = id(e)
        if key in memo:
            return memo[key]
        memo[key] = frozenset()  # (no cycles in SSA; this only stops a malformed one)
        out: frozenset[int] = frozenset()
        if isinstance(e, Var):
            if key in params:
                out = frozenset([key])
            elif key in found.value_of:
                out = sources(found.value_of[key])
        elif isinstance(e, Tuple):
            out = frozenset().union(*(sources(f) for f in e.fields))
        elif isinstance(e, TupleGetItem):
            out = sources(e.tuple_value)
        elif isinstance(e, Call) and isinstance(e.op, Op):
            positions = PASS_THROUGH.get(e.op.name, ())
            out = frozenset().union(*(sources(e.args[i]) for i in positions
                                      if i < len(e.args)))
        memo[key] = out
        return out

    extents: dict[int, int] = {}
    for call in found.index_calls:
        position, extent_of = INDEXING[call.op.name]
        if position >= len(call.args):
            continue
        extent = extent_of(call)
        if extent is None or extent <= 0:
            continue
        for p in sources(call.args[position]):
            extents[p] = min(extent, extents.get(p, extent))
    return {params[p].name_hint: n for p, n in extents.items()}


@dataclass(frozen=True)
class AnnotateIndexExtents(Pass):
    """Set the ``index_extents`` attribute of each graph function (see the module
    docstring)."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod
        for gv, func in mod.functions.items():
            if not isinstance(func, Function):
                continue
            extents = index_extents(func)
            if extents and func.attrs.get(ATTR) != extents:
                out = out.with_function(gv.name_hint, func.with_attr(ATTR, extents))
        return out

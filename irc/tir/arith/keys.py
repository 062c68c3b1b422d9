"""Interned structural keys of expressions (hash consing).

The simplifier needs to ask "are these two subexpressions the same?" and to use
expressions as dictionary keys, millions of times during auto-tuning. Comparing trees or
hashing nested tuples costs time proportional to their size on every use, so each
expression gets a small integer: two expressions get the same integer exactly when they
are the same tree over the same variable objects. The integer of a node is computed from
its children's integers in O(1), and memoized per node object.

Variables and buffers are identified by object (a variable is one definition), which is
the right notion inside one function; keys are never compared across functions.
"""

from __future__ import annotations

from ..buffer import Buffer
from ..expr import (
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    FloatImm,
    IntImm,
    IterVar,
    Let,
    Not,
    PrimExpr,
    Ramp,
    Reduce,
    Select,
    StringImm,
    Var,
)


class ExprKeys:
    """A table of interned expression keys; one per analyzer (keys are not global, so
    the table never outlives the IR it describes)."""

    __slots__ = ("_table", "_memo")

    def __init__(self) -> None:
        self._table: dict[tuple, int] = {}
        self._memo: dict[int, tuple[PrimExpr, int]] = {}

    def intern(self, parts: tuple) -> int:
        """The integer for a tuple of parts (ints and strings), allocating a new one."""
        k = self._table.get(parts)
        if k is None:
            k = len(self._table)
            self._table[parts] = k
        return k

    def key(self, e: PrimExpr) -> int:
        """The interned key of expression ``e``."""
        hit = self._memo.get(id(e))
        if hit is not None:
            return hit[1]
        k = self.intern(self._parts(e))
        self._memo[id(e)] = (e, k)
        return k

    def _parts(self, e: PrimExpr) -> tuple:
        cls = type(e)
        key = self.key
        if cls is IntImm:
            return ("i", e.dtype, e.value)
        if cls is Var:
            return ("v", id(e))
        if cls is FloatImm:
            return ("f", e.dtype, repr(e.value))
        a = getattr(e, "a", None)
        if a is not None:
            b = getattr(e, "b", None)
            if b is None:  # Not
                return (cls.__name__, key(a))
            return (cls.__name__, e.dtype, key(a), key(b))
        if cls is Cast:
            return ("cast", e.dtype, key(e.value))
        if cls is BufferLoad:
            return ("load", e.dtype, _buffer_id(e.buffer)) + tuple(key(i) for i in e.indices)
        if cls is Call:
            return ("call", e.op, e.dtype) + tuple(key(x) for x in e.args)
        if cls is Select:
            return ("sel", key(e.condition), key(e.true_value), key(e.false_value))
        if cls is Ramp:
            return ("ramp", key(e.base), key(e.stride), e.lanes)
        if cls is Broadcast:
            return ("bcast", key(e.value), e.lanes)
        if cls is Let:
            return ("let", key(e.var), key(e.value), key(e.body))
        if cls is StringImm:
            return ("s", e.value)
        if cls is Not:
            return ("Not", key(e.a))
        if cls is Reduce:
            cond = -1 if e.condition is None else key(e.condition)
            init = -1 if e.init is None else key(e.init)
            return ("reduce", e.kind, e.dtype, key(e.source), cond, init) + tuple(
                _itervar_id(iv) for iv in e.axis)
        # Unknown expression kinds are only equal to themselves.
        return ("obj", id(e))


def _buffer_id(b: Buffer) -> int:
    return id(b)


def _itervar_id(iv: IterVar) -> int:
    return id(iv.var)

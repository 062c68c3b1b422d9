"""InsertBoundChecks: a run-time check before every buffer access of a function built
with bounds checking (``irc.build(..., check_bounds=True)``, ``irc.compile(...,
check_bounds=True)``, ``irc compile/run --check-bounds``).

Algorithm: for a PrimFunc with the attribute ``tir.check_bounds`` (the pass does nothing
to others), every statement that reads or writes a buffer is wrapped in ``AssertStmt`` s,
one per access, whose condition is ``0 <= index < extent`` in every dimension of the
buffer's declared shape (a vector index ``Ramp`` checks its first and last lane). A load
inside one branch of ``if_then_else`` is checked only when that branch is taken (the
padding guards of convolutions read outside the buffer in the branch not taken), and
the conditions of the enclosing ``if``/loops are known to the checks. A check the
arithmetic analyzer proves true from the loop ranges is left out, so a kernel whose loops
stay inside its buffers pays nothing. A failed check ends the kernel with an irc error
naming the function, the buffer, the index and the shape.

Accesses whose indices use a variable bound by a ``Let`` expression inside the same
expression are not checked (the check would sit outside the ``Let``).

Preconditions: no blocks (LowerOpaqueBlock has run); buffers still have their declared
N-d shapes (it runs before FlattenBuffer). Postconditions: the same computation, with
the checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core import dtype as dt
from ..analysis.var_use import uses_var
from ..arith import Analyzer
from ..expr import (
    BufferLoad,
    Call,
    Let,
    PrimExpr,
    Ramp,
    Range,
    const,
    logical_and,
    logical_not,
    logical_or,
)
from ..functor.stmt_util import map_stmt_children
from ..stmt import AssertStmt, BufferStore, For, IfThenElse, LetStmt, PrimFunc, Stmt
from .base import PrimFuncPass

CHECK_BOUNDS = "tir.check_bounds"


@dataclass(frozen=True)
class InsertBoundChecks(PrimFuncPass):
    """See the module docstring."""

    def transform_function(self, func: PrimFunc) -> PrimFunc:
        if not func.attrs.get(CHECK_BOUNDS):
            return func
        symbol = func.attrs.get("global_symbol", "main")
        body = _Checker(str(symbol)).stmt(func.body)
        return func if body is func.body else func.with_body(body)


class _Checker:
    def __init__(self, func_name: str):
        self.func_name = func_name
        self.analyzer = Analyzer()

    # -- statements ---------------------------------------------------------------------
    def stmt(self, s: Stmt) -> Stmt:
        t = type(s)
        if t is For:
            self.analyzer.bind(s.loop_var, Range(min=s.min, extent=s.extent),
                               allow_override=True)
            return self._guarded(map_stmt_children(s, self.stmt), [s.min, s.extent])
        if t is IfThenElse:
            with self.analyzer.constraint(s.condition):
                then = self.stmt(s.then_case)
            if s.else_case is not None:
                with self.analyzer.constraint(logical_not(s.condition)):
                    other = self.stmt(s.else_case)
            else:
                other = None
            new = s if then is s.then_case and other is s.else_case else \
                s.replace(then_case=then, else_case=other)
            return self._guarded(new, [s.condition])
        if t is LetStmt:
            self.analyzer.bind(s.var, s.value, allow_override=True)
            return self._guarded(map_stmt_children(s, self.stmt), [s.value])
        if t is BufferStore:
            accesses = self._accesses(s.value, None) + [
                a for i in s.indices for a in self._accesses(i, None)]
            accesses.append((None, s.buffer, s.indices))
            return self._wrap(s, accesses)
        new = map_stmt_children(s, self.stmt)
        exprs = [getattr(s, f) for f in ("value", "condition") if
                 isinstance(getattr(s, f, None), PrimExpr)]
        return self._guarded(new, exprs)

    def _guarded(self, s: Stmt, exprs: list[PrimExpr]) -> Stmt:
        return self._wrap(s, [a for e in exprs for a in self._accesses(e, None)])

    def _wrap(self, s: Stmt, accesses: list[tuple[Any, Any, Any]]) -> Stmt:
        for guard, buf, indices in reversed(accesses):
            cond, message = self._check(buf, indices)
            if cond is None:
                continue
            if guard is not None:
                cond = logical_or(logical_not(guard), cond)
            if self.analyzer.can_prove(cond):
                continue
            s = AssertStmt(condition=cond, message=message, body=s)
        return s

    # -- expressions --------------------------------------------------------------------
    def _accesses(self, e: PrimExpr, guard: PrimExpr | None, bound: frozenset = frozenset()
                  ) -> list[tuple[Any, Any, Any]]:
        """The loads in ``e`` as ``(guard, buffer, indices)``: ``guard`` is the condition
        under which the load is evaluated (None: always)."""
        out: list[tuple[Any, Any, Any]] = []
        stack: list[tuple[PrimExpr, PrimExpr | None, frozenset]] = [(e, guard, bound)]
        while stack:
            x, g, b = stack.pop()
            t = type(x)
            if t is BufferLoad:
                if not (b and uses_var(x, b)):
                    out.append((g, x.buffer, x.indices))
                stack.extend((i, g, b) for i in x.indices)
            elif t is Call and x.op == "if_then_else":
                cond, yes, no = x.args
                stack.append((cond, g, b))
                stack.append((yes, cond if g is None else logical_and(g, cond), b))
                neg = logical_not(cond)
                stack.append((no, neg if g is None else logical_and(g, neg), b))
            elif t is Let:
                stack.append((x.value, g, b))
                stack.append((x.body, g, b | {x.var}))
            elif isinstance(x, PrimExpr):
                for f in ("a", "b", "value", "condition", "true_value", "false_value",
                          "base", "stride"):
                    v = getattr(x, f, None)
                    if isinstance(v, PrimExpr):
                        stack.append((v, g, b))
                if t is Call:
                    stack.extend((a, g, b) for a in x.args if isinstance(a, PrimExpr))
        out.reverse()
        return out

    def _check(self, buf: Any, indices: Any) -> tuple[PrimExpr | None, str]:
        conds = []
        for index, extent in zip(indices, buf.shape):
            for lane in _lanes(index):
                conds.append(logical_and(lane >= const(0, lane.dtype), lane < extent))
        if not conds:
            return None, ""
        cond = conds[0]
        for c in conds[1:]:
            cond = logical_and(cond, c)
        text = ", ".join(str(i) for i in indices)
        shape = ", ".join(str(d) for d in buf.shape)
        return cond, (f"index out of bounds in function {self.func_name}: "
                      f"{buf.name}[{text}] outside the buffer's shape ({shape})")


def _lanes(index: PrimExpr) -> list[PrimExpr]:
    """The scalar indices to check for ``index``: a Ramp's first and last lanes."""
    if type(index) is Ramp:
        last = index.base + index.stride * (index.lanes - 1)
        return [index.base, last]
    if dt.lanes(index.dtype) != 1:
        return []  # another vector index (a broadcast, a gather): not checked
    return [index]


__all__ = ["CHECK_BOUNDS", "InsertBoundChecks"]

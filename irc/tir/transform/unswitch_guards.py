"""UnswitchGuards: give a loop body a second copy without its padding guards, taken
when every guard in it is known to hold.

Why: a convolution whose padding is inlined reads its input through
``if_then_else(0 <= y + ry - 1 and ..., x[...], 0)``. In a depthwise convolution each
multiply-add has its own guard, and its tests and branches cost more than the
multiply-add (MobileNet-V2's depthwise layers ran at 15-30% of the FMA peak); in a
register-blocked micro-kernel each broadcast has one. Yet the guards fail only at the
image's border: for a tile whose taps all fall inside the image, none is needed.

What: a loop annotated ``irc.unswitch_guards`` (the default CPU rules put it on the
loop of the output tile) gets the body ``if all_hold: <body, guards replaced by their
values> else: <body>``. ``all_hold`` is the conjunction, over the guards of the body
whose conditions are bounds (``<``, ``<=``, ``>``, ``>=``) of integer expressions, of
each bound holding for every value of the loops inside the body: the bound's smallest
slack over those loops' ranges (:meth:`~irc.tir.arith.Analyzer.int_set`), an
expression of the loops outside. Guards whose slack depends on a variable defined inside
the body, or has no lower bound, stay in both copies. Loops without guards lose the
annotation and nothing else.

Preconditions: lowered form (after LowerOpaqueBlock); run after LoopPartition, so each
piece of a cut loop gets its own copies. Postconditions: the same computation; the
annotation is gone. Simplify afterwards folds what the copies make constant.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.var_use import uses_var
from ..arith import Analyzer
from ..expr import GE, GT, LE, LT, And, Call, IntImm, PrimExpr, Range, Var, conjuncts
from ..functor.rewriter import IRRewriter
from ..functor.stmt_util import iter_stmts, map_stmt_children
from ..stmt import Allocate, For, IfThenElse, LetStmt, PrimFunc, Stmt
from .base import PrimFuncPass
from .unroll_loop import fresh_copy

UNSWITCH_KEY = "irc.unswitch_guards"
"""The loop annotation asking for the guard-free copy of the loop's body."""


class _Guards(IRRewriter):
    """Collects the ``if_then_else`` calls of a body (``found``), and, given
    ``replace`` (call id -> value), rewrites them to those values."""

    def __init__(self, replace: dict[int, PrimExpr] | None = None) -> None:
        super().__init__()
        self.found: list[Call] = []
        self.replace = replace or {}

    def _call(self, e):
        if e.op == "if_then_else":
            hit = self.replace.get(id(e))
            if hit is not None:
                return self.expr(hit)
            self.found.append(e)
        return super()._call(e)


def _inner_scope(body: Stmt) -> tuple[dict[Var, Range], list[Var]]:
    """The loops defined in ``body`` with their ranges, and the other variables it
    defines (lets, allocations)."""
    loops: dict[Var, Range] = {}
    other: list[Var] = []
    for x in iter_stmts(body):
        t = type(x)
        if t is For:
            loops[x.loop_var] = Range(min=x.min, extent=x.extent)
        elif t is LetStmt:
            other.append(x.var)
        elif t is Allocate:
            other.append(x.buffer_var)
    return loops, other


def _slack(c: PrimExpr) -> tuple[PrimExpr, int] | None:
    """``(d, k)`` such that the bound ``c`` holds exactly when ``d >= k``."""
    t = type(c)
    if t not in (LT, LE, GT, GE) or not c.a.dtype.startswith(("int", "uint")):
        return None
    if t is LT:
        return c.b - c.a, 1
    if t is LE:
        return c.b - c.a, 0
    if t is GT:
        return c.a - c.b, 1
    return c.a - c.b, 0


def _always(an: Analyzer, cond: PrimExpr, loops: dict[Var, Range],
            inner: set[int]) -> list[PrimExpr] | None:
    """Conditions on the outer variables under which ``cond`` holds for every value of
    the inner ``loops``, or None when there are none to state."""
    out = []
    for c in conjuncts(cond):
        s = _slack(c)
        if s is None:
            return None
        d, k = s
        low = an.int_set(d, loops).min_value
        if low is None:
            return None
        low = an.simplify(low)
        if uses_var(low, lambda v: id(v) in inner):
            return None
        out.append(low >= IntImm(dtype=low.dtype, value=k))
    return out


def unswitch(loop: For) -> For:
    """``loop`` with its body versioned (see the module docstring) and the annotation
    removed."""
    ann = {k: v for k, v in loop.annotations.items() if k != UNSWITCH_KEY}
    body = loop.body
    finder = _Guards()
    finder.stmt(body)
    if not finder.found:
        return loop.replace(annotations=ann)
    loops, other = _inner_scope(body)
    defined = {id(v) for v in other}
    inner = {id(v) for v in loops} | defined
    an = Analyzer()
    replace: dict[int, PrimExpr] = {}
    conds: dict[str, PrimExpr] = {}
    for call in {id(c): c for c in finder.found}.values():
        cond, value = call.args[0], call.args[1]
        if uses_var(cond, lambda v: id(v) in defined):
            continue
        holds = _always(an, cond, loops, inner)
        if holds is None:
            continue
        replace[id(call)] = value
        for h in holds:
            conds.setdefault(str(h), h)
    if not replace:
        return loop.replace(annotations=ann)
    guard = None
    for h in conds.values():
        if an.can_prove(h):
            continue
        guard = h if guard is None else And(dtype="bool", a=guard, b=h)
    fast = fresh_copy(_Guards(replace).stmt(body), {})
    if guard is None:
        return loop.replace(body=fast, annotations=ann)
    return loop.replace(body=IfThenElse(condition=guard, then_case=fast, else_case=body),
                        annotations=ann)


def _visit(s: Stmt) -> Stmt:
    if type(s) is For and s.annotations and UNSWITCH_KEY in s.annotations:
        return unswitch(s)
    return map_stmt_children(s, _visit)


def _annotated(s: Stmt) -> bool:
    return any(type(x) is For and x.annotations and UNSWITCH_KEY in x.annotations
               for x in iter_stmts(s))


@dataclass(frozen=True)
class UnswitchGuards(PrimFuncPass):
    """Version annotated loop bodies on their padding guards (see the module
    docstring)."""

    name: str = "UnswitchGuards"

    def transform_function(self, func: PrimFunc) -> PrimFunc:
        if not _annotated(func.body):
            return func
        return func.replace(body=_visit(func.body))

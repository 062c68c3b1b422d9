"""LoopPartition: split a loop at the iterations where a condition in its body changes,
so each piece runs without the test.

Why: a tile that does not divide its loop (a 4-row micro-kernel over 14 output columns)
leaves a predicate ``r1a * 4 + r1 < 14`` on every statement of the tile. Inside the
reduction loop that test, repeated for every row, keeps the accumulators from staying in
registers and the rows from being unrolled cleanly. Split at ``r1a = 3``, the first
three tiles are full (the predicate is provably true there and :class:`Simplify` removes
it) and the last one has two rows: in it the unrolled row loop splits again at 2, and
the rows past the end are provably never run.

Algorithm: top-down over the loop nest with an :class:`~irc.tir.arith.Analyzer` that
knows the range of every enclosing loop and of every constant-bounded loop below. For
a serial or unrolled loop ``for x in [m, m + n)`` with constant bounds, each ``if``
condition below it (each term of a conjunction on its own) that bounds an expression of
``x`` (``<``, ``<=``, ``>``, ``>=``) gives up to two cut points: the end of the
longest prefix of iterations on which it is provably true for all values of the loops
between (binary search over ``Analyzer.can_prove``), and the start of the longest
such suffix. The loop is cut at those points (at most ``MAX_PIECES`` pieces, else it is
left whole); each piece after the first gets fresh copies of the variables its body
defines, a one-iteration piece substitutes the loop variable by its value, and the
pieces are processed in turn with ``x`` bound to their ranges (so a tail piece can cut
its inner loops). Conditions of ``if_then_else`` expressions (padding guards) are not
used: they select values, and cutting at every padding edge would multiply code for
little gain; except in a loop annotated ``irc.cut_selects`` (the default rules annotate
the loop along which a concatenation chooses its part), which is cut wherever one of
them changes, each piece keeping only the arms its range takes (``_TakeSelects``, before
the piece's copy is made: a concatenation of N parts is N plain copies, not N copies of
the chain of N choices for Simplify to prune).

Preconditions: lowered form with predicates as ``IfThenElse`` (after LowerOpaqueBlock);
loop variables defined once.
Postconditions: the same computation; each cut piece has the conditions that are
provably true or false on its range (run :class:`Simplify` next to remove them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.functor import post_order_visit
from ..analysis.var_use import uses_var
from ..arith import Analyzer
from ..expr import GE, GT, LE, LT, Call, IntImm, Not, PrimExpr, Range, Var, conjuncts
from ..functor.rewriter import IRRewriter
from ..functor.stmt_util import flat_seq, iter_stmts, map_stmt_children
from ..stmt import For, IfThenElse, PrimFunc, Stmt
from .base import PrimFuncPass
from .unroll_loop import fresh_copy

# A loop is cut into at most this many pieces (each is a copy of its body).
MAX_PIECES = 4
# A loop annotated with this key is also cut where the conditions of ``if_then_else``
# expressions on its variable change (a concatenation's choice of part: each piece then
# copies one part without tests), into at most SELECT_PIECES pieces.
CUT_SELECTS_KEY = "irc.cut_selects"
SELECT_PIECES = 129
_CUT_KINDS = ("serial", "unrolled")
# Only bounds cut loops. A reduction's first-iteration guard (``k == 0``) stays: the
# default rules initialize before the reduction anyway (decompose_reduction), and the
# tuner's cost model reads one init store per candidate, not a peeled copy.
_BOUNDS = (LT, LE, GT, GE)


def _const(e: PrimExpr) -> int | None:
    return e.value if type(e) is IntImm else None


def _has_if(s: Stmt) -> bool:
    return any(type(x) is IfThenElse for x in iter_stmts(s))


def _cuts_selects(s: Stmt) -> bool:
    return any(type(x) is For and x.annotations.get(CUT_SELECTS_KEY) for x in iter_stmts(s))


def _conditions(s: Stmt, var: Var, an: Analyzer, selects: bool = False) -> list[PrimExpr]:
    """The bounds in ``if`` conditions below ``s`` that mention ``var`` (with
    ``selects``, in ``if_then_else`` conditions too); binds the constant-bounded loops
    below ``s`` to their ranges on the way."""
    found: list[PrimExpr] = []
    if selects:
        def visit(e: Any) -> None:
            if type(e) is Call and e.op == "if_then_else":
                found.extend(c for c in conjuncts(e.args[0])
                             if type(c) in _BOUNDS and uses_var(c, lambda v: v is var))
        post_order_visit(s, visit)
    for x in iter_stmts(s):
        t = type(x)
        if t is For:
            lo, ext = _const(x.min), _const(x.extent)
            if lo is not None and ext is not None and ext > 0:
                an.bind(x.loop_var, Range(min=x.min, extent=x.extent), allow_override=True)
        elif t is IfThenElse:
            found.extend(c for c in conjuncts(x.condition)
                         if type(c) in _BOUNDS and uses_var(c, lambda v: v is var))
    return found


def _holds_on(an: Analyzer, cond: PrimExpr, var: Var, lo: int, hi: int) -> bool:
    """Whether ``cond`` is provably true for every ``var`` in ``[lo, hi)``."""
    an.bind(var, Range(min=IntImm(dtype=var.dtype, value=lo),
                       extent=IntImm(dtype=var.dtype, value=hi - lo)), allow_override=True)
    return an.can_prove(cond)


def _cut_points(an: Analyzer, conds: list[PrimExpr], var: Var, lo: int, hi: int
                ) -> list[int]:
    """Where the loop ``var`` in ``[lo, hi)`` should be cut (see the module docstring)."""
    cuts: set[int] = set()
    for cond in conds:
        if _holds_on(an, cond, var, lo, hi):
            continue  # true throughout: Simplify removes it without a cut
        # Longest provably true prefix [lo, p).
        a, b = lo, hi - 1  # p in [a, b]; [lo, a) is known to hold
        while a < b:
            mid = (a + b + 1) // 2
            if _holds_on(an, cond, var, lo, mid):
                a = mid
            else:
                b = mid - 1
        if lo < a < hi:
            cuts.add(a)
        # Longest provably true suffix [s, hi).
        a, b = lo + 1, hi  # s in [a, b]; [b, hi) is known to hold (empty at b = hi)
        while a < b:
            mid = (a + b) // 2
            if _holds_on(an, cond, var, mid, hi):
                b = mid
            else:
                a = mid + 1
        if lo < b < hi:
            cuts.add(b)
    return sorted(cuts)


class _TakeSelects(IRRewriter):
    """Replaces each ``if_then_else`` whose condition the analyzer proves true or false
    by the arm it takes, descending into that arm only. On one piece of a concatenation's
    loop, a chain of N selects becomes the one part the piece copies after at most N
    proofs, so cutting a loop into N pieces costs O(N^2) proofs but copies and simplifies
    O(N) nodes instead of N copies of the whole chain."""

    def __init__(self, an: Analyzer) -> None:
        super().__init__()
        self.an = an

    def _call(self, e):
        if e.op == "if_then_else" and e.args[0].dtype == "bool":
            cond = e.args[0]
            if self.an.can_prove(cond):
                return self.expr(e.args[1])
            if self.an.can_prove(Not(dtype="bool", a=cond)):
                return self.expr(e.args[2])
        return super()._call(e)


class _Partitioner:
    def __init__(self) -> None:
        self.an = Analyzer()

    def visit(self, s: Stmt) -> Stmt:
        if type(s) is For:
            return self.loop(s)
        return map_stmt_children(s, self.visit)

    def loop(self, s: For) -> Stmt:
        lo, ext = _const(s.min), _const(s.extent)
        if lo is None or ext is None or ext < 1:
            return map_stmt_children(s, self.visit)
        var = s.loop_var
        cuts: list[int] = []
        selects = bool(s.annotations.get(CUT_SELECTS_KEY))
        if s.kind in _CUT_KINDS and ext > 1 and (selects or _has_if(s.body)):
            conds = _conditions(s.body, var, self.an, selects)
            if conds:
                cuts = _cut_points(self.an, conds, var, lo, lo + ext)
                if len(cuts) + 1 > (SELECT_PIECES if selects else MAX_PIECES):
                    cuts = []
        bounds = [lo, *cuts, lo + ext]
        pieces: list[Stmt] = []
        for k, (a, b) in enumerate(zip(bounds, bounds[1:])):
            piece_body = s.body
            if selects and cuts:
                # Each piece keeps only the parts it copies (before the copy is made).
                self.an.bind(var, Range(min=IntImm(dtype=var.dtype, value=a),
                                        extent=IntImm(dtype=var.dtype, value=b - a)),
                             allow_override=True)
                piece_body = _TakeSelects(self.an).stmt(s.body)
            if b - a == 1 and cuts:
                body = fresh_copy(piece_body, {var: IntImm(dtype=var.dtype, value=a)})
                pieces.append(self.visit(body))
                continue
            if k == 0:
                new_var, body = var, piece_body
            else:
                new_var = Var(name=var.name, dtype=var.dtype)
                body = fresh_copy(piece_body, {var: new_var})
            self.an.bind(new_var, Range(min=IntImm(dtype=var.dtype, value=a),
                                        extent=IntImm(dtype=var.dtype, value=b - a)),
                         allow_override=True)
            new_body = self.visit(body)
            if k == 0 and not cuts and new_body is s.body:
                return s
            pieces.append(s.replace(loop_var=new_var,
                                    min=IntImm(dtype=s.min.dtype, value=a),
                                    extent=IntImm(dtype=s.extent.dtype, value=b - a),
                                    body=new_body))
        return flat_seq(pieces)


@dataclass(frozen=True)
class LoopPartition(PrimFuncPass):
    """Cut loops where a predicate in their body changes (see the module docstring)."""

    name: str = "LoopPartition"

    def transform_function(self, func: PrimFunc) -> PrimFunc:
        if not _has_if(func.body) and not _cuts_selects(func.body):
            return func
        body = _Partitioner().visit(func.body)
        return func if body is func.body else func.replace(body=body)


def loop_partition(func: PrimFunc) -> PrimFunc:
    """Apply :class:`LoopPartition` to one function."""
    return LoopPartition().transform_function(func)

"""Symbolic integer intervals: the range an expression covers when some of its variables
range over intervals (region analysis, compute_at, buffer compaction).

An :class:`IntervalSet` is the closed interval ``[min_value, max_value]`` of PrimExprs;
``None`` ends are unbounded. Evaluation works on the simplified (canonical) expression, so
correlated terms cancel before the interval arithmetic runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from ...core import dtype as dt
from ..expr import (
    Add,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    PrimExpr,
    Ramp,
    Range,
    Reduce,
    Select,
    Sub,
    Var,
)

if TYPE_CHECKING:
    from .analyzer import Analyzer


@dataclass(frozen=True, slots=True)
class IntervalSet:
    """The integers ``min_value <= x <= max_value`` (None: unbounded on that side)."""

    min_value: PrimExpr | None
    max_value: PrimExpr | None

    @staticmethod
    def point(e: PrimExpr) -> IntervalSet:
        """The interval holding only ``e``."""
        return IntervalSet(e, e)

    @staticmethod
    def everything() -> IntervalSet:
        """The unbounded interval."""
        return IntervalSet(None, None)

    @staticmethod
    def from_range(r: Range) -> IntervalSet:
        """``[min, min + extent - 1]`` of a Range."""
        return IntervalSet(r.min, r.min + r.extent - 1)


    def is_single_point(self) -> bool:
        """True when both ends are the same expression."""
        return self.min_value is not None and self.min_value is self.max_value

    def is_everything(self) -> bool:
        """True when both ends are unbounded."""
        return self.min_value is None and self.max_value is None

    def is_bounded(self) -> bool:
        """True when both ends are known."""
        return self.min_value is not None and self.max_value is not None

    def __repr__(self) -> str:
        lo = "-inf" if self.min_value is None else repr(self.min_value)
        hi = "+inf" if self.max_value is None else repr(self.max_value)
        return f"IntervalSet[{lo}, {hi}]"


def _as_interval(d) -> IntervalSet:
    if isinstance(d, IntervalSet):
        return d
    if isinstance(d, Range):
        return IntervalSet.from_range(d)
    if isinstance(d, PrimExpr):
        return IntervalSet.point(d)
    raise TypeError(f"a domain must be an IntervalSet, Range or PrimExpr, not {type(d).__name__}")


class IntSetEvaluator:
    """Evaluates the interval of expressions for one domain map."""

    def __init__(self, an: Analyzer, dom_map: Mapping[Var, object]):
        self.an = an
        self.dom: dict[int, IntervalSet] = {id(v): _as_interval(d) for v, d in dom_map.items()}
        self._vars = {id(v): v for v in dom_map}
        self._uses: dict[int, tuple[PrimExpr, bool]] = {}

    # -- helpers ----------------------------------------------------------------------
    def uses_dom(self, e: PrimExpr) -> bool:
        """Whether ``e`` mentions a variable of the domain."""
        hit = self._uses.get(id(e))
        if hit is not None:
            return hit[1]
        if type(e) is Var:
            r = id(e) in self.dom
        elif type(e) is IntImm:
            r = False
        else:
            r = False
            for child in expr_children(e):
                if self.uses_dom(child):
                    r = True
                    break
        self._uses[id(e)] = (e, r)
        return r

    def eval(self, e: PrimExpr) -> IntervalSet:
        """The interval of ``e`` (simplified first), endpoints simplified."""
        an = self.an
        s = an.simplify(e)
        r = self._eval(s)
        for _ in range(4):  # domains whose ends mention other domain variables
            lo, hi = r.min_value, r.max_value
            again = (lo is not None and self.uses_dom(lo)) or (hi is not None and self.uses_dom(hi))
            if not again:
                break
            lo = None if lo is None else self._eval(lo).min_value
            hi = None if hi is None else self._eval(hi).max_value
            r = IntervalSet(lo, hi)
        lo = None if r.min_value is None else an.simplify(r.min_value)
        hi = None if r.max_value is None else an.simplify(r.max_value)
        if lo is not None and hi is not None and an.keys.key(lo) == an.keys.key(hi):
            hi = lo
        return IntervalSet(lo, hi)

    def _eval(self, e: PrimExpr) -> IntervalSet:
        if not self.uses_dom(e):
            return IntervalSet.point(e)
        cls = type(e)
        if cls is Var:
            return self.dom[id(e)]
        fn = _HANDLERS.get(cls)
        if fn is None:
            return IntervalSet.everything()
        return fn(self, e)

    # -- handlers -----------------------------------------------------------------------
    def _add(self, e: Add) -> IntervalSet:
        a, b = self._eval(e.a), self._eval(e.b)
        return IntervalSet(_bin(Add, a.min_value, b.min_value), _bin(Add, a.max_value, b.max_value))

    def _sub(self, e: Sub) -> IntervalSet:
        a, b = self._eval(e.a), self._eval(e.b)
        return IntervalSet(_bin(Sub, a.min_value, b.max_value), _bin(Sub, a.max_value, b.min_value))

    def _scale(self, a: IntervalSet, k: PrimExpr) -> IntervalSet:
        sign = self._sign(k)
        if sign == 0:
            return IntervalSet.point(IntImm(dtype=k.dtype, value=0))
        if sign is None:  # either order: the ends are the min/max of both products
            lo, hi = _bin(Mul, a.min_value, k), _bin(Mul, a.max_value, k)
            return IntervalSet(_bin(Min, lo, hi), _bin(Max, lo, hi))
        if sign > 0:
            return IntervalSet(_bin(Mul, a.min_value, k), _bin(Mul, a.max_value, k))
        return IntervalSet(_bin(Mul, a.max_value, k), _bin(Mul, a.min_value, k))

    def _sign(self, k: PrimExpr):
        lo, hi = self.an.bounds.bound(k)
        if lo == hi == 0:
            return 0
        if lo >= 0:
            return 1
        if hi <= 0:
            return -1
        return None

    def _mul(self, e: Mul) -> IntervalSet:
        if not self.uses_dom(e.b):
            return self._scale(self._eval(e.a), e.b)
        if not self.uses_dom(e.a):
            return self._scale(self._eval(e.b), e.a)
        # A product of two relaxed factors (rare in indices) is left unbounded.
        return IntervalSet.everything()

    def _floordiv(self, e: PrimExpr) -> IntervalSet:
        if self.uses_dom(e.b):
            return IntervalSet.everything()
        a = self._eval(e.a)
        sign = self._sign(e.b)
        if sign == 1 and self.an.bounds.bound(e.b)[0] > 0:
            return IntervalSet(_bin(FloorDiv, a.min_value, e.b), _bin(FloorDiv, a.max_value, e.b))
        if sign == -1 and self.an.bounds.bound(e.b)[1] < 0:
            return IntervalSet(_bin(FloorDiv, a.max_value, e.b), _bin(FloorDiv, a.min_value, e.b))
        return IntervalSet.everything()

    def _floormod(self, e: PrimExpr) -> IntervalSet:
        if self.uses_dom(e.b) or self.an.bounds.bound(e.b)[0] <= 0:
            return IntervalSet.everything()
        a = self._eval(e.a)
        d = e.b
        zero = IntImm(dtype=e.dtype, value=0)
        if a.is_bounded():
            an = self.an
            lo, hi = a.min_value, a.max_value
            if an.can_prove_equal(FloorDiv(dtype=e.dtype, a=lo, b=d),
                                  FloorDiv(dtype=e.dtype, a=hi, b=d)):
                return IntervalSet(FloorMod(dtype=e.dtype, a=lo, b=d),
                                   FloorMod(dtype=e.dtype, a=hi, b=d))
        return IntervalSet(zero, Sub(dtype=e.dtype, a=d, b=IntImm(dtype=e.dtype, value=1)))

    def _truncdiv(self, e: Div) -> IntervalSet:
        # Truncating and floor division agree for a non-negative dividend and positive
        # divisor only.
        if self.an.bounds.bound(e.a)[0] >= 0 and self.an.bounds.bound(e.b)[0] > 0:
            return self._floordiv(e)
        return IntervalSet.everything()

    def _truncmod(self, e: Mod) -> IntervalSet:
        if self.an.bounds.bound(e.a)[0] >= 0 and self.an.bounds.bound(e.b)[0] > 0:
            return self._floormod(e)
        return IntervalSet.everything()

    def _minmax(self, e: PrimExpr) -> IntervalSet:
        a, b = self._eval(e.a), self._eval(e.b)
        cls = type(e)
        return IntervalSet(_bin(cls, a.min_value, b.min_value), _bin(cls, a.max_value, b.max_value))

    def _select(self, e: Select) -> IntervalSet:
        return self.union(self._eval(e.true_value), self._eval(e.false_value))

    def _call(self, e: Call) -> IntervalSet:
        if e.op == "if_then_else" and len(e.args) == 3:
            return self.union(self._eval(e.args[1]), self._eval(e.args[2]))
        return IntervalSet.everything()

    def _cast(self, e: Cast) -> IntervalSet:
        src, dst = e.value.dtype, e.dtype
        if dt.is_integer(src) and dt.is_integer(dst) and dt.bits(dst) >= dt.bits(src):
            a = self._eval(e.value)
            return IntervalSet(None if a.min_value is None else Cast(dtype=dst, value=a.min_value),
                               None if a.max_value is None else Cast(dtype=dst, value=a.max_value))
        return IntervalSet.everything()

    def _let(self, e: Let) -> IntervalSet:
        self.dom[id(e.var)] = self._eval(e.value)
        self._vars[id(e.var)] = e.var
        self._uses = {}
        return self._eval(e.body)

    def _ramp(self, e: Ramp) -> IntervalSet:
        base = self._eval(e.base)
        last = Add(dtype=e.base.dtype, a=e.base,
                   b=Mul(dtype=e.base.dtype, a=e.stride,
                         b=IntImm(dtype=e.base.dtype, value=e.lanes - 1)))
        return self.union(base, self._eval(self.an.simplify(last)))

    def _broadcast(self, e: Broadcast) -> IntervalSet:
        return self._eval(e.value)

    def union(self, a: IntervalSet, b: IntervalSet) -> IntervalSet:
        """The hull of two intervals."""
        return IntervalSet(_bin(Min, a.min_value, b.min_value), _bin(Max, a.max_value, b.max_value))


_HANDLERS = {
    Add: IntSetEvaluator._add,
    Sub: IntSetEvaluator._sub,
    Mul: IntSetEvaluator._mul,
    FloorDiv: IntSetEvaluator._floordiv,
    FloorMod: IntSetEvaluator._floormod,
    Div: IntSetEvaluator._truncdiv,
    Mod: IntSetEvaluator._truncmod,
    Min: IntSetEvaluator._minmax,
    Max: IntSetEvaluator._minmax,
    Select: IntSetEvaluator._select,
    Call: IntSetEvaluator._call,
    Cast: IntSetEvaluator._cast,
    Let: IntSetEvaluator._let,
    Ramp: IntSetEvaluator._ramp,
    Broadcast: IntSetEvaluator._broadcast,
}


def _bin(cls, a: PrimExpr | None, b: PrimExpr | None) -> PrimExpr | None:
    if a is None or b is None:
        return None
    return cls(dtype=a.dtype, a=a, b=b)


def expr_children(e: PrimExpr):
    """The expression children of ``e`` (enough for variable-use checks)."""
    cls = type(e)
    a = getattr(e, "a", None)
    if a is not None:
        b = getattr(e, "b", None)
        return (a,) if b is None else (a, b)
    if cls is BufferLoad:
        return e.indices
    if cls is Call:
        return e.args
    if cls is Cast or cls is Broadcast:
        return (e.value,)
    if cls is Select:
        return (e.condition, e.true_value, e.false_value)
    if cls is Ramp:
        return (e.base, e.stride)
    if cls is Let:
        return (e.var, e.value, e.body)
    if cls is Reduce:
        out = [e.source]
        if e.condition is not None:
            out.append(e.condition)
        if e.init is not None:
            out.append(e.init)
        return tuple(out)
    return ()


def union_intervals(an: Analyzer, sets) -> IntervalSet:
    """The smallest interval containing all ``sets`` (endpoints simplified).

    Endpoints are combined pairwise in a balanced tree, simplifying each level, so a
    union of thousands of accesses (an expression that reads one buffer at many
    offsets) folds as it goes instead of nesting one ``min`` per access."""
    sets = list(sets)
    if not sets:
        raise ValueError("union of no intervals")
    return IntervalSet(_balanced(an, Min, [s.min_value for s in sets]),
                       _balanced(an, Max, [s.max_value for s in sets]))


def _balanced(an: Analyzer, cls, ends: list) -> PrimExpr | None:
    if any(e is None for e in ends):
        return None
    seen: set[int] = set()
    level = [e for e in ends if not (id(e) in seen or seen.add(id(e)))]
    if len(level) == 1:
        return an.simplify(level[0])
    while len(level) > 1:
        nxt = [an.simplify(cls(dtype=level[k].dtype, a=level[k], b=level[k + 1]))
               for k in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        seen = set()
        level = [e for e in nxt if not (id(e) in seen or seen.add(id(e)))]
    return level[0]

"""Constant integer bounds: the smallest interval of Python ints that provably contains
every value an integer expression takes, given bounds of its variables.

Intervals are closed ``(lo, hi)`` pairs whose ends may be ``-inf``/``+inf``
(:data:`NEG_INF`/:data:`POS_INF`, float infinities: they compare with ints and saturate
under addition). Integer overflow is ignored, as every index simplifier does: index
expressions are assumed not to wrap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, ClassVar

from ...core import dtype as dt
from ..expr import (
    Add,
    And,
    Broadcast,
    Call,
    Cast,
    CmpOp,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Select,
    Sub,
    Var,
)
from .fold import truncdiv

POS_INF = math.inf
NEG_INF = -math.inf

Interval = tuple  # (lo, hi) with int or +-inf ends


@dataclass(frozen=True, slots=True)
class ConstIntBound:
    """``min_value <= expr <= max_value`` for every evaluation; unbounded ends are
    :attr:`NEG_INF` / :attr:`POS_INF`."""

    min_value: int | float
    max_value: int | float

    POS_INF: ClassVar[float] = POS_INF
    NEG_INF: ClassVar[float] = NEG_INF

    @property
    def is_const(self) -> bool:
        """True when the expression has exactly one possible value."""
        return self.min_value == self.max_value

    @property
    def is_bounded(self) -> bool:
        """True when both ends are finite."""
        return self.min_value != NEG_INF and self.max_value != POS_INF


_DTYPE_RANGE: dict[str, Interval] = {}


def dtype_range(dtype: str) -> Interval:
    """The values of an integer dtype; everything for other dtypes."""
    r = _DTYPE_RANGE.get(dtype)
    if r is None:
        d = dt.parse(dtype)
        if d.code in ("int", "uint", "bool"):
            r = (dt.min_value(dt.element_of(dtype)), dt.max_value(dt.element_of(dtype)))
        else:
            r = (NEG_INF, POS_INF)
        _DTYPE_RANGE[dtype] = r
    return r


# ---------------------------------------------------------------------------------
# Interval arithmetic on (lo, hi) pairs
# ---------------------------------------------------------------------------------


def _mul(a, b):
    if a == 0 or b == 0:
        return 0
    return a * b


def iv_add(x: Interval, y: Interval) -> Interval:
    """Interval of ``x + y``."""
    lo = x[0] + y[0] if not (x[0] == NEG_INF and y[0] == POS_INF) else NEG_INF
    hi = x[1] + y[1] if not (x[1] == POS_INF and y[1] == NEG_INF) else POS_INF
    return (lo, hi)


def iv_neg(x: Interval) -> Interval:
    """Interval of ``-x``."""
    return (-x[1], -x[0])


def iv_scale(x: Interval, c: int) -> Interval:
    """Interval of ``x * c`` for a constant ``c``."""
    if c >= 0:
        return (_mul(x[0], c), _mul(x[1], c))
    return (_mul(x[1], c), _mul(x[0], c))


def iv_mul(x: Interval, y: Interval) -> Interval:
    """Interval of ``x * y`` (corner products)."""
    corners = (_mul(x[0], y[0]), _mul(x[0], y[1]), _mul(x[1], y[0]), _mul(x[1], y[1]))
    return (min(corners), max(corners))


def _floordiv_end(a, c):
    if a in (POS_INF, NEG_INF):
        return a if c > 0 else -a
    return a // c


def iv_floordiv_const(x: Interval, c: int) -> Interval:
    """Interval of ``floordiv(x, c)`` for a nonzero constant ``c``."""
    if c > 0:
        return (_floordiv_end(x[0], c), _floordiv_end(x[1], c))
    return (_floordiv_end(x[1], c), _floordiv_end(x[0], c))


def iv_floordiv(x: Interval, y: Interval) -> Interval | None:
    """Floor division by a divisor interval that excludes zero; None when it may be zero."""
    if y[0] == y[1] and y[0] not in (POS_INF, NEG_INF):
        return iv_floordiv_const(x, y[0]) if y[0] != 0 else None
    if y[0] > 0 or y[1] < 0:
        ends = []
        for a in x:
            for b in y:
                if b in (POS_INF, NEG_INF):
                    ends.append(0 if a not in (POS_INF, NEG_INF) else a * (1 if b > 0 else -1))
                    if a not in (POS_INF, NEG_INF):
                        ends.append(-1 if (a < 0) == (b > 0) and a != 0 else 0)
                else:
                    ends.append(_floordiv_end(a, b))
        return (min(ends), max(ends))
    return None


def iv_floormod(x: Interval, y: Interval) -> Interval | None:
    """Interval of ``floormod(x, y)``; None when the divisor may be zero."""
    if y[0] > 0:
        top = y[1] - 1
        if x[0] >= 0:
            if x[1] < y[0]:
                return x  # already smaller than every divisor
            return (0, min(x[1], top))
        return (0, top)
    if y[1] < 0:
        return (y[0] + 1, 0)
    return None


def iv_truncdiv_const(x: Interval, c: int) -> Interval:
    """Interval of the truncating division ``x / c`` for a nonzero constant."""
    def end(a):
        if a in (POS_INF, NEG_INF):
            return a if c > 0 else -a
        return truncdiv(a, c)

    a, b = end(x[0]), end(x[1])
    return (min(a, b), max(a, b))


def iv_truncmod_const(x: Interval, c: int) -> Interval:
    """Interval of the truncating remainder ``x % c`` for a nonzero constant."""
    m = abs(c) - 1
    if x[0] >= 0:
        return (0, min(x[1], m))
    if x[1] <= 0:
        return (max(x[0], -m), 0)
    return (-m, m)


def iv_union(x: Interval, y: Interval) -> Interval:
    """The smallest interval containing ``x`` and ``y``."""
    return (min(x[0], y[0]), max(x[1], y[1]))


def iv_intersect(x: Interval, y: Interval) -> Interval:
    """The intersection of ``x`` and ``y``."""
    return (max(x[0], y[0]), min(x[1], y[1]))


# ---------------------------------------------------------------------------------
# The analyzer
# ---------------------------------------------------------------------------------


class BoundAnalyzer:
    """Computes constant bounds of expressions, memoized per expression object.

    ``var_bounds`` maps ``id(var)`` to ``(var, lo, hi)``. ``refine`` (optional) is called
    on every integer expression with its structural bound and may tighten it (the
    analyzer uses it to apply facts assumed by ``constraint``).
    """

    def __init__(self) -> None:
        self.var_bounds: dict[int, tuple[Var, int | float, int | float]] = {}
        self.memo: dict[int, tuple[PrimExpr, Interval]] = {}
        self.seen_unbound: set[int] = set()
        self.refine: Callable[[PrimExpr, Interval], Interval] | None = None
        self._dispatch = {
            IntImm: self._imm,
            Var: self._var,
            Add: lambda e: iv_add(self.bound(e.a), self.bound(e.b)),
            Sub: lambda e: iv_add(self.bound(e.a), iv_neg(self.bound(e.b))),
            Mul: self._mul,
            FloorDiv: self._floordiv,
            FloorMod: self._floormod,
            Div: self._truncdiv,
            Mod: self._truncmod,
            Min: lambda e: _min_iv(self.bound(e.a), self.bound(e.b)),
            Max: lambda e: _max_iv(self.bound(e.a), self.bound(e.b)),
            Cast: self._cast,
            Select: lambda e: iv_union(self.bound(e.true_value), self.bound(e.false_value)),
            Call: self._call,
            Let: self._let,
            Ramp: self._ramp,
            Broadcast: lambda e: self.bound(e.value),
            Not: lambda e: (0, 1),
            And: lambda e: (0, 1),
            Or: lambda e: (0, 1),
        }

    def clear(self) -> None:
        """Forget memoized results."""
        self.memo = {}

    def bound(self, e: PrimExpr) -> Interval:
        """The ``(lo, hi)`` bound of ``e``."""
        hit = self.memo.get(id(e))
        if hit is not None:
            return hit[1]
        fn = self._dispatch.get(type(e))
        if fn is None:
            r = (0, 1) if isinstance(e, CmpOp) else dtype_range(e.dtype)
        else:
            r = fn(e)
        if self.refine is not None:
            r = self.refine(e, r)
        self.memo[id(e)] = (e, r)
        return r

    # -- handlers -------------------------------------------------------------------
    def _imm(self, e: IntImm):
        return (e.value, e.value)

    def _var(self, e: Var):
        b = self.var_bounds.get(id(e))
        if b is not None:
            return (b[1], b[2])
        self.seen_unbound.add(id(e))
        return dtype_range(e.dtype)

    def _mul(self, e: Mul):
        x, y = self.bound(e.a), self.bound(e.b)
        if y[0] == y[1]:
            return iv_scale(x, y[0]) if y[0] not in (POS_INF, NEG_INF) else iv_mul(x, y)
        if x[0] == x[1] and x[0] not in (POS_INF, NEG_INF):
            return iv_scale(y, x[0])
        return iv_mul(x, y)

    def _floordiv(self, e: FloorDiv):
        r = iv_floordiv(self.bound(e.a), self.bound(e.b))
        return dtype_range(e.dtype) if r is None else r

    def _floormod(self, e: FloorMod):
        r = iv_floormod(self.bound(e.a), self.bound(e.b))
        return dtype_range(e.dtype) if r is None else r

    def _truncdiv(self, e: Div):
        y = self.bound(e.b)
        if y[0] == y[1] and y[0] not in (0, POS_INF, NEG_INF):
            return iv_truncdiv_const(self.bound(e.a), y[0])
        if not dt.is_integer(e.dtype) and not dt.is_bool(e.dtype):
            return (NEG_INF, POS_INF)
        x = self.bound(e.a)
        if y[0] > 0 or y[1] < 0:
            m = max(abs(x[0]), abs(x[1]))
            return (-m, m)
        return dtype_range(e.dtype)

    def _truncmod(self, e: Mod):
        y = self.bound(e.b)
        if y[0] == y[1] and y[0] not in (0, POS_INF, NEG_INF):
            return iv_truncmod_const(self.bound(e.a), y[0])
        if y[0] > 0 or y[1] < 0:
            m = max(abs(y[0]), abs(y[1])) - 1
            x = self.bound(e.a)
            if x[0] >= 0:
                return (0, min(m, x[1]))
            return (-m, m)
        return dtype_range(e.dtype)

    def _cast(self, e: Cast):
        target = dtype_range(e.dtype)
        if target[0] == NEG_INF:
            return target
        src = e.value.dtype
        if dt.is_float(src):
            return target
        b = self.bound(e.value)
        if target[0] <= b[0] and b[1] <= target[1]:
            return b
        return target

    def _call(self, e: Call):
        if e.op == "if_then_else" and len(e.args) == 3:
            return iv_union(self.bound(e.args[1]), self.bound(e.args[2]))
        return dtype_range(e.dtype)

    def _let(self, e: Let):
        b = self.bound(e.value)
        self.var_bounds[id(e.var)] = (e.var, b[0], b[1])
        return self.bound(e.body)

    def _ramp(self, e: Ramp):
        base = self.bound(e.base)
        step = iv_scale(self.bound(e.stride), e.lanes - 1)
        return iv_union(base, iv_add(base, step))


def _min_iv(x: Interval, y: Interval) -> Interval:
    return (min(x[0], y[0]), min(x[1], y[1]))


def _max_iv(x: Interval, y: Interval) -> Interval:
    return (max(x[0], y[0]), max(x[1], y[1]))

"""Modular sets: every value of an integer expression is ``coeff * k + base`` for some
integer ``k`` (``coeff == 0`` means the expression is the constant ``base``).

Used for alignment (is this index a multiple of 16?) and vectorization (do the lanes of
a ramp stay inside one block?).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from ..expr import (
    Add,
    Broadcast,
    Call,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mul,
    PrimExpr,
    Ramp,
    Select,
    Sub,
    Var,
)


@dataclass(frozen=True, slots=True)
class ModularSet:
    """``{coeff * k + base}``; ``base`` is reduced into ``[0, coeff)`` when coeff > 0."""

    coeff: int
    base: int

    @staticmethod
    def make(coeff: int, base: int) -> ModularSet:
        """A modular set with ``base`` reduced modulo ``coeff``."""
        coeff = abs(coeff)
        if coeff:
            base %= coeff
        return ModularSet(coeff, base)

    @staticmethod
    def everything() -> ModularSet:
        """The set of all integers."""
        return ModularSet(1, 0)

    def is_const(self) -> bool:
        """True when the set holds one value (``base``)."""
        return self.coeff == 0


_EVERYTHING = ModularSet(1, 0)


def _union(a: ModularSet, b: ModularSet) -> ModularSet:
    coeff = gcd(gcd(a.coeff, b.coeff), abs(a.base - b.base))
    return ModularSet.make(coeff, a.base)


class ModularAnalyzer:
    """Computes :class:`ModularSet` of expressions, memoized per expression object.
    ``var_info`` maps ``id(var)`` to ``(var, ModularSet)`` for variables with known
    alignment (from bindings or assumed conditions)."""

    def __init__(self) -> None:
        self.var_info: dict[int, tuple[Var, ModularSet]] = {}
        self.memo: dict[int, tuple[PrimExpr, ModularSet]] = {}

    def clear(self) -> None:
        """Forget memoized results."""
        self.memo = {}

    def modular_set(self, e: PrimExpr) -> ModularSet:
        """The modular set of ``e``."""
        hit = self.memo.get(id(e))
        if hit is not None:
            return hit[1]
        r = self._compute(e)
        self.memo[id(e)] = (e, r)
        return r

    def _compute(self, e: PrimExpr) -> ModularSet:
        cls = type(e)
        ms = self.modular_set
        if cls is IntImm:
            return ModularSet(0, e.value)
        if cls is Var:
            info = self.var_info.get(id(e))
            return info[1] if info is not None else _EVERYTHING
        if cls is Add or cls is Sub:
            a, b = ms(e.a), ms(e.b)
            base = a.base + b.base if cls is Add else a.base - b.base
            return ModularSet.make(gcd(a.coeff, b.coeff), base)
        if cls is Mul:
            a, b = ms(e.a), ms(e.b)
            # (ca*x + ba)(cb*y + bb) = ca*cb*xy + ca*bb*x + cb*ba*y + ba*bb
            coeff = gcd(gcd(a.coeff * b.coeff, a.coeff * b.base), b.coeff * a.base)
            return ModularSet.make(coeff, a.base * b.base)
        if cls is FloorDiv:
            a, b = ms(e.a), ms(e.b)
            if b.is_const() and b.base > 0:
                c = b.base
                if a.is_const():
                    return ModularSet(0, a.base // c)
                if a.coeff % c == 0:
                    return ModularSet.make(a.coeff // c, a.base // c)
            return _EVERYTHING
        if cls is FloorMod:
            a, b = ms(e.a), ms(e.b)
            if b.is_const() and b.base > 0:
                c = b.base
                if a.is_const():
                    return ModularSet(0, a.base % c)
                g = gcd(a.coeff, c)
                return ModularSet.make(g, a.base)
            return _EVERYTHING
        if cls is Min or cls is Max:
            return _union(ms(e.a), ms(e.b))
        if cls is Select:
            return _union(ms(e.true_value), ms(e.false_value))
        if cls is Call and e.op == "if_then_else" and len(e.args) == 3:
            return _union(ms(e.args[1]), ms(e.args[2]))
        if cls is Ramp:
            base, stride = ms(e.base), ms(e.stride)
            return _union(base, ModularSet.make(
                gcd(base.coeff, stride.coeff), base.base + stride.base)) if e.lanes > 1 else base
        if cls is Broadcast:
            return ms(e.value)
        if cls is Let:
            self.var_info[id(e.var)] = (e.var, ms(e.value))
            return ms(e.body)
        return _EVERYTHING

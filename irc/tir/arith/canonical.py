"""The canonical form of signed integer index expressions.

An integer expression is rewritten as a *linear form* ``const + sum(coef_k * atom_k)``:
constant coefficients on *atoms*, which are simplified expressions that are not sums
(variables, loads, non-constant products, ``floordiv``/``floormod`` by a constant of a
linear form, min/max, casts). Like terms combine, so ``i*4 + j - i*4`` is ``j``.

Division by a positive constant ``c`` splits a form ``x`` into ``c*Q + R`` (coefficients
divisible by ``c`` go to ``Q``) and then:

- ``x // c = Q + R // c`` and ``x % c = R % c`` (exact for floor semantics);
- when the bounds of ``R`` lie within one multiple of ``c``, ``R // c`` is that constant
  (so ``(i*16 + j) // 16 -> i`` and ``(i*16 + j) % 16 -> j`` when ``0 <= j < 16``);
- when ``R = g*A + B`` for a divisor ``g`` of ``c`` with ``0 <= B < g``,
  ``R // c = A // (c/g)`` and ``R % c = (A % (c/g))*g + B``;
- nested divisions fold: ``(x // a) // b = x // (a*b)``, ``(x % a) % b = x % b`` (b | a).

When a sum is finished, split pairs recombine: ``(x // c)*c + x % c -> x`` and
``x - (x // c)*c -> x % c``. Atoms print in order of decreasing coefficient magnitude
(``i*1024 + j*16 + k``), ties in order of first appearance.

This module only knows the algebra; the caller supplies key interning, bounds and the
simplification of atoms (see :class:`~irc.tir.arith.analyzer.Analyzer`). It is the
simplifier's form. Graph-level shapes, which have no ranges and multiply symbols, use the
polynomial form (:mod:`~irc.tir.arith.polynomial`, whose docstring says why the two
differ); schedule rules that only need variables' coefficients use the syntactic
:mod:`~irc.tir.arith.affine` forms.
"""

from __future__ import annotations

from math import gcd
from typing import TYPE_CHECKING

from ..expr import (
    Add,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Mod,
    Mul,
    PrimExpr,
    Sub,
)
from .bound import NEG_INF, POS_INF, iv_add, iv_intersect, iv_scale
from .fold import make_const

if TYPE_CHECKING:
    from .analyzer import Analyzer

Terms = dict  # atom key -> (coef, atom expr)


class Lin:
    """``const + sum(coef * atom)`` over one signed integer dtype. Treat as immutable."""

    __slots__ = ("dtype", "const", "terms", "normal")

    def __init__(self, dtype: str, const: int = 0, terms: Terms | None = None,
                 normal: bool = False):
        self.dtype = dtype
        self.const = const
        self.terms: Terms = terms if terms is not None else {}
        self.normal = normal or not self.terms

    def is_const(self) -> bool:
        """True when the form has no terms."""
        return not self.terms

    def __repr__(self) -> str:  # debugging aid
        parts = [f"{c}*{e!r}" for c, e in self.terms.values()]
        return f"Lin({' + '.join(parts)} + {self.const})"


class Canonicalizer:
    """Builds, combines, divides and prints linear forms for an :class:`Analyzer`."""

    def __init__(self, analyzer: Analyzer):
        self.an = analyzer
        self.keys = analyzer.keys
        # atom key -> ("div" | "mod", inner Lin, divisor) for floordiv/floormod atoms
        self.split_info: dict[int, tuple[str, Lin, int]] = {}
        self.memo: dict[int, tuple[PrimExpr, Lin]] = {}

    def clear(self) -> None:
        """Forget memoized forms."""
        self.memo = {}

    # -- building -------------------------------------------------------------------
    def lin_of(self, e: PrimExpr) -> Lin:
        """The normalized linear form of the signed integer scalar expression ``e``."""
        hit = self.memo.get(id(e))
        if hit is not None:
            return hit[1]
        cls = type(e)
        dtype = e.dtype
        if cls is IntImm:
            r = Lin(dtype, e.value)
        elif cls is Add:
            r = self.normalize(add(self.lin_of(e.a), self.lin_of(e.b)))
        elif cls is Sub:
            r = self.normalize(add(self.lin_of(e.a), scale(self.lin_of(e.b), -1)))
        elif cls is Mul:
            r = self._mul(e)
        elif cls is FloorDiv or cls is Div:
            r = self._div(e, floor=cls is FloorDiv)
        elif cls is FloorMod or cls is Mod:
            r = self._mod(e, floor=cls is FloorMod)
        else:
            s = self.an.simplify(e)
            if s is not e and type(s) in _ARITH:
                r = self.lin_of(s)
            else:
                r = self.atom(s)
        self.memo[id(e)] = (e, r)
        return r

    def atom(self, e: PrimExpr) -> Lin:
        """``e`` (already simplified) as a one-term form; a constant when its bound is."""
        if type(e) is IntImm:
            return Lin(e.dtype, e.value)
        lo, hi = self.an.bounds.bound(e)
        if lo == hi:
            return Lin(e.dtype, int(lo))
        return Lin(e.dtype, 0, {self.keys.key(e): (1, e)}, normal=True)

    def _mul(self, e: Mul) -> Lin:
        la, lb = self.lin_of(e.a), self.lin_of(e.b)
        if lb.is_const():
            return scale(la, lb.const)
        if la.is_const():
            return scale(lb, la.const)
        return self.atom(Mul(dtype=e.dtype, a=self.to_expr(la), b=self.to_expr(lb)))

    def _nonneg(self, lin: Lin) -> bool:
        return self.bound(lin)[0] >= 0

    def _div(self, e: PrimExpr, floor: bool) -> Lin:
        la, lb = self.lin_of(e.a), self.lin_of(e.b)
        if lb.is_const() and lb.const != 0:
            c = lb.const
            if not floor and not (self._nonneg(la) and c > 0):
                return self._opaque(e, la, lb, floor)
            if c > 0:
                return self.floordiv(la, c)
            return self.floordiv(scale(la, -1), -c)
        return self._opaque(e, la, lb, floor)

    def _mod(self, e: PrimExpr, floor: bool) -> Lin:
        la, lb = self.lin_of(e.a), self.lin_of(e.b)
        if lb.is_const() and lb.const != 0:
            c = lb.const
            if not floor and not (self._nonneg(la) and c > 0):
                return self._opaque(e, la, lb, floor)
            if c > 0:
                return self.floormod(la, c)
            return scale(self.floormod(scale(la, -1), -c), -1)
        return self._opaque(e, la, lb, floor)

    def _opaque(self, e: PrimExpr, la: Lin, lb: Lin, floor: bool) -> Lin:
        """A division the linear algebra cannot split: simplify it with the rules."""
        a, b = self.to_expr(la), self.to_expr(lb)
        node = e if (a is e.a and b is e.b) else type(e)(dtype=e.dtype, a=a, b=b)
        s = self.an.rewrite(node)
        if s is not node and type(s) in _ARITH:
            return self.lin_of(s)
        return self.atom(s)

    # -- division by positive constants ----------------------------------------------
    def _split(self, x: Lin, c: int) -> tuple[Lin, Lin]:
        """``x = c*Q + R`` with R holding the terms whose coefficient ``c`` does not divide
        and the constant remainder in ``[0, c)``."""
        q_terms: Terms = {}
        r_terms: Terms = {}
        for k, (coef, ex) in x.terms.items():
            if coef % c == 0:
                q_terms[k] = (coef // c, ex)
            else:
                r_terms[k] = (coef, ex)
        qc, rc = divmod(x.const, c)
        return (Lin(x.dtype, qc, q_terms, normal=True), Lin(x.dtype, rc, r_terms, normal=True))

    def _gcd_split(self, r: Lin, c: int) -> tuple[int, Lin, Lin] | None:
        """``(g, A, B)`` with ``r = g*A + B``, ``g`` a divisor of ``c`` (1 < g < c) and
        ``0 <= B < g``. Candidates take the terms with the largest coefficients into A."""
        items = sorted(r.terms.items(), key=_item_order)
        g = c
        for p in range(1, len(items) + 1):
            g = gcd(g, items[p - 1][1][0])
            if g <= 1:
                return None
            a_terms = {k: (coef // g, ex) for k, (coef, ex) in items[:p]}
            b_part = Lin(r.dtype, r.const % g, dict(items[p:]), normal=True)
            lo, hi = self.bound(b_part)
            if lo >= 0 and hi < g:
                return g, Lin(r.dtype, r.const // g, a_terms, normal=True), b_part
        return None

    def floordiv(self, x: Lin, c: int) -> Lin:
        """The form of ``floordiv(x, c)`` for a constant ``c > 0``."""
        if c == 1:
            return x
        q, r = self._split(x, c)
        return add(q, self._floordiv_rest(r, c))

    def _floordiv_rest(self, r: Lin, c: int) -> Lin:
        dtype = r.dtype
        if not r.terms:
            return Lin(dtype, r.const // c)
        lo, hi = self.bound(r)
        if lo != NEG_INF and hi != POS_INF and lo // c == hi // c:
            return Lin(dtype, int(lo // c))
        if len(r.terms) == 1:
            (k, (coef, ex)), = r.terms.items()
            info = self.split_info.get(k)
            if coef == 1 and info is not None and info[0] == "div":
                # (x // a + r) // c -> (x + r*a) // (a*c)
                inner, a = info[1], info[2]
                return self.floordiv(add(inner, Lin(dtype, r.const * a)), a * c)
        split = self._gcd_split(r, c)
        if split is not None:
            g, a_part, _ = split
            return self.floordiv(a_part, c // g)
        ex = FloorDiv(dtype=dtype, a=self.to_expr(r), b=make_const(c, dtype))
        return self._split_atom(ex, "div", r, c)

    def floormod(self, x: Lin, c: int) -> Lin:
        """The form of ``floormod(x, c)`` for a constant ``c > 0``."""
        dtype = x.dtype
        if c == 1:
            return Lin(dtype, 0)
        _, r = self._split(x, c)
        if not r.terms:
            return Lin(dtype, r.const)
        lo, hi = self.bound(r)
        if lo != NEG_INF and hi != POS_INF and lo // c == hi // c:
            return add(r, Lin(dtype, -int(lo // c) * c))
        if len(r.terms) == 1 and r.const == 0:
            (k, (coef, ex)), = r.terms.items()
            info = self.split_info.get(k)
            if coef == 1 and info is not None and info[0] == "mod" and info[2] % c == 0:
                # (x % a) % c -> x % c when c divides a
                return self.floormod(info[1], c)
        split = self._gcd_split(r, c)
        if split is not None:
            g, a_part, b_part = split
            return add(scale(self.floormod(a_part, c // g), g), b_part)
        ex = FloorMod(dtype=dtype, a=self.to_expr(r), b=make_const(c, dtype))
        return self._split_atom(ex, "mod", r, c)

    def _split_atom(self, ex: PrimExpr, kind: str, inner: Lin, c: int) -> Lin:
        lo, hi = self.an.bounds.bound(ex)
        if lo == hi:
            return Lin(ex.dtype, int(lo))
        k = self.keys.key(ex)
        if k not in self.split_info:
            self.split_info[k] = (kind, inner, c)
        return Lin(ex.dtype, 0, {k: (1, ex)}, normal=True)

    # -- recombination of split pairs -------------------------------------------------
    def normalize(self, x: Lin) -> Lin:
        """Recombine split pairs: ``(e // c)*c*m + (e % c)*m -> e*m`` and
        ``e*m - (e // c)*c*m -> (e % c)*m`` (``e`` may be spread over several terms, and
        ``e % c`` is compared in canonical form, so nested splits recombine too)."""
        if x.normal:
            return x
        info = self.split_info
        for _ in range(64):  # each rewrite removes a division; the cap is a safety net
            rewritten = None
            for k, (d, _) in x.terms.items():
                split = info.get(k)
                if split is None or split[0] != "div" or d % split[2] != 0:
                    continue
                _, inner, c = split
                m = d // c
                rest = Lin(x.dtype, x.const, {kk: v for kk, v in x.terms.items() if kk != k})
                rem = self.floormod(inner, c)
                if rem.terms and _contains(x, rem, m):
                    # d*(e // c) + m*(e % c)  ->  m*e
                    rewritten = add(add(rest, scale(rem, -m)), scale(inner, m))
                    break
                if inner.terms and _contains(x, inner, -m):
                    # -m*e + d*(e // c)  ->  -m*(e % c)
                    rewritten = add(add(rest, scale(inner, m)), scale(rem, -m))
                    break
            if rewritten is None:
                break
            x = rewritten
        x.normal = True
        return x

    # -- bounds ---------------------------------------------------------------------
    def bound(self, x: Lin) -> tuple:
        """Constant bound of a linear form (sum of its atoms' bounds, plus assumed facts)."""
        r = (x.const, x.const)
        bound = self.an.bounds.bound
        for coef, ex in x.terms.values():
            r = iv_add(r, iv_scale(bound(ex), coef))
        if self.an.facts and len(x.terms) > 1:
            fact = self.an.fact_bound(x)
            if fact is not None:
                r = iv_intersect(r, fact)
        return r

    # -- printing -------------------------------------------------------------------
    def to_expr(self, x: Lin) -> PrimExpr:
        """The expression of a linear form, e.g. ``i*16 + j - 3``."""
        dtype = x.dtype
        if not x.terms:
            return make_const(x.const, dtype)
        items = sorted(x.terms.values(), key=_term_order)
        expr = None
        if all(c < 0 for c, _ in items) and x.const > 0:
            expr = make_const(x.const, dtype)
            const = 0
        else:
            const = x.const
        for coef, ex in items:
            if coef > 0:
                term = ex if coef == 1 else Mul(dtype=dtype, a=ex, b=make_const(coef, dtype))
                expr = term if expr is None else Add(dtype=dtype, a=expr, b=term)
        for coef, ex in items:
            if coef < 0:
                if expr is None:
                    expr = Mul(dtype=dtype, a=ex, b=make_const(coef, dtype))
                else:
                    term = ex if coef == -1 else Mul(dtype=dtype, a=ex,
                                                     b=make_const(-coef, dtype))
                    expr = Sub(dtype=dtype, a=expr, b=term)
        if const > 0:
            expr = Add(dtype=dtype, a=expr, b=make_const(const, dtype))
        elif const < 0:
            expr = Sub(dtype=dtype, a=expr, b=make_const(-const, dtype))
        return expr


def _term_order(t):
    return -abs(t[0])


def _item_order(kv):
    return -abs(kv[1][0])


def add(x: Lin, y: Lin) -> Lin:
    """``x + y``."""
    if not y.terms:
        if y.const == 0:
            return x
        return Lin(x.dtype, x.const + y.const, x.terms, normal=x.normal)
    if not x.terms:
        return Lin(y.dtype, x.const + y.const, y.terms, normal=y.normal)
    terms = dict(x.terms)
    for k, (c, ex) in y.terms.items():
        old = terms.get(k)
        if old is None:
            terms[k] = (c, ex)
        else:
            s = old[0] + c
            if s == 0:
                del terms[k]
            else:
                terms[k] = (s, old[1])
    return Lin(x.dtype, x.const + y.const, terms)


def _contains(x: Lin, part: Lin, m: int) -> bool:
    """Whether every term of ``m * part`` occurs in ``x`` with exactly its coefficient."""
    terms = x.terms
    for k, (c, _) in part.terms.items():
        have = terms.get(k)
        if have is None or have[0] != m * c:
            return False
    return True


def scale(x: Lin, k: int) -> Lin:
    """``k * x``."""
    if k == 1:
        return x
    if k == 0:
        return Lin(x.dtype, 0)
    return Lin(x.dtype, x.const * k, {key: (c * k, ex) for key, (c, ex) in x.terms.items()},
               normal=x.normal)


def normalized_terms(x: Lin) -> tuple[tuple, int, int] | None:
    """``(sorted (key, coef) pairs of N, s, c)`` with ``x = s*N + c``, the coefficients of
    N coprime and its first coefficient positive; None for a constant form."""
    if not x.terms:
        return None
    pairs = sorted((k, c) for k, (c, _) in x.terms.items())
    g = 0
    for _, c in pairs:
        g = gcd(g, c)
    if pairs[0][1] < 0:
        g = -g
    return tuple((k, c // g) for k, c in pairs), g, x.const


_ARITH = (Add, Sub, Mul, FloorDiv, FloorMod, Div, Mod, IntImm)

"""The polynomial normal form of integer expressions, and the context-free proofs built on
it: what shape inference needs to compare, fold and divide symbolic dimensions.

An integer expression is read as a polynomial over *atoms* with integer coefficients:
``n*m*4 + n - 1`` is ``{(n, m): 4, (n,): 1, (): -1}``. A monomial is a sorted tuple of
atom keys (repeated for powers), so products commute (``m*n*4 == n*m*4``) and like terms
combine. Atoms are

- variables (keyed by name, then by order of first appearance, so rebuilt expressions
  print the same on every run);
- ``floordiv``/``floormod``/``min``/``max`` whose operands are themselves normalized: a
  division by a positive constant ``c`` first takes out the terms whose coefficients
  ``c`` divides (``(c*Q + R) // c = Q + R // c`` and ``(c*Q + R) % c = R % c``, exact
  for floor semantics), and all-constant operands fold;
- anything else, by object identity.

Casts between integer dtypes are transparent. No variable ranges are used: the form is
the same wherever the expression appears, which is what graph-level shapes need (a
dimension has no enclosing loop to bound it).

Proofs: ``a == b`` is proven when ``a - b`` normalizes to zero, ``a != b`` when it
normalizes to a non-zero constant; everything else is *unknown* (shape inference then
trusts the program and leaves the check to run time). ``exact_divide`` divides by a
single monomial when every term is a multiple of it.

Why this is not :mod:`~irc.tir.arith.canonical` (the Analyzer's linear form): that form is
linear over atoms and keeps a product of two non-constant factors as one opaque atom
(``n*m`` and ``m*n`` are different atoms unless the simplifier reorders them), its
division rules consult variable bounds from the Analyzer's bindings, and it prints atoms by
decreasing coefficient, the order the simplifier's output is written in. Here products of
symbols are first-class monomials, nothing depends on bindings, and expressions are
rebuilt positive terms first, higher degree first, variables by name (the order graph-level
shapes print in). Both apply the same exact rule to a division by a positive constant
(take out the multiples it divides, keep the remainder under the division) and build
constants with :func:`~irc.tir.arith.fold.make_const`.
Bounds of index expressions come from the Analyzer
(:meth:`~irc.tir.arith.Analyzer.const_int_bound`); they are not duplicated here.
"""

from __future__ import annotations

from typing import Iterable, Union

from ...core import dtype as dt
from ..expr import (
    Add,
    Cast,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    Sub,
    Var,
    floordiv,
    floormod,
    max_,
    min_,
)
from .fold import make_const

# A polynomial maps a monomial (a sorted tuple of atom keys) to its non-zero coefficient;
# the constant term is the empty monomial ``()``.
Polynomial = dict[tuple, int]

_OpaqueBinary = Union[FloorDiv, FloorMod, Min, Max]

# How each opaque binary operator folds on constants and rebuilds its expression.
_FOLD = {
    FloorDiv: lambda a, b: a // b if b else None,
    FloorMod: lambda a, b: a % b if b else None,
    Min: min,
    Max: max,
}
_REBUILD = {FloorDiv: floordiv, FloorMod: floormod, Min: min_, Max: max_}


class PolynomialForm:
    """Converts expressions to polynomials (:meth:`of`) and back (:meth:`to_expr`),
    remembering each atom's expression. Atom keys are only meaningful within one
    instance, so compare polynomials made by the same instance."""

    __slots__ = ("atoms", "var_index")

    def __init__(self) -> None:
        self.atoms: dict[tuple, PrimExpr] = {}
        self.var_index: dict[int, int] = {}

    def _var_key(self, v: Var) -> tuple:
        index = self.var_index.setdefault(id(v), len(self.var_index))
        return ("", v.name, index)  # "" sorts variables before other atoms

    # -- to a polynomial ------------------------------------------------------------
    def of(self, e: PrimExpr) -> Polynomial:
        """The polynomial of the integer expression ``e``."""
        if isinstance(e, IntImm):
            return {(): e.value} if e.value else {}
        if isinstance(e, Var):
            key = self._var_key(e)
            self.atoms[key] = e
            return {(key,): 1}
        if isinstance(e, Add):
            return poly_add(self.of(e.a), self.of(e.b))
        if isinstance(e, Sub):
            return poly_add(self.of(e.a), poly_scale(self.of(e.b), -1))
        if isinstance(e, Mul):
            return poly_mul(self.of(e.a), self.of(e.b))
        if isinstance(e, Cast) and dt.is_integer(e.dtype) and dt.is_integer(e.value.dtype):
            return self.of(e.value)
        if isinstance(e, (FloorDiv, FloorMod, Min, Max)):
            return self._opaque_binary(e)
        key = ("x", id(e))
        self.atoms[key] = e
        return {(key,): 1}

    def _opaque_binary(self, e: _OpaqueBinary) -> Polynomial:
        cls = type(e)
        pa, pb = self.of(e.a), self.of(e.b)
        ca, cb = poly_const(pa), poly_const(pb)
        if ca is not None and cb is not None:
            folded = _FOLD[cls](ca, cb)
            if folded is not None:
                return _const(folded)
        if cls in (FloorDiv, FloorMod) and cb is not None and cb > 0:
            # (cb * q + rest) // cb == q + rest // cb, and the same rest is left modulo cb.
            q: Polynomial = {}
            rest: Polynomial = {}
            for m, c in pa.items():
                if m == ():
                    q = poly_add(q, _const(c // cb))
                    rest = poly_add(rest, _const(c % cb))
                elif c % cb == 0:
                    q[m] = c // cb
                else:
                    rest[m] = c
            if rest and poly_const(rest) is None:
                if not q:
                    pa = rest  # nothing to take out: keep the opaque atom below
                else:
                    inner = self._atom(cls, rest, pb)
                    return poly_add(q, inner) if cls is FloorDiv else inner
            else:
                return q if cls is FloorDiv else rest
        if cls in (Min, Max) and pa == pb:
            return pa
        return self._atom(cls, pa, pb)

    def _atom(self, cls: type, pa: Polynomial, pb: Polynomial) -> Polynomial:
        fa, fb = _freeze(pa), _freeze(pb)
        if cls in (Min, Max) and fb < fa:
            fa, fb = fb, fa
            pa, pb = pb, pa
        key = (cls.__name__, fa, fb)
        if key not in self.atoms:
            self.atoms[key] = _REBUILD[cls](self.to_expr(pa), self.to_expr(pb))
        return {(key,): 1}

    # -- back to an expression ------------------------------------------------------
    def to_expr(self, p: Polynomial) -> PrimExpr:
        """The int64 expression of ``p``: positive terms first (``n - m`` rather than
        ``-1 * m + n``), higher degree first, then by atom key."""
        terms = sorted((m for m in p if m), key=lambda m: (p[m] < 0, -len(m), m))
        result: PrimExpr | None = None
        const = p.get((), 0)
        if terms and p[terms[0]] < 0 and const > 0:
            result = _i64(const)
            const = 0
        for m in terms:
            c = p[m]
            mono: PrimExpr = self.atoms[m[0]]
            for k in m[1:]:
                mono = mono * self.atoms[k]
            if result is None:
                result = mono if c == 1 else mono * _i64(c)
            elif c > 0:
                result = result + (mono if c == 1 else mono * _i64(c))
            else:
                result = result - (mono if c == -1 else mono * _i64(-c))
        if result is None:
            return _i64(const)
        if const > 0:
            return result + _i64(const)
        if const < 0:
            return result - _i64(-const)
        return result


# ---------------------------------------------------------------------------------
# Polynomial arithmetic
# ---------------------------------------------------------------------------------


def poly_const(p: Polynomial) -> int | None:
    """The value of ``p`` when it is a constant, else None."""
    if not p:
        return 0
    if len(p) == 1 and () in p:
        return p[()]
    return None


def poly_add(a: Polynomial, b: Polynomial) -> Polynomial:
    """``a + b``."""
    out = dict(a)
    for m, c in b.items():
        v = out.get(m, 0) + c
        if v:
            out[m] = v
        else:
            out.pop(m, None)
    return out


def poly_scale(a: Polynomial, k: int) -> Polynomial:
    """``k * a``."""
    return {m: c * k for m, c in a.items()} if k else {}


def poly_mul(a: Polynomial, b: Polynomial) -> Polynomial:
    """``a * b``."""
    out: Polynomial = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            out = poly_add(out, {tuple(sorted(ma + mb)): ca * cb})
    return out


def _const(v: int) -> Polynomial:
    return {(): v} if v else {}


def _freeze(p: Polynomial) -> tuple:
    return tuple(sorted(p.items()))


def _i64(v: int) -> PrimExpr:
    return make_const(v, "int64")


def _as_expr(value: PrimExpr | int) -> PrimExpr:
    return _i64(value) if isinstance(value, int) else value


# ---------------------------------------------------------------------------------
# Normalization and proofs
# ---------------------------------------------------------------------------------


def normalize(e: PrimExpr | int) -> PrimExpr:
    """``e`` rebuilt from its polynomial normal form (constants folded, like terms
    collected, exact divisions by constants carried out): ``(n + 2 - 3) // 1 + 1`` is
    ``n``. Non-integer expressions are returned unchanged."""
    e = _as_expr(e)
    if isinstance(e, (IntImm, Var)) or not dt.is_integer(e.dtype):
        return e
    form = PolynomialForm()
    out = form.to_expr(form.of(e))
    if out.dtype != e.dtype and isinstance(out, IntImm):
        return IntImm(dtype=e.dtype, value=out.value)
    return out


def _difference(a: PrimExpr, b: PrimExpr) -> Polynomial:
    form = PolynomialForm()
    return poly_add(form.of(a), poly_scale(form.of(b), -1))


def prove_equal(a: PrimExpr | int, b: PrimExpr | int) -> bool:
    """True when the integer expressions ``a`` and ``b`` are equal for every value of their
    symbolic variables (as far as the polynomial normal form shows)."""
    a, b = _as_expr(a), _as_expr(b)
    if a is b:
        return True
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value == b.value
    return not _difference(a, b)


def prove_not_equal(a: PrimExpr | int, b: PrimExpr | int) -> bool:
    """True when ``a`` and ``b`` provably differ (their difference is a non-zero constant)."""
    a, b = _as_expr(a), _as_expr(b)
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value != b.value
    if a is b:
        return False
    c = poly_const(_difference(a, b))
    return c is not None and c != 0


def const_value(e: PrimExpr | int) -> int | None:
    """The integer value of ``e`` when it is a constant after normalization, else None
    (also for non-integer expressions)."""
    if isinstance(e, int):
        return e
    if isinstance(e, IntImm):
        return e.value
    if not dt.is_integer(e.dtype):
        return None
    return poly_const(PolynomialForm().of(e))


def shape_product(dims: Iterable[PrimExpr | int]) -> PrimExpr:
    """The product of ``dims`` as a normalized int64 expression (1 for no dimensions)."""
    result: PrimExpr = _i64(1)
    for d in dims:
        result = result * _as_expr(d)
    return normalize(result)


def exact_divide(a: PrimExpr | int, b: PrimExpr | int) -> PrimExpr | None:
    """``a / b`` when ``b`` is a single monomial dividing every term of ``a``
    (``4*n*784 / 784`` is ``4*n``, ``n*m*8 / (m*2)`` is ``n*4``), else None. Division by
    zero gives None."""
    form = PolynomialForm()
    pa, pb = form.of(_as_expr(a)), form.of(_as_expr(b))
    if len(pb) != 1:
        return None
    ((mb, cb),) = pb.items()
    out: Polynomial = {}
    for m, c in pa.items():
        rest = list(m)
        for k in mb:
            if k not in rest:
                return None
            rest.remove(k)
        if c % cb:
            return None
        out[tuple(rest)] = c // cb
    return form.to_expr(out)


__all__ = [
    "Polynomial",
    "PolynomialForm",
    "const_value",
    "exact_divide",
    "normalize",
    "poly_add",
    "poly_const",
    "poly_mul",
    "poly_scale",
    "prove_equal",
    "prove_not_equal",
    "shape_product",
]

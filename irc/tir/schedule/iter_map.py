"""Affine iteration maps: index expressions as sums of digits of loop variables.

A binding such as ``i_0 * 16 + i_1`` or ``fused // 8 % 4`` is written in the normal form
``base + sum(scale * (v // lower % extent))`` over loop variables ``v`` with constant
ranges. From that form the schedule decides whether bindings are affine, whether they
map loop iterations one to one onto block iterations (a bijection), which digits of a
loop variable a block uses, and how to split a binding into an outer and an inner part
(blockize). Expressions outside the form (products of two loop variables, divisions that
cut a loop variable at a non-dividing boundary, symbolic extents) are reported as not
affine: callers then refuse the transformation or fall back to a conservative check.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..expr import (
    Add,
    FloorDiv,
    FloorMod,
    IntImm,
    Mul,
    PrimExpr,
    Sub,
    Var,
    const,
    floordiv,
    floormod,
)


@dataclass(frozen=True, slots=True)
class Digit:
    """``scale * ((var - min) // lower % extent)`` for a loop variable ``var``."""

    var: Var
    lower: int
    extent: int
    scale: int


@dataclass(frozen=True, slots=True)
class AffineForm:
    """``base + sum(digits)``."""

    digits: tuple[Digit, ...]
    base: int

    def bounds(self) -> tuple[int, int]:
        """The smallest and largest value of the form."""
        lo = hi = self.base
        for d in self.digits:
            span = d.scale * (d.extent - 1)
            if span >= 0:
                hi += span
            else:
                lo += span
        return lo, hi


class NotAffine(Exception):
    """Internal: the expression is outside the affine normal form."""


Domains = dict[int, tuple[Var, int, int]]  # id(var) -> (var, min, extent)


def detect(exprs, doms: Domains) -> list[AffineForm] | None:
    """The affine forms of ``exprs`` over the loop domains ``doms`` (None when one of
    them is not affine)."""
    try:
        return [_form(e, doms) for e in exprs]
    except NotAffine:
        return None


def _form(e: PrimExpr, doms: Domains) -> AffineForm:
    t = type(e)
    if t is IntImm:
        return AffineForm((), e.value)
    if t is Var:
        d = doms.get(id(e))
        if d is None:
            raise NotAffine
        _, mn, ext = d
        if ext == 1:
            return AffineForm((), mn)
        return AffineForm((Digit(e, 1, ext, 1),), mn)
    if t is Add or t is Sub:
        a = _form(e.a, doms)
        b = _form(e.b, doms)
        if t is Sub:
            b = _scaled(b, -1)
        return _merge(AffineForm(a.digits + b.digits, a.base + b.base))
    if t is Mul:
        if type(e.b) is IntImm:
            return _scaled(_form(e.a, doms), e.b.value)
        if type(e.a) is IntImm:
            return _scaled(_form(e.b, doms), e.a.value)
        raise NotAffine
    if t is FloorDiv or t is FloorMod:
        if type(e.b) is not IntImm or e.b.value <= 0:
            raise NotAffine
        return _divmod(_form(e.a, doms), e.b.value, t is FloorDiv)
    raise NotAffine


def _scaled(f: AffineForm, c: int) -> AffineForm:
    if c == 0:
        return AffineForm((), 0)
    return AffineForm(tuple(Digit(d.var, d.lower, d.extent, d.scale * c) for d in f.digits),
                      f.base * c)


def _merge(f: AffineForm) -> AffineForm:
    """Combine digits of the same variable range and drop zero scales."""
    seen: dict[tuple[int, int, int], int] = {}
    order: list[Digit] = []
    for d in f.digits:
        key = (id(d.var), d.lower, d.extent)
        if key in seen:
            i = seen[key]
            old = order[i]
            order[i] = Digit(old.var, old.lower, old.extent, old.scale + d.scale)
        else:
            seen[key] = len(order)
            order.append(d)
    return AffineForm(tuple(d for d in order if d.scale != 0), f.base)


def _divmod(f: AffineForm, c: int, is_div: bool) -> AffineForm:
    # Terms whose scale is a multiple of c pass through the division exactly; if the rest
    # (with the base) stays inside [0, c), it only matters for the remainder.
    whole = [d for d in f.digits if d.scale % c == 0]
    rest = AffineForm(tuple(d for d in f.digits if d.scale % c != 0), f.base % c)
    lo, hi = rest.bounds()
    if 0 <= lo and hi < c:
        if is_div:
            return AffineForm(tuple(Digit(d.var, d.lower, d.extent, d.scale // c)
                                    for d in whole), f.base // c)
        return rest
    fused = _fused(f)
    if fused is None:
        raise NotAffine
    g, digits, total = fused
    # value = base + g * F with F a mixed-radix number in [0, total)
    if f.base % c == 0 and c % g == 0:
        cc = c // g
        if is_div:
            lower, extent = cc, -(-total // cc)
            pieces = _slice(digits, lower, extent)
            return AffineForm(pieces, f.base // c)
        pieces = _slice(digits, 1, cc)
        return AffineForm(tuple(Digit(d.var, d.lower, d.extent, d.scale * g) for d in pieces),
                          0)
    raise NotAffine


def _fused(f: AffineForm):
    """``(g, digits sorted, total)`` when the digits form ``g * F`` with F a mixed-radix
    number (each scale the previous scale times the previous extent)."""
    digits = sorted(f.digits, key=lambda d: d.scale)
    if not digits or digits[0].scale <= 0:
        return None
    g = digits[0].scale
    expect = g
    total = 1
    for d in digits:
        if d.scale != expect:
            return None
        expect *= d.extent
        total *= d.extent
    return g, digits, total


def _slice(digits: list[Digit], lower: int, extent: int) -> tuple[Digit, ...]:
    """The digits of ``F // lower % extent`` for the mixed-radix number F (scale removed)
    given by ``digits``, each with its weight in the result."""
    out = []
    place = 1  # place value of the current digit inside F
    total = 1
    for d in digits:
        total *= d.extent
    top = min(lower * extent, total)
    for d in digits:
        a, b = place, place * d.extent
        place = b
        lo, hi = max(a, lower), min(b, top)
        if lo >= hi:
            continue
        # The window must cut this digit at divisors of its extent.
        if lo % a or hi % a or d.extent % (hi // a) or lo % lower:
            raise NotAffine
        p, q = lo // a, hi // a
        if q % p:
            raise NotAffine
        out.append(Digit(d.var, d.lower * p, q // p, lo // lower))
    return tuple(out)


# ---------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------


def is_mixed_radix(f: AffineForm) -> bool:
    """True when the form enumerates ``[base, base + prod(extents))`` one to one."""
    if not f.digits:
        return True
    fused = _fused(f)
    return fused is not None and fused[0] == 1


def used_digits(forms: list[AffineForm]) -> dict[int, list[tuple[int, int]]]:
    """For each variable, the digit ranges ``[lower, lower * extent)`` the forms use."""
    out: dict[int, list[tuple[int, int]]] = {}
    for f in forms:
        for d in f.digits:
            out.setdefault(id(d.var), []).append((d.lower, d.lower * d.extent))
    return out


def covers(ranges: list[tuple[int, int]], extent: int) -> bool:
    """True when the digit ranges tile ``[1, extent)`` exactly (no gap, no overlap)."""
    pos = 1
    for lo, hi in sorted(ranges):
        if lo != pos:
            return False
        pos = hi
    return pos >= extent


def is_injective(forms: list[AffineForm], doms: Domains, var_ids_: set[int]) -> bool:
    """True when distinct values of the variables ``var_ids_`` always give distinct form
    values: each form is mixed-radix and the variables' digits are all used, once."""
    if not all(is_mixed_radix(f) for f in forms):
        return False
    used = used_digits(forms)
    for vid in var_ids_:
        _, _, ext = doms[vid]
        if ext == 1:
            continue
        if not covers(used.get(vid, []), ext):
            return False
    return True


def is_bijective(forms: list[AffineForm], doms: Domains, extents: list[int]) -> bool:
    """True when the forms map the product of the domains one to one onto
    ``[0, extents[0]) x [0, extents[1]) x ...``."""
    for f, ext in zip(forms, extents):
        lo, hi = f.bounds()
        if lo != 0 or hi != ext - 1:
            return False
    return is_injective(forms, doms, set(doms))


def to_expr(f: AffineForm, dtype: str, doms: Domains,
            subst: dict[int, PrimExpr] | None = None) -> PrimExpr:
    """The form as an expression over its variables (replaced through ``subst``)."""
    terms: list[PrimExpr] = []
    for d in sorted(f.digits, key=lambda x: -x.scale):
        _, mn, ext = doms[id(d.var)]
        v: PrimExpr = d.var if subst is None else subst.get(id(d.var), d.var)
        if mn != 0:
            v = v - mn
        if d.lower != 1:
            v = floordiv(v, d.lower)
        if d.lower * d.extent < ext:
            v = floormod(v, d.extent)
        if d.scale != 1:
            v = v * d.scale
        terms.append(v)
    if not terms:
        return const(f.base, dtype)
    e = terms[0]
    for t in terms[1:]:
        e = e + t
    if f.base > 0:
        e = e + f.base
    elif f.base < 0:
        e = e - (-f.base)
    return e

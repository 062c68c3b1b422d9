"""The rewrite rules of the simplifier, as tables of ``rule(pattern, replacement,
condition)`` per root node class, with the algebra in a trailing comment.

Rules run on a node whose children are already simplified, after constant folding; the
first rule that matches (and whose condition holds) wins and its result is simplified
again. Integer sums, products by constants and floordiv/floormod by constants never reach
these tables: the canonical form (``canonical.py``) handles them. Every rule must make
the expression smaller or move it toward a normal form, so rewriting terminates.
"""

from __future__ import annotations

from ...core import dtype as dt
from .. import expr as E
from .pattern import (
    PConst,
    PVar,
    pbroadcast,
    pcast,
    pif_then_else,
    pmax,
    pmin,
    pramp,
    pselect,
    ptruncdiv,
    ptruncmod,
    rule,
)

x, y, z, w = PVar("x"), PVar("y"), PVar("z"), PVar("w")
c1, c2 = PConst("c1"), PConst("c2")


def _int(e: E.PrimExpr) -> bool:
    return dt.is_integer(e.dtype)


def _lanes(m) -> int:
    return dt.lanes(m.root.dtype)


def _ramp(base, stride, lanes) -> E.PrimExpr:
    return E.Ramp(dtype=dt.with_lanes(base.dtype, lanes), base=base, stride=stride, lanes=lanes)


def _bcast(value, lanes) -> E.PrimExpr:
    return E.Broadcast(dtype=dt.with_lanes(value.dtype, lanes), value=value, lanes=lanes)


def _ramp_no_wrap(m, c: int) -> bool:
    """All lanes of ``ramp(x, c1)`` fall in one block of ``c`` consecutive integers."""
    if c <= 0 or m.c1 < 0:
        return False
    span = m.c1 * (_lanes(m) - 1)
    ms = m.an.modular_set(m.x)
    if ms.coeff % c == 0:
        return ms.base % c + span < c
    return m.an.can_prove_equal(E.floordiv(m.x + span, c), E.floordiv(m.x, c))


MIN_RULES = [
    rule(pmin(x, x), x),  # min(x, x) -> x
    rule(pmin(x, y), x, lambda m: m.an.prove_le(m.x, m.y)),  # min(x, y) -> x if x <= y
    rule(pmin(x, y), y, lambda m: m.an.prove_le(m.y, m.x)),  # min(x, y) -> y if y <= x
    rule(pmin(pmax(x, y), x), x),  # min(max(x, y), x) -> x
    rule(pmin(pmax(x, y), y), y),  # min(max(x, y), y) -> y
    rule(pmin(x, pmax(x, y)), x),  # min(x, max(x, y)) -> x
    rule(pmin(y, pmax(x, y)), y),  # min(y, max(x, y)) -> y
    rule(pmin(pmin(x, y), x), lambda m: m.root.a),  # min(min(x, y), x) -> min(x, y)
    rule(pmin(pmin(x, y), y), lambda m: m.root.a),  # min(min(x, y), y) -> min(x, y)
    rule(pmin(x * c1, y * c1), lambda m: E.min_(m.x, m.y) * m.c1,
         lambda m: _int(m.x) and m.c1 > 0),  # min(x*c, y*c) -> min(x, y)*c, c > 0
    rule(pmin(x * c1, y * c1), lambda m: E.max_(m.x, m.y) * m.c1,
         lambda m: _int(m.x) and m.c1 < 0),  # min(x*c, y*c) -> max(x, y)*c, c < 0
]

MAX_RULES = [
    rule(pmax(x, x), x),  # max(x, x) -> x
    rule(pmax(x, y), y, lambda m: m.an.prove_le(m.x, m.y)),  # max(x, y) -> y if x <= y
    rule(pmax(x, y), x, lambda m: m.an.prove_le(m.y, m.x)),  # max(x, y) -> x if y <= x
    rule(pmax(pmin(x, y), x), x),  # max(min(x, y), x) -> x
    rule(pmax(pmin(x, y), y), y),  # max(min(x, y), y) -> y
    rule(pmax(x, pmin(x, y)), x),  # max(x, min(x, y)) -> x
    rule(pmax(y, pmin(x, y)), y),  # max(y, min(x, y)) -> y
    rule(pmax(pmax(x, y), x), lambda m: m.root.a),  # max(max(x, y), x) -> max(x, y)
    rule(pmax(pmax(x, y), y), lambda m: m.root.a),  # max(max(x, y), y) -> max(x, y)
    rule(pmax(x * c1, y * c1), lambda m: E.max_(m.x, m.y) * m.c1,
         lambda m: _int(m.x) and m.c1 > 0),  # max(x*c, y*c) -> max(x, y)*c, c > 0
    rule(pmax(x * c1, y * c1), lambda m: E.min_(m.x, m.y) * m.c1,
         lambda m: _int(m.x) and m.c1 < 0),  # max(x*c, y*c) -> min(x, y)*c, c < 0
]

AND_RULES = [
    rule(x & True, x),  # x && true -> x
    rule(True & x, x),  # true && x -> x
    rule(x & False, False),  # x && false -> false
    rule(False & x, False),  # false && x -> false
    rule(x & x, x),  # x && x -> x
    rule(x & ~x, False),  # x && !x -> false
    rule(~x & x, False),  # !x && x -> false
    rule((x < c1) & (x < c2), lambda m: m.x < min(m.c1, m.c2)),  # x < a && x < b -> x < min(a, b)
    # x <= a && x <= b -> x <= min(a, b)
    rule((x <= c1) & (x <= c2), lambda m: m.x <= min(m.c1, m.c2)),
    # a <= x && b <= x -> max(a, b) <= x
    rule((c1 <= x) & (c2 <= x), lambda m: max(m.c1, m.c2) <= m.x),
    rule((c1 < x) & (c2 < x), lambda m: max(m.c1, m.c2) < m.x),  # a < x && b < x -> max(a, b) < x
    rule((x < c1) & (c2 <= x), False, lambda m: m.c2 >= m.c1),  # x < a && b <= x -> false if b >= a
    rule((c2 <= x) & (x < c1), False, lambda m: m.c2 >= m.c1),  # b <= x && x < a -> false if b >= a
    rule(x & y, x, lambda m: m.an.implies(m.x, m.y)),  # x && y -> x if x implies y
    rule(x & y, y, lambda m: m.an.implies(m.y, m.x)),  # x && y -> y if y implies x
]

OR_RULES = [
    rule(x | True, True),  # x || true -> true
    rule(True | x, True),  # true || x -> true
    rule(x | False, x),  # x || false -> x
    rule(False | x, x),  # false || x -> x
    rule(x | x, x),  # x || x -> x
    rule(x | ~x, True),  # x || !x -> true
    rule(~x | x, True),  # !x || x -> true
    rule((x < c1) | (x < c2), lambda m: m.x < max(m.c1, m.c2)),  # x < a || x < b -> x < max(a, b)
    # a <= x || b <= x -> min(a, b) <= x
    rule((c1 <= x) | (c2 <= x), lambda m: min(m.c1, m.c2) <= m.x),
    rule((x < c1) | (c2 <= x), True, lambda m: m.c2 <= m.c1),  # x < a || b <= x -> true if b <= a
    rule(x | y, y, lambda m: m.an.implies(m.x, m.y)),  # x || y -> y if x implies y
    rule(x | y, x, lambda m: m.an.implies(m.y, m.x)),  # x || y -> x if y implies x
]

NOT_RULES = [
    rule(~~x, x),  # !!x -> x
    rule(~(x < y), lambda m: m.y <= m.x, lambda m: _int(m.x)),  # !(x < y) -> y <= x (ints)
    rule(~(x <= y), lambda m: m.y < m.x, lambda m: _int(m.x)),  # !(x <= y) -> y < x (ints)
    rule(~(x > y), lambda m: m.x <= m.y, lambda m: _int(m.x)),  # !(x > y) -> x <= y (ints)
    rule(~(x >= y), lambda m: m.x < m.y, lambda m: _int(m.x)),  # !(x >= y) -> x < y (ints)
    rule(~(x == y), lambda m: m.x != m.y),  # !(x == y) -> x != y
    rule(~(x != y), lambda m: m.x == m.y),  # !(x != y) -> x == y
]

SELECT_RULES = [
    rule(pselect(x, y, y), y),  # select(c, y, y) -> y
    rule(pselect(~x, y, z), pselect(x, z, y)),  # select(!c, y, z) -> select(c, z, y)
    # select(c, select(c, y, z), w) -> select(c, y, w)
    rule(pselect(x, pselect(x, y, z), w), pselect(x, y, w)),
    # select(c, y, select(c, z, w)) -> select(c, y, w)
    rule(pselect(x, y, pselect(x, z, w)), pselect(x, y, w)),
]

IF_THEN_ELSE_RULES = [
    rule(pif_then_else(x, y, y), y),  # if_then_else(c, y, y) -> y
    # if_then_else(!c, y, z) -> if_then_else(c, z, y)
    rule(pif_then_else(~x, y, z), pif_then_else(x, z, y)),
]

CAST_RULES = [
    # cast(t, cast(s, x: t)) -> x if s holds every t
    rule(pcast(pcast(x)), lambda m: m.x, lambda m: _cast_round_trip(m)),
]


def _cast_round_trip(m) -> bool:
    inner, outer, src = m.root.value.dtype, m.root.dtype, m.x.dtype
    if src != outer:
        return False
    if dt.is_float(src):
        return dt.is_float(inner) and dt.holds_every_value(inner, src)
    if not dt.is_integer(src) or not dt.is_integer(inner):
        return False
    lo, hi = m.an.bounds.bound(m.x)
    return dt.min_value(inner) <= lo and hi <= dt.max_value(inner)


INT_ARITH_RULES = {  # integer dtypes outside the canonical form (unsigned, vectors)
    E.Add: [rule(x + 0, x), rule(0 + x, x)],  # x + 0 -> x
    E.Sub: [rule(x - 0, x), rule(x - x, 0)],  # x - 0 -> x; x - x -> 0
    E.Mul: [rule(x * 1, x), rule(1 * x, x), rule(x * 0, 0), rule(0 * x, 0)],  # x*1 -> x; x*0 -> 0
    E.FloorDiv: [rule(x // 1, x)],  # x // 1 -> x
    E.FloorMod: [rule(x % 1, 0)],  # x % 1 -> 0
}

SIGNED_DIV_RULES = {  # divisions the canonical form leaves as atoms
    E.Div: [
        rule(ptruncdiv(x, 1), x),  # x / 1 -> x
        rule(ptruncdiv(x, y), lambda m: E.floordiv(m.x, m.y),
             # x / y -> x // y if x >= 0, y > 0
             lambda m: m.an.prove_nonneg(m.x) and m.an.prove_pos(m.y)),
    ],
    E.Mod: [
        rule(ptruncmod(x, 1), 0),  # x % 1 -> 0 (truncated)
        rule(ptruncmod(x, y), lambda m: E.floormod(m.x, m.y),
             # x % y -> floormod if x >= 0, y > 0
             lambda m: m.an.prove_nonneg(m.x) and m.an.prove_pos(m.y)),
    ],
    E.FloorDiv: [
        # x // y -> 0 if 0 <= x < y
        rule(x // y, 0, lambda m: m.an.prove_nonneg(m.x) and m.an.prove_lt(m.x, m.y)),
        rule((x * y) // y, x, lambda m: m.an.prove_nonzero(m.y)),  # (x*y) // y -> x if y != 0
        rule((y * x) // y, x, lambda m: m.an.prove_nonzero(m.y)),  # (y*x) // y -> x if y != 0
        rule(x // x, 1, lambda m: m.an.prove_nonzero(m.x)),  # x // x -> 1 if x != 0
    ],
    E.FloorMod: [
        # x % y -> x if 0 <= x < y
        rule(x % y, x, lambda m: m.an.prove_nonneg(m.x) and m.an.prove_lt(m.x, m.y)),
        rule((x * y) % y, 0, lambda m: m.an.prove_nonzero(m.y)),  # (x*y) % y -> 0 if y != 0
        rule((y * x) % y, 0, lambda m: m.an.prove_nonzero(m.y)),  # (y*x) % y -> 0 if y != 0
        rule(x % x, 0, lambda m: m.an.prove_nonzero(m.x)),  # x % x -> 0 if x != 0
    ],
}

FLOAT_RULES = {
    E.Add: [rule(x + 0.0, x), rule(0.0 + x, x)],  # x + 0.0 -> x
    E.Sub: [rule(x - 0.0, x)],  # x - 0.0 -> x
    E.Mul: [rule(x * 1.0, x), rule(1.0 * x, x)],  # x * 1.0 -> x
    E.Div: [rule(x / 1.0, x)],  # x / 1.0 -> x
}

VECTOR_RULES = {
    E.Add: [
        rule(pbroadcast(x) + pbroadcast(y),
             lambda m: _bcast(m.x + m.y, _lanes(m))),  # bc(x) + bc(y) -> bc(x + y)
        rule(pramp(x, y) + pramp(z, w),
             # ramp(x, s) + ramp(z, t) -> ramp(x + z, s + t)
             lambda m: _ramp(m.x + m.z, m.y + m.w, _lanes(m))),
        rule(pramp(x, y) + pbroadcast(z),
             lambda m: _ramp(m.x + m.z, m.y, _lanes(m))),  # ramp(x, s) + bc(z) -> ramp(x + z, s)
        rule(pbroadcast(z) + pramp(x, y),
             lambda m: _ramp(m.z + m.x, m.y, _lanes(m))),  # bc(z) + ramp(x, s) -> ramp(z + x, s)
    ],
    E.Sub: [
        rule(pbroadcast(x) - pbroadcast(y),
             lambda m: _bcast(m.x - m.y, _lanes(m))),  # bc(x) - bc(y) -> bc(x - y)
        rule(pramp(x, y) - pramp(z, w),
             # ramp(x, s) - ramp(z, t) -> ramp(x - z, s - t)
             lambda m: _ramp(m.x - m.z, m.y - m.w, _lanes(m))),
        rule(pramp(x, y) - pbroadcast(z),
             lambda m: _ramp(m.x - m.z, m.y, _lanes(m))),  # ramp(x, s) - bc(z) -> ramp(x - z, s)
        rule(pbroadcast(z) - pramp(x, y),
             # bc(z) - ramp(x, s) -> ramp(z - x, -s)
             lambda m: _ramp(m.z - m.x, 0 - m.y, _lanes(m))),
    ],
    E.Mul: [
        rule(pbroadcast(x) * pbroadcast(y),
             lambda m: _bcast(m.x * m.y, _lanes(m))),  # bc(x) * bc(y) -> bc(x * y)
        rule(pramp(x, y) * pbroadcast(z),
             # ramp(x, s) * bc(z) -> ramp(x*z, s*z)
             lambda m: _ramp(m.x * m.z, m.y * m.z, _lanes(m))),
        rule(pbroadcast(z) * pramp(x, y),
             # bc(z) * ramp(x, s) -> ramp(z*x, z*s)
             lambda m: _ramp(m.z * m.x, m.z * m.y, _lanes(m))),
    ],
    E.FloorDiv: [
        rule(pbroadcast(x) // pbroadcast(y),
             lambda m: _bcast(E.floordiv(m.x, m.y), _lanes(m))),  # bc(x) // bc(y) -> bc(x // y)
        rule(pramp(x, c1) // pbroadcast(c2),
             lambda m: _bcast(E.floordiv(m.x, m.c2), _lanes(m)),
             lambda m: _ramp_no_wrap(m, m.c2)),  # ramp(x, s) // c -> bc(x // c) if no lane wraps
    ],
    E.FloorMod: [
        rule(pbroadcast(x) % pbroadcast(y),
             lambda m: _bcast(E.floormod(m.x, m.y), _lanes(m))),  # bc(x) % bc(y) -> bc(x % y)
        rule(pramp(x, c1) % pbroadcast(c2),
             lambda m: _ramp(E.floormod(m.x, m.c2), m.root.a.stride, _lanes(m)),
             lambda m: _ramp_no_wrap(m, m.c2)),  # ramp(x, s) % c -> ramp(x % c, s) if no lane wraps
    ],
    E.Div: [rule(pbroadcast(x) / pbroadcast(y),
                 lambda m: _bcast(m.x / m.y, _lanes(m)))],  # bc(x) / bc(y) -> bc(x / y)
    E.Min: [rule(pmin(pbroadcast(x), pbroadcast(y)),
                 # min(bc(x), bc(y)) -> bc(min(x, y))
                 lambda m: _bcast(E.min_(m.x, m.y), _lanes(m)))],
    E.Max: [rule(pmax(pbroadcast(x), pbroadcast(y)),
                 # max(bc(x), bc(y)) -> bc(max(x, y))
                 lambda m: _bcast(E.max_(m.x, m.y), _lanes(m)))],
    E.Ramp: [rule(pramp(x, 0), lambda m: _bcast(m.x, m.root.lanes))],  # ramp(x, 0) -> bc(x)
    E.Cast: [rule(pcast(pbroadcast(x)),
                  # cast(bc(x)) -> bc(cast(x))
                  lambda m: _bcast(E.cast(m.x, dt.element_of(m.root.dtype)), _lanes(m)))],
}

RULES = {
    E.Min: MIN_RULES,
    E.Max: MAX_RULES,
    E.And: AND_RULES,
    E.Or: OR_RULES,
    E.Not: NOT_RULES,
    E.Select: SELECT_RULES,
    E.Cast: CAST_RULES,
}

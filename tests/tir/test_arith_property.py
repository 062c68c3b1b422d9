"""Property test: simplified integer expressions evaluate like the originals on random
variable assignments that respect the bound ranges."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from irc import tir
from irc.tir import expr as E
from irc.tir.arith import Analyzer
from irc.tir.arith.fold import truncdiv, truncmod

VARS = [tir.var(n) for n in ("a", "b", "c", "d")]
# Ranges (min, extent) of the variables; "d" is always positive so it can divide.
RANGES = {"a": (0, 64), "b": (0, 16), "c": (-8, 24), "d": (1, 7)}


def evaluate(e: E.PrimExpr, env: dict[str, int]) -> int:
    """Reference semantics of integer expressions (floor and truncating divisions)."""
    t = type(e)
    if t is E.IntImm:
        return e.value
    if t is E.Var:
        return env[e.name]
    if t is E.Select:
        return evaluate(e.true_value if evaluate(e.condition, env) else e.false_value, env)
    if t is E.Not:
        return int(not evaluate(e.a, env))
    a, b = evaluate(e.a, env), evaluate(e.b, env)
    return {
        E.Add: lambda: a + b, E.Sub: lambda: a - b, E.Mul: lambda: a * b,
        E.FloorDiv: lambda: a // b, E.FloorMod: lambda: a % b,
        E.Div: lambda: truncdiv(a, b), E.Mod: lambda: truncmod(a, b),
        E.Min: lambda: min(a, b), E.Max: lambda: max(a, b),
        E.LT: lambda: int(a < b), E.LE: lambda: int(a <= b), E.GT: lambda: int(a > b),
        E.GE: lambda: int(a >= b), E.EQ: lambda: int(a == b), E.NE: lambda: int(a != b),
        E.And: lambda: int(bool(a) and bool(b)), E.Or: lambda: int(bool(a) or bool(b)),
    }[t]()


def _leaf():
    return st.one_of(st.sampled_from(VARS), st.integers(-20, 40).map(lambda v: tir.const(v)))


def _nonzero_const():
    return st.sampled_from([1, 2, 3, 4, 7, 8, 16, -1, -2, -4, -16]).map(lambda v: tir.const(v))


def _extend(children):
    divisor = st.one_of(_nonzero_const(), st.just(VARS[3]))
    cond = st.tuples(st.sampled_from([E.LT, E.LE, E.GT, E.GE, E.EQ, E.NE]), children, children)
    return st.one_of(
        st.tuples(st.sampled_from([E.add, E.sub]), children, children)
        .map(lambda t: t[0](t[1], t[2])),
        st.tuples(children, st.one_of(st.integers(-5, 17).map(tir.const), children))
        .map(lambda t: t[0] * t[1]),
        st.tuples(st.sampled_from([E.floordiv, E.floormod, E.truncdiv, E.truncmod]), children,
                  divisor).map(lambda t: t[0](t[1], t[2])),
        st.tuples(st.sampled_from([E.min_, E.max_]), children, children)
        .map(lambda t: t[0](t[1], t[2])),
        st.tuples(cond, children, children).map(
            lambda t: E.select(E._compare(t[0][0], t[0][1], t[0][2]), t[1], t[2])),
    )


EXPRS = st.recursive(_leaf(), _extend, max_leaves=12)


def _analyzer() -> Analyzer:
    an = Analyzer()
    for v in VARS:
        lo, ext = RANGES[v.name]
        an.bind(v, tir.Range.from_min_extent(lo, ext))
    return an


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EXPRS, st.integers(0, 2**32))
def test_simplify_preserves_value(expr, seed):
    simplified = _analyzer().simplify(expr)
    rng = random.Random(seed)
    for _ in range(12):
        env = {n: rng.randrange(lo, lo + ext) for n, (lo, ext) in RANGES.items()}
        assert evaluate(simplified, env) == evaluate(expr, env), (expr, simplified, env)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EXPRS, st.integers(0, 2**32))
def test_bounds_contain_values(expr, seed):
    an = _analyzer()
    bound = an.const_int_bound(expr)
    rng = random.Random(seed)
    for _ in range(12):
        env = {n: rng.randrange(lo, lo + ext) for n, (lo, ext) in RANGES.items()}
        assert bound.min_value <= evaluate(expr, env) <= bound.max_value


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.tuples(st.sampled_from([E.LT, E.LE, E.GT, E.GE, E.EQ, E.NE]), EXPRS, EXPRS),
       st.integers(0, 2**32))
def test_comparisons_preserve_truth(cmp, seed):
    cls, a, b = cmp
    cond = E._compare(cls, a, b)
    simplified = _analyzer().simplify(cond)
    rng = random.Random(seed)
    for _ in range(12):
        env = {n: rng.randrange(lo, lo + ext) for n, (lo, ext) in RANGES.items()}
        assert evaluate(simplified, env) == evaluate(cond, env), (cond, simplified, env)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EXPRS, st.integers(0, 2**32))
def test_int_set_contains_values(expr, seed):
    """Relaxing a and b over their ranges: every value lies between the interval ends
    evaluated at the same c and d."""
    an = _analyzer()
    a, b = VARS[0], VARS[1]
    dom = {a: tir.Range.from_min_extent(*RANGES["a"]), b: tir.Range.from_min_extent(*RANGES["b"])}
    iv = an.int_set(expr, dom)
    rng = random.Random(seed)
    for _ in range(12):
        env = {n: rng.randrange(lo, lo + ext) for n, (lo, ext) in RANGES.items()}
        value = evaluate(expr, env)
        if iv.min_value is not None:
            assert evaluate(iv.min_value, env) <= value, (expr, iv, env)
        if iv.max_value is not None:
            assert value <= evaluate(iv.max_value, env), (expr, iv, env)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EXPRS, st.integers(0, 2**32))
def test_modular_set_holds(expr, seed):
    ms = _analyzer().modular_set(expr)
    rng = random.Random(seed)
    for _ in range(12):
        env = {n: rng.randrange(lo, lo + ext) for n, (lo, ext) in RANGES.items()}
        value = evaluate(expr, env)
        if ms.coeff == 0:
            assert value == ms.base
        else:
            assert value % ms.coeff == ms.base, (expr, ms, env)

"""The simplifier as a table of (expression, expected simplified expression)."""

from __future__ import annotations

import pytest

from irc import IRCError, tir
from irc.ir import assert_structural_equal
from irc.tir import Range, const
from irc.tir import expr as E
from irc.tir.arith import Analyzer, simplify

i, j, k, f = tir.var("i"), tir.var("j"), tir.var("k"), tir.var("f")
x, y, n = tir.var("x"), tir.var("y"), tir.var("n")
fx = tir.var("fx", "float32")
BOUNDS = {i: (0, 64), j: (0, 16), k: (0, 4), f: (0, 4096)}


def analyzer() -> Analyzer:
    an = Analyzer()
    for v, (lo, ext) in BOUNDS.items():
        an.bind(v, Range.from_min_extent(lo, ext))
    return an


TRUE, FALSE = const(True), const(False)

CASES = [
    # canonical form of index expressions
    ("split_div", (i * 16 + j) // 16, i),
    ("split_mod", (i * 16 + j) % 16, j),
    ("div_mod_recombine", (x // 4) * 4 + x % 4, x),
    ("sub_div_is_mod", x - (x // 4) * 4, x % 4),
    ("nested_div", (x // 4) // 4, x // 16),
    ("nested_mod", (x % 64) % 16, x % 16),
    ("partial_divisor", (x * 8 + j % 8) // 8, x),
    ("fused_three_level", (f // 64) * 64 + ((f % 64) // 16) * 16 + f % 16, f),
    ("like_terms", j + i * 16 + 3 - i * 16, j + 3),
    ("coefficient_order", j + i * 16, i * 16 + j),
    ("distribute_const", (i + 2) * 4 - 8, i * 4),
    ("div_of_bounded", j // 16, const(0)),
    ("div_by_divisor_of_coeffs", (i * 8 + k * 2) // 2, i * 4 + k),
    ("mod_by_divisor_of_coeffs", (i * 8 + k) % 4, k),
    ("truncdiv_nonneg", E.truncdiv(i * 4 + k, 4), i),
    ("truncmod_nonneg", E.truncmod(i * 4 + k, 4), k),
    ("truncdiv_signed_kept", E.truncdiv(x, 4), E.truncdiv(x, 4)),
    ("mul_zero", x * 0, const(0)),
    ("sub_self", x * 3 - x * 3, const(0)),
    # min / max by bounds
    ("min_by_bound", tir.min(i, 100), i),
    ("max_by_bound", tir.max(i * 16 + j, 0), i * 16 + j),
    ("min_self", tir.min(x, x), x),
    ("max_offset", tir.max(x + 1, x), x + 1),
    ("min_offset", tir.min(x - 2, x + 5), x - 2),
    ("min_max_absorb", tir.min(tir.max(x, y), x), x),
    ("min_floor_mul", tir.min((x // 8) * 8, x), (x // 8) * 8),
    # comparisons
    ("cmp_gcd_lt", x * 2 < 7, x < 4),
    ("cmp_gcd_eq_false", x * 2 == 5, FALSE),
    ("cmp_move_const", i + 1 < y, i < y - 1),
    ("cmp_ge_to_le", i * 16 + j >= 1, E._compare(E.LE, const(1), i * 16 + j)),
    ("cmp_proved", i * 16 + j < 1024, TRUE),
    ("cmp_disproved", i * 16 + j > 1023, FALSE),
    ("cmp_undecided", i < 63, i < 63),
    ("cmp_same_terms", i * 4 + k < i * 4 + 4, TRUE),
    # booleans
    ("and_tighten", tir.all(x < 5, x < 3), x < 3),
    ("or_true", tir.any(x < 10, tir.const(True)), TRUE),
    ("and_contradiction", tir.all(x < 3, 5 <= x), FALSE),
    ("not_lt", tir.logical_not(x < y), y <= x),
    ("not_not", tir.logical_not(tir.logical_not(x < y)), x < y),
    ("and_implied", tir.all(x < 3, x < 5), x < 3),
    # select / if_then_else / cast / let
    ("select_proved", tir.select(i < 64, x, y), x),
    ("select_same", tir.select(x < y, j, j), j),
    ("ite_disproved", tir.if_then_else(j >= 16, x, y), y),
    ("cast_round_trip", tir.cast(tir.cast(i, "int64"), "int32"), i),
    ("cast_const", tir.cast(const(3.7, "float32"), "int32"), const(3)),
    ("let_const", E.Let(dtype="int32", var=y, value=const(3), body=y * 2), const(6)),
    # floats keep their order; only identities fold
    ("float_mul_one", fx * 1.0, fx),
    ("float_add_zero", fx + 0.0, fx),
    ("float_no_reassoc", (fx + 1.0) - 1.0, (fx + 1.0) - 1.0),
    # symbolic divisor with bounds
    ("div_symbolic_zero", j // (j + 1), const(0)),
    ("mod_symbolic_self", j % (j + 1), j),
]


@pytest.mark.parametrize("name,before,expected", CASES, ids=[c[0] for c in CASES])
def test_simplify_table(name, before, expected):
    assert_structural_equal(analyzer().simplify(before), expected)


FOLD_CASES = [
    ("int8_wrap", const(100, "int8") + const(100, "int8"), const(-56, "int8")),
    ("uint8_wrap", const(200, "uint8") * const(2, "uint8"), const(144, "uint8")),
    ("truncdiv", E.truncdiv(const(-7), const(2)), const(-3)),
    ("truncmod", E.truncmod(const(-7), const(2)), const(-1)),
    ("floordiv", E.FloorDiv(dtype="int32", a=const(-7), b=const(2)), const(-4)),
    ("floormod", E.FloorMod(dtype="int32", a=const(-7), b=const(2)), const(1)),
    ("div_by_zero_kept", E.truncdiv(x, const(0)), E.truncdiv(x, const(0))),
    ("float32_rounds", E.Div(dtype="float32", a=const(1.0), b=const(3.0)),
     const(0.3333333432674408, "float32")),
    ("float64_exact", E.Div(dtype="float64", a=const(1.0, "float64"), b=const(3.0, "float64")),
     const(1.0 / 3.0, "float64")),
    ("float16_rounds", E.Add(dtype="float16", a=const(1.0, "float16"),
                             b=const(0.0001, "float16")), const(1.0, "float16")),
    ("bfloat16_rounds", E.Add(dtype="bfloat16", a=const(1.0, "bfloat16"),
                               b=const(0.001, "bfloat16")), const(1.0, "bfloat16")),
    ("uint_sub_wraps", E.Sub(dtype="uint8", a=const(1, "uint8"), b=const(2, "uint8")),
     const(255, "uint8")),
    ("cast_float_to_int", tir.cast(E.Cast(dtype="float32", value=x), "int32"),
     tir.cast(E.Cast(dtype="float32", value=x), "int32")),
    ("cast_trunc", E.Cast(dtype="int32", value=const(-3.7, "float32")), const(-3)),
    ("cast_wrap", E.Cast(dtype="int8", value=const(300)), const(44, "int8")),
    ("cast_bool", E.Cast(dtype="bool", value=const(5)), TRUE),
    ("cmp_float", const(1.5) < const(2.5), TRUE),
    ("min_float", tir.min(const(1.5), const(-2.0)), const(-2.0)),
    ("and_const", tir.all(TRUE, FALSE), FALSE),
    ("not_const", tir.logical_not(FALSE), TRUE),
]


@pytest.mark.parametrize("name,before,expected", FOLD_CASES, ids=[c[0] for c in FOLD_CASES])
def test_constant_folding(name, before, expected):
    assert_structural_equal(Analyzer().simplify(before), expected)


def test_vector_rules():
    an = analyzer()
    ramp = E.Ramp(dtype="int32x4", base=const(0), stride=const(1), lanes=4)
    got = an.simplify(E.Add(dtype="int32x4", a=E.Broadcast(dtype="int32x4", value=i * 4,
                                                           lanes=4), b=ramp))
    assert_structural_equal(got, E.Ramp(dtype="int32x4", base=i * 4, stride=const(1), lanes=4))
    r8 = E.Ramp(dtype="int32x8", base=i * 16, stride=const(1), lanes=8)
    sixteen = E.Broadcast(dtype="int32x8", value=const(16), lanes=8)
    got = an.simplify(E.FloorDiv(dtype="int32x8", a=r8, b=sixteen))
    assert_structural_equal(got, E.Broadcast(dtype="int32x8", value=i, lanes=8))
    got = an.simplify(E.FloorMod(dtype="int32x8", a=r8, b=sixteen))
    assert_structural_equal(got, E.Ramp(dtype="int32x8", base=const(0), stride=const(1),
                                        lanes=8))


def test_const_int_bound():
    an = analyzer()
    b = an.const_int_bound(i * 16 + j)
    assert (b.min_value, b.max_value) == (0, 1023)
    b = an.const_int_bound(f // 64)
    assert (b.min_value, b.max_value) == (0, 63)
    b = an.const_int_bound(x % 7)
    assert (b.min_value, b.max_value) == (0, 6)
    b = an.const_int_bound(E.truncmod(x, 7))
    assert (b.min_value, b.max_value) == (-6, 6)
    b = an.const_int_bound(tir.min(i, j) - 3)
    assert (b.min_value, b.max_value) == (-3, 12)
    b = an.const_int_bound(tir.cast(x, "int64"))
    assert (b.min_value, b.max_value) == (-(2**31), 2**31 - 1)
    b = an.const_int_bound(fx)
    assert b.min_value == b.NEG_INF and b.max_value == b.POS_INF and not b.is_bounded


def test_can_prove_and_constraints():
    an = analyzer()
    assert an.can_prove(i * 16 + j < 1024)
    assert not an.can_prove(i * 16 + j < 1000)
    assert an.can_prove_equal((i * 16 + j) // 16, i)
    assert not an.can_prove(x < 20)
    with an.constraint(x < 10):
        assert an.can_prove(x < 20)
        assert_structural_equal(an.simplify(tir.min(x, 10)), x)
        with an.constraint(3 <= x):
            assert an.can_prove(x * 2 >= 6)
        assert not an.can_prove(x >= 3)
    assert not an.can_prove(x < 20)
    with an.constraint(i * 16 + j < 1000):
        # a fact on a linear form, not on a single variable
        assert an.can_prove(i * 16 + j < 1000)
        assert an.can_prove(i * 16 + j <= 999)


def test_symbolic_loop_extent_is_a_fact():
    an = Analyzer()
    an.bind(j, Range.from_min_extent(0, n))
    assert an.can_prove(j < n)
    assert not an.can_prove(j < n - 1)
    assert_structural_equal(an.simplify(tir.min(j, n)), j)
    assert_structural_equal(an.simplify(j // n), const(0))


def test_int_set():
    an = analyzer()
    s = an.int_set(i * 16 + j, {j: Range.from_min_extent(0, 16)})
    assert_structural_equal(s.min_value, i * 16)
    assert_structural_equal(s.max_value, i * 16 + 15)
    s = an.int_set(i * 16 + j, {i: Range.from_min_extent(0, 4), j: Range.from_min_extent(0, 16)})
    assert (s.min_value.value, s.max_value.value) == (0, 63)
    s = an.int_set((x * 8 + j) % 8, {j: Range.from_min_extent(0, 4)})
    assert (s.min_value.value, s.max_value.value) == (0, 3)
    s = an.int_set(f % 16, {f: Range.from_min_extent(0, 4096)})
    assert (s.min_value.value, s.max_value.value) == (0, 15)
    s = an.int_set(E.BufferLoad(dtype="int32", buffer=tir.decl_buffer((4,), "int32", "idx"),
                                indices=(j,)), {j: Range.from_min_extent(0, 4)})
    assert s.is_everything()
    # the same variable on both sides cancels before interval arithmetic
    s = an.int_set(i * 4 + j - i * 4, {i: Range.from_min_extent(0, 64)})
    assert s.is_single_point() and s.min_value is j


def test_modular_set():
    an = analyzer()
    assert (an.modular_set(i * 16 + 4).coeff, an.modular_set(i * 16 + 4).base) == (16, 4)
    ms = an.modular_set(i * 16 + k * 4)
    assert (ms.coeff, ms.base) == (4, 0)
    ms = an.modular_set(const(7))
    assert ms.is_const() and ms.base == 7
    with an.constraint(x % 8 == 0):
        ms = an.modular_set(x + 2)
        assert (ms.coeff, ms.base) == (8, 2)


def test_rebinding_needs_override():
    an = analyzer()
    an.bind(i, Range.from_min_extent(0, 64))  # the same range again is fine
    with pytest.raises(IRCError, match="bound twice"):
        an.bind(i, Range.from_min_extent(0, 8))
    an.bind(i, Range.from_min_extent(0, 8), allow_override=True)
    assert an.can_prove(i < 8)


def test_simplify_is_memoized_and_idempotent():
    an = analyzer()
    e = (i * 16 + j) // 4 + (i * 16 + j) % 4
    s = an.simplify(e)
    assert an.simplify(e) is s
    assert an.simplify(s) is s


def test_module_level_simplify():
    assert_structural_equal(simplify(x * 4 + x * 4 - x * 8), const(0))
    assert_structural_equal(simplify((i * 16 + j) % 16, analyzer()), j)

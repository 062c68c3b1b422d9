"""The polynomial normal form of integer expressions and the proofs built on it (what
graph-level shape inference uses), as tables of (expression, expected)."""

from __future__ import annotations

import pytest

from irc import tir
from irc.ir import assert_structural_equal
from irc.ir import struct_info_analysis as sia
from irc.tir import const
from irc.tir.arith import polynomial as P
from irc.tir.expr import cast, floordiv, floormod, max_, min_

n, m = tir.var("n", "int64"), tir.var("m", "int64")


def i64(v: int):
    return const(v, "int64")


NORMALIZE = [
    # like terms cancel, products commute
    ("products_commute", n * m * 4 - m * n * 4 + 1, i64(1)),
    ("fold_constants", (n + 2 - 3) // 1 + 1, n),
    # positive terms first, higher degree first, variables by name
    ("term_order", m + n * m * 2 - 3, m * n * 2 + m - 3),
    ("negative_after_constant", 5 - n, i64(5) - n),
    ("powers", n * n * 3, n * n * 3),
    # division by a positive constant takes out the multiples it divides
    ("exact_floordiv", floordiv(n * 8 + m * 4 + 6, 4), m + n * 2 + 1),
    ("exact_floormod", floormod(n * 8 + m * 4 + 6, 4), i64(2)),
    ("floordiv_of_multiple", floordiv(n * 4, 4), n),
    ("floordiv_keeps_remainder", floordiv(n * 4 + m, 4), n + floordiv(m, 4)),
    ("floormod_keeps_remainder", floormod(n * 4 + m, 4), floormod(m, 4)),
    ("opaque_floordiv", floordiv(n, m), floordiv(n, m)),
    # min/max of equal operands, operands normalized
    ("min_equal", min_(n + 1, 1 + n), n + 1),
    ("max_sorted", max_(n, m), max_(m, n)),
    # integer casts are transparent
    ("integer_cast", cast(n * 2, "int32") + 3, n * 2 + 3),
]


@pytest.mark.parametrize("name,expr,expected", NORMALIZE, ids=[c[0] for c in NORMALIZE])
def test_normalize(name, expr, expected):
    assert_structural_equal(P.normalize(expr), expected)


def test_normalize_keeps_non_integer_and_leaves():
    f = tir.var("f", "float32")
    e = f * 2.0 + 1.0
    assert P.normalize(e) is e
    assert P.normalize(n) is n
    assert_structural_equal(P.normalize(3), i64(3))
    # a constant result keeps the dtype of the expression
    k = tir.var("k", "int32")
    assert P.normalize(k - k + 2).dtype == "int32"


def test_polynomials_of_one_form_share_atoms():
    form = P.PolynomialForm()
    a, b = form.of(n * m + n), form.of(m * n)
    assert P.poly_add(a, P.poly_scale(b, -1)) == form.of(n)
    assert P.poly_const(form.of(i64(7))) == 7 and P.poly_const(a) is None
    assert P.poly_mul(form.of(n + 1), form.of(n - 1)) == form.of(n * n - 1)


PROOFS = [
    # (a, b, provably equal, provably different)
    (n * m, m * n, True, False),
    (n * 4 * m, m * (n * 2) * 2, True, False),
    (n + 1, n, False, True),
    (floordiv(n * 4 + 8, 4), n + 2, True, False),
    (floordiv(n, 2), floordiv(n, 2), True, False),
    (n, m, False, False),
    (floordiv(n, 2) * 2, n, False, False),
    (i64(3), 3, True, False),
    (i64(3), i64(4), False, True),
]


@pytest.mark.parametrize("a,b,equal,different", PROOFS)
def test_prove_equal_and_not_equal(a, b, equal, different):
    assert P.prove_equal(a, b) is equal
    assert P.prove_not_equal(a, b) is different


def test_const_value():
    assert P.const_value(5) == 5
    assert P.const_value(i64(5)) == 5
    assert P.const_value(floordiv(n * 4 + 2, 4) - n) == 0
    assert P.const_value(n * 2 - n - n + 7) == 7
    assert P.const_value(n) is None
    assert P.const_value(const(2.0)) is None


def test_exact_divide():
    assert_structural_equal(P.exact_divide(n * 4 * 784, 784), n * 4)
    assert_structural_equal(P.exact_divide(n * m * 8, m * 2), n * 4)
    assert_structural_equal(P.exact_divide(n * 6 + 3, 3), n * 2 + 1)
    assert P.exact_divide(n * 3 + 1, 3) is None      # a term is not a multiple
    assert P.exact_divide(n * 4, m) is None           # the divisor's atom is missing
    assert P.exact_divide(n * m, n + m) is None       # not a single monomial
    assert P.exact_divide(n, 0) is None               # division by zero


def test_shape_product():
    assert_structural_equal(P.shape_product([n, 4, m, 2]), m * n * 8)
    assert_structural_equal(P.shape_product([]), i64(1))
    assert P.const_value(P.shape_product([2, 3, i64(4)])) == 24


def test_struct_info_names_are_the_algebra():
    assert sia.simplify is P.normalize
    assert sia.prove_equal is P.prove_equal and sia.exact_divide is P.exact_divide

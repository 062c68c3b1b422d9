"""Affine index forms: the exact coefficients schedule rules read strides from (non-affine
indices give None) and the feature extractor's approximation (whose numbers are part of
the cost model's definition, so they are pinned here)."""

from __future__ import annotations

import pytest

from irc import tir
from irc.tir import const, decl_buffer
from irc.tir import expr as E
from irc.tir.arith import affine_form, approximate_coefficients, row_major_strides
from irc.tir.expr import cast, floordiv, floormod, max_, min_

i, j, k = tir.var("i"), tir.var("j"), tir.var("k")
fx = tir.var("fx", "float32")
B = decl_buffer((8,), "int32", "B")
NAMES = {id(i): "i", id(j): "j", id(k): "k"}


def named(coefs: dict) -> dict:
    return {NAMES[v]: c for v, c in coefs.items()}


AFFINE = [
    ("constant", const(7), ({}, 7)),
    ("variable", i, ({"i": 1}, 0)),
    ("sum", i * 3 + j - 2, ({"i": 3, "j": 1}, -2)),
    ("constant_left", 4 * (i + 1), ({"i": 4}, 4)),
    ("cancel", i * 2 + j - i * 2, ({"j": 1}, 0)),
    ("constant_product", (const(2) + const(3)) * i, ({"i": 5}, 0)),
    ("integer_cast", cast(i * 2 + 1, "int64"), ({"i": 2}, 1)),
    ("floordiv_by_one", (i + 4) // 1, ({"i": 1}, 4)),
    ("floormod_by_one", floormod(i + 4, 1), ({}, 0)),
    ("constant_division", floordiv(const(9), 2) + floormod(const(9), 4), ({}, 5)),
    # not affine
    ("product_of_variables", i * j, None),
    ("floordiv", i // 2, None),
    ("floordiv_even_when_exact_under_ranges", floordiv(i * 16 + j, 16), None),
    ("floormod", floormod(i, 4), None),
    ("division_by_variable", floordiv(i, j), None),
    ("division_by_zero", floordiv(i, const(0)), None),
    ("float_cast", cast(fx, "int32"), None),
    ("load", B[i] + 1, None),
    ("min", min_(i, j), None),
]


@pytest.mark.parametrize("name,expr,expected", AFFINE, ids=[c[0] for c in AFFINE])
def test_affine_form(name, expr, expected):
    got = affine_form(expr)
    if expected is None:
        assert got is None
    else:
        assert (named(got[0]), got[1]) == expected


def test_row_major_strides():
    got = row_major_strides((4, 5, 6), (i, j + k, k))
    assert named(got) == {"i": 30, "j": 6, "k": 7}
    assert named(row_major_strides((4, 4), (i, i * -4 + j))) == {"j": 1}  # i cancels
    assert row_major_strides((4, 5), (i,)) is None                       # rank mismatch
    assert row_major_strides((4, 5), (i, i * j)) is None                 # not affine


# The approximation of non-affine parts, exactly as the features define it.
APPROXIMATE = [
    (i * 4 + j, {"i": 4.0, "j": 1.0}),
    (i - j * 2, {"i": 1.0, "j": -2.0}),
    (floordiv(i * 4 + j, 4), {"i": 1.0, "j": 0.25}),
    (floormod(i * 8 + j, 4), {"i": 8.0, "j": 1.0}),
    (i * j, {"i": 1.0, "j": 1.0}),
    ((i + 1) * (j - 2), {"i": 1.0, "j": 1.0}),
    (min_(i, j * 2), {"i": 1.0, "j": 2.0}),
    (max_(i * 3, k), {"i": 3.0, "k": 1.0}),
    (cast(i * 3, "int64"), {"i": 3.0}),
    (floordiv(i, j), {"i": 1.0}),
    (E.Div(dtype="int32", a=i * 6, b=const(4)), {"i": 1.5}),
    (E.Mod(dtype="int32", a=i * 6 + k, b=const(4)), {"i": 6.0, "k": 1.0}),
    (B[i] + j, {"j": 1.0}),
    (E.Broadcast(dtype="int32x4", value=i * 2, lanes=4), {"i": 2.0}),
]


@pytest.mark.parametrize("expr,expected", APPROXIMATE)
def test_approximate_coefficients(expr, expected):
    out: dict = {}
    approximate_coefficients(expr, out, 1.0)
    assert named(out) == expected


def test_approximate_coefficients_accumulate_and_scale():
    out: dict = {id(i): 1.0}
    approximate_coefficients(i * 2 + j, out, 10.0)
    assert named(out) == {"i": 21.0, "j": 10.0}
    # exact on affine indices
    for e in (i * 3 + j - 2, 4 * (i + 1), cast(i * 2 + 1, "int64")):
        out = {}
        approximate_coefficients(e, out, 1.0)
        coefs, _ = affine_form(e)
        assert out == {v: float(c) for v, c in coefs.items()}

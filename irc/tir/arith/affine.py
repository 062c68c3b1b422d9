"""Affine index expressions: the exact coefficients of variables in an affine index (what
schedule rules read access strides from), and the approximate strides of any index (what
the cost model's features are computed from).

Exact form. :func:`affine_form` reads ``e`` as ``sum(coef * var) + const`` with integer
coefficients, keyed by variable id, or answers None. It accepts variables, integer
constants, ``+``, ``-``, multiplication where one side is constant, integer-to-integer
casts, and ``floordiv``/``floormod`` by a positive constant when the result is still
affine (division by one, or a constant numerator). It is syntactic and needs no
variable ranges: ``(i*16 + j) // 16`` is None here even when ``0 <= j < 16`` makes it
``i`` (ask the :class:`~irc.tir.arith.Analyzer` to simplify first when ranges matter).
:func:`row_major_strides` flattens a multi-dimensional access over a constant shape.

Approximate form. :func:`approximate_coefficients` never fails: it walks any index and
adds a float coefficient for every variable it meets, approximating what is not affine
(see its docstring). It is deliberately *not* exact: the feature extractor's numbers
(and the cost models trained on them) are defined by it, so its results must not change.

Both forms are fast recursive walks over the expression tree, with no interning or
memoization: they run per access of every candidate during tuning. For linear forms over
arbitrary atoms with range-aware division rules see
:mod:`~irc.tir.arith.canonical`; for products of symbols (shapes) see
:mod:`~irc.tir.arith.polynomial`.
"""

from __future__ import annotations

from typing import Sequence

from ...core import dtype as dt
from ..expr import (
    Add,
    Broadcast,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Mul,
    PrimExpr,
    Sub,
    Var,
)

AffineForm = tuple[dict[int, int], int]  # ({id(var): coefficient}, constant)


def affine_form(e: PrimExpr) -> AffineForm | None:
    """``e`` as ``({id(var): coef}, const)`` meaning ``sum(coef * var) + const`` (zero
    coefficients left out), or None when ``e`` is not affine in that sense (see the
    module docstring). ``i*3 + j - 2`` gives ``({id(i): 3, id(j): 1}, -2)``; ``i*j`` and
    ``i // 2`` give None."""
    t = type(e)
    if t is IntImm:
        return {}, e.value
    if t is Var:
        return {id(e): 1}, 0
    if t is Cast:
        if dt.is_integer(e.dtype) and dt.is_integer(e.value.dtype):
            return affine_form(e.value)
        return None
    if t is Add or t is Sub:
        a, b = affine_form(e.a), affine_form(e.b)
        if a is None or b is None:
            return None
        sign = 1 if t is Add else -1
        coeffs = dict(a[0])
        for k, c in b[0].items():
            coeffs[k] = coeffs.get(k, 0) + sign * c
        return {k: c for k, c in coeffs.items() if c}, a[1] + sign * b[1]
    if t is Mul:
        a, b = affine_form(e.a), affine_form(e.b)
        if a is None or b is None:
            return None
        if not a[0]:
            a, b = b, a
        if b[0]:
            return None
        k = b[1]
        return {v: c * k for v, c in a[0].items() if c * k}, a[1] * k
    if t is FloorDiv or t is FloorMod:
        a, b = affine_form(e.a), affine_form(e.b)
        if a is None or b is None or b[0] or b[1] <= 0:
            return None
        k = b[1]
        if k == 1:  # x // 1 == x and x % 1 == 0 (grouped convs with one channel a group)
            return (a[0], a[1]) if t is FloorDiv else ({}, 0)
        if not a[0]:
            return {}, (a[1] // k if t is FloorDiv else a[1] % k)
    return None


def row_major_strides(shape: Sequence[int], indices: Sequence[PrimExpr]
                      ) -> dict[int, int] | None:
    """How far (in elements) the row-major flat index of ``indices`` into an array of
    constant ``shape`` moves when a variable steps by one, per variable id (absent: 0).
    None when the ranks differ or an index is not affine. ``(i, j + k, k)`` into
    ``(4, 5, 6)`` gives ``{i: 30, j: 6, k: 7}``."""
    if len(shape) != len(indices):
        return None
    out: dict[int, int] = {}
    stride = 1
    for dim, idx in zip(reversed(shape), reversed(indices)):
        form = affine_form(idx)
        if form is None:
            return None
        for v, c in form[0].items():
            out[v] = out.get(v, 0) + c * stride
        stride *= dim
    return {k: c for k, c in out.items() if c}


def approximate_coefficients(e: PrimExpr, out: dict[int, float], scale: float) -> None:
    """Add to ``out`` (keyed by variable id) the coefficient of every variable in ``e``,
    times ``scale``. Exact for affine ``e``; otherwise an approximation: ``x // c`` scales
    ``x``'s coefficients by ``1/c`` (by 1 when ``c`` is not a constant), ``x % c`` and
    casts keep ``x``'s, ``min``/``max`` and products of two non-constant factors add both
    operands', a broadcast counts as its value, and loads, calls and lets contribute
    nothing (an indirect index has no loop-variable coefficient).

    This defines the features' strides and reuse; keep its numbers unchanged."""
    t = type(e)
    if t is Var:
        out[id(e)] = out.get(id(e), 0.0) + scale
    elif t is IntImm:
        return
    elif t is Add:
        approximate_coefficients(e.a, out, scale)
        approximate_coefficients(e.b, out, scale)
    elif t is Sub:
        approximate_coefficients(e.a, out, scale)
        approximate_coefficients(e.b, out, -scale)
    elif t is Mul:
        if type(e.b) is IntImm:
            approximate_coefficients(e.a, out, scale * e.b.value)
        elif type(e.a) is IntImm:
            approximate_coefficients(e.b, out, scale * e.a.value)
        else:
            approximate_coefficients(e.a, out, scale)
            approximate_coefficients(e.b, out, scale)
    elif t is FloorDiv or t is Div:
        if type(e.b) is IntImm and e.b.value:
            approximate_coefficients(e.a, out, scale / e.b.value)
        else:
            approximate_coefficients(e.a, out, scale)
    elif t is FloorMod or t is Mod or t is Cast or t is Min or t is Max:
        if t is Cast:
            approximate_coefficients(e.value, out, scale)
        else:
            approximate_coefficients(e.a, out, scale)
            if t is Min or t is Max:
                approximate_coefficients(e.b, out, scale)
    elif t is Broadcast:
        approximate_coefficients(e.value, out, scale)


__all__ = ["AffineForm", "affine_form", "approximate_coefficients", "row_major_strides"]

"""The affine iteration-map detector behind the binding checks."""

import pytest

from irc import tir
from irc.tir.schedule import iter_map as im

i, j, f = tir.var("i"), tir.var("j"), tir.var("f")
DOMS = {id(i): (i, 0, 8), id(j): (j, 0, 16), id(f): (f, 0, 128)}


def text(e):
    forms = im.detect([e], DOMS)
    return None if forms is None else str(im.to_expr(forms[0], "int32", DOMS))


@pytest.mark.parametrize("expr,expected", [
    (i * 16 + j, "i * 16 + j"),
    (tir.floordiv(f, 16), "f // 16"),
    (tir.floormod(f, 16), "f % 16"),
    (tir.floormod(tir.floordiv(f, 4), 8), "f // 4 % 8"),
    (tir.floordiv(i * 16 + j, 8), "i * 2 + j // 8"),
    (tir.floormod(i * 16 + j, 8), "j % 8"),
    (tir.floordiv(i * 16 + j, 32), "i // 2"),
    (tir.floordiv(i * 16 + j + 32, 16), "i + 2"),
    (i * 2 - 1, "i * 2 - 1"),
    (i * j, None),
    (tir.floordiv(j, 3), None),
    (tir.floordiv(i * 3 + j, 4), None),
    (tir.var("n") + i, None),
])
def test_detect(expr, expected):
    assert text(expr) == expected


def test_bijective_and_injective():
    fdom = {id(f): DOMS[id(f)]}
    ok = im.detect([tir.floordiv(f, 16), tir.floormod(f, 16)], DOMS)
    assert im.is_bijective(ok, fdom, [8, 16])
    assert not im.is_bijective(ok, fdom, [8, 32])
    gap = im.detect([tir.floordiv(f, 16), tir.floormod(f, 8)], DOMS)
    assert not im.is_bijective(gap, fdom, [8, 8])
    ij = {id(i): DOMS[id(i)], id(j): DOMS[id(j)]}
    same = im.detect([i + j], DOMS)
    assert not im.is_injective(same, ij, set(ij))  # i + j collides (1, 0) and (0, 1)
    assert im.is_injective(im.detect([i * 16 + j], DOMS), ij, set(ij))
    assert not im.is_injective(im.detect([i], DOMS), ij, set(ij))  # j unused

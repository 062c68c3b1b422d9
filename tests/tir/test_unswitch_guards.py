"""UnswitchGuards: an annotated loop's body gets a copy without its padding guards,
taken where every guard provably holds (the depthwise convolutions it serves are checked
at the border in tests/dlight/test_cpu_rules.py)."""

from __future__ import annotations

from irc.ir import assert_structural_equal
from irc.script_parser import parse
from irc.tir import transform as T
from irc.tir.well_formed import check_prim_func


def check(before: str, expected: str):
    f = T.Simplify()(T.UnswitchGuards()(parse(before)))
    check_prim_func(f)
    assert_structural_equal(f, parse(expected))


def test_the_guard_free_copy_runs_where_every_tap_is_inside():
    # A 1-D 3-tap filter with padding 1: the guards hold for every tap when 1 <= i <= 8.
    check('''
@T.prim_func
def main(A: T.Buffer((10,), "float32"), B: T.Buffer((10,), "float32")):
    for i in T.serial(10, annotations={"irc.unswitch_guards": 1}):
        for r in range(3):
            B[i] = B[i] + T.if_then_else(1 <= i + r and i + r < 11, A[i + r - 1], T.float32(0))
''', '''
@T.prim_func
def main(A: T.Buffer((10,), "float32"), B: T.Buffer((10,), "float32")):
    for i in range(10):
        if 1 <= i and i <= 8:
            for r in range(3):
                B[i] = B[i] + A[i + r - 1]
        else:
            for r in range(3):
                B[i] = B[i] + T.if_then_else(1 <= i + r and i + r < 11, A[i + r - 1], T.float32(0))
''')


def test_a_loop_without_guards_only_loses_the_annotation():
    check('''
@T.prim_func
def main(A: T.Buffer((10,), "float32")):
    for i in T.serial(10, annotations={"irc.unswitch_guards": 1}):
        A[i] = T.float32(1)
''', '''
@T.prim_func
def main(A: T.Buffer((10,), "float32")):
    for i in range(10):
        A[i] = T.float32(1)
''')


def test_guards_that_are_not_bounds_of_the_loops_stay():
    # An equality, and a bound on a value loaded inside the body, say nothing about
    # whole tiles: the body is left as it is.
    before = '''
@T.prim_func
def main(A: T.Buffer((10,), "int32"), B: T.Buffer((10,), "int32")):
    for i in T.serial(10, annotations={"irc.unswitch_guards": 1}):
        for r in range(3):
            B[i] = B[i] + T.if_then_else(i + r == 4, A[i], 0) + T.if_then_else(A[r] < 3, A[r], 0)
'''
    check(before, before.replace(' T.serial(10, annotations={"irc.unswitch_guards": 1})',
                                 " range(10)"))

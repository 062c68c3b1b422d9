"""Simplify keeps what a loop's symbolic range tells (``i < n``, ``n > 0``) inside the
loop body: statements after the loop see none of it."""

from __future__ import annotations

import numpy as np

from irc.ir import assert_structural_equal
from irc.script_parser import parse
from irc.tir import interpreter
from irc.tir import transform as T

TRIANGULAR = '''
@T.prim_func
def main(A: T.Buffer((T.int64(2),), "int64")):
    for k in range(T.int64(2)):
        for r in range(T.int64(1) - k):
            A[r + k + T.int64(1)] = A[r + k + T.int64(1)] + T.int64(10)
        A[k] = A[k] + k
'''


def test_a_symbolic_loop_range_gives_no_facts_after_the_loop():
    after = T.Simplify()(parse(TRIANGULAR))
    # Inside the inner loop k is 0 (the loop runs only then); after it, k is any of 0, 1.
    assert_structural_equal(after, parse('''
@T.prim_func
def main(A: T.Buffer((T.int64(2),), "int64")):
    for k in range(T.int64(2)):
        for r in range(T.int64(1) - k):
            A[T.int64(1)] = A[T.int64(1)] + T.int64(10)
        A[k] = A[k] + k
'''))


def test_a_symbolic_loop_range_computes_as_written():
    a = np.zeros(2, "int64")
    interpreter.compile_func(T.Simplify()(parse(TRIANGULAR)))(a)
    np.testing.assert_array_equal(a, [0, 11])

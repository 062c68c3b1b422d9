"""LoopPartition: loops are cut where a predicate changes (partial tiles), the pieces are
simplified, and compiled kernels with partial tiles still compute the right values."""

from __future__ import annotations

import numpy as np
import pytest

import irc
from irc import te
from irc.core.functor import post_order_visit
from irc.core.module import IRModule
from irc.core.transform import Sequential
from irc.ir import assert_structural_equal
from irc.script_parser import parse
from irc.tir import Schedule
from irc.tir import transform as T
from irc.tir.transform.loop_partition import CUT_SELECTS_KEY
from irc.tir.transform.lower import LOWERING_PASSES
from irc.tir.well_formed import check_prim_func


def check(before: str, expected: str):
    f = T.RemoveNoOp()(T.Simplify()(T.LoopPartition()(parse(before))))
    assert_structural_equal(f, parse(expected))


def test_row_tail_is_cut_and_its_rows_past_the_end_disappear():
    # 14 rows in tiles of 4: three full tiles, then one of two rows.
    check('''
@T.prim_func
def main(A: T.Buffer((14,), "float32")):
    for i0 in range(4):
        for i1 in T.unroll(4):
            if i0 * 4 + i1 < 14:
                A[i0 * 4 + i1] = T.float32(1)
''', '''
@T.prim_func
def main(A: T.Buffer((14,), "float32")):
    for i0 in range(3):
        for i1 in T.unroll(4):
            A[i0 * 4 + i1] = T.float32(1)
    for i1 in T.unroll(2):
        A[i1 + 12] = T.float32(1)
''')


def test_each_term_of_a_conjunction_cuts_its_own_loop():
    check('''
@T.prim_func
def main(A: T.Buffer((10, 6), "float32")):
    for i in range(4):
        for j in range(2):
            for i1, j1 in T.grid(3, 4):
                if i * 3 + i1 < 10 and j * 4 + j1 < 6:
                    A[i * 3 + i1, j * 4 + j1] = T.float32(1)
''', '''
@T.prim_func
def main(A: T.Buffer((10, 6), "float32")):
    for i in range(3):
        for i1, j1 in T.grid(3, 4):
            A[i * 3 + i1, j1] = T.float32(1)
        for i1, j1 in T.grid(3, 2):
            A[i * 3 + i1, j1 + 4] = T.float32(1)
    for j1 in range(4):
        A[9, j1] = T.float32(1)
    for j1 in range(2):
        A[9, j1 + 4] = T.float32(1)
''')


def test_first_iteration_guard_does_not_cut():
    # A reduction's initialization guard (LowerInitBlock) is an equality: left alone.
    text = '''
@T.prim_func
def main(A: T.Buffer((8,), "float32"), B: T.Buffer((1,), "float32")):
    for k in range(8):
        if k == 0:
            B[0] = T.float32(0)
        B[0] = B[0] + A[k]
'''
    f = parse(text)
    assert_structural_equal(T.LoopPartition()(f), f)


def test_loops_without_a_changing_condition_are_left_alone():
    text = '''
@T.prim_func
def main(A: T.Buffer((8, 8), "float32"), n: T.int32):
    for i in T.parallel(8):
        for j in range(8):
            if i < 7 - j:
                A[i, j] = T.float32(1)
            if n > 2:
                A[i, j] = T.float32(2)
'''
    f = parse(text)
    # The parallel loop is never cut; in ``j`` the first condition would need one cut
    # per value of ``i`` (not provable on a prefix for every i) and the second does not
    # mention j.
    assert_structural_equal(T.LoopPartition()(f), f)


def test_pieces_define_their_own_variables():
    f = T.LoopPartition()(parse('''
@T.prim_func
def main(A: T.Buffer((10,), "float32")):
    for i0 in range(3):
        for i1 in range(4):
            if i0 * 4 + i1 < 10:
                A[i0 * 4 + i1] = T.float32(1)
'''))
    # Well-formedness rejects a variable defined twice.
    check_prim_func(f)
    loops = []

    def walk(s):
        if type(s).__name__ == "For":
            loops.append(s.loop_var)
        for name in ("body", "then_case", "else_case"):
            c = getattr(s, name, None)
            if c is not None:
                walk(c)
        for c in getattr(s, "seq", ()) or ():
            walk(c)

    walk(f.body)
    assert len({id(v) for v in loops}) == len(loops) >= 3


@pytest.mark.parametrize("m,n,tm,tn", [(14, 40, 4, 3), (13, 17, 6, 2), (7, 64, 4, 5)])
def test_partial_tiles_compute_the_right_product(m, n, tm, tn):
    # A register tile that divides neither the rows nor the vectors of a matmul.
    k = 37
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    sch = Schedule(te.create_prim_func([A, B, C]))
    i, j, kk = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, [None, tm])
    j0, j1 = sch.split(j, [None, tn])
    sch.reorder(j0, i0, kk, i1, j1)
    sch.unroll(i1)
    lib = irc.build(sch.mod, target="llvm")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype("float32")
    b = rng.standard_normal((k, n)).astype("float32")
    c = irc.tensor(np.zeros((m, n), "float32"))
    lib(irc.tensor(a), irc.tensor(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)
    # The lowered code keeps no row or column predicate inside the reduction.
    lowered = irc.lower(sch.mod).script()
    assert f"< {m}" not in lowered and f"< {n}" not in lowered


def _concat_func(widths: list[int]):
    """A concatenation of ``len(widths)`` rows along the last axis, its loop annotated to
    be cut where the part changes (as the default rules annotate one)."""
    parts = [te.placeholder((3, w), name=f"A{k}") for k, w in enumerate(widths)]
    out = irc.topi.concatenate(parts, axis=1)
    sch = Schedule(te.create_prim_func([*parts, out]))
    _, j = sch.get_loops(sch.get_block(out.op.name))
    sch.annotate(j, CUT_SELECTS_KEY, 1)
    return sch.mod["main"], parts, out


def test_a_concatenation_is_cut_into_one_plain_copy_per_part():
    widths = [4, 1, 7, 2, 5, 3, 6, 2, 1, 8, 3, 4]
    func, parts, _ = _concat_func(widths)
    low = irc.lower(func)["main"]
    check_prim_func(low)
    loads, selects = [], []

    def visit(x):
        if isinstance(x, irc.tir.BufferLoad):
            loads.append(x.buffer.name)
        elif isinstance(x, irc.tir.Call) and x.op == "if_then_else":
            selects.append(x)

    post_order_visit(low.body, visit)
    # No choice is left, and each part is read by its own copy only (a piece taking the
    # whole select chain along would read every part).
    assert not selects
    assert sorted(loads) == sorted(p.name for p in parts)
    # LoopPartition itself gives each piece its own part only, before any simplification
    # (N pieces each carrying the whole chain of N selects would be N^2 nodes to copy).
    passes = LOWERING_PASSES
    upto = [type(p).__name__ for p in passes].index("LoopPartition") + 1
    cut = Sequential(passes[:upto])(IRModule(functions={"main": func}))["main"]
    loads.clear()
    post_order_visit(cut.body, visit)
    assert sorted(loads) == sorted(p.name for p in parts)
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((3, w)).astype("float32") for w in widths]
    got = np.zeros((3, sum(widths)), "float32")
    irc.build(func, target="llvm")(*arrays, got)
    np.testing.assert_array_equal(got, np.concatenate(arrays, axis=1))

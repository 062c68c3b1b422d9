"""Scheduled functions compiled through LLVM agree with the unscheduled function."""

from schedule_helpers import check_llvm, elementwise3, matmul_add, row_max, three_stage

import irc
from irc.tir import Schedule


def test_cpu_matmul_schedule():
    """Inline, register cache, tiles, parallel, vector, unroll, init split off, packed
    weight: the structure of a tuned CPU matmul."""
    f = three_stage(64, 64, 64)
    sch = Schedule(f, debug_mask="all")
    b, c, d = (sch.get_block(n) for n in "BCD")
    sch.compute_inline(b)
    c_local = sch.cache_write(c, 0, "local")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[8, 8])
    j0, j1 = sch.split(j, factors=[4, 16])
    k0, k1 = sch.split(k, factors=[16, 4])
    sch.reorder(i0, j0, k0, k1, i1, j1)
    sch.reverse_compute_at(c_local, j0)
    sch.reverse_compute_inline(d)
    sch.parallel(i0)
    sch.vectorize(j1)
    sch.unroll(k1)
    sch.decompose_reduction(c, k0)
    sch.layout_rewrite(c, 1)
    check_llvm(f, sch.func, packed=True)
    lowered = irc.lower(sch)["main"].script()
    assert "T.parallel(8)" in lowered and "T.Broadcast" in lowered
    assert 'T.allocate([128], "float32", "local")' in lowered


def test_rfactor_parallel_reduction():
    f = row_max(4, 256)
    sch = Schedule(f, debug_mask="all")
    b = sch.get_block("B")
    i, k = sch.get_loops(b)
    k0, k1 = sch.split(k, factors=[4, None])
    rf = sch.rfactor(k0, 0)
    i_rf, k0_rf, k1_rf = sch.get_loops(rf)
    sch.reorder(k0_rf, i_rf, k1_rf)
    sch.parallel(k0_rf)
    check_llvm(f, sch.func)


def test_fused_compute_at_chain():
    f = elementwise3(32, 64)
    sch = Schedule(f, debug_mask="all")
    b, c, d = (sch.get_block(n) for n in "BCD")
    i, j = sch.get_loops(d)
    fused = sch.fuse(i, j)
    o, inner = sch.split(fused, factors=[None, 16])
    sch.parallel(o)
    sch.compute_at(c, o)
    sch.compute_at(b, o)
    sch.vectorize(inner)
    check_llvm(f, sch.func)


def test_matmul_add_tiled_vs_numpy():
    f = matmul_add(48, 40, 24)
    sch = Schedule(f)
    c, d = sch.get_block("C"), sch.get_block("D")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[None, 5])  # 48 = 10 * 5 - 2: predicated
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.reorder(i0, j0, k, i1, j1)
    sch.reverse_compute_at(d, j0)
    sch.vectorize(j1)
    check_llvm(f, sch.func)

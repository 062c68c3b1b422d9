"""compute_at, reverse_compute_at, compute_inline, reverse_compute_inline."""

from schedule_helpers import (
    assert_ir,
    assert_print_roundtrip,
    check_numeric,
    elementwise3,
    matmul_add,
    parse_func,
    schedule_error,
    three_stage,
    verify_trace_roundtrip,
)

from irc.tir import Schedule

HEAD = '''
@T.prim_func
def main(A: T.Buffer((16, 32), "float32"), D: T.Buffer((16, 32), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    B = T.alloc_buffer((16, 32))
    C = T.alloc_buffer((16, 32))
    for i, j in T.grid(16, 32):
        with T.block("B"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(A[v_i, v_j])
            T.writes(B[v_i, v_j])
            B[v_i, v_j] = A[v_i, v_j] * T.float32(2.0)
'''


def test_compute_at():
    f = elementwise3()
    sch = Schedule(f, debug_mask="all")
    c, d = sch.get_block("C"), sch.get_block("D")
    i, j = sch.get_loops(d)
    i0, i1 = sch.split(i, factors=[4, 4])
    sch.compute_at(c, i0)
    assert_ir(sch.func, HEAD + '''
    for i_0 in range(4):
        for ax0, ax1 in T.grid(4, 32):
            with T.block("C"):
                v_i = T.axis.spatial(16, i_0 * 4 + ax0)
                v_j = T.axis.spatial(32, ax1)
                T.reads(B[v_i, v_j])
                T.writes(C[v_i, v_j])
                C[v_i, v_j] = B[v_i, v_j] + T.float32(1.0)
        for i_1, j in T.grid(4, 32):
            with T.block("D"):
                v_i = T.axis.spatial(16, i_0 * 4 + i_1)
                v_j = T.axis.spatial(32, j)
                T.reads(C[v_i, v_j])
                T.writes(D[v_i, v_j])
                D[v_i, v_j] = C[v_i, v_j] * C[v_i, v_j]
''')
    check_numeric(f, sch.func)
    verify_trace_roundtrip(sch, f)
    # the moved block can move again, deeper
    sch.compute_at(c, i1)
    check_numeric(f, sch.func)
    assert [sch.get(x).extent.value for x in sch.get_loops(c)] == [4, 4, 32]


def test_compute_at_not_divisible_adds_predicate():
    f = elementwise3()
    sch = Schedule(f, debug_mask="all")
    b, c, d = (sch.get_block(n) for n in "BCD")
    i, j = sch.get_loops(d)
    i0, i1 = sch.split(i, factors=[3, 6])
    sch.compute_at(c, i0)
    sch.compute_at(b, i0)
    text = sch.func.script()
    assert text.count("T.where(i_0 * 6 + ax0 < 16)") == 2
    check_numeric(f, sch.func)
    assert_print_roundtrip(sch.func)


def test_compute_at_reduction_producer():
    f = matmul_add()
    sch = Schedule(f, debug_mask="all")
    c, d = sch.get_block("C"), sch.get_block("D")
    i, j = sch.get_loops(d)
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.compute_at(c, j0)
    loops = [sch.get(x) for x in sch.get_loops(c)]
    assert [lp.extent.value for lp in loops] == [16, 3, 8, 32]
    check_numeric(f, sch.func)
    verify_trace_roundtrip(sch, f)


def test_compute_at_errors():
    f = matmul_add()
    sch = Schedule(f)
    c, d = sch.get_block("C"), sch.get_block("D")
    ci, cj, ck = sch.get_loops(c)
    di, dj = sch.get_loops(d)
    schedule_error(lambda: sch.compute_at(d, ci), "compute_at", "block 'D'",
                   "output buffer")
    schedule_error(lambda: sch.compute_at(c, ck), "loop 'k' already encloses block 'C'")
    f3 = three_stage()
    sch3 = Schedule(f3)
    b = sch3.get_block("B")
    di, dj = sch3.get_loops(sch3.get_block("D"))
    schedule_error(lambda: sch3.compute_at(b, di), "consumer 'C'", "not under loop 'i'")


def test_compute_at_dependency_order():
    # Moving C and then its producer B under D's loop keeps producers first.
    f = elementwise3()
    sch = Schedule(f, debug_mask="all")
    b, c, d = (sch.get_block(n) for n in "BCD")
    i, j = sch.get_loops(d)
    sch.compute_at(c, i)
    sch.compute_at(b, i)
    names = [sch.get(x).name for x in sch.get_child_blocks(i)]
    assert names == ["B", "C", "D"]
    check_numeric(f, sch.func)


def test_reverse_compute_at():
    f = elementwise3()
    sch = Schedule(f, debug_mask="all")
    c, d = sch.get_block("C"), sch.get_block("D")
    i, j = sch.get_loops(c)
    sch.reverse_compute_at(d, i, preserve_unit_loops=True)
    assert_ir(sch.func, HEAD + '''
    for i in range(16):
        for j in range(32):
            with T.block("C"):
                v_i, v_j = T.axis.remap("SS", [i, j])
                T.reads(B[v_i, v_j])
                T.writes(C[v_i, v_j])
                C[v_i, v_j] = B[v_i, v_j] + T.float32(1.0)
        for ax0, ax1 in T.grid(1, 32):
            with T.block("D"):
                v_i = T.axis.spatial(16, i + ax0)
                v_j = T.axis.spatial(32, ax1)
                T.reads(C[v_i, v_j])
                T.writes(D[v_i, v_j])
                D[v_i, v_j] = C[v_i, v_j] * C[v_i, v_j]
''')
    check_numeric(f, sch.func)
    verify_trace_roundtrip(sch, f)


def test_reverse_compute_at_tiles():
    f = matmul_add(32, 32, 16)
    sch = Schedule(f, debug_mask="all")
    c, d = sch.get_block("C"), sch.get_block("D")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[4, 8])
    j0, j1 = sch.split(j, factors=[2, 16])
    sch.reorder(i0, j0, i1, j1, k)
    sch.reverse_compute_at(d, j0)
    assert [sch.get(x).extent.value for x in sch.get_loops(d)] == [4, 2, 8, 16]
    check_numeric(f, sch.func)


def test_reverse_compute_at_errors():
    f = matmul_add()
    sch = Schedule(f)
    c, d = sch.get_block("C"), sch.get_block("D")
    i, j, k = sch.get_loops(c)
    schedule_error(lambda: sch.reverse_compute_at(d, k), "reverse_compute_at",
                   "reduction variable of producer 'C'", "partial reductions")
    di, dj = sch.get_loops(d)
    schedule_error(lambda: sch.reverse_compute_at(c, di), "block 'C' is not a complete block")
    f3 = elementwise3()
    s3 = Schedule(f3)
    bi, bj = s3.get_loops(s3.get_block("B"))
    schedule_error(lambda: s3.reverse_compute_at(s3.get_block("D"), bi),
                   "no producer of block 'D' is under loop 'i'")


def test_reverse_compute_at_inexact_region():
    # Under loop i_0 the producer writes rows {i_0, i_0 + 4, i_0 + 8, i_0 + 12}; their hull
    # covers rows not yet produced, so the consumer cannot go there.
    f = elementwise3()
    sch = Schedule(f)
    c, d = sch.get_block("C"), sch.get_block("D")
    i, j = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[4, 4])
    sch.reorder(i1, i0)
    schedule_error(lambda: sch.reverse_compute_at(d, i1), "not exact")


def test_compute_inline():
    f = elementwise3()
    sch = Schedule(f, debug_mask="all")
    c = sch.get_block("C")
    sch.compute_inline(c)
    assert_ir(sch.func, '''
@T.prim_func
def main(A: T.Buffer((16, 32), "float32"), D: T.Buffer((16, 32), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    B = T.alloc_buffer((16, 32))
    for i, j in T.grid(16, 32):
        with T.block("B"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(A[v_i, v_j])
            T.writes(B[v_i, v_j])
            B[v_i, v_j] = A[v_i, v_j] * T.float32(2.0)
    for i, j in T.grid(16, 32):
        with T.block("D"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(B[v_i, v_j])
            T.writes(D[v_i, v_j])
            D[v_i, v_j] = (B[v_i, v_j] + T.float32(1.0)) * (B[v_i, v_j] + T.float32(1.0))
''')
    check_numeric(f, sch.func)
    verify_trace_roundtrip(sch, f)
    schedule_error(lambda: sch.get_loops(c), "block 'C'", "no longer exists")
    sch.compute_inline(sch.get_block("B"))
    check_numeric(f, sch.func)
    assert "alloc_buffer" not in sch.func.script()


def test_compute_inline_into_reduction():
    f = three_stage()
    sch = Schedule(f, debug_mask="all")
    sch.compute_inline(sch.get_block("B"))
    reads = [r.buffer.name for r in sch.get(sch.get_block("C")).reads]
    assert reads == ["A", "W"]  # A takes B's place
    check_numeric(f, sch.func)


def test_compute_inline_errors():
    f = three_stage()
    sch = Schedule(f)
    schedule_error(lambda: sch.compute_inline(sch.get_block("C")), "compute_inline",
                   "block 'C' is not an elementwise producer")
    schedule_error(lambda: sch.compute_inline(sch.get_block("D")), "output buffer")
    transposed = '''
@T.prim_func
def main(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
    B = T.alloc_buffer((8, 8))
    for i, j in T.grid(8, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(A[vi, vj])
            T.writes(B[vi * 0 + vj, vi])
            B[vi * 0 + vj, vi] = A[vi, vj]
    for i, j in T.grid(8, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(B[vi, vj])
            T.writes(C[vi, vj])
            C[vi, vj] = B[vi, vj]
'''
    s2 = Schedule(parse_func(transposed))
    schedule_error(lambda: s2.compute_inline(s2.get_block("B")), "not distinct iteration")


def test_compute_inline_refuses_buffer_viewed_by_blockize():
    # blockize gives D_o a match_buffer view of C; inlining C's copy block would remove
    # C's allocation while the view still reads it.
    f = matmul_add()
    sch = Schedule(f, debug_mask="all")
    sch.cache_write(sch.get_block("C"), 0, "global")
    _, j = sch.get_loops(sch.get_block("D"))
    _, j1 = sch.split(j, factors=[None, 4])
    sch.blockize(j1)
    before = sch.func
    err = schedule_error(lambda: sch.compute_inline(sch.get_block("C_global")),
                         "compute_inline", "block 'D_o'", "'C'", "view 'C_view'")
    assert "internal error" not in str(err)
    assert sch.func is before
    check_numeric(f, sch.func)
    verify_trace_roundtrip(sch, f)
    # Inlined before the view exists, the same schedule applies.
    s2 = Schedule(f, debug_mask="all")
    s2.cache_write(s2.get_block("C"), 0, "global")
    s2.compute_inline(s2.get_block("C_global"))
    _, j = s2.get_loops(s2.get_block("D"))
    _, j1 = s2.split(j, factors=[None, 4])
    s2.blockize(j1)
    check_numeric(f, s2.func)
    verify_trace_roundtrip(s2, f)


def test_reverse_compute_inline():
    f = elementwise3()
    sch = Schedule(f, debug_mask="all")
    sch.reverse_compute_inline(sch.get_block("D"))
    assert_ir(sch.func, HEAD.replace("    C = T.alloc_buffer((16, 32))\n", "") + '''
    for i, j in T.grid(16, 32):
        with T.block("C"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(B[v_i, v_j])
            T.writes(D[v_i, v_j])
            D[v_i, v_j] = (B[v_i, v_j] + T.float32(1.0)) * (B[v_i, v_j] + T.float32(1.0))
''')
    check_numeric(f, sch.func)
    verify_trace_roundtrip(sch, f)


def test_reverse_compute_inline_errors():
    f = matmul_add()
    sch = Schedule(f)
    schedule_error(lambda: sch.reverse_compute_inline(sch.get_block("D")),
                   "reverse_compute_inline", "producer 'C'", "not an elementwise")
    f3 = elementwise3()
    s3 = Schedule(f3)
    schedule_error(lambda: s3.reverse_compute_inline(s3.get_block("B")),
                   "has 0 producer blocks")
    two_consumers = '''
@T.prim_func
def main(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"),
         D: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            T.reads(A[vi])
            T.writes(B[vi])
            B[vi] = A[vi] + T.float32(1.0)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            T.reads(B[vi])
            T.writes(C[vi])
            C[vi] = B[vi] * T.float32(2.0)
    for i in range(8):
        with T.block("D"):
            vi = T.axis.spatial(8, i)
            T.reads(B[vi])
            T.writes(D[vi])
            D[vi] = B[vi] * T.float32(3.0)
'''
    s4 = Schedule(parse_func(two_consumers))
    schedule_error(lambda: s4.reverse_compute_inline(s4.get_block("C")),
                   "also used by block 'D'")


def test_removed_block_handle_stays_dead():
    text = '''
@T.prim_func
def main(A: T.Buffer((8,), "float32"), D: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,))
    X = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            T.reads(A[vi])
            T.writes(B[vi])
            B[vi] = A[vi] + T.float32(1.0)
    for i in range(8):
        with T.block("B_global"):
            vi = T.axis.spatial(8, i)
            T.reads(B[vi])
            T.writes(X[vi])
            X[vi] = B[vi] * T.float32(2.0)
    for i in range(8):
        with T.block("D"):
            vi = T.axis.spatial(8, i)
            T.reads(X[vi])
            T.writes(D[vi])
            D[vi] = X[vi] * X[vi]
'''
    f = parse_func(text)
    sch = Schedule(f)
    old = sch.get_block("B_global")
    sch.compute_inline(old)
    new = sch.cache_write(sch.get_block("B"), 0, "global")
    assert sch.get(new).name == "B_global"  # the name is free again
    schedule_error(lambda: sch.get(old), "block 'B_global'", "no longer exists")
    check_numeric(f, sch.func)

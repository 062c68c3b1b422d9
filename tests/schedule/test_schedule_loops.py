"""Loop primitives: split, fuse, reorder, parallel/vectorize/unroll/bind, annotate."""

import pytest
from schedule_helpers import (
    assert_ir,
    assert_print_roundtrip,
    check_numeric,
    elementwise3,
    matmul_add,
    parse_func,
    scale,
    schedule_error,
    verify_trace_roundtrip,
)

from irc.tir import Schedule

HEAD = '''
@T.prim_func
def main(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
'''


def scale_loops(**kw):
    f = scale(**kw)
    sch = Schedule(f, debug_mask="all")
    b = sch.get_block("B")
    return f, sch, b, *sch.get_loops(b)


# ---------------------------------------------------------------------------------
# split
# ---------------------------------------------------------------------------------


def test_split_divisible():
    f, sch, b, i, j = scale_loops()
    j0, j1 = sch.split(j, factors=[None, 8])
    assert [sch.get(x).extent.value for x in (j0, j1)] == [4, 8]
    assert_ir(sch.func, HEAD + '''
    for i, j_0, j_1 in T.grid(16, 4, 8):
        with T.block("B"):
            v_i = T.axis.spatial(16, i)
            v_j = T.axis.spatial(32, j_0 * 8 + j_1)
            T.reads(A[v_i, v_j])
            T.writes(B[v_i, v_j])
            B[v_i, v_j] = A[v_i, v_j] * T.float32(2.0)
''')
    check_numeric(f, sch.func)
    verify_trace_roundtrip(sch, f)


def test_split_not_divisible_adds_predicate():
    f, sch, b, i, j = scale_loops()
    sch.split(i, factors=[3, 6])
    assert_ir(sch.func, HEAD + '''
    for i_0, i_1, j in T.grid(3, 6, 32):
        with T.block("B"):
            v_i = T.axis.spatial(16, i_0 * 6 + i_1)
            v_j = T.axis.spatial(32, j)
            T.where(i_0 * 6 + i_1 < 16)
            T.reads(A[v_i, v_j])
            T.writes(B[v_i, v_j])
            B[v_i, v_j] = A[v_i, v_j] * T.float32(2.0)
''')
    check_numeric(f, sch.func)


def test_split_three_ways_and_unit_iters():
    f, sch, b, i, j = scale_loops()
    sch.split(j, factors=[1, 4, 8], preserve_unit_iters=False)
    assert_ir(sch.func, HEAD + '''
    for i, j_0, j_1, j_2 in T.grid(16, 1, 4, 8):
        with T.block("B"):
            v_i = T.axis.spatial(16, i)
            v_j = T.axis.spatial(32, j_1 * 8 + j_2)
            T.reads(A[v_i, v_j])
            T.writes(B[v_i, v_j])
            B[v_i, v_j] = A[v_i, v_j] * T.float32(2.0)
''')
    check_numeric(f, sch.func)
    # With unit iterators preserved, the unit loop stays in the binding.
    f, sch, b, i, j = scale_loops()
    sch.split(j, factors=[1, 4, 8])
    assert "v_j = T.axis.spatial(32, j_0 * 32 + j_1 * 8 + j_2)" in sch.func.script()


def test_split_errors():
    f, sch, b, i, j = scale_loops()
    schedule_error(lambda: sch.split(i, factors=[3, 5]), "split", "multiply to 15",
                   "extent 16", "'i'")
    schedule_error(lambda: sch.split(i, factors=[None, None]), "at most one")
    schedule_error(lambda: sch.split(i, factors=[0, None]), "not a positive integer")
    sch.parallel(i)
    schedule_error(lambda: sch.split(i, factors=[4, 4]), "loop 'i' is parallel")
    # a failed primitive records nothing and changes nothing
    assert [inst.kind.name for inst in sch.trace.insts] == ["GetBlock", "GetLoops", "Parallel"]


def test_handle_to_replaced_loop():
    f, sch, b, i, j = scale_loops()
    sch.split(i, factors=[4, 4])
    schedule_error(lambda: sch.split(i, factors=[2, 8]), "loop 'i'", "no longer exists")


# ---------------------------------------------------------------------------------
# fuse
# ---------------------------------------------------------------------------------


def test_fuse():
    f, sch, b, i, j = scale_loops()
    fused = sch.fuse(i, j)
    assert sch.get(fused).extent.value == 512
    assert_ir(sch.func, HEAD + '''
    for i_j_fused in range(512):
        with T.block("B"):
            v_i = T.axis.spatial(16, i_j_fused // 32)
            v_j = T.axis.spatial(32, i_j_fused % 32)
            T.reads(A[v_i, v_j])
            T.writes(B[v_i, v_j])
            B[v_i, v_j] = A[v_i, v_j] * T.float32(2.0)
''')
    check_numeric(f, sch.func)
    verify_trace_roundtrip(sch, f)


def test_fuse_three_after_split():
    f, sch, b, i, j = scale_loops()
    j0, j1 = sch.split(j, factors=[4, 8])
    sch.fuse(i, j0, j1)
    check_numeric(f, sch.func)
    assert "i_j_0_j_1_fused // 32" in sch.func.script()


def test_fuse_errors():
    f = elementwise3()
    sch = Schedule(f)
    bi, bj = sch.get_loops(sch.get_block("B"))
    ci, cj = sch.get_loops(sch.get_block("C"))
    schedule_error(lambda: sch.fuse(bi, cj), "fuse", "'i'", "not adjacent")
    schedule_error(lambda: sch.fuse(bj, bi), "outermost first")
    # a loop holding two statements is not perfectly nested
    sch.compute_at(sch.get_block("B"), ci)
    schedule_error(lambda: sch.fuse(ci, cj), "more than one statement", "not perfectly nested")


# ---------------------------------------------------------------------------------
# reorder
# ---------------------------------------------------------------------------------


def test_reorder():
    f = matmul_add()
    sch = Schedule(f, debug_mask="all")
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    sch.reorder(k, i)
    assert [sch.get(x).loop_var.name for x in sch.get_loops(c)] == ["k", "j", "i"]
    check_numeric(f, sch.func)
    i0, i1 = sch.split(i, factors=[4, 4])
    sch.reorder(i0, k, j, i1)
    assert [sch.get(x).loop_var.name for x in sch.get_loops(c)] == ["i_0", "k", "j", "i_1"]
    check_numeric(f, sch.func)
    verify_trace_roundtrip(sch, f)


def test_reorder_errors():
    f = elementwise3()
    sch = Schedule(f)
    bi, bj = sch.get_loops(sch.get_block("B"))
    ci, cj = sch.get_loops(sch.get_block("C"))
    schedule_error(lambda: sch.reorder(bj, ci), "reorder", "not in one chain")
    schedule_error(lambda: sch.reorder(bi, bi), "given twice")
    sch.compute_at(sch.get_block("B"), ci)
    schedule_error(lambda: sch.reorder(cj, ci), "perfectly nested")


OPAQUE = '''
@T.prim_func
def main(A: T.Buffer((8, 8), "float32")):
    for i, j in T.grid(8, 8):
        with T.block("scan"):
            vi = T.axis.opaque(8, i)
            vj = T.axis.spatial(8, j)
            T.reads(A[vi, vj])
            T.writes(A[vi, vj])
            A[vi, vj] = A[vi, vj] + T.float32(1.0)
'''


def test_reorder_opaque_block():
    sch = Schedule(parse_func(OPAQUE))
    i, j = sch.get_loops(sch.get_block("scan"))
    schedule_error(lambda: sch.reorder(j, i), "opaque", "'scan'")
    schedule_error(lambda: sch.parallel(i), "opaque")


# ---------------------------------------------------------------------------------
# loop kinds
# ---------------------------------------------------------------------------------


def test_parallel_vectorize_unroll():
    f = matmul_add()
    sch = Schedule(f, debug_mask="all")
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.reorder(i, j0, k, j1)
    sch.parallel(i)
    sch.vectorize(j1)
    sch.unroll(k)
    assert [sch.get(x).kind for x in (i, j0, k, j1)] == [
        "parallel", "serial", "unrolled", "vectorized"]
    sch.parallel(i)  # idempotent
    check_numeric(f, sch.func)
    assert_print_roundtrip(sch.func)
    verify_trace_roundtrip(sch, f)


def test_loop_kind_errors():
    f = matmul_add()
    sch = Schedule(f)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    e = schedule_error(lambda: sch.vectorize(k), "vectorize", "loop 'k'", "reduction",
                       "block 'C'")
    assert "rfactor" in e.hint
    schedule_error(lambda: sch.parallel(k), "parallel", "reduction")
    schedule_error(lambda: sch.bind(k, "threadIdx.x"), "bind", "reduction")
    sch.parallel(i)
    schedule_error(lambda: sch.parallel(j), "nested parallel")
    schedule_error(lambda: sch.vectorize(i), "already parallel")
    schedule_error(lambda: sch.bind(j, "threadIdx.w"), "unknown thread axis")


def test_bind_twice():
    f = scale()
    sch = Schedule(f, debug_mask="all")
    i, j = sch.get_loops(sch.get_block("B"))
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    assert sch.get(i).thread_tag == "blockIdx.x"
    schedule_error(lambda: sch.bind(i, "blockIdx.y"), "bound only once")
    f2 = scale()
    sch2 = Schedule(f2)
    i, j = sch2.get_loops(sch2.get_block("B"))
    j0, j1 = sch2.split(j, factors=[4, 8])
    sch2.bind(j0, "threadIdx.x")
    # j1's iterations depend on j0 (j = j0 * 8 + j1): sharing j0's thread index would
    # compute only part of the output.
    schedule_error(lambda: sch2.bind(j1, "threadIdx.x"), "depends on the variable of loop")
    f3 = scale()
    sch3 = Schedule(f3)
    i, j = sch3.get_loops(sch3.get_block("B"))
    sch3.bind(i, "threadIdx.x")
    schedule_error(lambda: sch3.bind(j, "threadIdx.x"), "depends on the variable of loop")
    check_numeric(f, sch.func)


RACE = '''
@T.prim_func
def main(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for i, r in T.grid(4, 8):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            T.reads(A[vi])
            T.writes(B[vi])
            B[vi] = A[vi] * T.float32(2.0)
'''


def test_parallel_data_race():
    sch = Schedule(parse_func(RACE))
    i, r = sch.get_loops(sch.get_block("B"))
    schedule_error(lambda: sch.parallel(r), "loop 'r'", "data race", "'B'")
    sch.parallel(i)


def test_parallel_partial_digits_race():
    # The spatial index uses only i // 2: iterations 2t and 2t+1 write the same element.
    text = '''
@T.prim_func
def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(8, i // 2)
            T.reads(A[vi])
            T.writes(B[vi])
            B[vi] = A[vi]
'''
    sch = Schedule(parse_func(text))
    (i,) = sch.get_loops(sch.get_block("B"))
    schedule_error(lambda: sch.parallel(i), "data race")


def test_vectorize_symbolic_extent():
    text = '''
@T.prim_func
def main(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,))
    B = T.match_buffer(b, (n,))
    for i in range(n):
        with T.block("B"):
            vi = T.axis.spatial(n, i)
            T.reads(A[vi])
            T.writes(B[vi])
            B[vi] = A[vi]
'''
    sch = Schedule(parse_func(text))
    (i,) = sch.get_loops(sch.get_block("B"))
    schedule_error(lambda: sch.vectorize(i), "symbolic extent")
    i0, i1 = sch.split(i, factors=[None, 4])
    sch.vectorize(i1)
    assert "T.where(i_0 * 4 + i_1 < n)" in sch.func.script()


# ---------------------------------------------------------------------------------
# annotations
# ---------------------------------------------------------------------------------


def test_annotate_and_unannotate():
    f, sch, b, i, j = scale_loops()
    sch.annotate(i, "pragma_auto_unroll_max_step", 16)
    sch.annotate(b, "meta_schedule.tiling_structure", "SSRSRS")
    sch.annotate(b, "list", [1, 2.5, "x"])
    assert sch.get(i).annotations == {"pragma_auto_unroll_max_step": 16}
    assert sch.get(b).annotations["meta_schedule.tiling_structure"] == "SSRSRS"
    assert_print_roundtrip(sch.func)
    verify_trace_roundtrip(sch, f)
    sch.unannotate(b, "list")
    assert "list" not in sch.get(b).annotations
    schedule_error(lambda: sch.unannotate(b, "list"), "no annotation 'list'")
    schedule_error(lambda: sch.annotate(b, "bad", object()), "annotation value")
    check_numeric(f, sch.func)


def test_get_block_errors():
    sch = Schedule(scale())
    schedule_error(lambda: sch.get_block("nope"), "no block named 'nope'")
    schedule_error(lambda: sch.get_loops("not a handle"), "no block named")


@pytest.mark.parametrize("kind", ["parallel", "vectorize", "unroll"])
def test_kind_on_fused_loop_numeric(kind):
    f = elementwise3()
    sch = Schedule(f, debug_mask="all")
    for name in ("B", "C", "D"):
        i, j = sch.get_loops(sch.get_block(name))
        fused = sch.fuse(i, j)
        o, inner = sch.split(fused, factors=[None, 8])
        getattr(sch, kind)(inner if kind != "parallel" else o)
    check_numeric(f, sch.func)


def test_add_unit_loop():
    text = '''
@T.prim_func
def main(A: T.Buffer((1,), "float32"), B: T.Buffer((1,), "float32")):
    with T.block("B"):
        vi = T.axis.spatial(1, 0)
        T.reads(A[vi])
        T.writes(B[vi])
        B[vi] = A[vi] + T.float32(1.0)
'''
    f = parse_func(text)
    sch = Schedule(f, debug_mask="all")
    b = sch.get_block("B")
    assert sch.get_loops(b) == []
    u = sch.add_unit_loop(b)
    assert [sch.get(x).extent.value for x in sch.get_loops(b)] == [1]
    sch.add_unit_loop(u)
    assert len(sch.get_loops(b)) == 2
    check_numeric(f, sch.func)
    verify_trace_roundtrip(sch, f)
    schedule_error(lambda: sch.add_unit_loop(sch.get_block("root")), "root block")


def test_reorder_ir():
    f = matmul_add()
    sch = Schedule(f, debug_mask="all")
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    sch.reorder(k, i)
    sch.parallel(j)
    assert_ir(sch.func, '''
@T.prim_func
def main(A: T.Buffer((16, 32), "float32"), B: T.Buffer((32, 24), "float32"),
         D: T.Buffer((16, 24), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    C = T.alloc_buffer((16, 24))
    for k in range(32):
        for j in T.parallel(24):
            for i in range(16):
                with T.block("C"):
                    v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
                    T.reads(A[v_i, v_k], B[v_k, v_j])
                    T.writes(C[v_i, v_j])
                    with T.init():
                        C[v_i, v_j] = T.float32(0.0)
                    C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]
    for i, j in T.grid(16, 24):
        with T.block("D"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(C[v_i, v_j])
            T.writes(D[v_i, v_j])
            D[v_i, v_j] = C[v_i, v_j] + T.float32(1.0)
''')
    check_numeric(f, sch.func)


def test_a_primitive_schedule_does_not_have_is_an_irc_error():
    """``sch.tile`` (TVM's te schedules have it) was a plain AttributeError."""
    import irc

    sch = Schedule(elementwise3())
    with pytest.raises(irc.IRCError, match="Schedule has no primitive or attribute 'tile'"
                       ) as err:
        sch.tile(sch.get_loops(sch.get_block("B"))[0], 4)
    assert "sch.split" in err.value.hint
    assert isinstance(err.value, AttributeError)  # hasattr() still answers
    assert not hasattr(sch, "tile") and hasattr(sch, "split")
    with pytest.raises(irc.IRCError) as err:
        sch.spilt  # noqa: B018 - the attribute access is the test
    assert err.value.hint == "did you mean split?"

"""cache_read, cache_write, set_scope, storage_align."""

from schedule_helpers import (
    assert_ir,
    check_llvm,
    check_numeric,
    matmul_add,
    parse_func,
    scale,
    schedule_error,
    verify_trace_roundtrip,
)

import irc
from irc.tir import Schedule


def test_cache_read_and_write():
    f = scale()
    sch = Schedule(f, debug_mask="all")
    b = sch.get_block("B")
    a_shared = sch.cache_read(b, 0, "shared")
    b_local = sch.cache_write(b, 0, "local")
    assert sch.get(a_shared).name == "A_shared"
    assert sch.get(b_local).name == "B_local"
    assert_ir(sch.func, '''
@T.prim_func
def main(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    A_shared = T.alloc_buffer((16, 32), scope="shared")
    B_local = T.alloc_buffer((16, 32), scope="local")
    for ax0, ax1 in T.grid(16, 32):
        with T.block("A_shared"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            T.reads(A[v0, v1])
            T.writes(A_shared[v0, v1])
            A_shared[v0, v1] = A[v0, v1]
    for i, j in T.grid(16, 32):
        with T.block("B"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(A_shared[v_i, v_j])
            T.writes(B_local[v_i, v_j])
            B_local[v_i, v_j] = A_shared[v_i, v_j] * T.float32(2.0)
    for ax0, ax1 in T.grid(16, 32):
        with T.block("B_local"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            T.reads(B_local[v0, v1])
            T.writes(B[v0, v1])
            B[v0, v1] = B_local[v0, v1]
''')
    check_numeric(f, sch.func)
    verify_trace_roundtrip(sch, f)


def test_cache_write_tiled_matmul_llvm():
    f = matmul_add(32, 32, 32)
    sch = Schedule(f, debug_mask="all")
    c = sch.get_block("C")
    c_local = sch.cache_write(c, 0, "local")
    a_cache = sch.cache_read(c, 0, "global")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[4, 8])
    j0, j1 = sch.split(j, factors=[2, 16])
    sch.reorder(i0, j0, k, i1, j1)
    sch.reverse_compute_at(c_local, j0)
    sch.compute_at(a_cache, k)
    sch.vectorize(j1)
    assert [sch.get(x).extent.value for x in sch.get_loops(c_local)] == [4, 2, 8, 16]
    assert [sch.get(x).extent.value for x in sch.get_loops(a_cache)] == [4, 2, 32, 8]
    check_numeric(f, sch.func)
    check_llvm(f, sch.func)
    verify_trace_roundtrip(sch, f)


def test_cache_read_selected_consumers():
    text = '''
@T.prim_func
def main(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"),
         D: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            T.reads(A[vi])
            T.writes(C[vi])
            C[vi] = A[vi] * T.float32(2.0)
    for i in range(8):
        with T.block("D"):
            vi = T.axis.spatial(8, i)
            T.reads(A[vi])
            T.writes(D[vi])
            D[vi] = A[vi] * T.float32(3.0)
'''
    f = parse_func(text)
    sch = Schedule(f, debug_mask="all")
    c, d = sch.get_block("C"), sch.get_block("D")
    sch.cache_read(c, 0, "local", consumer_blocks=[d])
    assert [r.buffer.name for r in sch.get(c).reads] == ["A"]
    assert [r.buffer.name for r in sch.get(d).reads] == ["A_local"]
    check_numeric(f, sch.func)
    verify_trace_roundtrip(sch, f)


def test_cache_errors():
    f = matmul_add()
    sch = Schedule(f)
    c = sch.get_block("C")
    schedule_error(lambda: sch.cache_read(c, 5, "shared"), "read index 5 is out of range")
    schedule_error(lambda: sch.cache_read(c, 0, "texture"), "unknown storage scope")
    schedule_error(lambda: sch.cache_write(c, 1, "local"), "write index 1 is out of range")
    two_writers = '''
@T.prim_func
def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(4):
        with T.block("lo"):
            vi = T.axis.spatial(4, i)
            T.reads(A[vi])
            T.writes(B[vi])
            B[vi] = A[vi]
    for i in range(4):
        with T.block("hi"):
            vi = T.axis.spatial(4, i)
            T.reads(A[vi + 4])
            T.writes(B[vi + 4])
            B[vi + 4] = A[vi + 4]
'''
    s2 = Schedule(parse_func(two_writers))
    schedule_error(lambda: s2.cache_write(s2.get_block("lo"), 0, "local"),
                   "cache_write", "'lo', 'hi'", "only writer")


def test_set_scope():
    f = matmul_add()
    sch = Schedule(f, debug_mask="all")
    c = sch.get_block("C")
    sch.set_scope(c, 0, "local")
    assert sch.get(c).writes[0].buffer.scope == "local"
    assert sch.get(sch.get_block("D")).reads[0].buffer.scope == "local"
    check_numeric(f, sch.func)
    schedule_error(lambda: sch.set_scope(sch.get_block("D"), 0, "local"),
                   "set_scope", "function parameter")
    schedule_error(lambda: sch.set_scope(c, 0, "nowhere"), "unknown storage scope")


def test_storage_align():
    f = matmul_add(16, 30, 8)
    sch = Schedule(f, debug_mask="all")
    c = sch.get_block("C")
    sch.storage_align(c, 0, axis=0, factor=16, offset=1)
    assert sch.get(c).annotations["buffer_dim_align"] == [[0, 0, 16, 1]]
    lowered = irc.lower(sch)["main"].script()
    assert "T.allocate([528]" in lowered  # 16 rows with stride 33 (= 2 * 16 + 1)
    check_numeric(f, sch.func)
    check_llvm(f, sch.func)
    verify_trace_roundtrip(sch, f)
    schedule_error(lambda: sch.storage_align(c, 0, 1, 16, 1), "innermost axis")
    schedule_error(lambda: sch.storage_align(c, 0, 0, 16, 16), "offset 16")
    schedule_error(lambda: sch.storage_align(sch.get_block("D"), 0, 0, 16, 1),
                   "function parameter")


def test_cache_stages_follow_a_producer_inside_a_loop():
    """The copy goes right after the producer's own loops, inside the loop it shares with
    the consumer, and copies the part written there (a bug the random tests found)."""
    f = matmul_add()
    sch = Schedule(f, debug_mask="all")
    c, d = sch.get_block("C"), sch.get_block("D")
    di, dj = sch.get_loops(d)
    sch.compute_at(c, di)
    c_global = sch.cache_write(c, 0, "global")
    assert [sch.get(x).extent.value for x in sch.get_loops(c_global)] == [16, 24]
    assert [sch.get(x).name for x in sch.get_child_blocks(di)] == ["C", "C_global", "D"]
    check_numeric(f, sch.func)
    c_read = sch.cache_read(d, 0, "local")
    assert [sch.get(x).name for x in sch.get_child_blocks(di)] == [
        "C", "C_global", "C_local", "D"]
    check_numeric(f, sch.func)
    verify_trace_roundtrip(sch, f)
    assert sch.get(c_read).name == "C_local"

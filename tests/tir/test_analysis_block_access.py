"""Block access region detection, buffer access collection, variable use, lowered-form
verification."""

from __future__ import annotations

import pytest

from irc import LoweringError, tir
from irc.ir import assert_structural_equal, collect
from irc.script_parser import parse
from irc.tir import Block, Range, const, decl_buffer, var
from irc.tir.analysis import (
    buffers_accessed,
    collect_buffer_accesses,
    collect_vars,
    detect_block_access_regions,
    undefined_vars,
    uses_var,
    verify_lowered,
)


def _block(func, name):
    (b,) = [x for x in collect(func.body, lambda n: type(n) is Block) if x.name == name]
    return b


def _regions(func, name):
    b = _block(func, name)
    reads, writes = detect_block_access_regions(b)
    return tuple(reads), tuple(writes)


def _check(without_regions: str, with_regions: str, name: str):
    """Regions detected on the first text equal the ones written in the second."""
    got = parse(without_regions)
    want = _block(parse(with_regions), name)
    reads, writes = _regions(got, name)
    assert_structural_equal((reads, writes), (want.reads, want.writes))


def test_reduction_with_init_does_not_read_its_output():
    _check('''
@T.prim_func
def main(A: T.Buffer((16, 8), "float32"), B: T.Buffer((8, 4), "float32"),
         C: T.Buffer((16, 4), "float32")):
    for i, j, k in T.grid(16, 4, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads()
            T.writes()
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
''', '''
@T.prim_func
def main(A: T.Buffer((16, 8), "float32"), B: T.Buffer((8, 4), "float32"),
         C: T.Buffer((16, 4), "float32")):
    for i, j, k in T.grid(16, 4, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
''', "C")


def test_update_without_init_reads_and_writes_output_and_relaxes_inner_loops():
    _check('''
@T.prim_func
def main(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            T.reads()
            T.writes()
            for k in range(4):
                B[vi] = B[vi] + A[vi, k * 2] + A[vi, k * 2 + 1]
''', '''
@T.prim_func
def main(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            T.reads(B[vi], A[vi, 0:8])
            T.writes(B[vi])
            for k in range(4):
                B[vi] = B[vi] + A[vi, k * 2] + A[vi, k * 2 + 1]
''', "B")


def test_stencil_union_and_nested_block():
    _check('''
@T.prim_func
def main(A: T.Buffer((66,), "float32"), B: T.Buffer((64,), "float32")):
    for io in range(4):
        with T.block("outer"):
            vo = T.axis.spatial(4, io)
            T.reads()
            T.writes()
            for ii in range(16):
                with T.block("inner"):
                    vi = T.axis.spatial(64, vo * 16 + ii)
                    T.reads(A[vi:vi + 3])
                    T.writes(B[vi])
                    B[vi] = A[vi] + A[vi + 1] + A[vi + 2]
''', '''
@T.prim_func
def main(A: T.Buffer((66,), "float32"), B: T.Buffer((64,), "float32")):
    for io in range(4):
        with T.block("outer"):
            vo = T.axis.spatial(4, io)
            T.reads(A[vo * 16:vo * 16 + 18])
            T.writes(B[vo * 16:vo * 16 + 16])
            for ii in range(16):
                with T.block("inner"):
                    vi = T.axis.spatial(64, vo * 16 + ii)
                    T.reads(A[vi:vi + 3])
                    T.writes(B[vi])
                    B[vi] = A[vi] + A[vi + 1] + A[vi + 2]
''', "outer")


def test_own_allocations_are_not_regions_and_data_dependent_index_is_whole_dim():
    A = decl_buffer((16, 8), "float32", "A")
    B = decl_buffer((16,), "float32", "B")
    idx = decl_buffer((16,), "int32", "idx")
    tmp = decl_buffer((8,), "float32", "tmp")
    vi, k = var("vi"), var("k")
    body = tir.seq(
        tir.For(loop_var=k, min=const(0), extent=const(8), kind="serial",
                body=tir.BufferStore(buffer=tmp, indices=(k,), value=A[idx[k], k])),
        tir.BufferStore(buffer=B, indices=(vi,), value=tmp[0] + tmp[7]))
    blk = Block(name="b", iter_vars=(tir.IterVar(var=vi, dom=Range.from_min_extent(0, 16)),),
                reads=(), writes=(), body=body, alloc_buffers=(tmp,))
    reads, writes = detect_block_access_regions(blk)
    assert [r.buffer.name for r in reads] == ["idx", "A"]
    assert (reads[0].region[0].min.value, reads[0].region[0].extent.value) == (0, 8)
    a_region = reads[1].region
    assert (a_region[0].min.value, a_region[0].extent.value) == (0, 16)
    assert (a_region[1].min.value, a_region[1].extent.value) == (0, 8)
    assert [w.buffer.name for w in writes] == ["B"]


def test_opaque_use_of_data_pointer_is_whole_buffer():
    A = decl_buffer((16,), "float32", "A")
    B = decl_buffer((16,), "float32", "B")
    vi = var("vi")
    call = tir.Call(dtype="int32", op="my_extern", args=(A.data,))
    body = tir.seq(tir.Evaluate(value=call), tir.BufferStore(buffer=B, indices=(vi,),
                                                           value=const(0.0)))
    blk = Block(name="b", iter_vars=(tir.IterVar(var=vi, dom=Range.from_min_extent(0, 16)),),
                reads=(), writes=(), body=body)
    reads, writes = detect_block_access_regions(blk, {A.data: A})
    assert [r.buffer.name for r in reads] == ["A"]
    assert [w.buffer.name for w in writes] == ["A", "B"]
    assert writes[0].region[0].extent.value == 16


def test_collect_buffer_accesses_in_program_order():
    A = decl_buffer((4,), "float32", "A")
    B = decl_buffer((4,), "float32", "B")
    i = var("i")
    s = tir.For(loop_var=i, min=const(0), extent=const(4), kind="serial",
                body=tir.BufferStore(buffer=B, indices=(i,), value=A[i] + B[i]))
    acc = collect_buffer_accesses(s)
    assert [(a.buffer.name, a.kind) for a in acc] == [("A", "read"), ("B", "read"),
                                                      ("B", "write")]
    assert [b.name for b in buffers_accessed(s)] == ["A", "B"]


def test_undefined_and_used_vars():
    A = decl_buffer((4,), "float32", "A")
    i, n, t = var("i"), var("n"), var("t")
    s = tir.For(loop_var=i, min=const(0), extent=n, kind="serial",
                body=tir.LetStmt(var=t, value=i * 2,
                                 body=tir.BufferStore(buffer=A, indices=(t,), value=const(1.0))))
    assert undefined_vars(s) == [n, A.data]
    assert undefined_vars(s, defined=[n, A.data]) == []
    assert uses_var(s, {n}) and not uses_var(i * 2, {n})
    assert collect_vars(A[i + n] * 2.0) == [i, n]


LOWERED_OK = '''
@T.prim_func
def main(A: T.Buffer((4, 4), "float32")):
    A_1 = T.Buffer((16,), data=A.data)
    for i in range(16):
        A_1[i] = T.float32(0)
'''

LOWERED_BAD = '''
@T.prim_func
def main(A: T.Buffer((4, 4), "float32")):
    for i, j in T.grid(4, 4):
        A[i, j] = T.float32(0)
'''


def test_verify_lowered():
    verify_lowered(parse(LOWERED_OK))
    with pytest.raises(LoweringError, match="2 dimensions"):
        verify_lowered(parse(LOWERED_BAD))


def test_union_of_thousands_of_accesses_folds_without_deep_nesting():
    """A block that reads one buffer at thousands of offsets (a Winograd transform
    inlined into its consumer reads its input that way) gets one simplified interval;
    the union used to nest one ``min`` per access and overflow Python's stack."""
    from irc.tir.arith.analyzer import Analyzer
    from irc.tir.arith.int_set import IntervalSet, union_intervals

    i = var("i", "int64")
    an = Analyzer()
    sets = [IntervalSet(i + const(k % 4000, "int64"), i + const(k % 4000, "int64"))
            for k in range(6000)]
    got = union_intervals(an, sets)
    assert_structural_equal((got.min_value, got.max_value),
                            (an.simplify(i), an.simplify(i + const(3999, "int64"))))

"""Before/after pairs for the block-level lowering passes: LowerInitBlock,
PlanAndUpdateBufferAllocationLocation, ConvertBlocksToOpaque, CompactBufferAllocation,
LowerMatchBuffer, LowerOpaqueBlock."""

from __future__ import annotations

import pytest

from irc import LoweringError
from irc.ir import IRModule, assert_structural_equal
from irc.script_parser import parse
from irc.tir import transform as T


def check(pass_, before: str, expected: str):
    assert_structural_equal(pass_(parse(before)), parse(expected))


REDUCE = '''
@T.prim_func
def main(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i in range(4):
        for j, k in T.grid(4, 16):
            with T.block("B"):
                vi = T.axis.spatial(16, i * 4 + j)
                vk = T.axis.spatial(16, k)
                B[vi, vk] = A[vi, vk] * T.float32(2)
        for j, k in T.grid(4, 16):
            with T.block("C"):
                vi = T.axis.spatial(16, i * 4 + j)
                vk = T.axis.reduce(16, k)
                with T.init():
                    C[vi, 0] = T.float32(0)
                C[vi, 0] = C[vi, 0] + B[vi, vk]
'''

REDUCE_INIT_LOWERED = '''
@T.prim_func
def main(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i in range(4):
        for j, k in T.grid(4, 16):
            with T.block("B"):
                vi = T.axis.spatial(16, i * 4 + j)
                vk = T.axis.spatial(16, k)
                B[vi, vk] = A[vi, vk] * T.float32(2)
        for j, k in T.grid(4, 16):
            with T.block("C"):
                vi = T.axis.spatial(16, i * 4 + j)
                vk = T.axis.reduce(16, k)
                T.reads(B[vi, vk])
                T.writes(C[vi, 0])
                if vk == 0:
                    C[vi, 0] = T.float32(0)
                C[vi, 0] = C[vi, 0] + B[vi, vk]
'''

REDUCE_PLANNED = '''
@T.prim_func
def main(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i in range(4):
        with T.block(""):
            T.reads(A[i * 4:i * 4 + 4, 0:16])
            T.writes(C[i * 4:i * 4 + 4, 0])
            B = T.alloc_buffer((16, 16))
            for j, k in T.grid(4, 16):
                with T.block("B"):
                    vi = T.axis.spatial(16, i * 4 + j)
                    vk = T.axis.spatial(16, k)
                    B[vi, vk] = A[vi, vk] * T.float32(2)
            for j, k in T.grid(4, 16):
                with T.block("C"):
                    vi = T.axis.spatial(16, i * 4 + j)
                    vk = T.axis.reduce(16, k)
                    T.reads(B[vi, vk])
                    T.writes(C[vi, 0])
                    if vk == 0:
                        C[vi, 0] = T.float32(0)
                    C[vi, 0] = C[vi, 0] + B[vi, vk]
'''

REDUCE_OPAQUE = '''
@T.prim_func
def main(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i in range(4):
        with T.block(""):
            T.reads(A[i * 4:i * 4 + 4, 0:16])
            T.writes(C[i * 4:i * 4 + 4, 0])
            B = T.alloc_buffer((16, 16))
            for j, k in T.grid(4, 16):
                with T.block("B"):
                    T.reads(A[i * 4 + j, k])
                    T.writes(B[i * 4 + j, k])
                    B[i * 4 + j, k] = A[i * 4 + j, k] * T.float32(2)
            for j, k in T.grid(4, 16):
                with T.block("C"):
                    T.reads(B[i * 4 + j, k])
                    T.writes(C[i * 4 + j, 0])
                    if k == 0:
                        C[i * 4 + j, 0] = T.float32(0)
                    C[i * 4 + j, 0] = C[i * 4 + j, 0] + B[i * 4 + j, k]
'''

REDUCE_COMPACT = '''
@T.prim_func
def main(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i in range(4):
        with T.block(""):
            T.reads(A[i * 4:i * 4 + 4, 0:16])
            T.writes(C[i * 4:i * 4 + 4, 0])
            B = T.alloc_buffer((4, 16))
            for j, k in T.grid(4, 16):
                with T.block("B"):
                    T.reads(A[i * 4 + j, k])
                    T.writes(B[j, k])
                    B[j, k] = A[i * 4 + j, k] * T.float32(2)
            for j, k in T.grid(4, 16):
                with T.block("C"):
                    T.reads(B[j, k])
                    T.writes(C[i * 4 + j, 0])
                    if k == 0:
                        C[i * 4 + j, 0] = T.float32(0)
                    C[i * 4 + j, 0] = C[i * 4 + j, 0] + B[j, k]
'''

REDUCE_NO_BLOCKS = '''
@T.prim_func
def main(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i in range(4):
        B = T.allocate([4, 16], "float32", "global")
        B_1 = T.Buffer((4, 16), data=B)
        for j, k in T.grid(4, 16):
            B_1[j, k] = A[i * 4 + j, k] * T.float32(2)
        for j, k in T.grid(4, 16):
            if k == 0:
                C[i * 4 + j, 0] = T.float32(0)
            C[i * 4 + j, 0] = C[i * 4 + j, 0] + B_1[j, k]
'''


def test_lower_init_block():
    check(T.LowerInitBlock(), REDUCE, REDUCE_INIT_LOWERED)


def test_lower_init_block_without_reduce_vars_runs_init_first():
    check(T.LowerInitBlock(), '''
@T.prim_func
def main(C: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("C"):
            vi = T.axis.spatial(4, i)
            T.reads()
            T.writes(C[vi])
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + T.float32(1)
''', '''
@T.prim_func
def main(C: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("C"):
            vi = T.axis.spatial(4, i)
            T.reads()
            T.writes(C[vi])
            C[vi] = T.float32(0)
            C[vi] = C[vi] + T.float32(1)
''')


def test_plan_buffer_allocation_moves_to_loop_lca():
    check(T.PlanAndUpdateBufferAllocationLocation(), REDUCE_INIT_LOWERED, REDUCE_PLANNED)


def test_plan_buffer_allocation_keeps_block_lca():
    text = '''
@T.prim_func
def main(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            T.reads(A[vi])
            T.writes(C[vi])
            B = T.alloc_buffer((1,))
            B[0] = A[vi]
            C[vi] = B[0]
'''
    check(T.PlanAndUpdateBufferAllocationLocation(), text, text)


def test_convert_blocks_to_opaque():
    check(T.ConvertBlocksToOpaque(), REDUCE_PLANNED, REDUCE_OPAQUE)


def test_compact_buffer_allocation():
    check(T.CompactBufferAllocation(), REDUCE_OPAQUE, REDUCE_COMPACT)


def test_compact_buffer_allocation_with_storage_align():
    check(T.CompactBufferAllocation(), '''
@T.prim_func
def main(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i in range(4):
        with T.block(""):
            B = T.alloc_buffer((16, 16))
            for j, k in T.grid(4, 16):
                with T.block("B"):
                    T.block_attr({"buffer_dim_align": [[0, 0, 16, 4]]})
                    B[i * 4 + j, k] = A[i * 4 + j, k]
            for j, k in T.grid(4, 16):
                with T.block("C"):
                    C[i * 4 + j, k] = B[i * 4 + j, k]
''', '''
@T.prim_func
def main(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i in range(4):
        with T.block(""):
            T.reads(A[i * 4:i * 4 + 4, 0:16])
            T.writes(C[i * 4:i * 4 + 4, 0:16])
            B = T.alloc_buffer((4, 16), strides=(20, 1))
            for j, k in T.grid(4, 16):
                with T.block("B"):
                    T.reads(A[i * 4 + j, k])
                    T.writes(B[j, k])
                    T.block_attr({"buffer_dim_align": [[0, 0, 16, 4]]})
                    B[j, k] = A[i * 4 + j, k]
            for j, k in T.grid(4, 16):
                with T.block("C"):
                    T.reads(B[j, k])
                    T.writes(C[i * 4 + j, k])
                    C[i * 4 + j, k] = B[j, k]
''')


def test_compact_keeps_buffer_used_opaquely():
    text = '''
@T.prim_func
def main(C: T.Buffer((16,), "float32")):
    for i in range(4):
        with T.block(""):
            T.reads()
            T.writes(C[i * 4:i * 4 + 4])
            B = T.alloc_buffer((16,))
            T.evaluate(T.call_extern("int32", "fill", B.data))
            for j in range(4):
                C[i * 4 + j] = B[i * 4 + j]
'''
    check(T.CompactBufferAllocation(), text, text)


def test_lower_opaque_block():
    check(T.LowerOpaqueBlock(), REDUCE_COMPACT, REDUCE_NO_BLOCKS)


def test_lower_opaque_block_predicate_unit_loop_and_thread_binding():
    check(T.LowerOpaqueBlock(), '''
@T.prim_func
def main(A: T.Buffer((10,), "float32")):
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for io in range(3):
            for u in range(1):
                for ii in range(4):
                    with T.block("A"):
                        T.where(io * 4 + ii < 10)
                        T.reads()
                        T.writes(A[io * 4 + ii + u])
                        A[io * 4 + ii + u] = T.float32(1)
''', '''
@T.prim_func
def main(A: T.Buffer((10,), "float32")):
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for io in range(3):
            for ii in range(4):
                if io * 4 + ii < 10:
                    A[io * 4 + ii + 0] = T.float32(1)
''')


def test_lower_opaque_block_needs_opaque_blocks():
    with pytest.raises(LoweringError, match="ConvertBlocksToOpaque"):
        T.LowerOpaqueBlock()(parse(REDUCE_PLANNED))


def test_lower_match_buffer():
    check(T.LowerMatchBuffer(), '''
@T.prim_func
def main(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16,), "float32")):
    for i in range(4):
        with T.block("sum"):
            vi = T.axis.spatial(4, i)
            T.reads(A[vi * 4:vi * 4 + 4, 0:16])
            T.writes(C[vi * 4:vi * 4 + 4])
            Asub = T.match_buffer(A[vi * 4:vi * 4 + 4, 0:16], (4, 16))
            Csub = T.match_buffer(C[vi * 4:vi * 4 + 4], (4,))
            for j, k in T.grid(4, 16):
                Csub[j] = Csub[j] + Asub[j, k]
''', '''
@T.prim_func
def main(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16,), "float32")):
    for i in range(4):
        with T.block("sum"):
            vi = T.axis.spatial(4, i)
            T.reads(A[vi * 4:vi * 4 + 4, 0:16])
            T.writes(C[vi * 4:vi * 4 + 4])
            for j, k in T.grid(4, 16):
                C[vi * 4 + j] = C[vi * 4 + j] + A[vi * 4 + j, k]
''')


def test_passes_apply_to_modules():
    mod = IRModule(functions={"main": parse(REDUCE)})
    out = T.LowerInitBlock()(mod)
    assert_structural_equal(out["main"], parse(REDUCE_INIT_LOWERED))
    with pytest.raises(LoweringError, match="PrimFunc or an IRModule"):
        T.LowerInitBlock()("not a function")

"""blockize and tensorize."""

from schedule_helpers import (
    assert_ir,
    assert_print_roundtrip,
    check_llvm,
    check_numeric,
    elementwise3,
    matmul_add,
    parse_func,
    schedule_error,
    verify_trace_roundtrip,
)

from irc.tir import Schedule
from irc.tir.schedule import TensorIntrin


def test_blockize():
    f = elementwise3()
    sch = Schedule(f, debug_mask="all")
    c = sch.get_block("C")
    i, j = sch.get_loops(c)
    j0, j1 = sch.split(j, factors=[None, 8])
    outer = sch.blockize(j1)
    assert sch.get(outer).name == "C_o"
    assert_ir(sch.func, '''
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
    for i, j_0 in T.grid(16, 4):
        with T.block("C_o"):
            v_i_o, v_j_o = T.axis.remap("SS", [i, j_0])
            T.reads(B[v_i_o, v_j_o * 8:v_j_o * 8 + 8])
            T.writes(C[v_i_o, v_j_o * 8:v_j_o * 8 + 8])
            B_view = T.match_buffer(B[v_i_o, v_j_o * 8:v_j_o * 8 + 8], (1, 8))
            C_view = T.match_buffer(C[v_i_o, v_j_o * 8:v_j_o * 8 + 8], (1, 8))
            for j_1 in range(8):
                with T.block("C"):
                    v_j_i = T.axis.spatial(8, j_1)
                    T.reads(B_view[0, v_j_i])
                    T.writes(C_view[0, v_j_i])
                    C_view[0, v_j_i] = B_view[0, v_j_i] + T.float32(1.0)
    for i, j in T.grid(16, 32):
        with T.block("D"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(C[v_i, v_j])
            T.writes(D[v_i, v_j])
            D[v_i, v_j] = C[v_i, v_j] * C[v_i, v_j]
''')
    check_numeric(f, sch.func)
    check_llvm(f, sch.func)
    verify_trace_roundtrip(sch, f)


def test_blockize_reduction_moves_init_out():
    f = matmul_add()
    sch = Schedule(f, debug_mask="all")
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[4, 4])
    k0, k1 = sch.split(k, factors=[None, 8])
    sch.reorder(i0, k0, j, i1, k1)
    outer = sch.blockize(i1)
    block = sch.get(outer)
    assert [iv.iter_type for iv in block.iter_vars] == ["spatial", "spatial", "reduce"]
    assert block.init is not None and sch.get(c).init is None
    check_numeric(f, sch.func)
    assert_print_roundtrip(sch.func)


def test_blockize_errors():
    f = elementwise3()
    sch = Schedule(f)
    c = sch.get_block("C")
    i, j = sch.get_loops(c)
    sch.compute_at(sch.get_block("B"), i)
    schedule_error(lambda: sch.blockize(i), "blockize", "holds 2 blocks")
    j0, j1 = sch.split(j, factors=[3, 11])
    schedule_error(lambda: sch.blockize(j1), "predicate")


FMA = '''
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"),
         C: T.Buffer((64,), "float32")):
    for i in range(64):
        with T.block("update"):
            vi = T.axis.spatial(64, i)
            T.reads(C[vi], A[vi], B[vi])
            T.writes(C[vi])
            C[vi] = C[vi] + A[vi] * B[vi]
'''


def test_tensorize_builtin_fma():
    f = parse_func(FMA)
    sch = Schedule(f, debug_mask="all")
    u = sch.get_block("update")
    (i,) = sch.get_loops(u)
    i0, i1 = sch.split(i, factors=[None, 4])
    sch.tensorize(i1, "irc.fma_f32x4")
    text = sch.func.script()
    assert "T.vectorized(4)" in text
    check_numeric(f, sch.func)
    check_llvm(f, sch.func)
    verify_trace_roundtrip(sch, f)


def test_tensorize_errors():
    f = parse_func(FMA)
    sch = Schedule(f)
    u = sch.get_block("update")
    (i,) = sch.get_loops(u)
    i0, i1 = sch.split(i, factors=[None, 8])
    schedule_error(lambda: sch.tensorize(i1, "irc.fma_f32x4"), "tensorize",
                   "does not compute what intrinsic 'irc.fma_f32x4' describes")
    schedule_error(lambda: sch.tensorize(i1, "no.such"), "no tensor intrinsic named 'no.such'")
    schedule_error(lambda: sch.tensorize(u, "irc.fma_f32x8"), "not made by blockize")
    sch.tensorize(i1, "irc.fma_f32x8")
    check_numeric(f, sch.func)


def test_register_custom_intrinsic():
    desc = parse_func('''
@T.prim_func
def main(A: T.Buffer((4,), "float32"), C: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("scale"):
            vi = T.axis.spatial(4, i)
            T.reads(A[vi])
            T.writes(C[vi])
            C[vi] = A[vi] * T.float32(2.0)
''')
    impl = parse_func('''
@T.prim_func
def main(A: T.Buffer((4,), "float32"), C: T.Buffer((4,), "float32")):
    for i in T.unroll(4):
        with T.block("scale"):
            vi = T.axis.spatial(4, i)
            T.reads(A[vi])
            T.writes(C[vi])
            C[vi] = A[vi] + A[vi]
''')
    TensorIntrin.register("test.scale4", desc, impl, override=True)
    f = parse_func('''
@T.prim_func
def main(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.block("scale"):
            vi = T.axis.spatial(16, i)
            T.reads(A[vi])
            T.writes(C[vi])
            C[vi] = A[vi] * T.float32(2.0)
''')
    sch = Schedule(f, debug_mask="all")
    (i,) = sch.get_loops(sch.get_block("scale"))
    i0, i1 = sch.split(i, factors=[None, 4])
    sch.tensorize(i1, "test.scale4")
    assert "A_view[v_i_o" not in sch.func.script()
    assert "T.unroll(4)" in sch.func.script()
    check_numeric(f, sch.func)
    schedule_error(lambda: TensorIntrin.register("test.scale4", desc, impl), "already")

"""What current Apache TVM (0.27) prints reads as the same IR as irc's canonical form."""

import irc
from irc.ir import assert_structural_equal
from irc.tir import stmt as S

from script_helpers import assert_roundtrip

TVM027 = '''# from typing import TypeVar
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

n = TypeVar("n")

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def relu(A: T.Buffer((T.int64(8), T.int64(16)), "float32"), B: T.Buffer((T.int64(8), T.int64(16)), "float32")):
        T.func_attr({"op_pattern": 0, "tirx.is_scheduled": True, "tirx.noalias": True})
        # with T.sblock("root"):
        C = T.sblock_alloc_buffer((T.int64(8), T.int64(16)))
        for i, j in T.grid(T.int64(8), T.int64(16)):
            with T.sblock("C"):
                v_i, v_j = T.axis.remap("SS", [i, j])
                T.reads(A[v_i, v_j])
                T.writes(C[v_i, v_j])
                T.sblock_attr({"meta_schedule.tiling_structure": "SSRSRS"})
                C[v_i, v_j] = T.max(A[v_i, v_j], T.float32(0.0))
        for i, j in T.grid(T.int64(8), T.int64(16)):
            with T.sblock("B"):
                v_i, v_j = T.axis.remap("SS", [i, j])
                T.reads(C[v_i, v_j])
                T.writes(B[v_i, v_j])
                B[v_i, v_j] = C[v_i, v_j]

    @T.prim_func(s_tir=True)
    def lowered(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        T.func_attr({"tirx.noalias": True})
        A_1 = A.view(256)
        C_1 = C.view(256)
        for i in range(16):
            C_1[i * 16:i * 16 + 16] = A_1[i * 16:i * 16 + 16] + T.Broadcast(T.float32(1.0), 16)
            C_1[T.Ramp(i, 16, 16)] = T.Broadcast(T.float32(0.0), 16)

    @R.function
    def main(x: R.Tensor((n, 16), dtype="float32"), w: R.Tensor((16, 16), dtype="float32")) -> R.Tensor((n, 16), dtype="float32"):
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.relu, (x,), out_ty=R.Tensor((n, 16), dtype="float32"))
            lv1: R.Tensor((n, 16), dtype="float32") = R.matmul(lv, w, out_dtype=None)
            R.output(lv1)
        return lv1
'''

CANONICAL = '''# from irc.script import ir as I
# from irc.script import tir as T
# from irc.script import relax as R

@I.ir_module
class Module:
    @T.prim_func
    def lowered(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        T.func_attr({"global_symbol": "lowered", "tir.noalias": True})
        A_1 = T.Buffer((256,), data=A.data)
        C_1 = T.Buffer((256,), data=C.data)
        for i in range(16):
            C_1[i * 16:i * 16 + 16] = A_1[i * 16:i * 16 + 16] + T.Broadcast(T.float32(1.0), 16)
            C_1[T.Ramp(i, 16, 16)] = T.Broadcast(T.float32(0.0), 16)

    @T.prim_func(private=True)
    def relu(A: T.Buffer((T.int64(8), T.int64(16)), "float32"), B: T.Buffer((T.int64(8), T.int64(16)), "float32")):
        T.func_attr({"op_pattern": 0, "tir.is_scheduled": True, "tir.noalias": True})
        # with T.block("root"):
        C = T.alloc_buffer((T.int64(8), T.int64(16)))
        for i, j in T.grid(T.int64(8), T.int64(16)):
            with T.block("C"):
                v_i, v_j = T.axis.remap("SS", [i, j])
                T.reads(A[v_i, v_j])
                T.writes(C[v_i, v_j])
                T.block_attr({"meta_schedule.tiling_structure": "SSRSRS"})
                C[v_i, v_j] = T.max(A[v_i, v_j], T.float32(0.0))
        for i, j in T.grid(T.int64(8), T.int64(16)):
            with T.block("B"):
                v_i, v_j = T.axis.remap("SS", [i, j])
                T.reads(C[v_i, v_j])
                T.writes(B[v_i, v_j])
                B[v_i, v_j] = C[v_i, v_j]

    @R.function
    def main(x: R.Tensor(("n", 16), dtype="float32"), w: R.Tensor((16, 16), dtype="float32")) -> R.Tensor((n, 16), dtype="float32"):
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.relu, (x,), out_sinfo=R.Tensor((n, 16), dtype="float32"))
            lv1: R.Tensor((n, 16), dtype="float32") = R.matmul(lv, w, out_dtype="void")
            R.output(lv1)
        return lv1
'''


def test_tvm027_text_parses_to_the_canonical_module():
    new = irc.parse(TVM027)
    canonical = irc.parse(CANONICAL)
    assert_structural_equal(new, canonical)
    assert new.script() == CANONICAL
    assert_roundtrip(new)


def test_tvm027_details():
    mod = irc.parse(TVM027)
    relu = mod["relu"]
    assert relu.attrs == {"op_pattern": 0, "tir.is_scheduled": True, "tir.noalias": True}
    assert relu.body.block.name == "root"
    assert relu.body.block.body.seq[0].body.body.block.annotations == {
        "meta_schedule.tiling_structure": "SSRSRS"}
    decl = mod["lowered"].body
    assert isinstance(decl, S.DeclBuffer) and decl.buffer.data is \
        mod["lowered"].buffer_map[mod["lowered"].params[0]].data
    call = mod["main"].body.blocks[0].bindings[0].value
    assert call.sinfo_args[0].dtype == "float32"


def test_view_as_other_dtype_and_decl_buffer():
    text = '''@T.prim_func(s_tir=True)
def f(A: T.Buffer((4, 8), "float16"), B: T.Buffer((4, 4), "float32")):
    A_words = A.view("uint32")
    D = T.decl_buffer((16,), "float32", data=B.data)
    E = T.decl_buffer((8,), "int8", scope="local")
    A_words[0, 0] = T.uint32(1)
    D[0] = T.float32(2.0)
    E[0] = T.int8(3)
'''
    f = irc.parse(text)
    decl = f.body
    assert [tuple(int(s) for s in decl.buffer.shape), decl.buffer.dtype] == [(4, 4), "uint32"]
    alloc = decl.body.body
    assert isinstance(alloc, S.Allocate) and alloc.scope == "local"
    assert_roundtrip(f)


def test_lowered_alloc_buffer_becomes_allocate():
    text = '''@T.prim_func
def f(A: T.Buffer((16,), "float32")):
    for i in range(4):
        tmp = T.alloc_buffer((4,), scope="local")
        tmp[0] = A[i]
        A[i] = tmp[0]
'''
    f = irc.parse(text)
    alloc = f.body.body
    assert isinstance(alloc, S.Allocate) and isinstance(alloc.body, S.DeclBuffer)
    assert_roundtrip(f)


def test_let_spellings():
    old = '''@T.prim_func
def f(A: T.Buffer((4,), "int32"), n: T.int32):
    x: T.int32 = n * 2
    A[0] = x
'''
    for spelling in ("x: T.let[T.int32] = n * 2", "x: T.let = n * 2", "x = n * 2"):
        assert_structural_equal(irc.parse(old), irc.parse(old.replace("x: T.int32 = n * 2",
                                                                      spelling)))

"""AnnotateTIROpPattern: loop functions classified for fusion."""

import pytest
from pass_helpers import check_pass, parse_module, prim_funcs

from irc import passes
from irc.ir import op as opk
from irc.passes.annotate_tir_op_pattern import analyze_op_pattern


def test_elementwise_function_gets_its_attribute():
    before = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32"), C: T.Buffer((4, 4), "float32")):
        T.func_attr({"tir.noalias": True})
        for i, j in T.grid(4, 4):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] + B[vi, vj]
"""  # noqa: E501 - IR text
    expected = before.replace('T.func_attr({"tir.noalias": True})',
                              'T.func_attr({"op_pattern": 0, "tir.noalias": True})')
    check_pass(passes.AnnotateTIROpPattern(), before, expected)


# (graph expression, expected pattern) pairs, legalized through LegalizeOps.
CASES = {
    "elementwise": ("R.exp(x)", opk.ELEMWISE),
    "broadcast operand with an elementwise one": ("R.add(x, b)", opk.ELEMWISE),
    "broadcast": ("R.broadcast_to(b, R.shape([8, 16]))", opk.BROADCAST),
    "transpose": ("R.permute_dims(x, axes=[1, 0])", opk.INJECTIVE),
    "reshape": ("R.reshape(x, R.shape([16, 8]))", opk.INJECTIVE),
    "strided slice": ("R.strided_slice(x, axes=[0], begin=[1], end=[5])", opk.INJECTIVE),
    "reduction": ("R.sum(x, axis=[1])", opk.COMM_REDUCE),
    "softmax": ("R.nn.softmax(x, axis=-1)", opk.COMM_REDUCE),
    "matmul": ("R.matmul(x, w)", opk.OUT_ELEMWISE_FUSABLE),
    "pooling": ("R.nn.max_pool2d(img, pool_size=[2, 2], strides=[2, 2])",
                opk.OUT_ELEMWISE_FUSABLE),
    "conv2d": ("R.nn.conv2d(img, k, padding=[1, 1, 1, 1])", opk.OUT_ELEMWISE_FUSABLE),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_legalized_operators_are_classified(case):
    expr, pattern = CASES[case]
    text = f"""
@R.function
def main(x: R.Tensor((8, 16), "float32"), b: R.Tensor((16,), "float32"),
         w: R.Tensor((16, 4), "float32"), img: R.Tensor((1, 2, 8, 8), "float32"),
         k: R.Tensor((3, 2, 3, 3), "float32")):
    with R.dataflow():
        gv = {expr}
        R.output(gv)
    return gv
"""
    mod = passes.AnnotateTIROpPattern()(passes.LegalizeOps()(parse_module(text)))
    (func,) = prim_funcs(mod).values()
    assert func.attrs["op_pattern"] == pattern


def test_two_stores_in_a_block_lowered_functions_and_hand_set_patterns():
    text = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def two_stores(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi]
                A[vi] = T.float32(0)

    @T.prim_func(private=True)
    def lowered(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            B[i] = A[i]

    @T.prim_func(private=True)
    def hand_set(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        T.func_attr({"op_pattern": 8})
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi]
"""
    mod = passes.AnnotateTIROpPattern()(parse_module(text))
    funcs = prim_funcs(mod)
    assert funcs["two_stores"].attrs["op_pattern"] == opk.OPAQUE
    assert funcs["lowered"].attrs["op_pattern"] == opk.OPAQUE
    assert funcs["hand_set"].attrs["op_pattern"] == opk.OPAQUE  # kept, not recomputed
    assert analyze_op_pattern(funcs["hand_set"]) == opk.ELEMWISE

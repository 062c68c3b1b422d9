"""Normalize: struct info filled in, nested calls bound to variables (A-normal form)."""

import numpy as np
from pass_helpers import check_pass, parse_module, run_main

from irc import passes
from irc.ir import (
    BindingBlock,
    DataflowBlock,
    Function,
    IRModule,
    SeqExpr,
    Var,
    VarBinding,
    ops,
    tensor_sinfo,
    well_formed,
)


def test_nested_calls_become_bindings_in_evaluation_order():
    before = """
@R.function
def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
    with R.dataflow():
        gv = R.add(R.multiply(x, y), R.nn.relu(R.add(x, y)))
        R.output(gv)
    return gv
"""
    expected = """
@R.function
def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
    with R.dataflow():
        lv = R.multiply(x, y)
        lv1 = R.add(x, y)
        lv2 = R.nn.relu(lv1)
        gv = R.add(lv, lv2)
        R.output(gv)
    return gv
"""
    check_pass(passes.Normalize(), before, expected)


def test_non_leaf_result_is_bound_in_a_trailing_block():
    before = """
@R.function
def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
    with R.dataflow():
        gv = R.exp(x)
        R.output(gv)
    return R.add(gv, gv)
"""
    expected = """
@R.function
def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
    with R.dataflow():
        gv = R.exp(x)
        R.output(gv)
    gv1 = R.add(gv, gv)
    return gv1
"""
    check_pass(passes.Normalize(), before, expected)


def test_tuple_arguments_of_leaves_stay_in_place():
    text = """
@R.function
def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tensor((4, 3), "float32"):
    with R.dataflow():
        gv = R.concat((x, y), axis=0)
        R.output(gv)
    return gv
"""  # noqa: E501 - IR text
    mod = parse_module(text)
    assert passes.Normalize()(mod) is mod  # already normal: the same module comes back


def test_struct_info_is_filled_in_and_shared_subexpressions_bound_once():
    x = Var(name_hint="x", struct_info=tensor_sinfo((3,), "float32"))
    shared = ops.exp(x)  # one Python object used twice: a DAG
    body_value = ops.add(shared, ops.multiply(shared, x))
    out = Var(name_hint="gv", struct_info=None)
    seq = SeqExpr(blocks=(BindingBlock(bindings=(VarBinding(var=out, value=body_value),)),),
                  body=out)
    func = Function(params=(x,), body=seq, ret_struct_info=tensor_sinfo((3,), "float32"))
    mod = passes.Normalize()(IRModule(functions={"main": func}))
    well_formed(mod)
    bindings = mod["main"].body.blocks[0].bindings
    names = [b.value.op.name for b in bindings]
    assert names == ["exp", "multiply", "add"]  # exp computed once
    assert mod["main"].body.body.struct_info.shape[0].value == 3
    arr = np.arange(3, dtype="float32")
    np.testing.assert_allclose(run_main(mod, arr, pipeline="zero"),
                               np.exp(arr) + np.exp(arr) * arr, rtol=1e-6)


def test_empty_blocks_are_dropped_and_neighbours_merged():
    x = Var(name_hint="x", struct_info=tensor_sinfo((2,), "float32"))
    a = Var(name_hint="a", struct_info=tensor_sinfo((2,), "float32"))
    b = Var(name_hint="b", struct_info=tensor_sinfo((2,), "float32"))
    blocks = (
        BindingBlock(bindings=(VarBinding(var=a, value=ops.exp(x)),)),
        DataflowBlock(bindings=()),
        BindingBlock(bindings=(VarBinding(var=b, value=ops.log(a)),)),
    )
    func = Function(params=(x,), body=SeqExpr(blocks=blocks, body=b),
                    ret_struct_info=tensor_sinfo((2,), "float32"))
    mod = passes.Normalize()(IRModule(functions={"main": func}))
    well_formed(mod)
    (block,) = mod["main"].body.blocks
    assert isinstance(block, BindingBlock) and len(block.bindings) == 2


def test_if_branches_become_sequences_and_conditions_leaves():
    before = """
@R.function
def main(c: R.Tensor((), "bool"), x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
    if c:
        r = R.exp(R.exp(x))
    else:
        r = R.log(x)
    return r
"""
    mod = passes.Normalize()(parse_module(before))
    well_formed(mod)
    arr = np.array([0.5, 1.0], dtype="float32")
    np.testing.assert_allclose(run_main(mod, np.array(True), arr, pipeline="zero"),
                               np.exp(np.exp(arr)), rtol=1e-6)
    np.testing.assert_allclose(run_main(mod, np.array(False), arr, pipeline="zero"),
                               np.log(arr), rtol=1e-6)

"""``irc.compile`` checks the module's well-formedness before anything else: a module the
checker rejects (here a BlockBuilder function returning a DataflowVar after its block)
is an IRWellFormedError naming the function and the problem, not a program that runs."""

from __future__ import annotations

import numpy as np
import pytest

import irc
from irc.core.diagnostics import IRWellFormedError
from irc.ir import BlockBuilder, TensorStructInfo, Var, ops
from irc.ir.struct_info import shape_of


def _returns_a_dataflow_var(leak: bool):
    x = Var(name_hint="x", struct_info=TensorStructInfo(shape=shape_of([2, 3]),
                                                        dtype="float32", ndim=2))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(ops.nn.relu(x), "lv")
            gv = bb.emit_output(ops.add(lv, lv), "gv")
        bb.emit_func_output(lv if leak else gv)
    return bb.get()


def test_a_dataflow_var_returned_outside_its_block_is_refused():
    mod = _returns_a_dataflow_var(leak=True)
    with pytest.raises(IRWellFormedError, match=r"irc.compile: the module is not well "
                       r"formed: in @main: DataflowVar lv is used outside its dataflow "
                       r"block"):
        irc.compile(mod, target="llvm")
    with pytest.raises(IRWellFormedError, match="in @main: DataflowVar lv"):
        irc.compile(mod["main"], target="llvm", pipeline=None)


def test_the_well_formed_module_compiles_and_runs():
    ex = irc.compile(_returns_a_dataflow_var(leak=False), target="llvm")
    x = np.random.default_rng(0).standard_normal((2, 3)).astype("float32")
    got = irc.vm.VirtualMachine(ex, irc.cpu())["main"](irc.tensor(x)).numpy()
    np.testing.assert_allclose(got, 2 * np.maximum(x, 0))


def test_an_imported_onnx_if_is_bound_outside_the_dataflow_blocks():
    pytest.importorskip("onnx", reason="needs onnx (pip install 'irc[onnx]')")
    from onnx import TensorProto, helper

    from irc.frontend.onnx import from_onnx
    from irc.ir import BindingBlock, DataflowBlock, If

    def branch(name, op):
        return helper.make_graph(
            [helper.make_node(op, ["r"], [f"{name}_out"])], name, [],
            [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [3])])
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]),
         helper.make_node("ReduceSum", ["r"], ["s"], keepdims=0),
         helper.make_node("Greater", ["s", "zero"], ["c"]),
         helper.make_node("If", ["c"], ["y0"], then_branch=branch("then", "Neg"),
                          else_branch=branch("else", "Exp")),
         helper.make_node("Add", ["y0", "r"], ["y"])], "if_graph",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
        [helper.make_tensor("zero", TensorProto.FLOAT, [], [1.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    mod = from_onnx(model)
    irc.ir.well_formed(mod)
    blocks = mod["main"].body.blocks
    assert [type(b) for b in blocks] == [DataflowBlock, BindingBlock, DataflowBlock]
    assert isinstance(blocks[1].bindings[0].value, If)
    vm = irc.vm.VirtualMachine(irc.compile(mod, target="llvm"), irc.cpu())
    for x in (np.array([1.0, 2.0, -3.0], "float32"), np.array([0.1, -2.0, 0.2], "float32")):
        r = np.maximum(x, 0)
        want = (-r if r.sum() > 1 else np.exp(r)) + r
        np.testing.assert_allclose(vm["main"](irc.tensor(x)).numpy(), want, rtol=1e-6)

"""Public and private graph functions: a function added to a module under a name by the
BlockBuilder, the ONNX importer or the nn exporter is public (its ``global_symbol`` is
its name, as for ``@R.function`` in text); helpers made with ``private=True`` are not.
Either way printing and parsing give back a structurally equal module."""

import numpy as np
import pytest
from script_helpers import assert_roundtrip

import irc
from irc.ir import BlockBuilder, Call, Var, ops, tensor_sinfo


def _x(shape=(2, 3)):
    return Var(name_hint="x", struct_info=tensor_sinfo(shape, "float32"))


def _decorator_of(text, name):
    lines = text.splitlines()
    (i,) = [k for k, line in enumerate(lines) if line.strip().startswith(f"def {name}(")]
    return lines[i - 1].strip()


def test_block_builder_functions_are_public():
    bb = BlockBuilder()
    x = _x()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(ops.nn.relu(x))
        bb.emit_func_output(out)
    mod = bb.get()
    assert mod["main"].attrs["global_symbol"] == "main"
    text = mod.script()
    assert _decorator_of(text, "main") == "@R.function"
    assert "private" not in text and "global_symbol" not in text
    parsed = assert_roundtrip(mod)
    assert parsed["main"].attrs["global_symbol"] == "main"


def test_private_helper_and_public_entry_roundtrip():
    bb = BlockBuilder()
    y = _x()
    with bb.function("helper", [y], private=True):
        bb.emit_func_output(bb.emit(ops.negative(y)))
    helper = bb.get().get_global_var("helper")
    x = _x()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(Call(op=helper, args=(x,))))
    mod = bb.get()
    assert "global_symbol" not in mod["helper"].attrs
    text = mod.script()
    assert _decorator_of(text, "helper") == "@R.function(private=True)"
    assert _decorator_of(text, "main") == "@R.function"
    parsed = assert_roundtrip(mod)
    assert "global_symbol" not in parsed["helper"].attrs
    assert parsed["main"].attrs["global_symbol"] == "main"


def test_explicit_global_symbol_is_kept():
    bb = BlockBuilder()
    x = _x()
    with bb.function("main", [x], attrs={"global_symbol": "entry"}):
        bb.emit_func_output(bb.emit(ops.nn.relu(x)))
    mod = bb.get()
    text = mod.script()
    assert 'R.func_attr({"global_symbol": "entry"})' in text
    assert assert_roundtrip(mod)["main"].attrs["global_symbol"] == "entry"


def test_onnx_main_is_public_and_subgraph_functions_private():
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    from irc.frontend.onnx import from_onnx

    def vi(name, shape, dtype=TensorProto.FLOAT):
        return helper.make_tensor_value_info(name, dtype, shape)

    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Add", ["y_in", "one"], ["y_out"])],
        "body", [vi("i", [], TensorProto.INT64), vi("c_in", [], TensorProto.BOOL),
                 vi("y_in", [1])],
        [vi("c_out", [], TensorProto.BOOL), vi("y_out", [1])],
        initializer=[numpy_helper.from_array(np.array([1.0], "float32"), "one")])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "", "y"], ["y_final"], body=body)], "g",
        [vi("n", [], TensorProto.INT64), vi("y", [1])], [vi("y_final", [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    mod = from_onnx(model)
    text = mod.script()
    assert _decorator_of(text, "main") == "@R.function"
    assert mod["main"].attrs["global_symbol"] == "main"
    helpers = [gv.name_hint for gv in mod.functions if gv.name_hint != "main"]
    assert helpers, text
    for name in helpers:
        assert _decorator_of(text, name) == "@R.function(private=True)", text
    assert_roundtrip(mod, show_meta=True)
    ex = irc.compile(mod, "llvm")
    out = irc.vm.VirtualMachine(ex)["main"](irc.tensor(np.array(3, "int64")),
                                            irc.tensor(np.array([0.5], "float32")))
    np.testing.assert_array_equal(out.numpy(), [3.5])


def test_nn_export_functions_are_public():
    from irc.frontend import nn

    class Tiny(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(x)

    mod, _ = Tiny().export_ir({"forward": {"x": nn.spec.Tensor((1, 4), "float32")}})
    text = mod.script()
    assert _decorator_of(text, "forward") == "@R.function"
    assert_roundtrip(mod)

"""The ONNX importer's scope: what a name is bound to (an expression, a symbolic shape
value or both), nested scopes that read the enclosing bindings and keep their own, and
``GraphImporter.in_scope``, which restores the enclosing scope on exit and on errors."""

import numpy as np
import pytest

from irc.core.diagnostics import IRCError
from irc.ir.expr import Constant, Var
from irc.ir.struct_info import TensorStructInfo
from irc.tir import expr as E

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from irc.frontend.onnx.importer import GraphImporter  # noqa: E402
from irc.frontend.onnx.scope import Scope, SymShape  # noqa: E402


def _tensor(name="x"):
    return Var(name_hint=name, struct_info=TensorStructInfo(shape=(2,), dtype="float32"))


def _importer():
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return GraphImporter(model, None, None, None, False)


def test_lookups_of_expressions_and_shape_values():
    x, n = _tensor(), E.Var(name="n", dtype="int64")
    scope = Scope(values={"x": x})
    scope.bind("s", SymShape([n, 3]))
    assert scope.defines("x") and scope.defines("s") and not scope.defines("t")
    assert scope.lookup("x") is x and scope.lookup("t") is None
    assert scope.lookup("s") is scope.shape_value("s") is scope.syms["s"]
    assert scope.shape_value("x") is None and scope.shape_value("t") is None
    # a shape value read as data gets its tensor form next to it: the tensor is what
    # the name is looked up as, and it is no longer only a shape value
    tensor = _tensor("s_tensor")
    scope.values["s"] = tensor
    assert scope.lookup("s") is tensor and scope.shape_value("s") is None
    assert scope.syms["s"].dims[1].value == 3


def test_bind_replaces_the_previous_binding_of_either_kind():
    scope = Scope()
    scope.bind("a", SymShape([4]))
    scope.values["a"] = _tensor()  # its tensor form
    scope.bind("a", Constant.from_numpy(np.arange(3, dtype="int64")))
    assert "a" not in scope.syms and isinstance(scope.lookup("a"), Constant)
    scope.bind("a", SymShape([5], scalar=True))
    assert "a" not in scope.values and scope.shape_value("a").array().tolist() == 5


def test_nested_scope_reads_the_enclosing_bindings_and_keeps_its_own():
    x = _tensor()
    outer = Scope(values={"x": x}, syms={"s": SymShape([2])}, outputs=frozenset({"y"}))
    outer.emitted.add("y")
    inner = outer.nested()
    assert inner.lookup("x") is x and inner.shape_value("s") is outer.syms["s"]
    assert inner.outputs == frozenset() and inner.emitted == set()
    inner.bind("z", _tensor("z"))
    inner.bind("x", SymShape([1]))
    assert not outer.defines("z") and outer.lookup("x") is x


def test_in_scope_restores_the_enclosing_scope_on_exit_and_on_error():
    imp = _importer()
    main = imp.scope
    first, second = main.nested(), Scope()
    with imp.in_scope(first) as entered:
        assert entered is first and imp.scope is first
        with imp.in_scope(second):
            assert imp.scope is second
        assert imp.scope is first
    assert imp.scope is main
    with pytest.raises(RuntimeError, match="inner"):
        with imp.in_scope(first):
            with imp.in_scope(second):
                raise RuntimeError("inner")
    assert imp.scope is main


def test_a_subgraph_that_fails_to_convert_leaves_the_enclosing_scope_current():
    imp = _importer()
    main = imp.scope
    main.bind("x", _tensor())
    body = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]),
         helper.make_node("Transpose", ["r"], ["o"], perm=[0, 1, 2])],
        "body", [], [helper.make_tensor_value_info("o", TensorProto.FLOAT, [2])])
    seen = []
    convert = imp.convert
    imp.convert = lambda proto, *args: (seen.append(imp.scope), convert(proto, *args))
    with pytest.raises(IRCError, match="Transpose"):
        imp.subgraph_function(body, "then", [])
    assert seen and all(s is seen[0] and s is not main for s in seen)
    assert seen[0].defines("r") and seen[0].outputs == {"o"}
    assert imp.scope is main and not main.defines("r")

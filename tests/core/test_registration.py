"""The core reaches the layers above it only through what they register: printers for
node families, the parser behind IRModule.from_script."""

import pytest

import irc
from irc.core.node import Node, node, printer_for, repr_node, script
from irc.ir import Function, IRModule, TensorStructInfo
from irc.tir import PrimExpr, PrimFunc, Stmt


@node
class _Unprinted(Node):
    value: int = 0


def test_every_ir_family_has_a_printer():
    for cls in (IRModule, Function, TensorStructInfo, PrimExpr, Stmt, PrimFunc):
        assert printer_for(cls) is not None, cls.__name__


def test_a_node_without_a_printer_prints_its_class_name():
    assert printer_for(_Unprinted) is None
    assert repr_node(_Unprinted(value=1)) == "<_Unprinted>"
    with pytest.raises(irc.IRCError, match="_Unprinted has no text form"):
        script(_Unprinted())
    assert repr(_Unprinted()).startswith("<_Unprinted")


def test_from_script_uses_the_registered_parser():
    mod = irc.IRModule.from_script(
        "@I.ir_module\nclass Module:\n    @T.prim_func\n    def main():\n        T.evaluate(0)\n")
    assert isinstance(mod, IRModule) and mod.names() == ["main"]
    assert irc.ir.structural_equal(irc.parse(mod.script()), mod)

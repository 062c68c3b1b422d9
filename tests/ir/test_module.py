"""IRModule: functional updates, map_functions, unique names and printing."""

import pytest

import irc
from irc import tir
from irc.core.module import unique_name

TEXT = '''
@I.ir_module
class Module:
    @T.prim_func
    def one(A: T.Buffer((4,), "float32")):
        for i in range(4):
            A[i] = T.float32(1)

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        return x
'''


def test_map_functions_returns_the_same_module_when_nothing_changes():
    mod = irc.parse(TEXT)
    assert mod.map_functions(lambda f: f) is mod
    assert mod.map_functions(lambda f: pytest.fail("not a PrimFunc"), irc.ir.Constant) is mod


def test_map_functions_replaces_and_removes_by_kind_and_predicate():
    mod = irc.parse(TEXT)
    renamed = mod.map_functions(lambda f: f.with_attr("tag", 1), tir.PrimFunc)
    assert renamed is not mod and renamed.names() == ["one", "main"]
    assert renamed["one"].attrs["tag"] == 1 and renamed["main"] is mod["main"]
    assert mod["one"].attrs.get("tag") is None  # the input is unchanged
    dropped = mod.map_functions(lambda f: None, where=lambda f: isinstance(f, tir.PrimFunc))
    assert dropped.names() == ["main"]


def test_unique_name_rule():
    assert unique_name("f", set()) == "f"
    assert unique_name("f", {"f", "f1"}) == "f2"
    assert unique_name("f", {"f", "f_1"}, "_") == "f_2"
    assert irc.parse(TEXT).unique_name("main") == "main1"


def test_print_shows_the_script_and_repr_stays_short():
    mod = irc.parse(TEXT)
    assert str(mod) == mod.script()
    assert repr(mod) == "IRModule(main, one)"
    assert irc.ir.structural_equal(irc.parse(str(mod)), mod)

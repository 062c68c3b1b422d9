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


def _shape_func(n, name, swap=False):
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n,), "float32", "B")
    pa, pb = tir.var("A", "handle"), tir.var("B", "handle")
    i = tir.var("i", "int64")
    body = tir.For(loop_var=i, min=tir.const(0, "int64"), extent=n, kind="serial",
                   body=tir.BufferStore(buffer=B, value=A[i], indices=(i,)))
    return tir.PrimFunc(params=(pb, pa) if swap else (pa, pb), buffer_map={pb: B, pa: A},
                        body=body, attrs={"global_symbol": name})


def test_variables_are_local_to_the_function_that_binds_them():
    # Two loop functions sharing one symbolic variable object (as functions legalized from
    # one graph function do) equal the same functions with a variable each, as the text
    # format (which declares n in each function) reads them back; the hash agrees.
    n = tir.var("n", "int64")
    shared = irc.IRModule(functions={"f": _shape_func(n, "f"), "g": _shape_func(n, "g")})
    own = irc.IRModule(functions={"f": _shape_func(tir.var("n", "int64"), "f"),
                                  "g": _shape_func(tir.var("m", "int64"), "g")})
    assert irc.ir.structural_equal(shared, own)
    assert irc.ir.structural_hash(shared) == irc.ir.structural_hash(own)
    irc.ir.assert_structural_equal(irc.parse(shared.script()), shared)
    # Within one function binding positions still count.
    m = tir.var("n", "int64")
    assert not irc.ir.structural_equal(_shape_func(m, "f"), _shape_func(m, "f", swap=True))


def test_buffer_map_is_kept_in_parameter_order():
    f = _shape_func(tir.var("n", "int64"), "f")
    assert list(f.buffer_map) == list(f.params)

"""@I.ir_module / @R.function / @T.prim_func parse the decorated source (not executed)."""

import pytest
from script_helpers import assert_roundtrip

import irc
from irc.ir import IRModule, assert_structural_equal
from irc.script import I, R, T


@I.ir_module
class Doubled:
    @T.prim_func
    def double(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] * T.float32(2)

    @R.function
    def main(x: R.Tensor((8,), "float32")) -> R.Tensor((8,), "float32"):
        cls = Doubled
        with R.dataflow():
            y = R.call_tir(cls.double, (x,), out_sinfo=R.Tensor((8,), "float32"))
            R.output(y)
        return y


def test_module_decorator_parses_the_class():
    assert isinstance(Doubled, IRModule)
    assert sorted(Doubled.names()) == ["double", "main"]
    block = Doubled["double"].body.block.body.body.block
    assert [r.buffer.name for r in block.reads] == ["A"]  # detected
    assert_roundtrip(Doubled)


def test_function_decorators_and_options():
    @T.prim_func(private=True)
    def kernel(A: T.Buffer((4,), "int32")):
        A[0] = 1

    @R.function(pure=False)
    def graph(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        return x

    assert "global_symbol" not in kernel.attrs
    assert not graph.is_pure and graph.attrs["global_symbol"] == "graph"
    text = '''@T.prim_func(private=True)
def kernel(A: T.Buffer((4,), "int32")):
    A[0] = 1
'''
    assert_structural_equal(kernel, irc.parse(text))


def test_errors_point_into_the_python_file():
    with pytest.raises(irc.IRParseError) as info:
        @T.prim_func
        def broken(A: T.Buffer((4,), "int32")):
            A[0] = undefined_name  # noqa: F821 - the body is parsed, not executed

    e = info.value
    assert e.span.source_name == __file__
    assert "undefined name 'undefined_name'" in str(e)
    with open(__file__) as f:
        assert "A[0] = undefined_name" in f.read().splitlines()[e.span.line - 1]


def test_bad_options():
    with pytest.raises(irc.IRParseError, match="has no option 'fast'"):
        @T.prim_func(fast=True)
        def f(A: T.Buffer((4,), "int32")):
            A[0] = 1

"""repr() of IR nodes: short one-line forms that never raise."""

import numpy as np
import pytest

from irc import te
from irc import tir as T
from irc.core.node import repr_node, script
from irc.ir import BlockBuilder, Constant, IRModule, Var, ops, tensor_sinfo
from irc.tir import expr as E
from irc.tir import stmt as S


def test_expressions_print_as_script():
    i, k = T.var("i"), T.var("k")
    A = T.decl_buffer((16, 16), "float32", "A")
    assert repr(i * 2 + 1) == "i * 2 + 1"
    assert repr(A[i, k]) == "A[i, k]"
    assert repr((i + 1) * (k - 2)) == "(i + 1) * (k - 2)"
    assert repr(E.Sub(dtype="int32", a=i, b=E.Sub(dtype="int32", a=k, b=i))) == "i - (k - i)"
    assert repr(E.FloorMod(dtype="int32", a=i, b=T.const(4))) == "i % 4"
    assert repr(T.const(1.5)) == "T.float32(1.5)"
    assert repr(T.const(3, "int64")) == "T.int64(3)"
    assert repr(E.Cast(dtype="float32", value=i)) == 'T.Cast("float32", i)'


def test_larger_nodes_are_summarized():
    i = T.var("i")
    A = T.decl_buffer((4,), "float32", "A")
    loop = S.For(loop_var=i, min=T.const(0), extent=T.const(4), kind="serial",
                 body=S.BufferStore(buffer=A, value=A[i], indices=(i,)))
    assert repr(loop) == "for i in range(4): ... (2 lines)"
    a = te.placeholder((8,), name="a")
    b = te.compute((8,), lambda j: a[j] + te.const(1.0, "float32"), name="b")
    assert repr(te.create_prim_func([a, b])) == "PrimFunc main(a, b)"
    x = Var(name_hint="x", struct_info=tensor_sinfo((1, 4), "float32"))
    assert repr(x) == 'x: R.Tensor((1, 4), dtype="float32")'
    assert repr(ops.add(x, x)) == "R.add(x, x)"
    bb = BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit(ops.add(x, Constant.from_numpy(np.ones((1, 4), "float32"))))
        bb.emit_func_output(y)
    mod = bb.get()
    assert repr(mod) == "IRModule(main)"
    assert repr(mod["main"]).startswith('Function(x: R.Tensor((1, 4), dtype="float32"))')
    assert repr(Constant.from_numpy(np.ones(3))) == "Constant(shape=(3,), dtype='float64')"
    assert repr(E.IterVar(var=i, dom=E.Range(min=T.const(2), extent=T.const(4)))) == \
        "IterVar(i in [2, 6), spatial)"


@pytest.mark.parametrize("make", [
    lambda: S.Evaluate(value=None),
    lambda: E.Add(dtype="int32", a=None, b=T.var("x")),
    lambda: IRModule(functions={"f": None}),
    lambda: S.SeqStmt(seq=(None, 3)),
])
def test_repr_never_raises_on_malformed_nodes(make):
    node = make()
    assert isinstance(repr_node(node), str)
    assert isinstance(repr(node), str)
    assert isinstance(script(node), str)

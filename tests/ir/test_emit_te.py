"""``BlockBuilder.emit_te`` / ``call_te`` (a te function over graph values as a call_tir of
a new PrimFunc, as in TVM) and graph variables made with positional arguments."""

import numpy as np
import pytest

import irc
from irc import te, tir, topi
from irc.ir import (
    BlockBuilder,
    DataflowVar,
    TensorStructInfo,
    Var,
    ops,
    structural_equal,
    tensor_sinfo,
)


def test_var_and_dataflow_var_take_name_and_struct_info_by_position():
    sinfo = tensor_sinfo((2, 3))
    x = Var("x", sinfo)
    assert x.name_hint == "x" and x.struct_info is sinfo
    d = DataflowVar("lv", sinfo)
    assert isinstance(d, DataflowVar) and d.name_hint == "lv" and d.struct_info is sinfo
    assert Var("y").struct_info is None
    assert Var(name_hint="z", struct_info=sinfo).replace(name_hint="w").name_hint == "w"


@pytest.mark.parametrize("make, message", [
    (lambda: Var("x", (2, 3)), r"Var 'x': struct_info must be a StructInfo"),
    (lambda: Var("x", tensor_sinfo((2,)), name_hint="y"), "name_hint given both by "
                                                           "position and by keyword"),
    (lambda: DataflowVar("x", None, None), r"DataflowVar\(name_hint, struct_info, ...\) "
                                           "takes at most 2 positional arguments"),
])
def test_wrong_var_arguments_are_irc_errors(make, message):
    with pytest.raises(irc.IRTypeError, match=message):
        make()


def _two_inputs():
    return Var("x", tensor_sinfo((2, 3))), Var("y", tensor_sinfo((2, 3)))


def test_emit_te_builds_what_add_func_and_call_tir_build():
    x, y = _two_inputs()
    bb = BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            s = bb.emit_te(topi.add, x, y)
            r = bb.emit_output(s)
        bb.emit_func_output(r)
    got = bb.get()

    a, b = (te.placeholder((2, 3), "float32", name=n) for n in ("x", "y"))
    func = te.create_prim_func([a, b, topi.add(a, b)], index_dtype_override="int64")
    func = func.replace(attrs={k: v for k, v in func.attrs.items() if k != "global_symbol"})
    x2, y2 = _two_inputs()
    bb2 = BlockBuilder()
    gv = bb2.add_func(func, "add")
    with bb2.function("main", [x2, y2]):
        with bb2.dataflow():
            s2 = bb2.emit(ops.call_tir(gv, [x2, y2], tensor_sinfo((2, 3))))
            r2 = bb2.emit_output(s2)
        bb2.emit_func_output(r2)
    assert structural_equal(got, bb2.get())
    assert got.names() == ["add", "main"]


def test_emitted_te_functions_compile_and_match_numpy():
    x, y = _two_inputs()
    bb = BlockBuilder()
    with bb.function("main", [x, y]):
        a = bb.emit_te(topi.add, x, y)
        b = bb.emit_te(topi.add, a, y)  # the same computation: one PrimFunc
        r = bb.emit_te(topi.nn.relu, b, name_hint="r", primfunc_name_hint="my_relu")
        c = bb.emit_te(lambda t: te.compute(t.shape, lambda i, j: t[i, j] * 2.0, name="C"), r)
        bb.emit_func_output(c)
    mod = bb.get()
    assert sorted(mod.names()) == ["add", "main", "my_relu", "te_func"]
    assert "r = R.call_tir(cls.my_relu" in mod.script()
    vm = irc.vm.VirtualMachine(irc.compile(mod, "llvm"))
    xa, ya = (np.random.default_rng(i).standard_normal((2, 3)).astype("float32")
              for i in range(2))
    np.testing.assert_allclose(vm["main"](xa, ya).numpy(), np.maximum(xa + 2 * ya, 0) * 2,
                               rtol=1e-6)


def test_emit_te_with_a_symbolic_dimension():
    n = tir.var("n", "int64")
    x = Var("x", TensorStructInfo(shape=(n, tir.const(4, "int64")), dtype="float32"))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit_te(topi.exp, x)
        bb.emit_func_output(y)
    vm = irc.vm.VirtualMachine(irc.compile(bb.get(), "llvm"))
    for rows in (1, 5):
        data = np.random.default_rng(rows).standard_normal((rows, 4)).astype("float32")
        np.testing.assert_allclose(vm["main"](data).numpy(), np.exp(data), rtol=1e-5)


def test_call_te_returns_the_call_without_binding_it():
    x, y = _two_inputs()
    bb = BlockBuilder()
    with bb.function("main", [x, y]):
        call = bb.call_te(topi.multiply, x, y)
        assert call.op.name == "call_tir" and call.struct_info.dtype == "float32"
        bb.emit_func_output(bb.emit(call))
    assert "multiply" in bb.get().names()


def test_emit_te_errors_are_irc_errors():
    x, _ = _two_inputs()
    bb = BlockBuilder()
    with pytest.raises(irc.IRCError, match="emit_te needs an open function"):
        bb.emit_te(topi.nn.relu, x)
    t = Var("t", irc.ir.TupleStructInfo(fields=(tensor_sinfo((2,)),)))
    with bb.function("main", [x, t]):
        with pytest.raises(irc.IRTypeError, match=r"call_te\(relu\): an operand has struct "
                                                  "info"):
            bb.emit_te(topi.nn.relu, t)
        with pytest.raises(irc.IRTypeError, match="te_func must be a function"):
            bb.emit_te("relu", x)
        with pytest.raises(irc.IRTypeError, match="must return a te tensor"):
            bb.emit_te(lambda a: a.shape, x)
        bb.emit_func_output(x)

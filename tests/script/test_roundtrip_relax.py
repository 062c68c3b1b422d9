"""Round trips of graph IR (every node of irc/ir/expr.py and struct_info.py), built with
the BlockBuilder and by hand."""

import numpy as np
import pytest
from script_helpers import assert_roundtrip

import irc
from irc import tir
from irc.ir import (
    BlockBuilder,
    Constant,
    DataTypeImm,
    ExternFunc,
    IRModule,
    PrimValue,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    ops,
    tensor_sinfo,
)
from irc.ir.expr import Call, Function, If, SeqExpr, VarBinding
from irc.ir.printer import METADATA_FOOTER
from irc.ir.struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    TensorStructInfo,
    TupleStructInfo,
)


def tvar(name, shape, dtype="float32"):
    return Var(name_hint=name, struct_info=tensor_sinfo(shape, dtype))


def add_one_prim_func(n, scalar_param=False):
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n,), "float32", "B")
    pa, pb = tir.Var(name="A", dtype="handle"), tir.Var(name="B", dtype="handle")
    i = tir.var("i", "int64")
    body = tir.For(loop_var=i, min=tir.const(0, "int64"), extent=n, kind="serial",
                   body=tir.BufferStore(buffer=B, value=A[i] + tir.const(1.0, "float32"),
                                        indices=(i,)))
    params = (pa, pb, n) if scalar_param else (pa, pb)
    return tir.PrimFunc(params=params, buffer_map={pa: A, pb: B}, body=body,
                        attrs={"tir.noalias": True})


def test_block_builder_module_with_every_graph_node():
    n = tir.var("n", "int64")
    m = tir.var("m", "int64")
    x = tvar("x", (n, 4))
    w = tvar("w", (4, 4))
    flag = Var(name_hint="flag", struct_info=PrimStructInfo(dtype="bool"))
    obj = Var(name_hint="obj", struct_info=ObjectStructInfo())
    bb = BlockBuilder()
    gv_prim = bb.add_func(add_one_prim_func(tir.const(16, "int64")), "add_one")
    y = tvar("y", (16,))
    with bb.function("helper", [y], attrs={"global_symbol": "helper"}):
        out = bb.emit(ops.call_tir(gv_prim, [y], tensor_sinfo((16,), "float32")))
        bb.emit_func_output(out)
    helper = bb.get().get_global_var("helper")
    with bb.function("main", [x, w, flag, obj], attrs={"num_input": 2}):
        with bb.dataflow():
            mm = bb.emit(ops.matmul(x, w), "mm")
            relu = bb.emit(ops.nn.relu(mm), "relu")
            tup = bb.emit(Tuple(fields=(mm, relu)), "tup")
            first = bb.emit(TupleGetItem(tuple_value=tup, index=0), "first")
            c = bb.emit(ops.add(first, Constant.from_numpy(np.float32(2.5))), "c")
            big = bb.emit(ops.multiply(c, Constant.from_numpy(
                np.arange(4, dtype="float32"))), "big")
            flat = bb.emit(ops.reshape(big, ShapeExpr(values=(n * 4,))), "flat")
            gv = bb.emit_output(flat, "gv")
        casted = bb.match_cast(gv, TensorStructInfo(shape=(m,), dtype="float32"), "casted")
        sliced = bb.emit(ops.call_pure_packed("vm.builtin.copy", [casted],
                                              tensor_sinfo((m,), "float32")), "copied")
        head = bb.emit(ops.call_dps_packed("ext_kernel", [sliced],
                                           tensor_sinfo((16,), "float32")), "head")
        called = bb.emit(Call(op=helper, args=(head,)), "called")
        packed = bb.emit(Call(op=ExternFunc(global_symbol="my.packed"), args=(called, obj),
                              sinfo_args=(ObjectStructInfo(),)), "packed")
        shape = bb.emit(ShapeExpr(values=(m, tir.const(3, "int64"))), "shape")
        prim = bb.emit(PrimValue(value=m * 2), "prim")
        fprim = bb.emit(PrimValue(value=tir.const(0.5, "float32")), "fprim")
        s = bb.emit(StringImm(value="hello \"world\""), "s")
        d = bb.emit(DataTypeImm(value="float16"), "d")
        bb.emit_func_output(Tuple(fields=(called, packed, shape, prim, fprim, s, d, flag)))
    mod = bb.get()
    parsed = assert_roundtrip(mod, metadata={"relax.expr.Constant": [np.arange(
        4, dtype="float32")]})
    text = mod.script()
    assert 'x: R.Tensor(("n", 4), dtype="float32")' in text
    assert "R.Tensor((n * 4,)" in text and 'R.Shape(["m", 3])' in text
    assert 'R.const(2.5, "float32")' in text
    assert 'metadata["relax.expr.Constant"][0]' in text and text.endswith(METADATA_FOOTER +
                                                                            "\n")
    assert "cls = Module" in text and "cls.helper(head)" in text
    assert 'R.call_packed("my.packed", called, obj, sinfo_args=R.Object)' in text
    assert parsed["main"].attrs["num_input"] == 2


def test_show_meta_roundtrips_constants():
    x = tvar("x", (2, 3))
    bb = BlockBuilder()
    data = np.array([[1.5, -np.inf, np.nan], [0.0, 2.0, 3.0]], dtype="float32")
    with bb.function("main", [x]):
        y = bb.emit(ops.add(x, Constant.from_numpy(data)))
        z = bb.emit(ops.add(y, Constant.from_numpy(np.array([1, 2, 3], dtype="int8")
                                                   .astype("float32"))))
        bb.emit_func_output(Tuple(fields=(z, Constant.from_numpy(np.array(True)))))
    mod = bb.get()
    assert_roundtrip(mod, show_meta=True)
    with pytest.raises(irc.IRParseError, match="show_meta=True"):
        irc.parse(mod.script())


def test_if_nested_function_and_impure_function():
    c = Var(name_hint="c", struct_info=PrimStructInfo(dtype="bool"))
    x = tvar("x", (4,))
    bb = BlockBuilder()
    norm = bb.normalize
    t_val = norm(ops.nn.relu(x))
    t_var = Var(name_hint="a", struct_info=t_val.struct_info)
    t_seq = norm(SeqExpr(blocks=(irc.ir.BindingBlock(bindings=(VarBinding(var=t_var,
                                                                           value=t_val),)),),
                         body=t_var))
    f_seq = norm(SeqExpr(blocks=(), body=x))
    ife = norm(If(cond=c, true_branch=t_seq, false_branch=f_seq))
    r = Var(name_hint="r", struct_info=ife.struct_info)
    p = tvar("p", (4,))
    inner = norm(Function(params=(p,), body=norm(SeqExpr(blocks=(), body=p)),
                          ret_struct_info=p.struct_info, attrs={}))
    fv = Var(name_hint="ident", struct_info=inner.struct_info)
    call = norm(Call(op=fv, args=(r,)))
    out = Var(name_hint="out", struct_info=call.struct_info)
    block = irc.ir.BindingBlock(bindings=(VarBinding(var=r, value=ife),
                                          VarBinding(var=fv, value=inner),
                                          VarBinding(var=out, value=call)))
    body = norm(SeqExpr(blocks=(block,), body=out))
    f = Function(params=(c, x), body=body, ret_struct_info=body.struct_info, is_pure=False,
                 attrs={"global_symbol": "main"})
    f = norm(f)
    text = assert_roundtrip(f).script()
    assert "@R.function(pure=False)" in text and "if c:" in text and "def ident(" in text


def test_struct_info_of_every_kind():
    n = tir.var("n", "int64")
    params = [
        Var(name_hint="t0", struct_info=TensorStructInfo()),
        Var(name_hint="t1", struct_info=TensorStructInfo(dtype="int8", ndim=3)),
        Var(name_hint="t2", struct_info=TensorStructInfo(shape=(n, n * 2 + 1), dtype="float16",
                                                          vdevice="cuda:0")),
        Var(name_hint="t3", struct_info=TensorStructInfo(shape=(), dtype="bool")),
        Var(name_hint="tu", struct_info=TupleStructInfo(fields=(
            TensorStructInfo(ndim=1), TupleStructInfo(fields=())))),
        Var(name_hint="s0", struct_info=ShapeStructInfo()),
        Var(name_hint="s1", struct_info=ShapeStructInfo(ndim=2)),
        Var(name_hint="s2", struct_info=ShapeStructInfo(values=(n, tir.const(4, "int64")))),
        Var(name_hint="p0", struct_info=PrimStructInfo(dtype="float32")),
        Var(name_hint="p1", struct_info=PrimStructInfo(dtype="int64", value=n)),
        Var(name_hint="o", struct_info=ObjectStructInfo()),
        Var(name_hint="f0", struct_info=FuncStructInfo(
            params=(TensorStructInfo(ndim=2),), ret=ObjectStructInfo(), purity=False)),
        Var(name_hint="f1", struct_info=FuncStructInfo(params=None,
                                                       ret=TensorStructInfo(dtype="int32"))),
    ]
    body = BlockBuilder().normalize(SeqExpr(blocks=(), body=Tuple(fields=tuple(params))))
    f = Function(params=tuple(params), body=body, ret_struct_info=body.struct_info,
                 attrs={"global_symbol": "main"})
    f = BlockBuilder().normalize(f)
    text = assert_roundtrip(f).script()
    assert 'R.Tensor(("n", n * 2 + 1), dtype="float16", vdevice="cuda:0")' in text
    assert "R.Shape([n, 4])" in text and "R.Prim(value=n)" in text


def test_module_with_prim_and_graph_functions_and_symbolic_call_tir():
    n = tir.var("n", "int64")
    x = tvar("x", (n,))
    bb = BlockBuilder()
    gv = bb.add_func(add_one_prim_func(tir.var("n", "int64")), "add_one")
    gv2 = bb.add_func(add_one_prim_func(tir.var("k", "int64"), True), "add_one_n")
    with bb.function("main", [x], attrs={"global_symbol": "main"}):
        with bb.dataflow():
            y = bb.emit(ops.call_tir(gv, [x], tensor_sinfo((n,), "float32")))
            z = bb.emit_output(ops.call_tir(gv2, [y], tensor_sinfo((n,), "float32"),
                                            tir_vars=ShapeExpr(values=(n,))))
        bb.emit_func_output(z)
    mod = bb.get().with_attrs(version=2)
    text = assert_roundtrip(mod).script()
    assert "R.call_tir(cls.add_one, (x,), out_sinfo=" in text
    assert "tir_vars=R.shape([n])" in text and "I.module_attrs({\"version\": 2})" in text


def test_empty_module_and_prim_only_module():
    assert_roundtrip(IRModule())
    assert_roundtrip(IRModule(functions={"f": add_one_prim_func(tir.const(8, "int64"))}))


def test_if_in_dataflow_block_and_reserved_variable_names():
    text = '''@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), "float32"), c: R.Tensor((), "bool")):
        with R.dataflow():
            if c:
                y = R.nn.relu(x)
            else:
                y = x
            z = R.add(y, y)
            R.output(y, z)
        return z
'''
    mod = irc.parse(text)
    (block,) = mod["main"].body.blocks
    assert [type(b.var).__name__ for b in block.bindings] == ["Var", "Var"]
    assert_roundtrip(mod)
    # Variables named like script names are renamed when printed.
    x = tvar("cls", (2,))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit(ops.nn.relu(x), "Module")
        z = bb.emit(ops.nn.relu(y), "T")
        bb.emit_func_output(z)
    text = assert_roundtrip(bb.get()).script()
    assert "def main(cls_1: R.Tensor" in text and "Module_1: R.Tensor" in text


def test_module_with_extern_function():
    mod = IRModule(functions={"my_ext": ExternFunc(global_symbol="my_ext_symbol"),
                              "f": add_one_prim_func(tir.const(8, "int64"))})
    text = assert_roundtrip(mod).script()
    assert 'my_ext = R.ExternFunc("my_ext_symbol")' in text


def test_objects_without_text_form_print_as_metadata_references():
    class CompiledLibrary:
        pass

    lib = CompiledLibrary()
    mod = IRModule(attrs={"external_mods": [lib, lib]})
    text = mod.script()
    assert 'I.module_attrs({"external_mods": [metadata["CompiledLibrary"][0], ' \
           'metadata["CompiledLibrary"][0]]})' in text
    assert text.endswith(METADATA_FOOTER + "\n")
    ref = irc.parse(text).attrs["external_mods"][0]
    assert (ref.kind, ref.index) == ("CompiledLibrary", 0)


def _module_with_constant(data):
    x = tvar("x", data.shape)
    bb = BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(ops.add(x, Constant.from_numpy(data))))
    return bb.get()


def test_metadata_option_collects_what_the_text_refers_to():
    class CompiledLibrary:
        pass

    lib = CompiledLibrary()
    mod = _module_with_constant(np.arange(6, dtype="float32").reshape(2, 3))
    mod = mod.with_attrs(external_mods=[lib])
    tables = {}
    text = mod.script(show_meta=True, metadata=tables)
    assert '"base64"' in text  # small constants are written into the text
    assert tables["CompiledLibrary"] == [lib]
    assert [type(c).__name__ for c in tables["relax.expr.Constant"]] == ["Constant"]
    parsed = irc.parse(text, metadata=tables)
    assert parsed.attrs["external_mods"][0] is lib  # the object itself comes back
    irc.ir.assert_structural_equal(parsed, mod)


def test_meta_limit_leaves_large_constants_out_of_the_text():
    mod = _module_with_constant(np.ones((64, 64), "float32"))  # 16 KiB
    tables = {}
    text = mod.script(show_meta=True, meta_limit=1024, metadata=tables)
    assert '"base64"' not in text and text.endswith(METADATA_FOOTER + "\n")
    irc.ir.assert_structural_equal(irc.parse(text, metadata=tables), mod)
    assert '"base64"' in mod.script(show_meta=True, meta_limit=1 << 20)



@pytest.mark.parametrize("begin, end", [(0, 2), (1, 3), (3, 1), (0, 0), (2, 2**31 - 1)])
def test_strided_slice_of_a_symbolic_axis_roundtrips_after_legalization(begin, end):
    """The binding keeps ``R.strided_slice``'s inferred shape and LegalizeOps's
    ``call_tir`` carries ``topi.strided_slice``'s: the parser accepts the annotation only
    when the two are provably equal (they once differed by a ``min(begin, n)`` clamp)."""
    text = f'''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        n = T.int64()
        with R.dataflow():
            y = R.strided_slice(x, axes=[0], begin=[{begin}], end=[{end}])
            R.output(y)
        return y
'''
    mod = irc.parse(text, source_name="<slice>")
    assert_roundtrip(mod)
    legal = irc.passes.LegalizeOps()(mod)
    assert_roundtrip(legal)

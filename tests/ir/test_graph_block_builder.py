"""BlockBuilder: building functions, naming, normalization, calls between functions, the
module, and structural equality of what it builds."""

import re

import pytest
from graph_helpers import tensor_var

from irc import tir
from irc.ir import (
    BlockBuilder,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    FuncStructInfo,
    Function,
    If,
    IRCError,
    IRTypeError,
    MatchCast,
    PrimValue,
    SeqExpr,
    TensorStructInfo,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    const,
    normalize,
    ops,
    structural_equal,
    structural_hash,
    tensor_sinfo,
    well_formed,
)
from irc.ir.struct_info_analysis import format_sinfo


def build_mlp(second_out_dtype="void"):
    """The seed-003 model exactly as the nn frontend emits it."""
    bb = BlockBuilder()
    x = tensor_var((1, 784), name="x")
    w1 = tensor_var((256, 784), name="fc1_weight")
    b1 = tensor_var((256,), name="fc1_bias")
    w2 = tensor_var((10, 256), name="fc2_weight")
    with bb.function("forward", [x, w1, b1, w2], attrs={"num_input": 1}):
        with bb.dataflow():
            p = bb.emit(ops.permute_dims(w1), "permute_dims")
            mm = bb.emit(ops.matmul(x, p), "matmul")
            a = bb.emit(ops.add(mm, b1), "add")
            r = bb.emit(ops.nn.relu(a), "relu")
            p1 = bb.emit(ops.permute_dims(w2), "permute_dims")
            mm1 = bb.emit(ops.matmul(r, p1, out_dtype=second_out_dtype), "matmul")
            gv = bb.emit_output(mm1, "gv")
        bb.emit_func_output(gv)
    return bb.get()


SEED_003_BINDINGS = [
    ("permute_dims", 'R.Tensor((784, 256), "float32")', "permute_dims"),
    ("matmul", 'R.Tensor((1, 256), "float32")', "matmul"),
    ("add", 'R.Tensor((1, 256), "float32")', "add"),
    ("relu", 'R.Tensor((1, 256), "float32")', "nn.relu"),
    ("permute_dims1", 'R.Tensor((256, 10), "float32")', "permute_dims"),
    ("matmul1", 'R.Tensor((1, 10), "float32")', "matmul"),
]


def test_seed_003_mlp():
    mod = build_mlp()
    assert mod.names() == ["forward"]
    f = mod["forward"]
    assert [p.name_hint for p in f.params] == ["x", "fc1_weight", "fc1_bias", "fc2_weight"]
    assert f.attrs == {"num_input": 1, "global_symbol": "forward"}
    assert format_sinfo(f.ret_struct_info) == 'R.Tensor((1, 10), "float32")'
    (block,) = f.body.blocks
    assert isinstance(block, DataflowBlock)
    *inner, out = block.bindings
    got = [(b.var.name_hint, format_sinfo(b.var.struct_info), b.value.op.name) for b in inner]
    assert got == SEED_003_BINDINGS
    assert all(isinstance(b.var, DataflowVar) for b in inner)
    assert inner[0].value.attrs == {"axes": None}
    assert inner[1].value.attrs == {"out_dtype": "void"}
    assert type(out.var) is Var and out.var.name_hint == "gv"
    assert out.value is inner[-1].var
    assert f.body.body is out.var
    assert isinstance(f.struct_info, FuncStructInfo)
    well_formed(mod)


def test_builds_are_structurally_equal_and_hash_alike():
    a, b = build_mlp(), build_mlp()
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)
    changed = build_mlp(second_out_dtype="float16")
    assert not structural_equal(a, changed)
    assert structural_hash(a) != structural_hash(changed)


def test_default_names():
    bb = BlockBuilder()
    x = tensor_var((2,))
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(ops.exp(x))
            lv1 = bb.emit(ops.exp(lv))
            dotted = bb.emit(ops.nn.relu(lv1), "nn.relu")
            gv = bb.emit_output(dotted)
        gv1 = bb.emit(ops.exp(gv))
        bb.emit_func_output(gv1)
    assert [v.name_hint for v in (lv, lv1, dotted, gv, gv1)] == \
        ["lv", "lv1", "nn_relu", "gv", "gv1"]
    assert isinstance(gv1, Var) and not isinstance(gv1, DataflowVar)
    f = bb.get()["main"]
    assert [type(b).__name__ for b in f.body.blocks] == ["DataflowBlock", "BindingBlock"]


def test_parameter_names_are_reserved():
    bb = BlockBuilder()
    x = tensor_var((2,), name="lv")
    with bb.function("main", [x]):
        y = bb.emit(ops.exp(x))
        bb.emit_func_output(y)
    assert y.name_hint == "gv"
    bb2 = BlockBuilder()
    with bb2.function("main", [x]):
        with bb2.dataflow():
            z = bb2.emit(ops.exp(x))
            out = bb2.emit_output(z)
        bb2.emit_func_output(out)
    assert z.name_hint == "lv1"


def test_scope_errors():
    bb = BlockBuilder()
    x = tensor_var((2,))
    with pytest.raises(IRCError, match="needs an open function"):
        bb.emit(ops.exp(x))
    with pytest.raises(IRCError, match="was not finished"):
        with bb.function("f", [x]):
            bb.emit(ops.exp(x))
    with pytest.raises(IRCError, match="emit_output is only meaningful inside"):
        with bb.function("g", [x]):
            bb.emit_output(ops.exp(x))
    with pytest.raises(IRCError, match="after the dataflow block ends"):
        with bb.function("h", [x]):
            with bb.dataflow():
                bb.emit_func_output(x)
    with pytest.raises(IRCError, match="has no parameters"):
        with bb.function("k"):
            bb.emit_func_output(x)
    assert len(bb.get()) == 0


def test_params_given_at_the_end_and_tuple_output():
    bb = BlockBuilder()
    x = tensor_var((2, 3))
    with bb.function("main"):
        with bb.dataflow():
            a = bb.emit_output(ops.sum(x, axis=1))
            b = bb.emit_output(ops.max(x, axis=0))
        gv = bb.emit_func_output([a, b], params=[x])
    f = bb.lookup(gv)
    assert isinstance(f.body.body, Tuple)
    assert format_sinfo(f.ret_struct_info) == \
        'R.Tuple(R.Tensor((2,), "float32"), R.Tensor((3,), "float32"))'


def test_nested_calls_are_normalized_in_place():
    x, y = tensor_var((4,)), tensor_var((4,))
    nested = normalize(ops.nn.relu(ops.add(x, ops.multiply(y, const(2.0)))))
    assert format_sinfo(nested.struct_info) == 'R.Tensor((4,), "float32")'
    inner = nested.args[0]
    assert isinstance(inner, Call) and format_sinfo(inner.struct_info) == \
        'R.Tensor((4,), "float32")'
    assert inner.args[1].args[1].struct_info is not None


def test_normalize_leaves():
    x = tensor_var((2, 3))
    t = normalize(Tuple(fields=(x, PrimValue(value=tir.const(3, "int64")))))
    assert format_sinfo(t.struct_info) == 'R.Tuple(R.Tensor((2, 3), "float32"), R.Prim(value=3))'
    item = normalize(TupleGetItem(tuple_value=t, index=0))
    assert item.struct_info is x.struct_info
    with pytest.raises(IRTypeError, match=r"tuple index 2 is out of range .* \(2 fields\)"):
        normalize(TupleGetItem(tuple_value=t, index=2))
    with pytest.raises(IRTypeError, match="it is not a tuple"):
        normalize(TupleGetItem(tuple_value=x, index=0))
    c = normalize(Constant(data=__import__("numpy").zeros((3, 2), "float32")))
    assert format_sinfo(c.struct_info) == 'R.Tensor((3, 2), "float32")'
    cond = Var(name_hint="c", struct_info=TensorStructInfo(shape=(), dtype="bool"))
    joined = normalize(If(cond=cond, true_branch=x, false_branch=tensor_var((4, 3))))
    assert format_sinfo(joined.struct_info) == 'R.Tensor(ndim=2, "float32")'
    with pytest.raises(IRTypeError, match="variable v has no struct info"):
        normalize(ops.exp(Var(name_hint="v")))


def test_normalize_function_types_untyped_bindings():
    x = tensor_var((2,))
    v = Var(name_hint="v")  # bound without struct info: normalization retypes it
    body = SeqExpr(blocks=(DataflowBlock(bindings=(VarBinding(var=v, value=ops.exp(x)),)),),
                   body=v)
    f = normalize(Function(params=(x,), body=body, ret_struct_info=TensorStructInfo(ndim=1)))
    new_v = f.body.blocks[0].bindings[0].var
    assert new_v is not v and new_v.name_hint == "v"
    assert f.body.body is new_v
    assert format_sinfo(new_v.struct_info) == 'R.Tensor((2,), "float32")'
    well_formed(f)


def test_match_cast_binds_symbolic_dims():
    bb = BlockBuilder()
    n = tir.var("n", "int64")
    x = Var(name_hint="x", struct_info=TensorStructInfo(dtype="float32", ndim=2))
    with bb.function("main", [x]):
        y = bb.match_cast(x, tensor_sinfo((n, 4)))
        z = bb.emit(ops.reshape(y, (-1,)))
        bb.emit_func_output(z)
    f = bb.get()["main"]
    assert isinstance(f.body.blocks[0].bindings[0], MatchCast)
    assert format_sinfo(z.struct_info) == 'R.Tensor((n * 4,), "float32")'
    well_formed(bb.get())
    with pytest.raises(IRTypeError, match=re.escape(
            'R.match_cast: a value of R.Tensor(ndim=2, "float32") can never match '
            'R.Tensor((4,), "float32")')):
        with bb.function("bad", [x]):
            bb.match_cast(x, tensor_sinfo((4,)))


def test_calls_between_functions_bind_symbolic_dims():
    bb = BlockBuilder()
    n = tir.var("n", "int64")
    a = tensor_var((n, 4), name="a")
    with bb.function("double", [a]):
        out = bb.emit(ops.concat([a, a], axis=0))
        helper = bb.emit_func_output(out)
    x = tensor_var((3, 4))
    with bb.function("main", [x]):
        y = bb.emit(Call(op=helper, args=(x,)))
        bb.emit_func_output(y)
    assert format_sinfo(y.struct_info) == 'R.Tensor((6, 4), "float32")'
    well_formed(bb.get())
    with pytest.raises(IRTypeError, match=re.escape(
            "@double: argument 0 does not match parameter R.Tensor((n, 4), \"float32\"): "
            "expected shape (n, 4), got (3, 5) (4 != 5)")):
        with bb.function("bad", [tensor_var((3, 5))]):
            bb.emit(Call(op=helper, args=(tensor_var((3, 5)),)))
    with pytest.raises(IRTypeError, match="@double takes 1 arguments, got 2"):
        normalize(Call(op=helper, args=(x, x)), bb.get())


def test_declared_functions_type_forward_calls():
    bb = BlockBuilder()
    sig = FuncStructInfo(params=(tensor_sinfo((2,)),), ret=tensor_sinfo((2,)))
    later = bb.declare_function("later", sig)
    x = tensor_var((2,))
    with bb.function("main", [x]):
        y = bb.emit(Call(op=later, args=(x,)))
        bb.emit_func_output(y)
    p = tensor_var((2,), name="p")
    with bb.function("later", [p]):
        bb.emit_func_output(bb.emit(ops.exp(p)))
    assert format_sinfo(y.struct_info) == 'R.Tensor((2,), "float32")'
    assert sorted(bb.get().names()) == ["later", "main"]
    well_formed(bb.get())
    with pytest.raises(IRTypeError, match="call of @nowhere, which is not a function"):
        normalize(Call(op=later.replace(name_hint="nowhere"), args=(x,)), bb.get())


def test_add_func_deduplicates_and_uniquifies():
    def kernel():
        p = tir.var("A", "handle")
        return tir.PrimFunc(params=(p,), buffer_map={p: tir.decl_buffer((4,), "float32", "A")},
                            body=tir.Evaluate(value=tir.const(0, "int32")))

    bb = BlockBuilder()
    gv1 = bb.add_func(kernel(), "exp")
    gv2 = bb.add_func(kernel(), "exp")
    assert gv1.name_hint == gv2.name_hint == "exp"
    assert len(bb.get()) == 1
    other = kernel().with_attr("op_pattern", 0)
    gv3 = bb.add_func(other, "exp")
    assert gv3.name_hint == "exp1"
    bb.update_func(gv3, kernel().with_attr("op_pattern", 1))
    assert bb.lookup(gv3).attrs == {"op_pattern": 1}
    with pytest.raises(IRCError, match="add_func expects a graph Function or a PrimFunc"):
        bb.add_func(tensor_var((2,)), "x")


def _kernel(*shapes):
    params = tuple(tir.var(f"p{i}", "handle") for i in range(len(shapes)))
    buffers = {p: tir.decl_buffer(s, "float32", f"B{i}")
               for i, (p, s) in enumerate(zip(params, shapes))}
    return tir.PrimFunc(params=params, buffer_map=buffers,
                        body=tir.Evaluate(value=tir.const(0, "int32")))


def test_seed_003_after_dispatch_and_scheduling():
    """The graph function seed 003 prints after cuBLAS dispatch and default scheduling."""
    bb = BlockBuilder()
    transpose = bb.add_func(_kernel((10, 256), (256, 10)), "transpose")
    matmul = bb.add_func(_kernel((1, 256), (256, 10), (1, 10)), "matmul")
    x = tensor_var((1, 784), name="x")
    w1 = tensor_var((256, 784), name="fc1_weight")
    b1 = tensor_var((256,), name="fc1_bias")
    w2 = tensor_var((10, 256), name="fc2_weight")
    with bb.function("forward", [x, w1, b1, w2], attrs={"num_input": 1}):
        with bb.dataflow():
            lv = bb.emit(ops.call_dps_packed(
                "fused_relax_permute_dims_relax_matmul_relax_add_relax_nn_relu_cublas",
                (w1, x, b1), out_sinfo=tensor_sinfo((1, 256))))
            p1 = bb.emit(ops.call_tir(transpose, (w2,), out_sinfo=tensor_sinfo((256, 10))),
                         "permute_dims1")
            gv = bb.emit_output(ops.call_tir(matmul, (lv, p1), out_sinfo=tensor_sinfo((1, 10))))
        bb.emit_func_output(gv)
    mod = bb.get()
    assert sorted(mod.names()) == ["forward", "matmul", "transpose"]
    assert [v.name_hint for v in (lv, p1, gv)] == ["lv", "permute_dims1", "gv"]
    assert format_sinfo(gv.struct_info) == 'R.Tensor((1, 10), "float32")'
    well_formed(mod)
    with pytest.raises(IRTypeError, match="@transpose takes 2 parameters but the call passes 2 "
                                          "inputs, 1 outputs"):
        bb.normalize(ops.call_tir(transpose, (w2, w2), out_sinfo=tensor_sinfo((256, 10))))
    with pytest.raises(IRTypeError, match="@forward is a graph function, not a loop function"):
        bb.normalize(ops.call_tir(mod.get_global_var("forward"), (x,), tensor_sinfo((1,))))

"""Well-formedness of graph IR: each rule has a passing and a failing case."""

import re

import pytest
from graph_helpers import tensor_var

from irc import tir
from irc.ir import (
    BindingBlock,
    BlockBuilder,
    Call,
    DataflowBlock,
    DataflowVar,
    Function,
    GlobalVar,
    IRModule,
    IRWellFormedError,
    MatchCast,
    SeqExpr,
    ShapeExpr,
    TensorStructInfo,
    Var,
    VarBinding,
    is_well_formed,
    normalize,
    ops,
    tensor_sinfo,
    well_formed,
)


def raises(message):
    return pytest.raises(IRWellFormedError, match=re.escape(message))


def func(params, blocks, body, ret=None):
    """A normalized Function from hand-built bindings (struct info filled by normalize)."""
    seq = SeqExpr(blocks=tuple(blocks), body=body)
    f = Function(params=tuple(params), body=seq,
                 ret_struct_info=ret if ret is not None else TensorStructInfo())
    return normalize(f)


def bind(var, value):
    return VarBinding(var=var, value=normalize(value))


def typed(name, value, cls=Var):
    return cls(name_hint=name, struct_info=normalize(value).struct_info)


def test_built_module_is_well_formed():
    bb = BlockBuilder()
    x = tensor_var((2, 3))
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(ops.exp(x))
            gv = bb.emit_output(ops.sum(lv, axis=1))
        bb.emit_func_output(gv)
    well_formed(bb.get())
    assert is_well_formed(bb.get())


def test_undefined_variable():
    x, ghost = tensor_var((2,)), tensor_var((2,), name="ghost")
    y = typed("y", ops.exp(ghost))
    f = func([x], [BindingBlock(bindings=(bind(y, ops.exp(ghost)),))], y)
    with raises("in @<function>: variable ghost is used but never defined"):
        well_formed(f)
    assert not is_well_formed(f)


def test_use_before_definition():
    x = tensor_var((2,))
    a, b = typed("a", ops.exp(x)), typed("b", ops.exp(x))
    f = func([x], [BindingBlock(bindings=(bind(a, ops.exp(b)), bind(b, ops.exp(x))))], a)
    with raises("variable b is used but never defined (or used before its binding)"):
        well_formed(f)


def test_dataflow_var_used_outside_its_block():
    x = tensor_var((2,))
    lv = typed("lv", ops.exp(x), DataflowVar)
    gv = typed("gv", ops.exp(x))
    blocks = [DataflowBlock(bindings=(bind(lv, ops.exp(x)),)),
              BindingBlock(bindings=(bind(gv, ops.exp(lv)),))]
    with raises("DataflowVar lv is used outside its dataflow block; emit it as an output"):
        well_formed(func([x], blocks, gv))
    with raises("DataflowVar lv is used outside its dataflow block"):
        well_formed(func([x], blocks[:1], lv))


def test_dataflow_var_bound_outside_dataflow_block():
    x = tensor_var((2,))
    lv = typed("lv", ops.exp(x), DataflowVar)
    f = func([x], [BindingBlock(bindings=(bind(lv, ops.exp(x)),))], x)
    with raises("DataflowVar lv is bound outside a dataflow block"):
        well_formed(f)


def test_variable_defined_twice():
    x = tensor_var((2,))
    y = typed("y", ops.exp(x))
    f = func([x], [BindingBlock(bindings=(bind(y, ops.exp(x)), bind(y, ops.exp(x))))], y)
    with raises("variable y is defined twice"):
        well_formed(f)
    g = func([x], [BindingBlock(bindings=(bind(x, ops.exp(x)),))], x)
    with raises("variable x is defined twice"):
        well_formed(g)


def test_call_struct_info_contradicting_inference():
    x = tensor_var((1, 256))
    call = normalize(ops.nn.relu(x)).replace(struct_info=tensor_sinfo((1, 10)))
    y = Var(name_hint="y", struct_info=call.struct_info)
    f = func([x], [BindingBlock(bindings=(VarBinding(var=y, value=call),))], y)
    with raises('the call\'s recorded struct info R.Tensor((1, 10), "float32") contradicts '
                'the inferred R.Tensor((1, 256), "float32")'):
        well_formed(f)
    # A less precise record is fine.
    loose = normalize(ops.nn.relu(x)).replace(struct_info=TensorStructInfo(ndim=2))
    z = Var(name_hint="z", struct_info=loose.struct_info)
    well_formed(func([x], [BindingBlock(bindings=(VarBinding(var=z, value=loose),))], z))


def test_ill_typed_call_is_reported():
    x = tensor_var((1, 256))
    bad = Call(op=normalize(ops.exp(x)).op, args=(tensor_var((2,), "int32", "i"),),
               struct_info=tensor_sinfo((2,), "int32"))
    i = bad.args[0]
    y = Var(name_hint="y", struct_info=bad.struct_info)
    f = func([x, i], [BindingBlock(bindings=(VarBinding(var=y, value=bad),))], y)
    with raises("ill-typed call: R.exp: the input must have a floating-point dtype"):
        well_formed(f)


def test_binding_annotation_contradicting_value():
    x = tensor_var((2, 3))
    y = Var(name_hint="y", struct_info=tensor_sinfo((3, 2)))
    f = func([x], [BindingBlock(bindings=(bind(y, ops.exp(x)),))], y)
    with raises('y is annotated R.Tensor((3, 2), "float32") but its value is '
                'R.Tensor((2, 3), "float32")'):
        well_formed(f)


def test_return_contradicting_body():
    x = tensor_var((2, 3))
    f = func([x], [], x, ret=tensor_sinfo((4,)))
    with raises('the declared return R.Tensor((4,), "float32") contradicts the body\'s'):
        well_formed(f)


def test_unnormalized_expression():
    x = tensor_var((2,))
    y = typed("y", ops.exp(x))
    f = func([x], [BindingBlock(bindings=(bind(y, ops.exp(x)),))], y)
    raw = f.body.blocks[0].bindings[0].replace(value=ops.exp(x))
    broken = f.replace(body=f.body.replace(blocks=(BindingBlock(bindings=(raw,)),)))
    with raises("a Call has no struct info (not normalized)"):
        well_formed(broken)


def test_undefined_symbolic_variable():
    n, k = tir.var("n", "int64"), tir.var("k", "int64")
    x = tensor_var((n, 4))
    good = normalize(ops.reshape(x, ShapeExpr(values=(n * 4,))))
    y = Var(name_hint="y", struct_info=good.struct_info)
    well_formed(func([x], [BindingBlock(bindings=(VarBinding(var=y, value=good),))], y))
    bad = normalize(ops.reshape(x, ShapeExpr(values=(k, 4))))
    z = Var(name_hint="z", struct_info=bad.struct_info)
    with raises("symbolic variable k is used but not defined by a parameter or a match_cast"):
        well_formed(func([x], [BindingBlock(bindings=(VarBinding(var=z, value=bad),))], z))


def test_match_cast_defines_symbolic_variables():
    m = tir.var("m", "int64")
    x = Var(name_hint="x", struct_info=TensorStructInfo(dtype="float32", ndim=1))
    y = Var(name_hint="y", struct_info=tensor_sinfo((m,)))
    cast = MatchCast(var=y, value=x, struct_info=tensor_sinfo((m,)))
    z = typed("z", ops.exp(y))
    f = func([x], [BindingBlock(bindings=(cast, bind(z, ops.exp(y))))], z)
    well_formed(f)


def test_global_var_not_in_module():
    x = tensor_var((1, 4))
    call = normalize(ops.call_tir(GlobalVar(name_hint="missing"), [x], tensor_sinfo((1, 4))))
    y = Var(name_hint="y", struct_info=call.struct_info)
    f = func([x], [BindingBlock(bindings=(VarBinding(var=y, value=call),))], y)
    well_formed(f)  # alone, the callee cannot be checked
    with raises("in @main: @missing names no function of the module"):
        well_formed(IRModule(functions={"main": f}))


def test_impure_call_inside_dataflow_block():
    bb = BlockBuilder()
    p = tensor_var((2,), name="p")
    with bb.function("log_it", [p], pure=False):
        impure = bb.emit_func_output(p)
    x = tensor_var((2,))
    lv = DataflowVar(name_hint="lv", struct_info=tensor_sinfo((2,)))
    call = Call(op=impure, args=(x,), struct_info=tensor_sinfo((2,)))
    f = func([x], [DataflowBlock(bindings=(VarBinding(var=lv, value=call),))], x)
    with raises("in @main: an impure call inside a dataflow block"):
        well_formed(bb.get().with_function("main", f))


def test_prim_funcs_are_checked_by_the_loop_ir_checker():
    p = tir.var("A", "handle")
    buf = tir.decl_buffer((4,), "float32", "A")
    ok = tir.PrimFunc(params=(p,), buffer_map={p: buf},
                      body=tir.Evaluate(value=tir.const(0, "int32")))
    well_formed(IRModule(functions={"kernel": ok}))
    i = tir.var("i", "int32")  # never bound by a loop
    store = tir.BufferStore(buffer=buf, value=tir.const(0.0, "float32"), indices=(i,))
    bad = tir.PrimFunc(params=(p,), buffer_map={p: buf}, body=store)
    with raises("variable i is used but never defined"):
        well_formed(IRModule(functions={"kernel": bad}))


def test_non_function_in_module():
    with raises("@weird is a Var, not a graph Function or a PrimFunc"):
        well_formed(IRModule(functions={"weird": tensor_var((1,))}))

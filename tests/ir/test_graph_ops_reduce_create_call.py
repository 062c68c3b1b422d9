"""Struct-info inference of reductions, creation operators and calls into lower levels."""

import re

import pytest
from graph_helpers import inferred, tensor_var

from irc import tir
from irc.ir import (
    ExternFunc,
    FuncStructInfo,
    GlobalVar,
    IRModule,
    IRTypeError,
    PrimValue,
    Tuple,
    get_op_def,
    normalize,
    ops,
    tensor_sinfo,
)
from irc.ir.op import COMM_REDUCE, OPAQUE


def raises(message):
    return pytest.raises(IRTypeError, match=re.escape(message))


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "variance"])
def test_reductions(name):
    build = getattr(ops, name)
    x = tensor_var((2, 3, 4))
    assert inferred(build(x)) == 'R.Tensor((), "float32")'
    assert inferred(build(x, axis=1)) == 'R.Tensor((2, 4), "float32")'
    assert inferred(build(x, axis=[0, -1], keepdims=True)) == 'R.Tensor((1, 3, 1), "float32")'
    assert get_op_def(name).pattern == COMM_REDUCE
    with raises(f"R.{name}: axis [1, -2] names an axis twice"):
        normalize(build(x, axis=[1, -2]))


def test_arg_reductions_give_int64(n):
    x = tensor_var((n, 10))
    assert inferred(ops.argmax(x, axis=-1)) == 'R.Tensor((n,), "int64")'
    assert inferred(ops.argmin(x, axis=0, keepdims=True)) == 'R.Tensor((1, 10), "int64")'
    assert inferred(ops.argmax(x)) == 'R.Tensor((), "int64")'
    with raises("R.mean: the input must have a floating-point dtype, got int32"):
        normalize(ops.mean(tensor_var((3,), "int32")))


def test_creation(n):
    assert inferred(ops.zeros((2, n), "float32")) == 'R.Tensor((2, n), "float32")'
    assert inferred(ops.ones((3,), "int8")) == 'R.Tensor((3,), "int8")'
    assert inferred(ops.full((2, 3), 1.5)) == 'R.Tensor((2, 3), "float32")'
    assert inferred(ops.full((2, 3), 1, dtype="float16")) == 'R.Tensor((2, 3), "float16")'
    x = tensor_var((2, 3))
    assert inferred(ops.zeros_like(x)) == 'R.Tensor((2, 3), "float32")'
    assert inferred(ops.ones_like(x, dtype="int32")) == 'R.Tensor((2, 3), "int32")'
    assert inferred(ops.full_like(x, 7)) == 'R.Tensor((2, 3), "float32")'
    with raises("R.zeros: attribute dtype must be a dtype such as 'float32'"):
        ops.zeros((2,), None)
    with raises("R.zeros: shape dimensions must be non-negative, got -2"):
        normalize(ops.zeros((-2,), "float32"))


def test_arange(n):
    assert inferred(ops.arange(10)) == 'R.Tensor((10,), "int64")'
    assert inferred(ops.arange(2, 11, 3)) == 'R.Tensor((3,), "int64")'
    assert inferred(ops.arange(0, 1.0, 0.25)) == 'R.Tensor((4,), "float32")'
    assert inferred(ops.arange(0, n, 2)) == 'R.Tensor((max(0, (n + 1) // 2),), "int64")'
    call = ops.arange(5)
    assert all(isinstance(a, PrimValue) for a in call.args)
    with raises("R.arange: step must not be 0"):
        normalize(ops.arange(0, 5, 0))


def test_call_tir_and_its_module_checks():
    x = tensor_var((1, 256))
    gv = GlobalVar(name_hint="relu_kernel")
    call = ops.call_tir(gv, [x], tensor_sinfo((1, 256)))
    assert isinstance(call.args[1], Tuple)
    assert len(call.sinfo_args) == 1
    assert inferred(call) == 'R.Tensor((1, 256), "float32")'
    two = ops.call_tir(gv, [x], [tensor_sinfo((1, 256)), tensor_sinfo((2,), "int32")])
    assert inferred(two) == 'R.Tuple(R.Tensor((1, 256), "float32"), R.Tensor((2,), "int32"))'
    with_vars = ops.call_tir(gv, [x], tensor_sinfo((1, 256)), tir_vars=[tir.const(4, "int64")])
    assert len(with_vars.args) == 3
    assert get_op_def("call_tir").pattern == OPAQUE
    # Against a module, the callee must be a loop function with the right arity.
    func = _prim_func(n_params=2)
    mod = IRModule(functions={"relu_kernel": func})
    assert normalize(call, mod).struct_info.shape[1].value == 256
    with raises("R.call_tir: @relu_kernel takes 2 parameters but the call passes 1 inputs, "
                "2 outputs and 0 extra values"):
        normalize(two, mod)
    with raises("R.call_tir: needs out_sinfo"):
        normalize(ops.call_tir(gv, [x], []))


def test_call_dps_packed_and_pure_packed():
    x = tensor_var((1, 784))
    call = ops.call_dps_packed("fused_matmul_cublas", (x,), tensor_sinfo((1, 256)))
    assert isinstance(call.args[0], ExternFunc)
    assert call.args[0].global_symbol == "fused_matmul_cublas"
    assert inferred(call) == 'R.Tensor((1, 256), "float32")'
    pure = ops.call_pure_packed("vm.builtin.copy", [x], tensor_sinfo((1, 784)))
    assert inferred(pure) == 'R.Tensor((1, 784), "float32")'
    with raises("R.call_dps_packed: each out_sinfo must be a tensor"):
        normalize(ops.call_dps_packed("f", [x], [tensor_sinfo((1,)),
                                                 _func_sinfo()]))


def test_shape_of(n):
    assert inferred(ops.shape_of(tensor_var((n, 3)))) == "R.Shape([n, 3])"


def _func_sinfo():
    return FuncStructInfo(params=None, ret=tensor_sinfo((1, 256)))


def _prim_func(n_params):
    params = tuple(tir.var(f"p{i}", "handle") for i in range(n_params))
    buffers = {p: tir.decl_buffer((1, 256), "float32", f"b{i}") for i, p in enumerate(params)}
    return tir.PrimFunc(params=params, buffer_map=buffers, body=tir.Evaluate(
        value=tir.const(0, "int32")))

"""Struct-info inference of elementwise unary and binary operators."""

import re

import pytest
from graph_helpers import inferred, tensor_var

from irc.ir import (
    IRTypeError,
    SourceFile,
    Span,
    TensorStructInfo,
    Var,
    get_op_def,
    make_call,
    normalize,
    ops,
)
from irc.ir.op import BROADCAST, ELEMWISE
from irc.ir.struct_info_analysis import format_sinfo

UNARY_FLOAT = ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "sin", "cos"]
UNARY_ANY = ["abs", "negative", "floor", "ceil", "round"]


@pytest.mark.parametrize("name", UNARY_FLOAT + UNARY_ANY)
def test_unary_keeps_shape_and_dtype(name, n):
    build = getattr(ops, name)
    assert inferred(build(tensor_var((n, 4)))) == 'R.Tensor((n, 4), "float32")'
    assert get_op_def(name).pattern == ELEMWISE


@pytest.mark.parametrize("name", UNARY_FLOAT)
def test_transcendental_needs_float(name):
    with pytest.raises(IRTypeError, match=rf"R\.{name}: the input must have a floating-point "
                                          "dtype, got int32"):
        normalize(getattr(ops, name)(tensor_var((2,), "int32")))


@pytest.mark.parametrize("name", UNARY_ANY)
def test_rounding_accepts_integers(name):
    assert inferred(getattr(ops, name)(tensor_var((2,), "int32"))) == 'R.Tensor((2,), "int32")'


@pytest.mark.parametrize("name", ["nn.relu", "nn.gelu", "nn.gelu_tanh", "nn.silu"])
def test_activations(name):
    build = getattr(ops.nn, name.split(".")[1])
    assert inferred(build(tensor_var((1, 256)))) == 'R.Tensor((1, 256), "float32")'
    assert get_op_def(name).pattern == ELEMWISE


def test_relu_accepts_integers_gelu_does_not():
    assert inferred(ops.nn.relu(tensor_var((3,), "int8"))) == 'R.Tensor((3,), "int8")'
    with pytest.raises(IRTypeError, match="R.nn.gelu: the input must have a floating-point"):
        normalize(ops.nn.gelu(tensor_var((3,), "int8")))


def test_unary_of_non_tensor_is_rejected():
    with pytest.raises(IRTypeError, match=r"R\.exp: operand x must be a tensor, got R\.Shape"):
        normalize(ops.exp(ops.shape_of(tensor_var((2, 3)))))


def test_astype_and_clip():
    x = tensor_var((2, 3))
    assert inferred(ops.astype(x, "float16")) == 'R.Tensor((2, 3), "float16")'
    clipped = normalize(ops.clip(x, 0, 6))
    assert format_sinfo(clipped.struct_info) == 'R.Tensor((2, 3), "float32")'
    # Python bounds become prim values of the tensor's dtype.
    assert clipped.args[1].value.dtype == "float32"
    assert clipped.args[2].value.value == 6.0
    with pytest.raises(IRTypeError, match="attribute dtype must be a dtype"):
        ops.astype(x, "float33")


def test_logical_not_needs_bool():
    assert inferred(ops.logical_not(tensor_var((2,), "bool"))) == 'R.Tensor((2,), "bool")'
    with pytest.raises(IRTypeError, match="R.logical_not: the input must be a bool tensor"):
        normalize(ops.logical_not(tensor_var((2,))))


ARITH = ["add", "subtract", "multiply", "divide", "floor_divide", "power", "maximum", "minimum"]
COMPARE = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


@pytest.mark.parametrize("name", ARITH)
def test_binary_arith_broadcasts(name):
    build = getattr(ops, name)
    out = inferred(build(tensor_var((1, 256)), tensor_var((256,))))
    assert out == 'R.Tensor((1, 256), "float32")'
    assert inferred(build(tensor_var((4, 1, 3)), tensor_var((5, 1)))) == \
        'R.Tensor((4, 5, 3), "float32")'
    assert get_op_def(name).pattern == BROADCAST


@pytest.mark.parametrize("name", COMPARE)
def test_comparisons_give_bool(name):
    out = inferred(getattr(ops, name)(tensor_var((2, 3)), tensor_var((1, 3))))
    assert out == 'R.Tensor((2, 3), "bool")'


def test_logical_binary():
    a, b = tensor_var((2, 1), "bool"), tensor_var((3,), "bool")
    assert inferred(ops.logical_and(a, b)) == 'R.Tensor((2, 3), "bool")'
    assert inferred(ops.logical_or(a, b)) == 'R.Tensor((2, 3), "bool")'
    with pytest.raises(IRTypeError, match="operands must be bool tensors, got int32"):
        normalize(ops.logical_and(tensor_var((2,), "int32"), tensor_var((2,), "int32")))


def test_broadcast_error_message():
    with pytest.raises(IRTypeError) as err:
        normalize(ops.add(tensor_var((1, 256)), tensor_var((10,))))
    assert err.value.message == "R.add: shapes (1, 256) and (10,) do not broadcast"


def test_dtype_mismatch_message():
    with pytest.raises(IRTypeError) as err:
        normalize(ops.add(tensor_var((2,)), tensor_var((2,), "int32")))
    assert err.value.message == "R.add: dtypes float32 and int32 differ; insert R.astype"


def test_error_carries_the_call_and_its_span():
    src = SourceFile("model.ir", "    y = R.add(a, b)\n")
    span = Span(src, 1, 9, 1, 20)
    call = make_call("add", tensor_var((3,)), tensor_var((4,)), span=span)
    with pytest.raises(IRTypeError) as err:
        normalize(call)
    assert err.value.node is not None and err.value.span is span
    text = str(err.value)
    assert text.startswith("model.ir:1:9: R.add: shapes (3,) and (4,) do not broadcast")
    assert "^^^^" in text


def test_symbolic_broadcasting(n, m):
    # Equal variables broadcast to themselves; 1 broadcasts.
    assert inferred(ops.add(tensor_var((n, 256)), tensor_var((1, 256)))) == \
        'R.Tensor((n, 256), "float32")'
    assert inferred(ops.multiply(tensor_var((n, m)), tensor_var((n, 1)))) == \
        'R.Tensor((n, m), "float32")'
    # A symbolic dimension against a constant c != 1 can only be 1 or c: the result is c.
    assert inferred(ops.add(tensor_var((n, 1)), tensor_var((5, 7)))) == \
        'R.Tensor((5, 7), "float32")'
    # Two different symbolic dimensions: the rank is known, the shape is not.
    assert inferred(ops.add(tensor_var((n, 3)), tensor_var((m, 3)))) == \
        'R.Tensor(ndim=2, "float32")'
    # Equal expressions (not just equal variables) are recognized.
    assert inferred(ops.add(tensor_var((n * 4,)), tensor_var((4 * n,)))) == \
        'R.Tensor((n * 4,), "float32")'


def test_unknown_shapes_and_dtypes_propagate():
    a = Var(name_hint="a", struct_info=TensorStructInfo(dtype="float32", ndim=2))
    b = Var(name_hint="b", struct_info=TensorStructInfo(ndim=-1))
    assert inferred(ops.add(a, tensor_var((3,)))) == 'R.Tensor(ndim=2, "float32")'
    assert format_sinfo(normalize(ops.add(a, b)).struct_info) == "R.Tensor()"


def test_where():
    out = inferred(ops.where(tensor_var((2, 1), "bool"), tensor_var((2, 3)), tensor_var((3,))))
    assert out == 'R.Tensor((2, 3), "float32")'
    with pytest.raises(IRTypeError, match="the condition must be a bool tensor, got float32"):
        normalize(ops.where(tensor_var((3,)), tensor_var((3,)), tensor_var((3,))))
    with pytest.raises(IRTypeError, match=re.escape("dtypes float32 and int64 differ")):
        normalize(ops.where(tensor_var((3,), "bool"), tensor_var((3,)),
                            tensor_var((3,), "int64")))

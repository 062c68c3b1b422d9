"""Struct-info inference of the manipulation operators."""

import re

import pytest
from graph_helpers import inferred, tensor_var

from irc.ir import IRTypeError, ShapeExpr, ShapeStructInfo, Var, get_op_def, normalize, ops
from irc.ir.op import INJECTIVE
from irc.ir.struct_info_analysis import format_shape


def raises(message):
    return pytest.raises(IRTypeError, match=re.escape(message))


def test_reshape_static():
    x = tensor_var((2, 3))
    call = ops.reshape(x, (3, 2))
    assert isinstance(call.args[1], ShapeExpr)
    assert inferred(call) == 'R.Tensor((3, 2), "float32")'
    assert get_op_def("reshape").pattern == INJECTIVE
    with raises("R.reshape: cannot reshape (2, 3) (6 elements) to (4, 2) (8 elements)"):
        normalize(ops.reshape(x, (4, 2)))
    with raises("R.reshape: shape (-1, -1) has more than one -1"):
        normalize(ops.reshape(x, (-1, -1)))
    with raises("R.reshape: cannot reshape (2, 3) (6 elements) to (4, -1): 6 is not a "
                "multiple of 4"):
        normalize(ops.reshape(x, (4, -1)))


def test_reshape_minus_one_is_resolved_at_construction():
    call = ops.reshape(tensor_var((2, 3, 4)), (-1, 4))
    assert format_shape(call.args[1].values) == "(6, 4)"
    assert inferred(call) == 'R.Tensor((6, 4), "float32")'


def test_reshape_symbolic(n):
    x = tensor_var((n, 4, 784))
    assert inferred(ops.reshape(x, (n, -1))) == 'R.Tensor((n, 3136), "float32")'
    assert inferred(ops.reshape(x, (-1, 784))) == 'R.Tensor((n * 4, 784), "float32")'
    assert inferred(ops.reshape(x, (n * 4 * 784,))) == 'R.Tensor((n * 3136,), "float32")'
    # A shape only known by rank gives a result only known by rank.
    s = Var(name_hint="s", struct_info=ShapeStructInfo(ndim=3))
    assert inferred(ops.reshape(x, s)) == 'R.Tensor(ndim=3, "float32")'


def test_permute_expand_squeeze_flatten(n):
    x = tensor_var((1, 2, 3))
    assert inferred(ops.permute_dims(x)) == 'R.Tensor((3, 2, 1), "float32")'
    assert inferred(ops.permute_dims(x, [0, 2, 1])) == 'R.Tensor((1, 3, 2), "float32")'
    assert inferred(ops.permute_dims(x, [-1, 0, 1])) == 'R.Tensor((3, 1, 2), "float32")'
    with raises("R.permute_dims: axes [0, 2] must list each of the 3 axes"):
        normalize(ops.permute_dims(x, [0, 2]))
    with raises("R.permute_dims: axes [0, 0, 1] names an axis twice"):
        normalize(ops.permute_dims(x, [0, 0, 1]))
    assert inferred(ops.expand_dims(tensor_var((2, 3)), [0, -1])) == \
        'R.Tensor((1, 2, 3, 1), "float32")'
    assert inferred(ops.expand_dims(tensor_var((2, 3)), 1)) == 'R.Tensor((2, 1, 3), "float32")'
    assert inferred(ops.squeeze(tensor_var((1, 3, 1, n)))) == 'R.Tensor((3, n), "float32")'
    assert inferred(ops.squeeze(tensor_var((1, 3, 1)), axis=[0])) == \
        'R.Tensor((3, 1), "float32")'
    with raises("R.squeeze: cannot squeeze axis 1 of shape (1, 3, 1): its size is 3, not 1"):
        normalize(ops.squeeze(tensor_var((1, 3, 1)), axis=1))
    assert inferred(ops.flatten(tensor_var((n, 3, 4)))) == 'R.Tensor((n * 12,), "float32")'


def test_concat(n):
    parts = [tensor_var((1, 3)), tensor_var((2, 3)), tensor_var((n, 3))]
    assert inferred(ops.concat(parts)) == 'R.Tensor((n + 3, 3), "float32")'
    assert inferred(ops.concat([tensor_var((2, 3)), tensor_var((2, 4))], axis=-1)) == \
        'R.Tensor((2, 7), "float32")'
    with raises("R.concat: shapes (1, 3) and (2, 4) differ outside the concatenation axis 0"):
        normalize(ops.concat([tensor_var((1, 3)), tensor_var((2, 4))]))
    with raises("R.concat: tensors have different ranks [1, 2]"):
        normalize(ops.concat([tensor_var((3,)), tensor_var((2, 4))]))
    with raises("R.concat: dtypes float32 and int32 differ"):
        normalize(ops.concat([tensor_var((3,)), tensor_var((2,), "int32")]))


def test_split(n):
    assert inferred(ops.split(tensor_var((10, 4)), 2)) == \
        'R.Tuple(R.Tensor((5, 4), "float32"), R.Tensor((5, 4), "float32"))'
    assert inferred(ops.split(tensor_var((10, 4)), 3)) == ('R.Tuple(R.Tensor((4, 4), "float32"), '
                                                           'R.Tensor((4, 4), "float32"), '
                                                           'R.Tensor((2, 4), "float32"))')
    assert inferred(ops.split(tensor_var((4, 10)), [2, 5], axis=1)) == (
        'R.Tuple(R.Tensor((4, 2), "float32"), R.Tensor((4, 3), "float32"), '
        'R.Tensor((4, 5), "float32"))')
    assert inferred(ops.split(tensor_var((2 * n, 4)), 2)) == \
        'R.Tuple(R.Tensor((n, 4), "float32"), R.Tensor((n, 4), "float32"))'
    with raises("R.split: indices [5, 2] must be in increasing order"):
        normalize(ops.split(tensor_var((10,)), [5, 2]))


def test_strided_slice(n):
    x = tensor_var((10, 20))
    call = ops.strided_slice(x, axes=[0, 1], begin=[1, -5], end=[100, 2**31 - 1],
                             strides=[2, 1])
    assert inferred(call) == 'R.Tensor((5, 5), "float32")'
    assert inferred(ops.strided_slice(x, [1], [18], [2], [-3])) == 'R.Tensor((10, 6), "float32")'
    inbound = ops.strided_slice(tensor_var((n, 20)), [0], [2], [2**31 - 1],
                                assume_inbound=True)
    assert inferred(inbound) == 'R.Tensor((max(0, n - 2), 20), "float32")'
    with raises("R.strided_slice: axes, begin, end and strides must have the same length"):
        normalize(ops.strided_slice(x, [0], [1, 2], [3]))


def test_take_and_broadcast_to(n):
    table = tensor_var((100, 64))
    assert inferred(ops.take(table, tensor_var((1, n), "int64"), axis=0)) == \
        'R.Tensor((1, n, 64), "float32")'
    assert inferred(ops.take(table, tensor_var((7,), "int32"))) == 'R.Tensor((7,), "float32")'
    with raises("R.take: indices must be an integer tensor, got float32"):
        normalize(ops.take(table, tensor_var((3,)), axis=0))
    assert inferred(ops.broadcast_to(tensor_var((3, 1)), (2, 3, 4))) == \
        'R.Tensor((2, 3, 4), "float32")'
    with raises("R.broadcast_to: cannot broadcast (3, 2) to (2, 3, 4)"):
        normalize(ops.broadcast_to(tensor_var((3, 2)), (2, 3, 4)))


def test_tile_and_repeat():
    x = tensor_var((2, 3))
    assert inferred(ops.tile(x, 2)) == 'R.Tensor((2, 6), "float32")'
    assert inferred(ops.tile(x, [2, 1, 2])) == 'R.Tensor((2, 2, 6), "float32")'
    assert inferred(ops.repeat(x, 3, axis=0)) == 'R.Tensor((6, 3), "float32")'
    assert inferred(ops.repeat(x, 2)) == 'R.Tensor((12,), "float32")'
    with raises("R.repeat: axis 2 is out of range for a tensor of rank 2"):
        normalize(ops.repeat(x, 2, axis=2))

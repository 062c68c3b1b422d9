"""Struct-info inference of matmul/linear, convolution, pooling, softmax, normalization,
dropout and padding."""

import re

import pytest
from graph_helpers import inferred, tensor_var

from irc.ir import IRTypeError, get_op_def, make_call, normalize, ops
from irc.ir.op import OUT_ELEMWISE_FUSABLE


def raises(message):
    return pytest.raises(IRTypeError, match=re.escape(message))


# -- matmul / linear --------------------------------------------------------------------


@pytest.mark.parametrize("a, b, out", [
    ((1, 784), (784, 256), "(1, 256)"),
    ((2, 3, 4), (4, 5), "(2, 3, 5)"),
    ((2, 1, 3, 4), (7, 4, 5), "(2, 7, 3, 5)"),
    ((2, 3, 4), (4,), "(2, 3)"),
    ((4,), (7, 4, 5), "(7, 5)"),
    ((4,), (4,), "()"),
])
def test_matmul_numpy_semantics(a, b, out):
    assert inferred(ops.matmul(tensor_var(a), tensor_var(b))) == f'R.Tensor({out}, "float32")'


def test_matmul_symbolic_and_out_dtype(n):
    assert inferred(ops.matmul(tensor_var((n, 784)), tensor_var((784, 256)))) == \
        'R.Tensor((n, 256), "float32")'
    out = ops.matmul(tensor_var((2, 4), "int8"), tensor_var((4, 3), "int8"), out_dtype="int32")
    assert inferred(out) == 'R.Tensor((2, 3), "int32")'
    assert ops.matmul(tensor_var((2, 4)), tensor_var((4, 3))).attrs == {"out_dtype": "void"}
    assert ops.matmul(tensor_var((2, 4)), tensor_var((4, 3)), out_dtype=None).attrs == \
        {"out_dtype": "void"}
    assert get_op_def("matmul").pattern == OUT_ELEMWISE_FUSABLE


def test_matmul_errors(n):
    with raises("R.matmul: inner dimensions differ: (1, 784) @ (256, 10)"):
        normalize(ops.matmul(tensor_var((1, 784)), tensor_var((256, 10))))
    with raises("R.matmul: batch dimensions (2,) and (3,) do not broadcast"):
        normalize(ops.matmul(tensor_var((2, 4, 5)), tensor_var((3, 5, 6))))
    with raises("R.matmul: dtypes float32 and float16 differ"):
        normalize(ops.matmul(tensor_var((4, 5)), tensor_var((5, 6), "float16")))
    with raises("inner dimensions differ: (n, n + 1) @ (n, 3)"):
        normalize(ops.matmul(tensor_var((n, n + 1)), tensor_var((n, 3))))


def test_linear(n):
    x, w, b = tensor_var((n, 784)), tensor_var((256, 784)), tensor_var((256,))
    assert inferred(ops.linear(x, w, b)) == 'R.Tensor((n, 256), "float32")'
    no_bias = ops.linear(x, w)
    assert len(no_bias.args) == 2
    assert inferred(no_bias) == 'R.Tensor((n, 256), "float32")'
    with raises("R.linear: inner dimensions differ: (n, 784) @ (256, 78).T"):
        normalize(ops.linear(x, tensor_var((256, 78))))
    with raises("R.linear: shapes (n, 256) and (10,) do not broadcast"):
        normalize(ops.linear(x, w, tensor_var((10,))))


# -- convolution ----------------------------------------------------------------------


def test_conv2d_nchw_and_attribute_canonicalization():
    call = ops.nn.conv2d(tensor_var((1, 3, 224, 224)), tensor_var((64, 3, 7, 7)), strides=2,
                         padding=3)
    assert call.attrs == {"strides": (2, 2), "padding": (3, 3, 3, 3), "dilation": (1, 1),
                          "groups": 1, "data_layout": "NCHW", "kernel_layout": "OIHW",
                          "out_layout": "NCHW", "out_dtype": "void"}
    assert inferred(call) == 'R.Tensor((1, 64, 112, 112), "float32")'
    two = ops.nn.conv2d(tensor_var((1, 3, 10, 10)), tensor_var((8, 3, 3, 3)), padding=(1, 2))
    assert two.attrs["padding"] == (1, 2, 1, 2)
    assert inferred(two) == 'R.Tensor((1, 8, 10, 12), "float32")'
    four = ops.nn.conv2d(tensor_var((1, 3, 10, 10)), tensor_var((8, 3, 3, 3)),
                         padding=(0, 1, 2, 3))
    assert inferred(four) == 'R.Tensor((1, 8, 10, 12), "float32")'


def test_conv2d_nhwc_hwio_and_out_layout():
    x, w = tensor_var((1, 224, 224, 3)), tensor_var((7, 7, 3, 64))
    call = ops.nn.conv2d(x, w, strides=2, padding=3, data_layout="NHWC", kernel_layout="HWIO")
    assert inferred(call) == 'R.Tensor((1, 112, 112, 64), "float32")'
    ohwi = ops.nn.conv2d(x, tensor_var((64, 7, 7, 3)), strides=2, padding=3,
                         data_layout="NHWC", kernel_layout="OHWI", out_layout="NCHW")
    assert inferred(ohwi) == 'R.Tensor((1, 64, 112, 112), "float32")'


def test_conv2d_groups_dilation_symbolic(n):
    depthwise = ops.nn.conv2d(tensor_var((1, 32, n, n)), tensor_var((32, 1, 3, 3)),
                              padding=1, groups=32)
    assert inferred(depthwise) == 'R.Tensor((1, 32, n, n), "float32")'
    dilated = ops.nn.conv2d(tensor_var((1, 8, 56, 56)), tensor_var((8, 8, 3, 3)), padding=2,
                            dilation=2)
    assert inferred(dilated) == 'R.Tensor((1, 8, 56, 56), "float32")'
    strided = ops.nn.conv2d(tensor_var((n, 3, 2 * n, 32)), tensor_var((4, 3, 2, 2)),
                            strides=2)
    assert inferred(strided) == 'R.Tensor((n, 4, n, 16), "float32")'


def test_conv2d_errors():
    x = tensor_var((1, 3, 224, 224))
    with raises("R.nn.conv2d: input channels 3 do not match weight's 4 * groups 1"):
        normalize(ops.nn.conv2d(x, tensor_var((64, 4, 7, 7))))
    with raises("R.nn.conv2d: output channels 10 are not divisible by groups 3"):
        normalize(ops.nn.conv2d(tensor_var((1, 3, 8, 8)), tensor_var((10, 1, 3, 3)), groups=3))
    with raises("R.nn.conv2d: data (layout NCHW) must have rank 4, got R.Tensor((3, 224, 224)"):
        normalize(ops.nn.conv2d(tensor_var((3, 224, 224)), tensor_var((64, 3, 7, 7))))
    with raises("R.nn.conv2d: data_layout 'NCHW4c' is not supported"):
        normalize(ops.nn.conv2d(x, tensor_var((64, 3, 7, 7)), data_layout="NCHW4c"))
    with raises("R.nn.conv2d: output height would be -2: input height 4, window 7"):
        normalize(ops.nn.conv2d(tensor_var((1, 3, 4, 4)), tensor_var((2, 3, 7, 3))))
    with raises("R.nn.conv2d: attribute padding must be 1, 2 or 4 integers"):
        ops.nn.conv2d(x, tensor_var((64, 3, 7, 7)), padding=(1, 2, 3))
    with raises("R.nn.conv2d: attribute strides must be positive integers"):
        ops.nn.conv2d(x, tensor_var((64, 3, 7, 7)), strides=0)


def test_conv2d_transpose():
    call = ops.nn.conv2d_transpose(tensor_var((1, 16, 7, 7)), tensor_var((16, 8, 4, 4)),
                                   strides=2, padding=1)
    assert inferred(call) == 'R.Tensor((1, 8, 14, 14), "float32")'
    grouped = ops.nn.conv2d_transpose(tensor_var((1, 16, 7, 7)), tensor_var((16, 2, 3, 3)),
                                      strides=2, padding=1, output_padding=1, groups=4)
    assert inferred(grouped) == 'R.Tensor((1, 8, 14, 14), "float32")'
    with raises("R.nn.conv2d_transpose: input channels 16 do not match weight's input "
                "channels 8"):
        normalize(ops.nn.conv2d_transpose(tensor_var((1, 16, 7, 7)), tensor_var((8, 8, 4, 4))))


# -- pooling ---------------------------------------------------------------------------


def test_pooling():
    x = tensor_var((1, 64, 112, 112))
    call = ops.nn.max_pool2d(x, pool_size=3, strides=2, padding=1)
    assert call.attrs["pool_size"] == (3, 3) and call.attrs["out_layout"] == "NCHW"
    assert inferred(call) == 'R.Tensor((1, 64, 56, 56), "float32")'
    assert inferred(ops.nn.avg_pool2d(tensor_var((1, 64, 7, 7)), pool_size=2, strides=2)) == \
        'R.Tensor((1, 64, 3, 3), "float32")'
    assert inferred(ops.nn.avg_pool2d(tensor_var((1, 64, 7, 7)), pool_size=2, strides=2,
                                      ceil_mode=True)) == 'R.Tensor((1, 64, 4, 4), "float32")'
    nhwc = ops.nn.max_pool2d(tensor_var((1, 112, 112, 64)), pool_size=3, strides=2,
                             padding=1, layout="NHWC")
    assert inferred(nhwc) == 'R.Tensor((1, 56, 56, 64), "float32")'
    assert inferred(ops.nn.adaptive_avg_pool2d(tensor_var((1, 512, 7, 7)), 1)) == \
        'R.Tensor((1, 512, 1, 1), "float32")'
    assert inferred(ops.nn.adaptive_avg_pool2d(tensor_var((1, 512, 7, 7)))) == \
        'R.Tensor((1, 512, 7, 7), "float32")'
    with raises("R.nn.max_pool2d: output width would be 0"):
        normalize(ops.nn.max_pool2d(tensor_var((1, 1, 8, 2)), pool_size=3))


# -- softmax, normalization, dropout, pad -----------------------------------------------


def test_softmax_family():
    x = tensor_var((2, 10))
    assert inferred(ops.nn.softmax(x)) == 'R.Tensor((2, 10), "float32")'
    assert inferred(ops.nn.log_softmax(x, axis=0)) == 'R.Tensor((2, 10), "float32")'
    with raises("R.nn.softmax: axis 3 is out of range for a tensor of rank 2 (valid: -2 to 1)"):
        normalize(ops.nn.softmax(x, axis=3))
    with raises("R.nn.softmax: the input must have a floating-point dtype, got int32"):
        normalize(ops.nn.softmax(tensor_var((2,), "int32")))


def test_layer_norm_and_group_norm():
    x = tensor_var((1, 128, 256))
    assert inferred(ops.nn.layer_norm(x, tensor_var((256,)), tensor_var((256,)), axes=-1)) == \
        'R.Tensor((1, 128, 256), "float32")'
    both = ops.nn.layer_norm(x, tensor_var((128, 256)), tensor_var((128, 256)), axes=[1, 2])
    assert both.attrs == {"axes": (1, 2), "epsilon": 1e-5, "center": True, "scale": True}
    assert inferred(both) == 'R.Tensor((1, 128, 256), "float32")'
    with raises("R.nn.layer_norm: gamma must have shape (256,), got (255,)"):
        normalize(ops.nn.layer_norm(x, tensor_var((255,)), tensor_var((256,)), axes=[-1]))
    img = tensor_var((1, 64, 56, 56))
    call = ops.nn.group_norm(img, tensor_var((64,)), tensor_var((64,)), num_groups=32,
                             channel_axis=1, axes=[2, 3])
    assert inferred(call) == 'R.Tensor((1, 64, 56, 56), "float32")'
    with raises("R.nn.group_norm: channels 64 are not divisible by num_groups 5"):
        normalize(ops.nn.group_norm(img, tensor_var((64,)), tensor_var((64,)), num_groups=5,
                                    channel_axis=1, axes=[2, 3]))


def test_batch_norm_returns_a_tuple():
    x = tensor_var((1, 64, 56, 56))
    p = [tensor_var((64,), name=f"p{i}") for i in range(4)]
    call = ops.nn.batch_norm(x, *p, axis=1)
    assert inferred(call) == ('R.Tuple(R.Tensor((1, 64, 56, 56), "float32"), '
                              'R.Tensor((64,), "float32"), R.Tensor((64,), "float32"))')
    assert call.attrs["training"] is True and call.attrs["momentum"] == 0.1
    with raises("R.nn.batch_norm: moving_var must have shape (64,), got (32,)"):
        normalize(ops.nn.batch_norm(x, *p[:3], tensor_var((32,)), axis=1))
    with raises("R.nn.batch_norm needs the attribute 'axis'"):
        make_call("nn.batch_norm", x, *p)


def test_dropout_is_a_tuple_of_output_and_mask():
    assert inferred(ops.nn.dropout(tensor_var((1, 10)), 0.1)) == \
        'R.Tuple(R.Tensor((1, 10), "float32"), R.Tensor((1, 10), "float32"))'
    with raises("R.nn.dropout: rate must be in [0, 1), got 1.5"):
        normalize(ops.nn.dropout(tensor_var((1, 10)), 1.5))


def test_pad():
    x = tensor_var((1, 3, 4, 4))
    assert inferred(ops.nn.pad(x, [0, 0, 0, 0, 1, 1, 2, 2])) == \
        'R.Tensor((1, 3, 6, 8), "float32")'
    nested = ops.nn.pad(x, ((0, 0), (0, 0), (1, 1), (2, 2)), pad_mode="reflect")
    assert nested.attrs["pad_width"] == (0, 0, 0, 0, 1, 1, 2, 2)
    with raises("R.nn.pad: pad_width needs 2 values (before, after) per axis: 8 for a tensor "
                "of rank 4, got 2"):
        normalize(ops.nn.pad(x, [1, 1]))
    with raises("R.nn.pad: attribute pad_mode must be one of"):
        ops.nn.pad(x, [0] * 8, pad_mode="mirror")

"""Neural-network compute definitions: convolution (direct and Winograd), matrix
products, pooling, softmax, normalization, activations and padding."""

from ...te.tensor import Tensor
from ..elemwise import gelu, leaky_relu, relu, sigmoid, silu
from ..transform import flatten as _flatten
from .conv2d import (
    conv2d,
    conv2d_nchw,
    conv2d_nhwc,
    conv2d_transpose_nchw,
    depthwise_conv2d_nchw,
    depthwise_conv2d_nhwc,
    group_conv2d_nchw,
    group_conv2d_nhwc,
)
from .dense import batch_matmul, dense, matmul
from .norm import batch_norm, group_norm, layer_norm
from .pad import get_pad_tuple, pad
from .pooling import adaptive_pool, avg_pool2d, global_pool, max_pool2d, pool2d
from .softmax import log_softmax, softmax
from .winograd import (
    winograd_input_transform_nhwc,
    winograd_matrices,
    winograd_output_transform_nhwc,
    winograd_weight_transform,
)


def flatten(data: Tensor) -> Tensor:
    """``data`` as a 2-d tensor [batch, everything else]."""
    return _flatten(data, 1, -1) if data.ndim > 1 else _flatten(data)


__all__ = [
    "adaptive_pool", "avg_pool2d", "batch_matmul", "batch_norm", "conv2d", "conv2d_nchw",
    "conv2d_nhwc", "conv2d_transpose_nchw", "dense", "depthwise_conv2d_nchw",
    "depthwise_conv2d_nhwc", "flatten", "gelu", "get_pad_tuple", "global_pool",
    "group_conv2d_nchw", "group_conv2d_nhwc", "group_norm", "layer_norm", "leaky_relu",
    "log_softmax", "matmul", "max_pool2d", "pad", "pool2d", "relu", "sigmoid", "silu",
    "softmax", "winograd_input_transform_nhwc", "winograd_matrices",
    "winograd_output_transform_nhwc", "winograd_weight_transform",
]

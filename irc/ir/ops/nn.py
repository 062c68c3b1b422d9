"""Neural-network operators (``R.nn.*``): activations, softmax, normalizations,
dropout, padding, and (from :mod:`.nn_conv`) convolution and pooling.

``nn.dropout`` returns a tuple ``(output, mask)`` as TVM does; both fields have the
input's struct info. At inference it is the identity: take field 0.
``nn.batch_norm`` returns ``(output, new_mean, new_var)``.
"""

from __future__ import annotations

from typing import Any, Sequence

from ...tir.expr import PrimExpr
from ..expr import Call, Expr
from ..op import (
    ELEMWISE,
    INJECTIVE,
    OUT_ELEMWISE_FUSABLE,
    AttrSpec,
    conv_bool,
    conv_choice,
    conv_float,
    conv_int,
    make_call,
    register_op,
)
from ..struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from ..struct_info_analysis import const_value, format_shape, prove_not_equal
from ._common import (
    conv_axes_required,
    conv_pad_width,
    conv_positive_int,
    fail,
    normalize_axes,
    normalize_axis,
    require_float,
    same_dtype,
    tensor,
    tensor_arg,
)
from .nn_conv import adaptive_avg_pool2d, avg_pool2d, conv2d, conv2d_transpose, max_pool2d
from .unary import _register_unary, unary_builder

# Activations: name -> (needs a floating-point input, description)
_ACTIVATIONS = {
    "nn.relu": (False, "max(x, 0)"),
    "nn.gelu": (True, "x * Phi(x), Phi the standard normal CDF (exact, with erf)"),
    "nn.gelu_tanh": (True, "the tanh approximation of gelu"),
    "nn.silu": (True, "x * sigmoid(x)"),
}
for _name, (_float_only, _doc) in _ACTIVATIONS.items():
    _register_unary(_name, _float_only, _doc)

relu = unary_builder("nn.relu", _ACTIVATIONS["nn.relu"][1])
gelu = unary_builder("nn.gelu", _ACTIVATIONS["nn.gelu"][1])
gelu_tanh = unary_builder("nn.gelu_tanh", _ACTIVATIONS["nn.gelu_tanh"][1])
silu = unary_builder("nn.silu", _ACTIVATIONS["nn.silu"][1])


@register_op("nn.dropout", ["data"], [AttrSpec("rate", 0.5, conv_float)], pattern=ELEMWISE)
def _infer_dropout(call: Call, ctx: Any) -> StructInfo:
    """R.nn.dropout(data, rate=0.5): a tuple (output, mask); identity at inference."""
    x = tensor_arg(call, 0)
    rate = call.attrs["rate"]
    if not 0.0 <= rate < 1.0:
        raise fail(call, f"rate must be in [0, 1), got {rate}")
    return TupleStructInfo(fields=(x, x))


def _infer_softmax(call: Call, ctx: Any) -> StructInfo:
    x = tensor_arg(call, 0)
    require_float(call, x)
    if x.ndim >= 0:
        if x.ndim == 0:
            raise fail(call, "the input must have rank 1 or more")
        normalize_axis(call, call.attrs["axis"], x.ndim)
    return x


register_op("nn.softmax", ["data"], [AttrSpec("axis", -1, conv_int)],
            pattern=OUT_ELEMWISE_FUSABLE,
            doc="R.nn.softmax(data, axis=-1): exp(x) / sum(exp(x)) along axis.")(_infer_softmax)
register_op("nn.log_softmax", ["data"], [AttrSpec("axis", -1, conv_int)],
            pattern=OUT_ELEMWISE_FUSABLE,
            doc="R.nn.log_softmax(data, axis=-1): log of softmax along axis.")(_infer_softmax)


def _check_param(call: Call, i: int, expected: Sequence[PrimExpr] | None, dtype: str,
                 what: str) -> TensorStructInfo:
    p = tensor_arg(call, i)
    same_dtype(call, dtype, p.dtype)
    if expected is None:
        return p
    if p.ndim >= 0 and p.ndim != len(expected):
        raise fail(call, f"{what} must have shape {format_shape(expected)}, got rank {p.ndim}")
    if p.shape is not None and any(prove_not_equal(a, b) for a, b in zip(p.shape, expected)):
        raise fail(call, f"{what} must have shape {format_shape(expected)}, got "
                         f"{format_shape(p.shape)}")
    return p


_NORM_FLAGS = [
    AttrSpec("epsilon", 1e-5, conv_float),
    AttrSpec("center", True, conv_bool),
    AttrSpec("scale", True, conv_bool),
]


@register_op("nn.layer_norm", ["data", "gamma", "beta"],
             [AttrSpec("axes", convert=conv_axes_required), *_NORM_FLAGS],
             pattern=OUT_ELEMWISE_FUSABLE)
def _infer_layer_norm(call: Call, ctx: Any) -> StructInfo:
    """R.nn.layer_norm(data, gamma, beta, axes, epsilon=1e-5, center=True, scale=True):
    normalize over ``axes``; gamma and beta have the shape of those axes."""
    x = tensor_arg(call, 0)
    require_float(call, x)
    expected = None
    if x.ndim >= 0:
        axes = normalize_axes(call, call.attrs["axes"], x.ndim, "axes")
        if x.shape is not None:
            expected = tuple(x.shape[a] for a in axes)
    for i, what in ((1, "gamma"), (2, "beta")):
        _check_param(call, i, expected, x.dtype, what)
    return x


@register_op("nn.group_norm", ["data", "gamma", "beta"], [
    AttrSpec("num_groups", convert=conv_positive_int),
    AttrSpec("channel_axis", convert=conv_int),
    AttrSpec("axes", convert=conv_axes_required),
    *_NORM_FLAGS,
], pattern=OUT_ELEMWISE_FUSABLE)
def _infer_group_norm(call: Call, ctx: Any) -> StructInfo:
    """R.nn.group_norm(data, gamma, beta, num_groups, channel_axis, axes, ...): normalize
    each group of channels over ``axes``; gamma and beta have one value per channel."""
    x = tensor_arg(call, 0)
    require_float(call, x)
    expected = None
    if x.ndim >= 0:
        axis = normalize_axis(call, call.attrs["channel_axis"], x.ndim, "channel_axis")
        normalize_axes(call, call.attrs["axes"], x.ndim, "axes")
        if x.shape is not None:
            channels = x.shape[axis]
            groups = call.attrs["num_groups"]
            c = const_value(channels)
            if c is not None and c % groups:
                raise fail(call, f"channels {c} are not divisible by num_groups {groups}")
            expected = (channels,)
    for i, what in ((1, "gamma"), (2, "beta")):
        _check_param(call, i, expected, x.dtype, what)
    return x


@register_op("nn.batch_norm", ["data", "gamma", "beta", "moving_mean", "moving_var"], [
    AttrSpec("axis", convert=conv_int),
    AttrSpec("epsilon", 1e-5, conv_float),
    AttrSpec("center", True, conv_bool),
    AttrSpec("scale", True, conv_bool),
    AttrSpec("momentum", 0.1, conv_float),
    AttrSpec("training", True, conv_bool),
], pattern=OUT_ELEMWISE_FUSABLE)
def _infer_batch_norm(call: Call, ctx: Any) -> StructInfo:
    """R.nn.batch_norm(data, gamma, beta, moving_mean, moving_var, axis, ...): a tuple
    (output, new moving mean, new moving variance)."""
    x = tensor_arg(call, 0)
    require_float(call, x)
    expected = None
    if x.ndim >= 0:
        axis = normalize_axis(call, call.attrs["axis"], x.ndim)
        if x.shape is not None:
            expected = (x.shape[axis],)
    params = [_check_param(call, i, expected, x.dtype, what) for i, what in
              ((1, "gamma"), (2, "beta"), (3, "moving_mean"), (4, "moving_var"))]
    return TupleStructInfo(fields=(x, params[2], params[3]))


@register_op("nn.pad", ["data"], [
    AttrSpec("pad_width", convert=conv_pad_width),
    AttrSpec("pad_mode", "constant", conv_choice("constant", "reflect", "replicate",
                                                  "circular")),
    AttrSpec("pad_value", 0.0, conv_float),
], pattern=INJECTIVE)
def _infer_pad(call: Call, ctx: Any) -> StructInfo:
    """R.nn.pad(data, pad_width, pad_mode="constant", pad_value=0.0): ``pad_width`` lists
    (before, after) for every axis, flattened. ``pad_mode`` is ``"constant"``
    (``pad_value``), ``"reflect"`` (the mirror image without the edge element),
    ``"replicate"`` (the edge element repeated) or ``"circular"`` (the other end's
    elements). A negative width removes that many elements from that end first (ONNX's
    cropping); the padding then applies to what is left, so a reflect pad is at most its
    length - 1, and replicate and circular padding need at least one element."""
    x = tensor_arg(call, 0)
    widths = call.attrs["pad_width"]
    if x.ndim < 0:
        return x
    if len(widths) != 2 * x.ndim:
        raise fail(call, f"pad_width needs 2 values (before, after) per axis: {2 * x.ndim} for "
                         f"a tensor of rank {x.ndim}, got {len(widths)}")
    if x.shape is None:
        return x
    mode = call.attrs["pad_mode"]
    dims = []
    for k, d in enumerate(x.shape):
        before, after = widths[2 * k], widths[2 * k + 1]
        size = const_value(d)
        if size is not None:
            left = size - max(0, -before) - max(0, -after)
            if left < 0:
                raise fail(call, f"pad_width removes {max(0, -before) + max(0, -after)} "
                                 f"elements of axis {k}, which has {size}")
            most = max(before, after)
            if mode == "reflect" and most > left - 1:
                raise fail(call, f"reflect padding of axis {k} by {most} needs more than "
                                 f"{most} elements, it has {left}"
                                 + (" after cropping" if left != size else ""))
            if mode != "constant" and most > 0 and left == 0:
                raise fail(call, f"{mode} padding of axis {k}, which is empty")
        dims.append(d + before + after if before or after else d)
    return tensor(dims, x.dtype, vdevice=x.vdevice)


def dropout(data: Expr, rate: float = 0.5) -> Expr:
    """``R.nn.dropout(data, rate)``: a tuple (output, mask); identity at inference."""
    return make_call("nn.dropout", data, rate=rate)


def softmax(data: Expr, axis: int = -1) -> Expr:
    """``R.nn.softmax(data, axis)``."""
    return make_call("nn.softmax", data, axis=axis)


def log_softmax(data: Expr, axis: int = -1) -> Expr:
    """``R.nn.log_softmax(data, axis)``."""
    return make_call("nn.log_softmax", data, axis=axis)


def layer_norm(data: Expr, gamma: Expr, beta: Expr, axes: int | Sequence[int],
               epsilon: float = 1e-5, center: bool = True, scale: bool = True) -> Expr:
    """``R.nn.layer_norm``: normalization over ``axes`` with affine gamma/beta."""
    return make_call("nn.layer_norm", data, gamma, beta, axes=axes, epsilon=epsilon,
                     center=center, scale=scale)


def group_norm(data: Expr, gamma: Expr, beta: Expr, num_groups: int, channel_axis: int,
               axes: int | Sequence[int], epsilon: float = 1e-5, center: bool = True,
               scale: bool = True) -> Expr:
    """``R.nn.group_norm``: normalization of channel groups."""
    return make_call("nn.group_norm", data, gamma, beta, num_groups=num_groups,
                     channel_axis=channel_axis, axes=axes, epsilon=epsilon, center=center,
                     scale=scale)


def batch_norm(data: Expr, gamma: Expr, beta: Expr, moving_mean: Expr, moving_var: Expr,
               axis: int, epsilon: float = 1e-5, center: bool = True, scale: bool = True,
               momentum: float = 0.1, training: bool = True) -> Expr:
    """``R.nn.batch_norm``: a tuple (output, new mean, new variance)."""
    return make_call("nn.batch_norm", data, gamma, beta, moving_mean, moving_var, axis=axis,
                     epsilon=epsilon, center=center, scale=scale, momentum=momentum,
                     training=training)


def pad(data: Expr, pad_width: Sequence[int], pad_mode: str = "constant",
        pad_value: float = 0.0) -> Expr:
    """``R.nn.pad``: pad every axis by (before, after) widths."""
    return make_call("nn.pad", data, pad_width=pad_width, pad_mode=pad_mode,
                     pad_value=pad_value)


__all__ = [
    "relu", "gelu", "gelu_tanh", "silu", "dropout", "softmax", "log_softmax", "layer_norm",
    "group_norm", "batch_norm", "pad", "conv2d", "conv2d_transpose", "max_pool2d",
    "avg_pool2d", "adaptive_avg_pool2d",
]

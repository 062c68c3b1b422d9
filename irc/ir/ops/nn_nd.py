"""Convolution and pooling over any number of spatial axes (channel-first data
``(N, C, *spatial)``): ``nn.conv_nd``, ``nn.conv_transpose_nd``, ``nn.max_pool_nd``,
``nn.avg_pool_nd``, ``nn.lp_pool_nd``, ``nn.max_pool_nd_indices`` and
``nn.deform_conv2d``.

The 2-D operators of :mod:`.nn_conv` keep layouts and library dispatch; these take what
they do not: 1-D and 3-D (or more) data, grouped transposed convolutions, paddings given
per axis as (begins..., ends...) and possibly negative for transposed convolutions (an
ONNX ``output_shape`` larger than the natural one). Pooling's ceil mode drops a last
window that would start inside the end padding (as PyTorch and ONNX do). Every list
attribute has one entry per spatial axis (``padding`` two).
"""

from __future__ import annotations

from typing import Any

from ...tir.expr import PrimExpr, min_
from ..expr import Call, Expr
from ..op import (
    OUT_ELEMWISE_FUSABLE,
    AttrSpec,
    conv_bool,
    conv_dtype,
    conv_int,
    make_call,
    register_op,
)
from ..struct_info import StructInfo, TensorStructInfo
from ..struct_info_analysis import const_value, format_dim, prove_not_equal, simplify
from ._common import conv_int_list, conv_positive_int, fail, require_float, same_dtype, tensor_arg


def _spatial(call: Call, data: TensorStructInfo, names: tuple[str, ...]) -> int:
    """The number of spatial axes; checks each list attribute's length."""
    if data.ndim < 0:
        return -1
    if data.ndim < 3:
        raise fail(call, f"data must be (N, C, spatial...) of rank 3 or more, got rank "
                         f"{data.ndim}")
    k = data.ndim - 2
    for name in names:
        v = call.attrs[name]
        want = 2 * k if name == "padding" else k
        if len(v) != want:
            raise fail(call, f"{name} has {len(v)} entries; {want} expected for {k} spatial "
                             "axes")
        if name in ("strides", "dilation", "pool_size") and min(v) < 1:
            raise fail(call, f"{name} must be positive, got {list(v)}")
        if name in ("output_padding",) and min(v) < 0:
            raise fail(call, f"{name} must not be negative, got {list(v)}")
    return k


def _check_out(call: Call, out: PrimExpr, axis: int) -> PrimExpr:
    out = simplify(out)
    value = const_value(out)
    if value is not None and value <= 0:
        raise fail(call, f"output spatial axis {axis} would have size {value}",
                   hint="pad the input or use a smaller window")
    return out


_CONV_ATTRS = [
    AttrSpec("strides", (), conv_int_list),
    AttrSpec("padding", (), conv_int_list),
    AttrSpec("dilation", (), conv_int_list),
    AttrSpec("groups", 1, conv_positive_int),
    AttrSpec("out_dtype", "void", conv_dtype),
]


def _conv_dtype(call: Call, data: TensorStructInfo, weight: TensorStructInfo) -> str:
    out_dtype = call.attrs.get("out_dtype", "void")
    return out_dtype if out_dtype != "void" else same_dtype(call, data.dtype, weight.dtype)


@register_op("nn.conv_nd", ["data", "weight"], _CONV_ATTRS, pattern=OUT_ELEMWISE_FUSABLE)
def _infer_conv_nd(call: Call, ctx: Any) -> StructInfo:
    """R.nn.conv_nd(data, weight, strides, padding, dilation, groups, out_dtype): data
    (N, C, *S), weight (O, C / groups, *K)."""
    data, weight = tensor_arg(call, 0), tensor_arg(call, 1)
    dtype = _conv_dtype(call, data, weight)
    k = _spatial(call, data, ("strides", "padding", "dilation"))
    if k < 0 or data.shape is None or weight.shape is None:
        return TensorStructInfo(dtype=dtype, ndim=data.ndim, vdevice=data.vdevice)
    if weight.ndim != data.ndim:
        raise fail(call, f"weight has rank {weight.ndim}, the data {data.ndim}")
    groups = call.attrs["groups"]
    n, c = data.shape[:2]
    o, i = weight.shape[:2]
    if prove_not_equal(c, i * groups):
        raise fail(call, f"input channels {format_dim(c)} do not match weight's "
                         f"{format_dim(i)} * groups {groups}")
    o_value = const_value(o)
    if o_value is not None and o_value % groups:
        raise fail(call, f"output channels {o_value} are not divisible by groups {groups}")
    a = call.attrs
    out = [n, o]
    for ax in range(k):
        eff = (weight.shape[2 + ax] - 1) * a["dilation"][ax] + 1
        size = data.shape[2 + ax] + a["padding"][ax] + a["padding"][k + ax]
        out.append(_check_out(call, (size - eff) // a["strides"][ax] + 1, ax))
    return TensorStructInfo(shape=tuple(out), dtype=dtype, vdevice=data.vdevice)


@register_op("nn.conv_transpose_nd", ["data", "weight"], _CONV_ATTRS[:3] + [
    AttrSpec("output_padding", (), conv_int_list)] + _CONV_ATTRS[3:],
    pattern=OUT_ELEMWISE_FUSABLE)
def _infer_conv_transpose_nd(call: Call, ctx: Any) -> StructInfo:
    """R.nn.conv_transpose_nd(data, weight, strides, padding, dilation, output_padding,
    groups, out_dtype): data (N, C, *S), weight (C, O / groups, *K); output size ``(S - 1)
    * stride - pad_begin - pad_end + dilation * (K - 1) + output_padding + 1`` (paddings
    may be negative)."""
    data, weight = tensor_arg(call, 0), tensor_arg(call, 1)
    dtype = _conv_dtype(call, data, weight)
    k = _spatial(call, data, ("strides", "padding", "dilation", "output_padding"))
    if k < 0 or data.shape is None or weight.shape is None:
        return TensorStructInfo(dtype=dtype, ndim=data.ndim, vdevice=data.vdevice)
    if weight.ndim != data.ndim:
        raise fail(call, f"weight has rank {weight.ndim}, the data {data.ndim}")
    groups = call.attrs["groups"]
    n, c = data.shape[:2]
    i, o = weight.shape[:2]
    if prove_not_equal(c, i):
        raise fail(call, f"input channels {format_dim(c)} do not match weight's "
                         f"{format_dim(i)}")
    c_value = const_value(c)
    if c_value is not None and c_value % groups:
        raise fail(call, f"input channels {c_value} are not divisible by groups {groups}")
    a = call.attrs
    out = [n, simplify(o * groups)]
    for ax in range(k):
        s, d = a["strides"][ax], a["dilation"][ax]
        if a["output_padding"][ax] >= max(s, d):
            raise fail(call, f"output_padding {list(a['output_padding'])} must be smaller "
                             "than the stride or the dilation")
        out.append(_check_out(call, (data.shape[2 + ax] - 1) * s - a["padding"][ax]
                              - a["padding"][k + ax] + d * (weight.shape[2 + ax] - 1)
                              + a["output_padding"][ax] + 1, ax))
    return TensorStructInfo(shape=tuple(out), dtype=dtype, vdevice=data.vdevice)


_POOL_ATTRS = [
    AttrSpec("pool_size", (), conv_int_list),
    AttrSpec("strides", (), conv_int_list),
    AttrSpec("padding", (), conv_int_list),
    AttrSpec("dilation", (), conv_int_list),
    AttrSpec("ceil_mode", False, conv_bool),
]


def pool_out_size(size: PrimExpr, kernel: int, stride: int, dilation: int, begin: int,
                  end: int, ceil_mode: bool) -> PrimExpr:
    """Windows along one axis (see the module docstring for ceil mode)."""
    eff = (kernel - 1) * dilation + 1
    if not ceil_mode:
        return simplify((size + begin + end - eff) // stride + 1)
    out = simplify((size + begin + end - eff + stride - 1) // stride + 1)
    last_start = simplify((size + begin - 1) // stride + 1)
    o, m = const_value(out), const_value(last_start)
    if o is not None and m is not None:
        return out if o <= m else last_start
    return min_(out, last_start)


def _infer_pool_nd(dtype_of: Any) -> Any:
    def infer(call: Call, ctx: Any) -> StructInfo:
        data = tensor_arg(call, 0)
        if call.op.name == "nn.lp_pool_nd":
            require_float(call, data)
        dtype = dtype_of(data)
        k = _spatial(call, data, ("pool_size", "strides", "padding", "dilation"))
        if k < 0 or data.shape is None:
            return TensorStructInfo(dtype=dtype, ndim=data.ndim, vdevice=data.vdevice)
        a = call.attrs
        out = list(data.shape[:2])
        for ax in range(k):
            size = pool_out_size(data.shape[2 + ax], a["pool_size"][ax], a["strides"][ax],
                                 a["dilation"][ax], a["padding"][ax], a["padding"][k + ax],
                                 a["ceil_mode"])
            out.append(_check_out(call, size, ax))
        return TensorStructInfo(shape=tuple(out), dtype=dtype, vdevice=data.vdevice)

    return infer


def _same(data: TensorStructInfo) -> str:
    return data.dtype


register_op("nn.max_pool_nd", ["data"], _POOL_ATTRS, pattern=OUT_ELEMWISE_FUSABLE,
            doc="R.nn.max_pool_nd(data, pool_size, strides, padding, dilation, ceil_mode): "
                "max pooling over every spatial axis.")(_infer_pool_nd(_same))
register_op("nn.avg_pool_nd", ["data"], _POOL_ATTRS + [
    AttrSpec("count_include_pad", False, conv_bool)], pattern=OUT_ELEMWISE_FUSABLE,
    doc="R.nn.avg_pool_nd(data, pool_size, strides, padding, dilation, ceil_mode, "
        "count_include_pad): average pooling over every spatial axis.")(_infer_pool_nd(_same))
register_op("nn.lp_pool_nd", ["data"], _POOL_ATTRS + [AttrSpec("p", 2, conv_int)],
            pattern=OUT_ELEMWISE_FUSABLE,
            doc="R.nn.lp_pool_nd(data, pool_size, strides, padding, dilation, ceil_mode, p): "
                "the p-norm of every window.")(_infer_pool_nd(_same))
register_op("nn.max_pool_nd_indices", ["data"], _POOL_ATTRS + [
    AttrSpec("storage_order", 0, conv_int)], pattern=OUT_ELEMWISE_FUSABLE,
    doc="R.nn.max_pool_nd_indices(data, pool_size, strides, padding, dilation, ceil_mode, "
        "storage_order): where max_pool_nd found each maximum, as an int64 index into the "
        "flattened input (spatial cells column-major with storage_order=1)."
)(_infer_pool_nd(lambda data: "int64"))


@register_op("nn.deform_conv2d", ["data", "offset", "weight", "mask"], [
    AttrSpec("strides", (1, 1), conv_int_list),
    AttrSpec("padding", (0, 0, 0, 0), conv_int_list),
    AttrSpec("dilation", (1, 1), conv_int_list),
    AttrSpec("groups", 1, conv_positive_int),
    AttrSpec("offset_groups", 1, conv_positive_int),
], optional=["mask"], pattern=OUT_ELEMWISE_FUSABLE)
def _infer_deform_conv2d(call: Call, ctx: Any) -> StructInfo:
    """R.nn.deform_conv2d(data, offset, weight, mask=None, strides, padding, dilation,
    groups, offset_groups): deformable convolution; the output's spatial size is the
    offset's."""
    data, offset, weight = tensor_arg(call, 0), tensor_arg(call, 1), tensor_arg(call, 2)
    require_float(call, data)
    dtype = same_dtype(call, data.dtype, weight.dtype)
    for s, what in ((data, "data"), (offset, "offset"), (weight, "weight")):
        if s.ndim not in (-1, 4):
            raise fail(call, f"{what} must be 4-d, got rank {s.ndim}")
    if data.shape is None or offset.shape is None or weight.shape is None:
        return TensorStructInfo(dtype=dtype, ndim=4, vdevice=data.vdevice)
    n, c = data.shape[:2]
    if prove_not_equal(c, weight.shape[1] * call.attrs["groups"]):
        raise fail(call, f"input channels {format_dim(c)} do not match weight's "
                         f"{format_dim(weight.shape[1])} * groups {call.attrs['groups']}")
    return TensorStructInfo(shape=(n, weight.shape[0], offset.shape[2], offset.shape[3]),
                            dtype=dtype, vdevice=data.vdevice)


def conv_nd(data: Expr, weight: Expr, strides: Any, padding: Any, dilation: Any,
            groups: int = 1, out_dtype: str | None = None) -> Expr:
    """``R.nn.conv_nd``: convolution over every spatial axis."""
    return make_call("nn.conv_nd", data, weight, strides=strides, padding=padding,
                     dilation=dilation, groups=groups, out_dtype=out_dtype)


def conv_transpose_nd(data: Expr, weight: Expr, strides: Any, padding: Any, dilation: Any,
                      output_padding: Any, groups: int = 1,
                      out_dtype: str | None = None) -> Expr:
    """``R.nn.conv_transpose_nd``: transposed convolution over every spatial axis."""
    return make_call("nn.conv_transpose_nd", data, weight, strides=strides, padding=padding,
                     dilation=dilation, output_padding=output_padding, groups=groups,
                     out_dtype=out_dtype)


def max_pool_nd(data: Expr, pool_size: Any, strides: Any, padding: Any, dilation: Any,
                ceil_mode: bool = False) -> Expr:
    """``R.nn.max_pool_nd``."""
    return make_call("nn.max_pool_nd", data, pool_size=pool_size, strides=strides,
                     padding=padding, dilation=dilation, ceil_mode=ceil_mode)


def avg_pool_nd(data: Expr, pool_size: Any, strides: Any, padding: Any, dilation: Any,
                ceil_mode: bool = False, count_include_pad: bool = False) -> Expr:
    """``R.nn.avg_pool_nd``."""
    return make_call("nn.avg_pool_nd", data, pool_size=pool_size, strides=strides,
                     padding=padding, dilation=dilation, ceil_mode=ceil_mode,
                     count_include_pad=count_include_pad)


def lp_pool_nd(data: Expr, pool_size: Any, strides: Any, padding: Any, dilation: Any,
               ceil_mode: bool = False, p: int = 2) -> Expr:
    """``R.nn.lp_pool_nd``."""
    return make_call("nn.lp_pool_nd", data, pool_size=pool_size, strides=strides,
                     padding=padding, dilation=dilation, ceil_mode=ceil_mode, p=p)


def max_pool_nd_indices(data: Expr, pool_size: Any, strides: Any, padding: Any,
                        dilation: Any, ceil_mode: bool = False, storage_order: int = 0) -> Expr:
    """``R.nn.max_pool_nd_indices``."""
    return make_call("nn.max_pool_nd_indices", data, pool_size=pool_size, strides=strides,
                     padding=padding, dilation=dilation, ceil_mode=ceil_mode,
                     storage_order=storage_order)


def deform_conv2d(data: Expr, offset: Expr, weight: Expr, mask: Expr | None = None,
                  strides: Any = (1, 1), padding: Any = (0, 0, 0, 0), dilation: Any = (1, 1),
                  groups: int = 1, offset_groups: int = 1) -> Expr:
    """``R.nn.deform_conv2d``."""
    return make_call("nn.deform_conv2d", data, offset, weight, mask, strides=strides,
                     padding=padding, dilation=dilation, groups=groups,
                     offset_groups=offset_groups)


__all__ = ["avg_pool_nd", "conv_nd", "conv_transpose_nd", "deform_conv2d", "lp_pool_nd",
           "max_pool_nd", "max_pool_nd_indices", "pool_out_size"]

"""Convolution and pooling over 2-D images: ``nn.conv2d``, ``nn.conv2d_transpose``,
``nn.max_pool2d``, ``nn.avg_pool2d``, ``nn.adaptive_avg_pool2d``.

Layouts are permutations of the canonical letters (data/output ``NCHW``, conv kernel
``OIHW``, transposed-conv kernel ``IOHW``): ``NHWC`` data with an ``HWIO`` or ``OHWI``
kernel works the same way. Packed layouts such as ``NCHW4c`` are not supported.
Paddings are canonicalized to four values (top, left, bottom, right); an omitted
``out_layout`` becomes the data layout.
"""

from __future__ import annotations

from typing import Any, Sequence

from ...tir import expr as E
from ...tir.expr import PrimExpr
from ..expr import Call, Expr
from ..op import (
    OUT_ELEMWISE_FUSABLE,
    AttrSpec,
    conv_bool,
    conv_dtype,
    conv_layout,
    conv_opt_str,
    make_call,
    register_op,
)
from ..struct_info import StructInfo, TensorStructInfo
from ..struct_info_analysis import const_value, format_dim, prove_not_equal, simplify
from ._common import (
    conv_nonneg_pair,
    conv_padding2d,
    conv_positive_int,
    conv_positive_pair,
    fail,
    require_ndim,
    same_dtype,
    tensor_arg,
)


def conv_opt_pair(value: Any, op: str, attr: str) -> tuple[int, int] | None:
    """None, or 1 or 2 positive ints canonicalized to 2 (adaptive pooling's output size)."""
    return None if value is None else conv_positive_pair(value, op, attr)


def check_layout(call: Call, layout: str, canonical: str, attr: str) -> str:
    """Raise unless ``layout`` is a permutation of the letters of ``canonical``."""
    if sorted(layout) != sorted(canonical):
        raise fail(call, f"{attr} {layout!r} is not supported: expected a permutation of "
                         f"{canonical} such as {canonical!r}"
                         + (" or 'NHWC'" if canonical == "NCHW" else ""))
    return layout


def to_canonical(shape: Sequence[PrimExpr], layout: str, canonical: str) -> list[PrimExpr]:
    """Dimensions of ``shape`` (in ``layout``) reordered to ``canonical``."""
    return [shape[layout.index(c)] for c in canonical]


def from_canonical(dims: Sequence[PrimExpr], layout: str, canonical: str) -> tuple:
    """Dimensions in ``canonical`` order reordered to ``layout``."""
    return tuple(dims[canonical.index(c)] for c in layout)


def _with_out_layout(key: str):
    def canonicalize(operands: list, attrs: dict, sinfo_args: list) -> tuple:
        if attrs.get("out_layout") is None:
            attrs["out_layout"] = attrs[key]
        return operands, attrs, sinfo_args

    return canonicalize


def _spatial_out(call: Call, name: str, size: PrimExpr, kernel: PrimExpr, pad: int,
                 dilation: int, stride: int, ceil_mode: bool = False) -> PrimExpr:
    numerator = size + pad - dilation * (kernel - 1) - 1
    if ceil_mode:
        numerator = numerator + (stride - 1)
    out = simplify(numerator // stride + 1)
    value = const_value(out)
    if value is not None and value <= 0:
        raise fail(call, f"output {name} would be {value}: input {name} {format_dim(size)}, "
                         f"window {format_dim(kernel)} (dilation {dilation}), total padding "
                         f"{pad}, stride {stride}",
                   hint="pad the input or use a smaller window")
    return out


_CONV_ATTRS = [
    AttrSpec("strides", (1, 1), conv_positive_pair),
    AttrSpec("padding", (0, 0, 0, 0), conv_padding2d),
    AttrSpec("dilation", (1, 1), conv_positive_pair),
    AttrSpec("groups", 1, conv_positive_int),
    AttrSpec("data_layout", "NCHW", conv_layout),
    AttrSpec("kernel_layout", "OIHW", conv_layout),
    AttrSpec("out_layout", None, conv_opt_str),
    AttrSpec("out_dtype", "void", conv_dtype),
]


def _conv_common(call: Call, kernel_canonical: str) -> tuple:
    data, weight = tensor_arg(call, 0), tensor_arg(call, 1)
    attrs = call.attrs
    dl = check_layout(call, attrs["data_layout"], "NCHW", "data_layout")
    kl = check_layout(call, attrs["kernel_layout"], kernel_canonical, "kernel_layout")
    ol = check_layout(call, attrs["out_layout"] or dl, "NCHW", "out_layout")
    require_ndim(call, data, [4], f"data (layout {dl})")
    require_ndim(call, weight, [4], f"weight (layout {kl})")
    out_dtype = attrs.get("out_dtype", "void")
    dtype = out_dtype if out_dtype != "void" else same_dtype(call, data.dtype, weight.dtype)
    return data, weight, dl, kl, ol, dtype


@register_op("nn.conv2d", ["data", "weight"], _CONV_ATTRS, pattern=OUT_ELEMWISE_FUSABLE,
             extra={"canonicalize": _with_out_layout("data_layout")})
def _infer_conv2d(call: Call, ctx: Any) -> StructInfo:
    """R.nn.conv2d(data, weight, strides, padding, dilation, groups, data_layout,
    kernel_layout, out_layout, out_dtype): 2-D convolution."""
    data, weight, dl, kl, ol, dtype = _conv_common(call, "OIHW")
    vdevice = data.vdevice or weight.vdevice
    if data.shape is None or weight.shape is None:
        return TensorStructInfo(dtype=dtype, ndim=4, vdevice=vdevice)
    n, c, h, w = to_canonical(data.shape, dl, "NCHW")
    o, i, kh, kw = to_canonical(weight.shape, kl, "OIHW")
    groups = call.attrs["groups"]
    if prove_not_equal(c, i * groups):
        raise fail(call, f"input channels {format_dim(c)} do not match weight's "
                         f"{format_dim(i)} * groups {groups}")
    o_value = const_value(o)
    if o_value is not None and o_value % groups:
        raise fail(call, f"output channels {o_value} are not divisible by groups {groups}")
    pt, pl, pb, pr = call.attrs["padding"]
    sh, sw = call.attrs["strides"]
    dh, dw = call.attrs["dilation"]
    oh = _spatial_out(call, "height", h, kh, pt + pb, dh, sh)
    ow = _spatial_out(call, "width", w, kw, pl + pr, dw, sw)
    return TensorStructInfo(shape=from_canonical([n, o, oh, ow], ol, "NCHW"), dtype=dtype,
                            vdevice=vdevice)


@register_op("nn.conv2d_transpose", ["data", "weight"], [
    AttrSpec("strides", (1, 1), conv_positive_pair),
    AttrSpec("padding", (0, 0, 0, 0), conv_padding2d),
    AttrSpec("output_padding", (0, 0), conv_nonneg_pair),
    AttrSpec("dilation", (1, 1), conv_positive_pair),
    AttrSpec("groups", 1, conv_positive_int),
    AttrSpec("data_layout", "NCHW", conv_layout),
    AttrSpec("kernel_layout", "IOHW", conv_layout),
    AttrSpec("out_layout", None, conv_opt_str),
    AttrSpec("out_dtype", "void", conv_dtype),
], pattern=OUT_ELEMWISE_FUSABLE, extra={"canonicalize": _with_out_layout("data_layout")})
def _infer_conv2d_transpose(call: Call, ctx: Any) -> StructInfo:
    """R.nn.conv2d_transpose(data, weight, ...): the transpose (gradient) of conv2d;
    ``out = (in - 1) * stride - pad_before - pad_after + dilation * (k - 1) +
    output_padding + 1``."""
    data, weight, dl, kl, ol, dtype = _conv_common(call, "IOHW")
    vdevice = data.vdevice or weight.vdevice
    if data.shape is None or weight.shape is None:
        return TensorStructInfo(dtype=dtype, ndim=4, vdevice=vdevice)
    n, c, h, w = to_canonical(data.shape, dl, "NCHW")
    i, o, kh, kw = to_canonical(weight.shape, kl, "IOHW")
    groups = call.attrs["groups"]
    if prove_not_equal(c, i):
        raise fail(call, f"input channels {format_dim(c)} do not match weight's input "
                         f"channels {format_dim(i)}")
    c_value = const_value(c)
    if c_value is not None and c_value % groups:
        raise fail(call, f"input channels {c_value} are not divisible by groups {groups}")
    sh, sw = call.attrs["strides"]
    oph, opw = call.attrs["output_padding"]
    dh, dw = call.attrs["dilation"]
    if oph >= max(sh, dh) or opw >= max(sw, dw):
        raise fail(call, f"output_padding {call.attrs['output_padding']} must be smaller than "
                         f"the stride {call.attrs['strides']} or the dilation")
    pt, pl, pb, pr = call.attrs["padding"]
    oh = simplify((h - 1) * sh - pt - pb + dh * (kh - 1) + oph + 1)
    ow = simplify((w - 1) * sw - pl - pr + dw * (kw - 1) + opw + 1)
    for name, v in (("height", oh), ("width", ow)):
        value = const_value(v)
        if value is not None and value <= 0:
            raise fail(call, f"output {name} would be {value}; reduce the padding")
    return TensorStructInfo(shape=from_canonical([n, simplify(o * groups), oh, ow], ol, "NCHW"),
                            dtype=dtype, vdevice=vdevice)


_POOL_ATTRS = [
    AttrSpec("pool_size", (1, 1), conv_positive_pair),
    AttrSpec("strides", (1, 1), conv_positive_pair),
    AttrSpec("padding", (0, 0, 0, 0), conv_padding2d),
    AttrSpec("dilation", (1, 1), conv_positive_pair),
    AttrSpec("ceil_mode", False, conv_bool),
    AttrSpec("count_include_pad", False, conv_bool),
    AttrSpec("layout", "NCHW", conv_layout),
    AttrSpec("out_layout", None, conv_opt_str),
]


def _infer_pool2d(call: Call, ctx: Any) -> StructInfo:
    data = tensor_arg(call, 0)
    attrs = call.attrs
    layout = check_layout(call, attrs["layout"], "NCHW", "layout")
    ol = check_layout(call, attrs["out_layout"] or layout, "NCHW", "out_layout")
    require_ndim(call, data, [4], f"data (layout {layout})")
    if data.shape is None:
        return TensorStructInfo(dtype=data.dtype, ndim=4, vdevice=data.vdevice)
    n, c, h, w = to_canonical(data.shape, layout, "NCHW")
    kh, kw = attrs["pool_size"]
    pt, pl, pb, pr = attrs["padding"]
    sh, sw = attrs["strides"]
    dh, dw = attrs["dilation"]
    oh = _spatial_out(call, "height", h, kh, pt + pb, dh, sh, attrs["ceil_mode"])
    ow = _spatial_out(call, "width", w, kw, pl + pr, dw, sw, attrs["ceil_mode"])
    return TensorStructInfo(shape=from_canonical([n, c, oh, ow], ol, "NCHW"), dtype=data.dtype,
                            vdevice=data.vdevice)


register_op("nn.max_pool2d", ["data"], _POOL_ATTRS, pattern=OUT_ELEMWISE_FUSABLE,
            extra={"canonicalize": _with_out_layout("layout")},
            doc="R.nn.max_pool2d(data, pool_size, strides, padding, dilation, ceil_mode, "
                "count_include_pad, layout, out_layout): 2-D max pooling.")(_infer_pool2d)
register_op("nn.avg_pool2d", ["data"], _POOL_ATTRS, pattern=OUT_ELEMWISE_FUSABLE,
            extra={"canonicalize": _with_out_layout("layout")},
            doc="R.nn.avg_pool2d(data, pool_size, strides, padding, dilation, ceil_mode, "
                "count_include_pad, layout, out_layout): 2-D average pooling.")(_infer_pool2d)


@register_op("nn.adaptive_avg_pool2d", ["data"], [
    AttrSpec("output_size", None, conv_opt_pair),
    AttrSpec("layout", "NCHW", conv_layout),
    AttrSpec("out_layout", None, conv_opt_str),
], pattern=OUT_ELEMWISE_FUSABLE, extra={"canonicalize": _with_out_layout("layout")})
def _infer_adaptive_avg_pool2d(call: Call, ctx: Any) -> StructInfo:
    """R.nn.adaptive_avg_pool2d(data, output_size=None, layout, out_layout): average
    pooling to a fixed output size (None keeps the input's height and width)."""
    data = tensor_arg(call, 0)
    layout = check_layout(call, call.attrs["layout"], "NCHW", "layout")
    ol = check_layout(call, call.attrs["out_layout"] or layout, "NCHW", "out_layout")
    require_ndim(call, data, [4], f"data (layout {layout})")
    if data.shape is None:
        return TensorStructInfo(dtype=data.dtype, ndim=4, vdevice=data.vdevice)
    n, c, h, w = to_canonical(data.shape, layout, "NCHW")
    size = call.attrs["output_size"]
    if size is not None:
        h, w = E.const(size[0], "int64"), E.const(size[1], "int64")
    return TensorStructInfo(shape=from_canonical([n, c, h, w], ol, "NCHW"), dtype=data.dtype,
                            vdevice=data.vdevice)


def conv2d(data: Expr, weight: Expr, strides: Any = (1, 1), padding: Any = (0, 0),
           dilation: Any = (1, 1), groups: int = 1, data_layout: str = "NCHW",
           kernel_layout: str = "OIHW", out_layout: str | None = None,
           out_dtype: str | None = None) -> Expr:
    """``R.nn.conv2d``: 2-D convolution (padding: 1, 2 or 4 values)."""
    return make_call("nn.conv2d", data, weight, strides=strides, padding=padding,
                     dilation=dilation, groups=groups, data_layout=data_layout,
                     kernel_layout=kernel_layout, out_layout=out_layout, out_dtype=out_dtype)


def conv2d_transpose(data: Expr, weight: Expr, strides: Any = (1, 1), padding: Any = (0, 0),
                     output_padding: Any = (0, 0), dilation: Any = (1, 1), groups: int = 1,
                     data_layout: str = "NCHW", kernel_layout: str = "IOHW",
                     out_layout: str | None = None, out_dtype: str | None = None) -> Expr:
    """``R.nn.conv2d_transpose``: transposed 2-D convolution."""
    return make_call("nn.conv2d_transpose", data, weight, strides=strides, padding=padding,
                     output_padding=output_padding, dilation=dilation, groups=groups,
                     data_layout=data_layout, kernel_layout=kernel_layout,
                     out_layout=out_layout, out_dtype=out_dtype)


def max_pool2d(data: Expr, pool_size: Any = (1, 1), strides: Any = (1, 1),
               padding: Any = (0, 0), dilation: Any = (1, 1), ceil_mode: bool = False,
               count_include_pad: bool = False, layout: str = "NCHW",
               out_layout: str | None = None) -> Expr:
    """``R.nn.max_pool2d``: 2-D max pooling."""
    return make_call("nn.max_pool2d", data, pool_size=pool_size, strides=strides,
                     padding=padding, dilation=dilation, ceil_mode=ceil_mode,
                     count_include_pad=count_include_pad, layout=layout, out_layout=out_layout)


def avg_pool2d(data: Expr, pool_size: Any = (1, 1), strides: Any = (1, 1),
               padding: Any = (0, 0), dilation: Any = (1, 1), ceil_mode: bool = False,
               count_include_pad: bool = False, layout: str = "NCHW",
               out_layout: str | None = None) -> Expr:
    """``R.nn.avg_pool2d``: 2-D average pooling."""
    return make_call("nn.avg_pool2d", data, pool_size=pool_size, strides=strides,
                     padding=padding, dilation=dilation, ceil_mode=ceil_mode,
                     count_include_pad=count_include_pad, layout=layout, out_layout=out_layout)


def adaptive_avg_pool2d(data: Expr, output_size: Any = None, layout: str = "NCHW",
                        out_layout: str | None = None) -> Expr:
    """``R.nn.adaptive_avg_pool2d``: average pooling to ``output_size``."""
    return make_call("nn.adaptive_avg_pool2d", data, output_size=output_size, layout=layout,
                     out_layout=out_layout)


__all__ = ["conv2d", "conv2d_transpose", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"]

"""Image operators (``R.image.*``): ``image.resize`` (nearest, linear and cubic
interpolation over any axes, ONNX's coordinate transformations, antialiasing) and
``image.grid_sample`` (sampling at normalized coordinates, any number of spatial axes),
``image.col2im`` (sliding blocks summed back into images), ``image.roi_align``.

``image.resize(data, scale_values=None, roi_values=None, axes, sizes, ...)`` resizes the
listed ``axes`` to ``sizes``. The scale of each resized axis (which the coordinate
transformation uses, and which need not be ``size / input size``) is the attribute
``scales`` or, when known only at run time, the operand ``scale_values`` (a 1-D float
tensor, one value per resized axis); ``tf_crop_and_resize``'s region of interest likewise
(attribute ``roi`` or operand ``roi_values``: the starts, then the ends). Scales that are
ratios of integers (ONNX's ``sizes`` over the input sizes) are also given exactly, as
``scale_ratios`` (the numerators, then the denominators), which the coordinate
transformation uses in place of their rounded ``scales``.
"""

from __future__ import annotations

from typing import Any, Sequence

from ...core import dtype as dt
from ...core.diagnostics import IRTypeError
from ..expr import Call, Expr
from ..op import (
    OUT_ELEMWISE_FUSABLE,
    AttrSpec,
    _err,
    conv_bool,
    conv_choice,
    conv_float,
    make_call,
    register_op,
)
from ..struct_info import StructInfo, TensorStructInfo
from ..struct_info_analysis import const_value
from ._common import (
    conv_int_list,
    conv_positive_int,
    fail,
    normalize_axes,
    tensor,
    tensor_arg,
)

COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                    "align_corners", "asymmetric", "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def conv_float_list(value: Any, op: str, attr: str) -> tuple[float, ...]:
    """A number or a list of numbers, canonicalized to a tuple of floats."""
    items = value if isinstance(value, (list, tuple)) else [value]
    return tuple(conv_float(v, op, attr) for v in items)


def conv_sizes(value: Any, op: str, attr: str) -> tuple[int, ...]:
    """Non-negative ints."""
    v = conv_int_list(value, op, attr)
    if any(s < 0 for s in v):
        raise _err(op, attr, "non-negative integers", value)
    return v


def _check_vector(call: Call, i: int, length: int, what: str) -> None:
    s = tensor_arg(call, i)
    if s.dtype and not dt.is_float(s.dtype):
        raise fail(call, f"{what} must be a floating-point tensor, got {s.dtype}")
    if s.ndim >= 0 and s.ndim != 1:
        raise fail(call, f"{what} must be 1-D, got rank {s.ndim}")
    n = const_value(s.shape[0]) if s.shape is not None else None
    if n is not None and n != length:
        raise fail(call, f"{what} must have {length} values, got {n}")


@register_op("image.resize", ["data", "scale_values", "roi_values"], [
    AttrSpec("axes", convert=conv_int_list),
    AttrSpec("sizes", convert=conv_sizes),
    AttrSpec("scales", (), conv_float_list),
    AttrSpec("scale_ratios", (), conv_int_list),
    AttrSpec("roi", (), conv_float_list),
    AttrSpec("method", "nearest", conv_choice("nearest", "linear", "cubic")),
    AttrSpec("coordinate_transformation_mode", "half_pixel",
             conv_choice(*COORDINATE_MODES)),
    AttrSpec("nearest_mode", "round_prefer_floor", conv_choice(*NEAREST_MODES)),
    AttrSpec("cubic_coeff_a", -0.75, conv_float),
    AttrSpec("exclude_outside", False, conv_bool),
    AttrSpec("extrapolation_value", 0.0, conv_float),
    AttrSpec("antialias", False, conv_bool),
    AttrSpec("min_scales", (), conv_float_list),
], pattern=OUT_ELEMWISE_FUSABLE, optional=["scale_values", "roi_values"])
def _infer_resize(call: Call, ctx: Any) -> StructInfo:
    """R.image.resize(data, scale_values=None, roi_values=None, axes, sizes, scales=(),
    scale_ratios=(), roi=(), method="nearest", ...): ``data`` with ``axes`` resized to
    ``sizes``."""
    x = tensor_arg(call, 0)
    a = call.attrs
    k = len(a["axes"])
    if len(a["sizes"]) != k:
        raise fail(call, f"sizes has {len(a['sizes'])} values for {k} axes")
    if len(call.args) > 1:
        _check_vector(call, 1, k, "scale_values")
    elif len(a["scales"]) != k:
        raise fail(call, f"scales has {len(a['scales'])} values for {k} axes")
    elif any(s <= 0 for s in a["scales"]):
        raise fail(call, f"scales must be positive, got {list(a['scales'])}")
    ratios = a["scale_ratios"]
    if ratios and (len(call.args) > 1 or len(ratios) != 2 * k or
                   any(v <= 0 for v in ratios)):
        raise fail(call, f"scale_ratios must be {k} positive numerators, then {k} positive "
                         f"denominators, of the attribute scales; got {list(ratios)}")
    if a["coordinate_transformation_mode"] == "tf_crop_and_resize":
        if len(call.args) > 2:
            _check_vector(call, 2, 2 * k, "roi_values")
        elif len(a["roi"]) != 2 * k:
            raise fail(call, f"tf_crop_and_resize needs a roi of {2 * k} values (starts, "
                             f"then ends), got {len(a['roi'])}")
    if a["antialias"] and a["method"] == "nearest":
        raise fail(call, "antialias applies to linear and cubic resizing, not nearest")
    if a["antialias"] and len(call.args) > 1 and len(a["min_scales"]) != k:
        raise fail(call, "antialiasing with run-time scales needs min_scales (a lower "
                         "bound of each scale)")
    if a["method"] != "nearest" and x.dtype and not (
            dt.is_float(x.dtype) or dt.is_integer(x.dtype)):
        raise fail(call, f"{a['method']} resizing needs numeric data, got {x.dtype}")
    if x.ndim < 0:
        return x
    axes = normalize_axes(call, a["axes"], x.ndim, "axes")
    if x.shape is None:
        return TensorStructInfo(dtype=x.dtype, ndim=x.ndim, vdevice=x.vdevice)
    dims = list(x.shape)
    for axis, size in zip(axes, a["sizes"]):
        dims[axis] = size
    return tensor(dims, x.dtype, vdevice=x.vdevice)


def resize(data: Expr, axes: Sequence[int], sizes: Sequence[int],
           scales: Sequence[float] | Expr = (), roi: Sequence[float] | Expr = (),
           method: str = "nearest", coordinate_transformation_mode: str = "half_pixel",
           nearest_mode: str = "round_prefer_floor", cubic_coeff_a: float = -0.75,
           exclude_outside: bool = False, extrapolation_value: float = 0.0,
           antialias: bool = False, min_scales: Sequence[float] = (),
           scale_ratios: Sequence[int] = ()) -> Expr:
    """``R.image.resize``: ``scales`` and ``roi`` are floats (attributes) or 1-D tensors
    read at run time (operands); ``scale_ratios`` the exact attribute scales as numerators
    then denominators, when they are ratios of integers."""
    scale_operand = scales if isinstance(scales, Expr) else None
    roi_operand = roi if isinstance(roi, Expr) else None
    if roi_operand is not None and scale_operand is None:
        raise IRTypeError("R.image.resize: a run-time roi needs the scales as a tensor too")
    return make_call("image.resize", data, scale_operand, roi_operand, axes=axes,
                     sizes=sizes, scales=() if scale_operand is not None else scales,
                     scale_ratios=scale_ratios,
                     roi=() if roi_operand is not None else roi, method=method,
                     coordinate_transformation_mode=coordinate_transformation_mode,
                     nearest_mode=nearest_mode, cubic_coeff_a=cubic_coeff_a,
                     exclude_outside=exclude_outside,
                     extrapolation_value=extrapolation_value, antialias=antialias,
                     min_scales=min_scales)


@register_op("image.grid_sample", ["data", "grid"], [
    AttrSpec("method", "linear", conv_choice("nearest", "linear", "cubic")),
    AttrSpec("padding_mode", "zeros", conv_choice("zeros", "border", "reflection")),
    AttrSpec("align_corners", False, conv_bool),
], pattern=OUT_ELEMWISE_FUSABLE)
def _infer_grid_sample(call: Call, ctx: Any) -> StructInfo:
    """R.image.grid_sample(data, grid, method="linear", padding_mode="zeros",
    align_corners=False): ``data`` (N, C, D1..Dk) sampled at ``grid`` (N, O1..Ok, k), the
    grid's last axis listing normalized coordinates innermost dimension first; the result
    is (N, C, O1..Ok)."""
    x, g = tensor_arg(call, 0), tensor_arg(call, 1)
    if g.dtype and not dt.is_float(g.dtype):
        raise fail(call, f"the grid must be floating-point, got {g.dtype}")
    if x.ndim >= 0 and x.ndim < 3:
        raise fail(call, f"data must have rank 3 or more (N, C, spatial...), got {x.ndim}")
    if x.ndim >= 0 and g.ndim >= 0 and g.ndim != x.ndim:
        raise fail(call, f"the grid must have the rank of data ({x.ndim}), got {g.ndim}")
    if x.shape is None or g.shape is None:
        return TensorStructInfo(dtype=x.dtype, ndim=x.ndim, vdevice=x.vdevice)
    last = const_value(g.shape[-1])
    if last is not None and last != x.ndim - 2:
        raise fail(call, f"the grid's last axis must hold {x.ndim - 2} coordinates, got "
                         f"{last}")
    return tensor([x.shape[0], x.shape[1], *g.shape[1:-1]], x.dtype, vdevice=x.vdevice)


def grid_sample(data: Expr, grid: Expr, method: str = "linear", padding_mode: str = "zeros",
                align_corners: bool = False) -> Expr:
    """``R.image.grid_sample``: ``data`` sampled at the normalized coordinates of
    ``grid``."""
    return make_call("image.grid_sample", data, grid, method=method,
                     padding_mode=padding_mode, align_corners=align_corners)


def conv_positive_ints(value: Any, op: str, attr: str) -> tuple[int, ...]:
    """Positive ints."""
    v = conv_int_list(value, op, attr)
    if any(s < 1 for s in v):
        raise _err(op, attr, "positive integers", value)
    return v


@register_op("image.col2im", ["data", "block_values"], [
    AttrSpec("image_shape", convert=conv_positive_ints),
    AttrSpec("channels", convert=conv_positive_int),
    AttrSpec("block_shape", (), conv_positive_ints),
    AttrSpec("strides", (), conv_positive_ints),
    AttrSpec("pads", (), conv_sizes),
    AttrSpec("dilations", (), conv_positive_ints),
], pattern=OUT_ELEMWISE_FUSABLE, optional=["block_values"])
def _infer_col2im(call: Call, ctx: Any) -> StructInfo:
    """R.image.col2im(data, block_values=None, image_shape, channels, block_shape=(),
    strides=(), pads=(), dilations=()): the sliding blocks of ``data`` (N, C * prod(block),
    L) summed into images (N, C, *image_shape); the block shape is the attribute or, known
    only at run time, the 1-D integer operand ``block_values``."""
    x = tensor_arg(call, 0)
    a = call.attrs
    k = len(a["image_shape"])
    for name, n in (("strides", k), ("dilations", k), ("pads", 2 * k)):
        if len(a[name]) != n:
            raise fail(call, f"{name} needs {n} values for {k} spatial axes, got "
                             f"{len(a[name])}")
    if len(call.args) > 1:
        b = tensor_arg(call, 1)
        if b.dtype and not dt.is_integer(b.dtype):
            raise fail(call, f"block_values must be integers, got {b.dtype}")
    elif len(a["block_shape"]) != k:
        raise fail(call, f"block_shape needs {k} values, got {len(a['block_shape'])}")
    if x.ndim >= 0 and x.ndim != 3:
        raise fail(call, f"data must be 3-D (N, C * prod(block_shape), L), got rank {x.ndim}")
    if x.shape is None:
        return TensorStructInfo(dtype=x.dtype, ndim=k + 2, vdevice=x.vdevice)
    ck = const_value(x.shape[1])
    per = a["channels"]
    if ck is None or ck % per:
        raise fail(call, f"dimension 1 of data ({x.shape[1]}) must be a static multiple of "
                         f"the {per} channels")
    if len(call.args) == 1:
        kprod = 1
        for v in a["block_shape"]:
            kprod *= v
        if ck != per * kprod:
            raise fail(call, f"dimension 1 of data ({ck}) must be channels x prod(block_shape)"
                             f" = {per * kprod}")
    return tensor([x.shape[0], per, *a["image_shape"]], x.dtype, vdevice=x.vdevice)


def col2im(data: Expr, image_shape: Sequence[int], channels: int,
           block_shape: Sequence[int] | Expr, strides: Sequence[int], pads: Sequence[int],
           dilations: Sequence[int]) -> Expr:
    """``R.image.col2im``: ``block_shape`` ints (an attribute) or a 1-D integer tensor."""
    operand = block_shape if isinstance(block_shape, Expr) else None
    return make_call("image.col2im", data, operand, image_shape=image_shape,
                     channels=channels, block_shape=() if operand is not None else block_shape,
                     strides=strides, pads=pads, dilations=dilations)


@register_op("image.roi_align", ["data", "rois", "batch_indices"], [
    AttrSpec("output_size", convert=conv_positive_ints),
    AttrSpec("spatial_scale", 1.0, conv_float),
    AttrSpec("sampling_ratio", convert=conv_positive_int),
    AttrSpec("mode", "avg", conv_choice("avg", "max")),
    AttrSpec("half_pixel", True, conv_bool),
], pattern=OUT_ELEMWISE_FUSABLE)
def _infer_roi_align(call: Call, ctx: Any) -> StructInfo:
    """R.image.roi_align(data, rois, batch_indices, output_size, spatial_scale=1.0,
    sampling_ratio, mode="avg", half_pixel=True): for each region (x1, y1, x2, y2) of
    ``rois`` (R, 4) in image ``batch_indices[r]`` of ``data`` (N, C, H, W), the pooled
    bilinear samples (R, C, out_h, out_w)."""
    x, rois, idx = tensor_arg(call, 0), tensor_arg(call, 1), tensor_arg(call, 2)
    if len(call.attrs["output_size"]) != 2:
        raise fail(call, "output_size needs 2 values (height, width)")
    if x.ndim >= 0 and x.ndim != 4:
        raise fail(call, f"data must be 4-D (N, C, H, W), got rank {x.ndim}")
    if rois.ndim >= 0 and rois.ndim != 2:
        raise fail(call, f"rois must be 2-D (R, 4), got rank {rois.ndim}")
    if rois.dtype and not dt.is_float(rois.dtype):
        raise fail(call, f"rois must be floating-point, got {rois.dtype}")
    if idx.dtype and not dt.is_integer(idx.dtype):
        raise fail(call, f"batch_indices must be integers, got {idx.dtype}")
    if x.shape is None or rois.shape is None:
        return TensorStructInfo(dtype=x.dtype, ndim=4, vdevice=x.vdevice)
    return tensor([rois.shape[0], x.shape[1], *call.attrs["output_size"]], x.dtype,
                  vdevice=x.vdevice)


def roi_align(data: Expr, rois: Expr, batch_indices: Expr, output_size: Sequence[int],
              spatial_scale: float = 1.0, sampling_ratio: int = 2, mode: str = "avg",
              half_pixel: bool = True) -> Expr:
    """``R.image.roi_align``."""
    return make_call("image.roi_align", data, rois, batch_indices, output_size=output_size,
                     spatial_scale=spatial_scale, sampling_ratio=sampling_ratio, mode=mode,
                     half_pixel=half_pixel)


__all__ = ["resize", "grid_sample", "col2im", "roi_align"]

"""Legalization rules of the image operators (``R.image.*``, :mod:`irc.ir.ops.image`) to
the computations of :mod:`irc.tir.topi.image`; registered in ``RULES`` when imported."""

from __future__ import annotations

from ...ir.expr import Call, Expr
from ...tir.topi import image as topi_image
from ...tir.topi import index as topi_index
from .context import LegalizeContext
from .rules import rule
from .rules_index import checked_indices


@rule("image.resize")
def _resize(ctx: LegalizeContext, call: Call) -> Expr:
    a = call.attrs
    args = list(call.args)
    scales = args[1] if len(args) > 1 else list(a["scales"])
    roi = args[2] if len(args) > 2 else (list(a["roi"]) or None)
    return ctx.call_te(
        topi_image.resize, args[0], list(a["axes"]), list(a["sizes"]), scales, roi,
        method=a["method"], coordinate_transformation_mode=a["coordinate_transformation_mode"],
        nearest_mode=a["nearest_mode"], cubic_coeff_a=a["cubic_coeff_a"],
        exclude_outside=a["exclude_outside"], extrapolation_value=a["extrapolation_value"],
        antialias=a["antialias"], min_scales=list(a["min_scales"]) or None,
        scale_ratios=list(a["scale_ratios"]), name="resize")


@rule("image.grid_sample")
def _grid_sample(ctx: LegalizeContext, call: Call) -> Expr:
    a = call.attrs
    return ctx.call_te(topi_image.grid_sample, call.args[0], call.args[1], method=a["method"],
                       padding_mode=a["padding_mode"], align_corners=a["align_corners"],
                       name="grid_sample")


@rule("image.col2im")
def _col2im(ctx: LegalizeContext, call: Call) -> Expr:
    a = call.attrs
    blocks = call.args[1] if len(call.args) > 1 else list(a["block_shape"])
    return ctx.call_te(topi_image.col2im, call.args[0], list(a["image_shape"]), blocks,
                       a["channels"], list(a["strides"]), list(a["pads"]),
                       list(a["dilations"]), name="col2im")


@rule("image.roi_align")
def _roi_align(ctx: LegalizeContext, call: Call) -> Expr:
    a = call.attrs
    batch = checked_indices(ctx, call, lambda d, v, o, what: topi_index.check_in_range(
        v, o, 0, d.shape[0] - 1, what, "batch index"), data_pos=0, index_pos=2)
    return ctx.call_te(topi_image.roi_align, call.args[0], call.args[1], batch,
                       list(a["output_size"]), a["spatial_scale"], a["sampling_ratio"],
                       mode=a["mode"], half_pixel=a["half_pixel"], name="roi_align")

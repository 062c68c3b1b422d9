"""Legalization rules of the N-d convolution and pooling operators (``irc/ir/ops/nn_nd.py``)
to the computes of ``irc.tir.topi.nn.spatial_nd``; registered in :data:`.rules.RULES` when
this module is imported."""

from __future__ import annotations

from ...ir.expr import Call, Expr
from ...tir.topi.nn import spatial_nd
from .context import LegalizeContext
from .rules import rule


def _out_dtype(call: Call) -> str | None:
    d = call.attrs.get("out_dtype", "void")
    return None if d in (None, "void", "") else d


@rule("nn.conv_nd")
def _conv_nd(ctx: LegalizeContext, call: Call) -> Expr:
    a = call.attrs
    return ctx.call_te(spatial_nd.conv_nd, call.args[0], call.args[1], a["strides"],
                       a["padding"], a["dilation"], a["groups"], out_dtype=_out_dtype(call),
                       name="conv_nd")


@rule("nn.conv_transpose_nd")
def _conv_transpose_nd(ctx: LegalizeContext, call: Call) -> Expr:
    a = call.attrs
    return ctx.call_te(spatial_nd.conv_transpose_nd, call.args[0], call.args[1],
                       a["strides"], a["padding"], a["output_padding"], a["dilation"],
                       a["groups"], out_dtype=_out_dtype(call), name="conv_transpose_nd")


def _pool_args(call: Call) -> tuple:
    a = call.attrs
    return a["pool_size"], a["strides"], a["padding"], a["dilation"], a["ceil_mode"]


@rule("nn.max_pool_nd")
def _max_pool_nd(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(spatial_nd.max_pool_nd, call.args[0], *_pool_args(call),
                       name="max_pool_nd")


@rule("nn.avg_pool_nd")
def _avg_pool_nd(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(spatial_nd.avg_pool_nd, call.args[0], *_pool_args(call),
                       count_include_pad=call.attrs["count_include_pad"], name="avg_pool_nd")


@rule("nn.lp_pool_nd")
def _lp_pool_nd(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(spatial_nd.lp_pool_nd, call.args[0], *_pool_args(call),
                       p=call.attrs["p"], name="lp_pool_nd")


@rule("nn.max_pool_nd_indices")
def _max_pool_nd_indices(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(spatial_nd.max_pool_nd_indices, call.args[0], *_pool_args(call),
                       storage_order=call.attrs["storage_order"], name="max_pool_nd_indices")


@rule("nn.deform_conv2d")
def _deform_conv2d(ctx: LegalizeContext, call: Call) -> Expr:
    a = call.attrs
    mask = call.args[3] if len(call.args) > 3 else None
    return ctx.call_te(spatial_nd.deform_conv2d, call.args[0], call.args[1], call.args[2],
                       mask, a["strides"], a["padding"], a["dilation"], a["groups"],
                       a["offset_groups"], name="deform_conv2d")

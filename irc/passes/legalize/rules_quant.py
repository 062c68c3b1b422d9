"""Legalization rules of the quantization, bitwise, shift and remainder operators and of
the unary tests and inverse trigonometric functions (``irc/ir/ops/quantization.py``,
``irc/ir/ops/integer.py``, ``irc/ir/ops/unary.py``); registered in :data:`RULES` when
this module is imported."""

from __future__ import annotations

from ...ir.expr import Call, Expr
from ...tir import topi
from ...tir.topi import integer as topi_integer
from ...tir.topi import quantize as topi_quantize
from .context import LegalizeContext
from .rules import RULES, _unary, rule

for _op in ("asin", "acos", "atan", "tan", "sinh", "cosh", "asinh", "acosh", "atanh", "log1p",
            "expm1", "isnan", "isinf", "bitwise_not"):
    RULES[_op] = _unary(_op, _op)

for _op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    RULES[_op] = (lambda name: lambda ctx, call: ctx.call_te(
        getattr(topi, name), call.args[0], call.args[1], name=name))(_op)


@rule("left_shift", "right_shift")
def _shift(ctx: LegalizeContext, call: Call) -> Expr:
    direction = "left" if call.op.name == "left_shift" else "right"
    return ctx.call_te(topi_integer.shift, call.args[0], call.args[1], direction,
                       name=call.op.name)


@rule("mod", "floor_mod")
def _mod(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(topi_integer.remainder, call.args[0], call.args[1],
                       call.op.name == "floor_mod", name=call.op.name)


@rule("bitcast")
def _bitcast(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(topi_integer.bitcast, call.args[0], call.attrs["dtype"], name="bitcast")


@rule("quantize", "dequantize")
def _quantize(ctx: LegalizeContext, call: Call) -> Expr:
    a = call.attrs
    zp = call.args[2] if len(call.args) > 2 else None
    out_dtype = call.struct_info.dtype
    fn = topi_quantize.quantize if call.op.name == "quantize" else topi_quantize.dequantize
    args = [call.args[0], call.args[1]] + ([zp] if zp is not None else [])

    extra = {"saturate": a["saturate"]} if call.op.name == "quantize" else {}

    def compute(x, scale, zero_point=None):
        return fn(x, scale, zero_point, axis=a["axis"], block_size=a["block_size"],
                  out_dtype=out_dtype, **extra)

    return ctx.call_te(compute, *args, name=call.op.name)


__all__: list[str] = []

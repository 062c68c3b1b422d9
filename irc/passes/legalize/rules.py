"""Legalization rules: each graph operator as a te computation from ``irc.topi``.

A rule is ``rule(ctx, call) -> Expr``; ``call.args`` are normalized graph expressions and
``call.attrs`` the operator's canonical attributes (see ``irc/ir/ops``). The rules are
registered on the operator registry (``OpDef.legalize``) when this module is imported.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...core.diagnostics import LegalizeError
from ...ir.block_builder import normalize
from ...ir.expr import Call, Constant, Expr, PrimValue, Tuple, TupleGetItem
from ...ir.op import get_op_def
from ...ir.ops import call_tir
from ...ir.struct_info import TensorStructInfo
from ...tir import expr as E
from ...tir import te, topi
from ...tir.topi.utils import INJECTIVE
from .context import LegalizeContext

Rule = Callable[[LegalizeContext, Call], Expr]
RULES: dict[str, Rule] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    def deco(fn: Rule) -> Rule:
        for n in names:
            RULES[n] = fn
        return fn
    return deco


def _out_dtype(call: Call) -> str | None:
    d = call.attrs.get("out_dtype", "void")
    return None if d in (None, "void", "") else d


def _sinfo(call: Call) -> TensorStructInfo:
    s = call.struct_info
    if not isinstance(s, TensorStructInfo) or s.shape is None:
        raise LegalizeError(f"R.{call.op.name}: the result's shape must be known to legalize "
                            f"it, got {s!r}", node=call, span=call.span)
    return s


def _prim(value: Expr, what: str, call: Call) -> Any:
    if isinstance(value, PrimValue):
        v = value.value
        if isinstance(v, (E.IntImm, E.FloatImm)):
            return v.value
        return v
    raise LegalizeError(f"R.{call.op.name}: {what} must be a scalar value", node=call,
                        span=call.span)


# -- elementwise ---------------------------------------------------------------------------

_UNARY_TOPI = {
    "exp": "exp", "log": "log", "sqrt": "sqrt", "rsqrt": "rsqrt", "tanh": "tanh",
    "sigmoid": "sigmoid", "erf": "erf", "abs": "abs", "negative": "negative",
    "floor": "floor", "ceil": "ceil", "round": "round", "sin": "sin", "cos": "cos",
    "nn.relu": "relu", "nn.silu": "silu", "logical_not": "logical_not",
}


def _unary(op_name: str, topi_name: str) -> Rule:
    def apply(ctx: LegalizeContext, call: Call) -> Expr:
        return ctx.call_te(getattr(topi, topi_name), call.args[0], name=topi_name)
    return apply


for _op, _fn in _UNARY_TOPI.items():
    RULES[_op] = _unary(_op, _fn)


@rule("nn.gelu")
def _gelu(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(topi.gelu, call.args[0], approximate="none", name="gelu")


@rule("nn.gelu_tanh")
def _gelu_tanh(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(topi.gelu, call.args[0], approximate="tanh", name="gelu_tanh")


@rule("astype")
def _astype(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(topi.cast, call.args[0], call.attrs["dtype"], name="cast")


@rule("clip")
def _clip(ctx: LegalizeContext, call: Call) -> Expr:
    lo = _prim(call.args[1], "min", call)
    hi = _prim(call.args[2], "max", call)
    return ctx.call_te(topi.clip, call.args[0], lo, hi, name="clip")


@rule("nn.dropout")
def _dropout(ctx: LegalizeContext, call: Call) -> Expr:
    # Inference: the output is the input, the mask all ones.
    out = ctx.call_te(topi.identity, call.args[0], name="dropout")
    mask = ctx.call_te(topi.full_like, call.args[0], 1, name="dropout_mask")
    return Tuple(fields=(out, mask), struct_info=call.struct_info)


_BINARY_TOPI = {
    "add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "divide",
    "floor_divide": "floor_divide", "power": "power", "maximum": "maximum",
    "minimum": "minimum", "equal": "equal", "not_equal": "not_equal", "less": "less",
    "less_equal": "less_equal", "greater": "greater", "greater_equal": "greater_equal",
    "logical_and": "logical_and", "logical_or": "logical_or",
}


# Scalar constants of these dtypes enter a binary operator's loop function as immediates
# (not as 0-d buffers): the simplifier then sees them (``x ** 3`` becomes two
# multiplications) and the kernel takes one argument less.
_IMMEDIATE_DTYPES = ("float32", "float64", "int32", "int64")


def _immediate(e: Expr) -> Any:
    """``e`` as a loop-IR immediate when it is a finite 0-d constant of a plain number
    dtype, else ``e``."""
    if not isinstance(e, Constant) or e.data.ndim != 0:
        return e
    dtype = e.struct_info.dtype
    if dtype not in _IMMEDIATE_DTYPES or not np.isfinite(e.data):
        return e
    return E.const(e.data.item(), dtype)


def _binary(topi_name: str) -> Rule:
    def apply(ctx: LegalizeContext, call: Call) -> Expr:
        lhs, rhs = _immediate(call.args[0]), _immediate(call.args[1])
        if isinstance(lhs, E.PrimExpr) and isinstance(rhs, E.PrimExpr):
            lhs, rhs = call.args  # two scalars: a 0-d loop function
        return ctx.call_te(getattr(topi, topi_name), lhs, rhs, name=topi_name)
    return apply


for _op, _fn in _BINARY_TOPI.items():
    RULES[_op] = _binary(_fn)


@rule("where")
def _where(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(topi.where, *call.args, name="where")


# -- linear algebra --------------------------------------------------------------------------


@rule("matmul")
def _matmul(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(topi.matmul, call.args[0], call.args[1], out_dtype=_out_dtype(call),
                       name="matmul")


@rule("linear")
def _linear(ctx: LegalizeContext, call: Call) -> Expr:
    args = [a for a in call.args if a is not None]
    bias = args[2] if len(args) > 2 else None
    return ctx.call_te(topi.matmul, args[0], args[1], transpose_b=True, bias=bias,
                       out_dtype=_out_dtype(call), name="linear")


# -- nn -----------------------------------------------------------------------------------------


@rule("nn.conv2d")
def _conv2d(ctx: LegalizeContext, call: Call) -> Expr:
    a = call.attrs
    out_layout = a.get("out_layout") or a["data_layout"]
    if out_layout != a["data_layout"]:
        raise LegalizeError(f"R.nn.conv2d with out_layout {out_layout} different from "
                            f"data_layout {a['data_layout']} is not supported", node=call,
                            span=call.span)
    return ctx.call_te(topi.nn.conv2d, call.args[0], call.args[1], strides=a["strides"],
                       padding=a["padding"], dilation=a["dilation"], groups=a["groups"],
                       data_layout=a["data_layout"], kernel_layout=a["kernel_layout"],
                       out_dtype=_out_dtype(call), name="conv2d")


@rule("nn.conv2d_transpose")
def _conv2d_transpose(ctx: LegalizeContext, call: Call) -> Expr:
    a = call.attrs
    if a["data_layout"] != "NCHW" or a["kernel_layout"] != "IOHW" or a["groups"] != 1:
        raise LegalizeError("R.nn.conv2d_transpose is supported for NCHW data, IOHW kernels "
                            "and groups=1", node=call, span=call.span)
    return ctx.call_te(topi.nn.conv2d_transpose_nchw, call.args[0], call.args[1],
                       a["strides"], a["padding"], out_dtype=_out_dtype(call),
                       output_padding=a["output_padding"], dilation=a["dilation"],
                       name="conv2d_transpose")


def _pool(kind: str) -> Rule:
    def apply(ctx: LegalizeContext, call: Call) -> Expr:
        a = call.attrs
        out_layout = a.get("out_layout") or a["layout"]
        if out_layout != a["layout"]:
            raise LegalizeError(f"R.nn.{kind}_pool2d with a different out_layout is not "
                                "supported", node=call, span=call.span)
        kwargs = dict(strides=a["strides"], padding=a["padding"], dilation=a["dilation"],
                      ceil_mode=a["ceil_mode"], layout=a["layout"])
        if kind == "avg":
            kwargs["count_include_pad"] = a["count_include_pad"]
        fn = topi.nn.max_pool2d if kind == "max" else topi.nn.avg_pool2d
        return ctx.call_te(fn, call.args[0], a["pool_size"], name=f"{kind}_pool2d", **kwargs)
    return apply


RULES["nn.max_pool2d"] = _pool("max")
RULES["nn.avg_pool2d"] = _pool("avg")


@rule("nn.adaptive_avg_pool2d")
def _adaptive_avg_pool2d(ctx: LegalizeContext, call: Call) -> Expr:
    a = call.attrs
    layout = a["layout"]
    out = _sinfo(call)
    h_axis, w_axis = layout.index("H"), layout.index("W")
    size = a.get("output_size")
    if size is None:
        size = (out.shape[h_axis], out.shape[w_axis])
    return ctx.call_te(topi.nn.adaptive_pool, call.args[0], tuple(size), "avg", layout=layout,
                       name="adaptive_avg_pool2d")


@rule("nn.softmax")
def _softmax(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(topi.nn.softmax, call.args[0], axis=call.attrs["axis"], name="softmax")


@rule("nn.log_softmax")
def _log_softmax(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(topi.nn.log_softmax, call.args[0], axis=call.attrs["axis"],
                       name="log_softmax")


@rule("nn.layer_norm")
def _layer_norm(ctx: LegalizeContext, call: Call) -> Expr:
    a = call.attrs
    return ctx.call_te(topi.nn.layer_norm, call.args[0], call.args[1], call.args[2],
                       axis=a["axes"], epsilon=a["epsilon"], name="layer_norm")


@rule("nn.group_norm")
def _group_norm(ctx: LegalizeContext, call: Call) -> Expr:
    a = call.attrs
    return ctx.call_te(topi.nn.group_norm, call.args[0], call.args[1], call.args[2],
                       num_groups=a["num_groups"], channel_axis=a["channel_axis"],
                       axes=a["axes"], epsilon=a["epsilon"], name="group_norm")


@rule("nn.batch_norm")
def _batch_norm(ctx: LegalizeContext, call: Call) -> Expr:
    a = call.attrs
    out = ctx.call_te(topi.nn.batch_norm, *call.args[:5], axis=a["axis"],
                      epsilon=a["epsilon"], center=a["center"], scale=a["scale"],
                      name="batch_norm")
    # Inference semantics: the returned mean and variance are the moving statistics.
    return Tuple(fields=(out, call.args[3], call.args[4]), struct_info=call.struct_info)


@rule("nn.pad")
def _pad(ctx: LegalizeContext, call: Call) -> Expr:
    a = call.attrs
    width = list(a["pad_width"])
    before, after = width[0::2], width[1::2]
    return ctx.call_te(topi.nn.pad, call.args[0], before, after, pad_value=a["pad_value"],
                       mode=a["pad_mode"], name="pad")


# -- manipulation -------------------------------------------------------------------------


@rule("reshape")
def _reshape(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(topi.reshape, call.args[0], _sinfo(call).shape, name="reshape")


@rule("permute_dims")
def _permute_dims(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(topi.transpose, call.args[0], call.attrs["axes"], name="transpose")


@rule("expand_dims")
def _expand_dims(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(topi.reshape, call.args[0], _sinfo(call).shape, name="expand_dims")


@rule("squeeze")
def _squeeze(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(topi.reshape, call.args[0], _sinfo(call).shape, name="squeeze")


@rule("flatten")
def _flatten(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(topi.reshape, call.args[0], _sinfo(call).shape, name="flatten")


@rule("concat")
def _concat(ctx: LegalizeContext, call: Call) -> Expr:
    tensors = call.args[0]
    if not isinstance(tensors, Tuple):
        raise LegalizeError("R.concat needs a tuple of tensors written in place", node=call,
                            span=call.span)
    parts: list[Expr] = list(tensors.fields)
    axis = call.attrs["axis"]
    # A kernel takes each part as an argument, and native calls take at most ~1,000: many
    # parts are joined in groups first (a recurrence unrolled over its steps).
    while len(parts) > _MAX_KERNEL_TENSORS:
        parts = [ctx.call_te(topi.concatenate, parts[i:i + _MAX_KERNEL_TENSORS], axis=axis,
                             name="concatenate")
                 for i in range(0, len(parts), _MAX_KERNEL_TENSORS)]
    return ctx.call_te(topi.concatenate, parts, axis=axis, name="concatenate")


# The most tensors one operator's kernel reads or writes (see _concat, _split).
_MAX_KERNEL_TENSORS = 256


@rule("split")
def _split(ctx: LegalizeContext, call: Call) -> Expr:
    a = call.attrs
    parts, axis = a["indices_or_sections"], a["axis"]
    bounds = _split_bounds(call.args[0], parts, axis)
    if bounds is None or len(bounds) - 1 <= _MAX_KERNEL_TENSORS:
        return ctx.call_te(topi.split, call.args[0], parts, axis=axis, name="split")
    # Too many parts for one kernel (see _concat): cut into groups of parts, then each.
    n = len(bounds) - 1
    starts = list(range(0, n, _MAX_KERNEL_TENSORS))
    groups = ctx.call_te(topi.split, call.args[0], [bounds[g] for g in starts[1:]],
                         axis=axis, name="split")
    fields = []
    for k, g in enumerate(starts):
        end = min(g + _MAX_KERNEL_TENSORS, n)
        sinfo = groups.struct_info.fields[k]
        piece = TupleGetItem(tuple_value=groups, index=k, struct_info=sinfo)
        sub = ctx.call_te(topi.split, piece, [b - bounds[g] for b in bounds[g + 1:end]],
                          axis=axis, name="split")
        fields.extend(TupleGetItem(tuple_value=sub, index=i, struct_info=f)
                      for i, f in enumerate(sub.struct_info.fields))
    return Tuple(fields=tuple(fields), struct_info=call.struct_info)


def _split_bounds(x: Expr, parts: Any, axis: int) -> list[int] | None:
    """The static cut points (0 ... extent) of a split, or None when not static."""
    sinfo = x.struct_info
    shape = sinfo.static_shape if isinstance(sinfo, TensorStructInfo) else None
    if shape is None:
        return None
    extent = shape[axis]
    if isinstance(parts, int):
        if parts <= 0 or extent % parts:
            return None
        return [extent // parts * k for k in range(parts + 1)]
    return [0] + [int(i) for i in parts] + [extent]


@rule("strided_slice")
def _strided_slice(ctx: LegalizeContext, call: Call) -> Expr:
    a = call.attrs
    return ctx.call_te(topi.strided_slice, call.args[0], a["begin"], a["end"],
                       strides=a["strides"], axes=a["axes"], name="strided_slice")


@rule("broadcast_to")
def _broadcast_to(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(topi.broadcast_to, call.args[0], _sinfo(call).shape,
                       name="broadcast_to")


@rule("tile")
def _tile(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(topi.tile, call.args[0], call.attrs["repeats"], name="tile")


@rule("repeat")
def _repeat(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(topi.repeat, call.args[0], call.attrs["repeats"],
                       axis=call.attrs["axis"], name="repeat")


# -- reductions ------------------------------------------------------------------------------


def _reduce(topi_name: str) -> Rule:
    def apply(ctx: LegalizeContext, call: Call) -> Expr:
        return ctx.call_te(getattr(topi, topi_name), call.args[0], axis=call.attrs["axis"],
                           keepdims=call.attrs["keepdims"], name=topi_name)
    return apply


for _op in ("sum", "mean", "max", "min", "prod", "variance"):
    RULES[_op] = _reduce(_op)


def _arg_reduce(topi_name: str) -> Rule:
    def apply(ctx: LegalizeContext, call: Call) -> Expr:
        dtype = _sinfo(call).dtype
        return ctx.call_te(getattr(topi, topi_name), call.args[0], axis=call.attrs["axis"],
                           keepdims=call.attrs["keepdims"], out_dtype=dtype,
                           select_last_index=call.attrs.get("select_last_index", False),
                           name=topi_name)
    return apply


RULES["argmax"] = _arg_reduce("argmax")
RULES["argmin"] = _arg_reduce("argmin")


# -- creation -----------------------------------------------------------------------------------


@rule("zeros", "ones")
def _zeros_ones(ctx: LegalizeContext, call: Call) -> Expr:
    s = _sinfo(call)
    fn = topi.zeros if call.op.name == "zeros" else topi.ones
    return ctx.call_te(lambda: fn(s.shape, s.dtype), name=call.op.name)


@rule("zeros_like", "ones_like")
def _like(ctx: LegalizeContext, call: Call) -> Expr:
    s = _sinfo(call)
    value = 0 if call.op.name == "zeros_like" else 1
    return ctx.call_te(lambda: topi.full(s.shape, s.dtype, value), name=call.op.name)


def _scalar_of(t: Any) -> Any:
    """The single element of a te tensor holding one value."""
    return t[tuple(0 for _ in t.shape)]


@rule("full", "full_like")
def _full(ctx: LegalizeContext, call: Call) -> Expr:
    s = _sinfo(call)
    fill = call.args[1]
    if isinstance(fill, PrimValue):
        value = _prim(fill, "fill_value", call)
        return ctx.call_te(lambda: topi.full(s.shape, s.dtype, value), name=call.op.name)
    return ctx.call_te(lambda v: topi.full(s.shape, s.dtype, _scalar_of(v)), fill,
                       name=call.op.name)


@rule("arange")
def _arange(ctx: LegalizeContext, call: Call) -> Expr:
    s = _sinfo(call)
    start = _prim(call.args[0], "start", call)
    end = _prim(call.args[1], "end", call)
    step = _prim(call.args[2], "step", call)
    if all(isinstance(v, (int, float)) for v in (start, end, step)):
        return ctx.call_te(lambda: topi.arange(start, end, step, dtype=s.dtype), name="arange")
    if not (isinstance(start, int) and isinstance(step, int)):
        raise LegalizeError("R.arange: with a symbolic bound, start and step must be integer "
                            "constants", node=call, span=call.span)
    # A symbolic end (``arange(seq)``): the graph computes the length (the result's shape)
    # and allocates the output; the kernel reads its length from that buffer, so no
    # variable of the graph enters it.
    length = E.Var(name="n", dtype="int64")
    out = te.compute((length,), lambda i: E.const(start, s.dtype) + E.cast(i, s.dtype) *
                     E.const(step, s.dtype), name="T_arange", tag=INJECTIVE,
                     axis_names=["ax0"])
    func = te.create_prim_func([out], index_dtype_override="int64")
    func = func.replace(attrs={k: v for k, v in func.attrs.items() if k != "global_symbol"})
    return normalize(call_tir(ctx.add_prim_func(func, "arange"), [], s))


def register_all() -> None:
    """Attach every rule to its operator's registry entry (idempotent)."""
    for name, fn in RULES.items():
        get_op_def(name).legalize = fn

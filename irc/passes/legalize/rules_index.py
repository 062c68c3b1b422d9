"""Legalization rules of the indexing operators (``irc/ir/ops/index.py``, and ``take``):
gathers (after a kernel that checks their indices at run time),
``one_hot``, ``trilu``, ``eye_like`` and ``reverse_sequence`` as te computations;
scatters, ``topk`` and the scans as loop kernels (``irc.tir.topi.index``) made into
PrimFuncs here. Registered in :data:`rules.RULES` when this module is imported.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ...core.diagnostics import LegalizeError
from ...ir.block_builder import normalize
from ...ir.expr import Call, Expr, PrimValue, ShapeExpr
from ...ir.ops import call_tir
from ...ir.struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from ...tir import topi
from ...tir.analysis.var_use import undefined_vars
from ...tir.buffer import Buffer
from ...tir.stmt import Stmt
from ...tir.topi import index as topi_index
from ...tir.topi.utils import accumulator_dtype
from .context import LegalizeContext
from .rules import rule


def _tensor(s: StructInfo, call: Call, what: str) -> TensorStructInfo:
    if not isinstance(s, TensorStructInfo) or s.shape is None or not s.dtype:
        raise LegalizeError(f"R.{call.op.name}: {what} must be a tensor of known shape and "
                            f"dtype to legalize it, got {s!r}", node=call, span=call.span)
    return s


def loop_call(ctx: LegalizeContext, bufs: Sequence[Buffer], body: Stmt, name: str,
              args: Sequence[Expr], out_sinfo: Any) -> Call:
    """``R.call_tir`` of a new loop function over ``bufs`` running ``body``
    (``topi_index.loop_func``), on the graph values ``args``. Shape variables that no
    buffer's shape binds by itself (``n`` of a dimension ``max(0, n)`` or ``n * 3``) become
    scalar parameters, passed as the call's ``tir_vars``."""
    free = undefined_vars(topi_index.loop_func(bufs, body))
    gv = ctx.add_prim_func(topi_index.loop_func(bufs, body, free), name)
    return call_tir(gv, list(args), out_sinfo, ShapeExpr(values=tuple(free)) if free else None)


def call_loops(ctx: LegalizeContext, call: Call, kernel: Callable[..., Stmt],
               name: str, out_dtype: str | None = None) -> Expr:
    """``R.call_tir`` of a loop kernel ``kernel(*input_buffers, *output_buffers) -> Stmt``
    over the call's tensor operands (scalar operands left out: the kernels read sizes off
    the buffers) and results (of ``out_dtype`` when given: a single result computed in
    another dtype than the call's)."""
    args = [a for a in call.args if not isinstance(a, PrimValue)]
    ins = [_tensor(a.struct_info, call, f"operand {i}") for i, a in enumerate(args)]
    out_sinfo = call.struct_info
    outs: Sequence[StructInfo] = out_sinfo.fields if isinstance(out_sinfo, TupleStructInfo) \
        else [out_sinfo]
    outs = [_tensor(s, call, "the result") for s in outs]
    if out_dtype is not None and any(s.dtype != out_dtype for s in outs):
        outs = [TensorStructInfo(shape=s.shape, dtype=out_dtype) for s in outs]
        out_sinfo = outs[0]
    bufs: list[Buffer] = [topi_index.buffer(s.shape, s.dtype, f"p{i}")
                          for i, s in enumerate(ins)]
    bufs += [topi_index.buffer(s.shape, s.dtype, f"out{i}" if len(outs) > 1 else "out")
             for i, s in enumerate(outs)]
    res = list(outs) if isinstance(out_sinfo, TupleStructInfo) else outs[0]
    return normalize(loop_call(ctx, bufs, kernel(*bufs), name, args, res))


def checked_indices(ctx: LegalizeContext, call: Call,
                    kernel: Callable[[Buffer, Buffer, Buffer, str], Stmt],
                    data_pos: int = 0, index_pos: int = 1) -> Expr:
    """``R.call_tir`` of a kernel ``kernel(data, indices, out, what)`` that checks the
    indices of ``call`` (operands ``data_pos`` and ``index_pos``: the tensor indexed, for
    its shape, and the indices) and returns them as int64, negative ones counted from the
    end where the operator allows them (``topi_index.check_indices``,
    ``check_in_range``): the operator reads through its result, so an index out of range
    fails the run naming the operator, the binding, the index and the extent instead of
    reading another element."""
    data = _tensor(call.args[data_pos].struct_info, call, "the data")
    idx = _tensor(call.args[index_pos].struct_info, call, "the indices")
    bufs = [topi_index.buffer(data.shape, data.dtype, "data"),
            topi_index.buffer(idx.shape, idx.dtype, "indices"),
            topi_index.buffer(idx.shape, "int64", "checked")]
    return normalize(loop_call(ctx, bufs, kernel(*bufs, _what(ctx, call)),
                               f"check_{call.op.name.replace('.', '_')}_indices",
                               [call.args[data_pos], call.args[index_pos]],
                               TensorStructInfo(shape=idx.shape, dtype="int64")))


def _what(ctx: LegalizeContext, call: Call) -> str:
    """The operator and where its call is, for run-time error messages."""
    return f"{call.op.name} ({ctx.where})" if ctx.where else call.op.name


@rule("take")
def _take(ctx: LegalizeContext, call: Call) -> Expr:
    mode, axis = call.attrs["mode"], call.attrs["axis"]
    indices = call.args[1]
    if mode == "raise":
        indices = checked_indices(ctx, call, lambda d, i, o, what: topi_index.check_indices(
            d, i, o, axis, what))
    return ctx.call_te(topi.take, call.args[0], indices, axis=axis,
                       mode="wrap" if mode == "wrap" else "clip", name="take")


@rule("gather_elements")
def _gather_elements(ctx: LegalizeContext, call: Call) -> Expr:
    axis = call.attrs["axis"]
    indices = checked_indices(ctx, call, lambda d, i, o, what: topi_index.check_indices(
        d, i, o, axis, what))
    return ctx.call_te(topi_index.gather_elements, call.args[0], indices, axis=axis,
                       name="gather_elements")


@rule("gather_nd")
def _gather_nd(ctx: LegalizeContext, call: Call) -> Expr:
    b = call.attrs["batch_dims"]
    indices = checked_indices(ctx, call, lambda d, i, o, what:
                              topi_index.check_index_tuples(d, i, o, b, what))
    return ctx.call_te(topi_index.gather_nd, call.args[0], indices, batch_dims=b,
                       name="gather_nd")


@rule("one_hot")
def _one_hot(ctx: LegalizeContext, call: Call) -> Expr:
    # The depth as the result's dimension: a constant, or the variable bound at run time.
    out = _tensor(call.struct_info, call, "the result")
    axis = call.attrs["axis"] % out.ndim
    return ctx.call_te(topi_index.one_hot, call.args[0], call.args[1],
                       depth=out.shape[axis], axis=axis, name="one_hot")


@rule("trilu")
def _trilu(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(topi_index.trilu, call.args[0], call.args[1],
                       upper=call.attrs["upper"], name="trilu")


@rule("eye_like")
def _eye_like(ctx: LegalizeContext, call: Call) -> Expr:
    return ctx.call_te(topi_index.eye_like, call.args[0], call.attrs["dtype"],
                       k=call.attrs["k"], name="eye_like")


@rule("reverse_sequence")
def _reverse_sequence(ctx: LegalizeContext, call: Call) -> Expr:
    time_axis = call.attrs["time_axis"]
    lengths = checked_indices(ctx, call, lambda d, v, o, what: topi_index.check_in_range(
        v, o, 0, d.shape[time_axis % d.ndim], what, "sequence length"))
    return ctx.call_te(topi_index.reverse_sequence, call.args[0], lengths,
                       batch_axis=call.attrs["batch_axis"],
                       time_axis=call.attrs["time_axis"], name="reverse_sequence")


@rule("scatter_elements")
def _scatter_elements(ctx: LegalizeContext, call: Call) -> Expr:
    a = call.attrs
    what = _what(ctx, call)
    return call_loops(ctx, call, lambda d, i, u, o: topi_index.scatter_elements(
        d, i, u, o, axis=a["axis"], reduction=a["reduction"], what=what),
        "scatter_elements")


@rule("scatter_nd")
def _scatter_nd(ctx: LegalizeContext, call: Call) -> Expr:
    red = call.attrs["reduction"]
    what = _what(ctx, call)
    return call_loops(ctx, call, lambda d, i, u, o: topi_index.scatter_nd(
        d, i, u, o, reduction=red, what=what), "scatter_nd")


@rule("topk")
def _topk(ctx: LegalizeContext, call: Call) -> Expr:
    a = call.attrs
    what = _what(ctx, call)
    return call_loops(ctx, call, lambda x, v, i: topi_index.topk(
        x, v, i, axis=a["axis"], largest=a["largest"], what=what), "topk")


@rule("cumsum", "cumprod")
def _scan(ctx: LegalizeContext, call: Call) -> Expr:
    """Running sums and products; those of floats narrower than 32 bits run in float32
    (``accumulator_dtype``) and are rounded afterwards."""
    a = call.attrs
    kind = "sum" if call.op.name == "cumsum" else "prod"
    dtype = _tensor(call.struct_info, call, "the result").dtype
    acc = accumulator_dtype(dtype)
    if len(call.args) > 1:
        out = call_loops(ctx, call, lambda x, axis, o: topi_index.scan_runtime_axis(
            x, axis, o, kind, exclusive=a["exclusive"], reverse=a["reverse"]),
            call.op.name, out_dtype=acc)
    else:
        out = call_loops(ctx, call, lambda x, o: topi_index.scan(
            x, o, kind, axis=a["axis"], exclusive=a["exclusive"], reverse=a["reverse"]),
            call.op.name, out_dtype=acc)
    return out if acc == dtype else ctx.call_te(topi.cast, out, dtype, name="cast")


__all__ = ["call_loops", "checked_indices"]

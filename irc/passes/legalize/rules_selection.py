"""Legalization rules of the loop kernels that need workspace: ``unique`` and
``non_max_suppression`` (``irc/ir/ops/selection.py``, kernels in
``irc.tir.topi.selection``) and ``linalg.det`` (``irc.tir.topi.linalg``). Each becomes a
``call_tir`` whose outputs are the operator's results followed by the workspace buffers
the kernel sorts or eliminates in; the rule's result leaves the workspace out.
Registered in :data:`rules.RULES` when this module is imported.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ...ir.expr import Call, Expr, Tuple, TupleGetItem
from ...ir.struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from ...tir.buffer import Buffer
from ...tir.stmt import Stmt
from ...tir.topi import index as topi_index
from ...tir.topi import linalg as topi_linalg
from ...tir.topi import selection as topi_selection
from .context import LegalizeContext
from .rules import rule
from .rules_index import _tensor, _what, loop_call


def call_with_workspace(ctx: LegalizeContext, call: Call, kernel: Callable[..., Stmt],
                        name: str, workspace: Sequence[tuple[Sequence[Any], str]]) -> Expr:
    """``R.call_tir`` of the loop kernel ``kernel(*inputs, *outputs, *workspace) -> Stmt``
    over the call's operands and results, with scratch buffers of the given (shape,
    dtype) as extra outputs (and the shape variables no buffer binds by itself as
    ``tir_vars``); returns the call's results without them."""
    ins = [_tensor(a.struct_info, call, f"operand {i}") for i, a in enumerate(call.args)]
    out_sinfo = call.struct_info
    fields: Sequence[StructInfo] = out_sinfo.fields if isinstance(
        out_sinfo, TupleStructInfo) else [out_sinfo]
    outs = [_tensor(s, call, "the result") for s in fields]
    bufs: list[Buffer] = [topi_index.buffer(s.shape, s.dtype, f"p{i}")
                          for i, s in enumerate(ins)]
    bufs += [topi_index.buffer(s.shape, s.dtype, f"out{i}") for i, s in enumerate(outs)]
    scratch = [topi_index.buffer(shape, dtype, f"work{i}")
               for i, (shape, dtype) in enumerate(workspace)]
    made = loop_call(ctx, bufs + scratch, kernel(*bufs, *scratch), name, call.args, [
        *outs, *(TensorStructInfo(shape=b.shape, dtype=b.dtype) for b in scratch)])
    if not isinstance(out_sinfo, TupleStructInfo):
        return TupleGetItem(tuple_value=made, index=0)
    return Tuple(fields=tuple(TupleGetItem(tuple_value=made, index=i)
                              for i in range(len(outs))))


@rule("unique")
def _unique(ctx: LegalizeContext, call: Call) -> Expr:
    n = _tensor(call.args[0].struct_info, call, "x").shape[0]
    sorted_ = call.attrs["sorted"]
    return call_with_workspace(
        ctx, call, lambda x, idx, inv, cnt, num, perm, tmp, aux: topi_selection.unique(
            x, idx, inv, cnt, num, perm, tmp, aux, sorted_=sorted_),
        "unique", [([n], "int64")] * 3)


@rule("non_max_suppression")
def _non_max_suppression(ctx: LegalizeContext, call: Call) -> Expr:
    n = _tensor(call.args[1].struct_info, call, "scores").shape[2]
    center = call.attrs["center_point_box"]
    what = _what(ctx, call)

    def kernel(*bufs: Buffer) -> Stmt:
        boxes, scores, limit, iou = bufs[:4]
        threshold = bufs[4] if len(call.args) > 4 else None
        selected, count, perm, tmp = bufs[len(call.args):]
        return topi_selection.non_max_suppression(
            boxes, scores, limit, iou, threshold, selected, count, perm, tmp,
            center_point_box=center, what=what)

    return call_with_workspace(ctx, call, kernel, "non_max_suppression",
                               [([n], "int64")] * 2)


@rule("linalg.det")
def _det(ctx: LegalizeContext, call: Call) -> Expr:
    n = _tensor(call.args[0].struct_info, call, "x").shape[-1]
    return call_with_workspace(ctx, call, topi_linalg.det, "det",
                               [([n, n], "float64")])


__all__ = ["call_with_workspace"]

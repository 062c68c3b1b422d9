"""Normalize: fill in struct info and bring graph functions to A-normal form.

Algorithm: every graph function is first passed through the core normalizer
(``irc.ir.Normalizer``), which fills in missing struct info. Then each expression that
appears as an argument of a call, a field of a tuple, the tuple of a ``TupleGetItem``, the
condition of an ``If`` or the result of a ``SeqExpr`` and is not a leaf (variable,
constant, shape, scalar, callee name) or a tuple of leaves is bound to a fresh variable
(``lv``/``gv`` names, a ``DataflowVar`` inside dataflow blocks) just before the binding
that uses it; nested arguments are bound innermost first, so evaluation order is kept.
Function bodies and ``If`` branches become ``SeqExpr``s; empty binding blocks are dropped
and neighbouring blocks of the same kind merged.

Preconditions: parameters carry struct info; calls are well typed.
Postconditions: every expression has struct info; binding values are "one level deep"
(calls whose arguments are leaves or tuples of leaves); function bodies and ``If``
branches are ``SeqExpr``s; the module is otherwise unchanged (a function already in normal
form is returned as the same object).
"""

from __future__ import annotations

from typing import Any

from ..ir.block_builder import InferContext, Normalizer
from ..ir.expr import (
    Binding,
    BindingBlock,
    Call,
    DataflowBlock,
    Expr,
    Function,
    If,
    SeqExpr,
    Tuple,
    TupleGetItem,
    VarBinding,
)
from ..ir.module import IRModule
from ._graph_utils import NameSupply, collect_names, is_leaf, make_block, merge_blocks
from .infra import Pass, PassContext, PassInfo


class _ANF:
    """Converts one (struct-info complete) function to A-normal form."""

    def __init__(self, names: NameSupply):
        self.names = names

    # -- scopes ---------------------------------------------------------------------------
    def function(self, f: Function) -> Function:
        body = self.scope(f.body)
        return f if body is f.body else f.replace(body=body)

    def scope(self, e: Expr) -> SeqExpr:
        """``e`` as a SeqExpr whose result is a leaf (or tuple of leaves)."""
        if isinstance(e, SeqExpr):
            return self.seq(e)
        tail: list[Binding] = []
        body = self.arg(e, tail, dataflow=False)
        blocks = (BindingBlock(bindings=tuple(tail)),) if tail else ()
        return SeqExpr(blocks=blocks, body=body, struct_info=body.struct_info, span=e.span)

    def seq(self, s: SeqExpr) -> SeqExpr:
        blocks: list[BindingBlock] = []
        for block in s.blocks:
            dataflow = isinstance(block, DataflowBlock)
            out: list[Binding] = []
            for b in block.bindings:
                value = self.value(b.value, out, dataflow)
                out.append(b if value is b.value else b.replace(value=value))
            if len(out) == len(block.bindings) and all(x is y for x, y in
                                                       zip(out, block.bindings)):
                blocks.append(block)
            else:
                blocks.append(block.replace(bindings=tuple(out)))
        tail: list[Binding] = []
        body = self.arg(s.body, tail, dataflow=False)
        if tail:
            blocks.append(make_block(tail, dataflow=False))
        merged = merge_blocks(blocks)
        unchanged = body is s.body and len(merged) == len(s.blocks) and all(
            a is b for a, b in zip(merged, s.blocks))
        if unchanged:
            return s
        return s.replace(blocks=merged, body=body, struct_info=body.struct_info)

    # -- expressions ----------------------------------------------------------------------
    def value(self, e: Expr, out: list[Binding], dataflow: bool) -> Expr:
        """``e`` with its operands made leaves (new bindings go to ``out``)."""
        if isinstance(e, Call):
            op = e.op if is_leaf(e.op) else self.arg(e.op, out, dataflow)
            args = tuple(self.arg(a, out, dataflow) for a in e.args)
            if op is e.op and all(a is b for a, b in zip(args, e.args)):
                return e
            return e.replace(op=op, args=args)
        if isinstance(e, Tuple):
            return self.arg(e, out, dataflow)
        if isinstance(e, TupleGetItem):
            t = self.arg(e.tuple_value, out, dataflow)
            return e if t is e.tuple_value else e.replace(tuple_value=t)
        if isinstance(e, If):
            cond = self.arg(e.cond, out, dataflow)
            t, f = self.scope(e.true_branch), self.scope(e.false_branch)
            if cond is e.cond and t is e.true_branch and f is e.false_branch:
                return e
            return e.replace(cond=cond, true_branch=t, false_branch=f)
        if isinstance(e, SeqExpr):
            return self.seq(e)
        if isinstance(e, Function):
            return self.function(e)
        return e

    def arg(self, e: Expr, out: list[Binding], dataflow: bool) -> Expr:
        """``e`` as a leaf or a tuple of leaves, binding it to a new variable if needed."""
        if is_leaf(e):
            return e
        if isinstance(e, Tuple):
            fields = tuple(self.arg(f, out, dataflow) for f in e.fields)
            if all(a is b for a, b in zip(fields, e.fields)):
                return e
            return e.replace(fields=fields)
        value = self.value(e, out, dataflow)
        var = self.names.var(value, dataflow)
        out.append(VarBinding(var=var, value=value, span=e.span))
        return var


def normalize_function(func: Function, mod: IRModule | None = None) -> Function:
    """``func`` with struct info filled in and in A-normal form."""
    filled = Normalizer(InferContext(module=mod)).expr(func)
    return _ANF(NameSupply(collect_names(filled))).function(filled)


class Normalize(Pass):
    """Fill in struct info and convert every graph function to A-normal form."""

    def __init__(self) -> None:
        self.info = PassInfo(opt_level=0, name="Normalize")

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        funcs: dict[Any, Any] = {}
        changed = False
        for gv, f in mod.functions.items():
            if isinstance(f, Function):
                new = normalize_function(f, mod)
                changed |= new is not f
                funcs[gv] = new
            else:
                funcs[gv] = f
        return IRModule(functions=funcs, attrs=mod.attrs) if changed else mod


__all__ = ["Normalize", "normalize_function"]

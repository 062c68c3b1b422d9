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

from dataclasses import dataclass

from ..core.module import IRModule
from ..core.transform import Pass, PassContext
from ..ir.block_builder import InferContext, Normalizer
from ..ir.expr import (
    Binding,
    BindingBlock,
    Call,
    DataflowBlock,
    Expr,
    Function,
    If,
    MatchCast,
    SeqExpr,
    Tuple,
    TupleGetItem,
    VarBinding,
)
from ._graph_utils import NameSupply, collect_names, is_leaf, make_block, merge_blocks


class _ANF:
    """Converts one function to A-normal form, filling in struct info node by node (so a
    subexpression shared in the tree, a DAG built in Python, is bound once)."""

    def __init__(self, names: NameSupply, norm: Normalizer):
        self.names = names
        self.norm = norm
        # One memo per scope; inner scopes see the bindings of the enclosing ones.
        self.memo: list[dict[int, Expr]] = [{}]

    # -- scopes ---------------------------------------------------------------------------
    def function(self, f: Function) -> Function:
        params = tuple(self.norm.expr(p) for p in f.params)
        body = self.scope(f.body)
        if body is f.body and all(a is b for a, b in zip(params, f.params)) and \
                f.struct_info is not None:
            return f
        return self.norm.expr(f.replace(params=params, body=body, struct_info=None))

    def scope(self, e: Expr) -> SeqExpr:
        """``e`` as a SeqExpr whose result is a leaf (or tuple of leaves)."""
        self.memo.append({})
        try:
            if isinstance(e, SeqExpr):
                return self.seq(e)
            tail: list[Binding] = []
            body = self.arg(e, tail, dataflow=False)
        finally:
            self.memo.pop()
        blocks = (BindingBlock(bindings=tuple(tail)),) if tail else ()
        return SeqExpr(blocks=blocks, body=body, struct_info=body.struct_info, span=e.span)

    def seq(self, s: SeqExpr) -> SeqExpr:
        blocks: list[BindingBlock] = []
        for block in s.blocks:
            # Values bound in one block may be invisible in the next (dataflow variables).
            self.memo[-1] = {}
            dataflow = isinstance(block, DataflowBlock)
            out: list[Binding] = []
            for b in block.bindings:
                value = self.value(b.value, out, dataflow)
                out.append(self.binding(b, value))
            if all(x is y for x, y in zip(out, block.bindings)) and \
                    len(out) == len(block.bindings):
                blocks.append(block)
            else:
                blocks.append(block.replace(bindings=tuple(out)))
        tail: list[Binding] = []
        self.memo[-1] = {}
        body = self.arg(s.body, tail, dataflow=False)
        if tail:
            blocks.append(make_block(tail, dataflow=False))
        merged = merge_blocks(blocks)
        unchanged = body is s.body and len(merged) == len(s.blocks) and all(
            a is b for a, b in zip(merged, s.blocks)) and s.struct_info is not None
        if unchanged:
            return s
        return s.replace(blocks=merged, body=body, struct_info=body.struct_info)

    def binding(self, b: Binding, value: Expr) -> Binding:
        var = b.var
        if var.struct_info is None:
            sinfo = b.struct_info if isinstance(b, MatchCast) else value.struct_info
            var = var.replace(struct_info=sinfo)
            self.norm.remap[id(b.var)] = var
        if var is b.var and value is b.value:
            return b
        return b.replace(var=var, value=value)

    # -- expressions ----------------------------------------------------------------------
    def value(self, e: Expr, out: list[Binding], dataflow: bool) -> Expr:
        """``e`` with its operands made leaves (new bindings go to ``out``) and its struct
        info filled in."""
        if isinstance(e, Call):
            op = self.leaf(e.op) if is_leaf(e.op) else self.arg(e.op, out, dataflow)
            args = tuple(self.arg(a, out, dataflow) for a in e.args)
            if op is not e.op or any(a is not b for a, b in zip(args, e.args)):
                e = e.replace(op=op, args=args)
            return self.norm.expr(e)
        if isinstance(e, Tuple):
            return self.arg(e, out, dataflow)
        if isinstance(e, TupleGetItem):
            t = self.arg(e.tuple_value, out, dataflow)
            return self.norm.expr(e if t is e.tuple_value else e.replace(tuple_value=t))
        if isinstance(e, If):
            cond = self.arg(e.cond, out, dataflow)
            t, f = self.scope(e.true_branch), self.scope(e.false_branch)
            if cond is not e.cond or t is not e.true_branch or f is not e.false_branch:
                e = e.replace(cond=cond, true_branch=t, false_branch=f)
            return self.norm.expr(e)
        if isinstance(e, SeqExpr):
            return self.scope(e)
        if isinstance(e, Function):
            return self.function(e)
        return self.leaf(e)

    def leaf(self, e: Expr) -> Expr:
        return self.norm.expr(e)

    def arg(self, e: Expr, out: list[Binding], dataflow: bool) -> Expr:
        """``e`` as a leaf or a tuple of leaves, binding it to a new variable if needed."""
        if is_leaf(e):
            return self.leaf(e)
        if isinstance(e, Tuple):
            fields = tuple(self.arg(f, out, dataflow) for f in e.fields)
            if any(a is not b for a, b in zip(fields, e.fields)):
                e = e.replace(fields=fields)
            return self.norm.expr(e)
        for scope in reversed(self.memo):
            if id(e) in scope:
                return scope[id(e)]
        value = self.value(e, out, dataflow)
        var = self.names.var(value, dataflow)
        out.append(VarBinding(var=var, value=value, span=e.span))
        self.memo[-1][id(e)] = var
        return var


def normalize_function(func: Function, mod: IRModule | None = None) -> Function:
    """``func`` with struct info filled in and in A-normal form."""
    norm = Normalizer(InferContext(module=mod))
    return _ANF(NameSupply(collect_names(func)), norm).function(func)


@dataclass(frozen=True)
class Normalize(Pass):
    """Fill in struct info and convert every graph function to A-normal form."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return mod.map_functions(lambda f: normalize_function(f, mod), Function)


__all__ = ["Normalize", "normalize_function"]

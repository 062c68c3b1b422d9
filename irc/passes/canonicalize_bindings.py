"""CanonicalizeBindings: remove trivial bindings and propagate what they bind.

Algorithm: one forward walk over each graph function's bindings decides, then one
substitution rewrites.

- ``y = x`` (``x`` a variable): uses of ``y`` become uses of ``x`` and the binding goes,
  provided ``y``'s struct info is no more precise than ``x``'s (a refinement is not
  trivial). When ``y`` is a block output (``Var``) and ``x`` a ``DataflowVar`` of the same
  block, the binding of ``x`` is renamed to bind ``y`` instead, since ``x`` is not visible
  where ``y`` is used.
- ``y = R.match_cast(v, S)`` where ``v`` is already known to satisfy ``S`` and ``S``
  defines no new symbolic variable: treated as ``y = v``.
- ``y = t[i]`` where ``t`` is bound to a tuple literal: ``y = field_i`` (then the first
  rule applies when the field is a variable).

Preconditions: the module is normalized (``Normalize``).
Postconditions: no binding of a variable to a variable remains unless it refines struct
info; the program computes the same values; unused bindings are left for
``DeadCodeElimination``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.functor import Mutator
from ..core.module import IRModule
from ..core.transform import Pass, PassContext
from ..ir.expr import (
    DataflowVar,
    Expr,
    Function,
    If,
    MatchCast,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..ir.struct_info_analysis import get_defining_shape_vars, get_shape_vars, is_base_of
from ._graph_utils import merge_blocks, substitute_vars


class _Canonicalizer:
    """Decisions for one function (and any SeqExpr nested in it)."""

    def __init__(self) -> None:
        self.subst: dict[int, Expr] = {}
        self.tuples: dict[int, Tuple] = {}
        self.drop: set[int] = set()  # ids of bindings to remove
        self.rewrite: dict[int, Any] = {}  # id(binding) -> new binding
        self.block_of: dict[int, int] = {}  # id(DataflowVar) -> id(its block)
        self.defined_shape_vars: set[int] = set()

    def resolve(self, e: Expr) -> Expr:
        while isinstance(e, Var) and id(e) in self.subst:
            e = self.subst[id(e)]
        return e

    def visit_function(self, f: Function) -> None:
        for p in f.params:
            self.defined_shape_vars.update(id(v) for v in get_shape_vars(p.sinfo))
        self.visit_expr(f.body)

    def visit_expr(self, e: Expr) -> None:
        if isinstance(e, SeqExpr):
            for block in e.blocks:
                for b in block.bindings:
                    self.visit_binding(b, block)
                    self.visit_expr(b.value)
        elif isinstance(e, If):
            self.visit_expr(e.true_branch)
            self.visit_expr(e.false_branch)
        elif isinstance(e, Function):
            self.visit_expr(e.body)

    def visit_binding(self, b: Any, block: Any) -> None:
        var = b.var
        if isinstance(var, DataflowVar):
            self.block_of[id(var)] = id(block)
        value = b.value
        if isinstance(b, MatchCast):
            src = self.resolve(value)
            new_vars = [v for v in get_defining_shape_vars(b.struct_info)
                        if id(v) not in self.defined_shape_vars]
            src_sinfo = src.struct_info
            if new_vars or src_sinfo is None or not is_base_of(b.struct_info, src_sinfo):
                self.defined_shape_vars.update(id(v) for v in get_shape_vars(b.struct_info))
                return
            # The cast always succeeds: it is a plain binding.
            self.rewrite[id(b)] = VarBinding(var=var, value=value, span=b.span)
        if isinstance(value, Tuple):
            self.tuples[id(var)] = value
        if isinstance(value, TupleGetItem):
            t = self.resolve(value.tuple_value)
            literal = self.tuples.get(id(t)) if isinstance(t, Var) else t
            if isinstance(literal, Tuple):
                field = self.resolve(literal.fields[value.index])
                if not isinstance(field, Var):
                    if not isinstance(field, Tuple):
                        self.rewrite[id(b)] = VarBinding(var=var, value=field, span=b.span)
                    return
                value = field
        src = self.resolve(value)
        if not isinstance(src, Var) or src is var:
            return
        if var.struct_info is None or src.struct_info is None or \
                not is_base_of(var.struct_info, src.struct_info):
            return  # the binding refines what is known: keep it
        if isinstance(src, DataflowVar) and not isinstance(var, DataflowVar):
            if self.block_of.get(id(src)) != id(block):
                return
            # An output of the block aliases a value of the block: bind the output where
            # the value is computed (uses of the value read the output from then on).
            self.subst[id(src)] = var
        else:
            self.subst[id(var)] = src
            if id(var) in self.tuples:
                self.tuples.pop(id(var))
        self.drop.add(id(b))


class _Rewriter(Mutator):
    def __init__(self, c: _Canonicalizer):
        super().__init__()
        self.c = c

    def visit_SeqExpr(self, e: SeqExpr) -> Expr:
        blocks = []
        for block in e.blocks:
            kept = []
            for b in block.bindings:
                if id(b) in self.c.drop:
                    continue
                kept.append(self.c.rewrite.get(id(b), b))
            blocks.append(block.replace(bindings=tuple(kept)))
        rebuilt = e.replace(blocks=merge_blocks(blocks))
        return self.generic_visit(rebuilt)


def canonicalize_function(func: Function) -> Function:
    """``func`` with trivial bindings removed (see the module docstring)."""
    c = _Canonicalizer()
    c.visit_function(func)
    if not c.subst and not c.drop and not c.rewrite:
        return func
    out = _Rewriter(c).visit(func)
    # Resolve chains (a -> b -> c) before substituting.
    mapping = {k: c.resolve(v) for k, v in c.subst.items()}
    return substitute_vars(out, mapping)


@dataclass(frozen=True)
class CanonicalizeBindings(Pass):
    """Remove variable-to-variable bindings, trivial casts and projections of known
    tuples, propagating the bound values to their uses."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return mod.map_functions(canonicalize_function, Function)


__all__ = ["CanonicalizeBindings", "canonicalize_function"]

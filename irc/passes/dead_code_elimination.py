"""DeadCodeElimination: remove unused bindings and unused module functions.

Algorithm: (1) in every graph function, a backward walk over the bindings keeps a binding
when its variable is used by the result or by a kept binding after it, or when its value
has a side effect (impure calls, calls of external functions); ``match_cast`` bindings are
always kept (they check values at run time and may define symbolic variables). Nested
``SeqExpr``s (``If`` branches) are cleaned the same way. Empty blocks are dropped.
(2) Functions not reachable from the entry functions through calls, ``call_tir`` targets
or function references are removed. Entry functions are the graph functions not marked
``Primitive`` (irc's VM exposes every graph function by name, private ones too: those
without a ``global_symbol``), functions with a ``global_symbol`` and those
named in ``entry_functions``; so in practice unused loop functions and unused fused
``Primitive`` functions go.

Preconditions: the module is well formed.
Postconditions: every remaining binding is used or has an effect; every remaining
function is reachable from an entry; entry functions and their signatures are unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.functor import Mutator
from ..core.module import IRModule
from ..core.transform import Pass, PassContext, pass_names
from ..ir.expr import Expr, Function, If, MatchCast, SeqExpr, Var
from ._graph_utils import (
    entry_functions,
    is_pure_value,
    merge_blocks,
    reachable_functions,
    used_vars,
)


class _RemoveUnused(Mutator):
    def __init__(self, mod: IRModule):
        super().__init__()
        self.mod = mod

    def visit_SeqExpr(self, e: SeqExpr) -> Expr:
        live = used_vars(e.body)
        new_blocks = []
        for block in reversed(e.blocks):
            kept = []
            for b in reversed(block.bindings):
                needed = id(b.var) in live or isinstance(b, MatchCast) or \
                    not is_pure_value(b.value, self.mod)
                if not needed:
                    continue
                value = self.visit(b.value)
                b = b if value is b.value else b.replace(value=value)
                live |= used_vars(b.value)
                kept.append(b)
            kept.reverse()
            if len(kept) == len(block.bindings) and all(
                    x is y for x, y in zip(kept, block.bindings)):
                new_blocks.append(block)
            else:
                new_blocks.append(block.replace(bindings=tuple(kept)))
        new_blocks.reverse()
        merged = merge_blocks(new_blocks)
        if len(merged) == len(e.blocks) and all(a is b for a, b in zip(merged, e.blocks)):
            return e
        return e.replace(blocks=merged)

    def visit_If(self, e: If) -> Expr:
        return self.generic_visit(e)

    def visit_Var(self, v: Var) -> Var:
        return v

    visit_DataflowVar = visit_Var


def remove_unused_bindings(func: Function, mod: IRModule | None = None) -> Function:
    """``func`` without bindings whose values are unused and free of side effects."""
    return _RemoveUnused(mod if mod is not None else IRModule()).visit(func)


@dataclass(frozen=True)
class DeadCodeElimination(Pass):
    """Remove unused bindings and the functions no entry function reaches.

    ``entry_functions`` names functions to keep (and to treat as roots) in addition to
    the graph functions not marked ``Primitive`` and those with a ``global_symbol``."""

    entry_functions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "entry_functions",
                           pass_names(self.entry_functions, "DeadCodeElimination entry_functions"))

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        before = mod
        mod = before.map_functions(lambda f: remove_unused_bindings(f, before), Function)
        roots = entry_functions(mod, self.entry_functions)
        live = reachable_functions(mod, roots)
        dead = [gv for gv in mod.functions if gv.name_hint not in live]
        if dead:
            mod = IRModule(functions={gv: f for gv, f in mod.functions.items()
                                      if gv.name_hint in live}, attrs=mod.attrs)
        return mod


__all__ = ["DeadCodeElimination", "remove_unused_bindings"]

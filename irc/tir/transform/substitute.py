"""Variable substitution over loop IR (a utility of the passes, not a pass)."""

from __future__ import annotations

from typing import Callable, Mapping, Union

from ...ir.functor import Mutator
from ..expr import PrimExpr, Var

VarMap = Union[Mapping[Var, PrimExpr], Callable[[Var], Union[PrimExpr, None]]]


class _Substituter(Mutator):
    def __init__(self, vmap: VarMap):
        super().__init__()
        if callable(vmap):
            self.lookup = vmap
        else:
            by_id = {id(k): v for k, v in vmap.items()}
            self.lookup = lambda v: by_id.get(id(v))

    def visit_Var(self, v: Var) -> PrimExpr:
        r = self.lookup(v)
        return v if r is None else r


def substitute(node, vmap: VarMap):
    """``node`` (expression, statement, region, ...) with variables replaced by
    ``vmap`` (a mapping, or a function returning the replacement or None). Unchanged
    subtrees are returned as the same objects."""
    if not vmap and not callable(vmap):
        return node
    return _Substituter(vmap).visit(node)

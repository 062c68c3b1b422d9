"""Variable substitution over loop IR (a utility of the passes, not a pass)."""

from __future__ import annotations

from typing import Callable, Mapping, Union

from ..buffer import Buffer
from ..expr import PrimExpr, Var
from .rewriter import IRRewriter

VarMap = Union[Mapping[Var, PrimExpr], Callable[[Var], Union[PrimExpr, None]]]


class Substituter(IRRewriter):
    """Replaces variables by expressions (``lookup`` returns the replacement or None)."""

    def __init__(self, lookup: Callable[[Var], PrimExpr | None]):
        super().__init__()
        self.lookup = lookup

    def var(self, v: Var) -> PrimExpr:
        r = self.lookup(v)
        return v if r is None else r

    def rewrite_buffer(self, b: Buffer) -> Buffer:
        # A data pointer can only be renamed, never replaced by an expression.
        data = self.lookup(b.data)
        if data is not None and not isinstance(data, Var):
            return b
        return super().rewrite_buffer(b)


def substitute(node, vmap: VarMap):
    """``node`` (expression, statement, region, ...) with variables replaced by
    ``vmap`` (a mapping, or a function returning the replacement or None). Unchanged
    subtrees are returned as the same objects."""
    if callable(vmap):
        return Substituter(vmap)(node)
    if not vmap:
        return node
    by_id = {id(k): v for k, v in vmap.items()}
    return Substituter(lambda v: by_id.get(id(v)))(node)

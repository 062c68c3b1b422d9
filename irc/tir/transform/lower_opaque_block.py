"""LowerOpaqueBlock: remove blocks, leaving plain statements.

Algorithm: every ``BlockRealize`` becomes its block's body, wrapped (inside out) in
``Allocate(buffer.data, dtype, shape, scope, DeclBuffer(buffer, ...))`` for each of the
block's ``alloc_buffers`` and, when the realize predicate is not the constant true, in
``IfThenElse(predicate, ...)``. Loops of extent 1 without annotations (other than thread
bindings) are removed, their variable replaced by the loop minimum. Loop annotations
and ``thread_binding`` loops are kept as they are (code generators read them).

Preconditions: blocks are opaque (ConvertBlocksToOpaque), inits lowered (LowerInitBlock)
and match buffers lowered (LowerMatchBuffer).
Postconditions: no Block or BlockRealize remains; allocations are explicit ``Allocate``
statements still holding N-d buffers (FlattenBuffer flattens them).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.diagnostics import LoweringError
from ..expr import IntImm, Var
from ..functor.stmt_util import map_stmt_children
from ..functor.substitute import substitute
from ..stmt import Allocate, BlockRealize, DeclBuffer, For, IfThenElse, PrimFunc, Stmt
from .base import PrimFuncPass


class _Lower:
    def __init__(self) -> None:
        self.unit_vars: dict[Var, object] = {}

    def visit(self, s: Stmt) -> Stmt:
        cls = type(s)
        if cls is BlockRealize:
            return self.realize(s)
        if cls is For:
            if (type(s.extent) is IntImm and s.extent.value == 1 and not s.annotations
                    and s.kind != "thread_binding"):
                # Unit-loop variables are replaced once, at the end, by their minimum.
                self.unit_vars[s.loop_var] = substitute(s.min, self.unit_vars)
                return self.visit(s.body)
            return map_stmt_children(s, self.visit)
        return map_stmt_children(s, self.visit)

    def realize(self, r: BlockRealize) -> Stmt:
        block = r.block
        if block.iter_vars:
            raise LoweringError(
                f"block {block.name!r} still has iteration variables; run "
                "ConvertBlocksToOpaque before LowerOpaqueBlock", node=block)
        if block.init is not None:
            raise LoweringError(
                f"block {block.name!r} still has an init statement; run LowerInitBlock "
                "before LowerOpaqueBlock", node=block)
        if block.match_buffers:
            raise LoweringError(
                f"block {block.name!r} still has match_buffers; run LowerMatchBuffer "
                "before LowerOpaqueBlock", node=block)
        body = self.visit(block.body)
        for buf in reversed(block.alloc_buffers):
            body = Allocate(buffer_var=buf.data, dtype=buf.dtype, extents=buf.shape,
                            scope=buf.scope, body=DeclBuffer(buffer=buf, body=body))
        pred = r.predicate
        if not (type(pred) is IntImm and pred.value == 1):
            body = IfThenElse(condition=pred, then_case=body)
        return body


@dataclass(frozen=True)
class LowerOpaqueBlock(PrimFuncPass):
    """Replace opaque blocks by their bodies with explicit allocations and predicates."""


    def transform_function(self, func: PrimFunc) -> PrimFunc:
        lower = _Lower()
        body = lower.visit(func.body)
        if lower.unit_vars:
            body = substitute(body, lower.unit_vars)
        return func.with_body(body)


def lower_opaque_block(func: PrimFunc) -> PrimFunc:
    """Functional form of :class:`LowerOpaqueBlock`."""
    return LowerOpaqueBlock()(func)

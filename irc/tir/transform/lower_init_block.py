"""LowerInitBlock: turn a block's ``init`` statement into a guarded statement of its body.

Algorithm: for every block with an ``init``, the body becomes
``if v_r0 == min_r0 and v_r1 == min_r1 ...: init`` followed by the old body, where the
``v_r`` are the block's reduction iteration variables (``iter_type == "reduce"``) and
``min_r`` the minimum of their domains. A block without reduction variables runs its
init unconditionally before the body.

Preconditions: block form (blocks may be nested).
Postconditions: no block has an ``init``; everything else is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import expr as E
from ..functor.rewriter import IRRewriter
from ..stmt import Block, IfThenElse, PrimFunc, seq
from .base import PrimFuncPass


class _Lower(IRRewriter):
    def stmt_Block(self, block: Block) -> Block:
        block = super().stmt_Block(block)
        if block.init is None:
            return block
        conds = [E._compare(E.EQ, iv.var, iv.dom.min)
                 for iv in block.iter_vars if iv.iter_type == "reduce"]
        init = block.init if not conds else IfThenElse(condition=E.all(*conds),
                                                       then_case=block.init)
        return block.replace(init=None, body=seq(init, block.body))


@dataclass(frozen=True)
class LowerInitBlock(PrimFuncPass):
    """Move every block's ``init`` into its body under a first-reduction-iteration guard."""


    def transform_function(self, func: PrimFunc) -> PrimFunc:
        return func.with_body(_Lower().stmt(func.body))


def lower_init_block(func: PrimFunc) -> PrimFunc:
    """Functional form of :class:`LowerInitBlock`."""
    return LowerInitBlock()(func)

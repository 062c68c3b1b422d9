"""ConvertBlocksToOpaque: replace block iteration variables by the expressions they are
bound to, leaving blocks without iteration variables ("opaque" blocks).

Algorithm: for every BlockRealize (innermost first), substitute each iteration variable
of its block by the corresponding ``iter_values`` entry in the block's body, init,
read/write regions and match-buffer sources; drop the iteration variables and values.

Preconditions: block form; LowerInitBlock has run if reductions must keep their
first-iteration guard (the init is substituted like the body otherwise).
Postconditions: every BlockRealize has no iter_values and every Block no iter_vars;
loads and stores index buffers with loop variables directly.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..functor.rewriter import IRRewriter
from ..functor.substitute import substitute
from ..stmt import BlockRealize, PrimFunc
from .base import PrimFuncPass


class _Convert(IRRewriter):
    def stmt_BlockRealize(self, realize: BlockRealize) -> BlockRealize:
        realize = super().stmt_BlockRealize(realize)
        block = realize.block
        if not block.iter_vars:
            return realize
        vmap = {iv.var: v for iv, v in zip(block.iter_vars, realize.iter_values)}
        block = block.replace(
            iter_vars=(),
            body=substitute(block.body, vmap),
            init=None if block.init is None else substitute(block.init, vmap),
            reads=substitute(block.reads, vmap),
            writes=substitute(block.writes, vmap),
            match_buffers=substitute(block.match_buffers, vmap),
        )
        return realize.replace(iter_values=(), block=block)


@dataclass(frozen=True)
class ConvertBlocksToOpaque(PrimFuncPass):
    """Substitute block iteration variables by their bindings and drop them."""


    def transform_function(self, func: PrimFunc) -> PrimFunc:
        return func.with_body(_Convert().stmt(func.body))


def convert_blocks_to_opaque(func: PrimFunc) -> PrimFunc:
    """Functional form of :class:`ConvertBlocksToOpaque`."""
    return ConvertBlocksToOpaque()(func)

"""Graph ``If`` bindings out of dataflow blocks.

The importer converts a graph inside one dataflow block; an ``If`` whose condition is
known only at run time is bound there like any node. A dataflow block holds no ``If``
(``irc.ir.well_formed``), so :func:`if_out_of_dataflow` splits each such block around
its ``If`` bindings: the bindings between them stay dataflow blocks, each ``If`` gets a
binding block of its own, and a ``DataflowVar`` bound in one piece and read in another
(or bound by an ``If``) becomes a ``Var``.
"""

from __future__ import annotations

from typing import Any

from ...core.functor import Mutator, Visitor
from ...core.module import IRModule
from ...ir.expr import (
    BindingBlock,
    DataflowBlock,
    DataflowVar,
    Function,
    If,
    MatchCast,
    SeqExpr,
    Var,
    VarBinding,
)


def _is_if(binding: Any) -> bool:
    return isinstance(binding, VarBinding) and isinstance(binding.value, If)


class _Uses(Visitor):
    """``id``s of the variables a node reads (binding sites are not reads)."""

    def __init__(self) -> None:
        self.ids: set[int] = set()

    def visit_Var(self, v: Var) -> None:
        self.ids.add(id(v))

    visit_DataflowVar = visit_Var

    def visit_VarBinding(self, b: VarBinding) -> None:
        self.visit(b.value)

    def visit_MatchCast(self, b: MatchCast) -> None:
        self.visit(b.value)

    def visit_StructInfo(self, s: Any) -> None:
        return None


class _AsVars(Mutator):
    def __init__(self, mapping: dict[int, Var]):
        super().__init__()
        self.mapping = mapping

    def visit_DataflowVar(self, v: DataflowVar) -> Any:
        return self.mapping.get(id(v), v)

    def visit_StructInfo(self, s: Any) -> Any:
        return s


def _split(block: DataflowBlock) -> list[BindingBlock]:
    pieces: list[BindingBlock] = []
    run: list[Any] = []
    for b in block.bindings:
        if _is_if(b):
            if run:
                pieces.append(DataflowBlock(bindings=tuple(run)))
                run = []
            pieces.append(BindingBlock(bindings=(b,)))
        else:
            run.append(b)
    if run:
        pieces.append(DataflowBlock(bindings=tuple(run)))
    return pieces


def _function(func: Function) -> Function:
    body = func.body
    if not isinstance(body, SeqExpr) or not any(
            isinstance(blk, DataflowBlock) and any(_is_if(b) for b in blk.bindings)
            for blk in body.blocks):
        return func
    blocks: list[BindingBlock] = []
    for blk in body.blocks:
        blocks.extend(_split(blk) if isinstance(blk, DataflowBlock) else [blk])
    uses = []
    for blk in blocks:
        u = _Uses()
        u.visit(blk.bindings)
        uses.append(u.ids)
    tail = _Uses()
    tail.visit(body.body)
    mapping: dict[int, Var] = {}
    for k, blk in enumerate(blocks):
        elsewhere = set(tail.ids).union(*(ids for j, ids in enumerate(uses) if j != k))
        for b in blk.bindings:
            v = b.var
            if isinstance(v, DataflowVar) and (not isinstance(blk, DataflowBlock)
                                               or id(v) in elsewhere):
                mapping[id(v)] = Var(name_hint=v.name_hint, struct_info=v.struct_info)
    new_body = _AsVars(mapping).visit(body.replace(blocks=tuple(blocks)))
    return func.replace(body=new_body)


def if_out_of_dataflow(mod: IRModule) -> IRModule:
    """``mod`` with every graph function's ``If`` bindings moved out of dataflow blocks
    (module docstring); the same module when none is in one."""
    updates = {gv: new for gv, f in mod.functions.items()
               if isinstance(f, Function) and (new := _function(f)) is not f}
    return mod.with_functions(updates) if updates else mod

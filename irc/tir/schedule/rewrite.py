"""Statement rewriting shared by the primitives: substituting loop variables into block
bindings, replacing buffers, and recomputing a block's access regions."""

from __future__ import annotations

from typing import Callable

from ...core.functor import Mutator
from ..analysis import detect_block_access_regions
from ..buffer import Buffer, BufferRegion
from ..expr import BufferLoad, IntImm, PrimExpr, Var, logical_and
from ..functor.substitute import substitute
from ..stmt import Block, BlockRealize, For, SeqStmt, Stmt
from .state import _CHILDREN, var_ids

Simplify = Callable[[PrimExpr], PrimExpr]


def and_predicate(old: PrimExpr, extra: PrimExpr | None) -> PrimExpr:
    """``old && extra`` without a redundant ``True``."""
    if extra is None:
        return old
    if type(old) is IntImm and old.value == 1:
        return extra
    return logical_and(old, extra)


def rewrite_bindings(s: Stmt, vmap: dict[int, PrimExpr], simplify: Simplify,
                     extra_predicate: PrimExpr | None = None) -> Stmt:
    """``s`` with loop variables (keys: ids) replaced in loop bounds, block bindings and
    predicates (simplified), and ``extra_predicate`` added to the blocks directly under
    ``s``. Bodies of blocks with iteration variables cannot use outer loop variables and
    are not visited."""
    keys = set(vmap)

    def sub(e: PrimExpr) -> PrimExpr:
        if keys.isdisjoint(var_ids(e)):
            return e
        return simplify(substitute(e, lambda v: vmap.get(id(v))))

    def go(x: Stmt, top: bool) -> Stmt:
        t = type(x)
        if t is BlockRealize:
            values = tuple(sub(v) for v in x.iter_values)
            pred = sub(x.predicate)
            if top:
                pred = and_predicate(pred, extra_predicate)
            block = x.block
            if not block.iter_vars:
                block = substitute(block, lambda v: vmap.get(id(v)))
            if all(a is b for a, b in zip(values, x.iter_values)) and pred is x.predicate \
                    and block is x.block:
                return x
            return BlockRealize(iter_values=values, predicate=pred, block=block)
        if t is For:
            body = go(x.body, top)
            return x.replace(min=sub(x.min), extent=sub(x.extent), body=body)
        if t is SeqStmt:
            items = tuple(go(c, top) for c in x.seq)
            if all(a is b for a, b in zip(items, x.seq)):
                return x
            return SeqStmt(seq=items)
        fields = _CHILDREN.get(t)
        if fields:
            # IfThenElse / LetStmt / ...: expressions may use the variables too.
            return substitute(x, lambda v: vmap.get(id(v)))
        return x

    return go(s, True)


class _BufferReplacer(Mutator):
    def __init__(self, bmap: dict[int, Buffer]):
        super().__init__()
        self.bmap = bmap

    def visit_Buffer(self, b: Buffer) -> Buffer:
        return self.bmap.get(id(b), b)


def replace_buffers(node, bmap: dict[int, Buffer]):
    """``node`` with buffers (keys: ids) replaced everywhere (loads, stores, regions,
    allocations)."""
    if not bmap:
        return node
    return _BufferReplacer(bmap).visit(node)


class _LoadReplacer(Mutator):
    def __init__(self, fn: Callable[[BufferLoad], PrimExpr | None]):
        super().__init__()
        self.fn = fn

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        new = self.generic_visit(e)
        r = self.fn(new)
        return new if r is None else r


def replace_loads(node, fn: Callable[[BufferLoad], PrimExpr | None]):
    """``node`` with every BufferLoad ``x`` replaced by ``fn(x)`` (when not None)."""
    return _LoadReplacer(fn).visit(node)


def with_detected_regions(block: Block, like: Block | None = None,
                          renamed: dict[int, Buffer | list[Buffer]] | None = None) -> Block:
    """``block`` with reads and writes recomputed from its body, in the declared order of
    ``like`` (``block`` by default; ``renamed`` maps ids of its buffers to the buffer or
    buffers that took their place)."""
    reads, writes = detect_block_access_regions(block)
    like = like or block
    return block.replace(reads=tuple(_ordered(like.reads, reads, renamed)),
                         writes=tuple(_ordered(like.writes, writes, renamed)))


def _ordered(old: tuple[BufferRegion, ...], new: list[BufferRegion],
             renamed: dict[int, Buffer | list[Buffer]] | None) -> list[BufferRegion]:
    rank: dict[int, int] = {}
    for r in old:
        b = renamed.get(id(r.buffer), r.buffer) if renamed else r.buffer
        for x in (b if isinstance(b, list) else [b]):
            rank.setdefault(id(x), len(rank))
    return sorted(new, key=lambda r: rank.get(id(r.buffer), len(rank)))


def substitute_vars(node, vmap: dict[int, PrimExpr]):
    """``node`` with variables (keys: ids) replaced."""
    if not vmap:
        return node
    return substitute(node, lambda v: vmap.get(id(v)))


def is_var_tuple(indices, candidates: dict[int, Var]) -> bool:
    """True when every index is a distinct variable among ``candidates``."""
    seen = set()
    for i in indices:
        if type(i) is not Var or id(i) not in candidates or id(i) in seen:
            return False
        seen.add(id(i))
    return True



def loads_of(e, buf: Buffer) -> list[BufferLoad]:
    """The loads of ``buf`` in ``e`` (an expression or statement)."""
    out: list[BufferLoad] = []

    def note(ld: BufferLoad) -> None:
        if ld.buffer is buf:
            out.append(ld)

    replace_loads(e, note)
    return out

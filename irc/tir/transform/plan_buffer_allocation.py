"""PlanAndUpdateBufferAllocationLocation: allocate every block-allocated buffer at the
lowest common ancestor (LCA) of its accesses.

Algorithm: collect the ``alloc_buffers`` of all blocks. Walk the function keeping the
stack of enclosing loops and blocks; each load, store, declared region, match-buffer
source or opaque use of a buffer's data pointer narrows that buffer's LCA to the common
prefix of the stacks seen so far. A global-scope buffer is lifted above the outermost
``blockIdx`` loop of its LCA path (GPU kernels cannot allocate global memory). Then each
buffer is re-declared at its LCA: in the ``alloc_buffers`` of the LCA block, or, when the
LCA is a loop, in a new opaque block (no iteration variables, reads/writes detected)
wrapping the loop's body. A buffer that is never accessed stays in the outermost block.

Preconditions: block form with a root block (``te.create_prim_func``, the parser).
Postconditions: the same computation; allocations sit as deep as possible, which lets
CompactBufferAllocation shrink them to the region one iteration of the outer loops uses.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.node import Node, node_fields
from ..analysis.block_access import detect_block_access_regions
from ..buffer import Buffer
from ..expr import BufferLoad, IntImm, Var
from ..functor.rewriter import IRRewriter
from ..stmt import Block, BlockRealize, BufferStore, For, PrimFunc, Stmt
from .base import PrimFuncPass


class _LCADetector:
    def __init__(self, buffers: list[Buffer]):
        self.buffers = {id(b): b for b in buffers}
        self.by_data = {id(b.data): b for b in buffers}
        self.stack: list[Node] = []
        self.lca: dict[int, list[Node]] = {}
        self.root: Node | None = None

    def touch(self, buf: Buffer) -> None:
        if id(buf) not in self.buffers:
            return
        path = self.lca.get(id(buf))
        if path is None:
            self.lca[id(buf)] = list(self.stack)
            return
        n = 0
        for a, b in zip(path, self.stack):
            if a is not b:
                break
            n += 1
        del path[n:]

    def expr(self, e) -> None:
        if isinstance(e, (tuple, list)):
            for x in e:
                self.expr(x)
            return
        if not isinstance(e, Node) or isinstance(e, Buffer):
            return
        cls = type(e)
        if cls is BufferLoad:
            self.touch(e.buffer)
        elif cls is Var:
            buf = self.by_data.get(id(e))
            if buf is not None:
                self.touch(buf)
            return
        for f in node_fields(cls):
            if f != "span":
                self.expr(getattr(e, f))

    def stmt(self, s) -> None:
        if s is None:
            return
        cls = type(s)
        if cls is For:
            self.expr((s.min, s.extent))
            self.stack.append(s)
            self.stmt(s.body)
            self.stack.pop()
        elif cls is BlockRealize:
            self.expr((s.iter_values, s.predicate))
            block = s.block
            if self.root is None:
                self.root = block
            # A block's declared regions are seen from outside it: a buffer the block
            # only declares (a write nothing reads) is allocated around the block, where
            # its reads/writes can name it.
            for r in (*block.reads, *block.writes):
                self.touch(r.buffer)
                self.expr([(rg.min, rg.extent) for rg in r.region])
            self.stack.append(block)
            for mb in block.match_buffers:
                self.touch(mb.source.buffer)
            self.stmt(block.init)
            self.stmt(block.body)
            self.stack.pop()
        elif cls is BufferStore:
            self.touch(s.buffer)
            self.expr((s.value, s.indices))
        else:
            for f in node_fields(cls):
                if f == "span":
                    continue
                v = getattr(s, f)
                for x in (v if isinstance(v, tuple) else (v,)):
                    if isinstance(x, Stmt):
                        self.stmt(x)
                    else:
                        self.expr(x)

    def placement(self, b: Buffer) -> Node | None:
        path = self.lca.get(id(b))
        if path is None:
            return self.root
        if b.scope == "global":
            for i, n in enumerate(path):
                if type(n) is For and n.kind == "thread_binding" \
                        and n.thread_tag.startswith("blockIdx"):
                    del path[i:]
                    break
        return path[-1] if path else self.root


class _Rebuild(IRRewriter):
    def __init__(self, owners: dict[int, list[Buffer]], detect_regions: bool):
        super().__init__()
        self.owners = owners
        self.detect_regions = detect_regions

    def stmt_For(self, loop: For) -> Stmt:
        bufs = self.owners.get(id(loop))
        loop = super().stmt_For(loop)
        if not bufs:
            return loop
        block = Block(name="", iter_vars=(), reads=(), writes=(), body=loop.body,
                      alloc_buffers=tuple(bufs))
        if self.detect_regions:
            reads, writes = detect_block_access_regions(block)
            block = block.replace(reads=tuple(reads), writes=tuple(writes))
        realize = BlockRealize(iter_values=(), predicate=IntImm(dtype="bool", value=1),
                               block=block)
        return loop.replace(body=realize)

    def stmt_Block(self, block: Block) -> Block:
        bufs = tuple(self.owners.get(id(block), ()))
        block = super().stmt_Block(block)
        if len(bufs) == len(block.alloc_buffers) and all(
                a is b for a, b in zip(bufs, block.alloc_buffers)):
            return block
        return block.replace(alloc_buffers=bufs)


@dataclass(frozen=True)
class PlanAndUpdateBufferAllocationLocation(PrimFuncPass):
    """Move each block-allocated buffer to the LCA of its accesses. With
    ``detect_regions=False`` the opaque blocks it inserts get empty reads/writes (the
    lowering pipeline removes them anyway, and detection costs time)."""

    detect_regions: bool = True

    def transform_function(self, func: PrimFunc) -> PrimFunc:
        allocs: list[Buffer] = []
        for n in _blocks(func.body):
            allocs.extend(n.alloc_buffers)
        if not allocs:
            return func
        det = _LCADetector(allocs)
        det.stmt(func.body)
        owners: dict[int, list[Buffer]] = {}
        for b in allocs:
            where = det.placement(b)
            if where is not None:
                owners.setdefault(id(where), []).append(b)
        return func.with_body(_Rebuild(owners, self.detect_regions).stmt(func.body))


def _blocks(stmt) -> list[Block]:
    """Blocks in pre-order (outer blocks first)."""
    out: list[Block] = []

    def walk(x) -> None:
        if isinstance(x, (tuple, list)):
            for y in x:
                walk(y)
            return
        if not isinstance(x, Stmt):
            return
        if type(x) is Block:
            out.append(x)
        for f in node_fields(type(x)):
            if f != "span":
                walk(getattr(x, f))

    walk(stmt)
    return out


def plan_and_update_buffer_allocation_location(func: PrimFunc) -> PrimFunc:
    """Functional form of :class:`PlanAndUpdateBufferAllocationLocation`."""
    return PlanAndUpdateBufferAllocationLocation()(func)

"""Cache primitives: cache_read, cache_write, set_scope and storage_align.

cache_read adds a block copying a buffer into a new buffer of the given storage scope
(placed right after the buffer's producer in the scope, or first when it is an input)
and makes the chosen consumers read the copy. cache_write redirects a block's writes
into a new buffer and adds a block copying the written region back, right after it.
Both copies cover the whole buffer (cache_read) or the region the block writes at the
scope level (cache_write); ``compute_at`` / ``reverse_compute_at`` then shrink them to
tiles.
"""

from __future__ import annotations

from ..arith import Analyzer
from ..buffer import STORAGE_SCOPES, Buffer, BufferRegion
from ..expr import BufferLoad, IntImm, IterVar, Range, Var, const
from ..stmt import Block, BlockRealize, BufferStore, PrimFunc, SeqStmt, Stmt
from .analysis import check_order, fail, writers
from .compute_location import rebind_block, relaxed_region
from .rewrite import replace_buffers
from .state import FuncIndex, buffer_names, child_blocks, fresh_name


def _check_scope(P: str, scope: str) -> None:
    if scope not in STORAGE_SCOPES:
        fail(P, f"unknown storage scope {scope!r}; use one of {', '.join(STORAGE_SCOPES)}")


def _cache_buffer(index: FuncIndex, buf: Buffer, scope: str) -> Buffer:
    taken = buffer_names(index.func) | index.all_names()
    name = fresh_name(f"{buf.name}_{scope.replace('.', '_')}", taken)
    return Buffer(name=name, shape=buf.shape, dtype=buf.dtype,
                  data=Var(name=name, dtype="handle"), scope=scope)


def copy_stage(name: str, src: Buffer, dst: Buffer, index: FuncIndex | None = None,
               at: Stmt | None = None, region: BufferRegion | None = None,
               writer: BlockRealize | None = None) -> Stmt:
    """A loop nest with a block ``dst[v] = src[v]``: over the whole buffer, or (with
    ``at``) over the part of ``region`` that ``writer`` writes in the statement ``at``
    (loops inside ``at`` relaxed, loops outside kept symbolic)."""
    shape = src.shape
    ivs = tuple(IterVar(var=Var(name=f"v{d}", dtype=n.dtype),
                        dom=Range(min=const(0, n.dtype), extent=n), iter_type="spatial")
                for d, n in enumerate(shape))
    idx = tuple(iv.var for iv in ivs)
    point = tuple(Range(min=v, extent=IntImm(dtype=v.dtype, value=1)) for v in idx)
    body = BufferStore(buffer=dst, value=BufferLoad(dtype=src.dtype, buffer=src, indices=idx),
                       indices=idx)
    block = Block(name=name, iter_vars=ivs, reads=(BufferRegion(buffer=src, region=point),),
                  writes=(BufferRegion(buffer=dst, region=point),), body=body)
    realize = BlockRealize(iter_values=idx, predicate=const(True), block=block)
    an = Analyzer()
    ranges: dict[int, tuple] = {}
    if at is not None:
        for lp in index.loops_above(at):
            an.bind(lp.loop_var, Range(min=lp.min, extent=lp.extent), allow_override=True)
        inner = [lp for lp in index.loops_above(writer) if lp is at or index.is_ancestor(at, lp)]
        rel = relaxed_region(an, writer, region, inner)
        ranges = {id(iv.var): r for iv, r in zip(ivs, rel)}
    return rebind_block("cache", an, realize, ranges, False)


def _with_stage_after(func: PrimFunc, writer_name: str, stage_of) -> PrimFunc:
    """``func`` with ``stage_of(index, nest, writer)`` inserted right after the loop nest
    that holds only block ``writer_name``."""
    index = FuncIndex(func)
    writer = index.blocks[writer_name]
    nest = index.removal_root(writer)
    stage = stage_of(index, nest, writer)
    return index.rebuild({id(nest): SeqStmt(seq=(nest, stage))})


def _with_stage_first(func: PrimFunc, scope_name: str, stage: Stmt) -> PrimFunc:
    index = FuncIndex(func)
    block = index.blocks[scope_name].block
    body = block.body
    items = list(body.seq) if type(body) is SeqStmt else [body]
    return index.rebuild({id(block): block.replace(body=SeqStmt(seq=(stage, *items)))})


def _add_alloc(func: PrimFunc, scope_name: str, buf: Buffer) -> PrimFunc:
    index = FuncIndex(func)
    block = index.blocks[scope_name].block
    return index.rebuild({id(block): block.replace(alloc_buffers=block.alloc_buffers + (buf,))})


# ---------------------------------------------------------------------------------
# cache_read / cache_write
# ---------------------------------------------------------------------------------


def cache_read(index: FuncIndex, r: BlockRealize, read_index: int, scope: str,
               consumer_blocks: list[BlockRealize]) -> tuple[PrimFunc, str]:
    """Copy the ``read_index``-th read buffer of ``r`` into a ``scope`` buffer read by the
    consumers (all readers in the scope when ``consumer_blocks`` is empty). The copy
    runs right after the buffer's producer (copying what it writes there) or first in
    the scope for an input."""
    P = "cache_read"
    _check_scope(P, scope)
    block = r.block
    if not 0 <= read_index < len(block.reads):
        fail(P, f"block {block.name!r} reads {len(block.reads)} buffers; read index "
             f"{read_index} is out of range")
    buf = block.reads[read_index].buffer
    scope_r = index.scope_realize(r)
    blocks = child_blocks(scope_r)
    if consumer_blocks:
        cons = list(consumer_blocks)
        for c in cons:
            if index.scope_realize(c) is not scope_r:
                fail(P, f"consumer {c.block.name!r} is not in the scope of block "
                     f"{block.name!r}")
            if not any(x.buffer is buf for x in c.block.reads):
                fail(P, f"block {c.block.name!r} does not read buffer {buf.name!r}")
    else:
        cons = [b for b in blocks if any(x.buffer is buf for x in b.block.reads)]
    for c in cons:
        if any(w.buffer is buf for w in c.block.writes):
            fail(P, f"block {c.block.name!r} both reads and writes buffer {buf.name!r}; a "
                 "read cache would not see its writes", hint="use cache_write")
    wr = writers(blocks, buf)
    if len(wr) > 1:
        fail(P, f"buffer {buf.name!r} has several writer blocks in the scope")
    new_buf = _cache_buffer(index, buf, scope)
    repl: dict[int, Stmt | None] = {}
    for c in cons:
        repl[id(c.block)] = replace_buffers(c.block, {id(buf): new_buf})
    func = index.rebuild(repl)
    name = new_buf.name
    if wr:
        w_name = wr[0].block.name
        region = next(x for x in wr[0].block.writes if x.buffer is buf)
        func = _with_stage_after(func, w_name, lambda ix, nest, w: copy_stage(
            name, buf, new_buf, ix, nest, region, w))
    else:
        func = _with_stage_first(func, scope_r.block.name, copy_stage(name, buf, new_buf))
    func = _add_alloc(func, scope_r.block.name, new_buf)
    new_index = FuncIndex(func)
    check_order(new_index, new_index.blocks[scope_r.block.name], P)
    return func, name


def cache_write(index: FuncIndex, r: BlockRealize, write_index: int, scope: str
                ) -> tuple[PrimFunc, str]:
    """Make ``r`` write a ``scope`` buffer and copy what it writes back right after its
    loop nest."""
    P = "cache_write"
    _check_scope(P, scope)
    block = r.block
    if not 0 <= write_index < len(block.writes):
        fail(P, f"block {block.name!r} writes {len(block.writes)} buffers; write index "
             f"{write_index} is out of range")
    buf = block.writes[write_index].buffer
    if r is index.root:
        fail(P, "the root block cannot be cached")
    scope_r = index.scope_realize(r)
    blocks = child_blocks(scope_r)
    wr = writers(blocks, buf)
    if wr != [r]:
        names = ", ".join(repr(b.block.name) for b in wr)
        fail(P, f"buffer {buf.name!r} is written by blocks {names}; cache_write needs a "
             "block that is the buffer's only writer")
    new_buf = _cache_buffer(index, buf, scope)
    new_block = replace_buffers(block, {id(buf): new_buf})
    func = index.rebuild({id(block): new_block})
    region = next(x for x in new_block.writes if x.buffer is new_buf)
    name = new_buf.name
    func = _with_stage_after(func, block.name, lambda ix, nest, w: copy_stage(
        name, new_buf, buf, ix, nest, region, w))
    func = _add_alloc(func, scope_r.block.name, new_buf)
    new_index = FuncIndex(func)
    check_order(new_index, new_index.blocks[scope_r.block.name], P)
    return func, name


# ---------------------------------------------------------------------------------
# set_scope / storage_align
# ---------------------------------------------------------------------------------


def _written_intermediate(index: FuncIndex, r: BlockRealize, buffer_index: int, P: str
                          ) -> Buffer:
    block = r.block
    if not 0 <= buffer_index < len(block.writes):
        fail(P, f"block {block.name!r} writes {len(block.writes)} buffers; buffer index "
             f"{buffer_index} is out of range")
    buf = block.writes[buffer_index].buffer
    if id(buf) in index.param_buffer_ids():
        fail(P, f"buffer {buf.name!r} is a function parameter; only buffers the function "
             "allocates can change their storage")
    return buf


def set_scope(index: FuncIndex, r: BlockRealize, buffer_index: int, scope: str) -> PrimFunc:
    """Give the ``buffer_index``-th written buffer of ``r`` the storage scope ``scope``."""
    P = "set_scope"
    _check_scope(P, scope)
    buf = _written_intermediate(index, r, buffer_index, P)
    if buf.scope == scope:
        return index.func
    new_buf = buf.replace(scope=scope)
    return index.func.replace(body=replace_buffers(index.func.body, {id(buf): new_buf}))


def storage_align(index: FuncIndex, r: BlockRealize, buffer_index: int, axis: int,
                  factor: int, offset: int) -> PrimFunc:
    """Annotate ``r`` so lowering pads the stride of ``axis`` of its written buffer to
    ``k * factor + offset`` (``buffer_dim_align``)."""
    P = "storage_align"
    buf = _written_intermediate(index, r, buffer_index, P)
    ndim = len(buf.shape)
    if not -ndim <= axis < ndim:
        fail(P, f"buffer {buf.name!r} has {ndim} dimensions; axis {axis} is out of range")
    axis %= ndim
    if axis == ndim - 1:
        fail(P, f"axis {axis} is the innermost axis of buffer {buf.name!r}, whose stride is "
             "always 1; align an outer axis")
    if not isinstance(factor, int) or factor <= 0:
        fail(P, f"factor {factor!r} must be a positive integer")
    if not isinstance(offset, int) or not 0 <= offset < factor:
        fail(P, f"offset {offset!r} must be in [0, factor)")
    block = r.block
    entries = [list(e) for e in block.annotations.get("buffer_dim_align", [])
               if not (e[0] == buffer_index and e[1] == axis)]
    entries.append([buffer_index, axis, factor, offset])
    new_block = block.replace(annotations={**block.annotations, "buffer_dim_align": entries})
    return index.rebuild({id(block): new_block})

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
from ..expr import IntImm, IterVar, PrimExpr, Range, Var, const
from ..stmt import Block, BlockRealize, BufferStore, For, PrimFunc, SeqStmt, Stmt
from .analysis import fail, writers
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


def copy_block(name: str, src: Buffer, dst: Buffer, region: list[tuple[PrimExpr, PrimExpr]]
               ) -> Stmt:
    """A loop nest over ``region`` (``(min, extent)`` per dimension) with a block
    ``dst[v] = src[v]``."""
    ivs = []
    loops = []
    for d, (mn, ext) in enumerate(region):
        dtype = ext.dtype
        ivs.append(IterVar(var=Var(name=f"v{d}", dtype=dtype),
                           dom=Range(min=mn, extent=ext), iter_type="spatial"))
        loops.append(Var(name=f"ax{d}", dtype=dtype))
    idx = tuple(iv.var for iv in ivs)
    point = tuple(Range(min=v, extent=IntImm(dtype=v.dtype, value=1)) for v in idx)
    from ..expr import BufferLoad

    body = BufferStore(buffer=dst, value=BufferLoad(dtype=src.dtype, buffer=src, indices=idx),
                       indices=idx)
    block = Block(name=name, iter_vars=tuple(ivs),
                  reads=(BufferRegion(buffer=src, region=point),),
                  writes=(BufferRegion(buffer=dst, region=point),), body=body)
    values = tuple(lv if _is_zero(mn) else mn + lv for lv, (mn, _) in zip(loops, region))
    stmt: Stmt = BlockRealize(iter_values=values, predicate=const(True), block=block)
    for lv, (_, ext) in reversed(list(zip(loops, region))):
        stmt = For(loop_var=lv, min=const(0, lv.dtype), extent=ext, kind="serial", body=stmt)
    return stmt


def _is_zero(e: PrimExpr) -> bool:
    return type(e) is IntImm and e.value == 0


def _full(buf: Buffer) -> list[tuple[PrimExpr, PrimExpr]]:
    return [(const(0, s.dtype), s) for s in buf.shape]


def insert_into_scope(func: PrimFunc, scope_name: str, stmt: Stmt, after: str | None,
                      new_alloc: Buffer) -> PrimFunc:
    """``func`` with ``stmt`` added to the body of block ``scope_name`` right after the
    statement holding block ``after`` (first when None), and ``new_alloc`` allocated by
    that block."""
    index = FuncIndex(func)
    scope = index.blocks[scope_name]
    body = scope.block.body
    items = list(body.seq) if type(body) is SeqStmt else [body]
    pos = 0
    if after is not None:
        top = index.top_in_scope(index.blocks[after], scope)
        pos = next(k for k, it in enumerate(items) if it is top) + 1
    items.insert(pos, stmt)
    new_block = scope.block.replace(body=SeqStmt(seq=tuple(items)),
                                    alloc_buffers=scope.block.alloc_buffers + (new_alloc,))
    return index.rebuild({id(scope.block): new_block})


# ---------------------------------------------------------------------------------
# cache_read / cache_write
# ---------------------------------------------------------------------------------


def cache_read(index: FuncIndex, r: BlockRealize, read_index: int, scope: str,
               consumer_blocks: list[BlockRealize]) -> tuple[PrimFunc, str]:
    """Copy the ``read_index``-th read buffer of ``r`` into a ``scope`` buffer read by the
    consumers (all readers in the scope when ``consumer_blocks`` is empty)."""
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
    after = wr[0].block.name if wr else None
    if wr:
        order = {id(b): k for k, b in enumerate(blocks)}
        for c in cons:
            if order[id(c)] < order[id(wr[0])]:
                fail(P, f"consumer {c.block.name!r} runs before the producer of "
                     f"{buf.name!r}")
    new_buf = _cache_buffer(index, buf, scope)
    repl: dict[int, Stmt | None] = {}
    for c in cons:
        repl[id(c.block)] = replace_buffers(c.block, {id(buf): new_buf})
    func = index.rebuild(repl)
    stmt = copy_block(new_buf.name, buf, new_buf, _full(buf))
    func = insert_into_scope(func, scope_r.block.name, stmt, after, new_buf)
    return func, new_buf.name


def cache_write(index: FuncIndex, r: BlockRealize, write_index: int, scope: str
                ) -> tuple[PrimFunc, str]:
    """Make ``r`` write a ``scope`` buffer and copy the region it writes back."""
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
    region = _written_region(index, r, block.writes[write_index])
    func = index.rebuild({id(block): new_block})
    stmt = copy_block(new_buf.name, new_buf, buf, region)
    func = insert_into_scope(func, scope_r.block.name, stmt, block.name, new_buf)
    return func, new_buf.name


def _written_region(index: FuncIndex, r: BlockRealize, w: BufferRegion
                    ) -> list[tuple[PrimExpr, PrimExpr]]:
    """``(min, extent)`` per dimension of what ``r`` writes over all its loops (the whole
    buffer when not constant)."""
    from .compute_location import _relaxed_region

    an = Analyzer()
    rel = _relaxed_region(an, r, w, index.loops_above(r))
    out = []
    for (lo, hi), dim in zip(rel, w.buffer.shape):
        if type(lo) is IntImm and type(hi) is IntImm and lo.value >= 0:
            out.append((lo, const(hi.value - lo.value + 1, dim.dtype)))
        else:
            return _full(w.buffer)
    return out


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

"""CompactBufferAllocation: shrink each block-allocated buffer to the region its
allocation scope actually touches.

Algorithm: walk the function binding loop variables in an analyzer. At each block with
``alloc_buffers``, collect every load and store of those buffers inside the block,
relaxing the loops (and nested blocks' iteration variables) defined inside it over their
ranges; variables bound outside stay symbolic. Per dimension the union of the intervals
gives ``[min, min + extent)``; when the extent has a constant upper bound smaller than
the buffer's extent, the dimension shrinks to it and every access (and nested region)
subtracts ``min``. A buffer whose data pointer is used opaquely keeps its shape. Block
annotations ``buffer_dim_align = [[write_index, axis, factor, offset], ...]`` (from
``storage_align``) pad the compacted buffer's strides so that
``stride[axis] % factor == offset``.

Preconditions: block form; best after PlanAndUpdateBufferAllocationLocation and
ConvertBlocksToOpaque (allocations sit at the access LCA; indices use loop variables).
Postconditions: the same computation on smaller intermediate buffers (the seed-002 matmul
stage allocated under the fused parallel loop becomes a 512-element tile).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.node import Node, node_fields
from ..arith import Analyzer, IntervalSet, union_intervals
from ..buffer import Buffer, BufferRegion
from ..expr import BufferLoad, IntImm, PrimExpr, Range, Var
from ..functor.rewriter import IRRewriter
from ..functor.stmt_util import map_stmt_children
from ..stmt import Block, BlockRealize, BufferStore, For, LetStmt, PrimFunc, Stmt
from .base import PrimFuncPass


class _AccessRegions:
    """Per-dimension intervals of the accesses to ``targets`` inside one block."""

    def __init__(self, an: Analyzer, targets: list[Buffer]):
        self.an = an
        self.targets = {id(b): b for b in targets}
        self.by_data = {id(b.data): b for b in targets}
        self.dom: dict[Var, object] = {}
        self.sets: dict[int, list[list[IntervalSet]]] = {id(b): [] for b in targets}
        self.opaque: set[int] = set()

    def access(self, buf: Buffer, indices) -> None:
        if id(buf) in self.targets:
            self.sets[id(buf)].append([self.an.int_set(i, self.dom) for i in indices])

    def expr(self, e) -> None:
        if isinstance(e, (tuple, list)):
            for x in e:
                self.expr(x)
            return
        if not isinstance(e, Node) or isinstance(e, Buffer):
            return
        cls = type(e)
        if cls is BufferLoad:
            self.expr(e.indices)
            self.access(e.buffer, e.indices)
            return
        if cls is Var:
            b = self.by_data.get(id(e))
            if b is not None:
                self.opaque.add(id(b))
            return
        for f in node_fields(cls):
            if f != "span":
                self.expr(getattr(e, f))

    def stmt(self, s) -> None:
        if s is None:
            return
        cls = type(s)
        if cls is BufferStore:
            self.expr((s.value, s.indices))
            self.access(s.buffer, s.indices)
        elif cls is For:
            self.expr((s.min, s.extent))
            self.dom[s.loop_var] = Range(min=s.min, extent=s.extent)
            self.stmt(s.body)
            del self.dom[s.loop_var]
        elif cls is LetStmt:
            self.expr(s.value)
            self.dom[s.var] = self.an.int_set(s.value, self.dom)
            self.stmt(s.body)
            del self.dom[s.var]
        elif cls is BlockRealize:
            self.expr((s.iter_values, s.predicate))
            block = s.block
            for iv, v in zip(block.iter_vars, s.iter_values):
                self.dom[iv.var] = self.an.int_set(v, self.dom)
            for mb in block.match_buffers:
                src = mb.source
                if id(src.buffer) in self.targets:
                    self.sets[id(src.buffer)].append(
                        [IntervalSet(self.an.int_set(r.min, self.dom).min_value,
                                     self.an.int_set(r.min + r.extent - 1, self.dom).max_value)
                         for r in src.region])
            self.stmt(block.init)
            self.stmt(block.body)
            for iv in block.iter_vars:
                del self.dom[iv.var]
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


def _dim_aligns(body: Stmt, buf: Buffer) -> dict[int, tuple[int, int]]:
    """``axis -> (factor, offset)`` from ``buffer_dim_align`` annotations of the blocks
    that write ``buf``."""
    out: dict[int, tuple[int, int]] = {}

    def walk(x) -> None:
        if isinstance(x, (tuple, list)):
            for y in x:
                walk(y)
            return
        if not isinstance(x, Stmt):
            return
        if type(x) is Block and "buffer_dim_align" in x.annotations:
            for entry in x.annotations["buffer_dim_align"]:
                idx, axis, factor, offset = (int(v) for v in entry)
                if idx < len(x.writes) and x.writes[idx].buffer is buf:
                    out[axis] = (factor, offset)
        for f in node_fields(type(x)):
            if f != "span":
                walk(getattr(x, f))

    walk(body)
    return out


def _aligned_strides(shape: tuple[PrimExpr, ...], aligns: dict[int, tuple[int, int]]):
    if not aligns:
        return ()
    strides: list[PrimExpr] = [IntImm(dtype=shape[-1].dtype, value=1)]
    for k in range(len(shape) - 2, -1, -1):
        stride = strides[0] * shape[k + 1]
        if k in aligns:
            factor, offset = aligns[k]
            if isinstance(stride, IntImm):
                stride = IntImm(dtype=stride.dtype,
                                value=stride.value + (offset - stride.value) % factor)
            else:
                stride = stride + (offset - stride) % factor
        strides.insert(0, stride)
    return tuple(strides)


class _Retarget(IRRewriter):
    """Point every access of the compacted buffers at their new buffers, shifted."""

    def __init__(self, new: dict[int, tuple[Buffer, list[PrimExpr]]]):
        super().__init__()
        self.new = new
        self.an = Analyzer()

    def _shift(self, indices, mins):
        return tuple(i if _is_zero(m) else self.an.simplify(i - m)
                     for i, m in zip(indices, mins))

    def rewrite_buffer(self, b: Buffer) -> Buffer:
        return b

    def load(self, e: BufferLoad, buffer: Buffer, indices: tuple):
        hit = self.new.get(id(buffer))
        if hit is None:
            return super().load(e, buffer, indices)
        return BufferLoad(dtype=e.dtype, buffer=hit[0], indices=self._shift(indices, hit[1]))

    def store(self, s: BufferStore, buffer: Buffer, value: PrimExpr, indices: tuple):
        hit = self.new.get(id(buffer))
        if hit is None:
            return super().store(s, buffer, value, indices)
        return BufferStore(buffer=hit[0], value=value, indices=self._shift(indices, hit[1]))

    def region(self, r: BufferRegion) -> BufferRegion:
        r = super().region(r)
        hit = self.new.get(id(r.buffer))
        if hit is None:
            return r
        region = tuple(Range(min=rg.min if _is_zero(m) else self.an.simplify(rg.min - m),
                             extent=rg.extent)
                       for rg, m in zip(r.region, hit[1]))
        return BufferRegion(buffer=hit[0], region=region)


_MAX_TILE = 1 << 24  # elements; larger "bounds" of symbolic extents are not tiles


def _is_zero(e: PrimExpr) -> bool:
    return type(e) is IntImm and e.value == 0


class _Compactor:
    def __init__(self) -> None:
        self.an = Analyzer()

    def visit(self, s: Stmt) -> Stmt:
        cls = type(s)
        if cls is For:
            self.an.bind(s.loop_var, Range(min=s.min, extent=s.extent), allow_override=True)
            return map_stmt_children(s, self.visit)
        if cls is BlockRealize:
            block = s.block
            for iv in block.iter_vars:
                self.an.bind(iv.var, iv.dom, allow_override=True)
            if block.alloc_buffers:
                block = self.compact(block)
            block = map_stmt_children(block, self.visit)
            return s if block is s.block else s.replace(block=block)
        return map_stmt_children(s, self.visit)

    def compact(self, block: Block) -> Block:
        an = self.an
        regions = _AccessRegions(an, list(block.alloc_buffers))
        regions.stmt(block.init)
        regions.stmt(block.body)
        new: dict[int, tuple[Buffer, list[PrimExpr]]] = {}
        allocs = []
        for buf in block.alloc_buffers:
            sets = regions.sets[id(buf)]
            if not sets or id(buf) in regions.opaque:
                allocs.append(buf)
                continue
            shape, mins, changed = [], [], False
            for dim, extent in enumerate(buf.shape):
                iv = union_intervals(an, [a[dim] for a in sets])
                zero = IntImm(dtype=extent.dtype, value=0)
                if iv.min_value is None or iv.max_value is None:
                    shape.append(extent)
                    mins.append(zero)
                    continue
                ext_bound = an.const_int_bound(iv.max_value - iv.min_value + 1).max_value
                # A symbolic extent only shrinks to a constant tile.
                full = extent.value if type(extent) is IntImm else _MAX_TILE
                if 1 <= ext_bound < full:
                    shape.append(IntImm(dtype=extent.dtype, value=int(ext_bound)))
                    mins.append(an.simplify(iv.min_value))
                    changed = True
                else:
                    shape.append(extent)
                    mins.append(zero)
            aligns = _dim_aligns(block.body, buf)
            if not changed and not aligns:
                allocs.append(buf)
                continue
            nb = buf.replace(shape=tuple(shape), strides=_aligned_strides(tuple(shape), aligns))
            new[id(buf)] = (nb, mins)
            allocs.append(nb)
        if not new:
            return block
        rt = _Retarget(new)
        return block.replace(
            alloc_buffers=tuple(allocs),
            body=rt.stmt(block.body),
            init=None if block.init is None else rt.stmt(block.init),
        )


@dataclass(frozen=True)
class CompactBufferAllocation(PrimFuncPass):
    """Shrink block-allocated buffers to the region their scope touches."""


    def transform_function(self, func: PrimFunc) -> PrimFunc:
        return func.with_body(_Compactor().visit(func.body))


def compact_buffer_allocation(func: PrimFunc) -> PrimFunc:
    """Functional form of :class:`CompactBufferAllocation`."""
    return CompactBufferAllocation()(func)

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
from ..functor.substitute import substitute
from ..stmt import Block, BlockRealize, BufferStore, For, LetStmt, PrimFunc, Stmt
from .base import PrimFuncPass

# GPU axes whose loops are not relaxed for buffers of a scope: each thread has its own
# ``local`` buffer and each block its own ``shared`` buffer, so their extents cover what
# one thread (one block) touches. Loops bound to these axes stand for one index, the
# same in every nest bound to that axis (a canonical variable per axis), so that sibling
# nests of one kernel agree on the region. ``vthread`` loops run inside one thread and are
# relaxed for every scope.
_KEPT_AXES = {
    "local": ("blockIdx", "threadIdx"),
    "warp": ("blockIdx", "threadIdx"),
    "shared": ("blockIdx",),
    "shared.dyn": ("blockIdx",),
}


def _policy(scope: str) -> str:
    """The relaxation policy of a storage scope: ``local``, ``shared`` or ``global``."""
    if scope in ("local", "warp") or scope.startswith("local."):
        return "local"
    if scope.startswith("shared"):
        return "shared"
    return "global"


_POLICIES = ("global", "shared", "local")


class _AccessRegions:
    """Per-dimension intervals of the accesses to ``targets`` inside one block; thread
    axes' canonical variables are ``canon`` (axis -> Var)."""

    def __init__(self, an: Analyzer, targets: list[Buffer], canon: dict[str, Var]):
        self.an = an
        self.targets = {id(b): b for b in targets}
        self.by_data = {id(b.data): b for b in targets}
        self.canon = canon
        # One domain per relaxation policy (see _KEPT_AXES).
        self.doms: dict[str, dict[Var, object]] = {p: {} for p in _POLICIES}
        self.dom = self.doms["global"]
        self.sets: dict[int, list[list[IntervalSet]]] = {id(b): [] for b in targets}
        self.opaque: set[int] = set()

    def access(self, buf: Buffer, indices) -> None:
        if id(buf) in self.targets:
            dom = self.doms[_policy(buf.scope)]
            self.sets[id(buf)].append([self.an.int_set(i, dom) for i in indices])

    def bind_loop(self, s: For) -> None:
        for policy, dom in self.doms.items():
            kept = _KEPT_AXES.get(policy, ())
            if s.kind == "thread_binding" and s.thread_tag.split(".")[0] in kept:
                cv = self.canon.get(s.thread_tag)
                if cv is None:
                    cv = Var(name=s.thread_tag.replace(".", "_"), dtype=s.loop_var.dtype)
                    self.canon[s.thread_tag] = cv
                elif cv.dtype != s.loop_var.dtype:
                    dom[s.loop_var] = Range(min=s.min, extent=s.extent)
                    continue
                dom[s.loop_var] = IntervalSet(cv, cv)
            else:
                dom[s.loop_var] = Range(min=s.min, extent=s.extent)

    def bind_value(self, v: Var, value: PrimExpr) -> None:
        for dom in self.doms.values():
            dom[v] = self.an.int_set(value, dom)

    def unbind(self, v: Var) -> None:
        for dom in self.doms.values():
            del dom[v]

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
            self.bind_loop(s)
            self.stmt(s.body)
            self.unbind(s.loop_var)
        elif cls is LetStmt:
            self.expr(s.value)
            self.bind_value(s.var, s.value)
            self.stmt(s.body)
            self.unbind(s.var)
        elif cls is BlockRealize:
            self.expr((s.iter_values, s.predicate))
            block = s.block
            for iv, v in zip(block.iter_vars, s.iter_values):
                self.bind_value(iv.var, v)
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
                self.unbind(iv.var)
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
    """Point every access of the compacted buffers at their new buffers, shifted. A
    shift that mentions a thread axis's canonical variable uses the variable of the loop
    bound to that axis around the access (0 outside any: such code runs on index 0)."""

    def __init__(self, new: dict[int, tuple[Buffer, list[PrimExpr]]], canon: dict[str, Var]):
        super().__init__()
        self.new = new
        self.an = Analyzer()
        self.canon = canon
        self.axis_loops: dict[str, list[Var]] = {}

    def stmt_For(self, s: For) -> Stmt:
        if s.kind != "thread_binding":
            return super().stmt_For(s)
        self.axis_loops.setdefault(s.thread_tag, []).append(s.loop_var)
        try:
            return super().stmt_For(s)
        finally:
            self.axis_loops[s.thread_tag].pop()

    def _min(self, m: PrimExpr) -> PrimExpr:
        if not self.canon:
            return m
        vmap: dict[Var, PrimExpr] = {}
        for tag, cv in self.canon.items():
            loops = self.axis_loops.get(tag)
            vmap[cv] = loops[-1] if loops else IntImm(dtype=cv.dtype, value=0)
        return substitute(m, vmap)

    def _shift(self, indices, mins):
        return tuple(i if _is_zero(m) else self.an.simplify(i - self._min(m))
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
        region = tuple(Range(min=rg.min if _is_zero(m) else
                             self.an.simplify(rg.min - self._min(m)),
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
        canon: dict[str, Var] = {}
        regions = _AccessRegions(an, list(block.alloc_buffers), canon)
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
        rt = _Retarget(new, canon)
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

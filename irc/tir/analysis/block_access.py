"""Detect the regions of buffers a block reads and writes.

Algorithm: walk the block's ``init`` and ``body`` keeping the ranges of the loops (and
let-bound values) defined inside the block. Every load and store contributes, per
dimension, the interval its index covers when those inner loop variables range over
their loops (the block's own iteration variables and everything defined outside stay
symbolic). A nested block contributes its declared regions with its iteration variables
replaced by their bindings and then relaxed the same way. Intervals of one buffer are
joined (per-dimension hull) and turned into Ranges; an unbounded dimension covers the
buffer's whole extent.

Buffers the block allocates itself are not regions of it. A buffer that is written is
left out of the reads when the block has an ``init`` (a reduction reads its output only
to accumulate), otherwise it appears in both, as TensorIR does. With ``buffer_var_map``,
a buffer whose data pointer appears in an expression outside of loads and stores (an
opaque access, e.g. passed to an extern call) is read and written as a whole.
"""

from __future__ import annotations

from typing import Mapping

from ...core.node import Node, node_fields
from ..arith import Analyzer, IntervalSet, union_intervals
from ..buffer import Buffer, BufferRegion
from ..expr import BufferLoad, IntImm, PrimExpr, Range, Var
from ..functor.substitute import substitute
from ..stmt import (
    Allocate,
    Block,
    BlockRealize,
    BufferStore,
    DeclBuffer,
    For,
    LetStmt,
    Stmt,
)


class _Collector:
    def __init__(self, an: Analyzer, excluded: set[int], buffer_var_map: Mapping | None):
        self.an = an
        self.dom: dict[Var, object] = {}
        self.excluded = excluded
        self.order: list[Buffer] = []
        self.reads: dict[int, list[list[IntervalSet]]] = {}
        self.writes: dict[int, list[list[IntervalSet]]] = {}
        self.buffer_var_map = {id(k): v for k, v in (buffer_var_map or {}).items()}
        self.match: dict[int, BufferRegion] = {}

    def note(self, table: dict, buf: Buffer, sets: list[IntervalSet]) -> None:
        src = self.match.get(id(buf))
        if src is not None:  # a match_buffer view: the access is to its source region
            buf, sets = src.buffer, [IntervalSet.from_range(r) for r in src.region]
        if id(buf) in self.excluded:
            return
        if id(buf) not in self.reads and id(buf) not in self.writes:
            self.order.append(buf)
        table.setdefault(id(buf), []).append(sets)

    def relax(self, e: PrimExpr) -> IntervalSet:
        if not self.dom:
            s = self.an.simplify(e)
            return IntervalSet(s, s)
        return self.an.int_set(e, self.dom)

    def access(self, table: dict, buf: Buffer, indices) -> None:
        self.note(table, buf, [self.relax(i) for i in indices])

    def region(self, table: dict, r: BufferRegion, subst: dict | None) -> None:
        sets = []
        for rg in r.region:
            lo = rg.min if subst is None else substitute(rg.min, subst)
            ext = rg.extent if subst is None else substitute(rg.extent, subst)
            hi = lo + ext - 1
            sets.append(IntervalSet(self.relax(lo).min_value, self.relax(hi).max_value))
        self.note(table, r.buffer, sets)

    # -- traversal ----------------------------------------------------------------------
    def expr(self, e) -> None:
        if isinstance(e, (tuple, list)):
            for x in e:
                self.expr(x)
            return
        if not isinstance(e, Node):
            return
        cls = type(e)
        if cls is BufferLoad:
            self.expr(e.indices)
            self.access(self.reads, e.buffer, e.indices)
            return
        if cls is Var:
            buf = self.buffer_var_map.get(id(e))
            if buf is not None:
                full = [IntervalSet.from_range(Range.from_min_extent(0, s)) for s in buf.shape]
                self.note(self.reads, buf, full)
                self.note(self.writes, buf, full)
            return
        if isinstance(e, Buffer):
            return
        for f in node_fields(cls):
            if f != "span":
                self.expr(getattr(e, f))

    def stmt(self, s) -> None:
        cls = type(s)
        if cls is BufferStore:
            self.expr(s.value)
            self.expr(s.indices)
            self.access(self.writes, s.buffer, s.indices)
        elif cls is For:
            self.expr((s.min, s.extent))
            self.dom[s.loop_var] = Range(min=s.min, extent=s.extent)
            self.stmt(s.body)
            del self.dom[s.loop_var]
        elif cls is LetStmt:
            self.expr(s.value)
            self.dom[s.var] = self.relax(s.value)
            self.stmt(s.body)
            del self.dom[s.var]
        elif cls is BlockRealize:
            self.expr((s.iter_values, s.predicate))
            inner = s.block
            subst = {iv.var: v for iv, v in zip(inner.iter_vars, s.iter_values)}
            for r in inner.reads:
                self.region(self.reads, r, subst)
            for r in inner.writes:
                self.region(self.writes, r, subst)
        elif cls is Allocate:
            self.expr((s.extents, s.condition))
            self.stmt(s.body)
        elif cls is DeclBuffer:
            self.excluded.add(id(s.buffer))
            self.stmt(s.body)
        else:
            for f in node_fields(cls):
                if f == "span":
                    continue
                v = getattr(s, f)
                if isinstance(v, tuple):
                    for x in v:
                        self._any(x)
                else:
                    self._any(v)

    def _any(self, v) -> None:
        if isinstance(v, Stmt):
            self.stmt(v)
        elif isinstance(v, (PrimExpr, tuple, list)):
            self.expr(v)

    # -- result -------------------------------------------------------------------------
    def regions(self, table: dict, exclude: set[int] = frozenset()) -> list[BufferRegion]:
        out = []
        for buf in self.order:
            accesses = table.get(id(buf))
            if not accesses or id(buf) in exclude:
                continue
            ranges = []
            for dim, extent in enumerate(buf.shape):
                iv = union_intervals(self.an, [a[dim] for a in accesses])
                ranges.append(_to_range(self.an, iv, extent))
            out.append(BufferRegion(buffer=buf, region=tuple(ranges)))
        return out


def _to_range(an: Analyzer, iv: IntervalSet, extent: PrimExpr) -> Range:
    if iv.min_value is None or iv.max_value is None:
        return Range(min=IntImm(dtype=extent.dtype, value=0), extent=extent)
    lo = iv.min_value
    ext = an.simplify(iv.max_value - lo + 1)
    return Range(min=lo, extent=ext)


def detect_block_access_regions(block: Block, buffer_var_map: Mapping[Var, Buffer] | None = None,
                                analyzer: Analyzer | None = None
                                ) -> tuple[list[BufferRegion], list[BufferRegion]]:
    """``(reads, writes)`` of ``block``: the regions (in terms of its iteration variables)
    its body and init access, with loops inside the block relaxed. See the module
    docstring for the rules."""
    an = analyzer or Analyzer()
    for iv in block.iter_vars:
        an.bind(iv.var, iv.dom, allow_override=True)
    excluded = {id(b) for b in block.alloc_buffers}
    c = _Collector(an, excluded, buffer_var_map)
    for mb in block.match_buffers:
        c.match[id(mb.buffer)] = mb.source
    if block.init is not None:
        c.stmt(block.init)
    c.stmt(block.body)
    writes = c.regions(c.writes)
    exclude_reads = {id(r.buffer) for r in writes} if block.init is not None else set()
    reads = c.regions(c.reads, exclude_reads)
    return reads, writes

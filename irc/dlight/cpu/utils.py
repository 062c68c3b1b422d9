"""Shared pieces of the CPU rules: vector widths, the parallelization threshold and the
schedule of one injective block (fuse, split by the vector width, vectorize,
parallelize)."""

from __future__ import annotations

from math import prod

from ...ir import dtype as dt
from ...ir.diagnostics import ScheduleError
from ...target import Target
from ...tir.expr import IntImm
from ...tir.schedule import LoopRV, Schedule
from ..analysis import BlockInfo, block_accesses, store_of

# Below this many scalar operations a kernel runs on one core: waking the thread pool
# costs a few microseconds, more than the work saves.
PARALLEL_MIN_WORK = 1 << 15
# Symbolic extents count as this many iterations when estimating work.
SYMBOLIC_EXTENT_GUESS = 64
# Longest loop vectorized as one vector expression (the code generator's limit).
MAX_VECTOR_EXTENT = 64


def vector_lanes(target: Target, dtype: str) -> int:
    """Elements of ``dtype`` per SIMD register of ``target`` (at least 1)."""
    bits = dt.bits(dtype) if dt.bits(dtype) > 0 else 32
    return max(1, target.vector_width_bits() // max(bits, 8))


def work_of(extents) -> int:
    """The product of loop extents (symbolic ones estimated)."""
    return prod(e.value if type(e) is IntImm else SYMBOLIC_EXTENT_GUESS for e in extents)


def wants_parallel(target: Target, work: int) -> bool:
    """True when a loop nest of ``work`` operations is worth running on all cores."""
    return target.num_cores > 1 and work >= PARALLEL_MIN_WORK


def largest_divisor(n: int, limit: int, multiple_of: int = 1) -> int:
    """The largest divisor of ``n`` that is at most ``limit`` and a multiple of
    ``multiple_of`` (0 when there is none)."""
    for d in range(min(n, limit), 0, -1):
        if n % d == 0 and d % multiple_of == 0:
            return d
    return 0


def vector_split(extent: int, lanes: int) -> int:
    """The inner factor to vectorize a loop of ``extent``: the vector width when it
    divides the extent, else a smaller power of two (at least 4) that does, else the
    whole loop when it is short, else 0 (leave it to LLVM)."""
    w = lanes
    while w >= 4:
        if extent % w == 0:
            return w
        w //= 2
    if extent <= MAX_VECTOR_EXTENT and extent >= 4:
        return extent
    return 0


def try_parallel(sch: Schedule, loop: LoopRV) -> bool:
    """Parallelize ``loop`` unless the schedule refuses (False then)."""
    try:
        sch.parallel(loop)
    except ScheduleError:
        return False
    return True


def try_vectorize(sch: Schedule, loop: LoopRV) -> bool:
    """Vectorize ``loop`` unless the schedule refuses (False then)."""
    try:
        sch.vectorize(loop)
    except ScheduleError:
        return False
    return True


def _row_major(info: BlockInfo) -> bool:
    """True when the block's store walks its output contiguously in loop order, so the
    loops can be fused into one contiguous loop."""
    store = store_of(info.block)
    if store is None:
        return False
    acc = next((a for a in block_accesses(info.block) if a.kind == "write"), None)
    if acc is None or acc.strides is None:
        return False
    expect = 1
    for it in reversed(info.iters):
        if it.var is None:
            continue
        ext = it.const_extent
        if ext is None or acc.stride(it.var) != expect:
            return False
        expect *= ext
    return True


def _transposed_pair(info: BlockInfo) -> tuple[int, int] | None:
    """Positions ``(p, q)`` of two loops when the innermost loop ``q`` is contiguous in
    the store but strided in a load that is contiguous along loop ``p`` (a transpose):
    tiling both keeps the cache lines of the load in use."""
    iters = info.iters
    if len(iters) < 2 or iters[-1].var is None:
        return None
    inner = iters[-1]
    for a in block_accesses(info.block):
        if a.kind != "read" or a.strides is None:
            continue
        s = a.stride(inner.var)
        if s in (0, 1):
            continue
        for p, it in enumerate(iters[:-1]):
            if it.var is not None and a.stride(it.var) == 1:
                return p, len(iters) - 1
    return None


def schedule_injective_block(sch: Schedule, info: BlockInfo, target: Target,
                             allow_parallel: bool = True) -> None:
    """Schedule one injective block: fuse its loops when its store is contiguous, split
    by the vector width and vectorize, tile transposes 16 x 16, and parallelize the outer
    loop when the work is large enough."""
    iters = info.iters
    if not iters:
        return
    store = store_of(info.block)
    lanes = vector_lanes(target, store.buffer.dtype if store is not None else "float32")
    work = work_of([it.extent for it in iters])
    parallel = allow_parallel and wants_parallel(target, work)
    pair = _transposed_pair(info)
    if pair is not None and all(iters[k].const_extent for k in pair):
        p, q = pair
        tp = largest_divisor(iters[p].const_extent, 16)
        tq = vector_split(iters[q].const_extent, min(lanes, 16))
        if tp >= 4 and tq >= 4:
            po, pi = sch.split(iters[p].loop_rv, [None, tp])
            qo, qi = sch.split(iters[q].loop_rv, [None, tq])
            outer = [it.loop_rv for k, it in enumerate(iters) if k not in (p, q)]
            sch.reorder(*outer[:p], po, *outer[p:], qo, pi, qi)
            try_vectorize(sch, qi)
            if parallel:
                loops = sch.get_loops(info.block_rv)
                try_parallel(sch, sch.fuse(*loops[:-2]))
            return
    if _row_major(info) and len(iters) > 1:
        fused = sch.fuse(*[it.loop_rv for it in iters])
        extent = work
        loops = [fused]
    else:
        loops = [it.loop_rv for it in iters]
        extent = iters[-1].const_extent
    inner = loops[-1]
    if extent is not None and type(sch.get(inner).extent) is IntImm:
        w = vector_split(sch.get(inner).extent.value, lanes)
        if w and w < sch.get(inner).extent.value:
            outer_v, inner_v = sch.split(inner, [None, w])
            loops = loops[:-1] + [outer_v, inner_v]
        if w and (store is None or _store_contiguous_in(info, iters[-1])):
            try_vectorize(sch, loops[-1])
    if parallel and len(loops) > 1:
        try_parallel(sch, loops[0])


def _store_contiguous_in(info: BlockInfo, it) -> bool:
    acc = next((a for a in block_accesses(info.block) if a.kind == "write"), None)
    return acc is not None and acc.stride(it.var) == 1

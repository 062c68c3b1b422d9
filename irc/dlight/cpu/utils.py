"""Shared pieces of the CPU rules: vector widths, the parallelization threshold and the
schedule of one injective block (fuse, split by the vector width, vectorize,
parallelize)."""

from __future__ import annotations

from math import prod
from typing import Any

from ...core import dtype as dt
from ...core.diagnostics import ScheduleError
from ...core.functor import post_order_visit
from ...core.target import Target
from ...tir.expr import GE, GT, LE, LT, Call, IntImm, Var
from ...tir.schedule import LoopRV, Schedule
from ...tir.schedule.block_info import (
    BlockInfo,
    block_accesses,
    get_block_infos,
    is_normalized,
    store_of,
)
from ...tir.schedule.state import var_ids
from ...tir.stmt import PrimFunc
from ...tir.transform.loop_partition import CUT_SELECTS_KEY

# Below this many iterations (multiply-adds, elements) a kernel runs on one core: it takes
# tens of microseconds at most, while a parallel region costs microseconds to start and,
# when another process holds the other core, a scheduler time slice (milliseconds) for
# the late thread to reach the barrier.
PARALLEL_MIN_WORK = 1 << 19
# What one iteration costs, in register-blocked multiply-adds, for the kinds of nests
# lighter than a micro-kernel (``wants_parallel(target, work, per_element)``); each
# counted as one, these nests stayed on one core while taking 60-200 us there:
PER_ELEMENT_WORK = {
    # A reduction step without a register loop (depthwise convolution, pooling) loads
    # both operands (MobileNet-V2's 7 x 7 x 960 depthwise layer: 0.4M multiply-adds,
    # 60-70 us on one Zen 3 core, where a micro-kernel does 0.5M in 15).
    "unblocked": 4,
    # A Winograd transform element sums several loads in each of its stages (about
    # 10 multiply-adds per element of a 4 x 4 tile's output transform): ResNet-50's
    # transforms (200k-450k elements) had run on one core; ResNet-18's 14 x 14 output
    # transforms (50k) run 12-29% faster on two.
    "transform": 16,
    # An injective element read across rows (a transpose, a layout change) loads its own
    # cache line: BERT's 98k-element key transposes, MobileNet-V2's input transpose.
    "gather": 8,
    # A row reduction's element feeds one chain of dependent adds per row (BERT's
    # 128 x 768 layer norms, three stages of 98k elements, 80-90 us each on one core).
    "row": 2,
}
# Symbolic extents count as this many iterations when choosing the loops to fuse into a
# parallel loop.
SYMBOLIC_EXTENT_GUESS = 64


def vector_lanes(target: Target, dtype: str) -> int:
    """Elements of ``dtype`` per SIMD register of ``target`` (at least 1)."""
    bits = dt.bits(dtype) if dt.bits(dtype) > 0 else 32
    return max(1, target.vector_width_bits() // max(bits, 8))


def work_of(extents) -> int:
    """The product of loop extents, a symbolic one counting as ``PARALLEL_MIN_WORK``: a
    nest with one may be large, and its parallel loop decides at run time, from the
    actual extents, whether to start other threads (``codegen/llvm_parallel.py``)."""
    return prod(e.value if type(e) is IntImm else PARALLEL_MIN_WORK for e in extents)


def wants_parallel(target: Target, work: int, per_element: str | None = None) -> bool:
    """True when a loop nest of ``work`` iterations, each costing ``PER_ELEMENT_WORK
    [per_element]`` operations (one when None), is worth running on all cores."""
    cost = PER_ELEMENT_WORK[per_element] if per_element is not None else 1
    return target.num_cores > 1 and work * cost >= PARALLEL_MIN_WORK


def largest_divisor(n: int, limit: int, multiple_of: int = 1) -> int:
    """The largest divisor of ``n`` that is at most ``limit`` and a multiple of
    ``multiple_of`` (0 when there is none)."""
    for d in range(min(n, limit), 0, -1):
        if n % d == 0 and d % multiple_of == 0:
            return d
    return 0


def vector_split(extent: int, lanes: int) -> int:
    """The inner factor to vectorize a loop of ``extent``: the vector width when it
    divides the extent; else the largest divisor of the extent that fits one register
    (at least 4: a 14-wide row is one masked register), else 0 (leave the loop to LLVM).
    Vectors wider than a register but not a multiple of it legalize into shuffles, so
    they are avoided."""
    if extent % lanes == 0:
        return lanes
    w = largest_divisor(extent, lanes)
    return w if w >= 4 else 0


def injective_function(func: PrimFunc) -> tuple[Schedule, list[BlockInfo]] | None:
    """A schedule of ``func`` and its root blocks when every block is injective and runs
    on its whole domain (normalized block form); None otherwise."""
    sch = Schedule(func)
    infos = get_block_infos(sch)
    if not infos or not is_normalized(infos):
        return None
    if not all(b.is_injective() and b.has_trivial_predicate() for b in infos):
        return None
    return sch, infos


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


def _store_order(sch: Schedule, info: BlockInfo) -> list:
    """The block's loops, reordered so the innermost one walks the store contiguously
    when another loop does (a transposing copy written in the source's order would
    scatter its stores)."""
    iters = list(info.iters)
    acc = next((a for a in block_accesses(info.block) if a.kind == "write"), None)
    if acc is None or acc.strides is None or not iters or acc.stride(iters[-1].var) == 1:
        return iters
    k = next((n for n, it in enumerate(iters)
              if it.var is not None and acc.stride(it.var) == 1), None)
    if k is None:
        return iters
    iters = iters[:k] + iters[k + 1:] + [iters[k]]
    sch.reorder(*[it.loop_rv for it in iters])
    return iters


def _transposed_pair(info: BlockInfo, iters: list) -> tuple[int, int] | None:
    """Positions ``(p, q)`` of two loops when the innermost loop ``q`` is contiguous in
    the store but strided in a load that is contiguous along loop ``p`` (a transpose):
    tiling both keeps the cache lines of the load in use."""
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
    iters = _store_order(sch, info)
    if not iters:
        return
    store = store_of(info.block)
    lanes = vector_lanes(target, store.buffer.dtype if store is not None else "float32")
    work = work_of([it.extent for it in iters])
    parallel = allow_parallel and wants_parallel(
        target, work, "gather" if _gathers(info, iters[-1]) else None)
    pair = _transposed_pair(info, iters)
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
                outer = _parallel_prefix(sch, sch.get_loops(info.block_rv)[:-1], target)
                if outer:
                    try_parallel(sch, sch.fuse(*outer) if len(outer) > 1 else outer[0])
            return
    loops = [it.loop_rv for it in iters]
    inner = iters[-1]
    ext = inner.const_extent
    if ext is not None and inner.var is not None and _store_contiguous_in(info, inner):
        # Vectorize the innermost loop on its own: fusing it with outer loops would put
        # divisions by the row length into every index.
        w = vector_split(ext, lanes)
        if w:
            vec = loops[-1]
            if w < ext:
                loops = loops[:-1] + sch.split(vec, [None, w])
                if _selects_along(info, inner.var):
                    # A concatenation along its innermost dimension: lowering cuts the
                    # loop of vectors into one piece per part, each a plain copy.
                    sch.annotate(loops[-2], CUT_SELECTS_KEY, 1)
            try_vectorize(sch, loops[-1])
    if parallel:
        outer = _parallel_prefix(sch, loops, target)
        if outer:
            try_parallel(sch, sch.fuse(*outer) if len(outer) > 1 else outer[0])


def _selects_along(info: BlockInfo, var: Var) -> bool:
    """Whether the block's stored value chooses between values by a bound on ``var``
    (``if_then_else(var < c, ...)``, as a concatenation along ``var`` does)."""
    store = store_of(info.block)
    found = [False]

    def visit(e: Any) -> None:
        if type(e) is Call and e.op == "if_then_else" and type(e.args[0]) in (LT, LE, GT, GE) \
                and id(var) in var_ids(e.args[0]):
            found[0] = True
    if store is not None:
        post_order_visit(store.value, visit)
    return found[0]


def _parallel_prefix(sch: Schedule, loops: list[LoopRV], target: Target) -> list[LoopRV]:
    """The outer loops to fuse into the parallel loop: enough iterations for a few tasks
    per core, leaving the vectorized loop out."""
    out: list[LoopRV] = []
    count = 1
    for lp in loops[:-1]:
        out.append(lp)
        e = sch.get(lp).extent
        count *= e.value if type(e) is IntImm else SYMBOLIC_EXTENT_GUESS
        if count >= 8 * target.num_cores:
            break
    return out


def _gathers(info: BlockInfo, it) -> bool:
    """Whether a read of the block moves along ``it`` (the innermost loop of its store)
    by other than 0 or 1 elements, or by no constant stride."""
    if it.var is None:
        return False
    for a in block_accesses(info.block):
        if a.kind == "read":
            s = a.stride(it.var)
            if s is None or s not in (0, 1):
                return True
    return False


def _store_contiguous_in(info: BlockInfo, it) -> bool:
    acc = next((a for a in block_accesses(info.block) if a.kind == "write"), None)
    return acc is not None and acc.stride(it.var) == 1

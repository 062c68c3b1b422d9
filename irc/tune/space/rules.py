"""Sketch rules: how the search space grows from a loop function, without templates.

A :class:`SketchRule` (not to be confused with ``irc.dlight.ScheduleRule``, a default
rule that schedules a whole function with fixed decisions) looks at one block of a
schedule (by analysing its loops and accesses, seed 001) and returns the schedules it
turns it into: the same schedule when it does not apply, one changed schedule, or
several (each a different sketch). Choices that are numbers (tile sizes, unroll depth,
parallel extent, compute location) are left to sampling instructions, so a sketch is a
family of programs the search samples from.

Rules here: :class:`AutoInline` (inline elementwise producers into consumers and, on GPU,
consumers into producers), :class:`RandomComputeLocation` (a sampled ``compute_at`` for
blocks left at the root), :class:`ParallelizeVectorizeUnroll` (root annotations the
postprocessor turns into parallel, vectorized and unrolled loops), :class:`AddRFactor`
(rfactor for reductions with little spatial parallelism) and
:class:`CrossThreadReduction` (a two-stage GPU reduction through rfactor). Multi-level
tiling lives in :mod:`irc.tune.space.tiling`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from ...core.diagnostics import ScheduleError
from ...tir.schedule import BlockRV, Schedule
from ...tir.schedule.block_info import (
    const_int,
    has_if_then_else,
    has_simple_bindings,
    index_of,
    is_complete,
    is_output,
    is_reduction,
    loop_kinds,
    loop_users,
    realize_of,
    store_of,
)
from .analysis import (
    ANN_COOPERATIVE_FETCH,
    ANN_PARALLEL,
    ANN_TILED,
    ANN_UNROLL_EXPLICIT,
    ANN_VECTORIZE,
    TargetInfo,
    blocks_under,
    needs_multi_level_tiling,
    product,
)


class SketchRule(ABC):
    """A rule of the search space (see the module docstring): it turns one block of a
    schedule into the sketches of that block.

    ``apply(sch, block)`` may change ``sch`` (the caller passes a copy it owns) and
    returns the resulting schedules; a rule that branches copies ``sch`` per branch. A
    rule with ``on_root = True`` is applied once per schedule, to the root block.
    ``info`` is the target the rule is sized for (None until :meth:`initialize`).
    """

    name = "SketchRule"
    on_root = False
    info: TargetInfo | None = None

    def initialize(self, info: TargetInfo) -> None:
        """Size the rule for a target (called once before generating sketches)."""
        self.info = info

    @abstractmethod
    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        """The schedules this rule makes of ``sch`` at ``block``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _in_root_scope(sch: Schedule, block: BlockRV) -> bool:
    index = index_of(sch)
    r = realize_of(sch, block)
    return index.scope_realize(r) is index.root


def _is_tiled(sch: Schedule, block: BlockRV) -> bool:
    return ANN_TILED in realize_of(sch, block).block.annotations


class AutoInline(SketchRule):
    """Inline elementwise blocks: a spatial, non-output producer into its consumers
    (``into_consumer``), and on GPU an elementwise output block into its spatial producer
    (``into_producer``). Cache stages placed by multi-level tiling (GPU shared-memory
    reads) stay where they are. Blocks computing a select or ``if_then_else`` (padding) are left
    alone when ``disallow_if_then_else`` (on CPU they would put a branch in the inner
    loop of a reduction; :class:`RandomComputeLocation` decides where they go)."""

    name = "AutoInline"

    def __init__(self, into_producer: bool = False, into_consumer: bool = True,
                 disallow_if_then_else: bool = True):
        self.into_producer = into_producer
        self.into_consumer = into_consumer
        self.disallow_if_then_else = disallow_if_then_else

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        if not _in_root_scope(sch, block):
            return [sch]
        b = realize_of(sch, block).block
        if not is_complete(b) or _is_tiled(sch, block):
            return [sch]
        if ANN_COOPERATIVE_FETCH in b.annotations:
            return [sch]  # a shared-memory stage multi-level tiling placed on purpose
        if self.disallow_if_then_else:
            store = store_of(b)
            if store is None or has_if_then_else(store.value, include_select=True):
                return [sch]
        output = is_output(sch, block)
        try:
            if self.into_consumer and not output:
                sch.compute_inline(block)
            elif self.into_producer and output:
                sch.reverse_compute_inline(block)
        except ScheduleError:
            pass  # not inlinable here: the block keeps its own loops
        return [sch]


class RandomComputeLocation(SketchRule):
    """For a block left at the root with its own loop nest (not an output, not tiled),
    sample where it is computed: at the root, inlined, or under one of its consumers'
    loops (``sample_compute_location`` + ``compute_at``)."""

    name = "RandomComputeLocation"

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        if not _in_root_scope(sch, block) or _is_tiled(sch, block):
            return [sch]
        index = index_of(sch)
        r = realize_of(sch, block)
        loops = index.loops_above(r)
        if is_output(sch, block) or not loops:
            return [sch]
        if blocks_under(loops[0]) != [r]:
            return [sch]  # already placed under another block's loops (a cache stage)
        if not (is_complete(r.block) or is_reduction(r.block)):
            return [sch]
        loc = sch.sample_compute_location(block)
        sch.compute_at(block, loc)
        return [sch]


class ParallelizeVectorizeUnroll(SketchRule):
    """Annotate the root block with the parallel extent limit (sampled among
    ``parallel_factors`` times the number of cores, CPU only), the vectorization limit
    ``max_vectorize_extent`` and the auto-unroll depth (sampled from
    ``unroll_max_steps``); empty ``parallel_factors`` keeps every loop serial.
    :class:`~irc.tune.space.postproc.RewriteParallelVectorizeUnroll`
    turns them into loop kinds and ``pragma_auto_unroll_max_step``."""

    name = "ParallelizeVectorizeUnroll"
    on_root = True

    def __init__(self, parallel_factors: tuple[int, ...] = (1, 4, 16, 64),
                 parallel_probs: tuple[float, ...] = (0.1, 0.3, 0.4, 0.2),
                 max_vectorize_extent: int = 64,
                 unroll_max_steps: tuple[int, ...] = (0, 16, 64, 512)):
        self.parallel_factors = parallel_factors
        self.parallel_probs = parallel_probs
        self.max_vectorize_extent = max_vectorize_extent
        self.unroll_max_steps = unroll_max_steps

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        info = self.info
        if not info.is_gpu and self.parallel_factors:
            cands = [f * info.num_cores for f in self.parallel_factors]
            v = sch.sample_categorical(cands, list(self.parallel_probs))
            sch.annotate(block, ANN_PARALLEL, v)
        if not info.is_gpu and self.max_vectorize_extent > 1:
            sch.annotate(block, ANN_VECTORIZE, self.max_vectorize_extent)
        if self.unroll_max_steps:
            n = len(self.unroll_max_steps)
            u = sch.sample_categorical(list(self.unroll_max_steps), [1.0 / n] * n)
            sch.annotate(block, ANN_UNROLL_EXPLICIT, u)
        return [sch]


def _reduction_extents(sch: Schedule, block: BlockRV) -> tuple[list, list[str], int, int] | None:
    """(loops, kinds, spatial product, reduction product) of a reduction block whose
    loops are plain spatial/reduction loops with constant extents, else None."""
    index = index_of(sch)
    r = realize_of(sch, block)
    if not is_reduction(r.block):
        return None
    loops = index.loops_above(r)
    if not loops or not has_simple_bindings(r, loops):
        return None
    kinds = loop_kinds(r, loops)
    if "O" in kinds or "R" not in kinds:
        return None
    extents = [const_int(lp.extent) for lp in loops]
    if any(e is None for e in extents):
        return None
    s = product([e for e, k in zip(extents, kinds) if k != "R"])
    red = product([e for e, k in zip(extents, kinds) if k == "R"])
    return loops, kinds, s, red


def _fused_reduction(sch: Schedule, block: BlockRV) -> tuple[list, Any] | None:
    """Move the reduction loops innermost and fuse them; returns (spatial loop handles,
    fused reduction loop)."""
    found = _reduction_extents(sch, block)
    if found is None:
        return None
    _, kinds, _, _ = found
    handles = sch.get_loops(block)
    spatial = [h for h, k in zip(handles, kinds) if k != "R"]
    reduce = [h for h, k in zip(handles, kinds) if k == "R"]
    sch.reorder(*spatial, *reduce)
    fused = sch.fuse(*reduce) if len(reduce) > 1 else reduce[0]
    return spatial, fused


class AddRFactor(SketchRule):
    """CPU: for a reduction whose spatial extent is too small to keep the cores busy
    (below ``max_jobs_per_core`` x cores) and whose reduction is long, add sketches
    that fuse the reduction loops, split them by a sampled factor and ``rfactor`` either
    part, so the partial sums run in parallel. The unchanged schedule stays a sketch."""

    name = "AddRFactor"

    def __init__(self, max_jobs_per_core: int = 16, max_innermost_factor: int = 64,
                 min_reduction_extent: int = 256):
        self.max_jobs_per_core = max_jobs_per_core
        self.max_innermost_factor = max_innermost_factor
        self.min_reduction_extent = min_reduction_extent

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        if not _in_root_scope(sch, block) or _is_tiled(sch, block):
            return [sch]
        found = _reduction_extents(sch, block)
        if found is None:
            return [sch]
        loops, _, spatial, red = found
        if spatial > self.max_jobs_per_core * self.info.num_cores or \
                red < self.min_reduction_extent:
            return [sch]
        r = realize_of(sch, block)
        if needs_multi_level_tiling(r, loops):
            return [sch]
        out = [sch]
        for which in (0, 1):
            branch = sch.copy()
            try:
                _, fused = _fused_reduction(branch, block)
                tiles = branch.sample_perfect_tile(fused, 2, self.max_innermost_factor)
                parts = branch.split(fused, tiles)
                rf = branch.rfactor(parts[which], 0)
                branch.annotate(rf, ANN_TILED, "rfactor")
            except ScheduleError:
                continue
            out.append(branch)
        return out


class CrossThreadReduction(SketchRule):
    """GPU: a cross-thread reduction for reductions without data reuse (softmax, norms,
    sums). One GPU block computes one output element: the spatial loops are fused and
    bound to ``blockIdx.x``; the fused reduction loop is split by a sampled factor whose
    inner part is ``rfactor``-ed into a ``shared`` buffer of partial results and bound to
    ``threadIdx.x`` (each thread accumulates a strided share); the original block then
    combines the partials of its GPU block from shared memory (ThreadSync puts the
    barrier between the two). The unchanged schedule stays a sketch."""

    name = "CrossThreadReduction"

    def __init__(self, thread_extents: tuple[int, ...] = (32, 64, 128, 256, 512)):
        self.thread_extents = thread_extents

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        if not _in_root_scope(sch, block):
            return [sch]
        found = _reduction_extents(sch, block)
        if found is None:
            return [sch]
        loops, _, _, red = found
        r = realize_of(sch, block)
        if needs_multi_level_tiling(r, loops) or red < min(self.thread_extents):
            return [sch]
        branch = sch.copy()
        try:
            spatial, fused = _fused_reduction(branch, block)
            limit = max(t for t in self.thread_extents if t <= red)
            tiles = branch.sample_perfect_tile(fused, 2, limit)
            _, inner = branch.split(fused, tiles)
            rf = branch.rfactor(inner, 0)
            branch.set_scope(rf, 0, "shared")
            # rfactor left the original loops to the partial-result block; the combining
            # block has new ones: its spatial loops, then the lanes it combines.
            wb = branch.get_loops(block)[:len(spatial)]
            if wb:
                bx = branch.fuse(*wb) if len(wb) > 1 else wb[0]
            else:
                bx = branch.add_unit_loop(block)
            branch.bind(bx, "blockIdx.x")
            branch.compute_at(rf, bx, preserve_unit_loops=True)
            # Under bx the partial-result block has its spatial loops (extent 1 each),
            # the lane (rfactor's new spatial variable) and the serial outer reduction.
            rf_block = branch.get(rf)
            lane_var = rf_block.iter_vars[0].var
            under = loop_users(branch, rf_block.name)[1:]
            lane = next(lp for lp, users in under
                        if any(iv.var is lane_var for iv in users))
            branch.reorder(lane, *[lp for lp, _ in under if lp is not lane])
            branch.bind(lane, "threadIdx.x")
            branch.annotate(rf, ANN_TILED, "cross_thread")
        except (ScheduleError, StopIteration):
            return [sch]
        return [sch, branch]

"""``cpu.Reduction``: reductions on the CPU — pooling, mean/sum/max over any axes,
softmax, layer norm, and their elementwise epilogues.

Two shapes of functions:

- *one reduction whose output's innermost dimension is spatial* (pooling, a mean over
  a middle axis): the output-tile schedule of :mod:`.tiling`, vectorized along the
  output row, the reduction loops inside the tile;
- *row reductions* (softmax, layer norm, a reduction over the last axes): every block
  iterates the same leading rows (spatial loops indexing the leading dimensions of
  every intermediate buffer). All blocks move under the rows of the last block
  (``compute_at``), so each row's statistics stay in cache and registers; the rows run
  in parallel when the work is large enough; elementwise stages are vectorized along
  the row; the reduction loops stay innermost, where LLVM vectorizes them (reduction
  updates carry reassociation flags).
"""

from __future__ import annotations

import logging

from ...core.diagnostics import ScheduleError
from ...core.target import Target
from ...tir.schedule import Schedule
from ...tir.schedule.block_info import BlockInfo, block_accesses, get_block_infos, is_normalized
from ...tir.stmt import PrimFunc
from ..analysis import inline_single_use, row_depth
from ..base import ScheduleRule
from .matmul import schedule_anchor
from .utils import (
    try_parallel,
    try_vectorize,
    vector_lanes,
    vector_split,
    wants_parallel,
    work_of,
)

logger = logging.getLogger(__name__)


def schedule_rows(sch: Schedule, target: Target) -> Schedule | None:
    """The row-reduction schedule (see the module docstring); None when the blocks do
    not share a leading row."""
    inline_single_use(sch)
    infos = get_block_infos(sch)
    if not infos or not is_normalized(infos):
        return None
    if not any(b.is_reduction() for b in infos):
        return None
    for b in infos:
        if b.block.init is not None and not b.is_reduction():
            return None
        if not b.has_trivial_predicate():
            return None
    depth = row_depth(infos)
    last = infos[-1]
    if depth == 0 and len(infos) > 1:
        return None
    row_loops = [it.loop_rv for it in last.iters[:depth]]
    if len(infos) > 1:
        anchor = row_loops[-1]
        for b in reversed(infos[:-1]):
            try:
                sch.compute_at(b.block_rv, anchor, preserve_unit_loops=False)
            except ScheduleError as err:
                logger.debug("cpu.Reduction declines: block %s cannot move into the row "
                             "loop: %s", b.name, err.message)
                return None
    total = sum(work_of([it.extent for it in b.iters]) for b in infos)
    # The stages first: fused, the row loops would become one iterator of each block
    # and ``depth`` would no longer count them.
    for b in get_block_infos(sch) or []:
        _vectorize_row(sch, b, target, depth)
        _decompose_row(sch, b, depth)
    if depth and wants_parallel(target, total, "row"):
        fused = sch.fuse(*row_loops) if len(row_loops) > 1 else row_loops[0]
        try_parallel(sch, fused)
    return sch


def _decompose_row(sch: Schedule, b: BlockInfo, depth: int) -> None:
    """Initialize a reduction once per row, before its loops, instead of testing for the
    first iteration inside them."""
    if not b.is_reduction() or len(b.iters) <= depth:
        return
    first = next((it for it in b.iters[depth:] if it.kind == "R"), None)
    if first is not None:
        sch.decompose_reduction(b.block_rv, b.iters[depth].loop_rv)


def _vectorize_row(sch: Schedule, b: BlockInfo, target: Target, depth: int) -> None:
    """Vectorize the innermost loop of an injective stage when it is contiguous in the
    store (split by the vector width)."""
    if not b.is_injective() or len(b.iters) <= depth:
        return
    it = b.iters[-1]
    ext = it.const_extent
    store = next((a for a in block_accesses(b.block) if a.kind == "write"), None)
    if ext is None or store is None or store.stride(it.var) != 1:
        return
    w = vector_split(ext, vector_lanes(target, store.buffer.dtype))
    if not w:
        return
    loop = it.loop_rv
    if w < ext:
        loop = sch.split(loop, [None, w])[1]
    try_vectorize(sch, loop)


class Reduction(ScheduleRule):
    """Default CPU schedule of reductions (see the module docstring)."""

    target_keys = ("cpu",)

    def apply(self, func: PrimFunc, target: Target, tunable: bool = False
              ) -> Schedule | None:
        sch = schedule_anchor(Schedule(func), target, need_multiply=False, need_reuse=False)
        if sch is not None:
            return sch
        return schedule_rows(Schedule(func), target)

"""``gpu.Reduction``: one reduction whose output's innermost dimension is spatial and
contiguous in the data (``x @ W`` with ``W`` as ``[K, N]``, a sum over a middle axis),
with its epilogue.

Threads are laid out so that neighbouring ``threadIdx.x`` read neighbouring memory: the
spatial iterations (fused) go to ``threadIdx.x`` inside ``blockIdx.x``, and the
reduction is split across ``threadIdx.y`` by ``rfactor``: each ``(x, y)`` thread
accumulates a partial result in shared memory, then each ``x`` thread combines its
``y`` partials serially. Seed 003's ``matmul`` (1 x 256 @ 256 x 10) comes out as one
block of 10 x 16 threads with a 16 x 1 x 10 partial buffer.

:func:`schedule_rfactor` is shared with ``gpu.GEMV``, which puts the reduction on
``threadIdx.x`` instead (contiguous along the reduction).
"""

from __future__ import annotations

import logging
from math import prod

from ...core.diagnostics import ScheduleError
from ...core.target import Target
from ...tir.schedule import Schedule
from ...tir.schedule.block_info import (
    BlockInfo,
    const_shape,
    get_block_infos,
    is_normalized,
    is_output,
    loads,
    loop_users,
    match_reduction,
)
from ...tir.stmt import PrimFunc
from ..analysis import inline_injective_producers
from ..base import ScheduleRule
from .utils import bind_block_thread, const, max_threads, verify_gpu_func

logger = logging.getLogger(__name__)


def single_reduction(sch: Schedule) -> tuple[BlockInfo, list[BlockInfo]] | None:
    """After inlining injective producers: the only reduction block (spatial loops
    first, then reduction loops) and the blocks after it; None for other shapes."""
    inline_injective_producers(sch)
    infos = get_block_infos(sch)
    if not infos or not is_normalized(infos):
        return None
    reds = [b for b in infos if b.block.init is not None]
    if len(reds) != 1 or infos[0] is not reds[0]:
        return None
    red = reds[0]
    kinds = red.dom_kind()
    if not red.is_reduction() or kinds != "S" * kinds.count("S") + "R" * kinds.count("R"):
        return None
    if match_reduction(red.block) is None or not red.has_trivial_predicate():
        return None
    rest = infos[1:]
    if any(not b.is_injective() for b in rest):
        return None
    return red, rest


def contiguous_kind(info: BlockInfo) -> str | None:
    """Which loop walks the block's largest input contiguously: ``"R"`` for the
    innermost reduction loop (an inner reduction), ``"S"`` for the innermost spatial
    loop, None for neither (or symbolic shapes)."""
    ld = [a for a in loads(info.block) if const_shape(a.buffer) is not None]
    if not ld:
        return None
    big = max(ld, key=lambda a: prod(const_shape(a.buffer)))
    r_last = info.reduction()[-1].var
    s = info.spatial()
    if big.stride(r_last) == 1:
        return "R"
    if s and big.stride(s[-1].var) == 1:
        return "S"
    return None


def _divisor_near(n: int, cap: int) -> int:
    """The largest divisor of ``n`` up to ``cap`` when it is at least half of
    ``min(n, cap)`` (no partial tiles), else ``min(n, cap)`` (a predicate guards the
    last tile)."""
    cap = max(1, min(n, cap))
    for d in range(cap, 0, -1):
        if n % d == 0:
            return d if 2 * d >= cap else cap
    return cap


def schedule_rfactor(sch: Schedule, info: BlockInfo, rest: list[BlockInfo], target: Target,
                     reduce_on_x: bool) -> Schedule | None:
    """Split the reduction across threads with rfactor (see the module docstring);
    ``reduce_on_x`` puts the reduction on ``threadIdx.x`` and the outputs on
    ``threadIdx.y`` (GEMV), else the other way round."""
    if len(rest) > 1:
        return None
    spatial = [it.loop_rv for it in info.spatial()]
    reduction = [it.loop_rv for it in info.reduction()]
    s = sch.fuse(*spatial) if len(spatial) > 1 else (spatial[0] if spatial else None)
    r = sch.fuse(*reduction) if len(reduction) > 1 else reduction[0]
    if s is None:
        s = sch.add_unit_loop(r)
    s_ext, r_ext = const(sch, s), const(sch, r)
    if s_ext is None or r_ext is None:
        return None
    limit = max_threads(target)
    if reduce_on_x:
        t_red = _divisor_near(r_ext, 256)
        t_sp = _divisor_near(s_ext, min(limit // t_red, 4))
    else:
        t_red = _divisor_near(r_ext, 16)
        t_sp = _divisor_near(s_ext, min(limit // t_red, 64))
    _, r1 = sch.split(r, [None, t_red])
    rf = sch.rfactor(r1, 0)
    sch.set_scope(rf, 0, "shared")
    write_back = info.block_rv
    wb_loops = sch.get_loops(write_back)
    bx, ts = sch.split(wb_loops[0], [None, t_sp])
    sch.bind(bx, "blockIdx.x")
    sch.bind(ts, "threadIdx.y" if reduce_on_x else "threadIdx.x")
    sch.compute_at(rf, bx)
    # The partial-result block's loops under bx: the factored lane (its first iteration
    # variable), the spatial part, and the serial reduction (absent when of extent 1).
    rf_block = sch.get(rf)
    lane_var = rf_block.iter_vars[0].var
    lane, sp, red = None, [], []
    for loop, users in loop_users(sch, rf_block.name)[1:]:
        if len(users) != 1:
            return None
        if users[0].var is lane_var:
            lane = loop
        elif users[0].iter_type == "reduce":
            red.append(loop)
        else:
            sp.append(loop)
    if lane is None:
        return None
    sp_loop = sch.fuse(*sp) if len(sp) > 1 else (sp[0] if sp else None)
    order = ([sp_loop] if sp_loop is not None else []) + [lane] + red
    sch.reorder(*order)
    if sp_loop is not None:
        sch.bind(sp_loop, "threadIdx.y" if reduce_on_x else "threadIdx.x")
    sch.bind(lane, "threadIdx.x" if reduce_on_x else "threadIdx.y")
    if red:
        sch.decompose_reduction(rf, red[0])
    if rest:
        epi = rest[0]
        if not is_output(sch, epi.name):
            return None
        trial = sch.copy()
        try:
            # In the reduction's kernel when its tile is a rectangle of the output...
            trial.reverse_compute_at(epi.block_rv, bx)
            epi_loops = trial.get_loops(epi.block_rv)[1:]
            if epi_loops:
                loop = trial.fuse(*epi_loops) if len(epi_loops) > 1 else epi_loops[0]
                ext = const(trial, loop)
                if ext is None or ext > t_sp:
                    # The epilogue reads outputs of other blocks (its region did not
                    # narrow to this block's tile).
                    raise ScheduleError(f"the epilogue covers {ext or 'a symbolic number of'}"
                                        f" elements per block, more than the {t_sp} the "
                                        "block computes")
                trial.bind(loop, "threadIdx.y" if reduce_on_x else "threadIdx.x")
            trial.set_scope(write_back, 0, "shared")
            sch = trial
        except ScheduleError as err:
            # ... else as a kernel of its own, one thread per element.
            logger.debug("gpu.Reduction: epilogue %s runs as a kernel of its own: %s",
                         epi.name, err.message)
            loops = sch.get_loops(epi.block_rv)
            loop = sch.fuse(*loops) if len(loops) > 1 else loops[0]
            bind_block_thread(sch, loop, limit)
    verify_gpu_func(sch.func, target)
    return sch


class Reduction(ScheduleRule):
    """Default GPU schedule of a reduction with contiguous outputs (see the module
    docstring)."""

    target_keys = ("gpu",)

    def apply(self, func: PrimFunc, target: Target, tunable: bool = False
              ) -> Schedule | None:
        sch = Schedule(func)
        found = single_reduction(sch)
        if found is None:
            return None
        info, rest = found
        if contiguous_kind(info) != "S":
            return None
        return schedule_rfactor(sch, info, rest, target, reduce_on_x=False)

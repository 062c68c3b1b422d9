"""``cpu.Fallback``: the last CPU rule, for any block-form function the other rules
decline.

Injective blocks get the elementwise schedule (fuse, vectorize, parallelize); a
reduction block whose leading loops are spatial runs them in parallel when the work is
large enough. Blocks whose loops do not map one to one onto iteration variables are left
as they are. It declines only functions that are not in block form.
"""

from __future__ import annotations

import logging

from ...core.diagnostics import ScheduleError
from ...core.target import Target
from ...tir.schedule import Schedule
from ...tir.schedule.block_info import get_block_infos
from ...tir.stmt import PrimFunc
from ..base import ScheduleRule
from .utils import schedule_injective_block, try_parallel, wants_parallel, work_of

logger = logging.getLogger(__name__)


class Fallback(ScheduleRule):
    """Default CPU schedule of anything else (see the module docstring)."""

    target_keys = ("cpu",)

    def apply(self, func: PrimFunc, target: Target, tunable: bool = False
              ) -> Schedule | None:
        sch = Schedule(func)
        infos = get_block_infos(sch)
        if infos is None:
            return None
        for info in infos:
            if "O" in info.dom_kind() or not info.has_trivial_predicate():
                continue
            # Each block on its own copy: a refused step leaves the block unscheduled
            # instead of dropping the whole function.
            trial = sch.copy()
            try:
                if info.is_injective():
                    schedule_injective_block(trial, info, target)
                else:
                    _parallel_leading_spatial(trial, info, target)
            except ScheduleError as err:
                logger.debug("cpu.Fallback: block %s of %s stays unscheduled: %s",
                             info.name, func.attrs.get("global_symbol", "main"), err.message)
                continue
            sch = trial
        return sch


def _parallel_leading_spatial(sch: Schedule, info, target: Target) -> None:
    lead = []
    for it in info.iters:
        if it.kind != "S":
            break
        lead.append(it.loop_rv)
    if not lead or not wants_parallel(target, work_of([it.extent for it in info.iters])):
        return
    loop = sch.fuse(*lead) if len(lead) > 1 else lead[0]
    try_parallel(sch, loop)

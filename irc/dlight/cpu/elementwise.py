"""``cpu.Elementwise``: injective functions (elementwise, broadcast, transpose, reshape,
concatenation, padding) on the CPU.

Intermediate injective blocks are inlined into their consumers; each remaining block's
loops are fused when its store is contiguous in loop order, split by the vector width
and vectorized, and the outer loop runs in parallel when the work is large enough.
Transposes are tiled 16 x 16 so both the load and the store stay within few cache lines.
Applies when every block of the function is injective.
"""

from __future__ import annotations

from ...core.target import Target
from ...tir.schedule import Schedule
from ...tir.schedule.block_info import get_block_infos, is_normalized
from ...tir.stmt import PrimFunc
from ..analysis import inline_injective_producers
from ..base import ScheduleRule
from .utils import injective_function, schedule_injective_block


class Elementwise(ScheduleRule):
    """Default CPU schedule of injective functions (see the module docstring)."""

    target_keys = ("cpu",)

    def apply(self, func: PrimFunc, target: Target, tunable: bool = False
              ) -> Schedule | None:
        found = injective_function(func)
        if found is None:
            return None
        sch, infos = found
        inline_injective_producers(sch)
        infos = get_block_infos(sch)
        if infos is None or not is_normalized(infos):
            return None
        for info in infos:
            schedule_injective_block(sch, info, target)
        return sch

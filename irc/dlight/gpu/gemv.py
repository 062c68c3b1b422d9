"""``gpu.GEMV``: one reduction contiguous along its reduction loop — matrix-vector
products ``W @ x`` with ``W`` as ``[N, K]``, row sums, a dense layer with batch 1 and
transposed weights — with its epilogue.

The reduction (fused) is split across ``threadIdx.x`` by ``rfactor`` so neighbouring
threads read neighbouring elements of a row; a few outputs share a block along
``threadIdx.y``; each thread's partial result goes to shared memory and the partials of
an output are combined serially (see :func:`.reduction.schedule_rfactor`).
"""

from __future__ import annotations

from ...core.target import Target
from ...tir.schedule import Schedule
from ...tir.stmt import PrimFunc
from ..base import ScheduleRule
from .reduction import contiguous_kind, schedule_rfactor, single_reduction


class GEMV(ScheduleRule):
    """Default GPU schedule of an inner reduction (see the module docstring)."""

    target_keys = ("gpu",)

    def apply(self, func: PrimFunc, target: Target, tunable: bool = False
              ) -> Schedule | None:
        sch = Schedule(func)
        found = single_reduction(sch)
        if found is None:
            return None
        info, rest = found
        if contiguous_kind(info) != "R":
            return None
        return schedule_rfactor(sch, info, rest, target, reduce_on_x=True)

"""``gpu.GEMV``: one reduction contiguous along its reduction loop — matrix-vector
products ``W @ x`` with ``W`` as ``[N, K]``, row sums, a dense layer with batch 1 and
transposed weights — with its epilogue.

The reduction (fused) is split across ``threadIdx.x`` by ``rfactor`` so neighbouring
threads read neighbouring elements of a row; a few outputs share a block along
``threadIdx.y``; each thread's partial result goes to shared memory and the partials of
an output are combined serially (see :func:`.reduction.schedule_rfactor`).
"""

from __future__ import annotations

from math import prod

from ...core.target import Target
from ...tir.schedule import Schedule
from ...tir.schedule.block_info import BlockInfo, loads
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
        if contiguous_kind(info) != "R" or not _has_vector_operand(info):
            return None
        return schedule_rfactor(sch, info, rest, target, reduce_on_x=True)


# Outputs up to which a reduction without a vector operand still counts as a GEMV (a
# few rows times a matrix: each output gets its group of threads).
_FEW_OUTPUTS = 4096


def _has_vector_operand(info: BlockInfo) -> bool:
    """True for a matrix-vector shape: one load alone (a row sum), a load indexed by no
    spatial variable of extent above one (the vector ``x`` of ``W @ x``), or few outputs.
    A 1x1 convolution or a large matmul reads every operand along some spatial axis: a
    GEMM, whose outputs are too many to give each a group of threads."""
    ld = loads(info.block)
    if len({id(a.buffer) for a in ld}) <= 1:
        return True
    extents = [it.const_extent for it in info.spatial()]
    if all(e is not None for e in extents) and prod(extents) <= _FEW_OUTPUTS:
        return True
    spatial = [it.var for it in info.spatial()
               if it.var is not None and it.const_extent != 1]
    return any(a.strides is not None and all(a.stride(v) == 0 for v in spatial)
               for a in ld)

"""``gpu.Fallback``: the last GPU rule — one thread per output element.

Injective producers are inlined into their consumers (and elementwise consumers into
their producers where possible). Then each remaining block becomes a kernel: its
spatial loops move outside its reduction loops and fuse into one loop, split into
``[blocks, threads]`` with at most the target's threads per block, bound to
``blockIdx.x`` / ``threadIdx.x`` (a ``T.where`` guards the last partial block); the
reduction loops run serially in each thread. Seed 003's ``transpose`` (256 x 10) comes out
as 3 blocks of 1024 threads guarded by ``fused < 2560``.
"""

from __future__ import annotations

from ...core.target import Target
from ...tir.schedule import Schedule
from ...tir.schedule.block_info import get_block_infos, is_normalized
from ...tir.stmt import PrimFunc
from ..analysis import inline_injective_producers, try_reverse_compute_inline
from ..base import ScheduleRule
from .utils import bind_block_thread, max_threads, verify_gpu_func


def inline_elementwise(sch: Schedule) -> None:
    """Inline injective producers into consumers, then injective output blocks into their
    single producer where the schedule allows it."""
    inline_injective_producers(sch)
    while True:
        infos = get_block_infos(sch)
        if not infos or len(infos) < 2:
            return
        if not any(b.is_injective() and try_reverse_compute_inline(sch, b.block_rv)
                   for b in infos[1:]):
            return


class Fallback(ScheduleRule):
    """Default GPU schedule of anything (see the module docstring)."""

    target_keys = ("gpu",)

    def apply(self, func: PrimFunc, target: Target, tunable: bool = False
              ) -> Schedule | None:
        sch = Schedule(func)
        infos = get_block_infos(sch)
        if infos is None or not is_normalized(infos):
            return None
        inline_elementwise(sch)
        infos = get_block_infos(sch)
        if infos is None or not is_normalized(infos):
            return None
        for info in infos:
            spatial = [it.loop_rv for it in info.iters if it.kind == "S"]
            reduction = [it.loop_rv for it in info.iters if it.kind == "R"]
            if spatial and reduction:
                sch.reorder(*spatial, *reduction)
            if spatial:
                loop = sch.fuse(*spatial) if len(spatial) > 1 else spatial[0]
            else:
                loop = sch.add_unit_loop(reduction[0] if reduction else info.block_rv)
            bind_block_thread(sch, loop, max_threads(target))
        verify_gpu_func(sch.func, target)
        return sch

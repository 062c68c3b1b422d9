"""``gpu.GeneralReduction``: several blocks sharing leading rows — softmax, layer norm,
reductions over the last axes followed by elementwise stages.

One GPU block per row: every reduction is first split across ``threadIdx.x`` by
``rfactor`` (partials in shared memory, combined serially), then every block moves under
the rows of the last block (``compute_at``), whose row loops fuse into ``blockIdx.x``.
Inside a row, each stage is a sibling nest bound to ``threadIdx.x`` (a barrier separates
them), and the per-row intermediates (maxima, sums, partials) live in shared memory.
Applies when all blocks share at least one aligned row loop (see
:func:`irc.dlight.analysis.row_depth`) and at least one block reduces.
"""

from __future__ import annotations

from ...core.target import Target
from ...tir.schedule import Schedule
from ...tir.schedule.block_info import (
    get_block_infos,
    is_normalized,
    is_output,
)
from ...tir.stmt import PrimFunc
from ..analysis import inline_single_use, row_depth
from ..base import ScheduleRule
from .utils import const, max_threads, verify_gpu_func


def _pow2_at_most(n: int, cap: int) -> int:
    p = 1
    while p * 2 <= min(n, cap):
        p *= 2
    return p


class GeneralReduction(ScheduleRule):
    """Default GPU schedule of row reductions (see the module docstring)."""

    target_keys = ("gpu",)

    def apply(self, func: PrimFunc, target: Target, tunable: bool = False
              ) -> Schedule | None:
        sch = Schedule(func)
        inline_single_use(sch)
        infos = get_block_infos(sch)
        if not infos or not is_normalized(infos):
            return None
        if not any(b.is_reduction() for b in infos):
            return None
        for b in infos:
            if not b.has_trivial_predicate():
                return None
            if b.block.init is not None and not b.is_reduction():
                return None
        depth = row_depth(infos)
        if depth == 0:
            return None
        threads = _threads(infos, depth, target)
        # Split each reduction across threads first: rfactor needs a loop nest that
        # holds only its block.
        partials = set()
        for b in infos:
            if not b.is_reduction():
                continue
            kinds = b.dom_kind()
            if kinds[:depth] != "S" * depth or set(kinds[depth:]) != {"R"}:
                return None
            red = [it.loop_rv for it in b.iters[depth:]]
            r = sch.fuse(*red) if len(red) > 1 else red[0]
            _, r1 = sch.split(r, [None, threads])
            rf = sch.rfactor(r1, depth)
            partials.add(sch.get(rf).name)
        infos = get_block_infos(sch)
        last = infos[-1]
        rows = [it.loop_rv for it in last.iters[:depth]]
        for b in reversed(infos[:-1]):
            sch.compute_at(b.block_rv, rows[-1])
        row = sch.fuse(*rows) if len(rows) > 1 else rows[0]
        sch.bind(row, "blockIdx.x")
        for b in get_block_infos(sch):
            inner = sch.get_loops(b.block_rv)[1:]
            if b.name in partials:
                # Loops: the factored lane (absent when one thread does a row), then the
                # serial reduction.
                if inner and const(sch, inner[0]) == threads:
                    sch.bind(inner[0], "threadIdx.x")
            elif b.block.init is None and inner:
                loop = sch.fuse(*inner) if len(inner) > 1 else inner[0]
                ext = const(sch, loop)
                t = min(threads, ext) if ext is not None else threads
                outer, tx = sch.split(loop, [None, t])
                sch.reorder(tx, outer)
                sch.bind(tx, "threadIdx.x")
            if not is_output(sch, b.name):
                sch.set_scope(b.block_rv, 0, "shared")
        verify_gpu_func(sch.func, target)
        return sch


def _threads(infos, depth: int, target: Target) -> int:
    """Threads per row: a power of two up to 256, no more than the longest row."""
    longest = 1
    for b in infos:
        n = 1
        for it in b.iters[depth:]:
            n *= it.const_extent or 1024
        longest = max(longest, n)
    return max(1, min(_pow2_at_most(longest, 256), max_threads(target)))

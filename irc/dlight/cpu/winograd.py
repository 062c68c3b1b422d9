"""``cpu.WinogradTransform``: the input and output transforms of a Winograd convolution
(``passes.WinogradConv2D``; blocks annotated ``winograd_transform``) on the CPU.

A transform's value is a sparse sum selected by tile-local coordinates: the transform
coordinates ``(eps, nu)`` of the input transform, ``(h % m, w % m)`` of the output
transform. The rule

1. inlines the injective producers into the transform and the injective consumers
   (bias, residual add, activation) into it, so one block writes the function's output
   (the transform's own early stages stay: the input tile and its column transform, or
   the output's row transform);
2. for the output transform, splits ``h`` and ``w`` by the tile size (the remainders
   are then the loop variables: ``(ho * m + hi) % m`` simplifies to ``hi``);
3. moves the tile-local loops inside, just outside the channel loop, computes the early
   stages there (one tile's channel vector), and unrolls the tile-local loops: each
   copy's selects fold to one sparse sum, each input value is read once, and the row
   sums shared by the copies are computed once;
4. vectorizes the channels (contiguous in both the input and the output) and runs the
   tiles in parallel.
"""

from __future__ import annotations

from ...core.target import Target
from ...tir.schedule import LoopRV, Schedule
from ...tir.schedule.block_info import get_block_infos, is_output
from ...tir.stmt import PrimFunc
from ...tir.topi.nn.winograd import ANNOTATION, TILE_ANNOTATION
from ..analysis import inline_injective_producers, try_reverse_compute_inline
from ..base import ScheduleRule
from .utils import (
    injective_function,
    try_parallel,
    try_vectorize,
    vector_lanes,
    vector_split,
    wants_parallel,
)


def _channel_loops(sch: Schedule, loop: LoopRV, extent: int, lanes: int
                   ) -> tuple[list[LoopRV], LoopRV | None]:
    """Split the channel loop for vectors: (outer loops, vector loop or None)."""
    w = vector_split(extent, lanes)
    if not w:
        return [loop], None
    if w == extent:
        return [], loop
    outer, inner = sch.split(loop, [None, w])
    return [outer], inner


class WinogradTransform(ScheduleRule):
    """Default CPU schedule of Winograd transforms (see the module docstring)."""

    target_keys = ("cpu",)

    def apply(self, func: PrimFunc, target: Target, tunable: bool = False
              ) -> Schedule | None:
        found = injective_function(func)
        if found is None:
            return None
        sch, infos = found
        stages = {b.block.annotations.get(ANNOTATION): b for b in infos
                  if b.block.annotations.get(ANNOTATION)}
        kind = "input" if "input" in stages else "output"
        # The stages before the last one, in order: the input transform reads its tile
        # first (the bounds checks, once per input value), then transforms the columns.
        early_kinds = ["input_tile", "input_cols"] if kind == "input" else ["output_rows"]
        if set(stages) != {kind, *early_kinds}:
            return None
        name = stages[kind].name
        early = [stages[k].name for k in early_kinds]
        m = stages[kind].block.annotations.get(TILE_ANNOTATION)
        if not isinstance(m, int) or m < 1:
            return None
        inline_injective_producers(sch, keep={name, *early})
        while True:
            infos = get_block_infos(sch)
            pos = next(k for k, b in enumerate(infos) if b.name == name)
            if pos + 1 >= len(infos):
                break
            if not try_reverse_compute_inline(sch, infos[pos + 1].block_rv):
                return None
        infos = get_block_infos(sch)
        if [b.name for b in infos] != [*early, name] or not is_output(sch, name):
            return None
        info = infos[-1]
        extents = [it.const_extent for it in info.iters]
        if len(extents) != 4 or any(e is None for e in extents):
            return None
        lanes = vector_lanes(target, "float32")
        loops = [it.loop_rv for it in info.iters]
        if kind == "input":
            # (eps, nu, p, ci) -> (p, ci_outer, eps, nu, ci_vector)
            eps, nu, p, ci = loops
            tiles, outer = [eps, nu], [p]
        else:
            # (n, h, w, co) -> (n, ho, wo, co_outer, hi, wi, co_vector)
            n, h, w, ci = loops
            ho, hi = sch.split(h, [None, m])
            wo, wi = sch.split(w, [None, m])
            tiles, outer = [hi, wi], [n, ho, wo]
        c_outer, vec = _channel_loops(sch, ci, extents[3], lanes)
        sch.reorder(*(outer + c_outer + tiles + ([vec] if vec is not None else [])))
        # The early stages compute one tile's channel vector right before its use.
        par = outer + c_outer
        for stage in reversed(early):
            rv = sch.get_block(stage)
            sch.compute_at(rv, par[-1])
            inner = sch.get_loops(rv)[len(par):]
            for t in inner[:-1] if vec is not None else inner:
                sch.unroll(t)
            if vec is not None:
                try_vectorize(sch, inner[-1])
        for t in tiles:
            sch.unroll(t)
        if vec is not None:
            try_vectorize(sch, vec)
        work = extents[0] * extents[1] * extents[2] * extents[3]
        if wants_parallel(target, work, "transform") and par:
            try_parallel(sch, sch.fuse(*par) if len(par) > 1 else par[0])
        return sch

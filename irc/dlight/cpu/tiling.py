"""The output-tile schedule shared by the CPU rules for reductions whose output's
contiguous dimension is spatial (matmul, batch matmul, conv2d in NCHW and NHWC,
depthwise conv, pooling).

Plan (:func:`plan_output_tile`): the *vector loop* ``v`` is the spatial loop indexing the
output's innermost dimension; a tile of ``nr`` elements of it (one to four vector
registers) is vectorized. The *register loop* ``r`` is a spatial loop along which the
vector operands (loads that move with ``v``) stay the same — the rows of a matmul, the
output channels of an NCHW conv, the output columns of an NHWC conv — so ``mr`` rows of
accumulators reuse each vector load (a register-blocked micro-kernel of ``mr x nr``).
Around the micro-kernel, a macro tile (up to 64 rows x 256 columns) keeps the operands in
cache, and the loops outside it run in parallel.

Schedule (:func:`apply_output_tile`): split and reorder to
``[outer spatial..., r0, v0] [r1a, v1a] [reductions...] [r1, v1]``; the epilogue (or a
local accumulator's write-back) goes under ``v1a`` so the accumulator shrinks to the
``mr x nr`` tile; the init is decomposed before the reductions; ``r1`` is unrolled and
``v1`` vectorized in the init, the update and the epilogue (the update of a strided
reduction without a register loop, such as pooling, is left to LLVM's vectorizer,
whose interleaved loads beat gathers there).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from ...core.target import Target
from ...tir.schedule import BlockRV, Schedule
from ...tir.schedule.block_info import BlockInfo, const_int, innermost_spatial_var, loads, store_of
from .utils import (
    largest_divisor,
    try_parallel,
    try_vectorize,
    vector_lanes,
    vector_split,
    wants_parallel,
    work_of,
)

# Accumulator registers of a micro-kernel: at most 16, and at most what the target's
# vector registers hold beside the tile's vector operands and one broadcast (see
# `max_accumulators`): 16 of AVX-512's 32 registers, 12 of AVX2's 16.
MAX_ACCUMULATORS = 16
MAX_ROWS = 8
MACRO_ROWS = 64
MACRO_COLS = 256
# A gather of more than this stride per lane is not worth vectorizing for.
MAX_GATHER_STRIDE = 4


@dataclass
class TilePlan:
    """Positions (in the block's loop list) and tile sizes of the output tile: ``nvec``
    vectors of ``width`` lanes along the vector loop (``nr`` elements), ``mr`` rows along
    the register loop, and the macro tile's multiples of them."""

    vec: int
    width: int
    nvec: int
    reg: int | None
    mr: int
    vec_macro: int
    reg_macro: int
    # Whether to vectorize the update explicitly when loads are strided (gathers): worth
    # it when a register loop reuses each load; for pooling, LLVM's interleaved loads
    # do better on the plain loop.
    gather_ok: bool = True

    @property
    def nr(self) -> int:
        """Elements of the tile along the vector loop."""
        return self.width * self.nvec


def plan_output_tile(info: BlockInfo, target: Target, need_reuse: bool = False
                     ) -> TilePlan | None:
    """The tile plan of a reduction block, or None when its output's innermost dimension
    is not a constant spatial loop of at least 4 iterations, a load moves with it by a
    large or unknown stride, or (``need_reuse``) no spatial loop reuses the vector
    operands."""
    store = store_of(info.block)
    v_var = innermost_spatial_var(info.block)
    if store is None or v_var is None:
        return None
    vec = next((k for k, it in enumerate(info.iters) if it.var is v_var), None)
    if vec is None or info.iters[vec].kind != "S":
        return None
    ev = info.iters[vec].const_extent
    if ev is None or ev < 4:
        return None
    ld = loads(info.block)
    vector_operands = []
    for a in ld:
        s = a.stride(v_var)
        if s is None or abs(s) > MAX_GATHER_STRIDE:
            return None
        if s != 0:
            vector_operands.append(a)
    reg = None
    for k, it in enumerate(info.iters):
        if k == vec or it.kind != "S" or it.var is None:
            continue
        if (it.const_extent or 0) < 2:
            continue
        if all(a.stride(it.var) == 0 for a in vector_operands):
            reg = k  # the innermost qualifying loop wins
    if need_reuse and reg is None:
        return None
    lanes = vector_lanes(target, store.buffer.dtype)
    width = vector_split(ev, lanes) or largest_divisor(ev, lanes)
    er = info.iters[reg].const_extent if reg is not None else 1
    regs = target.vector_registers()
    best = None
    for nvec in (4, 3, 2, 1):
        if (ev // width) % nvec:
            continue
        for mr in range(1, MAX_ROWS + 1):
            if er % mr or not fits_registers(mr, nvec, regs):
                continue
            key = (mr * nvec, -(mr + nvec))
            if best is None or key > best[0]:
                best = (key, nvec, mr)
    _, nvec, mr = best
    gather_ok = reg is not None or all(abs(a.stride(v_var)) <= 1 for a in ld)
    if not gather_ok:
        # Left to LLVM's vectorizer: a power-of-two row it handles with full vectors.
        width = next((w for w in (lanes, lanes // 2, lanes // 4) if w >= 4 and ev % w == 0),
                     width)
        nvec = 1
    nr = width * nvec
    outer = 1
    for k, it in enumerate(info.iters):
        if it.kind == "S" and k not in (vec, reg):
            outer *= it.const_extent or 64
    vec_macro = largest_divisor(ev // nr, max(1, MACRO_COLS // nr)) if ev % nr == 0 else 1
    big = _largest_load(info)
    if big is not None and big.stride(v_var) != 0 and any(
            it.kind == "S" and it.var is not v_var and (it.const_extent or 2) > 1
            and big.stride(it.var) == 0 for it in info.iters):
        # The largest input moves with the vector loop (a conv's weights): one column
        # tile at a time, reused across the loops it does not depend on.
        vec_macro = 1
    reg_macro = largest_divisor(er // mr, max(1, MACRO_ROWS // mr)) if reg is not None else 1
    cores = max(1, target.num_cores)

    def outer_count() -> int:
        return outer * (er // (mr * reg_macro)) * max(1, ceil(ev / (nr * vec_macro)))

    # Keep at least a few parallel tasks per core: shrink the macro tile if needed.
    while outer_count() < 4 * cores and (vec_macro > 1 or reg_macro > 1):
        if vec_macro >= reg_macro and vec_macro > 1:
            vec_macro = largest_divisor(ev // nr, vec_macro - 1) or 1
        else:
            reg_macro = largest_divisor(er // mr, reg_macro - 1) or 1
    return TilePlan(vec=vec, width=width, nvec=nvec, reg=reg, mr=mr, vec_macro=vec_macro,
                    reg_macro=reg_macro, gather_ok=gather_ok)


def fits_registers(mr: int, nvec: int, registers: int) -> bool:
    """Whether an ``mr x nvec`` accumulator tile, its ``nvec`` vector operands and one
    broadcast fit in ``registers`` vector registers with room to spare (at most
    ``MAX_ACCUMULATORS`` accumulators, and no more than ``registers - 4``: on a
    16-register CPU a 4 x 4 tile spills an accumulator in every step)."""
    acc = mr * nvec
    return acc <= min(MAX_ACCUMULATORS, registers - 4) and acc + nvec + 1 <= registers


def apply_output_tile(sch: Schedule, info: BlockInfo, plan: TilePlan,
                      epilogue: BlockRV | None, target: Target) -> None:
    """Tile the reduction block ``info`` by ``plan`` (see the module docstring).
    ``epilogue`` is the elementwise block consuming the reduction's result, placed in
    the tile; without one, the block accumulates into a local buffer that is written
    back per tile."""
    iters = info.iters
    v = iters[plan.vec]
    v0, v1a, vu, v1 = sch.split(v.loop_rv, [None, plan.vec_macro, plan.nvec, plan.width])
    r0 = r1a = r1 = None
    if plan.reg is not None:
        r0, r1a, r1 = sch.split(iters[plan.reg].loop_rv, [None, plan.reg_macro, plan.mr])
    outer = []
    big = _largest_load(info)
    for k, it in enumerate(iters):
        if it.kind != "S":
            continue
        loop = v0 if k == plan.vec else (r0 if k == plan.reg else it.loop_rv)
        # The loops along which the largest input stays the same go inside the others,
        # so its tile stays in cache across them (a conv's weights across output rows).
        reuses = big is not None and big.stride(it.var) == 0
        outer.append((reuses, loop))
    outer = [loop for _, loop in sorted(outer, key=lambda x: x[0])]
    red = [it.loop_rv for it in iters if it.kind == "R"]
    mid = ([r1a] if r1a is not None else []) + [v1a]
    inner = ([r1] if r1 is not None else []) + [vu, v1]
    sch.reorder(*outer, *mid, *red, *inner)
    tile_loop = mid[-1]
    if epilogue is None:
        epilogue = sch.cache_write(info.block_rv, 0, "local")
    sch.reverse_compute_at(epilogue, tile_loop)
    init = sch.decompose_reduction(info.block_rv, red[0])
    init_loops = sch.get_loops(init)[-len(inner):]
    for lp in init_loops[:-1] + inner[:-1]:
        sch.unroll(lp)
    try_vectorize(sch, init_loops[-1])
    if plan.gather_ok:
        try_vectorize(sch, v1)
    epi_loops = sch.get_loops(epilogue)
    n_outer = len(outer) + len(mid)
    if len(epi_loops) > n_outer:
        last = epi_loops[-1]
        if plan.nvec > 1 and _extent(sch, last) == plan.nr:
            last = sch.split(last, [None, plan.width])[1]
        try_vectorize(sch, last)
    work = work_of([it.extent for it in iters])
    if wants_parallel(target, work):
        chain = outer + (mid if _count(sch, outer) < 2 * target.num_cores else [])
        fused = sch.fuse(*chain) if len(chain) > 1 else chain[0]
        try_parallel(sch, fused)


def _largest_load(info: BlockInfo):
    """The load of the block's biggest input buffer (constant shapes only), when it is
    at least twice as big as every other input."""
    sized = []
    for a in loads(info.block):
        n = 1
        for d in a.buffer.shape:
            v = const_int(d)
            if v is None:
                return None
            n *= v
        sized.append((n, a))
    if not sized:
        return None
    sized.sort(key=lambda x: -x[0])
    if len(sized) > 1 and sized[0][0] < 2 * sized[1][0]:
        return None
    return sized[0][1]


def _extent(sch: Schedule, loop) -> int | None:
    return const_int(sch.get(loop).extent)


def _count(sch: Schedule, loops) -> int:
    n = 1
    for lp in loops:
        e = const_int(sch.get(lp).extent)
        n *= e if e is not None else 64
    return n

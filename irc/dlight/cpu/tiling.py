"""The output-tile schedule shared by the CPU rules for reductions whose output's
contiguous dimension is spatial (matmul, batch matmul, conv2d in NCHW and NHWC,
depthwise conv, pooling).

Plan (:func:`plan_output_tile`): the *vector loop* ``v`` is the spatial loop indexing the
output's innermost dimension; a tile of ``nr`` elements of it (one to four vector
registers) is vectorized. The *register loop* ``r`` is a spatial loop along which the
vector operands (loads that move with ``v``) stay the same — the rows of a matmul, the
output channels of an NCHW conv, the output columns of an NHWC conv — so ``mr`` rows of
accumulators reuse each vector load (a register-blocked micro-kernel of ``mr x nr``,
sized to the target's vector registers and chosen by an estimate of its cycles,
:func:`choose_micro_tile`; ``mr`` may leave a partial last row tile). Around the
micro-kernel, a macro tile (up to 64 rows x 256 columns) keeps the operands in cache,
and the loops outside it run in parallel. A long reduction whose weight panel would not
stay in L1 is blocked (:func:`reduction_block`). Where no loop keeps every vector operand
(a depthwise convolution reads input and weight along the channels), a loop that keeps
some of them and whose rows' other loads overlap across the reduction's steps (a
stride-1 window's output columns) is a *partial* register loop: each row loads its own
vector of the others, but the tile shares the weight's loads and LLVM carries the
overlapping input vectors from one tap to the next (MobileNet-V2's stride-1 depthwise
layers). Where the register loop is short (a
14 x 14 or 7 x 7 convolution's output columns), the *group loop* ``g`` (the next loop
that reuses the vector operands: the output rows) adds rows to the macro tile, so more
row tiles share each panel.

Schedule (:func:`apply_output_tile`): split and reorder to
``[outer spatial..., g0, r0, v0] [g1, r1a, v1a] [reductions...] [r1, v1]``; the epilogue
(or a local accumulator's write-back) goes under ``v1a`` so the accumulator shrinks to the
``mr x nr`` tile (blocked: ``[outer...] [reductions, k0] [v1a, g1, r1a] [k1] [r1, v1]`` with
the epilogue per macro tile; a partial row tile is the last ``r1a`` iteration, where the
split's predicate holds, and LoopPartition cuts it off at lowering); the init is
decomposed before the reductions; ``r1`` is unrolled and ``v1`` vectorized in the init,
the update and the epilogue (the update of a strided
reduction without a register loop, such as pooling, is left to LLVM's vectorizer,
whose interleaved loads beat gathers there).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from ...core import dtype as dt
from ...core.target import Target
from ...tir.schedule import BlockRV, Schedule
from ...tir.schedule.block_info import (
    BlockInfo,
    const_int,
    has_if_then_else,
    innermost_spatial_var,
    loads,
    store_of,
)
from ...tir.stmt import BufferStore
from ...tir.transform.unswitch_guards import UNSWITCH_KEY
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
# `fits_registers`): 16 of AVX-512's 32 registers, 12 of AVX2's 16.
MAX_ACCUMULATORS = 16
MAX_ROWS = 8
# Vectors of a one-row micro-kernel (a matrix-vector product), registers permitting: a
# 1000-wide classifier (125 vectors of 8) takes 5 accumulators instead of 1.
MAX_ROW_VECTORS = 8
MACRO_ROWS = 64
MACRO_COLS = 256
# A gather of more than this stride per lane is not worth vectorizing for.
MAX_GATHER_STRIDE = 4
# A reduction whose vector-operand panel (reduction x tile width) exceeds this many
# bytes, half of a 32 KB L1 data cache, is considered for cache blocking; a block of it
# and the macro tile's rows of the broadcast operand must fit ``L1_BYTES`` together.
PANEL_BYTES = 16 * 1024
L1_BYTES = 32 * 1024
# The reduction is blocked only for macro tiles of at least this many row tiles, which
# share each panel (7 output rows as two tiles ran 4-25% slower blocked on a Zen 3).
MIN_BLOCKED_ROW_TILES = 4
# Reduction blocks shorter than this are not worth the accumulators' reloads and the
# micro-kernel's start per block (BERT's 128-row products ran 5-10% slower at 64-128).
MIN_KC = 96
# A micro-kernel with a partial row tile is chosen over the best exact one only when it
# is estimated this much cheaper (the estimate is rough; partial tiles cost code size).
ROW_TAIL_GAIN = 0.05
# Rows a macro tile may gather from its register loop and the group loop together (see
# `TilePlan.grp`): a 14 x 14 convolution's macro tile spans two output rows, a 7 x 7
# one all seven.
GROUP_ROWS = 56
# A weight that moves with the vector loop (a conv's or a matmul's) keeps the macro
# tile to one column tile, so each weight panel is reused by many row tiles, unless the
# panel under the whole macro tile (the reduction times up to ``MACRO_COLS`` columns)
# is at most this many bytes, a quarter of a 1 MB L2: then a macro tile spans several
# column tiles, the rows' input stays in L1 across them, and the epilogue writes
# whole rows of the output (a 1 KB run per output pixel of ResNet-50's 14 x 14, 256 to
# 1024 channel convolution instead of 128 bytes). On a Zen 4, in the network, that
# convolution ran 4% faster and the 28 x 28 and 14 x 14 Winograd products 3-5%; with
# 512 or more input channels (2-8 MB panels) the same tiles ran 4-8% slower.
WIDE_PANEL_BYTES = 256 * 1024
# The cycles between dependent FMAs that the micro-kernel estimate assumes
# (`tile_cycles`). Zen 3's latency is 4, but a tile of exactly 8 accumulators (2 x 4 or
# 4 x 2, which 4 cycles at two FMAs per cycle would keep busy) reached about 70% of the
# FMA peak, and 5 x 2 tiles with a partial last one ran ResNet-50's 14 x 14 1 x 1
# convolutions 8-12% faster; 4.5 makes 9 or more accumulators count. Guarded tiles (a
# padded convolution's select per row) are estimated with the bare latency
# (`GUARDED_FMA_LATENCY`), which keeps them at 2 x 4: their 4 x 2, 5 x 2 and 6 x 2 tiles
# ran stride-2 3 x 3 convolutions 1.3-2.9x slower (LLVM spills the guarded broadcasts).
FMA_LATENCY = 4.5
GUARDED_FMA_LATENCY = 4.0


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
    # The innermost reduction loop's block (cache blocking of the reduction), or None:
    # see `reduction_block`.
    kc: int | None = None
    # Whether ``mr`` leaves a partial last row tile (all row tiles then form one macro
    # tile, and LoopPartition cuts the partial one off at lowering).
    row_tail: bool = False
    # A second spatial loop along which the vector operands stay the same (a conv's
    # output rows, beside its columns in ``reg``), and how many of its iterations join
    # the macro tile (at most ``GROUP_ROWS`` rows with the register loop's).
    grp: int | None = None
    grp_macro: int = 1
    # Whether the register loop reuses only some of the vector operands (see
    # `plan_output_tile`): every row of the tile loads its own vector of the others.
    partial: bool = False

    @property
    def nr(self) -> int:
        """Elements of the tile along the vector loop."""
        return self.width * self.nvec


@dataclass(frozen=True)
class PlanKnobs:
    """Overrides of the analytic choices of :func:`plan_output_tile`, for measuring
    neighbours of the default plan (:func:`plan_variants`): the micro-kernel
    ``(mr, nvec)`` (None: :func:`choose_micro_tile`'s), the macro tile's row and column
    limits, the L1 budget of reduction blocking and whether to block at all, and the
    rows the group loop may gather, and whether a weight's macro tile may span several
    column tiles. The defaults are the default plan's."""

    micro: tuple[int, int] | None = None
    macro_rows: int = MACRO_ROWS
    macro_cols: int = MACRO_COLS
    l1_bytes: int = L1_BYTES
    block: bool = True
    group_rows: int = GROUP_ROWS
    # Whether a macro tile may span several column tiles where the weight moves with
    # the vector loop (None: where its panel is within ``WIDE_PANEL_BYTES``).
    wide: bool | None = None


DEFAULT_KNOBS = PlanKnobs()


def vector_iter(info: BlockInfo) -> tuple[BufferStore, int] | None:
    """The block's single store and the position among its loops of the spatial loop
    along which that store is contiguous (:func:`innermost_spatial_var`); None when
    there is no such store or loop."""
    store = store_of(info.block)
    v_var = innermost_spatial_var(info.block)
    if store is None or v_var is None:
        return None
    vec = next((k for k, it in enumerate(info.iters) if it.var is v_var), None)
    if vec is None or info.iters[vec].kind != "S":
        return None
    return store, vec


def plan_output_tile(info: BlockInfo, target: Target, need_reuse: bool = False,
                     knobs: PlanKnobs = DEFAULT_KNOBS) -> TilePlan | None:
    """The tile plan of a reduction block, or None when its output's innermost dimension
    is not a constant spatial loop of at least 4 iterations, a load moves with it by a
    large or unknown stride, or (``need_reuse``) no spatial loop reuses the vector
    operands. ``knobs`` override the plan's choices; None too when its micro-kernel
    does not fit the block (it must divide the vectors, fit the registers, and leave a
    partial row tile only where the default could)."""
    found = vector_iter(info)
    if found is None:
        return None
    store, vec = found
    v_var = info.iters[vec].var
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
    reg = grp = None
    for k, it in enumerate(info.iters):
        if k == vec or it.kind != "S" or it.var is None:
            continue
        if (it.const_extent or 0) < 2:
            continue
        if all(a.stride(it.var) == 0 for a in vector_operands):
            grp, reg = reg, k  # the innermost qualifying loop wins, the next one groups
    partial = False
    if reg is None and len(vector_operands) > 1:
        # No loop reuses every vector operand (a depthwise convolution reads its input
        # and its weight along the channels). A loop along which some of them stay (the
        # weight, across output columns and rows) still makes a register tile: its rows
        # share each load of those, and where the others' loads of neighbouring rows
        # are the same elements at other steps of the reduction (a stride-1 window's
        # taps), LLVM keeps them in registers from one tap to the next.
        for k, it in enumerate(info.iters):
            if k == vec or it.kind != "S" or it.var is None or (it.const_extent or 0) < 2:
                continue
            if any(a.stride(it.var) == 0 for a in vector_operands) and all(
                    _taps_overlap(info, a, it.var) for a in vector_operands):
                grp, reg = reg, k
        partial = reg is not None
    if need_reuse and reg is None:
        return None
    lanes = vector_lanes(target, store.buffer.dtype)
    width = vector_split(ev, lanes) or largest_divisor(ev, lanes)
    er = info.iters[reg].const_extent if reg is not None else 1
    # A single row with a broadcast operand (a matrix-vector product): its only
    # accumulators are its vectors, each a dependent chain of FMAs, so it may take more.
    single_row = er == 1 and len(vector_operands) < len(ld)
    guarded = has_if_then_else(store.value)
    mr, nvec, row_tail = choose_micro_tile(er, ev // width, target.vector_registers(),
                                           allow_row_tail=reg is not None,
                                           max_nvec=MAX_ROW_VECTORS if single_row else 4,
                                           guarded=guarded, partial=partial)
    gather_ok = reg is not None or all(abs(a.stride(v_var)) <= 1 for a in ld)
    if not gather_ok:
        # Left to LLVM's vectorizer: a power-of-two row it handles with full vectors.
        width = next((w for w in (lanes, lanes // 2, lanes // 4) if w >= 4 and ev % w == 0),
                     width)
        nvec = 1
    outer = 1
    for k, it in enumerate(info.iters):
        if it.kind == "S" and k not in (vec, reg, grp):
            outer *= it.const_extent or 64
    eg = info.iters[grp].const_extent if grp is not None else 1
    cores = max(1, target.num_cores)

    def tail_ok(nvec: int) -> bool:
        return reg is not None and outer * eg * ceil(ev / (width * nvec)) >= 2 * cores

    if row_tail and not tail_ok(nvec):
        # The partial tile's loop must stay out of the parallel loop (LoopPartition
        # cuts serial loops only): without enough other parallel work, tile exactly.
        mr, nvec, row_tail = choose_micro_tile(er, ev // width, target.vector_registers(),
                                               allow_row_tail=False, guarded=guarded,
                                               partial=partial)
    if knobs.micro is not None:
        mr, nvec = knobs.micro
        row_tail = er % mr != 0
        if (not gather_ok or mr > er or (ev // width) % nvec
                or not fits_registers(mr, nvec, target.vector_registers())
                or row_tail and not tail_ok(nvec)):
            return None
    nr = width * nvec
    vec_macro = largest_divisor(ev // nr, max(1, knobs.macro_cols // nr)) \
        if ev % nr == 0 else 1
    big = _largest_load(info)
    elem = max(1, dt.bits(store.buffer.dtype) // 8)
    if big is not None and big.stride(v_var) != 0 and any(
            it.kind == "S" and it.var is not v_var and (it.const_extent or 2) > 1
            and big.stride(it.var) == 0 for it in info.iters):
        # The largest input moves with the vector loop (a conv's weights): one column
        # tile at a time, reused across the loops it does not depend on, unless the
        # weight's panel under the whole macro tile is small (see WIDE_PANEL_BYTES).
        panel = _reduction_size(info) * min(ev, knobs.macro_cols) * elem
        if not (knobs.wide or knobs.wide is None and panel <= WIDE_PANEL_BYTES):
            vec_macro = 1
    if row_tail:
        # Every row tile in one macro tile: the partial one is the last iteration of a
        # serial loop, which LoopPartition cuts off.
        reg_macro = ceil(er / mr)
    else:
        reg_macro = largest_divisor(er // mr, max(1, knobs.macro_rows // mr)) \
            if reg is not None else 1

    grp_macro = 1

    def outer_count() -> int:
        return (outer * (eg // grp_macro) * ceil(er / (mr * reg_macro))
                * max(1, ceil(ev / (nr * vec_macro))))

    # Keep at least a few parallel tasks per core: shrink the macro tile if needed.
    while outer_count() < 4 * cores and (vec_macro > 1 or (reg_macro > 1 and not row_tail)):
        if vec_macro >= reg_macro and vec_macro > 1 or row_tail:
            vec_macro = largest_divisor(ev // nr, vec_macro - 1) or 1
        else:
            reg_macro = largest_divisor(er // mr, reg_macro - 1) or 1

    def block() -> int | None:
        if (knobs.block and reg is not None and reg_macro * grp_macro >= MIN_BLOCKED_ROW_TILES
                and outer_count() >= 2 * cores):
            return reduction_block(info, nr, mr * reg_macro * grp_macro, elem,
                                   knobs.l1_bytes)
        return None

    kc = block()
    if grp is not None and (kc is not None or vec_macro == 1):
        # Rows of the group loop join the macro tile of a blocked reduction (sharing
        # each panel) or of a single column tile (sharing its weights in cache), while
        # the tile keeps enough parallel tasks and a blocked reduction keeps its block.
        rows = er if row_tail else mr * reg_macro
        for g in sorted((d for d in range(2, eg + 1) if eg % d == 0), reverse=True):
            if g * rows > knobs.group_rows:
                continue
            grp_macro = g
            if outer_count() >= 4 * cores and (kc is None or block() == kc):
                kc = block()
                break
            grp_macro = 1
    return TilePlan(vec=vec, width=width, nvec=nvec, reg=reg, mr=mr, vec_macro=vec_macro,
                    reg_macro=reg_macro, gather_ok=gather_ok, kc=kc, row_tail=row_tail,
                    grp=grp if grp_macro > 1 else None, grp_macro=grp_macro,
                    partial=partial)


# Neighbours of a default plan that :func:`plan_variants` proposes: the micro-kernels
# estimated cheapest after the default's (at most ``MICRO_VARIANTS``), and one change
# of each other knob. Measured cold (as the tuner measures) on a Zen 4, ResNet-50's
# layers gained up to 8% from one of them: 8 x 2 or 4 x 4 tiles for 1 x 1
# convolutions at 7 x 7 and its Winograd products at 7 x 7, 3 x 4 for the 28 x 28
# Winograd product, a 32-row macro tile for the 14 x 14 one.
MICRO_VARIANTS = 6
KNOB_VARIANTS = (
    PlanKnobs(macro_rows=MACRO_ROWS // 2), PlanKnobs(macro_rows=MACRO_ROWS * 2),
    PlanKnobs(macro_cols=MACRO_COLS // 2), PlanKnobs(macro_cols=MACRO_COLS * 2),
    PlanKnobs(l1_bytes=L1_BYTES // 2), PlanKnobs(l1_bytes=L1_BYTES * 2),
    PlanKnobs(block=False),
    PlanKnobs(group_rows=GROUP_ROWS // 4), PlanKnobs(group_rows=GROUP_ROWS * 2),
    PlanKnobs(wide=True), PlanKnobs(wide=False),
)


def plan_variants(info: BlockInfo, target: Target, need_reuse: bool = False
                  ) -> list[tuple[PlanKnobs, TilePlan]]:
    """Plans next to the default plan of ``info`` (each differs from it and from the
    others), most promising first: other micro-kernels in the order of their estimated
    cycles per FMA, then other macro tiles, reduction blocks and row groups. The default
    plan is the analytic estimate's best guess; the tuner measures these to correct it
    where the estimate or the cache model is off for a layer. Empty when the block has
    no plan."""
    default = plan_output_tile(info, target, need_reuse)
    if default is None:
        return []
    seen = [default]
    found: list[tuple[PlanKnobs, TilePlan]] = []

    def add(knobs: PlanKnobs) -> None:
        plan = plan_output_tile(info, target, need_reuse, knobs)
        if plan is not None and plan not in seen:
            seen.append(plan)
            found.append((knobs, plan))

    er = info.iters[default.reg].const_extent if default.reg is not None else 1
    nv = info.iters[default.vec].const_extent // default.width
    store = store_of(info.block)
    guarded = store is not None and has_if_then_else(store.value)
    latency = GUARDED_FMA_LATENCY if guarded else FMA_LATENCY
    ranked = []
    for nvec in range(1, 5):
        if nv % nvec:
            continue
        for mr in range(1, min(er, MAX_ROWS) + 1):
            if (mr, nvec) == (default.mr, default.nvec) or \
                    not fits_registers(mr, nvec, target.vector_registers()):
                continue
            ranked.append((micro_tile_cost(er, mr, nvec, latency, default.partial),
                           -mr * nvec, mr, nvec))
    for *_, mr, nvec in sorted(ranked):
        if len(found) >= MICRO_VARIANTS:
            break
        add(PlanKnobs(micro=(mr, nvec)))
    for knobs in KNOB_VARIANTS:
        add(knobs)
    return found


def _taps_overlap(info: BlockInfo, a, var) -> bool:
    """Whether load ``a`` stays the same along ``var`` or moves along it by the stride
    it moves along some reduction loop (rows of a stride-1 window: the element one row
    reads at tap ``k + 1`` is the one the next row reads at tap ``k``)."""
    s = a.stride(var)
    return s == 0 or s is not None and any(
        it.kind == "R" and it.var is not None and a.stride(it.var) == s for it in info.iters)


def tile_cycles(mr: int, nvec: int, latency: float = FMA_LATENCY, partial: bool = False
                ) -> float:
    """Estimated cycles of one reduction step of an ``mr x nvec`` micro-kernel: its
    ``mr * nvec`` FMAs at two per cycle, but no faster than one FMA ``latency`` (each
    accumulator depends on its previous step), plus a quarter cycle per load (``mr``
    broadcasts, ``nvec`` vector loads), fitted to measured micro-kernels (tiles of 12
    accumulators come closest to the FMA peak, those of 8 next, smaller ones less).
    With a ``partial`` register loop each row also loads its own vectors (``mr * nvec``
    loads besides the ``nvec`` shared ones)."""
    if partial:
        return max(mr * nvec / 2, latency) + 0.25 * (mr * nvec + nvec)
    return max(mr * nvec / 2, latency) + 0.25 * (mr + nvec)


def micro_tile_cost(er: int, mr: int, nvec: int, latency: float, partial: bool) -> float:
    """Estimated cycles per vector of ``er`` rows in ``mr x nvec`` micro-kernels (the
    last one partial where ``mr`` does not divide ``er``), by :func:`tile_cycles`."""
    tail = er % mr
    cycles = (er // mr) * tile_cycles(mr, nvec, latency, partial) + (
        tile_cycles(tail, nvec, latency, partial) if tail else 0.0)
    return cycles / (er * nvec)


def choose_micro_tile(er: int, nv: int, registers: int, allow_row_tail: bool,
                      max_nvec: int = 4, guarded: bool = False, partial: bool = False
                      ) -> tuple[int, int, bool]:
    """The micro-kernel ``(mr, nvec, row_tail)`` for ``er`` rows and ``nv`` vectors:
    ``nvec`` divides ``nv`` and the tile fits the registers (:func:`fits_registers`);
    the cheapest by :func:`tile_cycles` per FMA, summed over the row tiles. ``mr`` need
    not divide ``er`` (``row_tail``: the last row tile is partial) when
    ``allow_row_tail`` and that is at least ``ROW_TAIL_GAIN`` cheaper than the best
    exact tile: 7 output columns take 4 + 3 rows of two vectors (0.84 cycles per FMA)
    instead of 7 rows of one (0.93), 14 take 5 + 5 + 4 rows (0.70) instead of 7 tiles
    of 2 x 4 (0.75), 49 Winograd tiles 9 x 5 + 4 rows (0.68).

    Between tiles estimated alike (2 x 4 and 4 x 2), the one with more rows and fewer
    vectors wins: its weight panel is half as wide, which ran most of ResNet-50's 1 x 1
    convolutions faster. Where the broadcast operand is ``guarded`` (a padded
    convolution's select per row and step), the estimate takes the bare latency
    (``GUARDED_FMA_LATENCY``) and ties go to fewer rows, each row's select being paid
    per vector: there more rows ran a stride-2 3 x 3 convolution much slower."""
    latency = GUARDED_FMA_LATENCY if guarded else FMA_LATENCY
    best: dict[bool, tuple] = {}
    for nvec in range(max_nvec, 0, -1):
        if nv % nvec:
            continue
        for mr in range(1, MAX_ROWS + 1):
            if not fits_registers(mr, nvec, registers):
                continue
            tail = er % mr
            if tail and not allow_row_tail:
                continue
            key = (micro_tile_cost(er, mr, nvec, latency, partial), -mr * nvec,
                   mr if guarded else nvec)
            kind = bool(tail)
            if kind not in best or key < best[kind][0]:
                best[kind] = (key, mr, nvec)
    exact = best[False]
    tailed = best.get(True)
    if tailed is not None and tailed[0][0] < exact[0][0] * (1 - ROW_TAIL_GAIN):
        return tailed[1], tailed[2], True
    return exact[1], exact[2], False


def reduction_block(info: BlockInfo, nr: int, rows: int, elem_bytes: int,
                    l1_bytes: int = L1_BYTES) -> int | None:
    """The block size of the innermost reduction loop when the reduction is worth cache
    blocking, else None. Blocked, every other reduction loop and the block's outer part
    run outside the macro tile, so one micro-kernel's vector-operand panel (``kc x nr``
    elements of a packed weight) stays in the L1 cache, next to the macro tile's ``rows``
    of the broadcast operand, while every row tile of the macro tile reads it, instead
    of the whole reduction's panel streaming from L2 or L3 once per row tile (a 1 x 1
    convolution with 1024 input channels reads a 128 KB panel per tile unblocked, a
    3 x 3 one with 128 nine times 16 KB; blocked, ResNet-50's run 10-17% faster on a
    Zen 3). None when the whole panel is within ``PANEL_BYTES``, or no block of at
    least ``MIN_KC`` divides the innermost loop and fits ``l1_bytes`` with the rows."""
    reds = [it for it in info.iters if it.kind == "R"]
    extents = [it.const_extent for it in reds]
    if not reds or any(e is None for e in extents):
        return None
    total = 1
    for e in extents:
        total *= e
    if total * nr * elem_bytes <= PANEL_BYTES:
        return None
    kc = largest_divisor(extents[-1], l1_bytes // ((nr + rows) * elem_bytes))
    return kc if kc >= MIN_KC else None


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
    g1 = None
    outer = []
    big = _largest_load(info)
    for k, it in enumerate(iters):
        if it.kind != "S":
            continue
        loop = v0 if k == plan.vec else (r0 if k == plan.reg else it.loop_rv)
        if k == plan.grp:
            loop, g1 = sch.split(it.loop_rv, [None, plan.grp_macro])
        # The loops along which the largest input stays the same go inside the others,
        # so its tile stays in cache across them (a conv's weights across output rows).
        reuses = big is not None and big.stride(it.var) == 0
        outer.append((reuses, loop))
    outer = [loop for _, loop in sorted(outer, key=lambda x: x[0])]
    red = [it.loop_rv for it in iters if it.kind == "R"]
    rows = [lp for lp in (g1, r1a) if lp is not None]
    mid = rows + [v1a]
    inner = ([r1] if r1 is not None else []) + [vu, v1]
    k1 = None
    if plan.kc is not None:
        # Cache-blocked: [outer] [reductions, outer block] [columns, rows] [block]
        # [micro-kernel]; a panel stays in L1 across the rows of the macro tile, and the
        # epilogue runs per macro tile once every block is done.
        if plan.kc < _extent(sch, red[-1]):
            k0, k1 = sch.split(red[-1], [None, plan.kc])
            red = red[:-1] + [k0]
        else:
            red, k1 = red[:-1], red[-1]
        mid = [v1a] + rows
        sch.reorder(*outer, *red, *mid, k1, *inner)
        tile_loop = outer[-1]
    else:
        sch.reorder(*outer, *mid, *red, *inner)
        tile_loop = mid[-1]
    if epilogue is None:
        epilogue = sch.cache_write(info.block_rv, 0, "local")
    sch.reverse_compute_at(epilogue, tile_loop)
    init = sch.decompose_reduction(info.block_rv, red[0] if red else k1)
    init_loops = sch.get_loops(init)[-len(inner):]
    for lp in init_loops[:-1] + inner[:-1]:
        sch.unroll(lp)
    try_vectorize(sch, init_loops[-1])
    if plan.gather_ok:
        try_vectorize(sch, v1)
    epi_loops = sch.get_loops(epilogue)
    n_outer = len(outer) + (0 if plan.kc is not None else len(mid))
    if len(epi_loops) > n_outer:
        last = epi_loops[-1]
        ext = _extent(sch, last)
        if ext is not None and ext > plan.width and ext % plan.width == 0:
            last = sch.split(last, [None, plan.width])[1]
        try_vectorize(sch, last)
    work = work_of([it.extent for it in iters])
    tile = mid[-1]
    # Without a register loop each multiply-add loads its own operands (with a partial
    # one, at least one of them: MobileNet-V2's 7 x 7 x 960 depthwise layer ran 23%
    # faster on two cores).
    if wants_parallel(target, work, "unblocked" if plan.reg is None or plan.partial
                      else None):
        few = (_count(sch, outer) < 2 * target.num_cores and plan.kc is None
               and not plan.row_tail)
        chain = outer + (mid if few else [])
        fused = sch.fuse(*chain) if len(chain) > 1 else chain[0]
        try_parallel(sch, fused)
        if few:
            tile = fused
    store = store_of(info.block)
    if store is not None and has_if_then_else(store.value):
        # Padding guards: tiles inside the image get a copy without them. A depthwise
        # convolution has one guard per multiply-add; a register-blocked micro-kernel one
        # per broadcast, which on a Zen 4 still cost MobileNet-V2's 3 x 3 stem (27
        # steps per tile) 1.6x and ResNet's stride-2 3 x 3 layers 3-20% (on a Zen 3,
        # ResNet's had run no faster versioned).
        sch.annotate(tile, UNSWITCH_KEY, 1)


def _reduction_size(info: BlockInfo) -> int:
    """Iterations of the block's reduction loops (an unknown extent counts as large)."""
    n = 1
    for it in info.iters:
        if it.kind == "R":
            n *= it.const_extent or 1 << 20
    return n


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

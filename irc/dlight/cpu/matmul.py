"""``cpu.Matmul``: multiply-accumulate reductions on the CPU — matmul, dense, batch
matmul, and convolutions as implicit GEMMs (NCHW and NHWC, strided, depthwise) — with
their fused producers (padding, casts) and elementwise epilogues (bias, batch-norm
scale and shift, residual add, activation).

Applies to a function whose root blocks are: injective producers, then one reduction
``C[s] += X * Y``, then injective consumers. Steps:

1. the epilogue chain is inlined down to the block writing the output;
2. each producer is inlined into the reduction when that keeps the reduction's loads
   vectorizable (a padding guard that does not vary along the vector loop, a cast);
   otherwise it stays a stage of its own (e.g. NCHW padding, whose guard varies along
   the output row, or the padding of a convolution where a padded copy costs less than
   the guards: many multiply-adds per input element), scheduled like an elementwise
   block;
3. the reduction gets the register-blocked output tile of :mod:`.tiling`, with the
   epilogue computed per tile from the accumulator.
"""

from __future__ import annotations

import logging
from typing import Any

from ...core.diagnostics import ScheduleError
from ...core.functor import post_order_visit
from ...core.structural import structural_equal
from ...core.target import Target
from ...tir.expr import Call, FloorDiv, FloorMod, IntImm
from ...tir.schedule import Schedule
from ...tir.schedule.block_info import (
    BlockInfo,
    block_accesses,
    get_block_infos,
    has_if_then_else,
    innermost_spatial_var,
    is_normalized,
    is_output,
    loads,
    match_reduction,
    multiply_operands,
    store_of,
)
from ...tir.schedule.state import var_ids
from ...tir.stmt import PrimFunc
from ..analysis import try_compute_inline
from ..base import ScheduleRule
from ..weights import packable_params
from .tiling import (
    MAX_GATHER_STRIDE,
    TilePlan,
    apply_output_tile,
    plan_output_tile,
    plan_variants,
    vector_iter,
)
from .utils import schedule_injective_block, vector_lanes

logger = logging.getLogger(__name__)

# A padding guard is inlined into a multiply-accumulate only when the reduction does
# fewer multiply-adds than this per padded input element (see `_padded_copy_pays`).
PADDED_COPY_WORK = 512


def anchor_reduction(sch: Schedule) -> tuple[list[BlockInfo], int] | None:
    """The root blocks and the position of the only reduction block, when every other
    block is injective and the reduction's domain is not empty; None otherwise."""
    infos = get_block_infos(sch)
    if not infos or not is_normalized(infos):
        return None
    reds = [k for k, b in enumerate(infos) if b.block.init is not None]
    if len(reds) != 1 or not infos[reds[0]].is_reduction():
        return None
    for k, b in enumerate(infos):
        if k != reds[0] and not (b.is_injective() and b.has_trivial_predicate()):
            return None
    if not infos[reds[0]].has_trivial_predicate():
        return None
    if any(it.const_extent == 0 for it in infos[reds[0]].iters):
        # An empty domain (a zero-size output): nothing to tile, and the tiling's
        # cache stages cannot be given an empty range. A later rule's loops run zero
        # times.
        return None
    return infos, reds[0]


def inline_epilogue(sch: Schedule, anchor_name: str) -> list[BlockInfo] | None:
    """Inline the injective blocks after the anchor that do not write outputs (the
    epilogue chain collapses into the block writing the output). Returns the blocks
    after the anchor that remain."""
    while True:
        infos = get_block_infos(sch)
        if infos is None:
            return None
        pos = next(k for k, b in enumerate(infos) if b.name == anchor_name)
        after = infos[pos + 1:]
        for b in after:
            if not is_output(sch, b.name) and try_compute_inline(sch, b.block_rv):
                break
        else:
            return after


def merge_split_output(sch: Schedule, anchor_name: str) -> Schedule:
    """Where every block that reads the anchor's (intermediate) result reads dimensions
    ``d, d + 1`` of it as ``e // K, e % K`` with ``K`` the extent of ``d + 1`` — a
    reshape merging them, as in a grouped convolution computed per group — lay the
    result out with the two dimensions merged, so those reads become plain ``e`` (a
    copy the epilogue inlines) and the anchor's store stays affine in its iteration
    variables. Returns the (possibly new) schedule."""
    infos = get_block_infos(sch)
    anchor = next(b for b in infos if b.name == anchor_name)
    store = store_of(anchor.block)
    if store is None or is_output(sch, anchor_name):
        return sch
    buf = store.buffer
    shape = [s.value if type(s) is IntImm else None for s in buf.shape]
    merged: set[int] | None = None
    for b in infos:
        if b.name == anchor_name:
            continue
        for a in block_accesses(b.block):
            if a.buffer is not buf:
                continue
            pairs = {d for d in range(len(a.indices) - 1)
                     if _splits(a.indices[d], a.indices[d + 1], shape[d + 1])}
            if merged is not None and pairs != merged:
                return sch
            merged = pairs
    if not merged or any(d + 1 in merged for d in merged):
        return sch
    names = [f"a{k}" for k in range(len(shape))]
    out = []
    for k, n in enumerate(names):
        if k - 1 in merged:
            continue
        out.append(f"{n} * {shape[k + 1]} + {names[k + 1]}" if k in merged else n)
    trial = sch.copy()
    try:
        trial.transform_layout(trial.get_block(anchor_name), ("write", 0),
                               f"lambda {', '.join(names)}: ({', '.join(out)},)")
    except ScheduleError as err:
        logger.debug("cpu.Matmul: %s keeps its split layout: %s", buf.name, err.message)
        return sch
    return trial


def _splits(hi: Any, lo: Any, extent: int | None) -> bool:
    """Whether ``hi, lo`` are ``e // extent, e % extent`` of one expression ``e``."""
    return (extent is not None and type(hi) is FloorDiv and type(lo) is FloorMod
            and type(hi.b) is IntImm and type(lo.b) is IntImm
            and hi.b.value == lo.b.value == extent and structural_equal(hi.a, lo.a))


def _vector_friendly(sch: Schedule, anchor_name: str) -> bool:
    info = next(b for b in get_block_infos(sch) if b.name == anchor_name)
    v = innermost_spatial_var(info.block)
    if v is None:
        return False
    for a in loads(info.block):
        s = a.stride(v)
        if s is None or abs(s) > MAX_GATHER_STRIDE:
            return False
    return True


def inline_producers(sch: Schedule, anchor_name: str, varying_guard: bool) -> Schedule:
    """Inline the injective producers of the anchor where the anchor stays vectorizable
    along its output's innermost dimension and (unless ``varying_guard``) the padding
    guard, if any, does not vary along it; returns the (possibly new) schedule.

    A guard varying along the vector loop keeps that loop scalar, which costs a
    multiply-accumulate kernel most of its speed but is cheaper than a separate padding
    pass for a light reduction such as pooling."""
    while True:
        infos = get_block_infos(sch)
        pos = next(k for k, b in enumerate(infos) if b.name == anchor_name)
        anchor = infos[pos]
        progressed = False
        for b in infos[:pos]:
            if is_output(sch, b.name):
                continue
            reads_it = [a for a in loads(anchor.block)
                        if any(w.buffer is a.buffer for w in b.block.writes)]
            if not reads_it:
                continue
            store = store_of(b.block)
            guarded = store is None or has_if_then_else(store.value)
            trial = sch.copy()
            if not try_compute_inline(trial, trial.get_block(b.name)):
                continue
            if not _vector_friendly(trial, anchor_name):
                continue
            if guarded and not varying_guard and _guard_varies(trial, anchor_name):
                continue
            if guarded and not varying_guard and _padded_copy_pays(anchor, b, reads_it):
                continue
            sch = trial
            progressed = True
            break
        if not progressed:
            return sch


def _padded_copy_pays(info: BlockInfo, producer: BlockInfo, padded_reads: list) -> bool:
    """Whether a padded copy of the input (the producer kept as a stage) beats reading
    the input through the padding guard inside the anchor: when the anchor broadcasts
    the input (its reads do not move with the vector loop: a dense convolution; a
    depthwise one reads along the vector, and its copy would cost as much as the
    convolution) and does at least ``PADDED_COPY_WORK`` multiply-adds per padded input
    element. An inlined NHWC guard depends on the output position and the kernel window,
    so LLVM hoists it out of the channel loop and tests it once per broadcast (per
    kernel tap and output row); a copy costs a read and a write per padded element, and
    the more work there is per element the more the guards outnumber them. Measured on a
    Zen 3: ResNet's 7 x 7 stem (743 per element) 1.8 ms copied against 3.0 guarded, the
    3 x 3 stride-2 convolution from 14 x 14 x 512 to 7 x 7 (882) 2.2 against 3.5; from
    56 x 56 x 128 to 28 x 28 (268) the same either way, from 56 x 56 x 64 (268) 14%
    faster guarded, and MobileNet's 3 x 3 stem (71) 23% faster guarded. A grouped
    convolution computed per group broadcasts each input value to one group's vectors
    only (one or two FMAs per guard), and on rows of at most NARROW_PADDED_ROW every
    tile meets the padding: there the copy pays whatever the work (RegNetX-200MF's
    last stage, 6 x 7 x 368 in groups of 8, on a Zen 3: 20 GFLOPS guarded; the model
    18% faster copied)."""
    v = innermost_spatial_var(info.block)
    if v is None or any(a.stride(v) != 0 for a in padded_reads):
        return False
    if _per_group_broadcast(info, padded_reads, v) and _narrow_rows(producer):
        return True
    work = elements = 1
    for it in info.iters:
        work *= it.const_extent or 0
    for it in producer.iters:
        elements *= it.const_extent or 0
    return elements > 0 and work >= PADDED_COPY_WORK * elements


# Rows of a padded input at most this wide: every register tile of a row touches the
# padding, so no tile escapes the guards (see `_padded_copy_pays`).
NARROW_PADDED_ROW = 18


def _per_group_broadcast(info: BlockInfo, padded_reads: list, v: Any) -> bool:
    """Whether the broadcast input's channel moves with a spatial loop other than the
    vector loop: a grouped convolution computed per group, whose broadcasts each feed
    only one group's few output vectors."""
    spatial = [it.var for it in info.spatial() if it.var is not v]
    return any(a.indices and any(_uses_var(a.indices[-1], s) for s in spatial)
               for a in padded_reads)


def _narrow_rows(producer: BlockInfo) -> bool:
    """Whether the padded input's rows (its second-to-last dimension, NHWC) are at most
    NARROW_PADDED_ROW wide."""
    iters = producer.iters
    return len(iters) == 4 and (iters[2].const_extent or 1 << 30) <= NARROW_PADDED_ROW


def _guard_varies(sch: Schedule, anchor_name: str) -> bool:
    """True when a guard (``if_then_else`` condition) in the anchor's update depends on
    the vector loop's variable — an NCHW padding guard along the output row — or the
    update has no plain store. An NHWC guard depends on rows and columns only, so it is
    evaluated once per vector (a depthwise convolution reads its padded input along the
    channels, which is the vector loop)."""
    info = next(b for b in get_block_infos(sch) if b.name == anchor_name)
    v = innermost_spatial_var(info.block)
    store = store_of(info.block)
    if v is None or store is None:
        return True
    found = [False]

    def visit(x: Any) -> None:
        if type(x) is Call and x.op == "if_then_else" and _uses_var(x.args[0], v):
            found[0] = True
    post_order_visit(store.value, visit)
    return found[0]


def pack_strided_weights(sch: Schedule, anchor_name: str) -> Schedule:
    """Give each parameter that the anchor reads with a large stride along its vector
    loop (an OIHW kernel of an NHWC conv, the ``[N, K]`` weight of ``x @ W^T``) a copy
    laid out with that dimension innermost, made once per call at the root. The copy
    costs one pass over the weight; gathering it in the inner loop would cost one
    gather per multiply-add. Only a weight reused across another spatial loop is
    copied (an input read once, as in pooling, would only be read twice). Returns the
    (possibly new) schedule."""
    infos = get_block_infos(sch)
    anchor = next(b for b in infos if b.name == anchor_name)
    v = innermost_spatial_var(anchor.block)
    if v is None:
        return sch
    params = {id(b) for b in sch.func.buffer_map.values()}
    for a in loads(anchor.block):
        s = a.stride(v)
        if s is None or abs(s) <= MAX_GATHER_STRIDE or id(a.buffer) not in params:
            continue
        # Only a weight reused across another spatial loop repays the copy.
        if not any(it.var is not v and (it.const_extent or 2) > 1 and a.stride(it.var) == 0
                   for it in anchor.spatial()):
            continue
        dims = [d for d, idx in enumerate(a.indices) if idx is v]
        others = [idx for idx in a.indices if idx is not v]
        if len(dims) != 1 or any(_uses_var(idx, v) for idx in others):
            continue
        d, ndim = dims[0], len(a.indices)
        names = [f"a{k}" for k in range(ndim)]
        order = [names[k] for k in range(ndim) if k != d] + [names[d]]
        trial = sch.copy()
        try:
            block = trial.get_block(anchor_name)
            index = next(n for n, r in enumerate(trial.get(block).reads)
                         if r.buffer is a.buffer)
            cache = trial.cache_read(block, index, "global")
            trial.transform_layout(cache, ("write", 0),
                                   f"lambda {', '.join(names)}: ({', '.join(order)},)")
        except ScheduleError as err:
            logger.debug("cpu.Matmul: input %s is not packed for block %s: %s",
                         a.buffer.name, anchor_name, err.message)
            continue
        sch = trial
    return sch


def _uses_var(e, v) -> bool:
    return id(v) in var_ids(e)


def _prepare_anchor(sch: Schedule, need_multiply: bool
                    ) -> tuple[Schedule, list[BlockInfo], int] | None:
    """Inline the epilogue and the producers around the only reduction and pack its
    strided weights; returns the schedule, its root blocks and the reduction's
    position, or None when the rules do not apply."""
    found = anchor_reduction(sch)
    if found is None:
        return None
    infos, pos = found
    anchor = infos[pos]
    red = match_reduction(anchor.block)
    if red is None:
        return None
    if need_multiply and (red.kind != "sum" or multiply_operands(red.rhs) is None):
        return None
    sch = merge_split_output(sch, anchor.name)
    after = inline_epilogue(sch, anchor.name)
    if after is None:
        return None
    sch = pack_strided_weights(sch, anchor.name)
    sch = inline_producers(sch, anchor.name, varying_guard=not need_multiply)
    infos = get_block_infos(sch)
    pos = next(k for k, b in enumerate(infos) if b.name == anchor.name)
    after = infos[pos + 1:]
    if len(after) != 1 and not is_output(sch, anchor.name):
        return None
    return sch, infos, pos


def _finish_anchor(sch: Schedule, infos: list[BlockInfo], pos: int, plan: TilePlan,
                   target: Target) -> Schedule:
    """Tile the prepared reduction by ``plan`` and schedule the stages around it."""
    after = infos[pos + 1:]
    epilogue = after[0].block_rv if len(after) == 1 else None
    apply_output_tile(sch, infos[pos], plan, epilogue, target)
    for b in infos[:pos]:
        schedule_injective_block(sch, b, target)
    repack_weights(sch, infos[pos].name)
    return sch


def schedule_anchor(sch: Schedule, target: Target, need_multiply: bool,
                    need_reuse: bool) -> Schedule | None:
    """The shared body of the output-tile rules: inline, plan, tile, and schedule the
    stages left at the root."""
    prepared = _prepare_anchor(sch, need_multiply)
    if prepared is None:
        return None
    sch, infos, pos = prepared
    plan = plan_output_tile(infos[pos], target, need_reuse=need_reuse)
    if plan is None:
        return stream_symbolic_rows(sch, infos, pos, target) if need_multiply else None
    return _finish_anchor(sch, infos, pos, plan, target)


# The streaming schedule's tile per reduction step: 4 vectors of columns, 4 rows (which
# share each vector of the weight loaded).
STREAM_VECTORS = 4
STREAM_ROWS = 4


def stream_symbolic_rows(sch: Schedule, infos: list[BlockInfo], pos: int, target: Target
                         ) -> Schedule | None:
    """A product whose rows (or batch) are symbolic, which the register tiles cannot
    plan: ``[outer rows... (outermost parallel), row tiles, column tiles, reduction,
    STREAM_ROWS rows, STREAM_VECTORS vectors]``, the innermost row loop split by
    ``STREAM_ROWS`` (a guard covers the last, partial tile), the output accumulated in
    place; an epilogue runs after it as its own loop nest. None unless the block is a
    sum of products whose innermost output dimension is contiguous, constant and a
    multiple of the vector width, and which has another loop of symbolic extent (rows,
    batch or the reduction)."""
    info = infos[pos]
    found = vector_iter(info)
    if found is None:
        return None
    store, vec = found
    ev = info.iters[vec].const_extent
    lanes = vector_lanes(target, store.buffer.dtype)
    spatial = [it for k, it in enumerate(info.iters) if it.kind == "S" and k != vec]
    reduce = [it for it in info.iters if it.kind == "R"]
    if (ev is None or ev % lanes or not reduce or "O" in info.dom_kind()
            or all(it.const_extent is not None for it in spatial + reduce)):
        return None
    nr = lanes * STREAM_VECTORS if ev % (lanes * STREAM_VECTORS) == 0 else lanes
    block = info.block_rv
    col_outer, col_inner = sch.split(info.iters[vec].loop_rv, [None, nr])
    outer = [it.loop_rv for it in spatial]
    rows = []
    if spatial and (spatial[-1].const_extent or STREAM_ROWS) >= STREAM_ROWS:
        row_outer, row_inner = sch.split(outer[-1], [None, STREAM_ROWS])
        outer[-1], rows = row_outer, [row_inner]
    sch.reorder(*outer, col_outer, *(it.loop_rv for it in reduce), *rows, col_inner)
    vec_outer, vec_inner = sch.split(col_inner, [None, lanes])
    for loop in rows + [vec_outer]:
        sch.unroll(loop)
    sch.vectorize(vec_inner)
    sch.decompose_reduction(block, reduce[0].loop_rv)
    if outer:
        sch.parallel(outer[0])
    # The stages around it stay at the root (symbolic loops' bindings are not proven
    # affine, so the epilogue cannot move under the column tiles).
    for b in infos[:pos] + infos[pos + 1:]:
        schedule_injective_block(sch, b, target)
    return sch


def anchor_variants(sch: Schedule, target: Target, need_multiply: bool,
                    need_reuse: bool, limit: int) -> list[Schedule]:
    """Up to ``limit`` schedules like :func:`schedule_anchor`'s with the neighbouring
    plans of :func:`~.tiling.plan_variants` (most promising first). A plan the
    schedule primitives reject is left out (logged at DEBUG)."""
    prepared = _prepare_anchor(sch, need_multiply)
    if prepared is None or limit <= 0:
        return []
    base, infos, pos = prepared
    out = []
    for knobs, plan in plan_variants(infos[pos], target, need_reuse=need_reuse):
        try:
            out.append(_finish_anchor(base.copy(), infos, pos, plan, target))
        except ScheduleError as err:
            logger.debug("cpu.Matmul: variant %s of block %s is not applicable: %s", knobs,
                         infos[pos].name, err.message)
            continue
        if len(out) >= limit:
            break
    return out


def repack_weights(sch: Schedule, anchor_name: str) -> None:
    """Rewrite the layout of each weight the anchor reads that may be repacked (a
    constant at every call site, :mod:`irc.dlight.weights`) into the order the tiled
    loops walk it: the micro-kernel then streams it sequentially instead of jumping a
    row of the original layout per reduction step."""
    free = packable_params(sch.func)
    if not free:
        return
    index = 0
    while True:
        func = sch.func
        params = {id(func.buffer_map[p]): k for k, p in enumerate(func.params)
                  if p in func.buffer_map}
        block = sch.get_block(anchor_name)
        reads = sch.get(block).reads
        if index >= len(reads):
            return
        k = params.get(id(reads[index].buffer))
        if k in free:
            try:
                sch.layout_rewrite(block, index)
            except ScheduleError as err:
                logger.debug("cpu.Matmul: weight %s of block %s keeps its layout: %s",
                             reads[index].buffer.name, anchor_name, err.message)
        index += 1


class Matmul(ScheduleRule):
    """Default CPU schedule of multiply-accumulate reductions (see the module
    docstring)."""

    target_keys = ("cpu",)

    def apply(self, func: PrimFunc, target: Target, tunable: bool = False
              ) -> Schedule | None:
        return schedule_anchor(Schedule(func), target, need_multiply=True,
                               need_reuse=False)

    def variants(self, func: PrimFunc, target: Target, limit: int) -> list[Schedule]:
        return anchor_variants(Schedule(func), target, need_multiply=True,
                               need_reuse=False, limit=limit)

"""``gpu.Matmul``: large matmuls and batch matmuls with shared-memory tiling.

Applies to a function whose root blocks are injective producers, one reduction
``C[b, i, j] += X[.., i, .., k] * Y[.., k, .., j]`` with a single reduction loop, and
injective consumers, when the rows and columns divide into tiles of at least 16 and the
reduction into steps of at least 4. The rows may be several loops (a dense layer on
``[batch, seq, k]``): the innermost is tiled, the outer ones join the row tiles in
``blockIdx.y``. Tiles are 64 x 64 unless that leaves fewer than ``MIN_BLOCKS`` blocks or needs more
threads than the target has, then smaller. Loop structure per output tile of ``BM x BN``::

    blockIdx.z (batch) / blockIdx.y (row tiles) / blockIdx.x (column tiles)
      threadIdx.y / threadIdx.x: zero the TM x TN accumulators (local)
      for k0:                                  # steps of BK
        threadIdx.y / threadIdx.x: copy X[BM x BK] to shared, cooperatively
        threadIdx.y / threadIdx.x: copy Y[BK x BN] to shared, cooperatively
        threadIdx.y / threadIdx.x: for k1, TM, TN: accumulate from shared
      threadIdx.y / threadIdx.x: epilogue, TM x TN per thread, from the accumulators

Each thread owns the same ``TM x TN`` accumulators in the three nests that touch them, so
they stay thread-private (``local``). The tile is checked against the target's limits:
``(BM / TM) * (BN / TN)`` threads per block and ``(BM + BN) * BK`` elements of shared
memory.
"""

from __future__ import annotations

from ...core.target import Target
from ...tir.schedule import Schedule
from ...tir.schedule.block_info import (
    BlockInfo,
    get_block_infos,
    is_normalized,
    is_output,
    loads,
    match_reduction,
    multiply_operands,
)
from ...tir.stmt import PrimFunc
from ..analysis import inline_injective_producers
from ..base import ScheduleRule
from .utils import (
    bytes_of,
    check_shared_memory,
    const,
    max_threads,
    verify_gpu_func,
)

THREAD_TILE = 4
# Tiles shrink (64 to 32 to 16 rows or columns) while the grid has fewer blocks than this:
# about the multiprocessors of a large GPU (an H100 or H200 has 132).
MIN_BLOCKS = 128


def _pick(extent: int, options: tuple[int, ...]) -> int:
    return next((t for t in options if extent % t == 0), 0)


def _roles(info: BlockInfo):
    """``(batch, rows, cols, k, x_load, y_load)``: the loops of a matmul block, or None.
    ``rows`` are the loops only the first operand uses (a dense layer on ``[batch, seq,
    k]`` inputs has two), ``cols`` the one only the second uses, batch loops are used by
    both (or by neither)."""
    spatial = info.spatial()
    red = info.reduction()
    if len(red) != 1:
        return None
    ld = loads(info.block)
    if len(ld) != 2 or any(a.strides is None for a in ld):
        return None
    k = red[0]
    if any(a.stride(k.var) == 0 for a in ld):
        return None
    x, y = ld
    rows = [it for it in spatial if x.stride(it.var) and not y.stride(it.var)]
    cols = [it for it in spatial if y.stride(it.var) and not x.stride(it.var)]
    if not rows or len(cols) != 1:
        return None
    batch = [it for it in spatial if it not in rows and it not in cols]
    return batch, rows, cols, k, x, y


class Matmul(ScheduleRule):
    """Default GPU schedule of large matmuls (see the module docstring)."""

    target_keys = ("gpu",)

    def apply(self, func: PrimFunc, target: Target, tunable: bool = False
              ) -> Schedule | None:
        sch = Schedule(func)
        inline_injective_producers(sch)
        infos = get_block_infos(sch)
        if not infos or not is_normalized(infos):
            return None
        reds = [b for b in infos if b.block.init is not None]
        if len(reds) != 1 or infos[0] is not reds[0] or not reds[0].is_reduction():
            return None
        mm = reds[0]
        red = match_reduction(mm.block)
        if red is None or red.kind != "sum" or multiply_operands(red.rhs) is None:
            return None
        if not mm.has_trivial_predicate() or any(not b.is_injective() for b in infos[1:]):
            return None
        roles = _roles(mm)
        if roles is None:
            return None
        batch, rows, (j,), k, x, y = roles
        # Tiles split the innermost row loop; outer row loops go to the grid with it.
        i = rows[-1]
        if any(r.const_extent is None for r in rows[:-1]):
            return None
        ei, ej, ek = i.const_extent, j.const_extent, k.const_extent
        if ei is None or ej is None or ek is None:
            return None
        bm, bn = _pick(ei, (64, 32, 16)), _pick(ej, (64, 32, 16))
        bk = _pick(ek, (16, 8, 4))
        if not (bm and bn and bk):
            return None
        # Smaller tiles where the large ones leave most of a big GPU idle.
        others = 1
        for it in batch + rows[:-1]:
            others *= it.const_extent or 1
        tm = tn = THREAD_TILE
        while max(bm, bn) > 16 and (others * (ei // bm) * (ej // bn) < MIN_BLOCKS or
                                    (bm // tm) * (bn // tn) > max_threads(target)):
            if bm >= bn:
                bm //= 2
            else:
                bn //= 2
        ty, tx = bm // tm, bn // tn
        if ty * tx > max_threads(target):
            return None
        check_shared_memory((bm + bn) * bk * bytes_of(red.store.buffer.dtype), target,
                            f"the {bm}x{bn}x{bk} tile of block {mm.name!r}")
        epilogue = infos[1:]
        if len(epilogue) > 1 or (epilogue and not is_output(sch, epilogue[0].name)):
            return None

        i0, i1, i2 = sch.split(i.loop_rv, [None, ty, tm])
        j0, j1, j2 = sch.split(j.loop_rv, [None, tx, tn])
        k0, k1 = sch.split(k.loop_rv, [None, bk])
        b_loops = [it.loop_rv for it in batch]
        outer_rows = [it.loop_rv for it in rows[:-1]]
        sch.reorder(*b_loops, *outer_rows, i0, j0, k0, i1, j1, k1, i2, j2)
        if b_loops:
            bz = sch.fuse(*b_loops) if len(b_loops) > 1 else b_loops[0]
            sch.bind(bz, "blockIdx.z")
        if outer_rows:
            i0 = sch.fuse(*outer_rows, i0)
        sch.bind(i0, "blockIdx.y")
        sch.bind(j0, "blockIdx.x")
        if epilogue:
            out = epilogue[0].block_rv
            sch.set_scope(mm.block_rv, 0, "local")
        else:
            out = sch.cache_write(mm.block_rv, 0, "local")
        sch.reverse_compute_at(out, j0)
        tile = loops_below(sch, out, j0)
        if len(tile) > 2 and all(const(sch, lp) == 1 for lp in tile[:-2]):
            tile = [sch.fuse(*tile[:-1]), tile[-1]]  # unit loops of the outer rows
        if len(tile) != 2:
            return None
        _bind_tile(sch, tile, ty, tx)
        # Shared copies of the operand tiles, one per step of k0.
        for operand in (x, y):
            index = next(n for n, r in enumerate(sch.get(mm.block_rv).reads)
                         if r.buffer is operand.buffer)
            cache = sch.cache_read(mm.block_rv, index, "shared")
            sch.compute_at(cache, k0)
            copy = loops_below(sch, cache, k0)
            fused = sch.fuse(*copy) if len(copy) > 1 else copy[0]
            n = const(sch, fused)
            if n is None or n % (ty * tx):
                return None
            c0, c1, c2 = sch.split(fused, [None, ty, tx])
            sch.reorder(c1, c2, c0)
            sch.bind(c1, "threadIdx.y")
            sch.bind(c2, "threadIdx.x")
        init = sch.decompose_reduction(mm.block_rv, k0)
        init_loops = sch.get_loops(init)[-4:]
        sch.bind(init_loops[0], "threadIdx.y")
        sch.bind(init_loops[1], "threadIdx.x")
        sch.bind(i1, "threadIdx.y")
        sch.bind(j1, "threadIdx.x")
        verify_gpu_func(sch.func, target)
        return sch


def loops_below(sch: Schedule, block, loop) -> list:
    """The loops above ``block`` that are inside ``loop``."""
    loops = sch.get_loops(block)
    var = sch.get(loop).loop_var
    for n, lp in enumerate(loops):
        if sch.get(lp).loop_var is var:
            return loops[n + 1:]
    return loops


def _bind_tile(sch: Schedule, loops, ty: int, tx: int) -> None:
    """Bind the BM x BN loops of the epilogue so each thread handles its own TM x TN
    accumulators."""
    ai, aj = loops
    ti, ii = sch.split(ai, [ty, None])
    tj, jj = sch.split(aj, [tx, None])
    sch.reorder(ti, tj, ii, jj)
    sch.bind(ti, "threadIdx.y")
    sch.bind(tj, "threadIdx.x")

"""Multi-level tiling: the rule that makes matmuls and convolutions fast.

For a reduction block with data reuse (some input does not depend on some output
dimension; :func:`~irc.tune.space.analysis.needs_multi_level_tiling`), each loop is
split into as many levels as its kind has in the tiling ``structure`` (``sample_perfect_tile``
leaves the factors to the search) and the pieces are reordered level by level. On CPU
the structure is ``"SSRSRS"``: ``i0 j0 | i1 j1 | k0 | i2 j2 | k1 | i3 j3`` — the outer
spatial tiles become parallel work, the innermost ``i3 x j3`` tile is the register
block (``j3`` vectorized, ``i3`` unrolled). On GPU it is ``"SSSRRSRS"`` with the first
three spatial levels bound to ``blockIdx.x``, ``vthread.x`` and ``threadIdx.x``.

Write reuse: on CPU each sketch either keeps the block as is, or accumulates in a
``local`` buffer written back under the tile loop of level 1 or 2
(``cache_write`` + ``reverse_compute_at``), with the elementwise consumer (bias, relu,
``+ C``) inlined into the write-back; or fuses the consumer under those loops. On GPU
the accumulator is ``local`` under the thread loop and every input is staged through
``shared`` memory under the first reduction tile, filled cooperatively (the
postprocessor binds the copy loops to threads; the vector length is sampled).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core import dtype as dt
from ...core.diagnostics import ScheduleError
from ...tir.schedule import BlockRV, LoopRV, Schedule
from ...tir.schedule.analysis import consumers
from ...tir.schedule.block_info import (
    const_int,
    has_block,
    index_of,
    is_complete,
    is_elementwise_store,
    loop_kinds,
    realize_of,
    store_of,
)
from ...tir.schedule.state import var_ids
from .analysis import ANN_COOPERATIVE_FETCH, ANN_TILED, needs_multi_level_tiling
from .rules import SketchRule, _in_root_scope, _is_tiled


def dtype_bytes(dtype: str) -> int:
    """Bytes of one element of ``dtype``."""
    return max(1, dt.bits(dtype) // 8)


def _move_last(ndim: int, dim: int) -> str:
    """The index map text moving dimension ``dim`` of ``ndim`` last."""
    names = [f"d{k}" for k in range(ndim)]
    order = [n for k, n in enumerate(names) if k != dim] + [names[dim]]
    return f"lambda {', '.join(names)}: ({', '.join(order)})"


@dataclass(frozen=True)
class ReuseConfig:
    """Where a cache goes: ``req`` is "no", "may" (also keep a sketch without it) or
    "must"; ``levels`` are 1-based positions in the tiling structure after which the
    cache is placed; ``scope`` its storage scope."""

    req: str = "no"
    levels: tuple[int, ...] = ()
    scope: str = "global"


class MultiLevelTiling(SketchRule):
    """Tile a block with data reuse by ``structure`` (see the module docstring).

    ``tile_binds`` names the thread axis of each leading spatial level (GPU);
    ``max_innermost_factor`` caps the innermost tile; ``reuse_read``/``reuse_write``
    place read caches (GPU shared memory) and the write cache or fused consumer;
    ``vector_load_lens`` are the sampled vector lengths of cooperative fetching.
    """

    name = "MultiLevelTiling"

    def __init__(self, structure: str = "SSRSRS", tile_binds: tuple[str, ...] = (),
                 max_innermost_factor: int = 64,
                 reuse_read: ReuseConfig = ReuseConfig(),
                 reuse_write: ReuseConfig = ReuseConfig("may", (1, 2), "local"),
                 vector_load_lens: tuple[int, ...] = (1, 2, 4), vector_layout: bool = False):
        if set(structure) - {"S", "R"} or "S" not in structure:
            raise ScheduleError(f"tiling structure {structure!r} must be made of S and R")
        self.structure = structure
        self.tile_binds = tile_binds
        self.max_innermost_factor = max_innermost_factor
        self.reuse_read = reuse_read
        self.reuse_write = reuse_write
        self.vector_load_lens = vector_load_lens
        self.vector_layout = vector_layout

    # -- the rule -------------------------------------------------------------------------
    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        if not _in_root_scope(sch, block) or _is_tiled(sch, block):
            return [sch]
        index = index_of(sch)
        r = realize_of(sch, block)
        loops = index.loops_above(r)
        if not needs_multi_level_tiling(r, loops):
            return [sch]
        name = r.block.name
        consumer = self._elementwise_consumer(sch, block)
        kinds = loop_kinds(r, loops)
        variant = self._vector_layout_variant(sch.copy(), block, r, loops, kinds, consumer) \
            if self.vector_layout and not self.tile_binds else None
        tiles = self._tile(sch, block, kinds)
        sch.annotate(block, ANN_TILED, self.structure)
        out: list[Schedule] = [variant] if variant is not None else []
        wr = self.reuse_write
        if wr.req in ("no", "may"):
            out.append(sch)
        if wr.req in ("may", "must"):
            for level in wr.levels:
                branch = sch.copy()
                if self._cache_write(branch, name, tiles, level, wr.scope, consumer):
                    out.append(branch)
            if consumer is not None and not self.tile_binds:
                for level in wr.levels:
                    branch = sch.copy()
                    if self._fuse_consumer(branch, consumer, tiles, level):
                        out.append(branch)
        if not out:
            return [sch]
        if self.reuse_read.req == "must":
            out = [s for s in out if self._cache_reads(s, name, tiles)]
        return out or [sch]

    # -- tiling ---------------------------------------------------------------------------
    def _tile(self, sch: Schedule, block: BlockRV, kinds: list[str], innermost: int = -1
              ) -> list[list[LoopRV]]:
        """Split every loop into its levels and reorder; returns the loops of each
        structure position (bound levels fused into one loop). ``innermost`` (a loop
        position) puts that loop's piece last in the innermost spatial level."""
        n_s = self.structure.count("S")
        n_r = self.structure.count("R")
        handles = sch.get_loops(block)
        per_kind: dict[str, list[list[LoopRV]]] = {"S": [[] for _ in range(n_s)],
                                                   "R": [[] for _ in range(n_r)]}
        for h, k in zip(handles, kinds):
            if k == "U":
                per_kind["S"][0].append(h)
                continue
            n = n_s if k == "S" else n_r
            limit = self.max_innermost_factor
            factors = sch.sample_perfect_tile(h, n, limit)
            parts = sch.split(h, factors)
            for lvl, p in enumerate(parts):
                per_kind[k][lvl].append(p)
        if innermost >= 0:
            last = per_kind["S"][n_s - 1]
            pos = sum(1 for k in kinds[:innermost] if k == "S")
            last.append(last.pop(pos))
        tiles: list[list[LoopRV]] = []
        seen = {"S": 0, "R": 0}
        for c in self.structure:
            tiles.append(per_kind[c][seen[c]])
            seen[c] += 1
        sch.reorder(*[lp for level in tiles for lp in level])
        for lvl, tag in enumerate(self.tile_binds):
            level = tiles[lvl]
            if not level:
                continue
            fused = sch.fuse(*level) if len(level) > 1 else level[0]
            sch.bind(fused, tag)
            tiles[lvl] = [fused]
        return tiles

    # -- vectorizing another dimension (a layout transform) --------------------------------
    def _vector_layout_variant(self, sch: Schedule, block: BlockRV, r: Any, loops: list,
                               kinds: list[str], consumer: str | None) -> Schedule | None:
        """When the innermost spatial loop is too short to fill a vector (NCHW convolution:
        7 columns) but another spatial loop is long (the output channels), a sketch that
        vectorizes that loop: its tile goes innermost, the ``local`` accumulator and the
        inputs it strides through (the weight, copied per reduction tile into a ``global``
        buffer) get layouts with that dimension last (``transform_layout``)."""
        block_ = r.block
        dtype = block_.writes[0].buffer.dtype
        lanes = max(1, self.info.vector_bytes // max(1, dtype_bytes(dtype)))
        s_pos = [k for k, kind in enumerate(kinds) if kind == "S"]
        if not s_pos:
            return None
        ext = [const_int(lp.extent) or 0 for lp in loops]
        if ext[s_pos[-1]] >= lanes and ext[s_pos[-1]] % lanes == 0:
            return None  # the natural innermost loop vectorizes well
        cands = [k for k in s_pos[:-1] if ext[k] >= lanes and ext[k] % lanes == 0]
        if not cands:
            return None
        pick = max(cands, key=lambda k: ext[k])
        lv = id(loops[pick].loop_var)
        var = next((iv.var for iv, v in zip(block_.iter_vars, r.iter_values)
                    if lv in var_ids(v)), None)
        store = store_of(block_)
        if var is None or store is None:
            return None
        out_dim = next((d for d, e in enumerate(store.indices) if e is var), None)
        if out_dim is None:
            return None
        reads = []
        written = {id(w.buffer) for w in block_.writes}
        for i, region in enumerate(block_.reads):
            if id(region.buffer) in written:
                continue
            dims = [d for d, rg in enumerate(region.region) if id(var) in var_ids(rg.min)]
            if len(dims) == 1 and dims[0] != len(region.region) - 1 and \
                    region.region[dims[0]].min is var:
                reads.append((i, dims[0], len(region.region)))
        name = block_.name
        try:
            tiles = self._tile(sch, block, kinds, innermost=pick)
            sch.annotate(block, ANN_TILED, self.structure)
            if not self._cache_write(sch, name, tiles, 2, "local", consumer):
                return None
            b = sch.get_block(name)
            sch.transform_layout(b, ("write", 0), _move_last(len(store.indices), out_dim))
            r_level = self.structure.index("R") + 1
            loop = self._level_loop(tiles, r_level)
            for i, dim, ndim in reads:
                cache = sch.cache_read(b, i, "global")
                sch.compute_at(cache, loop, preserve_unit_loops=True)
                sch.transform_layout(cache, ("write", 0), _move_last(ndim, dim))
        except ScheduleError:
            return None
        return sch

    # -- write reuse ----------------------------------------------------------------------
    @staticmethod
    def _elementwise_consumer(sch: Schedule, block: BlockRV) -> str | None:
        """The name of the block's only consumer when it is an elementwise spatial block
        at the root (bias, relu, ``+ C``)."""
        index = index_of(sch)
        r = realize_of(sch, block)
        cons = consumers(index, r)
        if len(cons) != 1:
            return None
        c = cons[0].block
        if not is_complete(c) or not is_elementwise_store(c):
            return None
        if index.scope_realize(cons[0]) is not index.root:
            return None
        return c.name

    @staticmethod
    def _level_loop(tiles: list[list[LoopRV]], level: int) -> LoopRV | None:
        for lvl in range(level - 1, -1, -1):
            if tiles[lvl]:
                return tiles[lvl][-1]
        return None

    def _cache_write(self, sch: Schedule, name: str, tiles: list[list[LoopRV]], level: int,
                     scope: str, consumer: str | None) -> bool:
        loop = self._level_loop(tiles, level)
        if loop is None:
            return False
        try:
            block = sch.get_block(name)
            cache = sch.cache_write(block, 0, scope)
            sch.reverse_compute_at(cache, loop, preserve_unit_loops=True)
        except ScheduleError:
            return False
        if consumer is not None and has_block(sch, consumer):
            # The write-back computes the consumer too when it can; otherwise the
            # consumer runs right after it, per tile, or stays where it is.
            cons = sch.get_block(consumer)
            try:
                sch.reverse_compute_inline(cons)
            except ScheduleError:
                try:
                    sch.reverse_compute_at(cons, loop, preserve_unit_loops=True)
                except ScheduleError:
                    pass
        return True

    @staticmethod
    def _fuse_consumer(sch: Schedule, consumer: str, tiles: list[list[LoopRV]], level: int
                       ) -> bool:
        loop = MultiLevelTiling._level_loop(tiles, level)
        if loop is None:
            return False
        try:
            sch.reverse_compute_at(sch.get_block(consumer), loop, preserve_unit_loops=True)
        except ScheduleError:
            return False
        return True

    # -- read reuse (GPU shared memory) ---------------------------------------------------
    def _cache_reads(self, sch: Schedule, name: str, tiles: list[list[LoopRV]]) -> bool:
        rd = self.reuse_read
        level = rd.levels[0] if rd.levels else 1
        loop = self._level_loop(tiles, level)
        if loop is None:
            return False
        try:
            block = sch.get_block(name)
            reads = realize_of(sch, block).block.reads
            written = {id(w.buffer) for w in realize_of(sch, block).block.writes}
            n = len(self.vector_load_lens)
            for i in range(len(reads)):
                if id(reads[i].buffer) in written:
                    continue
                cache = sch.cache_read(block, i, rd.scope)
                sch.compute_at(cache, loop, preserve_unit_loops=True)
                vec = sch.sample_categorical(list(self.vector_load_lens), [1.0 / n] * n)
                sch.annotate(cache, ANN_COOPERATIVE_FETCH, vec)
        except ScheduleError:
            return False
        return True

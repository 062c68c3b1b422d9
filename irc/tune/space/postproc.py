"""Postprocessors: run on every sampled candidate after its decisions are made.

A postprocessor either rewrites what the rules left as annotations into real schedule
primitives (recorded in the trace after ``EnterPostproc``, so the stored trace replays
to the exact program), or validates the candidate and rejects it. ``apply(sch)``
returns False to reject; a :class:`~irc.ScheduleError` raised inside also rejects.

- :class:`VerifyLoopBounds` — every loop has a constant, positive extent.
- :class:`RewriteLayout` — layout-free weights (seed 002's ``layout_free_placeholders``)
  of tiled blocks get the layout their loops walk (``layout_rewrite``).
- :class:`RewriteParallelVectorizeUnroll` — the root annotations become a parallel
  fused outer loop per loop nest, vectorized fused inner loops per block and
  ``pragma_auto_unroll_max_step`` on each nest.
- :class:`RewriteReductionBlock` — reduction inits move before the first reduction loop
  (``decompose_reduction``), so the accumulation loop has no branch.
- :class:`RewriteCooperativeFetch`, :class:`RewriteUnboundBlock`,
  :class:`VerifyGPUCode` — GPU: split shared-memory copies by the thread extent and
  vectorize them, bind loops of blocks no rule bound, and check thread counts, virtual
  threads and shared memory against the target's limits.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from ...core import dtype as dt
from ...core.diagnostics import ScheduleError
from ...tir import stmt as S
from ...tir.schedule import LoopRV, Schedule
from ...tir.schedule.block_info import const_int, index_of, loop_kinds, realize_of, store_strides
from ...tir.schedule.state import child_blocks
from ..features import lower_for_features
from .analysis import (
    ANN_COOPERATIVE_FETCH,
    ANN_PARALLEL,
    ANN_TILED,
    ANN_UNROLL_EXPLICIT,
    ANN_UNROLL_IMPLICIT,
    ANN_VECTORIZE,
    TargetInfo,
    all_block_names,
    blocks_under,
    innermost_chain,
    perfect_chain,
    product,
    top_level_nests,
)

UNROLL_KEY = "pragma_auto_unroll_max_step"
UNROLL_EXPLICIT_KEY = "pragma_unroll_explicit"


class Postproc(ABC):
    """A postprocessor (see the module docstring); ``info`` is the target it is sized for
    (None until :meth:`initialize`)."""

    name = "Postproc"
    info: TargetInfo | None = None

    def initialize(self, info: TargetInfo) -> None:
        """Size the postprocessor for a target."""
        self.info = info

    @abstractmethod
    def apply(self, sch: Schedule) -> bool:
        """Rewrite or check ``sch``; False rejects the candidate."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def loop_rvs(sch: Schedule, loops: list[S.For]) -> list[LoopRV]:
    """Handles to ``loops`` (all above one block), obtained through the innermost
    block under the last of them so the trace can replay them."""
    blocks = blocks_under(loops[-1])
    if not blocks:
        raise ScheduleError(f"loop {loops[-1].loop_var.name!r} holds no block")
    rvs = sch.get_loops(sch.get_block(blocks[0].block.name))
    by_var = {id(sch.get(rv).loop_var): rv for rv in rvs}
    out = []
    for lp in loops:
        rv = by_var.get(id(lp.loop_var))
        if rv is None:
            raise ScheduleError(f"loop {lp.loop_var.name!r} is not above block "
                                f"{blocks[0].block.name!r}")
        out.append(rv)
    return out


def loop_rv(sch: Schedule, loop: S.For) -> LoopRV:
    """A handle to ``loop`` (see :func:`loop_rvs`)."""
    return loop_rvs(sch, [loop])[0]


# Statements with one nested ``body``.
_WITH_BODY = (S.For, S.While, S.LetStmt, S.AssertStmt, S.AttrStmt, S.Allocate, S.DeclBuffer,
              S.Block)


def _nested(s: S.Stmt) -> list[S.Stmt]:
    """The statements directly inside ``s`` (a block's init included)."""
    if isinstance(s, S.SeqStmt):
        return list(s.seq)
    if isinstance(s, S.BlockRealize):
        return [s.block]
    if isinstance(s, S.Block):
        return [s.body] if s.init is None else [s.body, s.init]
    if isinstance(s, S.IfThenElse):
        return [s.then_case] if s.else_case is None else [s.then_case, s.else_case]
    if isinstance(s, _WITH_BODY):
        return [s.body]
    return []


def _loops(func: S.PrimFunc) -> list[S.For]:
    out = []
    stack: list[Any] = [func.body]
    while stack:
        s = stack.pop()
        t = type(s)
        if t is S.For:
            out.append(s)
            stack.append(s.body)
        elif t is S.SeqStmt:
            stack.extend(s.seq)
        elif t is S.BlockRealize:
            stack.append(s.block)
        elif t is S.Block:
            stack.append(s.body)
            if s.init is not None:
                stack.append(s.init)
        else:
            stack.extend(_nested(s))
    return out


class VerifyLoopBounds(Postproc):
    """Reject candidates with a loop whose extent is not a positive constant."""

    name = "VerifyLoopBounds"

    def apply(self, sch: Schedule) -> bool:
        for lp in _loops(sch.func):
            ext = const_int(lp.extent)
            if ext is None or ext <= 0 or const_int(lp.min) is None:
                return False
        return True


class RewriteLayout(Postproc):
    """Rewrite layout-free weight parameters read by tiled blocks into the order their
    loops walk them (``Schedule.layout_rewrite`` with the derived index map)."""

    name = "RewriteLayout"

    def apply(self, sch: Schedule) -> bool:
        func = sch.func
        free = set(func.attrs.get("layout_free_buffers", []) or [])
        if not free:
            return True
        params = {id(func.buffer_map[p]): k for k, p in enumerate(func.params)
                  if p in func.buffer_map}
        done: set[int] = set()
        for name in all_block_names(func):
            r = realize_of(sch, name)
            if ANN_TILED not in r.block.annotations:
                continue
            for i, region in enumerate(r.block.reads):
                k = params.get(id(region.buffer))
                if k is None or k not in free or k in done:
                    continue
                try:
                    sch.layout_rewrite(sch.get_block(name), i)
                    done.add(k)
                except ScheduleError:
                    continue  # keep the layout (a map the loops do not walk one to one)
            func = sch.func
            params = {id(func.buffer_map[p]): k for k, p in enumerate(func.params)
                      if p in func.buffer_map}
        return True


class RewriteParallelVectorizeUnroll(Postproc):
    """Turn the root annotations of
    :class:`~irc.tune.space.rules.ParallelizeVectorizeUnroll` into loop kinds.

    Parallel: in each loop nest under the root, the leading perfectly nested loops that
    are spatial for every block below are fused while their product stays within the
    sampled limit (at least one loop), and the fused loop runs in parallel. Vectorize:
    for each block, the innermost spatial loops holding only that block are fused
    within the vectorization limit and vectorized. Unroll: the outermost loop of each
    nest gets ``pragma_auto_unroll_max_step``.
    """

    name = "RewriteParallelVectorizeUnroll"

    def apply(self, sch: Schedule) -> bool:
        root = realize_of(sch, "root").block
        ann = root.annotations
        par = ann.get(ANN_PARALLEL)
        vec = ann.get(ANN_VECTORIZE)
        explicit = ANN_UNROLL_EXPLICIT in ann
        unroll = ann.get(ANN_UNROLL_EXPLICIT, ann.get(ANN_UNROLL_IMPLICIT))
        keys = [k for k in (ANN_PARALLEL, ANN_VECTORIZE, ANN_UNROLL_EXPLICIT,
                            ANN_UNROLL_IMPLICIT) if k in ann]
        if not keys:
            return True
        root_rv = sch.get_block("root")
        for k in keys:
            sch.unannotate(root_rv, k)
        if par and not self.info.is_gpu:
            self._parallelize(sch, int(par), int(vec) if vec else 1)
        if vec and int(vec) > 1:
            self._vectorize(sch, int(vec))
        if unroll:
            self._unroll(sch, int(unroll), explicit)
        return True

    @staticmethod
    def _spatial_everywhere(loop: S.For, blocks: list[S.BlockRealize]) -> bool:
        used = False
        for r in blocks:
            kind = loop_kinds(r, [loop])[0]
            if kind in ("R", "O"):
                return False
            used = used or kind == "S"
        return used

    def _parallelize(self, sch: Schedule, limit: int, vec_limit: int) -> None:
        for top in top_level_nests(sch.func):
            blocks = blocks_under(top)
            chosen: list[S.For] = []
            prod = 1
            chain = perfect_chain(top)
            for lp in chain:
                ext = const_int(lp.extent)
                if ext is None or lp.kind != "serial" or lp.annotations:
                    break
                if not self._spatial_everywhere(lp, blocks):
                    break
                if chosen and prod * ext > limit:
                    break
                chosen.append(lp)
                prod *= ext
            if prod <= 1:
                continue
            try:
                rvs = loop_rvs(sch, chosen)
                if chosen[-1] is chain[-1] and type(chain[-1].body) is S.BlockRealize:
                    # The whole nest would run in parallel: keep an inner piece of the
                    # innermost loop for vectorization.
                    ext = const_int(chain[-1].extent) or 1
                    v = max((d for d in range(1, min(ext, vec_limit) + 1) if ext % d == 0),
                            default=1)
                    if v > 1:
                        outer, _ = sch.split(rvs[-1], [ext // v, v])
                        rvs[-1] = outer
                        if ext // v == 1:
                            rvs.pop()
                if not rvs:
                    continue
                fused = sch.fuse(*rvs) if len(rvs) > 1 else rvs[0]
                sch.parallel(fused)
            except ScheduleError:
                continue  # e.g. a race the primitive detects: leave the nest serial

    def _vectorize(self, sch: Schedule, limit: int) -> None:
        for name in all_block_names(sch.func):
            index = index_of(sch)
            r = index.blocks.get(name)
            if r is None:
                continue
            chain = innermost_chain(index, r)
            if not chain:
                continue
            kinds = loop_kinds(r, chain)
            strides = store_strides(r, chain) or [None] * len(chain)
            chosen: list[S.For] = []
            prod = 1
            contiguous = False
            # The innermost loop is vectorized when spatial; outer loops join it only
            # while the fused loop still walks the stored buffer contiguously.
            for lp, kind, stride in zip(reversed(chain), reversed(kinds), reversed(strides)):
                ext = const_int(lp.extent)
                if ext is None or lp.kind != "serial" or lp.annotations:
                    break
                if kind != "S" and not (kind == "U" and ext == 1):
                    break
                if prod * ext > limit:
                    break
                if prod > 1 and ext > 1 and (stride != prod or not contiguous):
                    break
                if prod == 1 and ext > 1 and stride not in (1, None):
                    break  # a strided (scatter) store would not be a vector store
                if prod == 1 and ext > 1:
                    contiguous = stride == 1
                chosen.append(lp)
                prod *= ext
            while len(chosen) > 1 and const_int(chosen[-1].extent) == 1:
                chosen.pop()
            if prod <= 1:
                continue
            chosen.reverse()
            try:
                rvs = loop_rvs(sch, chosen)
                fused = sch.fuse(*rvs) if len(rvs) > 1 else rvs[0]
                sch.vectorize(fused)
            except ScheduleError:
                continue

    @staticmethod
    def _unroll(sch: Schedule, max_step: int, explicit: bool) -> None:
        for top in top_level_nests(sch.func):
            try:
                rv = loop_rv(sch, top)
                sch.annotate(rv, UNROLL_KEY, max_step)
                sch.annotate(rv, UNROLL_EXPLICIT_KEY, 1 if explicit else 0)
            except ScheduleError:
                continue


class RewriteReductionBlock(Postproc):
    """Decompose every reduction block at its outermost reduction loop: the init runs
    in its own block before the accumulation loops (which then have no first-iteration
    branch)."""

    name = "RewriteReductionBlock"

    def apply(self, sch: Schedule) -> bool:
        for name in all_block_names(sch.func):
            index = index_of(sch)
            r = index.blocks.get(name)
            if r is None or r.block.init is None:
                continue
            loops = index.loops_above(r)
            kinds = loop_kinds(r, loops)
            first = next((lp for lp, k in zip(loops, kinds) if k == "R"), None)
            if first is None:
                continue
            rvs = sch.get_loops(sch.get_block(name))
            rv = next(x for x in rvs if sch.get(x).loop_var is first.loop_var)
            sch.decompose_reduction(sch.get_block(name), rv)
        return True


# ---------------------------------------------------------------------------------------
# GPU
# ---------------------------------------------------------------------------------------


def _thread_extent(loops: list[S.For], tag: str) -> int:
    return product([const_int(lp.extent) or 1 for lp in loops
                    if lp.kind == "thread_binding" and lp.thread_tag == tag])


class RewriteCooperativeFetch(Postproc):
    """Shared-memory copies (blocks annotated ``meta_schedule.cooperative_fetch`` by
    multi-level tiling): fuse the copy loops and split them into ``[rest, threads,
    vector]`` by the kernel's ``threadIdx.x`` extent and the sampled vector length; the
    vector part is vectorized and the thread part bound to ``threadIdx.x``, so the
    block's threads share the copy (the barrier after it is ThreadSync's)."""

    name = "RewriteCooperativeFetch"

    def apply(self, sch: Schedule) -> bool:
        for name in all_block_names(sch.func):
            index = index_of(sch)
            r = index.blocks.get(name)
            if r is None or ANN_COOPERATIVE_FETCH not in r.block.annotations:
                continue
            vec = int(r.block.annotations[ANN_COOPERATIVE_FETCH])
            threads = max(1, _thread_extent(index.loops_above(r), "threadIdx.x"))
            chain = innermost_chain(index, r)
            block = sch.get_block(name)
            sch.unannotate(block, ANN_COOPERATIVE_FETCH)
            if not chain:
                continue
            rvs = loop_rvs(sch, chain)
            fused = sch.fuse(*rvs) if len(rvs) > 1 else rvs[0]
            total = const_int(sch.get(fused).extent) or 1
            if vec > 1 and total % vec == 0:
                rest, tx, v = sch.split(fused, [None, threads, vec])
                sch.vectorize(v)
            else:
                rest, tx = sch.split(fused, [None, threads])
            sch.bind(tx, "threadIdx.x")
        return True


class RewriteUnboundBlock(Postproc):
    """Bind the loop nests no rule bound to threads: the leading spatial loops are
    fused and split into ``blockIdx.x`` x ``threadIdx.x`` (``max_threads_per_block``
    threads, fewer for small nests)."""

    name = "RewriteUnboundBlock"

    def __init__(self, max_threads_per_block: int | None = None):
        self.max_threads = max_threads_per_block

    def apply(self, sch: Schedule) -> bool:
        limit = self.max_threads or self.info.max_threads_per_block
        for top in top_level_nests(sch.func):
            chain = perfect_chain(top)
            inner = [lp for lp in _loops_in(top)]
            if any(lp.kind == "thread_binding" for lp in inner):
                continue
            blocks = blocks_under(top)
            chosen = []
            for lp in chain:
                if const_int(lp.extent) is None or lp.kind != "serial":
                    break
                if not RewriteParallelVectorizeUnroll._spatial_everywhere(lp, blocks):
                    break
                chosen.append(lp)
            rvs = loop_rvs(sch, chosen) if chosen else []
            if not rvs:
                rvs = [sch.add_unit_loop(sch.get_block(blocks[0].block.name))] \
                    if blocks else []
                if not rvs:
                    continue
            fused = sch.fuse(*rvs) if len(rvs) > 1 else rvs[0]
            total = const_int(sch.get(fused).extent) or 1
            threads = min(limit, total)
            if total % threads:
                threads = max(d for d in range(1, threads + 1) if total % d == 0)
            bx, tx = sch.split(fused, [None, threads])
            sch.bind(bx, "blockIdx.x")
            sch.bind(tx, "threadIdx.x")
        return True


def _loops_in(top: S.For) -> list[S.For]:
    out = []
    stack: list[Any] = [top]
    while stack:
        s = stack.pop()
        t = type(s)
        if t is S.For:
            out.append(s)
            stack.append(s.body)
        elif t is S.SeqStmt:
            stack.extend(s.seq)
        elif t is S.BlockRealize:
            stack.append(s.block.body)
    return out


class VerifyGPUCode(Postproc):
    """Reject GPU candidates whose kernels exceed the target's limits: threads per
    block, virtual threads, shared memory per block (counted on the compacted
    allocations of the lowered function); every block must run under a
    ``blockIdx``/``threadIdx`` binding."""

    name = "VerifyGPUCode"

    def apply(self, sch: Schedule) -> bool:
        info = self.info
        func = sch.func
        for top in top_level_nests(func):
            loops = _loops_in(top)
            if not any(lp.kind == "thread_binding" for lp in loops):
                return False
            per_axis: dict[str, int] = {}  # nested loops on one axis share its index
            for lp in loops:
                if lp.kind == "thread_binding" and lp.thread_tag.startswith("threadIdx"):
                    per_axis[lp.thread_tag] = max(per_axis.get(lp.thread_tag, 1),
                                                  const_int(lp.extent) or 1)
            threads = product(list(per_axis.values()))
            if threads > info.max_threads_per_block:
                return False
            vthreads = product([const_int(lp.extent) or 1 for lp in loops
                                if lp.kind == "thread_binding"
                                and lp.thread_tag.startswith("vthread")])
            if vthreads > info.max_vthread:
                return False
        if type(func.body) is S.BlockRealize and not child_blocks(func.body):
            return True
        return self._shared_bytes(func) <= info.max_shared_memory_per_block

    @staticmethod
    def _shared_bytes(func: S.PrimFunc) -> int:
        lowered = lower_for_features(func)
        total = 0
        stack: list[Any] = [lowered.body]
        while stack:
            s = stack.pop()
            t = type(s)
            if t is S.Allocate:
                if s.scope.startswith("shared"):
                    n = product([const_int(e) or 0 for e in s.extents])
                    total += n * max(1, dt.bits(s.dtype) // 8)
                stack.append(s.body)
            elif t is S.SeqStmt:
                stack.extend(s.seq)
            else:
                stack.extend(_nested(s))
        return total


def default_postprocs(info: TargetInfo) -> list[Postproc]:
    """The postprocessors of a target, in the order they run."""
    if info.is_gpu:
        procs: list[Postproc] = [VerifyLoopBounds(), RewriteCooperativeFetch(),
                                 RewriteUnboundBlock(), RewriteParallelVectorizeUnroll(),
                                 RewriteReductionBlock(), VerifyGPUCode()]
    else:
        procs = [VerifyLoopBounds(), RewriteLayout(), RewriteParallelVectorizeUnroll(),
                 RewriteReductionBlock()]
    for p in procs:
        p.initialize(info)
    return procs

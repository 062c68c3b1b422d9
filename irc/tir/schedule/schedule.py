"""``Schedule``: the schedule language over block-form loop IR.

A schedule holds an IRModule (the function being scheduled, ``"main"`` when built from
a PrimFunc), a table of random variables (handles to blocks, loops and sampled
integers) and the trace of every primitive applied. Primitives check their
preconditions and raise :class:`irc.ScheduleError` naming the rule, the block and the
loop; a failed primitive changes nothing and is not recorded.

Example::

    sch = Schedule(func)
    C = sch.get_block("C")
    i, j, k = sch.get_loops(C)
    i0, i1 = sch.split(i, factors=[None, 16])
    sch.reorder(i0, j, i1)
    sch.parallel(i0)
    print(sch.mod.script())
    print(sch.trace.as_python())
"""

from __future__ import annotations

import difflib
import random
from typing import Any, Callable, Sequence

from ...core.diagnostics import IRCError, ScheduleError
from ...core.module import IRModule
from ..arith import Analyzer
from ..expr import IntImm, PrimExpr
from ..stmt import BlockRealize, For, PrimFunc
from ..well_formed import check_prim_func
from . import blockize as _blockize
from . import cache as _cache
from . import compute_location as _cl
from . import layout as _layout
from . import loops as _loops
from . import reduction as _reduction
from . import sampling as _sampling
from .analysis import consumers, producers
from .instruction import KINDS, BlockRV, ExprRV, Instruction, LoopRV
from .state import FuncIndex, child_blocks
from .trace import Trace

_ROOT = "root"
_INLINE = "inline"


class UnknownPrimitiveError(ScheduleError, AttributeError):
    """A schedule primitive (or attribute) that ``Schedule`` does not have."""


# te-schedule primitives of TVM that users reach for, and what irc's Schedule does instead.
_TE_PRIMITIVES = {
    "tile": "split each of the two loops (sch.split(loop, factors=[None, 8])) and reorder "
            "the parts; irc's Schedule works on loops and blocks as TVM's tir.Schedule does",
    "compute_root": "a block stays at the root unless moved; sch.compute_at moves it",
    "create_group": "irc's Schedule has no stage groups: schedule each block",
    "env_threads": "bind loops to threads with sch.bind(loop, 'threadIdx.x')",
    "set_store_predicate": "irc's Schedule has no store predicates",
}


class Schedule:
    """A schedule of an IRModule or PrimFunc; see the module docstring.

    ``seed`` seeds the sampling instructions (a random seed when None); ``debug_mask``
    ("all" or a true value) checks the function's well-formedness after every primitive.
    """

    def __init__(self, mod: IRModule | PrimFunc, seed: int | None = None,
                 debug_mask: Any = 0):
        if isinstance(mod, PrimFunc):
            mod = IRModule(functions={"main": mod})
        if not isinstance(mod, IRModule):
            raise ScheduleError(f"Schedule takes a PrimFunc or an IRModule, not "
                                f"{type(mod).__name__}")
        prims = [gv.name_hint for gv, f in mod.functions.items() if isinstance(f, PrimFunc)]
        if not prims:
            raise ScheduleError("the module has no loop-level function (PrimFunc) to schedule")
        self._mod = mod
        self._funcs: dict[str, PrimFunc] = {n: mod[n] for n in prims}
        self._index: dict[str, FuncIndex] = {}
        self._current = "main" if "main" in self._funcs else prims[0]
        self._symbols: dict[Any, Any] = {}
        self._trace = Trace()
        self._rng = random.Random()
        self.seed(seed)
        self._debug = bool(debug_mask) and debug_mask != "none"
        self._simplifier = Analyzer()
        self._dirty_mod = False
        for name in prims:
            self._indexed(name)  # check block names up front

    def __getattr__(self, name: str) -> Any:
        # Only names no attribute has reach here: a primitive irc does not have (often one
        # of TVM's te schedules, such as tile), said as an irc error. It is an
        # AttributeError too, so hasattr() and getattr(..., default) keep working.
        if name.startswith("_"):
            raise AttributeError(name)
        public = [n for n in dir(type(self)) if not n.startswith("_")]
        close = difflib.get_close_matches(name, public, n=3)
        hint = _TE_PRIMITIVES.get(name) or (f"did you mean {', '.join(close)}?" if close
                                            else "dir(Schedule) lists the primitives")
        raise UnknownPrimitiveError(f"Schedule has no primitive or attribute {name!r}",
                                    hint=hint)

    # ------------------------------------------------------------------ state
    @property
    def mod(self) -> IRModule:
        """The scheduled module."""
        if self._dirty_mod:
            self._mod = self._mod.with_functions(self._funcs)
            self._dirty_mod = False
        return self._mod

    @property
    def func(self) -> PrimFunc:
        """The function being worked on."""
        return self._funcs[self._current]

    @property
    def trace(self) -> Trace:
        """The instructions applied so far."""
        return self._trace

    def work_on(self, func_name: str) -> None:
        """Make ``func_name`` the function that ``get_block`` uses by default."""
        if func_name not in self._funcs:
            raise ScheduleError(f"the module has no PrimFunc named {func_name!r}; it has "
                                f"{sorted(self._funcs)}")
        self._current = func_name

    def copy(self) -> Schedule:
        """An independent schedule with the same state, handles and trace."""
        new = Schedule.__new__(Schedule)
        new.__dict__.update(self.__dict__)
        new._funcs = dict(self._funcs)
        new._index = dict(self._index)
        new._symbols = dict(self._symbols)
        new._trace = self._trace.copy()
        new._rng = random.Random()
        new._rng.setstate(self._rng.getstate())
        return new

    def seed(self, seed: int | None = None) -> None:
        """Reseed the sampling instructions (a random seed when None)."""
        if seed is None:
            seed = random.SystemRandom().randrange(1, 2**31 - 1)
        self._rng.seed(seed)

    def fork_seed(self) -> int:
        """A new seed drawn from this schedule's generator (for child schedules)."""
        return self._rng.randrange(1, 2**31 - 1)

    def show(self) -> None:
        """Print the scheduled module."""
        print(self.mod.script())

    def enter_postproc(self) -> None:
        """Mark the start of postprocessing in the trace (``remove_postproc`` drops the
        instructions after it)."""
        self._record("EnterPostproc", [], [], [])

    def _indexed(self, name: str) -> FuncIndex:
        idx = self._index.get(name)
        if idx is None:
            idx = FuncIndex(self._funcs[name])
            self._index[name] = idx
        return idx

    def _install(self, name: str, func: PrimFunc, primitive: str) -> None:
        if func is self._funcs[name]:
            return
        if self._debug:
            try:
                check_prim_func(func)
            except IRCError as err:
                raise ScheduleError(f"internal error: {primitive} produced ill-formed loop IR: "
                                    f"{err}") from None
        old = self._index.get(name)
        self._funcs[name] = func
        new = self._index[name] = FuncIndex(func)
        self._dirty_mod = True
        if old is not None:
            removed = old.blocks.keys() - new.blocks.keys()
            if removed:
                # Handles of removed blocks stay dead even if a later primitive reuses
                # the name for a new block.
                for rv, entry in self._symbols.items():
                    if isinstance(rv, BlockRV) and entry[0] == name and entry[1] in removed:
                        self._symbols[rv] = (name, entry[1], "removed")

    def _record(self, kind: str, inputs: list, attrs: list, outputs: list,
                decision: Any = None) -> None:
        self._trace.append(Instruction(KINDS[kind], inputs, attrs, outputs), decision)

    def _simplify(self, e: PrimExpr) -> PrimExpr:
        return self._simplifier.simplify(e)

    # ------------------------------------------------------------------ handles
    def _block(self, rv: Any) -> tuple[str, FuncIndex, BlockRealize]:
        if isinstance(rv, str):
            return self._block_by_name(rv, self._current, "a block name")
        entry = self._symbols.get(rv) if isinstance(rv, BlockRV) else None
        if entry is None:
            raise ScheduleError(f"expected a BlockRV of this schedule, got {rv!r}")
        fname, name = entry[0], entry[1]
        idx = self._indexed(fname)
        r = idx.blocks.get(name) if len(entry) == 2 else None
        if r is None:
            raise ScheduleError(f"the block handle refers to block {name!r}, which no longer "
                                "exists (a primitive such as compute_inline removed it)")
        return fname, idx, r

    def _block_by_name(self, name: str, fname: str, what: str):
        idx = self._indexed(fname)
        r = idx.blocks.get(name)
        if r is None:
            raise ScheduleError(f"function {fname!r} has no block named {name!r}; its blocks "
                                f"are {sorted(idx.blocks)}")
        return fname, idx, r

    def _loop(self, rv: Any) -> tuple[str, FuncIndex, For]:
        entry = self._symbols.get(rv) if isinstance(rv, LoopRV) else None
        if entry is None:
            raise ScheduleError(f"expected a LoopRV of this schedule, got {rv!r}")
        fname, var = entry
        if fname is None:
            raise ScheduleError(f"the loop handle is the special '{var}' location from "
                                "sample_compute_location; only compute_at and "
                                "reverse_compute_at accept it")
        idx = self._indexed(fname)
        lp = idx.loops.get(id(var))
        if lp is None or lp.loop_var is not var:
            raise ScheduleError(f"the loop handle refers to loop {var.name!r}, which no longer "
                                "exists (split, fuse or another primitive replaced it)")
        return fname, idx, lp

    @staticmethod
    def _same_function(resolved: list, primitive: str) -> None:
        names = {r[0] for r in resolved}
        if len(names) > 1:
            raise ScheduleError(f"{primitive}: the loops are in different functions "
                                f"{sorted(names)}")

    def _loop_in(self, rv: Any, fname: str) -> For:
        lfname, _, lp = self._loop(rv)
        if lfname != fname:
            raise ScheduleError(f"the loop is in function {lfname!r} but the block is in "
                                f"{fname!r}")
        return lp

    def _block_or_loop(self, rv: Any):
        if isinstance(rv, LoopRV):
            return self._loop(rv)
        return self._block(rv)

    def _int(self, x: Any) -> int | None:
        if x is None:
            return None
        if isinstance(x, ExprRV):
            value = self._symbols.get(x)
            if value is None:
                raise ScheduleError(f"expected an ExprRV of this schedule, got {x!r}")
            return value
        if isinstance(x, PrimExpr):
            if isinstance(x, IntImm):
                return x.value
            raise ScheduleError(f"expected an integer, got the expression {x}")
        if isinstance(x, bool) or not isinstance(x, int):
            raise ScheduleError(f"expected an integer or an ExprRV, got {x!r}")
        return x

    def _new_block_rv(self, fname: str, r: BlockRealize) -> BlockRV:
        rv = BlockRV()
        self._symbols[rv] = (fname, r.block.name)
        return rv

    def _new_loop_rv(self, fname: str, var) -> LoopRV:
        rv = LoopRV()
        self._symbols[rv] = (fname, var)
        return rv

    def get(self, rv: Any) -> Any:
        """The Block (BlockRV), For (LoopRV) or int (ExprRV) a handle refers to now."""
        if isinstance(rv, BlockRV):
            return self._block(rv)[2].block
        if isinstance(rv, LoopRV):
            entry = self._symbols.get(rv)
            if entry is not None and entry[0] is None:
                return entry[1]
            return self._loop(rv)[2]
        if isinstance(rv, ExprRV):
            return self._int(rv)
        raise ScheduleError(f"expected a BlockRV, LoopRV or ExprRV, got {rv!r}")

    def remove_rv(self, rv: Any) -> None:
        """Forget a handle."""
        self._symbols.pop(rv, None)

    # ------------------------------------------------------------------ queries
    def get_block(self, name: str, func_name: str | None = None) -> BlockRV:
        """The block called ``name`` in ``func_name`` (the current function by default)."""
        fname = func_name or self._current
        if fname not in self._funcs:
            raise ScheduleError(f"the module has no PrimFunc named {fname!r}")
        _, _, r = self._block_by_name(name, fname, "")
        rv = self._new_block_rv(fname, r)
        self._record("GetBlock", [], [name, fname], [rv])
        return rv

    def get_loops(self, block: BlockRV) -> list[LoopRV]:
        """The loops above a block, outermost first (up to its enclosing block)."""
        fname, idx, r = self._block(block)
        out = [self._new_loop_rv(fname, lp.loop_var) for lp in idx.loops_above(r)]
        self._record("GetLoops", [block], [], out)
        return out

    def get_child_blocks(self, block_or_loop: BlockRV | LoopRV) -> list[BlockRV]:
        """The blocks directly under a block or loop, in execution order."""
        fname, _, node = self._block_or_loop(block_or_loop)
        out = [self._new_block_rv(fname, r) for r in child_blocks(node)]
        self._record("GetChildBlocks", [block_or_loop], [], out)
        return out

    def get_producers(self, block: BlockRV) -> list[BlockRV]:
        """Blocks of the same scope that write what ``block`` reads, before it."""
        fname, idx, r = self._block(block)
        out = [self._new_block_rv(fname, p) for p in producers(idx, r)]
        self._record("GetProducers", [block], [], out)
        return out

    def get_consumers(self, block: BlockRV) -> list[BlockRV]:
        """Blocks of the same scope that read what ``block`` writes, after it."""
        fname, idx, r = self._block(block)
        out = [self._new_block_rv(fname, c) for c in consumers(idx, r)]
        self._record("GetConsumers", [block], [], out)
        return out

    # ------------------------------------------------------------------ loops
    def split(self, loop: LoopRV, factors: Sequence[Any],
              preserve_unit_iters: bool = True) -> list[LoopRV]:
        """Split a loop into ``len(factors)`` loops (one factor may be None: inferred).
        Factors whose product exceeds the extent add a predicate (``T.where``)."""
        fname, idx, lp = self._loop(loop)
        values = [self._int(f) for f in factors]
        func, new_vars = _loops.split(idx, lp, values, preserve_unit_iters, self._simplify,
                                      self._simplifier)
        self._install(fname, func, "split")
        out = [self._new_loop_rv(fname, v) for v in new_vars]
        self._record("Split", [loop, *factors], [bool(preserve_unit_iters)], out)
        return out

    def fuse(self, *loops: LoopRV, preserve_unit_iters: bool = True) -> LoopRV:
        """Fuse directly nested loops (outermost first) into one loop."""
        if len(loops) == 1 and isinstance(loops[0], (list, tuple)):
            loops = tuple(loops[0])
        resolved = [self._loop(lp) for lp in loops]
        if not resolved:
            raise ScheduleError("fuse: no loops given")
        fname, idx = resolved[0][0], resolved[0][1]
        self._same_function(resolved, "fuse")
        func, var = _loops.fuse(idx, [r[2] for r in resolved], preserve_unit_iters,
                                self._simplify)
        self._install(fname, func, "fuse")
        out = self._new_loop_rv(fname, var)
        self._record("Fuse", list(loops), [bool(preserve_unit_iters)], [out])
        return out

    def reorder(self, *ordered_loops: LoopRV) -> None:
        """Reorder loops of one perfectly nested chain into the given order."""
        if len(ordered_loops) == 1 and isinstance(ordered_loops[0], (list, tuple)):
            ordered_loops = tuple(ordered_loops[0])
        resolved = [self._loop(lp) for lp in ordered_loops]
        if not resolved:
            return
        fname, idx = resolved[0][0], resolved[0][1]
        self._same_function(resolved, "reorder")
        func = _loops.reorder(idx, [r[2] for r in resolved])
        self._install(fname, func, "reorder")
        self._record("Reorder", list(ordered_loops), [], [])

    def add_unit_loop(self, block_or_loop: BlockRV | LoopRV) -> LoopRV:
        """Wrap a block or loop in a new loop of extent 1 (for blocks without loops)."""
        fname, idx, node = self._block_or_loop(block_or_loop)
        func, var = _loops.add_unit_loop(idx, node)
        self._install(fname, func, "add_unit_loop")
        out = self._new_loop_rv(fname, var)
        self._record("AddUnitLoop", [block_or_loop], [], [out])
        return out

    def _set_kind(self, loop: LoopRV, kind: str, inst: str, thread: str = "") -> None:
        fname, idx, lp = self._loop(loop)
        func = _loops.set_kind(idx, lp, kind, thread)
        self._install(fname, func, inst)

    def parallel(self, loop: LoopRV) -> None:
        """Run the loop's iterations on parallel threads (CPU)."""
        self._set_kind(loop, "parallel", "parallel")
        self._record("Parallel", [loop], [], [])

    def vectorize(self, loop: LoopRV) -> None:
        """Execute the loop as vector instructions."""
        self._set_kind(loop, "vectorized", "vectorize")
        self._record("Vectorize", [loop], [], [])

    def unroll(self, loop: LoopRV) -> None:
        """Unroll the loop completely."""
        self._set_kind(loop, "unrolled", "unroll")
        self._record("Unroll", [loop], [], [])

    def bind(self, loop: LoopRV, thread_axis: str) -> None:
        """Bind the loop to a GPU thread axis (``blockIdx.x``, ``threadIdx.x``, ...).

        A loop inside a loop already bound to the same ``threadIdx`` axis shares that
        thread index (the threads of a block split its iterations, as in a cooperative
        copy to shared memory); where the extents differ the larger one is launched and
        the smaller loop guarded."""
        self._set_kind(loop, "thread_binding", "bind", thread_axis)
        self._record("Bind", [loop], [thread_axis], [])

    def annotate(self, block_or_loop: BlockRV | LoopRV, ann_key: str, ann_val: Any) -> None:
        """Set an annotation (a number, string, list, or a sampled ExprRV's value)."""
        fname, idx, node = self._block_or_loop(block_or_loop)
        value = self._int(ann_val) if isinstance(ann_val, ExprRV) else ann_val
        func = _loops.annotate(idx, node, ann_key, value)
        self._install(fname, func, "annotate")
        self._record("Annotate", [block_or_loop, ann_val], [ann_key], [])

    def unannotate(self, block_or_loop: BlockRV | LoopRV, ann_key: str) -> None:
        """Remove an annotation."""
        fname, idx, node = self._block_or_loop(block_or_loop)
        func = _loops.unannotate(idx, node, ann_key)
        self._install(fname, func, "unannotate")
        self._record("Unannotate", [block_or_loop], [ann_key], [])

    # ------------------------------------------------------------------ compute location
    def _special(self, loop: Any) -> str | None:
        entry = self._symbols.get(loop) if isinstance(loop, LoopRV) else None
        return entry[1] if entry is not None and entry[0] is None else None

    def compute_at(self, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool = False
                   ) -> None:
        """Move a producer block under ``loop``, computing only the region its consumers
        there need."""
        special = self._special(loop)
        if special == _INLINE:
            self._compute_inline(block)
        elif special != _ROOT:
            fname, idx, r = self._block(block)
            lp = self._loop_in(loop, fname)
            func = _cl.compute_at(idx, r, lp, preserve_unit_loops)
            self._install(fname, func, "compute_at")
        else:
            self._block(block)
        self._record("ComputeAt", [block, loop], [bool(preserve_unit_loops)], [])

    def reverse_compute_at(self, block: BlockRV, loop: LoopRV,
                           preserve_unit_loops: bool = False) -> None:
        """Move a consumer block under ``loop``, consuming the region its producers
        there write."""
        special = self._special(loop)
        if special == _INLINE:
            self._reverse_compute_inline(block)
        elif special != _ROOT:
            fname, idx, r = self._block(block)
            lp = self._loop_in(loop, fname)
            func = _cl.reverse_compute_at(idx, r, lp, preserve_unit_loops)
            self._install(fname, func, "reverse_compute_at")
        else:
            self._block(block)
        self._record("ReverseComputeAt", [block, loop], [bool(preserve_unit_loops)], [])

    def _compute_inline(self, block: BlockRV) -> None:
        fname, idx, r = self._block(block)
        self._install(fname, _cl.compute_inline(idx, r), "compute_inline")

    def _reverse_compute_inline(self, block: BlockRV) -> None:
        fname, idx, r = self._block(block)
        self._install(fname, _cl.reverse_compute_inline(idx, r), "reverse_compute_inline")

    def compute_inline(self, block: BlockRV) -> None:
        """Inline an elementwise producer into its consumers and remove it."""
        self._compute_inline(block)
        self._record("ComputeInline", [block], [], [])

    def reverse_compute_inline(self, block: BlockRV) -> None:
        """Inline an elementwise consumer into its only producer and remove it."""
        self._reverse_compute_inline(block)
        self._record("ReverseComputeInline", [block], [], [])

    # ------------------------------------------------------------------ caches
    def cache_read(self, block: BlockRV, read_buffer_index: int, storage_scope: str,
                   consumer_blocks: Sequence[BlockRV] | None = None) -> BlockRV:
        """Add a block copying the ``read_buffer_index``-th read buffer of ``block`` into a
        new buffer of ``storage_scope``; the consumers read the copy."""
        fname, idx, r = self._block(block)
        cons = [self._block(c)[2] for c in (consumer_blocks or [])]
        func, name = _cache.cache_read(idx, r, read_buffer_index, storage_scope, cons)
        self._install(fname, func, "cache_read")
        out = self._new_block_rv(fname, self._index[fname].blocks[name])
        self._record("CacheRead", [block, *(consumer_blocks or [])],
                     [read_buffer_index, storage_scope], [out])
        return out

    def cache_write(self, block: BlockRV, write_buffer_index: int, storage_scope: str
                    ) -> BlockRV:
        """Make ``block`` write into a new buffer of ``storage_scope`` and add a block
        copying it to the original buffer."""
        fname, idx, r = self._block(block)
        func, name = _cache.cache_write(idx, r, write_buffer_index, storage_scope)
        self._install(fname, func, "cache_write")
        out = self._new_block_rv(fname, self._index[fname].blocks[name])
        self._record("CacheWrite", [block], [write_buffer_index, storage_scope], [out])
        return out

    def set_scope(self, block: BlockRV, buffer_index: int, storage_scope: str) -> None:
        """Change the storage scope of a buffer the block writes."""
        fname, idx, r = self._block(block)
        self._install(fname, _cache.set_scope(idx, r, buffer_index, storage_scope),
                      "set_scope")
        self._record("SetScope", [block], [buffer_index, storage_scope], [])

    def storage_align(self, block: BlockRV, buffer_index: int, axis: int, factor: int,
                      offset: int) -> None:
        """Pad the stride of ``axis`` of a written buffer to ``k * factor + offset``."""
        fname, idx, r = self._block(block)
        self._install(fname, _cache.storage_align(idx, r, buffer_index, axis, factor, offset),
                      "storage_align")
        self._record("StorageAlign", [block], [buffer_index, axis, factor, offset], [])

    # ------------------------------------------------------------------ reductions
    def decompose_reduction(self, block: BlockRV, loop: LoopRV) -> BlockRV:
        """Move a reduction block's init into its own block placed before ``loop``."""
        fname, idx, r = self._block(block)
        lp = self._loop_in(loop, fname)
        func, name = _reduction.decompose_reduction(idx, r, lp, self._simplify)
        self._install(fname, func, "decompose_reduction")
        out = self._new_block_rv(fname, self._index[fname].blocks[name])
        self._record("DecomposeReduction", [block, loop], [], [out])
        return out

    def rfactor(self, loop: LoopRV, factor_axis: int) -> BlockRV:
        """Factor a reduction over ``loop`` into a block of partial results (one per
        iteration of the loop, stored along ``factor_axis``) and a block combining
        them."""
        fname, idx, lp = self._loop(loop)
        func, name = _reduction.rfactor(idx, lp, factor_axis, self._simplify)
        self._install(fname, func, "rfactor")
        out = self._new_block_rv(fname, self._index[fname].blocks[name])
        self._record("RFactor", [loop], [factor_axis], [out])
        return out

    # ------------------------------------------------------------------ layout
    def transform_layout(self, block: BlockRV, buffer: Any, index_map: Callable | str
                         ) -> None:
        """Rewrite a buffer's layout with ``index_map`` (a lambda over the old indices
        returning the new ones); every access in the function follows. ``buffer`` is
        ``("read", i)``, ``("write", i)``, a buffer name or a Buffer."""
        fname, idx, r = self._block(block)
        func, spec, text = _layout.transform_layout(idx, r, buffer, index_map,
                                                    self._simplifier)
        self._install(fname, func, "transform_layout")
        self._record("TransformLayout", [block], [spec, text], [])

    def layout_rewrite(self, block: BlockRV, read_buffer_index: int,
                       index_map: Callable | str | None = None) -> None:
        """Rewrite the layout of a layout-free weight parameter (seed 002's
        ``layout_free_placeholders``); with no ``index_map`` the new layout follows the
        order in which the block's loops walk the weight. The function records the
        rewrite in its ``layout_rewrite`` attribute; :func:`pack_weight` packs the
        weight once, outside the kernel."""
        fname, idx, r = self._block(block)
        func, text = _layout.layout_rewrite(idx, r, read_buffer_index, index_map,
                                            self._simplifier)
        self._install(fname, func, "layout_rewrite")
        self._record("LayoutRewrite", [block], [read_buffer_index, text], [])

    def blockize(self, loop: LoopRV, preserve_unit_iters: bool = True) -> BlockRV:
        """Wrap the subtree of ``loop`` in a new outer block."""
        fname, idx, lp = self._loop(loop)
        func, name = _blockize.blockize(idx, lp, preserve_unit_iters, self._simplifier)
        self._install(fname, func, "blockize")
        out = self._new_block_rv(fname, self._index[fname].blocks[name])
        self._record("Blockize", [loop], [bool(preserve_unit_iters)], [out])
        return out

    def tensorize(self, block_or_loop: BlockRV | LoopRV, tensor_intrin: str) -> None:
        """Replace a block (or the blockized subtree of a loop) with the implementation
        of a registered tensor intrinsic whose description it matches."""
        fname, idx, node = self._block_or_loop(block_or_loop)
        func = _blockize.tensorize(idx, node, tensor_intrin, self._simplifier)
        self._install(fname, func, "tensorize")
        self._record("Tensorize", [block_or_loop], [tensor_intrin], [])

    # ------------------------------------------------------------------ sampling
    def sample_perfect_tile(self, loop: LoopRV, n: int, max_innermost_factor: int | None = None,
                            decision: Sequence[int] | None = None) -> list[ExprRV]:
        """Sample ``n`` factors whose product is the loop's extent (the innermost at most
        ``max_innermost_factor``); ``decision`` fixes them."""
        _, _, lp = self._loop(loop)
        values = _sampling.perfect_tile(self._rng, lp, n, max_innermost_factor, decision)
        out = []
        for v in values:
            rv = ExprRV()
            self._symbols[rv] = v
            out.append(rv)
        self._record("SamplePerfectTile", [loop], [n, max_innermost_factor], out, list(values))
        return out

    def sample_categorical(self, candidates: Sequence[int], probs: Sequence[float],
                           decision: int | None = None) -> ExprRV:
        """Sample one of ``candidates`` with probabilities ``probs``; ``decision`` is the
        chosen index."""
        cands = [self._int(c) for c in candidates]
        choice = _sampling.categorical(self._rng, cands, list(probs), decision)
        rv = ExprRV()
        self._symbols[rv] = cands[choice]
        self._record("SampleCategorical", [], [cands, [float(p) for p in probs]], [rv], choice)
        return rv

    def sample_compute_location(self, block: BlockRV, decision: int | None = None) -> LoopRV:
        """Sample a loop where ``block`` can be computed (decision -1: where it is,
        -2: inlined); the result is passed to ``compute_at``."""
        fname, idx, r = self._block(block)
        candidates = _sampling.compute_location_candidates(idx, r)
        choice = _sampling.choose_location(self._rng, candidates, decision,
                                           _cl.can_inline(idx, r), r.block.name)
        if choice in (-1, -2):
            rv = LoopRV()
            self._symbols[rv] = (None, _ROOT if choice == -1 else _INLINE)
        else:
            rv = self._new_loop_rv(fname, candidates[choice].loop_var)
        self._record("SampleComputeLocation", [block], [], [rv], choice)
        return rv


__all__ = ["BlockRV", "ExprRV", "LoopRV", "Schedule"]

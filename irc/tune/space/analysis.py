"""What the schedule rules and postprocessors ask about blocks and loops of the function
being scheduled: the realize of a block handle, the loops above it, what kind of
iteration variable each loop feeds ("S" spatial, "R" reduction, "O" anything else, "U"
none), whether a block is elementwise or worth multi-level tiling, and target facts
(cores, vector width, GPU limits) the rules size their choices by.

Everything reads the schedule's current function; nothing here changes it or records
instructions in its trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.diagnostics import TuningError
from ...core.target import Target
from ...tir import expr as E
from ...tir.schedule import Schedule
from ...tir.schedule.analysis import is_complete, is_output_block, is_reduction, loop_iter_types
from ...tir.schedule.rewrite import substitute_vars
from ...tir.schedule.state import FuncIndex, child_blocks, var_ids
from ...tir.stmt import Block, BlockRealize, BufferStore, For, PrimFunc, SeqStmt

# Keys of the root-block annotations that rules leave for postprocessors.
ANN_PARALLEL = "meta_schedule.parallel"
ANN_VECTORIZE = "meta_schedule.vectorize"
ANN_UNROLL_EXPLICIT = "meta_schedule.unroll_explicit"
ANN_UNROLL_IMPLICIT = "meta_schedule.unroll_implicit"
ANN_COOPERATIVE_FETCH = "meta_schedule.cooperative_fetch"
ANN_TILED = "meta_schedule.tiling_structure"
ANN_THREAD_EXTENT_LOW = "meta_schedule.thread_extent_low_inclusive"
ANN_THREAD_EXTENT_HIGH = "meta_schedule.thread_extent_high_inclusive"


# ---------------------------------------------------------------------------------------
# Target facts
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TargetInfo:
    """The target facts the search space is sized by."""

    is_gpu: bool
    num_cores: int
    vector_bytes: int
    max_threads_per_block: int = 1024
    warp_size: int = 32
    max_shared_memory_per_block: int = 49152
    max_vthread: int = 8

    @staticmethod
    def of(target: Any) -> TargetInfo:
        """The facts of a Target or target string."""
        t = Target.canon(target)
        if t.kind.name == "cuda":
            return TargetInfo(is_gpu=True, num_cores=1, vector_bytes=16,
                              max_threads_per_block=t.max_num_threads,
                              warp_size=t.thread_warp_size,
                              max_shared_memory_per_block=t.max_shared_memory_per_block)
        try:
            bits = t.vector_width_bits()
        except Exception:  # noqa: BLE001 - a CPU whose features cannot be read
            bits = 128
        return TargetInfo(is_gpu=False, num_cores=max(1, t.num_cores),
                          vector_bytes=max(16, bits // 8))


# ---------------------------------------------------------------------------------------
# Blocks and loops of a schedule
# ---------------------------------------------------------------------------------------


def index_of(sch: Schedule) -> FuncIndex:
    """The lookup tables of the schedule's current function (the schedule's own cached
    index, rebuilt by every primitive that changes the function)."""
    return sch._indexed(sch._current)  # noqa: SLF001 - the schedule's cached index


def realize_of(sch: Schedule, block: Any) -> BlockRealize:
    """The BlockRealize of a block handle or block name."""
    name = block if isinstance(block, str) else sch.get(block).name
    r = index_of(sch).blocks.get(name)
    if r is None:
        raise TuningError(f"the schedule has no block named {name!r}")
    return r


def has_block(sch: Schedule, name: str) -> bool:
    """True when the current function has a block called ``name``."""
    return name in index_of(sch).blocks


def loops_of(sch: Schedule, block: Any) -> list[For]:
    """The loops above a block within its scope, outermost first."""
    return index_of(sch).loops_above(realize_of(sch, block))


def root_block_names(func: PrimFunc) -> list[str]:
    """Names of the blocks directly under the root block, in execution order."""
    body = func.body
    if type(body) is not BlockRealize:
        return []
    return [r.block.name for r in child_blocks(body)]


def all_block_names(func: PrimFunc) -> list[str]:
    """Names of every block but the root, in execution order (nested blocks after the
    block that holds them)."""
    out: list[str] = []

    def walk(r: BlockRealize) -> None:
        for c in child_blocks(r):
            out.append(c.block.name)
            walk(c)

    if type(func.body) is BlockRealize:
        walk(func.body)
    return out


def loop_kinds(r: BlockRealize, loops: list[For]) -> list[str]:
    """For each loop: "S" when it feeds only spatial iteration variables of ``r``, "R"
    only reduction ones, "U" none, "O" anything else (opaque, or both kinds)."""
    kinds = loop_iter_types(r)
    out = []
    for lp in loops:
        k = kinds.get(id(lp.loop_var), set())
        if not k:
            out.append("U")
        elif k == {"spatial"}:
            out.append("S")
        elif k == {"reduce"}:
            out.append("R")
        else:
            out.append("O")
    return out


def has_simple_bindings(r: BlockRealize, loops: list[For]) -> bool:
    """True when each iteration variable is bound to at most one loop variable (plain
    ``v = i``-style bindings, possibly offset) and each loop feeds one variable: the
    loops can be tiled per dimension."""
    loop_ids = {id(lp.loop_var) for lp in loops}
    used: set[int] = set()
    for value in r.iter_values:
        ids = var_ids(value) & loop_ids
        if len(ids) > 1 or ids & used:
            return False
        used |= ids
    return True


def is_spatial_block(block: Block) -> bool:
    """True for a block with only spatial iteration variables and no init."""
    return is_complete(block)


def is_reduction_block(block: Block) -> bool:
    """True for a reduction block (spatial and reduction variables, with init)."""
    return is_reduction(block)


def is_output(sch: Schedule, block: Any) -> bool:
    """True when the block writes a buffer its scope does not allocate."""
    return is_output_block(index_of(sch), realize_of(sch, block))


def store_of(block: Block) -> BufferStore | None:
    """The block's single store (None when the body is something else)."""
    body = block.body
    return body if type(body) is BufferStore else None


def has_if_then_else(block: Block) -> bool:
    """True when the stored value contains a select or ``if_then_else`` (padding)."""
    store = store_of(block)
    if store is None:
        return True
    stack: list[Any] = [store.value]
    while stack:
        e = stack.pop()
        t = type(e)
        if t is E.Select:
            return True
        if t is E.Call and str(getattr(e, "op", "")) in ("if_then_else", "tir.if_then_else"):
            return True
        if isinstance(e, E.PrimExpr):
            for f in ("a", "b", "value", "condition", "true_value", "false_value"):
                v = getattr(e, f, None)
                if v is not None and isinstance(v, E.PrimExpr):
                    stack.append(v)
            args = getattr(e, "args", None)
            if args:
                stack.extend(a for a in args if isinstance(a, E.PrimExpr))
            if t is E.BufferLoad:
                stack.extend(e.indices)
    return False


def is_elementwise_store(block: Block) -> bool:
    """True when the block stores at exactly its iteration variables, in order (every
    iteration writes its own element)."""
    store = store_of(block)
    if store is None:
        return False
    ivs = [iv.var for iv in block.iter_vars]
    return len(store.indices) == len(ivs) and all(i is v for i, v in zip(store.indices, ivs))


def needs_multi_level_tiling(r: BlockRealize, loops: list[For]) -> bool:
    """True for a reduction block with plain per-dimension bindings where some read
    buffer does not depend on some spatial variable (data reuse across that dimension:
    matmul, convolution, dense), the blocks multi-level tiling pays for."""
    block = r.block
    if not is_reduction(block) or not loops:
        return False
    if not has_simple_bindings(r, loops):
        return False
    kinds = loop_kinds(r, loops)
    if "O" in kinds or "S" not in kinds or "R" not in kinds:
        return False
    # Unit dimensions offer no reuse.
    spatial = [iv.var for iv in block.iter_vars
               if iv.iter_type == "spatial" and const_int(iv.dom.extent) != 1]
    written = {id(w.buffer) for w in block.writes}
    for region in block.reads:
        if id(region.buffer) in written:
            continue
        used = var_ids(tuple(x for rg in region.region for x in (rg.min, rg.extent)))
        if any(id(v) not in used for v in spatial):
            return True
    return False


def top_level_nests(func: PrimFunc) -> list[For]:
    """The outermost loops directly under the root block (one per loop nest)."""
    body = func.body
    if type(body) is not BlockRealize:
        return []
    stmt = body.block.body
    items = stmt.seq if type(stmt) is SeqStmt else (stmt,)
    return [s for s in items if type(s) is For]


def perfect_chain(loop: For) -> list[For]:
    """``loop`` and the loops nested under it one inside the other (each the only child
    of the previous), outermost first."""
    out = [loop]
    while type(out[-1].body) is For:
        out.append(out[-1].body)
    return out


def innermost_chain(index: FuncIndex, r: BlockRealize) -> list[For]:
    """The loops directly around ``r`` that hold nothing else (innermost last): the
    loops that could be fused and vectorized for this block alone."""
    out: list[For] = []
    node: Any = r
    for lp in reversed(index.loops_above(r)):
        if lp.body is not node:
            break
        out.append(lp)
        node = lp
    out.reverse()
    return out


def blocks_under(loop: For) -> list[BlockRealize]:
    """Every block realize under a loop (nested ones included)."""
    out: list[BlockRealize] = []
    stack = child_blocks(loop)
    while stack:
        r = stack.pop()
        out.append(r)
        stack.extend(child_blocks(r))
    return out


def const_int(e: Any) -> int | None:
    """The value of an integer constant expression (None otherwise)."""
    return e.value if type(e) is E.IntImm else None


def product(values: list[int]) -> int:
    """The product of integers (1 for an empty list)."""
    out = 1
    for v in values:
        out *= v
    return out


def linear_coefficients(e: Any, coefs: dict[int, int], scale: int = 1) -> bool:
    """Accumulate the integer coefficients of the variables of an affine expression
    into ``coefs`` (by variable id); False when ``e`` is not affine."""
    t = type(e)
    if t is E.Var:
        coefs[id(e)] = coefs.get(id(e), 0) + scale
        return True
    if t is E.IntImm:
        return True
    if t is E.Add:
        return linear_coefficients(e.a, coefs, scale) and linear_coefficients(e.b, coefs, scale)
    if t is E.Sub:
        return linear_coefficients(e.a, coefs, scale) and \
            linear_coefficients(e.b, coefs, -scale)
    if t is E.Mul:
        if type(e.b) is E.IntImm:
            return linear_coefficients(e.a, coefs, scale * e.b.value)
        if type(e.a) is E.IntImm:
            return linear_coefficients(e.b, coefs, scale * e.a.value)
    return False


def store_strides(r: BlockRealize, loops: list[For]) -> list[int | None] | None:
    """For each loop, its stride in the flattened index of the block's store (the
    store's buffer in its declared shape); None for the whole list when the block has
    no single store or its shape is not constant, None for a loop whose stride is not a
    constant."""
    store = store_of(r.block)
    if store is None:
        return None
    shape = [const_int(s) for s in store.buffer.shape]
    if any(s is None for s in shape):
        return None
    vmap = {id(iv.var): v for iv, v in zip(r.block.iter_vars, r.iter_values)}
    coefs: dict[int, int] = {}
    stride = 1
    ok = True
    for idx, ext in zip(reversed(store.indices), reversed(shape)):
        ok = ok and linear_coefficients(substitute_vars(idx, vmap), coefs, stride)
        stride *= ext
    if not ok:
        return [None] * len(loops)
    return [coefs.get(id(lp.loop_var), 0) for lp in loops]

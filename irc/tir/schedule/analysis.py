"""Questions primitives ask about blocks and loops: a block's single store, block kinds
(complete, reduction), producers and consumers inside a scope, output blocks, loop
domains, and the errors that name what failed where. What schedule rules ask on top of
these is :mod:`irc.tir.schedule.block_info`."""

from __future__ import annotations

from ...core.diagnostics import ScheduleError
from ..buffer import Buffer
from ..expr import IntImm, PrimExpr
from ..stmt import Block, BlockRealize, BufferStore, For
from .iter_map import Domains
from .state import FuncIndex, child_blocks, var_ids


def fail(primitive: str, message: str, hint: str | None = None, node: object = None):
    """Raise the ScheduleError of ``primitive`` (the message names blocks and loops)."""
    raise ScheduleError(f"{primitive}: {message}", hint=hint, node=node)


def loop_name(loop: For) -> str:
    """The loop's variable name, quoted, for messages."""
    return repr(loop.loop_var.name)


def const_extent(loop: For) -> int | None:
    """The loop's extent when it is a constant."""
    e = loop.extent
    return e.value if type(e) is IntImm else None


def loop_domains(loops: list[For]) -> Domains | None:
    """``id(var) -> (var, min, extent)`` for loops with constant bounds (None if one is
    symbolic)."""
    out: Domains = {}
    for lp in loops:
        if type(lp.min) is not IntImm or type(lp.extent) is not IntImm:
            return None
        out[id(lp.loop_var)] = (lp.loop_var, lp.min.value, lp.extent.value)
    return out


def is_trivial_predicate(p: PrimExpr) -> bool:
    """True for the constant predicate ``True``."""
    return type(p) is IntImm and p.value == 1


# ---------------------------------------------------------------------------------
# Block kinds
# ---------------------------------------------------------------------------------


def store_of(block: Block) -> BufferStore | None:
    """The block's body when it is a single buffer store (None when it is anything
    else)."""
    body = block.body
    return body if type(body) is BufferStore else None


def is_complete(block: Block) -> bool:
    """All iteration variables spatial, no init, and no buffer both read and written."""
    if block.init is not None:
        return False
    if any(iv.iter_type != "spatial" for iv in block.iter_vars):
        return False
    written = {id(r.buffer) for r in block.writes}
    return not any(id(r.buffer) in written for r in block.reads)


def is_reduction(block: Block) -> bool:
    """Spatial and reduction variables with an init statement, and the written indices
    free of reduction variables."""
    if block.init is None:
        return False
    kinds = {iv.iter_type for iv in block.iter_vars}
    if not kinds <= {"spatial", "reduce"}:
        return False
    reduce_ids = {id(iv.var) for iv in block.iter_vars if iv.iter_type == "reduce"}
    for r in block.writes:
        for rg in r.region:
            if not reduce_ids.isdisjoint(var_ids((rg.min, rg.extent))):
                return False
    return True


def loop_iter_types(r: BlockRealize) -> dict[int, set[str]]:
    """For each variable used in the bindings of ``r``, the kinds of the iteration
    variables bound to expressions that use it."""
    out: dict[int, set[str]] = {}
    for iv, value in zip(r.block.iter_vars, r.iter_values):
        for vid in var_ids(value):
            out.setdefault(vid, set()).add(iv.iter_type)
    return out


# ---------------------------------------------------------------------------------
# Dataflow inside a scope
# ---------------------------------------------------------------------------------


def read_ids(block: Block) -> set[int]:
    """Ids of the buffers a block declares as read."""
    return {id(r.buffer) for r in block.reads}


def write_ids(block: Block) -> set[int]:
    """Ids of the buffers a block declares as written."""
    return {id(r.buffer) for r in block.writes}


def scope_blocks(index: FuncIndex, r: BlockRealize) -> tuple[BlockRealize, list[BlockRealize]]:
    """The scope root of ``r`` and the blocks of that scope in execution order."""
    scope = index.scope_realize(r)
    return scope, child_blocks(scope)


def producers(index: FuncIndex, r: BlockRealize) -> list[BlockRealize]:
    """Blocks of the same scope that run before ``r`` and write what it reads."""
    _, blocks = scope_blocks(index, r)
    reads = read_ids(r.block)
    out = []
    for b in blocks:
        if b is r:
            break
        if not reads.isdisjoint(write_ids(b.block)):
            out.append(b)
    return out


def consumers(index: FuncIndex, r: BlockRealize) -> list[BlockRealize]:
    """Blocks of the same scope that run after ``r`` and read what it writes."""
    _, blocks = scope_blocks(index, r)
    writes = write_ids(r.block)
    out = []
    seen = False
    for b in blocks:
        if b is r:
            seen = True
            continue
        if seen and not writes.isdisjoint(read_ids(b.block)):
            out.append(b)
    return out


def writers(blocks: list[BlockRealize], buf: Buffer) -> list[BlockRealize]:
    """The blocks among ``blocks`` that write ``buf``."""
    return [b for b in blocks if any(w.buffer is buf for w in b.block.writes)]


def allocated_in(scope: BlockRealize, buf: Buffer) -> bool:
    """True when the scope's block allocates ``buf``."""
    return any(b is buf for b in scope.block.alloc_buffers)


def is_output_block(index: FuncIndex, r: BlockRealize) -> bool:
    """True when ``r`` writes a buffer its scope does not allocate (a function output
    for blocks of the root scope)."""
    scope = index.scope_realize(r)
    return any(not allocated_in(scope, w.buffer) for w in r.block.writes)


def check_order(index: FuncIndex, scope: BlockRealize, primitive: str) -> None:
    """Every block of the scope still runs after the blocks that produce what it reads
    (producer-consumer order after a transformation)."""
    blocks = child_blocks(scope)
    # A reader that runs before the first writer of an intermediate buffer is a violation
    # unless it also writes it (accumulation into its own output).
    first_write: dict[int, int] = {}
    for pos, b in enumerate(blocks):
        for w in b.block.writes:
            first_write.setdefault(id(w.buffer), pos)
    for pos, b in enumerate(blocks):
        own = write_ids(b.block)
        for r in b.block.reads:
            k = id(r.buffer)
            if k in own or k not in first_write or k in index.param_buffer_ids():
                continue
            if first_write[k] > pos:
                fail(primitive, f"block {b.block.name!r} would run before block "
                     f"{blocks[first_write[k]].block.name!r}, which produces buffer "
                     f"{r.buffer.name!r} it reads",
                     hint="move the producer first, or pick a location after it")

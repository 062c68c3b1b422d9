"""What the tuning space's rules and postprocessors ask beyond the loop IR's block
analysis (:mod:`irc.tir.schedule.block_info`: lookups through a schedule, block kinds,
loop kinds, strides): whether a block is worth multi-level tiling, the loop nests and
chains postprocessors rewrite, the annotation keys rules leave for postprocessors, and
target facts (cores, vector width, GPU limits) the rules size their choices by.

Nothing here changes a schedule or records instructions in its trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.target import Target
from ...tir.schedule.block_info import (
    const_int,
    has_simple_bindings,
    is_reduction,
    loop_kinds,
)
from ...tir.schedule.state import FuncIndex, child_blocks, var_ids
from ...tir.stmt import BlockRealize, For, PrimFunc, SeqStmt

# Keys of the root-block annotations that rules leave for postprocessors.
ANN_PARALLEL = "meta_schedule.parallel"
ANN_VECTORIZE = "meta_schedule.vectorize"
ANN_UNROLL_EXPLICIT = "meta_schedule.unroll_explicit"
ANN_UNROLL_IMPLICIT = "meta_schedule.unroll_implicit"
ANN_COOPERATIVE_FETCH = "meta_schedule.cooperative_fetch"
ANN_TILED = "meta_schedule.tiling_structure"


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
# Blocks and loop nests
# ---------------------------------------------------------------------------------------


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


def product(values: list[int]) -> int:
    """The product of integers (1 for an empty list)."""
    out = 1
    for v in values:
        out *= v
    return out

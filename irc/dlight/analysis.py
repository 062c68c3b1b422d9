"""Schedule helpers the default rules share: inlining that gives up quietly when the
schedule refuses, and the rows several blocks of a fused function share.

What the rules ask about blocks and loops (loop kinds, dom kinds, strides, reductions,
output blocks) is the loop IR's block analysis, :mod:`irc.tir.schedule.block_info`.
"""

from __future__ import annotations

from ..core.diagnostics import ScheduleError
from ..tir.expr import Var
from ..tir.schedule import BlockRV, Schedule
from ..tir.schedule.block_info import BlockInfo, block_accesses, get_block_infos, is_output

# ---------------------------------------------------------------------------------
# Inlining
# ---------------------------------------------------------------------------------


def try_compute_inline(sch: Schedule, block: BlockRV) -> bool:
    """Inline a producer into its consumers; False (and nothing changed) when the
    schedule refuses."""
    try:
        sch.compute_inline(block)
    except ScheduleError:
        return False
    return True


def try_reverse_compute_inline(sch: Schedule, block: BlockRV) -> bool:
    """Inline a consumer into its producer; False (and nothing changed) when refused."""
    try:
        sch.reverse_compute_inline(block)
    except ScheduleError:
        return False
    return True


def inline_injective_producers(sch: Schedule, keep: set[str] = frozenset()) -> None:
    """Inline every injective block that does not write a function output into its
    consumers (repeatedly, so chains collapse), except the blocks named in ``keep``."""
    changed = True
    while changed:
        changed = False
        infos = get_block_infos(sch)
        if infos is None:
            return
        for info in infos:
            if info.name in keep or not info.is_injective() or is_output(sch, info.name):
                continue
            if try_compute_inline(sch, info.block_rv):
                changed = True
                break


# ---------------------------------------------------------------------------------
# Rows shared by several blocks
# ---------------------------------------------------------------------------------


def _consumers(infos: list[BlockInfo], b: BlockInfo) -> list[BlockInfo]:
    written = {id(w.buffer) for w in b.block.writes}
    return [c for c in infos if c is not b
            and any(id(r.buffer) in written for r in c.block.reads)]


def inline_single_use(sch: Schedule) -> None:
    """Inline injective intermediate blocks read by exactly one block (a value read by
    several blocks is computed once and stored)."""
    while True:
        infos = get_block_infos(sch)
        if infos is None:
            return
        for b in infos:
            if not b.is_injective() or is_output(sch, b.name):
                continue
            if len(_consumers(infos, b)) != 1:
                continue
            if try_compute_inline(sch, b.block_rv):
                break
        else:
            return


def row_depth(infos: list[BlockInfo]) -> int:
    """How many leading loops all blocks share as aligned rows: spatial loops of equal
    constant extents whose variables index, in order, the leading dimensions of every
    store and of every load of an intermediate buffer."""
    last = infos[-1]
    produced = {id(w.buffer) for b in infos[:-1] for w in b.block.writes}
    depth = 0
    while True:
        d = depth
        ok = len(last.iters) > d  # every block, the last one included, has loop d
        for b in infos if ok else ():
            if len(b.iters) <= d or b.iters[d].kind != "S" or b.iters[d].var is None:
                ok = False
                break
            if b.iters[d].const_extent is None or \
                    b.iters[d].const_extent != last.iters[d].const_extent:
                ok = False
                break
            lead = [it.var for it in b.iters[:d + 1]]
            for a in block_accesses(b.block):
                if a.kind == "write" or id(a.buffer) in produced:
                    if not _leading(a.indices, lead):
                        ok = False
                        break
            if not ok:
                break
        if not ok:
            return depth
        depth += 1


def _leading(indices, lead: list[Var]) -> bool:
    if len(indices) < len(lead):
        return False
    return all(i is v for i, v in zip(indices, lead))

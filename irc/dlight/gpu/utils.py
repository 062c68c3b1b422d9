"""Shared pieces of the GPU rules: the target's limits, binding a fused loop to blocks
and threads, and the check every GPU schedule passes before a rule returns it.

Conventions of the scheduled loop IR (what the rules produce and the interpreter runs
one thread after another): each loop nest of the root scope bound to ``blockIdx.*`` is a
kernel; inside it, sibling nests bound to ``threadIdx.*`` run one after another with a
barrier between them (so a value one nest writes to ``shared`` memory is visible to the
next); ``local`` buffers are private to a thread and only read by the thread that wrote
them. irc does not lower cross-thread reductions: partial results of a reduction split
across threads (``rfactor``) go to shared memory and are combined by a serial loop.
"""

from __future__ import annotations

from ...core import dtype as dt
from ...core.diagnostics import ScheduleError
from ...core.target import Target
from ...tir.expr import IntImm
from ...tir.schedule import LoopRV, Schedule
from ...tir.stmt import Block, BlockRealize, For, PrimFunc, SeqStmt, Stmt

# Per-dimension limits of CUDA thread blocks.
_THREAD_DIM_LIMIT = {"threadIdx.x": 1024, "threadIdx.y": 1024, "threadIdx.z": 64}


def max_threads(target: Target) -> int:
    """Threads per block the target allows (``-max-num-threads``, 1024 by default)."""
    return target.max_num_threads or 1024


def max_shared_bytes(target: Target) -> int:
    """Shared memory per block the target allows (48 KiB by default)."""
    return target.max_shared_memory_per_block or 49152


def bytes_of(dtype: str) -> int:
    """Bytes per element of ``dtype``."""
    return max(1, dt.bits(dtype) // 8)


def const(sch: Schedule, loop: LoopRV) -> int | None:
    """The constant extent of a loop (None when symbolic)."""
    e = sch.get(loop).extent
    return e.value if type(e) is IntImm else None


def bind_block_thread(sch: Schedule, loop: LoopRV, threads: int,
                      block_axis: str = "blockIdx.x", thread_axis: str = "threadIdx.x"
                      ) -> tuple[LoopRV, LoopRV]:
    """Split ``loop`` into ``[blocks, threads]`` and bind the parts (a final partial
    block is guarded by a ``T.where`` predicate)."""
    extent = const(sch, loop)
    if extent is not None:
        threads = max(1, min(threads, extent))
    bx, tx = sch.split(loop, [None, threads])
    sch.bind(bx, block_axis)
    sch.bind(tx, thread_axis)
    return bx, tx


def check_shared_memory(nbytes: int, target: Target, what: str) -> None:
    """Raise a ScheduleError when a tile needs more shared memory than the target has."""
    limit = max_shared_bytes(target)
    if nbytes > limit:
        raise ScheduleError(f"{what} needs {nbytes} bytes of shared memory per block; the "
                            f"target allows {limit}",
                            hint="use smaller tiles or raise -max-shared-memory-per-block")


def verify_gpu_func(func: PrimFunc, target: Target) -> None:
    """Check a GPU schedule: every block of the root scope runs inside a loop bound to a
    thread axis, and each kernel uses at most the target's threads per block (and per
    dimension). Raises a ScheduleError naming the block or the kernel otherwise."""
    body = func.body
    if type(body) is not BlockRealize:
        raise ScheduleError("the function is not in block form")
    limit = max_threads(target)
    for stmt in _items(body.block.body):
        extents: dict[str, int] = {}
        _walk(stmt, False, extents)
        threads = 1
        for tag, n in extents.items():
            if tag.startswith("threadIdx"):
                if n > _THREAD_DIM_LIMIT[tag]:
                    raise ScheduleError(f"a kernel binds {n} threads to {tag}; at most "
                                        f"{_THREAD_DIM_LIMIT[tag]} are allowed")
                threads *= n
        if threads > limit:
            raise ScheduleError(f"a kernel uses {threads} threads per block; the target "
                                f"allows {limit}", hint="bind fewer iterations to threads")


def _items(s: Stmt) -> list[Stmt]:
    return list(s.seq) if type(s) is SeqStmt else [s]


def _walk(s: Stmt, bound: bool, extents: dict[str, int]) -> None:
    t = type(s)
    if t is For:
        if s.kind == "thread_binding":
            ext = s.extent.value if type(s.extent) is IntImm else None
            if ext is not None:
                extents[s.thread_tag] = max(extents.get(s.thread_tag, 1), ext)
            elif not s.thread_tag.startswith("blockIdx"):
                # The grid may depend on shapes (the host computes it per call); a
                # block's shape is part of the compiled kernel.
                raise ScheduleError(f"loop {s.loop_var.name!r} bound to {s.thread_tag} has "
                                    f"the symbolic extent {s.extent}; thread extents must "
                                    "be constants (grid extents may be symbolic)")
            bound = True
        _walk(s.body, bound, extents)
    elif t is SeqStmt:
        for c in s.seq:
            _walk(c, bound, extents)
    elif t is BlockRealize:
        if not bound:
            raise ScheduleError(f"block {s.block.name!r} is not inside a loop bound to a "
                                "GPU thread axis; it would run on the host")
        _walk(s.block, bound, extents)
    elif t is Block:
        _walk(s.body, bound, extents)
        if s.init is not None:
            _walk(s.init, bound, extents)

"""LaunchSerialLoops: a loop kernel written as plain loops runs on a GPU in one thread.

The loop kernels of ``irc.tir.topi.index`` (scatters, top-k, scans, the run-time checks
of gather indices) are written as ordinary loops, marked with the function attribute
``irc.serial_kernel`` (:data:`SERIAL_KERNEL_ATTR`), and no schedule binds them to GPU
threads. For a GPU target such a function's body goes under ``blockIdx.x`` and
``threadIdx.x`` loops of extent 1, its ``parallel`` loops becoming serial, so it is one
kernel launched on a single thread: slow for large inputs, but it computes the loops as
written on the device that holds the data.

Preconditions: the function is lowered (no blocks), part of :data:`LOWER_TIR_GPU` before
``LowerThreadBinding``. Functions without the attribute, or that bind any loop to a GPU
axis already, are left unchanged (an unscheduled function of the user's stays an error
with a hint at the code generator).
Postconditions: a marked function has exactly one thread-bound nest enclosing all its
statements, and no parallel loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.functor import collect
from ..expr import Var, const
from ..functor.stmt_util import map_stmt_children
from ..stmt import For, PrimFunc, Stmt
from .base import PrimFuncPass

SERIAL_KERNEL_ATTR = "irc.serial_kernel"
"""The function attribute (True) of loop kernels written as plain loops."""


def _serial(s: Stmt) -> Stmt:
    s = map_stmt_children(s, _serial)
    if isinstance(s, For) and s.kind == "parallel":
        return s.replace(kind="serial")
    return s


@dataclass(frozen=True)
class LaunchSerialLoops(PrimFuncPass):
    """Put a marked loop kernel without GPU bindings into a one-thread launch."""

    def transform_function(self, func: PrimFunc) -> PrimFunc:
        if not func.attrs.get(SERIAL_KERNEL_ATTR):
            return func
        if collect(func.body, lambda n: isinstance(n, For) and n.kind == "thread_binding"):
            return func
        body = _serial(func.body)
        for tag in ("threadIdx.x", "blockIdx.x"):
            body = For(loop_var=Var(name=tag.replace(".", "_"), dtype="int32"),
                       min=const(0, "int32"), extent=const(1, "int32"),
                       kind="thread_binding", thread_tag=tag, body=body)
        return func.with_body(body)

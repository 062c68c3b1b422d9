"""ThreadSync: barriers where the threads of a GPU block communicate through memory.

Input: kernels in launch form (after
:class:`~irc.tir.transform.lower_thread_binding.LowerThreadBinding`). Output: the same
kernels with ``T.tvm_storage_sync("shared")`` (``__syncthreads()``) inserted wherever a
thread may access an element that another thread of its block wrote, or write an element
another thread read, since the last barrier.

Algorithm (per kernel): walk the statements in order, keeping the shared- and
global-memory accesses made since the last barrier. Before a statement whose first
accesses conflict with those (same buffer, one of the two a write, and not provably the
same thread's element), insert a barrier. For loops, the accesses at the end of an
iteration are checked against those at the start of the next; a conflict puts a barrier
at the end of the body. Two accesses are the same thread's when their indices are the
same expression, it mentions a thread index, and both run under the same ``axis == 0``
guards; everything else is assumed to cross threads (conservative: an unneeded barrier
costs time, a missing one gives wrong results). ``local`` memory is private to a thread
and never needs a barrier.

Barriers only go where every thread of the block runs (not under a condition on thread
indices or on memory), since a barrier some threads skip deadlocks the block. When a
barrier is needed inside such code, the pass raises a LoweringError naming the buffer:
the schedule must move the communication out of the guarded region.

Preconditions: kernels in launch form; 1-D buffer accesses. Postconditions: every
cross-thread dependence on shared or global memory within a block is ordered by a barrier
that all threads of the block reach.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.diagnostics import LoweringError
from ..analysis.buffer_access import collect_buffer_accesses
from ..analysis.var_use import same_expr, uses_var
from ..expr import EQ, And, Call, IntImm, PrimExpr, StringImm, Var
from ..functor.stmt_util import flat_seq
from ..intrin import call_intrin
from ..stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    DeclBuffer,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
    While,
)
from .base import PrimFuncPass
from .lower_thread_binding import BLOCK_AXES, is_kernel_launch, kernel_launches

_SYNCED_SCOPES = ("shared", "shared.dyn", "global")


def barrier() -> Stmt:
    """``T.tvm_storage_sync("shared")``: all threads of the block wait here."""
    return Evaluate(value=call_intrin("tvm_storage_sync", StringImm(dtype="handle",
                                                                     value="shared")))


def is_barrier(s: Stmt) -> bool:
    """Whether ``s`` is a block-wide barrier."""
    return type(s) is Evaluate and type(s.value) is Call and s.value.op == "tvm_storage_sync"


@dataclass(frozen=True)
class _Access:
    data: Var
    index: PrimExpr
    write: bool
    ctx: frozenset[str]


@dataclass
class _Summary:
    """The accesses of a statement: before its first barrier (``head``), after its last
    (``tail``), and whether it contains a barrier."""

    head: list[_Access]
    tail: list[_Access]
    barrier: bool


class _Kernel:
    def __init__(self, kernel: Stmt, name: str):
        self.name = name
        launches = kernel_launches(kernel)
        self.axis_of: dict[int, str] = {id(a.node.var): tag for tag, a in launches.items()}
        self.thread_vars = frozenset(a.node.var for tag, a in launches.items()
                                     if tag in BLOCK_AXES)
        # The block's axes with more than one thread, and their index variables.
        self.block_axes = {tag: a.node.var for tag, a in launches.items()
                           if tag in BLOCK_AXES and not (type(a.value) is IntImm
                                                          and a.value.value == 1)}

    # -- accesses --------------------------------------------------------------------
    def accesses(self, node, ctx: frozenset[str]) -> list[_Access]:
        out = []
        for a in collect_buffer_accesses(node):
            if a.buffer.scope in _SYNCED_SCOPES:
                index = a.indices[0] if len(a.indices) == 1 else a.indices
                out.append(_Access(a.buffer.data, index, a.kind == "write", ctx))
        return out

    def same_thread(self, a: _Access, b: _Access) -> bool:
        """Whether ``a`` and ``b`` touch an element only one thread touches: the same
        index under the same ``axis == 0`` guards, mentioning every block axis those
        guards leave free (a single thread when they fix them all). In a block of one
        thread (a serial loop kernel's launch) every access is that thread's."""
        if not self.block_axes:
            return True
        if a.ctx != b.ctx or not same_expr(a.index, b.index):
            return False
        free = [v for tag, v in self.block_axes.items() if tag not in a.ctx]
        return all(uses_var(a.index, {v}) for v in free)

    def conflict(self, before: list[_Access], after: list[_Access]) -> _Access | None:
        if not before or not after:
            return None
        by_data: dict[int, list[_Access]] = {}
        for a in before:
            by_data.setdefault(id(a.data), []).append(a)
        for b in after:
            for a in by_data.get(id(b.data), ()):
                if (a.write or b.write) and not self.same_thread(a, b):
                    return b
        return None

    # -- statements ------------------------------------------------------------------
    def once_axes(self, cond: PrimExpr) -> frozenset[str] | None:
        """The axes ``cond`` fixes to 0 when it is a conjunction of ``axis == 0``."""
        out: set[str] = set()
        stack = [cond]
        while stack:
            c = stack.pop()
            if type(c) is And:
                stack += [c.a, c.b]
            elif type(c) is EQ and type(c.a) is Var and id(c.a) in self.axis_of and \
                    type(c.b) is IntImm and c.b.value == 0:
                out.add(self.axis_of[id(c.a)])
            else:
                return None
        return frozenset(out)

    def uniform(self, e: PrimExpr) -> bool:
        """Whether every thread of a block computes the same value of ``e``."""
        return not uses_var(e, self.thread_vars) and not collect_buffer_accesses(e)

    def need_barrier(self, where: Stmt, uniform: bool, hit: _Access) -> None:
        if not uniform:
            raise LoweringError(
                f"{self.name}: threads of a block communicate through "
                f"{hit.data.name!r} inside code that only some of them run, where no "
                "barrier can go", node=where,
                hint="schedule the producer and the consumer as sibling thread loops")

    def visit(self, s: Stmt, uniform: bool, ctx: frozenset[str]) -> tuple[Stmt, _Summary]:
        t = type(s)
        if t is SeqStmt:
            return self.sequence(list(s.seq), uniform, ctx)
        if is_barrier(s):
            if not uniform:
                raise LoweringError(f"{self.name}: a barrier inside code that only some "
                                    "threads of the block run", node=s)
            return s, _Summary([], [], True)
        if t in (For, While):
            return self.loop(s, uniform, ctx)
        if t is IfThenElse:
            inside = uniform and self.uniform(s.condition)
            once = self.once_axes(s.condition)
            inner_ctx = ctx | once if once is not None else ctx
            cond = self.accesses(s.condition, ctx)
            then, ts = self.visit(s.then_case, inside, inner_ctx)
            other, es = (None, _Summary([], [], False)) if s.else_case is None else \
                self.visit(s.else_case, inside, inner_ctx)
            summary = _Summary(cond + ts.head + es.head, ts.tail + es.tail,
                               ts.barrier or es.barrier)
            if not ts.barrier:
                summary.tail = cond + summary.tail
            return s.replace(then_case=then, else_case=other), summary
        if t in (LetStmt, AssertStmt, Allocate, DeclBuffer, AttrStmt):
            head = []
            if t is LetStmt:
                head = self.accesses(s.value, ctx)
            elif t is AssertStmt:
                head = self.accesses(s.condition, ctx)
            body, bs = self.visit(s.body, uniform, ctx)
            tail = bs.tail if bs.barrier else head + bs.tail
            return s.replace(body=body), _Summary(head + bs.head, tail, bs.barrier)
        acc = self.accesses(s, ctx)
        return s, _Summary(acc, acc, False)

    def sequence(self, stmts: list[Stmt], uniform: bool, ctx: frozenset[str]
                 ) -> tuple[Stmt, _Summary]:
        out: list[Stmt] = []
        head: list[_Access] = []
        pending: list[_Access] = []
        seen_barrier = False
        for child in stmts:
            c, sm = self.visit(child, uniform, ctx)
            hit = self.conflict(pending, sm.head)
            if hit is not None:
                self.need_barrier(child, uniform, hit)
                out.append(barrier())
                seen_barrier = True
                pending = []
            out.append(c)
            if not seen_barrier:
                head += sm.head
            if sm.barrier:
                seen_barrier = True
                pending = list(sm.tail)
            else:
                pending += sm.head
        return flat_seq(out), _Summary(head, pending, seen_barrier)

    def loop(self, s: Stmt, uniform: bool, ctx: frozenset[str]) -> tuple[Stmt, _Summary]:
        bounds = [s.condition] if type(s) is While else [s.min, s.extent]
        inside = uniform and all(self.uniform(b) for b in bounds)
        body, bs = self.visit(s.body, inside, ctx)
        hit = self.conflict(bs.tail, bs.head)
        tail = bs.tail
        barrier_inside = bs.barrier
        if hit is not None:
            # What one iteration does last conflicts with what the next does first.
            self.need_barrier(s, inside, hit)
            body = flat_seq([body, barrier()])
            tail, barrier_inside = [], True
        return s.replace(body=body), _Summary(bs.head, tail, barrier_inside)


@dataclass(frozen=True)
class ThreadSync(PrimFuncPass):
    """Insert the barriers the kernels of a function need (see the module docstring)."""

    def transform_function(self, func: PrimFunc) -> PrimFunc:
        name = str(func.attrs.get("global_symbol", "main"))
        changed = [False]

        def host(s: Stmt) -> Stmt:
            if is_kernel_launch(s):
                new, _ = _Kernel(s, name).visit(s, True, frozenset())
                changed[0] = changed[0] or new is not s
                return new
            if type(s) is SeqStmt:
                return flat_seq([host(c) for c in s.seq])
            body = getattr(s, "body", None)
            if isinstance(body, Stmt) and type(s) is not IfThenElse:
                nb = host(body)
                return s if nb is body else s.replace(body=nb)
            if type(s) is IfThenElse:
                then = host(s.then_case)
                other = None if s.else_case is None else host(s.else_case)
                return s.replace(then_case=then, else_case=other)
            return s

        body = host(func.body)
        return func.with_body(body) if changed[0] else func

"""LowerThreadBinding: GPU-scheduled loops become kernels in explicit launch form.

Input: lowered loop IR (after :data:`irc.tir.transform.lower.LOWER_TIR`) in which loops
are bound to GPU axes (``T.thread_binding``). Each outermost thread-bound loop of host
code, with everything inside it, is a **kernel**.

Output (the *kernel form* the CUDA code generator and the reference interpreter run):

- a kernel is a chain of ``thread_extent`` attributes, one per axis it launches
  (``blockIdx.x/y/z``, then ``threadIdx.x/y/z``), each on an ``IterVar`` whose variable
  (``blockIdx_x``, ...) is the block's or thread's index on that axis; the attribute's
  value is the launch extent: the largest extent of the loops bound to that axis (for
  symbolic grid extents, their ``max``);
- a loop bound to an axis is replaced by its body with the loop variable replaced by the
  axis variable (plus the loop's ``min``), under ``if axis < extent`` when its extent is
  not the launch extent;
- ``vthread`` loops become serial loops (virtual threads run inside one thread).

What runs where, irc's execution model for thread-bound loop IR: **a statement runs on
the threads whose index on every axis it is bound to lies in the binding loop's range,
and only on index 0 of the launched axes it is not bound to.** The second half is made
explicit by ``if threadIdx_y == 0``-style guards, so a nest that binds only
``threadIdx.x`` in a block of 10 x 16 threads runs once per ``x``, not 16 times (the
sequential reading of the loops, which the dlight rules and the tuner's sketches are
written for). Guards are pushed down to the largest subtrees that contain no
thread-bound loop, so sibling thread nests stay in code that every thread of the block
runs, where :class:`~irc.tir.transform.thread_sync.ThreadSync` can place barriers
between them. A guard is not pushed past a ``let`` or ``if`` whose value reads memory
(threads outside the range must not read out of bounds).

Preconditions: the function is lowered (no blocks); thread extents are loop-invariant in
the kernel (grid extents may depend on function parameters and shape variables, not on
variables bound inside the kernel); ``parallel`` loops do not occur in kernels.
Postconditions: no ``thread_binding`` loop is left; every kernel is a ``thread_extent``
chain as above; the function computes what the sequential reading of its loops does.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.diagnostics import LoweringError
from ...core.functor import collect
from ...core.structural import structural_equal
from ..analysis.var_use import collect_vars
from ..expr import (
    BufferLoad,
    IntImm,
    IterVar,
    PrimExpr,
    Range,
    Var,
    cast,
    const,
    logical_and,
    max_,
)
from ..functor.stmt_util import map_stmt_children
from ..functor.substitute import substitute
from ..stmt import (
    AttrStmt,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    Stmt,
)
from .base import PrimFuncPass

GRID_AXES = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
BLOCK_AXES = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
LAUNCH_AXES = GRID_AXES + BLOCK_AXES
"""The axes a kernel launches, in the order of the ``thread_extent`` chain."""


def is_kernel_launch(s: Stmt) -> bool:
    """Whether ``s`` is a ``thread_extent`` attribute launching a GPU axis."""
    return (type(s) is AttrStmt and s.key == "thread_extent" and isinstance(s.node, IterVar)
            and s.node.thread_tag in LAUNCH_AXES)


def kernel_launches(kernel: Stmt) -> dict[str, AttrStmt]:
    """The launch attributes of a kernel in kernel form, by axis (first one per axis)."""
    out: dict[str, AttrStmt] = {}
    for s in reversed(collect(kernel, is_kernel_launch)):  # outer launches first
        out.setdefault(s.node.thread_tag, s)
    return out


def is_thread_loop(s: object, axes: tuple[str, ...] = LAUNCH_AXES) -> bool:
    """Whether ``s`` is a loop bound to one of ``axes``."""
    return type(s) is For and s.kind == "thread_binding" and s.thread_tag in axes


def _thread_loops(s: Stmt) -> list[For]:
    """Loops bound to launch axes anywhere under ``s`` (``s`` included)."""
    return collect(s, is_thread_loop)


def _with_thread_loops(root: Stmt) -> set[int]:
    """Ids of the statements under ``root`` (included) that contain a loop bound to a
    launch axis, found in one walk."""
    found: set[int] = set()

    def walk(s: Stmt) -> bool:
        hit = is_thread_loop(s)
        for c in _children(s):
            hit = walk(c) or hit
        if hit:
            found.add(id(s))
        return hit

    walk(root)
    return found


def _children(s: Stmt) -> list[Stmt]:
    out: list[Stmt] = []

    def keep(c: Stmt) -> Stmt:
        out.append(c)
        return c

    map_stmt_children(s, keep)
    return out


def _reads_memory(e: PrimExpr) -> bool:
    return bool(collect(e, lambda x: type(x) is BufferLoad))


def _same(a: PrimExpr, b: PrimExpr) -> bool:
    if type(a) is IntImm and type(b) is IntImm:
        return a.value == b.value
    return structural_equal(a, b)


class _Kernel:
    """Lowers one kernel: the outermost thread-bound loop ``root`` of host code."""

    def __init__(self, root: For, inner_vars: list[Var], name: str):
        self.name = name
        loops = _thread_loops(root)
        self.axis_var: dict[str, Var] = {}
        self.extent: dict[str, PrimExpr] = {}
        inner = {id(v) for v in inner_vars}
        for tag in LAUNCH_AXES:
            mine = [lp for lp in loops if lp.thread_tag == tag]
            if not mine:
                continue
            for lp in mine:
                bad = [v for v in collect_vars(lp.extent) if id(v) in inner]
                if bad:
                    raise LoweringError(
                        f"{name}: the loop {lp.loop_var.name!r} bound to {tag} has the extent "
                        f"{lp.extent}, which depends on {bad[0].name!r}, defined inside the "
                        "kernel; launch extents must be known when the kernel starts",
                        node=lp)
            dtype = mine[0].loop_var.dtype
            ext = mine[0].extent
            for lp in mine[1:]:
                if _same(lp.extent, ext):
                    continue
                if type(ext) is IntImm and type(lp.extent) is IntImm:
                    ext = ext if ext.value >= lp.extent.value else lp.extent
                elif tag in BLOCK_AXES:
                    raise LoweringError(
                        f"{name}: loops bound to {tag} have the extents {ext} and "
                        f"{lp.extent}; a block's thread extents must be constants", node=lp,
                        hint="bind loops with constant extents to threadIdx")
                else:
                    ext = max_(ext, cast(lp.extent, ext.dtype))
            self.axis_var[tag] = Var(name=tag.replace(".", "_"), dtype=dtype)
            self.extent[tag] = ext
        self.threaded = _with_thread_loops(root)
        # Bound loop variables -> axis values, substituted once at the end (substituting
        # while descending would rebuild every subtree and lose the ids in ``threaded``).
        self.axis_of: dict[Var, PrimExpr] = {}

    def lower(self, root: For) -> Stmt:
        body = substitute(self.stmt(root, frozenset(), ()), self.axis_of)
        for tag in reversed(LAUNCH_AXES):
            v = self.axis_var.get(tag)
            if v is None:
                continue
            ext = self.extent[tag]
            iv = IterVar(var=v, dom=Range(min=const(0, ext.dtype), extent=ext),
                         iter_type="spatial", thread_tag=tag)
            body = AttrStmt(node=iv, key="thread_extent", value=ext, body=body)
        return body

    def _unit(self, tag: str) -> bool:
        ext = self.extent[tag]
        return type(ext) is IntImm and ext.value == 1

    def _axis_value(self, loop: For) -> PrimExpr:
        v: PrimExpr = self.axis_var[loop.thread_tag]
        if v.dtype != loop.loop_var.dtype:
            v = cast(v, loop.loop_var.dtype)
        if not (type(loop.min) is IntImm and loop.min.value == 0):
            v = v + loop.min
        return v

    def _guard(self, s: Stmt, conds: tuple[PrimExpr, ...]) -> Stmt:
        if not conds:
            return s
        c = conds[0]
        for x in conds[1:]:
            c = logical_and(c, x)
        return IfThenElse(condition=c, then_case=s)

    def _once(self, bound: frozenset[str]) -> tuple[PrimExpr, ...]:
        """``axis == 0`` for the launched axes ``bound`` does not hold."""
        return tuple(self.axis_var[t] == const(0, self.axis_var[t].dtype)
                     for t in LAUNCH_AXES
                     if t in self.axis_var and t not in bound and not self._unit(t))

    def stmt(self, s: Stmt, bound: frozenset[str], pending: tuple[PrimExpr, ...]) -> Stmt:
        """Lower ``s``, run by the threads bound on the axes in ``bound`` under the guard
        conditions ``pending`` not yet emitted."""
        t = type(s)
        if t is For and s.kind == "thread_binding" and s.thread_tag in LAUNCH_AXES:
            tag = s.thread_tag
            conds = pending
            if not _same(s.extent, self.extent[tag]):
                v = self.axis_var[tag]
                conds = conds + (v < cast(s.extent, v.dtype),)
            self.axis_of[s.loop_var] = self._axis_value(s)
            return self.stmt(s.body, bound | {tag}, conds)
        threaded = id(s) in self.threaded
        if t is For and s.kind == "thread_binding":  # a virtual thread: a serial loop
            s = s.replace(kind="serial", thread_tag="")
        elif t is For and s.kind == "parallel":
            raise LoweringError(f"{self.name}: a parallel loop ({s.loop_var.name!r}) inside a "
                                "GPU kernel", node=s, hint="bind it to a thread axis instead")
        if not threaded or t in (BufferStore, Evaluate):
            return self._guard(s, pending + self._once(bound))
        if (t is LetStmt and _reads_memory(s.value)) or \
                (t is IfThenElse and _reads_memory(s.condition)):
            # Every thread that reaches the value reads it: emit the range guards here.
            inner = map_stmt_children(s, lambda c: self.stmt(c, bound, ()))
            return self._guard(inner, pending)
        return map_stmt_children(s, lambda c: self.stmt(c, bound, pending))


@dataclass(frozen=True)
class LowerThreadBinding(PrimFuncPass):
    """Turn each outermost thread-bound loop nest into a kernel in launch form (see the
    module docstring)."""

    def transform_function(self, func: PrimFunc) -> PrimFunc:
        name = str(func.attrs.get("global_symbol", "main"))
        found = [False]

        def host(s: Stmt) -> Stmt:
            t = type(s)
            if t is For and s.kind == "thread_binding" and s.thread_tag in LAUNCH_AXES:
                found[0] = True
                inner = _vars_defined_in(s)
                return _Kernel(s, inner, name).lower(s)
            if is_kernel_launch(s):
                found[0] = True
                return s
            return map_stmt_children(s, host)

        body = host(func.body)
        if not found[0]:
            return func
        left = collect(body, lambda x: type(x) is For and x.kind == "thread_binding")
        if left:
            raise LoweringError(f"{name}: the loop {left[0].loop_var.name!r} bound to "
                                f"{left[0].thread_tag} is not inside a kernel", node=left[0])
        return func.with_body(body)


def _vars_defined_in(s: Stmt) -> list[Var]:
    """Loop and let variables defined inside ``s`` (``s`` included)."""
    return [x.loop_var if type(x) is For else x.var
            for x in collect(s, lambda x: type(x) in (For, LetStmt))]

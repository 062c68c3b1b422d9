"""Floating-point operations of a loop function (:func:`flop_count`): what the tuner
reports as a task's GFLOPS and the VM's profile as a kernel's.

Scheduled functions count too: a block with a predicate (``T.where``, the partial tile
of a split that does not divide its loop) counts the iterations where the predicate
holds, found by evaluating it over the enclosing loops it depends on (at most
``MAX_PREDICATE_POINTS`` combinations of their values; beyond that, or for a predicate
of other forms, the function's count is unknown)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core import dtype as dt
from .. import expr as E
from .. import stmt as S
from ..stmt import PrimFunc
from .var_use import collect_vars

MAX_PREDICATE_POINTS = 1 << 16


class _Flops:
    """Floating-point operations of a function: for each store, the arithmetic of the
    stored value whose dtype kind matches the stored buffer's (loads, casts and intrinsic
    calls themselves are free; a select counts its costlier side), times the enclosing
    loop extents. This agrees with ``te.ComputeDAG.flop_count`` on te functions."""

    def __init__(self) -> None:
        self.total = 0.0
        self.unknown = False  # a symbolic extent, or a predicate it cannot count
        self.code = "float"
        # The enclosing loops: variable id -> (min, extent).
        self.loops: dict[int, tuple[int, int]] = {}

    def stmt(self, s: Any, trips: float) -> None:
        t = type(s)
        if t is S.SeqStmt:
            for x in s.seq:
                self.stmt(x, trips)
        elif t is S.For:
            ext, lo = s.extent, s.min
            if type(ext) is not E.IntImm:
                self.unknown = True
                return
            self.loops[id(s.loop_var)] = (lo.value if type(lo) is E.IntImm else None,
                                          ext.value)
            self.stmt(s.body, trips * ext.value)
            del self.loops[id(s.loop_var)]
        elif t is S.BlockRealize:
            p = s.predicate
            if not (type(p) is E.IntImm and p.value == 1):
                share = self.holding_share(p)
                if share is None:
                    self.unknown = True
                    return
                trips *= share
            self.stmt(s.block.body, trips)
        elif t is S.Block:
            for child in (s.init, s.body):
                if child is not None:
                    self.stmt(child, trips)
        elif t is S.BufferStore:
            self.code = dt.parse(s.buffer.dtype).code
            self.total += trips * self.expr(s.value)
        elif t is S.IfThenElse:
            self.stmt(s.then_case, trips)
            if s.else_case is not None:
                self.stmt(s.else_case, trips)
        elif t in (S.LetStmt, S.AttrStmt, S.AssertStmt, S.Allocate, S.DeclBuffer, S.While):
            self.stmt(s.body, trips)

    def holding_share(self, pred: Any) -> float | None:
        """The share of the enclosing loops' iterations where ``pred`` holds, or None
        when it depends on something else or on too many of them."""
        vs = collect_vars(pred)
        ranges = [self.loops.get(id(v)) for v in vs]
        if any(r is None or r[0] is None for r in ranges):
            return None
        points = 1
        for _, ext in ranges:
            points *= ext
        if points > MAX_PREDICATE_POINTS:
            return None
        grids = np.meshgrid(*[np.arange(lo, lo + ext) for lo, ext in ranges],
                            indexing="ij", sparse=True)
        env = {id(v): g for v, g in zip(vs, grids)}
        held = _evaluate(pred, env)
        if held is None:
            return None
        return float(np.broadcast_to(held, [ext for _, ext in ranges]).mean())

    def own(self, e: Any) -> float:
        return 1.0 if dt.parse(e.dtype).code == self.code else 0.0

    def expr(self, e: Any) -> float:
        if isinstance(e, (E.BinaryOp, E.CmpOp, E.And, E.Or)):
            return self.own(e) + self.expr(e.a) + self.expr(e.b)
        if isinstance(e, E.Not):
            return self.own(e) + self.expr(e.a)
        if isinstance(e, E.Select):
            return self.expr(e.condition) + max(self.expr(e.true_value),
                                                self.expr(e.false_value))
        if isinstance(e, E.Cast):
            return self.expr(e.value)
        if isinstance(e, E.Call):
            return sum(self.expr(a) for a in e.args)
        if isinstance(e, E.Let):
            return self.expr(e.value) + self.expr(e.body)
        if isinstance(e, (E.Ramp, E.Broadcast)):
            return 0.0
        return 0.0


def flop_count(func: PrimFunc) -> float:
    """Floating-point operations of one call of ``func`` (-1.0 when unknown: a loop
    extent is symbolic, or a predicate cannot be counted; see the module docstring)."""
    f = _Flops()
    f.stmt(func.body, 1.0)
    return -1.0 if f.unknown else f.total


_NUMPY_OPS = {
    E.Add: np.add, E.Sub: np.subtract, E.Mul: np.multiply, E.FloorDiv: np.floor_divide,
    E.FloorMod: np.mod, E.Min: np.minimum, E.Max: np.maximum, E.LT: np.less,
    E.LE: np.less_equal, E.GT: np.greater, E.GE: np.greater_equal, E.EQ: np.equal,
    E.NE: np.not_equal, E.And: np.logical_and, E.Or: np.logical_or,
}


def _evaluate(e: Any, env: dict[int, np.ndarray]) -> Any:
    """``e`` over numpy arrays of its variables' values, or None for other forms."""
    t = type(e)
    if t is E.IntImm:
        return e.value
    if t is E.Var:
        return env.get(id(e))
    if t is E.Not:
        a = _evaluate(e.a, env)
        return None if a is None else np.logical_not(a)
    if t is E.Cast and e.dtype.startswith(("int", "uint", "bool")):
        return _evaluate(e.value, env)
    op = _NUMPY_OPS.get(t)
    if op is None:
        return None
    a, b = _evaluate(e.a, env), _evaluate(e.b, env)
    if a is None or b is None:
        return None
    return op(a, b)

"""VectorizeLoop: turn ``vectorized`` loops into vector expressions and vector stores.

Algorithm: for a ``vectorized`` loop ``for v in [m, m + n)`` with a constant extent
``n >= 2``, the loop variable becomes ``ramp(m, 1, n)`` and the body is rewritten
bottom-up: an expression that depends on ``v`` becomes an ``n``-lane vector (scalar
operands are broadcast), one that does not stays scalar. Loads at vector indices are
vector loads (contiguous when the index is a ramp, gathers otherwise); every store must
land on a ramp index with a nonzero stride and stores an ``n``-lane value. Inner loops
whose bounds do not depend on ``v`` are kept with vectorized bodies, ``if``s with a
scalar condition are kept, and let-bound vector values get vector variables.

The loop falls back to a ``serial`` loop (correct, just not vectorized) when the body
cannot be expressed that way: a non-constant extent, a store whose index does not vary
with ``v`` (a loop-carried reduction such as ``C[i] += A[i, v]``), a store at a gathered
index, a condition or ``if_then_else`` guard that varies with ``v``, an allocation, a
call that is not an elementwise math intrinsic, or a nested vector.
Dependences between iterations through memory (``A[v + 1] = A[v]``) are not checked:
the schedule primitive ``vectorize`` checks them before marking a loop.

Preconditions: FlattenBuffer has run (any rank works, but lowered code is 1-D).
Postconditions: no ``vectorized`` loop remains; vector loads/stores use Ramp indices for
stores and Ramp or general vector indices for loads; no vector ``if_then_else``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core import dtype as dt
from .. import expr as E
from ..analysis.var_use import uses_var
from ..arith import Analyzer
from ..buffer import load
from ..expr import (
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    FloatImm,
    IntImm,
    Let,
    Not,
    PrimExpr,
    Ramp,
    Select,
    StringImm,
    Var,
)
from ..functor.stmt_util import flat_seq, map_stmt_children
from ..stmt import (
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
)
from .base import PrimFuncPass
from .remove_no_op import _PURE_CALLS


class _Fallback(Exception):
    """The loop body cannot be vectorized; the reason is kept for debugging."""


def _lanes(e: PrimExpr) -> int:
    return dt.lanes(e.dtype) if "x" in e.dtype else 1


class _Vectorizer:
    def __init__(self, var: Var, ramp: PrimExpr, lanes: int, an: Analyzer):
        self.var = var
        self.ramp = ramp
        self.lanes = lanes
        self.an = an
        self.vmap: dict[int, PrimExpr] = {id(var): ramp}
        self.memo: dict[int, tuple[PrimExpr, PrimExpr]] = {}

    def bcast(self, e: PrimExpr) -> PrimExpr:
        if _lanes(e) == self.lanes:
            return e
        if _lanes(e) != 1:
            raise _Fallback("mixed vector widths")
        return Broadcast(dtype=dt.with_lanes(e.dtype, self.lanes), value=e, lanes=self.lanes)

    # -- expressions --------------------------------------------------------------------
    def expr(self, e: PrimExpr) -> PrimExpr:
        hit = self.memo.get(id(e))
        if hit is not None:
            return hit[1]
        r = self._expr(e)
        self.memo[id(e)] = (e, r)
        return r

    def _expr(self, e: PrimExpr) -> PrimExpr:
        cls = type(e)
        if cls is Var:
            return self.vmap.get(id(e), e)
        if cls in (IntImm, FloatImm, StringImm):
            return e
        if isinstance(e, (E.BinaryOp, E.CmpOp, E.And, E.Or)):
            a, b = self.expr(e.a), self.expr(e.b)
            if a is e.a and b is e.b:
                return e
            if _lanes(a) == 1 and _lanes(b) == 1:
                return type(e)(dtype=e.dtype, a=a, b=b)
            a, b = self.bcast(a), self.bcast(b)
            return type(e)(dtype=dt.with_lanes(e.dtype, self.lanes), a=a, b=b)
        if cls is Not:
            a = self.expr(e.a)
            return e if a is e.a else Not(dtype=a.dtype, a=a)
        if cls is Cast:
            v = self.expr(e.value)
            if v is e.value:
                return e
            return Cast(dtype=dt.with_lanes(e.dtype, _lanes(v)), value=v)
        if cls is Select:
            c, t, f = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)
            if c is e.condition and t is e.true_value and f is e.false_value:
                return e
            if max(_lanes(c), _lanes(t), _lanes(f)) == 1:
                return Select(dtype=e.dtype, condition=c, true_value=t, false_value=f)
            t, f = self.bcast(t), self.bcast(f)
            return Select(dtype=t.dtype, condition=c if _lanes(c) == 1 else self.bcast(c),
                          true_value=t, false_value=f)
        if cls is BufferLoad:
            idx = tuple(self.expr(i) for i in e.indices)
            if all(a is b for a, b in zip(idx, e.indices)):
                return e
            if any(_lanes(i) > 1 for i in idx):
                idx = tuple(self.an.simplify(i) if _lanes(i) > 1 else i for i in idx)
                return load(e.buffer, idx)
            return BufferLoad(dtype=e.dtype, buffer=e.buffer, indices=idx)
        if cls is Call:
            args = tuple(self.expr(a) for a in e.args)
            if all(a is b for a, b in zip(args, e.args)):
                return e
            if all(_lanes(a) == 1 for a in args):
                return e.replace(args=args)
            if e.op == "if_then_else":
                if _lanes(args[0]) > 1:
                    raise _Fallback("if_then_else guard varies with the vectorized variable")
                t, f = self.bcast(args[1]), self.bcast(args[2])
                return Call(dtype=t.dtype, op=e.op, args=(args[0], t, f))
            if e.op not in _PURE_CALLS:
                raise _Fallback(f"call {e.op} cannot take vectors")
            args = tuple(self.bcast(a) for a in args)
            return Call(dtype=dt.with_lanes(e.dtype, self.lanes), op=e.op, args=args)
        if cls is Let:
            v = self.expr(e.value)
            if _lanes(v) > 1:
                nv = Var(name=e.var.name, dtype=v.dtype)
                self.vmap[id(e.var)] = nv
                return Let(dtype=dt.with_lanes(e.dtype, self.lanes), var=nv, value=v,
                           body=self.bcast(self.expr(e.body)))
            body = self.expr(e.body)
            if v is e.value and body is e.body:
                return e
            return Let(dtype=body.dtype, var=e.var, value=v, body=body)
        if cls in (Ramp, Broadcast):
            if _depends(self, e):
                raise _Fallback("nested vector expression")
            return e
        raise _Fallback(f"cannot vectorize {cls.__name__}")

    # -- statements ---------------------------------------------------------------------
    def stmt(self, s: Stmt) -> Stmt:
        cls = type(s)
        if cls is BufferStore:
            idx = tuple(self.expr(i) for i in s.indices)
            if not any(_lanes(i) > 1 for i in idx):
                raise _Fallback(f"store to {s.buffer.name} does not vary with the loop")
            idx = tuple(self.an.simplify(i) if _lanes(i) > 1 else i for i in idx)
            for i in idx:
                if _lanes(i) > 1 and not (type(i) is Ramp and not _is_zero(i.stride)):
                    raise _Fallback(f"store to {s.buffer.name} at a non-contiguous index")
            value = self.bcast(self.expr(s.value))
            return BufferStore(buffer=s.buffer, value=value, indices=idx)
        if cls is SeqStmt:
            return flat_seq([self.stmt(x) for x in s.seq])
        if cls is For:
            mn, ext = self.expr(s.min), self.expr(s.extent)
            if _lanes(mn) > 1 or _lanes(ext) > 1:
                raise _Fallback("inner loop bounds vary with the vectorized variable")
            return s.replace(min=mn, extent=ext, body=self.stmt(s.body))
        if cls is IfThenElse:
            c = self.expr(s.condition)
            if _lanes(c) > 1:
                raise _Fallback("condition varies with the vectorized variable")
            return IfThenElse(condition=c, then_case=self.stmt(s.then_case),
                              else_case=None if s.else_case is None else self.stmt(s.else_case))
        if cls is LetStmt:
            v = self.expr(s.value)
            var = s.var
            if _lanes(v) > 1:
                var = Var(name=s.var.name, dtype=v.dtype)
                self.vmap[id(s.var)] = var
            return LetStmt(var=var, value=v, body=self.stmt(s.body))
        if cls is Evaluate:
            return Evaluate(value=self.expr(s.value))
        raise _Fallback(f"cannot vectorize a {cls.__name__}")


def _is_zero(e: PrimExpr) -> bool:
    return type(e) is IntImm and e.value == 0


def _depends(vec: _Vectorizer, e: PrimExpr) -> bool:
    return uses_var(e, lambda v: id(v) in vec.vmap)


class _Pass:
    def __init__(self) -> None:
        self.an = Analyzer()

    def visit(self, s: Stmt) -> Stmt:
        s = map_stmt_children(s, self.visit)
        if type(s) is not For or s.kind != "vectorized":
            return s
        ext = s.extent
        if type(ext) is not IntImm or ext.value < 2 or _lanes(s.min) > 1:
            return s.replace(kind="serial")
        lanes = ext.value
        ramp = Ramp(dtype=dt.with_lanes(s.loop_var.dtype, lanes), base=s.min,
                    stride=IntImm(dtype=s.loop_var.dtype, value=1), lanes=lanes)
        try:
            return _Vectorizer(s.loop_var, ramp, lanes, self.an).stmt(s.body)
        except _Fallback:
            return s.replace(kind="serial")


@dataclass(frozen=True)
class VectorizeLoop(PrimFuncPass):
    """Rewrite ``vectorized`` loops as vector code, or make them serial where impossible."""


    def transform_function(self, func: PrimFunc) -> PrimFunc:
        body = _Pass().visit(func.body)
        return func if body is func.body else func.with_body(body)


def vectorize_loop(func: PrimFunc) -> PrimFunc:
    """Functional form of :class:`VectorizeLoop`."""
    return VectorizeLoop()(func)

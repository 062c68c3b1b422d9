"""Vectorize a ``vectorized`` loop in the code generator: the loop variable becomes the
vector ``[min, min+1, ..., min+extent-1]`` and the body is rebuilt on vectors.

Lowering may hand the code generator ``vectorized`` loops that are still loops. LLVM's
loop vectorizer, guided by metadata, handles simple ones, but fails on bodies that read
and write small local buffers inside unrolled micro-kernels — exactly where vector
registers matter most. Rewriting the body with Ramp/Broadcast values (what TVM's
VectorizeLoop pass does during lowering) produces explicit vector loads, stores and
FMAs instead.

Rules: the extent is a constant of at most :data:`MAX_LANES`; the body holds stores,
lets, sequences, conditions and inner loops that do not depend on the loop variable,
and evaluated calls; a store of a lane-dependent value needs a lane-dependent index.
Like every vectorizer, it assumes what ``vectorize`` promises: no iteration reads what
another one writes. Anything else returns None and the caller emits a loop with LLVM
vectorize metadata.
"""

from __future__ import annotations

from ..core import dtype as dt
from ..core.diagnostics import IRCError
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import load

MAX_LANES = 64


class _Cannot(Exception):
    """The body has a construct this vectorizer does not handle."""


_BINARY = {
    E.Add: E.add, E.Sub: E.sub, E.Mul: E.mul, E.Div: E.div, E.Mod: E.truncmod,
    E.FloorDiv: E.floordiv, E.FloorMod: E.floormod, E.Min: E.min_, E.Max: E.max_,
}
_CMP = {E.LT: "__lt__", E.LE: "__le__", E.GT: "__gt__", E.GE: "__ge__"}


def _lanes(e: E.PrimExpr) -> int:
    return dt.lanes(e.dtype)


def _widen(e: E.PrimExpr, lanes: int) -> E.PrimExpr:
    if _lanes(e) == lanes:
        return e
    if _lanes(e) != 1:
        raise _Cannot()
    return E.Broadcast(dtype=dt.with_lanes(e.dtype, lanes), value=e, lanes=lanes)


class _Vectorizer:
    def __init__(self, var: E.Var, start: E.PrimExpr, lanes: int):
        self.lanes = lanes
        self.subst: dict[int, E.PrimExpr] = {
            id(var): E.Ramp(dtype=dt.with_lanes(var.dtype, lanes), base=start,
                            stride=E.const(1, var.dtype), lanes=lanes)}
        self.memo: dict[int, E.PrimExpr] = {}

    # -- expressions ------------------------------------------------------------------
    def expr(self, e: E.PrimExpr) -> E.PrimExpr:
        """``e`` with the loop variable replaced by its vector (memoized)."""
        key = id(e)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        out = self._expr(e)
        self.memo[key] = out
        return out

    def _expr(self, e: E.PrimExpr) -> E.PrimExpr:
        t = type(e)
        if t is E.Var:
            return self.subst.get(id(e), e)
        if t in (E.IntImm, E.FloatImm, E.StringImm):
            return e
        if t in _BINARY:
            a, b = self.expr(e.a), self.expr(e.b)
            if a is e.a and b is e.b:
                return e
            return _BINARY[t](a, b)
        if isinstance(e, E.CmpOp):
            a, b = self.expr(e.a), self.expr(e.b)
            if a is e.a and b is e.b:
                return e
            n = max(_lanes(a), _lanes(b))
            a, b = _widen(a, n), _widen(b, n)
            return t(dtype=dt.with_lanes("bool", n), a=a, b=b)
        if t in (E.And, E.Or):
            a, b = self.expr(e.a), self.expr(e.b)
            if a is e.a and b is e.b:
                return e
            n = max(_lanes(a), _lanes(b))
            return t(dtype=dt.with_lanes("bool", n), a=_widen(a, n), b=_widen(b, n))
        if t is E.Not:
            a = self.expr(e.a)
            return e if a is e.a else E.Not(dtype=a.dtype, a=a)
        if t is E.Cast:
            v = self.expr(e.value)
            if v is e.value:
                return e
            return E.Cast(dtype=dt.with_lanes(e.dtype, _lanes(v)), value=v)
        if t is E.Select:
            c, a, b = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)
            if c is e.condition and a is e.true_value and b is e.false_value:
                return e
            n = max(_lanes(c), _lanes(a), _lanes(b))
            a, b = _widen(a, n), _widen(b, n)
            return E.Select(dtype=a.dtype, condition=c, true_value=a, false_value=b)
        if t is E.Let:
            value = self.expr(e.value)
            var = e.var
            if value is not e.value and _lanes(value) != _lanes(e.value):
                var = E.Var(name=e.var.name, dtype=value.dtype)
                self.subst[id(e.var)] = var
            body = self.expr(e.body)
            if value is e.value and body is e.body:
                return e
            return E.Let(dtype=body.dtype, var=var, value=value, body=body)
        if t is E.BufferLoad:
            idx = tuple(self.expr(i) for i in e.indices)
            if all(a is b for a, b in zip(idx, e.indices)):
                return e
            if dt.lanes(e.buffer.dtype) != 1:
                raise _Cannot()
            return load(e.buffer, idx)
        if t is E.Call:
            args = tuple(self.expr(a) for a in e.args)
            if all(a is b for a, b in zip(args, e.args)):
                return e
            if e.op in ("call_extern", "call_pure_extern", "tvm_storage_sync"):
                raise _Cannot()
            n = max(_lanes(a) for a in args)
            if e.op == "if_then_else":
                c, a, b = args
                args = (c, _widen(a, n), _widen(b, n))
            elif e.op not in ("shift_left", "shift_right", "reinterpret"):
                args = tuple(_widen(a, n) if not isinstance(a, E.StringImm) else a
                             for a in args)
            else:
                args = tuple(_widen(a, n) for a in args)
            return E.Call(dtype=dt.with_lanes(e.dtype, n), op=e.op, args=args)
        # Ramp/Broadcast (already vectors), Reduce, anything unknown.
        raise _Cannot()

    # -- statements -------------------------------------------------------------------------
    def stmt(self, s: S.Stmt) -> S.Stmt:
        """``s`` rebuilt on vectors; raises _Cannot for unsupported statements."""
        t = type(s)
        if t is S.BufferStore:
            value = self.expr(s.value)
            idx = tuple(self.expr(i) for i in s.indices)
            n_idx = max((_lanes(i) for i in idx), default=1)
            if _lanes(value) > 1 and n_idx == 1:
                raise _Cannot()  # lanes would race for one location: a reduction
            return S.BufferStore(buffer=s.buffer, value=value, indices=idx)
        if t is S.SeqStmt:
            return S.SeqStmt(seq=tuple(self.stmt(x) for x in s.seq))
        if t is S.LetStmt:
            value = self.expr(s.value)
            var = s.var
            if _lanes(value) != _lanes(s.value):
                var = E.Var(name=s.var.name, dtype=value.dtype)
                self.subst[id(s.var)] = var
            return S.LetStmt(var=var, value=value, body=self.stmt(s.body))
        if t is S.IfThenElse:
            cond = self.expr(s.condition)
            if _lanes(cond) > 1:
                raise _Cannot()
            return S.IfThenElse(condition=cond, then_case=self.stmt(s.then_case),
                                else_case=None if s.else_case is None
                                else self.stmt(s.else_case))
        if t is S.For:
            if self.expr(s.min) is not s.min or self.expr(s.extent) is not s.extent:
                raise _Cannot()
            if s.kind in ("parallel", "thread_binding"):
                raise _Cannot()
            kind = "serial" if s.kind == "vectorized" else s.kind
            return s.replace(kind=kind, body=self.stmt(s.body))
        if t is S.Evaluate:
            v = self.expr(s.value)
            return s if v is s.value else S.Evaluate(value=v)
        if t is S.AttrStmt:
            return s.replace(body=self.stmt(s.body))
        if t is S.AssertStmt:
            cond = self.expr(s.condition)
            if _lanes(cond) > 1:
                raise _Cannot()
            return s.replace(condition=cond, body=self.stmt(s.body))
        raise _Cannot()


def vectorize_loop(loop: S.For) -> S.Stmt | None:
    """The body of ``loop`` (kind vectorized) rewritten on vectors of ``extent`` lanes, or
    None when the rules in the module docstring do not hold."""
    lanes = E.as_int(loop.extent)
    if lanes is None or not 1 < lanes <= MAX_LANES:
        return None
    if not dt.is_integer(loop.loop_var.dtype):
        return None
    try:
        return _Vectorizer(loop.loop_var, loop.min, lanes).stmt(loop.body)
    except (_Cannot, IRCError):
        # Not vectorizable here (or a vector form the IR rejects): keep the loop.
        return None

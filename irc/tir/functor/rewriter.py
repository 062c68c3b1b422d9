"""A fast copy-on-write rewriter of loop IR (a utility of the passes, not a pass).

The generic :class:`irc.ir.functor.Mutator` walks every dataclass field through
``getattr`` and rebuilds with ``dataclasses.replace``; lowering runs thousands of times
during auto-tuning, so the passes use this class instead: one handler per node class,
direct field access, constructors called directly, expression results memoized per
object (IR is a DAG: a shared subexpression is rewritten once). Subclasses override
``var``, ``buffer``, ``load`` or ``store`` (or any ``stmt_<Class>``) to change things;
nodes whose children did not change are returned as the same objects.
"""

from __future__ import annotations

from typing import Callable

from ...core.functor import Mutator
from .. import expr as E
from ..buffer import Buffer, BufferRegion, MatchBufferRegion
from ..stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    Block,
    BlockRealize,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    While,
)

_BINARY = (E.Add, E.Sub, E.Mul, E.Div, E.Mod, E.FloorDiv, E.FloorMod, E.Min, E.Max,
           E.EQ, E.NE, E.LT, E.LE, E.GT, E.GE, E.And, E.Or)


def _same(new, old) -> bool:
    for a, b in zip(new, old):
        if a is not b:
            return False
    return True


class IRRewriter:
    """Copy-on-write rewriting of statements and expressions; see the module docstring."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[E.PrimExpr, E.PrimExpr]] = {}
        self._buffers: dict[int, tuple[Buffer, Buffer]] = {}
        ed: dict[type, Callable] = {c: self._binary for c in _BINARY}
        ed.update({
            E.IntImm: _leaf, E.FloatImm: _leaf, E.StringImm: _leaf,
            E.Var: self.var, E.Not: self._not, E.Cast: self._cast, E.Select: self._select,
            E.Let: self._let, E.Ramp: self._ramp, E.Broadcast: self._broadcast,
            E.BufferLoad: self._load, E.Call: self._call,
        })
        self._edispatch = ed
        self._sdispatch: dict[type, Callable] = {
            BufferStore: self._store, Evaluate: self.stmt_Evaluate, SeqStmt: self.stmt_SeqStmt,
            For: self.stmt_For, While: self.stmt_While, IfThenElse: self.stmt_IfThenElse,
            LetStmt: self.stmt_LetStmt, AssertStmt: self.stmt_AssertStmt,
            AttrStmt: self.stmt_AttrStmt, Allocate: self.stmt_Allocate,
            DeclBuffer: self.stmt_DeclBuffer, Block: self.stmt_Block,
            BlockRealize: self.stmt_BlockRealize,
        }

    # -- hooks ---------------------------------------------------------------------------
    def var(self, v: E.Var) -> E.PrimExpr:
        """The replacement of a variable use (and definition)."""
        return v

    def buffer(self, b: Buffer) -> Buffer:
        """The replacement of a buffer (memoized per buffer object)."""
        hit = self._buffers.get(id(b))
        if hit is not None:
            return hit[1]
        r = self.rewrite_buffer(b)
        self._buffers[id(b)] = (b, r)
        return r

    def rewrite_buffer(self, b: Buffer) -> Buffer:
        """Rewrite a buffer's data variable and shape (called once per buffer)."""
        data = self.var(b.data)
        shape = tuple(self.expr(s) for s in b.shape)
        strides = tuple(self.expr(s) for s in b.strides)
        off = None if b.elem_offset is None else self.expr(b.elem_offset)
        if data is b.data and _same(shape, b.shape) and _same(strides, b.strides) \
                and off is b.elem_offset:
            return b
        return b.replace(data=data, shape=shape, strides=strides, elem_offset=off)

    def load(self, e: E.BufferLoad, buffer: Buffer, indices: tuple) -> E.PrimExpr:
        """A load with its buffer and indices already rewritten."""
        if buffer is e.buffer and _same(indices, e.indices):
            return e
        return E.BufferLoad(dtype=e.dtype, buffer=buffer, indices=indices)

    def store(self, s: BufferStore, buffer: Buffer, value: E.PrimExpr, indices: tuple) -> Stmt:
        """A store with its buffer, value and indices already rewritten."""
        if buffer is s.buffer and value is s.value and _same(indices, s.indices):
            return s
        return BufferStore(buffer=buffer, value=value, indices=indices)

    # -- entry points --------------------------------------------------------------------
    def expr(self, e: E.PrimExpr) -> E.PrimExpr:
        hit = self._memo.get(id(e))
        if hit is not None:
            return hit[1]
        fn = self._edispatch.get(type(e))
        r = self._fallback(e) if fn is None else fn(e)
        self._memo[id(e)] = (e, r)
        return r

    def stmt(self, s: Stmt) -> Stmt:
        fn = self._sdispatch.get(type(s))
        return self._fallback(s) if fn is None else fn(s)

    def __call__(self, node):
        """Rewrite a statement, expression, region or tuple of them."""
        if isinstance(node, E.PrimExpr):
            return self.expr(node)
        if isinstance(node, Stmt):
            return self.stmt(node)
        if isinstance(node, BufferRegion):
            return self.region(node)
        if isinstance(node, MatchBufferRegion):
            return self.match_buffer(node)
        if isinstance(node, Buffer):
            return self.buffer(node)
        if isinstance(node, tuple):
            new = tuple(self(x) for x in node)
            return node if _same(new, node) else new
        return self._fallback(node)

    def _fallback(self, node):
        """Nodes without a handler (rare): the generic mutator with this rewriter's hooks."""
        outer = self

        class _Generic(Mutator):
            def visit_Var(self, v):
                return outer.var(v)

            def visit_Buffer(self, b):
                return outer.buffer(b)

            def visit_PrimExpr(self, e):
                return outer.expr(e) if type(e) in outer._edispatch else self.generic_visit(e)

            def visit_Stmt(self, s):
                return outer.stmt(s) if type(s) in outer._sdispatch else self.generic_visit(s)

        return _Generic().generic_visit(node)

    # -- expressions ---------------------------------------------------------------------
    def _binary(self, e):
        a, b = self.expr(e.a), self.expr(e.b)
        if a is e.a and b is e.b:
            return e
        return type(e)(dtype=e.dtype, a=a, b=b)

    def _not(self, e):
        a = self.expr(e.a)
        return e if a is e.a else E.Not(dtype=e.dtype, a=a)

    def _cast(self, e):
        v = self.expr(e.value)
        return e if v is e.value else E.Cast(dtype=e.dtype, value=v)

    def _select(self, e):
        c, t, f = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)
        if c is e.condition and t is e.true_value and f is e.false_value:
            return e
        return E.Select(dtype=e.dtype, condition=c, true_value=t, false_value=f)

    def _let(self, e):
        v, val, body = self.var(e.var), self.expr(e.value), self.expr(e.body)
        if v is e.var and val is e.value and body is e.body:
            return e
        return E.Let(dtype=e.dtype, var=v, value=val, body=body)

    def _ramp(self, e):
        b, s = self.expr(e.base), self.expr(e.stride)
        if b is e.base and s is e.stride:
            return e
        return E.Ramp(dtype=e.dtype, base=b, stride=s, lanes=e.lanes)

    def _broadcast(self, e):
        v = self.expr(e.value)
        return e if v is e.value else E.Broadcast(dtype=e.dtype, value=v, lanes=e.lanes)

    def _load(self, e):
        idx = tuple(self.expr(i) for i in e.indices)
        return self.load(e, self.buffer(e.buffer), idx)

    def _call(self, e):
        args = tuple(self.expr(a) for a in e.args)
        return e if _same(args, e.args) else E.Call(dtype=e.dtype, op=e.op, args=args)

    # -- statements -------------------------------------------------------------------------
    def _store(self, s):
        value = self.expr(s.value)
        idx = tuple(self.expr(i) for i in s.indices)
        return self.store(s, self.buffer(s.buffer), value, idx)

    def stmt_Evaluate(self, s):
        v = self.expr(s.value)
        return s if v is s.value else Evaluate(value=v)

    def stmt_SeqStmt(self, s):
        new = tuple(self.stmt(x) for x in s.seq)
        return s if _same(new, s.seq) else SeqStmt(seq=new)

    def stmt_For(self, s):
        v, mn, ext, body = self.var(s.loop_var), self.expr(s.min), self.expr(s.extent), \
            self.stmt(s.body)
        if v is s.loop_var and mn is s.min and ext is s.extent and body is s.body:
            return s
        return s.replace(loop_var=v, min=mn, extent=ext, body=body)

    def stmt_While(self, s):
        c, body = self.expr(s.condition), self.stmt(s.body)
        if c is s.condition and body is s.body:
            return s
        return While(condition=c, body=body)

    def stmt_IfThenElse(self, s):
        c, t = self.expr(s.condition), self.stmt(s.then_case)
        f = None if s.else_case is None else self.stmt(s.else_case)
        if c is s.condition and t is s.then_case and f is s.else_case:
            return s
        return IfThenElse(condition=c, then_case=t, else_case=f)

    def stmt_LetStmt(self, s):
        v, val, body = self.var(s.var), self.expr(s.value), self.stmt(s.body)
        if v is s.var and val is s.value and body is s.body:
            return s
        return LetStmt(var=v, value=val, body=body)

    def stmt_AssertStmt(self, s):
        c, body = self.expr(s.condition), self.stmt(s.body)
        if c is s.condition and body is s.body:
            return s
        return s.replace(condition=c, body=body)

    def stmt_AttrStmt(self, s):
        value = self.expr(s.value) if isinstance(s.value, E.PrimExpr) else s.value
        body = self.stmt(s.body)
        if value is s.value and body is s.body:
            return s
        return s.replace(value=value, body=body)

    def stmt_Allocate(self, s):
        v = self.var(s.buffer_var)
        ext = tuple(self.expr(x) for x in s.extents)
        cond = None if s.condition is None else self.expr(s.condition)
        body = self.stmt(s.body)
        if v is s.buffer_var and _same(ext, s.extents) and cond is s.condition \
                and body is s.body:
            return s
        return s.replace(buffer_var=v, extents=ext, condition=cond, body=body)

    def stmt_DeclBuffer(self, s):
        b, body = self.buffer(s.buffer), self.stmt(s.body)
        if b is s.buffer and body is s.body:
            return s
        return DeclBuffer(buffer=b, body=body)

    def region(self, r: BufferRegion) -> BufferRegion:
        b = self.buffer(r.buffer)
        rng = []
        changed = b is not r.buffer
        for x in r.region:
            mn, ext = self.expr(x.min), self.expr(x.extent)
            if mn is x.min and ext is x.extent:
                rng.append(x)
            else:
                rng.append(E.Range(min=mn, extent=ext))
                changed = True
        return BufferRegion(buffer=b, region=tuple(rng)) if changed else r

    def match_buffer(self, m: MatchBufferRegion) -> MatchBufferRegion:
        b, src = self.buffer(m.buffer), self.region(m.source)
        if b is m.buffer and src is m.source:
            return m
        return MatchBufferRegion(buffer=b, source=src)

    def iter_var(self, iv: E.IterVar) -> E.IterVar:
        v, mn, ext = self.var(iv.var), self.expr(iv.dom.min), self.expr(iv.dom.extent)
        if v is iv.var and mn is iv.dom.min and ext is iv.dom.extent:
            return iv
        return E.IterVar(var=v, dom=E.Range(min=mn, extent=ext), iter_type=iv.iter_type,
                         thread_tag=iv.thread_tag)

    def stmt_Block(self, s: Block):
        ivs = tuple(self.iter_var(iv) for iv in s.iter_vars)
        reads = tuple(self.region(r) for r in s.reads)
        writes = tuple(self.region(r) for r in s.writes)
        allocs = tuple(self.buffer(b) for b in s.alloc_buffers)
        matches = tuple(self.match_buffer(m) for m in s.match_buffers)
        init = None if s.init is None else self.stmt(s.init)
        body = self.stmt(s.body)
        if (_same(ivs, s.iter_vars) and _same(reads, s.reads) and _same(writes, s.writes)
                and _same(allocs, s.alloc_buffers) and _same(matches, s.match_buffers)
                and init is s.init and body is s.body):
            return s
        return s.replace(iter_vars=ivs, reads=reads, writes=writes, alloc_buffers=allocs,
                         match_buffers=matches, init=init, body=body)

    def stmt_BlockRealize(self, s: BlockRealize):
        values = tuple(self.expr(v) for v in s.iter_values)
        pred = self.expr(s.predicate)
        block = self.stmt(s.block)
        if _same(values, s.iter_values) and pred is s.predicate and block is s.block:
            return s
        return BlockRealize(iter_values=values, predicate=pred, block=block)


def _leaf(e):
    return e

"""Simplify: run the arithmetic simplifier over every expression of a function, with
what the statements tell about variables.

Algorithm: a walk that binds each loop variable to its range (``[min, min + extent)``),
each block iteration variable to its domain, each let variable to its value's bound
(trivial lets of constants or variables are substituted away), and assumes the condition
of an ``if`` (and a block realize's predicate) in its then-branch and its negation in the
else-branch. Every expression is simplified under that knowledge. Statements whose
outcome is decided collapse: an ``if`` with a constant condition keeps one branch, an
assertion that holds disappears, a loop with a non-positive constant extent is removed.

Preconditions: none (block form or lowered form).
Postconditions: the same computation; index expressions are in canonical form
(``i*16 + j``), provably true predicates are gone.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..arith import Analyzer, IntervalSet
from ..arith.simplify import SIGNED_INT
from ..buffer import Buffer, BufferRegion
from ..expr import IntImm, IterVar, Not, PrimExpr, Range, Var
from ..functor.stmt_util import flat_seq
from ..functor.substitute import substitute
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
    PrimFunc,
    SeqStmt,
    Stmt,
    While,
    no_op,
)
from .base import PrimFuncPass


class StmtSimplifier:
    """Simplifies statements with an :class:`Analyzer` that follows the scopes."""

    def __init__(self, analyzer: Analyzer | None = None):
        self.an = analyzer or Analyzer()
        self._dispatch = {
            For: self._for,
            SeqStmt: self._seq,
            BufferStore: self._store,
            IfThenElse: self._if,
            LetStmt: self._let,
            Evaluate: self._evaluate,
            Allocate: self._allocate,
            DeclBuffer: self._decl,
            BlockRealize: self._realize,
            AssertStmt: self._assert,
            AttrStmt: self._attr,
            While: self._while,
        }

    def expr(self, e: PrimExpr) -> PrimExpr:
        return self.an.simplify(e)

    def visit(self, s: Stmt) -> Stmt:
        fn = self._dispatch.get(type(s))
        if fn is None:
            return s
        return fn(s)

    # -- statements ---------------------------------------------------------------------
    def _for(self, s: For) -> Stmt:
        mn, ext = self.expr(s.min), self.expr(s.extent)
        if type(ext) is IntImm and ext.value <= 0:
            return no_op()
        if type(mn) is IntImm and type(ext) is IntImm:
            self.an.bind(s.loop_var, Range(min=mn, extent=ext), allow_override=True)
            body = self.visit(s.body)
        else:
            # A symbolic range gives facts (``i <= n - 1``, and ``n > 0`` since the body
            # runs) that hold in the body only: after ``for r in range(1 - k)``, ``k`` is
            # not known to be 0.
            with self.an.constraint(ext > IntImm(dtype=ext.dtype, value=0)):
                self.an.bind(s.loop_var, Range(min=mn, extent=ext), allow_override=True)
                body = self.visit(s.body)
        if mn is s.min and ext is s.extent and body is s.body:
            return s
        return s.replace(min=mn, extent=ext, body=body)

    def _seq(self, s: SeqStmt) -> Stmt:
        new = [self.visit(x) for x in s.seq]
        if all(a is b for a, b in zip(new, s.seq)):
            return s
        return flat_seq(new)

    def _store(self, s: BufferStore) -> Stmt:
        value = self.expr(s.value)
        idx = tuple(self.expr(i) for i in s.indices)
        if value is s.value and all(a is b for a, b in zip(idx, s.indices)):
            return s
        return BufferStore(buffer=s.buffer, value=value, indices=idx)

    def _if(self, s: IfThenElse) -> Stmt:
        cond = self.expr(s.condition)
        if type(cond) is IntImm:
            if cond.value:
                return self.visit(s.then_case)
            return no_op() if s.else_case is None else self.visit(s.else_case)
        with self.an.constraint(cond):
            then = self.visit(s.then_case)
        els = s.else_case
        if els is not None:
            with self.an.constraint(Not(dtype="bool", a=cond)):
                els = self.visit(els)
        if cond is s.condition and then is s.then_case and els is s.else_case:
            return s
        return IfThenElse(condition=cond, then_case=then, else_case=els)

    def _let(self, s: LetStmt) -> Stmt:
        value = self.expr(s.value)
        if type(value) in (IntImm, Var):
            return self.visit(substitute(s.body, {s.var: value}))
        if value.dtype in SIGNED_INT:
            lo, hi = self.an._bound(value)
            self.an.bounds.var_bounds[id(s.var)] = (s.var, lo, hi)
        body = self.visit(s.body)
        if value is s.value and body is s.body:
            return s
        return LetStmt(var=s.var, value=value, body=body)

    def _evaluate(self, s: Evaluate) -> Stmt:
        v = self.expr(s.value)
        return s if v is s.value else Evaluate(value=v)

    def _allocate(self, s: Allocate) -> Stmt:
        extents = tuple(self.expr(e) for e in s.extents)
        cond = None if s.condition is None else self.expr(s.condition)
        body = self.visit(s.body)
        if all(a is b for a, b in zip(extents, s.extents)) and cond is s.condition \
                and body is s.body:
            return s
        return s.replace(extents=extents, condition=cond, body=body)

    def _decl(self, s: DeclBuffer) -> Stmt:
        body = self.visit(s.body)
        return s if body is s.body else DeclBuffer(buffer=s.buffer, body=body)

    def _assert(self, s: AssertStmt) -> Stmt:
        cond = self.expr(s.condition)
        body = self.visit(s.body)
        if type(cond) is IntImm and cond.value:
            return body
        if cond is s.condition and body is s.body:
            return s
        return s.replace(condition=cond, body=body)

    def _attr(self, s: AttrStmt) -> Stmt:
        value = self.expr(s.value) if isinstance(s.value, PrimExpr) else s.value
        if s.key == "thread_extent" and isinstance(s.node, IterVar):
            # A GPU axis index lies in [0, extent) inside its launch.
            self.an.bind(s.node.var, Range(min=s.node.dom.min, extent=value),
                         allow_override=True)
        body = self.visit(s.body)
        if value is s.value and body is s.body:
            return s
        return s.replace(value=value, body=body)

    def _while(self, s: While) -> Stmt:
        cond = self.expr(s.condition)
        if type(cond) is IntImm and not cond.value:
            return no_op()
        body = self.visit(s.body)
        if cond is s.condition and body is s.body:
            return s
        return While(condition=cond, body=body)

    # -- blocks -------------------------------------------------------------------------
    def _realize(self, s: BlockRealize) -> Stmt:
        values = tuple(self.expr(v) for v in s.iter_values)
        pred = self.expr(s.predicate)
        if type(pred) is IntImm and not pred.value:
            return no_op()
        if type(pred) is IntImm:
            block = self._block(s.block)
        else:
            with self.an.constraint(pred):
                block = self._block(s.block)
        if block is s.block and pred is s.predicate and all(
                a is b for a, b in zip(values, s.iter_values)):
            return s
        return BlockRealize(iter_values=values, predicate=pred, block=block)

    def _block(self, b: Block) -> Block:
        ivs = []
        for iv in b.iter_vars:
            dom = Range(min=self.expr(iv.dom.min), extent=self.expr(iv.dom.extent))
            self.an.bind(iv.var, dom, allow_override=True)
            ivs.append(iv if dom.min is iv.dom.min and dom.extent is iv.dom.extent
                       else IterVar(var=iv.var, dom=dom, iter_type=iv.iter_type,
                                    thread_tag=iv.thread_tag))
        reads = tuple(self._region(r) for r in b.reads)
        writes = tuple(self._region(r) for r in b.writes)
        init = None if b.init is None else self.visit(b.init)
        body = self.visit(b.body)
        allocs = tuple(self._buffer(x) for x in b.alloc_buffers)
        return b.replace(iter_vars=_same(ivs, b.iter_vars), reads=_same(reads, b.reads),
                         writes=_same(writes, b.writes), init=init, body=body,
                         alloc_buffers=_same(allocs, b.alloc_buffers))

    def _region(self, r: BufferRegion) -> BufferRegion:
        rs = []
        for rg in r.region:
            mn, ext = self.expr(rg.min), self.expr(rg.extent)
            rs.append(rg if mn is rg.min and ext is rg.extent else Range(min=mn, extent=ext))
        new = tuple(rs)
        if all(a is b for a, b in zip(new, r.region)):
            return r
        return BufferRegion(buffer=r.buffer, region=new)

    def _buffer(self, b: Buffer) -> Buffer:
        return b


def _same(new, old):
    new = tuple(new)
    return old if all(a is b for a, b in zip(new, old)) else new


@dataclass(frozen=True)
class Simplify(PrimFuncPass):
    """Simplify every expression of a function under loop ranges and conditions."""


    def transform_function(self, func: PrimFunc) -> PrimFunc:
        simp = StmtSimplifier()
        # Symbolic buffer dimensions are sizes, never negative.
        for buf in func.buffer_map.values():
            for dim in buf.shape:
                if type(dim) is Var and id(dim) not in simp.an.bounds.var_bounds:
                    simp.an.bind(dim, IntervalSet(IntImm(dtype=dim.dtype, value=0), None))
        body = simp.visit(func.body)
        return func if body is func.body else func.with_body(body)


def simplify(func: PrimFunc) -> PrimFunc:
    """Functional form of :class:`Simplify`."""
    return Simplify()(func)

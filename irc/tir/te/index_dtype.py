"""Rewrite every index of a PrimFunc to one integer dtype (``int64`` for legalization).

Integer variables (loop variables, block variables, symbolic dimensions) take the new
dtype; shapes, indices, loop bounds, block bindings and regions are converted; arithmetic
that mixes the new variables with old constants is rebuilt with consistent operand
dtypes, and values stored into integer buffers are cast back to the buffer's dtype.
"""

from __future__ import annotations

from ...core.diagnostics import IRTypeError
from ...core.functor import Mutator
from ..buffer import Buffer
from ..expr import (
    BinaryOp,
    BufferLoad,
    Call,
    Cast,
    CmpOp,
    IntImm,
    Let,
    PrimExpr,
    Ramp,
    Range,
    Select,
    Var,
    const,
)
from ..stmt import BlockRealize, BufferStore, For, PrimFunc

_INDEX_DTYPES = ("int32", "int64")


class _Normalizer(Mutator):
    def __init__(self, target: str):
        super().__init__()
        self.target = target

    # -- helpers -------------------------------------------------------------------
    def index(self, e: PrimExpr) -> PrimExpr:
        e = self.visit(e)
        if e.dtype == self.target or e.dtype not in _INDEX_DTYPES:
            return e
        if isinstance(e, IntImm):
            return const(e.value, self.target)
        return Cast(dtype=self.target, value=e)

    def unify(self, a: PrimExpr, b: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
        if a.dtype == b.dtype:
            return a, b
        if a.dtype in _INDEX_DTYPES and b.dtype in _INDEX_DTYPES:
            return self._to(a, self.target), self._to(b, self.target)
        return a, b

    @staticmethod
    def _to(e: PrimExpr, dtype: str) -> PrimExpr:
        if e.dtype == dtype:
            return e
        if isinstance(e, IntImm):
            return const(e.value, dtype)
        return Cast(dtype=dtype, value=e)

    # -- expressions ---------------------------------------------------------------
    def visit_Var(self, v: Var) -> Var:
        if v.dtype in _INDEX_DTYPES and v.dtype != self.target:
            return Var(name=v.name, dtype=self.target, span=v.span)
        return v

    def visit_BinaryOp(self, n: BinaryOp) -> PrimExpr:
        a, b = self.unify(self.visit(n.a), self.visit(n.b))
        if a is n.a and b is n.b:
            return n
        return type(n)(dtype=a.dtype, a=a, b=b, span=n.span)

    def visit_CmpOp(self, n: CmpOp) -> PrimExpr:
        a, b = self.unify(self.visit(n.a), self.visit(n.b))
        if a is n.a and b is n.b:
            return n
        return type(n)(dtype=n.dtype, a=a, b=b, span=n.span)

    def visit_Select(self, n: Select) -> PrimExpr:
        c = self.visit(n.condition)
        t, f = self.unify(self.visit(n.true_value), self.visit(n.false_value))
        if c is n.condition and t is n.true_value and f is n.false_value:
            return n
        return Select(dtype=t.dtype, condition=c, true_value=t, false_value=f, span=n.span)

    def visit_Call(self, n: Call) -> PrimExpr:
        args = [self.visit(a) for a in n.args]
        dtype = n.dtype
        if n.op == "if_then_else":
            args[1], args[2] = self.unify(args[1], args[2])
            dtype = args[1].dtype
        elif args and n.dtype in _INDEX_DTYPES and all(a.dtype in _INDEX_DTYPES for a in args):
            if len({a.dtype for a in args}) > 1 or args[0].dtype != n.dtype:
                args = [self._to(a, self.target) for a in args]
                dtype = self.target
        if all(a is b for a, b in zip(args, n.args)) and dtype == n.dtype:
            return n
        return Call(dtype=dtype, op=n.op, args=tuple(args), span=n.span)

    def visit_Cast(self, n: Cast) -> PrimExpr:
        v = self.visit(n.value)
        if v.dtype == n.dtype:
            return v
        return n if v is n.value else Cast(dtype=n.dtype, value=v, span=n.span)

    def visit_Let(self, n: Let) -> PrimExpr:
        var, value, body = self.visit(n.var), self.visit(n.value), self.visit(n.body)
        value = self._to(value, var.dtype) if value.dtype in _INDEX_DTYPES else value
        if var is n.var and value is n.value and body is n.body:
            return n
        return Let(dtype=body.dtype, var=var, value=value, body=body, span=n.span)

    def visit_Ramp(self, n: Ramp) -> PrimExpr:
        base, stride = self.unify(self.visit(n.base), self.visit(n.stride))
        if base is n.base and stride is n.stride:
            return n
        return Ramp(dtype=f"{base.dtype}x{n.lanes}", base=base, stride=stride, lanes=n.lanes)

    def visit_BufferLoad(self, n: BufferLoad) -> PrimExpr:
        buf = self.visit(n.buffer)
        idx = tuple(self.index(i) for i in n.indices)
        if buf is n.buffer and all(a is b for a, b in zip(idx, n.indices)):
            return n
        return n.replace(buffer=buf, indices=idx)

    def visit_Range(self, r: Range) -> Range:
        return r.replace(min=self.index(r.min), extent=self.index(r.extent))

    # -- buffers and statements ----------------------------------------------------
    def visit_Buffer(self, b: Buffer) -> Buffer:
        data = self.visit(b.data)
        shape = tuple(self.index(s) for s in b.shape)
        strides = tuple(self.index(s) for s in b.strides)
        offset = None if b.elem_offset is None else self.index(b.elem_offset)
        return b.replace(data=data, shape=shape, strides=strides, elem_offset=offset)

    def visit_BufferStore(self, n: BufferStore) -> BufferStore:
        buf = self.visit(n.buffer)
        value = self.visit(n.value)
        if value.dtype != buf.dtype and value.dtype in _INDEX_DTYPES:
            value = self._to(value, buf.dtype)
        idx = tuple(self.index(i) for i in n.indices)
        return n.replace(buffer=buf, value=value, indices=idx)

    def visit_For(self, n: For) -> For:
        return n.replace(loop_var=self.visit(n.loop_var), min=self.index(n.min),
                         extent=self.index(n.extent), body=self.visit(n.body))

    def visit_BlockRealize(self, n: BlockRealize) -> BlockRealize:
        return n.replace(iter_values=tuple(self.index(v) for v in n.iter_values),
                         predicate=self.visit(n.predicate), block=self.visit(n.block))


def normalize_index_dtype(func: PrimFunc, dtype: str = "int64") -> PrimFunc:
    """``func`` with every index expression in ``dtype`` (int32 or int64)."""
    if dtype not in _INDEX_DTYPES:
        raise IRTypeError(f"index dtype must be int32 or int64, got {dtype!r}")
    m = _Normalizer(dtype)
    params = tuple(m.visit(p) for p in func.params)
    buffer_map = {m.visit(p): m.visit(b) for p, b in func.buffer_map.items()}
    return func.replace(params=params, buffer_map=buffer_map, body=m.visit(func.body))

"""RemoveNoOp: delete statements that do nothing.

Algorithm: bottom-up, drop ``Evaluate`` of side-effect-free expressions (constants,
variables, arithmetic), stores of a location's own value (``A[i] = A[i]``), loops,
``if``s, lets, allocations and buffer declarations whose bodies became empty, loops whose
extent is a non-positive constant, and flatten sequences.

Preconditions: none.
Postconditions: the same observable computation with no empty statements (a body that
does nothing at all becomes the canonical no-op ``Evaluate(0)``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.var_use import same_expr
from ..expr import BufferLoad, Call, IntImm, PrimExpr, logical_not
from ..functor.stmt_util import flat_seq, map_stmt_children
from ..stmt import (
    Allocate,
    AttrStmt,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
    is_no_op,
    no_op,
)
from .base import PrimFuncPass


def _has_side_effect(e: PrimExpr) -> bool:
    """Calls other than pure math may have effects; everything else is pure."""
    stack = [e]
    while stack:
        x = stack.pop()
        if type(x) is Call:
            if x.op not in _PURE_CALLS:
                return True
            stack.extend(x.args)
            continue
        for f in ("a", "b", "value", "condition", "true_value", "false_value", "base",
                  "stride", "body"):
            v = getattr(x, f, None)
            if isinstance(v, PrimExpr):
                stack.append(v)
        if type(x) is BufferLoad:
            stack.extend(x.indices)
    return False


_PURE_CALLS = frozenset({
    "if_then_else", "exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
    "tanh", "sigmoid", "erf", "pow", "floor", "ceil", "round", "nearbyint", "trunc", "fabs",
    "abs", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "isnan",
    "isinf", "isfinite", "fmod", "likely", "copysign", "popcount", "clz",
})


def _same_location(s: BufferStore) -> bool:
    v = s.value
    return (type(v) is BufferLoad and v.buffer is s.buffer and len(v.indices) == len(s.indices)
            and all(same_expr(a, b) for a, b in zip(v.indices, s.indices)))


class _Remove:
    def visit(self, s: Stmt) -> Stmt:
        cls = type(s)
        if cls is Evaluate:
            return no_op() if not _has_side_effect(s.value) else s
        if cls is BufferStore:
            return no_op() if _same_location(s) else s
        if cls is SeqStmt:
            new = [self.visit(x) for x in s.seq]
            if all(a is b for a, b in zip(new, s.seq)):
                return s
            return flat_seq(new)
        s = map_stmt_children(s, self.visit)
        if cls is For:
            if is_no_op(s.body) or (type(s.extent) is IntImm and s.extent.value <= 0):
                return no_op()
        elif cls is IfThenElse:
            then_empty = is_no_op(s.then_case)
            else_empty = s.else_case is None or is_no_op(s.else_case)
            if then_empty and else_empty:
                return no_op() if not _has_side_effect(s.condition) else Evaluate(
                    value=s.condition)
            if not then_empty and else_empty and s.else_case is not None:
                return IfThenElse(condition=s.condition, then_case=s.then_case)
            if then_empty and not else_empty:
                return IfThenElse(condition=logical_not(s.condition), then_case=s.else_case)
        elif cls in (LetStmt, Allocate, DeclBuffer, AttrStmt):
            if is_no_op(s.body):
                return no_op()
        return s


@dataclass(frozen=True)
class RemoveNoOp(PrimFuncPass):
    """Delete statements without effect."""


    def transform_function(self, func: PrimFunc) -> PrimFunc:
        body = _Remove().visit(func.body)
        return func if body is func.body else func.with_body(body)


def remove_no_op(func: PrimFunc) -> PrimFunc:
    """Functional form of :class:`RemoveNoOp`."""
    return RemoveNoOp()(func)

"""UnrollLoop: expand loops into copies of their bodies.

Algorithm: bottom-up over the loop nest. A loop of kind ``unrolled`` with a constant
extent is always expanded. Under a loop annotated ``pragma_auto_unroll_max_step = N``
(the annotated loop included), a ``serial`` loop with constant extent ``e`` whose body
expands to ``s`` statements is unrolled when ``e * s <= N``: expanded when
``pragma_unroll_explicit`` is true (the default), otherwise only marked ``unrolled`` for
the code generator to unroll. Each copy substitutes the loop variable by
``min + k`` and gets fresh variables for everything its body defines (inner loop and
let variables, allocations), so every variable keeps a single definition; a select or
``if_then_else`` whose condition the substitution makes constant is copied as the branch
it takes. The two pragmas are consumed (removed from the annotations).

Preconditions: none (usually after FlattenBuffer and VectorizeLoop).
Postconditions: no ``unrolled`` loop with a constant extent remains; constant indices
appear where loop variables were (Simplify folds them).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.node import Node, node_fields
from ..arith.fold import COMPARE
from ..arith.int_set import expr_children
from ..expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    And,
    BufferLoad,
    IntImm,
    Not,
    Or,
    PrimExpr,
    Var,
)
from ..functor.stmt_util import flat_seq, map_stmt_children
from ..functor.substitute import Substituter
from ..stmt import (
    Allocate,
    For,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
)
from .base import PrimFuncPass

MAX_STEP_KEY = "pragma_auto_unroll_max_step"
EXPLICIT_KEY = "pragma_unroll_explicit"


def _defined_vars(s: Stmt) -> list[Var]:
    out: list[Var] = []

    def walk(x) -> None:
        t = type(x)
        if t is For:
            out.append(x.loop_var)
        elif t is LetStmt:
            out.append(x.var)
        elif t is Allocate:
            out.append(x.buffer_var)
        if isinstance(x, Stmt):
            for f in ("body", "then_case", "else_case", "init", "block"):
                v = getattr(x, f, None)
                if v is not None:
                    walk(v)
            if t is SeqStmt:
                for y in x.seq:
                    walk(y)

    walk(s)
    return out


_COMPARISONS = (EQ, NE, LT, LE, GT, GE)


def _decided(c: PrimExpr) -> bool | None:
    """The value of a condition made of integer constants (comparisons, and, or, not),
    or None when it depends on anything else."""
    t = type(c)
    if t is IntImm:
        return bool(c.value)
    if t in _COMPARISONS:
        if type(c.a) is IntImm and type(c.b) is IntImm:
            return COMPARE[t.__name__](c.a.value, c.b.value)
        return None
    if t is Not:
        a = _decided(c.a)
        return None if a is None else not a
    if t is And or t is Or:
        a, b = _decided(c.a), _decided(c.b)
        stop = t is Or  # the value that decides the whole: False for and, True for or
        if a is stop or b is stop:
            return stop
        return None if a is None or b is None else not stop
    return None


class _Copier(Substituter):
    """Substitutes only inside expressions known to mention a replaced variable. A
    select (or ``if_then_else``) whose condition becomes constant keeps only the branch
    taken, which is copied alone: a Winograd transform picks one of six sums by its
    unrolled coordinate, and copying the five others would only give Simplify more to
    drop."""

    def __init__(self, vmap: dict[int, object], dirty: set[int]):
        super().__init__(lambda v: vmap.get(id(v)))
        self.dirty = dirty

    def expr(self, e):
        if id(e) not in self.dirty:
            return e
        return super().expr(e)

    def _select(self, e):
        taken = _decided(self.expr(e.condition))
        if taken is None:
            return super()._select(e)
        return self.expr(e.true_value if taken else e.false_value)

    def _call(self, e):
        if e.op == "if_then_else" and len(e.args) == 3:
            taken = _decided(self.expr(e.args[0]))
            if taken is not None:
                return self.expr(e.args[1] if taken else e.args[2])
        return super()._call(e)


def _dirty_exprs(body: Stmt, targets: set[int]) -> set[int]:
    """Ids of the expressions under ``body`` that mention a variable in ``targets`` (or
    load a buffer whose data pointer is one)."""
    dirty: set[int] = set()
    seen: set[int] = set()

    def expr(e: PrimExpr) -> bool:
        if id(e) in seen:
            return id(e) in dirty
        seen.add(id(e))
        if type(e) is Var:
            hit = id(e) in targets
        else:
            hit = False
            for c in expr_children(e):
                if expr(c):
                    hit = True
            if type(e) is BufferLoad and id(e.buffer.data) in targets:
                hit = True
        if hit:
            dirty.add(id(e))
        return hit

    def walk(x) -> None:
        if isinstance(x, PrimExpr):
            expr(x)
        elif isinstance(x, (tuple, list)):
            for y in x:
                walk(y)
        elif isinstance(x, Node):
            for f in node_fields(type(x)):
                if f != "span":
                    walk(getattr(x, f))

    walk(body)
    return dirty


def _copies(s: For) -> list[Stmt]:
    """One copy of the loop body per iteration, each with fresh inner variables."""
    defined = _defined_vars(s.body)
    targets = {id(s.loop_var)} | {id(v) for v in defined}
    dirty = _dirty_exprs(s.body, targets)
    dtype = s.loop_var.dtype
    out = []
    for k in range(s.extent.value):
        vmap: dict[int, object] = {id(s.loop_var): IntImm(dtype=dtype, value=s.min.value + k)}
        for v in defined:
            vmap[id(v)] = Var(name=v.name, dtype=v.dtype)
        out.append(_Copier(vmap, dirty)(s.body))
    return out


def fresh_copy(body: Stmt, replace: dict[Var, PrimExpr]) -> Stmt:
    """A copy of ``body`` with the variables of ``replace`` replaced by their values and
    fresh variables for everything ``body`` defines (loops, lets, allocations), so the
    copy can sit beside the original."""
    defined = _defined_vars(body)
    targets = {id(v) for v in replace} | {id(v) for v in defined}
    vmap: dict[int, object] = {id(v): e for v, e in replace.items()}
    for v in defined:
        vmap[id(v)] = Var(name=v.name, dtype=v.dtype)
    return _Copier(vmap, _dirty_exprs(body, targets))(body)


def _steps(s: Stmt) -> int:
    """Statements the body expands to (a loop counts as its body)."""
    t = type(s)
    if t is SeqStmt:
        return sum(_steps(x) for x in s.seq)
    body = getattr(s, "body", None)
    if isinstance(body, Stmt):
        return _steps(body)
    if hasattr(s, "then_case"):
        return _steps(s.then_case) + (0 if s.else_case is None else _steps(s.else_case))
    return 1


class _Unroll:
    def __init__(self) -> None:
        self.max_step = 0
        self.explicit = True

    def visit(self, s: Stmt) -> Stmt:
        if type(s) is not For:
            return map_stmt_children(s, self.visit)
        saved = (self.max_step, self.explicit)
        ann = s.annotations
        if MAX_STEP_KEY in ann or EXPLICIT_KEY in ann:
            if MAX_STEP_KEY in ann:
                self.max_step = int(ann[MAX_STEP_KEY])
            if EXPLICIT_KEY in ann:
                self.explicit = bool(ann[EXPLICIT_KEY])
            s = s.replace(annotations={k: v for k, v in ann.items()
                                       if k not in (MAX_STEP_KEY, EXPLICIT_KEY)})
        try:
            s = map_stmt_children(s, self.visit)
            return self.unroll(s)
        finally:
            self.max_step, self.explicit = saved

    def unroll(self, s: For) -> Stmt:
        const = type(s.extent) is IntImm and type(s.min) is IntImm
        if s.kind == "unrolled":
            return self.expand(s) if const else s
        if s.kind != "serial" or not const or self.max_step <= 0 or s.annotations:
            return s
        if s.extent.value * _steps(s.body) > self.max_step:
            return s
        return self.expand(s) if self.explicit else s.replace(kind="unrolled")

    def expand(self, s: For) -> Stmt:
        if s.extent.value <= 0:
            return flat_seq([])
        return flat_seq(_copies(s))


@dataclass(frozen=True)
class UnrollLoop(PrimFuncPass):
    """Expand ``unrolled`` loops and loops under ``pragma_auto_unroll_max_step``."""


    def transform_function(self, func: PrimFunc) -> PrimFunc:
        body = _Unroll().visit(func.body)
        return func if body is func.body else func.with_body(body)


def unroll_loop(func: PrimFunc) -> PrimFunc:
    """Functional form of :class:`UnrollLoop`."""
    return UnrollLoop()(func)

"""The expression simplifier: a memoized bottom-up rewrite that combines constant
folding, the canonical form of integer index expressions (``canonical.py``), comparison
proving by bounds, and the rule tables (``rules.py``).

Every expression object is simplified once per analyzer context: results are memoized by
object identity, and results are recorded as their own fixed points, so simplifying an
already simplified tree costs one dictionary lookup per node visited.
"""

from __future__ import annotations

from math import gcd
from typing import TYPE_CHECKING

from ...core import dtype as dt
from .. import expr as E
from ..expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Reduce,
    Select,
    StringImm,
    Sub,
    Var,
)
from .bound import NEG_INF, POS_INF
from .canonical import Lin, add, scale
from .fold import fold_binary, fold_cast, fold_compare, make_const
from .int_set import expr_children
from .rules import (
    FLOAT_RULES,
    IF_THEN_ELSE_RULES,
    INT_ARITH_RULES,
    RULES,
    SIGNED_DIV_RULES,
    VECTOR_RULES,
)

if TYPE_CHECKING:
    from .analyzer import Analyzer

SIGNED_INT = frozenset({"int8", "int16", "int32", "int64"})
_TRUE = IntImm(dtype="bool", value=1)
_FALSE = IntImm(dtype="bool", value=0)
_ARITH = (Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max)
_CMP = (EQ, NE, LT, LE, GT, GE)


def bool_const(v: bool) -> IntImm:
    """The shared bool immediate of ``v``."""
    return _TRUE if v else _FALSE


class Simplifier:
    """Simplifies expressions for an :class:`~irc.tir.arith.analyzer.Analyzer`."""

    def __init__(self, an: Analyzer):
        self.an = an
        self.canon = an.canon
        self.memo: dict[int, tuple[PrimExpr, PrimExpr]] = {}
        self._dispatch = {
            IntImm: _identity,
            FloatImm: _identity,
            StringImm: _identity,
            Var: self._var,
            Add: self._arith,
            Sub: self._arith,
            Mul: self._arith,
            FloorDiv: self._arith,
            FloorMod: self._arith,
            Div: self._arith,
            Mod: self._arith,
            Min: self._minmax,
            Max: self._minmax,
            EQ: self._compare,
            NE: self._compare,
            LT: self._compare,
            LE: self._compare,
            GT: self._compare,
            GE: self._compare,
            And: self._and_or,
            Or: self._and_or,
            Not: self._not,
            Select: self._select,
            Call: self._call,
            Cast: self._cast,
            BufferLoad: self._load,
            Let: self._let,
            Ramp: self._ramp,
            Broadcast: self._broadcast,
            Reduce: self._reduce,
        }

    def clear(self) -> None:
        """Forget memoized results."""
        self.memo = {}

    def simplify(self, e: PrimExpr) -> PrimExpr:
        """The simplified form of ``e``."""
        hit = self.memo.get(id(e))
        if hit is not None:
            return hit[1]
        fn = self._dispatch.get(type(e))
        r = e if fn is None else fn(e)
        self.memo[id(e)] = (e, r)
        if r is not e:
            self.memo[id(r)] = (r, r)
        return r

    # -- leaves -----------------------------------------------------------------------
    def _var(self, e: Var) -> PrimExpr:
        sub = self.an.var_subst.get(id(e))
        if sub is not None:
            return self.simplify(sub[1])
        if e.dtype in SIGNED_INT:
            lo, hi = self.an.bounds.bound(e)
            if lo == hi:
                return make_const(int(lo), e.dtype)
        return e

    # -- arithmetic -------------------------------------------------------------------
    def _arith(self, e: PrimExpr) -> PrimExpr:
        if e.dtype in SIGNED_INT:
            lin = self.canon.lin_of(e)
            r = self.canon.to_expr(lin)
            self.canon.memo[id(r)] = (r, lin)
            return r
        a, b = self.simplify(e.a), self.simplify(e.b)
        node = e if (a is e.a and b is e.b) else type(e)(dtype=e.dtype, a=a, b=b)
        return self.rewrite(node)

    def _minmax(self, e: PrimExpr) -> PrimExpr:
        a, b = self.simplify(e.a), self.simplify(e.b)
        node = e if (a is e.a and b is e.b) else type(e)(dtype=e.dtype, a=a, b=b)
        return self.rewrite(node)

    def rewrite(self, e: PrimExpr) -> PrimExpr:
        """Fold constants and apply the rule table to ``e`` (children already simple)."""
        cls = type(e)
        if cls in _ARITH:
            folded = fold_binary(cls.__name__, e.a, e.b) if cls is not Min and cls is not Max \
                else _fold_minmax(e)
            if folded is not None:
                return folded
        rules = self._rules_for(e)
        if rules:
            an = self.an
            for r in rules:
                out = r.apply(e, an)
                if out is not None:
                    if not isinstance(out, PrimExpr):
                        out = E.const(out, e.dtype)
                    return self.simplify(out)
        return e

    def _rules_for(self, e: PrimExpr):
        cls = type(e)
        dtype = e.dtype
        lanes = dt.lanes(dtype) if "x" in dtype else 1
        if lanes > 1:
            vr = VECTOR_RULES.get(cls)
            base = RULES.get(cls)
            if vr and base:
                return vr + base
            return vr or base
        if cls is Call:
            return IF_THEN_ELSE_RULES if e.op == "if_then_else" else None
        rules = RULES.get(cls)
        if rules is not None:
            return rules
        if dtype in SIGNED_INT:
            return SIGNED_DIV_RULES.get(cls)
        if dt.is_float(dtype):
            return FLOAT_RULES.get(cls)
        if dt.is_integer(dtype):
            return INT_ARITH_RULES.get(cls)
        return None

    # -- comparisons --------------------------------------------------------------------
    def _compare(self, e: PrimExpr) -> PrimExpr:
        a, b = self.simplify(e.a), self.simplify(e.b)
        cls = type(e)
        if a.dtype in SIGNED_INT:
            return self.compare_int(cls, a, b)
        folded = fold_compare(cls.__name__, a, b)
        if folded is not None:
            return folded
        node = e if (a is e.a and b is e.b) else cls(dtype=e.dtype, a=a, b=b)
        if dt.lanes(a.dtype) > 1 and type(a) is Broadcast and type(b) is Broadcast:
            inner = self.simplify(cls(dtype="bool", a=a.value, b=b.value))
            return Broadcast(dtype=e.dtype, value=inner, lanes=a.lanes)
        return self.rewrite(node)

    def compare_int(self, cls: type, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        """Decide ``a <op> b`` on signed integers by the bounds of ``a - b``; when it cannot
        be decided, return it normalized (``pos terms <op> neg terms + const``, GT/GE
        turned around into LT/LE, common factors divided out)."""
        canon = self.canon
        la, lb = canon.lin_of(a), canon.lin_of(b)
        if cls is GT or cls is GE:
            diff = add(lb, scale(la, -1))
            cls = LT if cls is GT else LE
        else:
            diff = add(la, scale(lb, -1))
        diff = canon.normalize(diff)
        lo, hi = canon.bound(diff)
        if cls is LT:
            if hi < 0:
                return _TRUE
            if lo >= 0:
                return _FALSE
        elif cls is LE:
            if hi <= 0:
                return _TRUE
            if lo > 0:
                return _FALSE
        elif cls is EQ:
            if lo == hi == 0:
                return _TRUE
            if lo > 0 or hi < 0:
                return _FALSE
        else:  # NE
            if lo == hi == 0:
                return _FALSE
            if lo > 0 or hi < 0:
                return _TRUE
        return self._normal_compare(cls, diff)

    def _normal_compare(self, cls: type, diff: Lin) -> PrimExpr:
        """``diff <op> 0`` printed with positive terms on the left."""
        g = 0
        for c, _ in diff.terms.values():
            g = gcd(g, c)
        const = diff.const
        if g > 1:
            if cls is LT:  # g*N + c < 0  <=>  N + c // g < 0
                const = const // g
            elif cls is LE:  # g*N + c <= 0  <=>  N - (-c) // g <= 0
                const = -((-const) // g)
            else:
                if const % g:
                    return _FALSE if cls is EQ else _TRUE
                const //= g
            diff = Lin(diff.dtype, const, {k: (c // g, ex) for k, (c, ex) in diff.terms.items()},
                       normal=True)
        pos = {k: v for k, v in diff.terms.items() if v[0] > 0}
        neg = {k: (-c, ex) for k, (c, ex) in diff.terms.items() if c < 0}
        dtype = diff.dtype
        if (cls is EQ or cls is NE) and not pos:
            pos, neg, const = neg, {}, -const
        to_expr = self.canon.to_expr
        if pos:
            lhs = to_expr(Lin(dtype, 0, pos, normal=True))
            rhs = to_expr(Lin(dtype, -const, neg, normal=True))
        else:
            lhs = to_expr(Lin(dtype, const))
            rhs = to_expr(Lin(dtype, 0, neg, normal=True))
        return cls(dtype="bool", a=lhs, b=rhs)

    # -- logic --------------------------------------------------------------------------
    def _and_or(self, e: PrimExpr) -> PrimExpr:
        a = self.simplify(e.a)
        is_and = type(e) is And
        if type(a) is IntImm:
            if bool(a.value) != is_and:  # false && _ / true || _
                return a if dt.lanes(e.dtype) == 1 else E.const(bool(a.value), e.dtype)
            return self.simplify(e.b)
        b = self.simplify(e.b)
        if type(b) is IntImm:
            return b if bool(b.value) != is_and else a
        node = e if (a is e.a and b is e.b) else type(e)(dtype=e.dtype, a=a, b=b)
        return self.rewrite(node)

    def _not(self, e: Not) -> PrimExpr:
        a = self.simplify(e.a)
        if type(a) is IntImm:
            return bool_const(not a.value)
        node = e if a is e.a else Not(dtype=e.dtype, a=a)
        return self.rewrite(node)

    def _select(self, e: Select) -> PrimExpr:
        c = self.simplify(e.condition)
        if type(c) is IntImm:
            return self.simplify(e.true_value if c.value else e.false_value)
        t, f = self.simplify(e.true_value), self.simplify(e.false_value)
        if c is e.condition and t is e.true_value and f is e.false_value:
            node = e
        else:
            node = Select(dtype=e.dtype, condition=c, true_value=t, false_value=f)
        return self.rewrite(node)

    def _call(self, e: Call) -> PrimExpr:
        if e.op == "if_then_else" and len(e.args) == 3:
            c = self.simplify(e.args[0])
            if type(c) is IntImm:
                return self.simplify(e.args[1] if c.value else e.args[2])
            args = (c, self.simplify(e.args[1]), self.simplify(e.args[2]))
        else:
            args = tuple(self.simplify(x) for x in e.args)
        node = e if all(x is y for x, y in zip(args, e.args)) else e.replace(args=args)
        return self.rewrite(node)

    def _cast(self, e: Cast) -> PrimExpr:
        v = self.simplify(e.value)
        if v.dtype == e.dtype:
            return v
        folded = fold_cast(v, e.dtype)
        if folded is not None:
            return folded
        node = e if v is e.value else Cast(dtype=e.dtype, value=v)
        return self.rewrite(node)

    def _load(self, e: BufferLoad) -> PrimExpr:
        idx = tuple(self.simplify(i) for i in e.indices)
        if all(x is y for x, y in zip(idx, e.indices)):
            return e
        return BufferLoad(dtype=e.dtype, buffer=e.buffer, indices=idx)

    def _let(self, e: Let) -> PrimExpr:
        v = self.simplify(e.value)
        an = self.an
        if type(v) in (IntImm, FloatImm, Var):
            an.var_subst[id(e.var)] = (e.var, v)
            return self.simplify(e.body)
        if v.dtype in SIGNED_INT:
            lo, hi = an.bounds.bound(v)
            an.bounds.var_bounds[id(e.var)] = (e.var, lo, hi)
        body = self.simplify(e.body)
        if not _mentions(body, e.var):
            return body
        if v is e.value and body is e.body:
            return e
        return Let(dtype=e.dtype, var=e.var, value=v, body=body)

    def _ramp(self, e: Ramp) -> PrimExpr:
        b, s = self.simplify(e.base), self.simplify(e.stride)
        node = e if (b is e.base and s is e.stride) else Ramp(dtype=e.dtype, base=b, stride=s,
                                                              lanes=e.lanes)
        return self.rewrite(node)

    def _broadcast(self, e: Broadcast) -> PrimExpr:
        v = self.simplify(e.value)
        return e if v is e.value else Broadcast(dtype=e.dtype, value=v, lanes=e.lanes)

    def _reduce(self, e: Reduce) -> PrimExpr:
        src = self.simplify(e.source)
        cond = None if e.condition is None else self.simplify(e.condition)
        init = None if e.init is None else self.simplify(e.init)
        return e.replace(source=src, condition=cond, init=init)


def _identity(e: PrimExpr) -> PrimExpr:
    return e


def _fold_minmax(e: PrimExpr) -> PrimExpr | None:
    return fold_binary(type(e).__name__, e.a, e.b)


def _mentions(e: PrimExpr, v: Var) -> bool:
    stack = [e]
    seen: set[int] = set()
    while stack:
        x = stack.pop()
        if x is v:
            return True
        if id(x) in seen:
            continue
        seen.add(id(x))
        stack.extend(expr_children(x))
    return False


__all__ = ["Simplifier", "SIGNED_INT", "bool_const", "NEG_INF", "POS_INF"]

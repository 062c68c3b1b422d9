"""The arithmetic analyzer: one object that knows variable ranges and assumed facts, and
answers questions about integer expressions (simplify, bounds, proofs, intervals,
alignment).

Example::

    an = Analyzer()
    an.bind(i, Range.from_min_extent(0, 64))
    an.bind(j, Range.from_min_extent(0, 16))
    an.simplify((i * 16 + j) // 16)          # i
    an.can_prove(i * 16 + j < 1024)          # True
    with an.constraint(k < 10):
        an.can_prove(k < 20)                 # True

Results are memoized per expression object; binding a variable that was already used,
or entering/leaving a ``constraint``, starts fresh memo tables, so answers always reflect
the current knowledge. Variables are expected to be bound once (every loop has its own
variable); rebinding needs ``allow_override=True``.
"""

from __future__ import annotations

import contextlib
from typing import Iterator, Mapping, Union

from ...core.diagnostics import IRCError
from ..expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    And,
    FloorMod,
    IntImm,
    PrimExpr,
    Range,
    Var,
    convert,
)
from .bound import (
    NEG_INF,
    POS_INF,
    BoundAnalyzer,
    ConstIntBound,
    iv_add,
    iv_intersect,
    iv_scale,
)
from .canonical import Canonicalizer, Lin, add, normalized_terms, scale
from .int_set import IntervalSet, IntSetEvaluator
from .keys import ExprKeys
from .modular import ModularAnalyzer, ModularSet
from .simplify import SIGNED_INT, Simplifier

Bindable = Union[Range, IntervalSet, PrimExpr, int]


class Analyzer:
    """Arithmetic knowledge about a scope of loop IR; see the module docstring."""

    def __init__(self) -> None:
        self.keys = ExprKeys()
        self.bounds = BoundAnalyzer()
        self.modular = ModularAnalyzer()
        self.canon = Canonicalizer(self)
        self.simplifier = Simplifier(self)
        self.var_subst: dict[int, tuple[Var, PrimExpr]] = {}
        # normalized linear form (sorted (atom key, coef) pairs) -> (lo, hi) of that form
        self.facts: dict[tuple, tuple] = {}
        self._bound_log: list[int] = []  # ids of variables bound by ``bind``, in order

    # -- knowledge ------------------------------------------------------------------------
    def bind(self, var: Var, value: Bindable, allow_override: bool = False) -> None:
        """Declare that ``var`` ranges over ``value`` (a Range or IntervalSet) or equals it
        (an expression or int)."""
        known = id(var) in self.bounds.var_bounds or id(var) in self.var_subst
        if known and not allow_override:
            old = self.bounds.var_bounds.get(id(var))
            if not (isinstance(value, Range) and old is not None
                    and self._same_range(var, value)):
                raise IRCError(f"variable {var.name} is bound twice; every loop or let needs "
                               "its own variable (pass allow_override=True to rebind)",
                               node=var)
            return
        if known or id(var) in self.bounds.seen_unbound:
            self._reset_memos()
        self._bound_log.append(id(var))
        if isinstance(value, (int, bool)):
            value = IntImm(dtype=var.dtype, value=int(value))
        if isinstance(value, Range):
            self._bind_range(var, value.min, value.min + value.extent - 1, value.extent)
        elif isinstance(value, IntervalSet):
            self._bind_range(var, value.min_value, value.max_value, None)
        elif isinstance(value, PrimExpr):
            value = self.simplify(value)
            self.var_subst[id(var)] = (var, value)
            if value.dtype in SIGNED_INT:
                lo, hi = self._bound(value)
                self.bounds.var_bounds[id(var)] = (var, lo, hi)
        else:
            raise IRCError(f"cannot bind {var.name} to a {type(value).__name__}; use a Range, "
                           "an IntervalSet or an expression")

    def _same_range(self, var: Var, r: Range) -> bool:
        lo, hi = self.bounds.var_bounds[id(var)][1:]
        mn, ext = self.simplify(r.min), self.simplify(r.extent)
        return (type(mn) is IntImm and type(ext) is IntImm and lo == mn.value
                and hi == mn.value + ext.value - 1)

    def _bind_range(self, var: Var, lo_e: PrimExpr | None, hi_e: PrimExpr | None,
                    extent: PrimExpr | None) -> None:
        lo = NEG_INF if lo_e is None else self._bound(lo_e)[0]
        hi = POS_INF if hi_e is None else self._bound(hi_e)[1]
        if var.dtype not in SIGNED_INT:
            self.bounds.var_bounds[id(var)] = (var, lo, hi)
            return
        self.bounds.var_bounds[id(var)] = (var, lo, hi)
        # Symbolic ends (loops over a symbolic extent) become facts, so ``i < n`` is
        # provable inside ``for i in range(n)``.
        if lo_e is not None and type(self.simplify(lo_e)) is not IntImm:
            self._assume_cmp(LE, lo_e, var)
        if hi_e is not None and type(self.simplify(hi_e)) is not IntImm:
            self._assume_cmp(LE, var, hi_e)

    @contextlib.contextmanager
    def constraint(self, cond: PrimExpr) -> Iterator[None]:
        """Within the ``with`` block, assume ``cond`` holds."""
        saved = (self.simplifier.memo, self.canon.memo, self.bounds.memo, self.modular.memo,
                 dict(self.bounds.var_bounds), dict(self.facts), dict(self.modular.var_info),
                 self.bounds.refine)
        log_start = len(self._bound_log)
        self._reset_memos()
        try:
            self._assume(convert(cond, "bool"))
            self._reset_memos()
            yield
        finally:
            (self.simplifier.memo, self.canon.memo, self.bounds.memo, self.modular.memo,
             var_bounds, self.facts, self.modular.var_info, self.bounds.refine) = saved
            # Keep bindings made inside the block (new loop variables), drop refinements.
            inner = self.bounds.var_bounds
            for k in self._bound_log[log_start:]:
                if k in inner:
                    var_bounds[k] = inner[k]
            self.bounds.var_bounds = var_bounds

    def _reset_memos(self) -> None:
        self.simplifier.memo = {}
        self.canon.memo = {}
        self.bounds.memo = {}
        self.modular.memo = {}

    def _assume(self, cond: PrimExpr) -> None:
        if type(cond) is And:
            self._assume(cond.a)
            self._assume(cond.b)
            return
        if type(cond) is EQ and type(cond.a) is FloorMod and type(cond.a.a) is Var \
                and type(cond.a.b) is IntImm and type(cond.b) is IntImm and cond.a.b.value > 0:
            v = cond.a.a
            self.modular.var_info[id(v)] = (v, ModularSet.make(cond.a.b.value, cond.b.value))
        cond = self.simplify(cond)
        if type(cond) is And:
            self._assume(cond.a)
            self._assume(cond.b)
        elif type(cond) in (LT, LE, GT, GE, EQ) and cond.a.dtype in SIGNED_INT:
            self._assume_cmp(type(cond), cond.a, cond.b)

    def _assume_cmp(self, cls: type, a: PrimExpr, b: PrimExpr) -> None:
        """Record ``a <cls> b`` as a bound on the normalized form of ``a - b``."""
        canon = self.canon
        la, lb = canon.lin_of(self.simplify(a)), canon.lin_of(self.simplify(b))
        if cls is GT or cls is GE:
            la, lb = lb, la
            cls = LT if cls is GT else LE
        diff = canon.normalize(add(la, scale(lb, -1)))
        norm = normalized_terms(diff)
        if norm is None:
            return
        pairs, s, c = norm
        # s*N + c in `limit`  =>  N in (limit - c) / s
        limit = {LT: (NEG_INF, -1), LE: (NEG_INF, 0), EQ: (0, 0)}[cls]
        lo, hi = limit[0] - c, limit[1] - c
        if s < 0:
            lo, hi, s = -hi, -lo, -s
        lo = NEG_INF if lo == NEG_INF else -((-lo) // s)  # ceil
        hi = POS_INF if hi == POS_INF else hi // s
        if len(pairs) == 1 and pairs[0][1] == 1:
            atom = diff.terms[pairs[0][0]][1]
            if type(atom) is Var:
                old = self.bounds.var_bounds.get(id(atom))
                cur = (old[1], old[2]) if old is not None else self.bounds.bound(atom)
                new = iv_intersect(cur, (lo, hi))
                self.bounds.var_bounds[id(atom)] = (atom, new[0], new[1])
                self._reset_memos()
                return
        old = self.facts.get(pairs)
        self.facts[pairs] = (lo, hi) if old is None else iv_intersect(old, (lo, hi))
        self.bounds.refine = self._refine
        self._reset_memos()

    def fact_bound(self, x: Lin) -> tuple | None:
        """The bound the assumed facts give a linear form, or None."""
        norm = normalized_terms(x)
        if norm is None:
            return None
        pairs, s, c = norm
        fact = self.facts.get(pairs)
        if fact is None:
            return None
        return iv_add(iv_scale(fact, s), (c, c))

    def _refine(self, e: PrimExpr, r: tuple) -> tuple:
        if e.dtype in SIGNED_INT and type(e) is not IntImm:
            fact = self.facts.get(((self.keys.key(e), 1),))
            if fact is not None:
                return iv_intersect(r, fact)
        return r

    # -- questions ------------------------------------------------------------------------
    def simplify(self, expr: PrimExpr | int) -> PrimExpr:
        """``expr`` simplified under the current bindings and constraints."""
        return self.simplifier.simplify(convert(expr))

    def rewrite(self, expr: PrimExpr) -> PrimExpr:
        """Apply folding and the rule table to ``expr`` whose children are simplified."""
        return self.simplifier.rewrite(expr)

    def _bound(self, e: PrimExpr) -> tuple:
        if e.dtype in SIGNED_INT:
            canon = self.canon
            return canon.bound(canon.lin_of(self.simplify(e)))
        return self.bounds.bound(self.simplify(e))

    def const_int_bound(self, expr: PrimExpr | int) -> ConstIntBound:
        """Constant bounds of an integer expression (ends may be ``ConstIntBound.NEG_INF``
        / ``POS_INF``)."""
        lo, hi = self._bound(convert(expr))
        return ConstIntBound(lo, hi)

    def can_prove(self, cond: PrimExpr | bool) -> bool:
        """True when ``cond`` holds for every value of its variables (False means "not
        proven", not "false")."""
        c = self.simplify(convert(cond, "bool"))
        if type(c) is IntImm:
            return c.value == 1
        value = getattr(c, "value", None)  # a broadcast of a constant
        return type(value) is IntImm and value.value == 1

    def can_prove_equal(self, a: PrimExpr | int, b: PrimExpr | int) -> bool:
        """True when ``a == b`` always."""
        a, b = convert(a), convert(b, a.dtype if isinstance(a, PrimExpr) else None)
        if a.dtype in SIGNED_INT and b.dtype == a.dtype:
            return self._diff_bound(a, b) == (0, 0)
        sa, sb = self.simplify(a), self.simplify(b)
        return sa is sb or self.keys.key(sa) == self.keys.key(sb)

    def _diff_bound(self, a: PrimExpr, b: PrimExpr) -> tuple:
        canon = self.canon
        diff = canon.normalize(add(canon.lin_of(self.simplify(a)),
                                   scale(canon.lin_of(self.simplify(b)), -1)))
        return canon.bound(diff)

    def prove_le(self, a: PrimExpr, b: PrimExpr) -> bool:
        """``a <= b`` always (integers; other dtypes only when identical)."""
        if a.dtype in SIGNED_INT and b.dtype == a.dtype:
            return self._diff_bound(a, b)[1] <= 0
        return a is b or self.keys.key(a) == self.keys.key(b)

    def prove_lt(self, a: PrimExpr, b: PrimExpr) -> bool:
        """``a < b`` always (signed integers)."""
        if a.dtype in SIGNED_INT and b.dtype == a.dtype:
            return self._diff_bound(a, b)[1] < 0
        return False

    def prove_nonneg(self, a: PrimExpr) -> bool:
        """``a >= 0`` always (integers)."""
        return self._bound(a)[0] >= 0 if _is_int(a) else False

    def prove_pos(self, a: PrimExpr) -> bool:
        """``a > 0`` always (integers)."""
        return self._bound(a)[0] > 0 if _is_int(a) else False

    def prove_nonzero(self, a: PrimExpr) -> bool:
        """``a != 0`` always (integers)."""
        if not _is_int(a):
            return False
        lo, hi = self._bound(a)
        return lo > 0 or hi < 0

    def implies(self, p: PrimExpr, q: PrimExpr) -> bool:
        """Cheap check that condition ``p`` implies ``q``: identical, or both integer
        comparisons of one linear form with ``p``'s range inside ``q``'s."""
        if p is q or self.keys.key(p) == self.keys.key(q):
            return True
        rp, rq = self._cmp_range(p), self._cmp_range(q)
        if rp is None or rq is None or rp[0] != rq[0]:
            return False
        (lo_p, hi_p), (lo_q, hi_q) = rp[1], rq[1]
        return lo_q <= lo_p and hi_p <= hi_q

    def _cmp_range(self, c: PrimExpr):
        """``(normalized form, (lo, hi))`` such that comparison ``c`` means N in [lo, hi]."""
        cls = type(c)
        if cls not in (LT, LE, EQ) or c.a.dtype not in SIGNED_INT:
            return None
        canon = self.canon
        diff = canon.normalize(add(canon.lin_of(c.a), scale(canon.lin_of(c.b), -1)))
        norm = normalized_terms(diff)
        if norm is None:
            return None
        pairs, s, k = norm
        limit = {LT: (NEG_INF, -1), LE: (NEG_INF, 0), EQ: (0, 0)}[cls]
        lo, hi = limit[0] - k, limit[1] - k
        if s < 0:
            lo, hi, s = -hi, -lo, -s
        lo = NEG_INF if lo == NEG_INF else -((-lo) // s)
        hi = POS_INF if hi == POS_INF else hi // s
        return pairs, (lo, hi)

    def int_set(self, expr: PrimExpr, dom_map: Mapping[Var, object] | None = None) -> IntervalSet:
        """The interval ``expr`` covers when each variable of ``dom_map`` ranges over its
        IntervalSet / Range (other variables stay symbolic)."""
        return IntSetEvaluator(self, dom_map or {}).eval(convert(expr))

    def modular_set(self, expr: PrimExpr | int) -> ModularSet:
        """``coeff``/``base`` such that ``expr % coeff == base`` always."""
        return self.modular.modular_set(self.simplify(expr))


def _is_int(e: PrimExpr) -> bool:
    return e.dtype in SIGNED_INT or e.dtype.startswith("uint") or e.dtype.startswith("int")

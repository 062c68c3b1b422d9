"""A small pattern language for rewrite rules over loop-IR expressions.

Patterns are built with Python operators on pattern variables::

    x, y = PVar("x"), PVar("y")
    c1 = PConst("c1")
    pmin(x, x)            # Min(x, x): both x must be the same expression
    x * c1 + c1           # an integer or float immediate bound to c1

A :class:`Rule` is ``(pattern, replacement, condition)``: the replacement is a pattern
(instantiated with the bindings) or a function of the match; the condition, when given,
is a function of the match that must return True. A :class:`Match` exposes bound
expressions as attributes (``m.x``), constant values as ``m.c1`` (a Python number) and
the analyzer as ``m.an``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .. import expr as E
from ..expr import Broadcast, FloatImm, IntImm, PrimExpr


class Pattern:
    """Base of pattern nodes; operators build bigger patterns."""

    __slots__ = ()

    def __add__(self, o):
        return PNode(E.Add, self, lift(o))

    def __radd__(self, o):
        return PNode(E.Add, lift(o), self)

    def __sub__(self, o):
        return PNode(E.Sub, self, lift(o))

    def __rsub__(self, o):
        return PNode(E.Sub, lift(o), self)

    def __mul__(self, o):
        return PNode(E.Mul, self, lift(o))

    def __rmul__(self, o):
        return PNode(E.Mul, lift(o), self)

    def __truediv__(self, o):
        return PNode(E.Div, self, lift(o))

    def __floordiv__(self, o):
        return PNode(E.FloorDiv, self, lift(o))

    def __mod__(self, o):
        return PNode(E.FloorMod, self, lift(o))

    def __lt__(self, o):
        return PNode(E.LT, self, lift(o))

    def __le__(self, o):
        return PNode(E.LE, self, lift(o))

    def __gt__(self, o):
        return PNode(E.GT, self, lift(o))

    def __ge__(self, o):
        return PNode(E.GE, self, lift(o))

    def __eq__(self, o):  # type: ignore[override]
        return PNode(E.EQ, self, lift(o))

    def __ne__(self, o):  # type: ignore[override]
        return PNode(E.NE, self, lift(o))

    def __and__(self, o):
        return PNode(E.And, self, lift(o))

    def __rand__(self, o):
        return PNode(E.And, lift(o), self)

    def __or__(self, o):
        return PNode(E.Or, self, lift(o))

    def __ror__(self, o):
        return PNode(E.Or, lift(o), self)

    def __invert__(self):
        return PNode(E.Not, self)

    __hash__ = object.__hash__


class PVar(Pattern):
    """Matches any expression; repeated occurrences must be the same expression."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


class PConst(Pattern):
    """Matches an integer or float immediate (or a broadcast of one in vector patterns)
    and binds its Python value."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


class PLit(Pattern):
    """Matches an immediate equal to ``value`` (``0``, ``1``, ``True``...)."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


class PNode(Pattern):
    """Matches a node of class ``cls`` whose children match ``children``."""

    __slots__ = ("cls", "children")

    def __init__(self, cls: type, *children: Pattern):
        self.cls = cls
        self.children = children


class PCall(Pattern):
    """Matches an intrinsic ``Call`` named ``op``."""

    __slots__ = ("op", "children")

    def __init__(self, op: str, *children: Pattern):
        self.op = op
        self.children = children


def lift(v: Any) -> Pattern:
    """A pattern for ``v`` (a literal unless it already is a pattern)."""
    return v if isinstance(v, Pattern) else PLit(v)


def pmin(a, b) -> Pattern:
    """Pattern ``min(a, b)``."""
    return PNode(E.Min, lift(a), lift(b))


def pmax(a, b) -> Pattern:
    """Pattern ``max(a, b)``."""
    return PNode(E.Max, lift(a), lift(b))


def pselect(c, t, f) -> Pattern:
    """Pattern ``select(c, t, f)``."""
    return PNode(E.Select, lift(c), lift(t), lift(f))


def pif_then_else(c, t, f) -> Pattern:
    """Pattern ``if_then_else(c, t, f)``."""
    return PCall("if_then_else", lift(c), lift(t), lift(f))


def pcast(x) -> Pattern:
    """Pattern ``cast(x)`` (any target dtype)."""
    return PNode(E.Cast, lift(x))


def ptruncdiv(a, b) -> Pattern:
    """Pattern of the truncating division ``a / b``."""
    return PNode(E.Div, lift(a), lift(b))


def ptruncmod(a, b) -> Pattern:
    """Pattern of the truncating remainder."""
    return PNode(E.Mod, lift(a), lift(b))


def pramp(base, stride) -> Pattern:
    """Pattern ``ramp(base, stride)`` (any lanes)."""
    return PNode(E.Ramp, lift(base), lift(stride))


def pbroadcast(value) -> Pattern:
    """Pattern ``broadcast(value)`` (any lanes)."""
    return PNode(E.Broadcast, lift(value))


# Field names of the children of each node class, in pattern order.
_CHILDREN = {
    E.Select: ("condition", "true_value", "false_value"),
    E.Not: ("a",),
    E.Cast: ("value",),
    E.Ramp: ("base", "stride"),
    E.Broadcast: ("value",),
}


class Match:
    """Bindings of one successful match; attribute access returns a binding."""

    __slots__ = ("an", "root", "bind")

    def __init__(self, an: Any, root: PrimExpr):
        self.an = an
        self.root = root
        self.bind: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        try:
            return self.bind[name]
        except KeyError:
            raise AttributeError(name) from None


def _imm_value(e: PrimExpr):
    if type(e) is IntImm or type(e) is FloatImm:
        return e.value
    if type(e) is Broadcast and type(e.value) in (IntImm, FloatImm):
        return e.value.value
    return None


def match(p: Pattern, e: PrimExpr, m: Match) -> bool:
    """Match ``e`` against ``p``, adding bindings to ``m``."""
    tp = type(p)
    if tp is PVar:
        old = m.bind.get(p.name)
        if old is None:
            m.bind[p.name] = e
            return True
        return old is e or m.an.keys.key(old) == m.an.keys.key(e)
    if tp is PNode:
        if type(e) is not p.cls:
            return False
        names = _CHILDREN.get(p.cls)
        if names is None:
            return match(p.children[0], e.a, m) and match(p.children[1], e.b, m)
        return all(match(c, getattr(e, n), m) for c, n in zip(p.children, names))
    if tp is PConst:
        v = _imm_value(e)
        if v is None or isinstance(v, bool):
            return False
        old = m.bind.get(p.name)
        if old is None:
            m.bind[p.name] = v
            return True
        return old == v
    if tp is PLit:
        v = _imm_value(e)
        return v is not None and v == p.value
    if tp is PCall:
        if type(e) is not E.Call or e.op != p.op or len(e.args) != len(p.children):
            return False
        return all(match(c, a, m) for c, a in zip(p.children, e.args))
    raise TypeError(f"not a pattern: {p!r}")


def instantiate(p: Pattern, m: Match, dtype: str) -> PrimExpr:
    """Build the expression of replacement pattern ``p`` under the bindings of ``m``;
    literals and constants take ``dtype`` (or the dtype of their sibling)."""
    tp = type(p)
    if tp is PVar:
        return m.bind[p.name]
    if tp is PConst:
        return E.const(m.bind[p.name], dtype)
    if tp is PLit:
        return E.const(p.value, dtype)
    if tp is PNode:
        cls = p.cls
        kids = [None if type(c) in (PConst, PLit) else instantiate(c, m, dtype)
                for c in p.children]
        # Literals adopt the dtype of their sibling operands.
        if cls is E.Select:
            vals = [k for k in kids[1:] if k is not None]
            refs = ["bool"] + [vals[0].dtype if vals else dtype] * 2
        elif cls in (E.And, E.Or, E.Not):
            refs = ["bool"] * len(kids)
        else:
            ref = next((k.dtype for k in kids if k is not None), dtype)
            refs = [ref] * len(kids)
        kids = [k if k is not None else instantiate(c, m, r)
                for k, c, r in zip(kids, p.children, refs)]
        if cls is E.Not:
            return E.logical_not(kids[0])
        if cls is E.Select:
            return E.select(*kids)
        if issubclass(cls, E.CmpOp):
            return E._compare(cls, kids[0], kids[1])
        if cls is E.And:
            return E.logical_and(*kids)
        if cls is E.Or:
            return E.logical_or(*kids)
        return cls(dtype=kids[0].dtype, a=kids[0], b=kids[1])
    if tp is PCall:
        kids = [instantiate(c, m, dtype) for c in p.children]
        return E.Call(dtype=kids[-1].dtype, op=p.op, args=tuple(kids))
    raise TypeError(f"not a pattern: {p!r}")


@dataclass(frozen=True)
class Rule:
    """``pattern -> replacement if condition``."""

    pattern: Pattern
    replacement: Pattern | Callable[[Match], PrimExpr]
    condition: Callable[[Match], bool] | None = None

    def apply(self, e: PrimExpr, an: Any) -> PrimExpr | None:
        """The rewritten expression, or None when the rule does not apply to ``e``."""
        m = Match(an, e)
        if not match(self.pattern, e, m):
            return None
        if self.condition is not None and not self.condition(m):
            return None
        if isinstance(self.replacement, Pattern):
            return instantiate(self.replacement, m, e.dtype)
        return self.replacement(m)


def rule(pattern: Pattern, replacement, condition=None) -> Rule:
    """Shorthand for :class:`Rule`; a plain value as replacement means that literal."""
    if not isinstance(replacement, Pattern) and not callable(replacement):
        replacement = PLit(replacement)
    return Rule(pattern, replacement, condition)

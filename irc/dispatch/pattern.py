"""The dataflow pattern language: patterns over graph expressions, matched inside one
dataflow block to find the subgraphs a library can run.

A pattern describes an expression tree::

    x, w, b = wildcard(), wildcard(), wildcard()
    linear = is_op("add")(is_op("matmul")(x, is_op("permute_dims")(w)), b)
    linear_relu = linear.optional(lambda p: is_op("nn.relu")(p))

**Looking through bindings.** Graph functions are in A-normal form, so the operand of
``R.add(lv1, b)`` is a variable bound earlier (``lv1 = R.matmul(...)``). A pattern that
describes a computation (a call, a tuple, a projection, a constant) meets such a variable,
matches the value it is bound to (``values``: the block's bindings) and *consumes* that
binding. A wildcard matches the variable itself and stops there: the wildcards of a
pattern meet the inputs of the subgraph it matches.

**Keys.** Every pattern object is its own key: a match maps each pattern object to the
expression it met — where the matcher looked through a binding, the variable (for a call,
the variable bound to the call). A pattern object used twice must meet the same expression
both times: ``x = wildcard(); is_op("add")(x, x)`` matches ``R.add(a, a)`` only.

**Alternatives** are tried in order and the matcher backtracks: ``p | q`` tries ``p``
first, then ``q``; ``p.optional(f)`` is ``f(p) | p``, so the longer match comes first.
:func:`find_matches` takes the first alternative whose match is usable (see there).

**Constraints** check the expression a pattern met: ``has_attr`` the attributes of the
call it is (or is bound to), ``has_dtype`` and ``has_shape`` its struct info.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Iterator, Mapping, NamedTuple, Sequence

from ..core import dtype as dt
from ..core.diagnostics import IRCError
from ..core.functor import Visitor
from ..ir.expr import (
    Binding,
    Call,
    Constant,
    DataflowBlock,
    Expr,
    Function,
    MatchCast,
    Op,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    unknown_operator,
)
from ..ir.op import has_op, list_ops
from ..ir.struct_info import PrimStructInfo, TensorStructInfo
from ..tir.expr import IntImm

# What a pattern matched: each pattern object (compared by identity) to the expression
# it met.
Matched = dict["Pattern", Expr]


class _State(NamedTuple):
    """A partial match: never mutated, each step makes a new one."""

    matched: dict[Pattern, Expr]
    consumed: tuple[Var, ...]  # the variables whose bindings were looked through


def _same(a: Expr, b: Expr) -> bool:
    # Operators are compared by name: an Op made outside the registry is still that op.
    return a is b or (isinstance(a, Op) and isinstance(b, Op) and a.name == b.name)


def _run(p: Pattern, expr: Expr, values: Mapping[Var, Expr], st: _State) -> Iterator[_State]:
    """Every way ``p`` matches ``expr``, extending ``st``."""
    prior = st.matched.get(p)
    if prior is not None:
        if _same(prior, expr):
            yield st
        return
    for out in p._match(expr, values, st):
        yield out._replace(matched={**out.matched, p: expr})


def _run_all(pairs: Sequence[tuple[Pattern, Expr]], values: Mapping[Var, Expr],
             st: _State) -> Iterator[_State]:
    """Every way all ``(pattern, expr)`` pairs match, left to right."""
    if not pairs:
        yield st
        return
    (p, e), rest = pairs[0], pairs[1:]
    for out in _run(p, e, values, st):
        yield from _run_all(rest, values, out)


def _look_through(expr: Expr, values: Mapping[Var, Expr], st: _State) -> tuple[Expr, _State]:
    """The value ``expr`` stands for (following variables bound in the block, aliases
    included) and the state with those bindings consumed."""
    consumed = st.consumed
    while isinstance(expr, Var) and expr in values:
        if expr not in consumed:
            consumed = (*consumed, expr)
        expr = values[expr]
    return expr, (st if consumed is st.consumed else st._replace(consumed=consumed))


def _bound_value(expr: Expr, values: Mapping[Var, Expr]) -> Expr:
    """The value ``expr`` stands for, consuming nothing."""
    while isinstance(expr, Var) and expr in values:
        expr = values[expr]
    return expr


def _normalize_attr(value: Any) -> Any:
    # Attributes are stored as tuples; users write lists.
    if isinstance(value, (list, tuple)):
        return tuple(_normalize_attr(v) for v in value)
    return value


class Pattern:
    """Base of patterns. Patterns are immutable and compared by identity (each object is
    its own key in a match). ``p(a, b)`` is a call of what ``p`` matches with arguments
    matching ``a`` and ``b``; ``p | q`` matches what ``p`` or else ``q`` matches."""

    __slots__ = ()

    def _match(self, expr: Expr, values: Mapping[Var, Expr], st: _State) -> \
            Iterator[_State]:
        raise NotImplementedError

    def __call__(self, *args: Pattern) -> CallPattern:
        return CallPattern(self, tuple(_check_pattern(a, "a call argument") for a in args))

    def __or__(self, other: Pattern) -> OrPattern:
        return OrPattern(self, _check_pattern(other, "an alternative"))

    def optional(self, wrap: Callable[[Pattern], Pattern]) -> OrPattern:
        """``wrap(self) | self``: this pattern with an optional consumer, the longer match
        first. ``matmul.optional(lambda x: is_op("nn.relu")(x))``."""
        return OrPattern(_check_pattern(wrap(self), "the result of optional's function"),
                         self)

    def has_attr(self, attrs: Mapping[str, Any]) -> AttrPattern:
        """This pattern, where the call matched (or the call a matched variable is bound
        to) has these attribute values (lists compare equal to tuples)."""
        if not isinstance(attrs, Mapping) or not all(isinstance(k, str) for k in attrs):
            raise IRCError(f"has_attr takes a dict of attribute names to values, got "
                           f"{attrs!r}")
        return AttrPattern(self, {k: _normalize_attr(v) for k, v in attrs.items()})

    def has_dtype(self, dtype: str) -> DataTypePattern:
        """This pattern, where the matched expression is a tensor (or scalar) of
        ``dtype``."""
        if not isinstance(dtype, str):
            raise IRCError(f"has_dtype takes a dtype string such as 'float16', got "
                           f"{dtype!r}")
        return DataTypePattern(self, dt.check(dtype))

    def has_shape(self, shape: Sequence[int | None]) -> ShapePattern:
        """This pattern, where the matched expression is a tensor of this rank whose
        dimensions are these constants (``None``: any dimension, symbolic included)."""
        dims = tuple(shape) if isinstance(shape, (list, tuple)) else None
        if dims is None or not all(d is None or (isinstance(d, int) and not isinstance(d, bool))
                                   for d in dims):
            raise IRCError(f"has_shape takes a list of ints and None (any dimension), got "
                           f"{shape!r}")
        return ShapePattern(self, dims)


def _check_pattern(p: Any, what: str) -> Pattern:
    if not isinstance(p, Pattern):
        raise IRCError(f"{what} must be a pattern (wildcard(), is_op(...)(...), ...), got "
                       f"{type(p).__name__}")
    return p


def _frozen(cls: type) -> type:
    # eq=False keeps identity equality and hashing: a pattern object is its own key.
    return dataclass(frozen=True, eq=False, slots=True, repr=False)(cls)


@_frozen
class WildcardPattern(Pattern):
    """Any expression; a variable is matched as itself (its binding is not consumed)."""

    def _match(self, expr: Expr, values: Mapping[Var, Expr], st: _State) -> \
            Iterator[_State]:
        yield st

    def __repr__(self) -> str:
        return "wildcard()"


@_frozen
class OpPattern(Pattern):
    """The operator ``name`` itself (the callee of a call)."""

    name: str

    def _match(self, expr: Expr, values: Mapping[Var, Expr], st: _State) -> \
            Iterator[_State]:
        if isinstance(expr, Op) and expr.name == self.name:
            yield st

    def __repr__(self) -> str:
        return f"is_op({self.name!r})"


@_frozen
class CallPattern(Pattern):
    """A call whose callee matches ``op`` and whose arguments match ``args`` (as many)."""

    op: Pattern
    args: tuple[Pattern, ...]

    def _match(self, expr: Expr, values: Mapping[Var, Expr], st: _State) -> \
            Iterator[_State]:
        value, st = _look_through(expr, values, st)
        if isinstance(value, Call) and len(value.args) == len(self.args):
            yield from _run_all(((self.op, value.op), *zip(self.args, value.args)),
                                values, st)

    def __repr__(self) -> str:
        return f"{self.op!r}({', '.join(map(repr, self.args))})"


@_frozen
class ConstantPattern(Pattern):
    """A constant tensor (``R.const``, a bound weight after ``BindParams``)."""

    def _match(self, expr: Expr, values: Mapping[Var, Expr], st: _State) -> \
            Iterator[_State]:
        value, st = _look_through(expr, values, st)
        if isinstance(value, Constant):
            yield st

    def __repr__(self) -> str:
        return "is_const()"


@_frozen
class TuplePattern(Pattern):
    """A tuple whose fields match ``fields`` (as many)."""

    fields: tuple[Pattern, ...]

    def _match(self, expr: Expr, values: Mapping[Var, Expr], st: _State) -> \
            Iterator[_State]:
        value, st = _look_through(expr, values, st)
        if isinstance(value, Tuple) and len(value.fields) == len(self.fields):
            yield from _run_all(tuple(zip(self.fields, value.fields)), values, st)

    def __repr__(self) -> str:
        return f"is_tuple([{', '.join(map(repr, self.fields))}])"


@_frozen
class TupleGetItemPattern(Pattern):
    """Field ``index`` (None: any field) of a tuple matching ``tuple_pattern``."""

    tuple_pattern: Pattern
    index: int | None = None

    def _match(self, expr: Expr, values: Mapping[Var, Expr], st: _State) -> \
            Iterator[_State]:
        value, st = _look_through(expr, values, st)
        if isinstance(value, TupleGetItem) and self.index in (None, value.index):
            yield from _run(self.tuple_pattern, value.tuple_value, values, st)

    def __repr__(self) -> str:
        index = "" if self.index is None else f", {self.index}"
        return f"is_tuple_get_item({self.tuple_pattern!r}{index})"


@_frozen
class OrPattern(Pattern):
    """What ``left`` matches, else what ``right`` matches (both tried, in that order)."""

    left: Pattern
    right: Pattern

    def _match(self, expr: Expr, values: Mapping[Var, Expr], st: _State) -> \
            Iterator[_State]:
        yield from _run(self.left, expr, values, st)
        yield from _run(self.right, expr, values, st)

    def __repr__(self) -> str:
        return f"({self.left!r} | {self.right!r})"


@_frozen
class AttrPattern(Pattern):
    """What ``pattern`` matches, when it is a call (or a variable bound to one) with these
    attribute values."""

    pattern: Pattern
    attrs: dict[str, Any] = field(default_factory=dict)

    def _match(self, expr: Expr, values: Mapping[Var, Expr], st: _State) -> \
            Iterator[_State]:
        for out in _run(self.pattern, expr, values, st):
            call = _bound_value(expr, values)
            if isinstance(call, Call) and all(
                    k in call.attrs and _normalize_attr(call.attrs[k]) == v
                    for k, v in self.attrs.items()):
                yield out

    def __repr__(self) -> str:
        return f"{self.pattern!r}.has_attr({self.attrs!r})"


@_frozen
class DataTypePattern(Pattern):
    """What ``pattern`` matches, when its struct info has dtype ``dtype``."""

    pattern: Pattern
    dtype: str

    def _match(self, expr: Expr, values: Mapping[Var, Expr], st: _State) -> \
            Iterator[_State]:
        sinfo = expr.struct_info
        if isinstance(sinfo, (TensorStructInfo, PrimStructInfo)) and sinfo.dtype == self.dtype:
            yield from _run(self.pattern, expr, values, st)

    def __repr__(self) -> str:
        return f"{self.pattern!r}.has_dtype({self.dtype!r})"


@_frozen
class ShapePattern(Pattern):
    """What ``pattern`` matches, when it is a tensor of ``len(shape)`` dimensions equal to
    the constants of ``shape`` (``None`` entries match any dimension)."""

    pattern: Pattern
    shape: tuple[int | None, ...]

    def _match(self, expr: Expr, values: Mapping[Var, Expr], st: _State) -> \
            Iterator[_State]:
        sinfo = expr.struct_info
        if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None \
                or len(sinfo.shape) != len(self.shape):
            return
        for want, have in zip(self.shape, sinfo.shape):
            if want is not None and not (isinstance(have, IntImm) and have.value == want):
                return
        yield from _run(self.pattern, expr, values, st)

    def __repr__(self) -> str:
        return f"{self.pattern!r}.has_shape({list(self.shape)!r})"


def wildcard() -> WildcardPattern:
    """A pattern matching any expression (a variable as itself: an input of the match)."""
    return WildcardPattern()


def is_op(name: str) -> OpPattern:
    """The operator ``name`` (``"nn.conv2d"``; a leading ``"relax."`` is dropped, so TVM's
    names work); call it to match its calls: ``is_op("nn.relu")(wildcard())``. An unknown
    name is an ``IRTypeError`` naming the closest operators."""
    if not isinstance(name, str):
        raise IRCError(f"is_op takes an operator name such as 'nn.conv2d', got {name!r}")
    if name.startswith("relax."):
        name = name[len("relax."):]
    if not has_op(name):
        raise unknown_operator(name, list_ops())
    return OpPattern(name)


def is_const() -> ConstantPattern:
    """A pattern matching a constant tensor."""
    return ConstantPattern()


def is_tuple(fields: Sequence[Pattern]) -> TuplePattern:
    """A pattern matching a tuple of as many fields, each matching its pattern."""
    return TuplePattern(tuple(_check_pattern(f, "a tuple field") for f in fields))


def is_tuple_get_item(tuple_pattern: Pattern, index: int | None = None) -> \
        TupleGetItemPattern:
    """A pattern matching ``t[index]`` (any field when ``index`` is None) where ``t``
    matches ``tuple_pattern``."""
    if index is not None and (not isinstance(index, int) or isinstance(index, bool)):
        raise IRCError(f"is_tuple_get_item: the index must be an int or None, got {index!r}")
    return TupleGetItemPattern(_check_pattern(tuple_pattern, "the tuple"), index)


def match(pattern: Pattern, expr: Expr, values: Mapping[Var, Expr] | None = None) -> \
        Matched | None:
    """The first way ``pattern`` matches ``expr`` — each pattern object mapped to the
    expression it met — or None. ``values`` maps the variables bound in the block to
    their values; the matcher looks through them (see the module docstring)."""
    _check_pattern(pattern, "match's first argument")
    for st in _run(pattern, expr, values or {}, _State({}, ())):
        return dict(st.matched)
    return None


@dataclass(frozen=True, eq=False)
class PatternMatch:
    """One match of ``pattern`` in a dataflow block.

    ``root`` is the variable of the root binding (where the matched subgraph's result is
    bound); ``bindings`` the consumed bindings in block order (the root last);
    ``inputs`` what the subgraph reads from outside (variables and constants, each
    once, in order of first use when the bindings are read in block order, arguments
    left to right); ``matched`` each pattern object to the expression it met."""

    pattern: Pattern
    root: Var
    bindings: tuple[VarBinding, ...]
    inputs: tuple[Expr, ...]
    matched: Matched

    def value_of(self, pattern: Pattern) -> Expr | None:
        """The expression ``pattern`` met, seen through the match's bindings (the call a
        variable is bound to); None when ``pattern`` took no part in the match."""
        expr = self.matched.get(pattern)
        if expr is None:
            return None
        return _bound_value(expr, {b.var: b.value for b in self.bindings})

    def __repr__(self) -> str:
        names = ", ".join(b.var.name_hint for b in self.bindings)
        return f"<PatternMatch {self.pattern!r} at {self.root.name_hint}: {names}>"


class _VarUses(Visitor):
    """The ids of the graph variables an expression reads (binding targets excluded)."""

    def __init__(self, skip: DataflowBlock | None = None) -> None:
        self.ids: set[int] = set()
        self.skip = skip

    def visit_Var(self, v: Var) -> None:
        self.ids.add(id(v))

    def visit_VarBinding(self, b: VarBinding) -> None:
        self.visit(b.value)

    def visit_MatchCast(self, b: MatchCast) -> None:
        self.visit(b.value)

    def visit_DataflowBlock(self, block: DataflowBlock) -> None:
        if block is not self.skip:
            self.generic_visit(block)

    def visit_StructInfo(self, s: Any) -> None:
        return None  # struct info names loop-IR variables, never graph variables


def _uses(node: Any) -> set[int]:
    v = _VarUses()
    v.visit(node)
    return v.ids


def external_uses(func: Function, block: DataflowBlock) -> set[int]:
    """The ids of the variables ``func`` reads outside ``block``: in its other blocks,
    its result, nested functions. A value computed in ``block`` and read there must
    stay visible, so :func:`find_matches` does not hide it inside a match."""
    v = _VarUses(skip=block)
    v.visit(func.body)
    return v.ids


def _inputs(bindings: Sequence[VarBinding], consumed: Collection[int]) -> tuple[Expr, ...]:
    seen: set[int] = set()
    out: list[Expr] = []

    def walk(e: Expr) -> None:
        if isinstance(e, (Var, Constant)):
            if id(e) not in consumed and id(e) not in seen:
                seen.add(id(e))
                out.append(e)
        elif isinstance(e, Call):
            if isinstance(e.op, Var):
                walk(e.op)
            for a in e.args:
                walk(a)
        elif isinstance(e, Tuple):
            for f in e.fields:
                walk(f)
        elif isinstance(e, TupleGetItem):
            walk(e.tuple_value)

    for b in bindings:
        walk(b.value)
    return tuple(out)


def find_matches(pattern: Pattern, block: DataflowBlock,
                 external_uses: Collection[int] = frozenset(), *,
                 accept: Callable[[PatternMatch], bool] | None = None,
                 exclude: Collection[int] = ()) -> list[PatternMatch]:
    """The non-overlapping matches of ``pattern`` in ``block``, in block order of their
    roots.

    Each binding is tried as the root, the last binding first, so a chain is matched
    whole from its end (``relu(add(matmul))`` before ``add(matmul)``) and a binding that
    an accepted match consumed is no longer tried; a binding that renames a variable
    (``gv = lv``) is no root (the match is found where ``lv`` is bound). At a root the
    alternatives are tried in order and the first usable one wins; a match is usable when:

    - it consumes the root's binding (a pattern that is only a wildcard matches nothing);
    - it consumes no binding of an earlier accepted match nor one in ``exclude`` (ids
      of binding objects, ``id(binding)``: e.g. those a higher-priority pattern took);
    - no intermediate value (a consumed binding's variable other than the root) is read
      outside the match: by a binding of the block that the match does not consume, or
      after the block (its id is in ``external_uses``; see :func:`external_uses`);
    - ``accept`` (when given; e.g. a pattern table's check function) returns True.
    """
    _check_pattern(pattern, "find_matches's first argument")
    bindings = block.bindings
    values: dict[Var, Expr] = {b.var: b.value for b in bindings if isinstance(b, VarBinding)}
    position = {id(b.var): i for i, b in enumerate(bindings)}
    users: dict[int, set[int]] = {}  # var id -> positions of the bindings that read it
    for i, b in enumerate(bindings):
        for u in _uses(b.value):
            users.setdefault(u, set()).add(i)
    taken = {i for i, b in enumerate(bindings) if id(b) in exclude}
    found: list[tuple[int, PatternMatch]] = []
    for i in reversed(range(len(bindings))):
        root = bindings[i]
        if i in taken or not isinstance(root, VarBinding) or isinstance(root.value, Var):
            continue  # a renaming (gv = lv) is matched where lv is bound
        for st in _run(pattern, root.var, values, _State({}, ())):
            m = _usable(pattern, root, st, bindings, position, users, taken,
                        external_uses)
            if m is not None and (accept is None or accept(m)):
                taken |= {position[id(b.var)] for b in m.bindings}
                found.append((i, m))
                break
    return [m for _, m in sorted(found, key=lambda t: t[0])]


def _usable(pattern: Pattern, root: VarBinding, st: _State, bindings: Sequence[Binding],
            position: dict[int, int], users: dict[int, set[int]], taken: set[int],
            external: Collection[int]) -> PatternMatch | None:
    """The match ``st`` describes at ``root``, or None when it is not usable (see
    :func:`find_matches`)."""
    if root.var not in st.consumed:
        return None
    spots = {position[id(v)] for v in st.consumed}
    if spots & taken:
        return None
    for v in st.consumed:
        if v is not root.var and (id(v) in external or not users.get(id(v), set()) <= spots):
            return None
    chosen = tuple(bindings[i] for i in sorted(spots))
    consumed_ids = {id(v) for v in st.consumed}
    return PatternMatch(pattern=pattern, root=root.var, bindings=chosen,
                        inputs=_inputs(chosen, consumed_ids), matched=dict(st.matched))


"""Loop-IR expressions (``PrimExpr``): typed scalar (or vector) values.

Python operators on expressions build IR: ``a + b`` is ``Add``, ``a // b`` is
``FloorDiv``, ``a % b`` is ``FloorMod``, ``a / b`` is ``Div`` (true division for floats,
truncating for integers), comparisons build ``LT``/``LE``/... and ``==``/``!=`` build
``EQ``/``NE`` whose truth value is identity (so expressions still work as dict keys).
Python numbers are converted to immediates of the other operand's dtype; mixed dtypes are
promoted (int to float, narrower to wider) by inserting casts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Union

import numpy as np

from ..core import dtype as dt
from ..core.diagnostics import IRTypeError
from ..core.node import Node, node

if TYPE_CHECKING:
    from .buffer import Buffer

ExprLike = Union["PrimExpr", int, float, bool]


@node
class PrimExpr(Node):
    """Base of loop-IR expressions; every expression has a ``dtype``."""

    dtype: str

    # -- arithmetic ---------------------------------------------------------------
    def __add__(self, other: ExprLike) -> PrimExpr:
        return add(self, other)

    def __radd__(self, other: ExprLike) -> PrimExpr:
        return add(other, self)

    def __sub__(self, other: ExprLike) -> PrimExpr:
        return sub(self, other)

    def __rsub__(self, other: ExprLike) -> PrimExpr:
        return sub(other, self)

    def __mul__(self, other: ExprLike) -> PrimExpr:
        return mul(self, other)

    def __rmul__(self, other: ExprLike) -> PrimExpr:
        return mul(other, self)

    def __truediv__(self, other: ExprLike) -> PrimExpr:
        return div(self, other)

    def __rtruediv__(self, other: ExprLike) -> PrimExpr:
        return div(other, self)

    def __floordiv__(self, other: ExprLike) -> PrimExpr:
        return floordiv(self, other)

    def __rfloordiv__(self, other: ExprLike) -> PrimExpr:
        return floordiv(other, self)

    def __mod__(self, other: ExprLike) -> PrimExpr:
        return floormod(self, other)

    def __rmod__(self, other: ExprLike) -> PrimExpr:
        return floormod(other, self)

    def __neg__(self) -> PrimExpr:
        if isinstance(self, IntImm):
            return IntImm(dtype=self.dtype, value=-self.value)
        if isinstance(self, FloatImm):
            return FloatImm(dtype=self.dtype, value=-self.value)
        return sub(const(0, self.dtype), self)

    def __pos__(self) -> PrimExpr:
        return self

    def __and__(self, other: ExprLike) -> PrimExpr:
        return logical_and(self, other)

    def __rand__(self, other: ExprLike) -> PrimExpr:
        return logical_and(other, self)

    def __or__(self, other: ExprLike) -> PrimExpr:
        return logical_or(self, other)

    def __ror__(self, other: ExprLike) -> PrimExpr:
        return logical_or(other, self)

    def __invert__(self) -> PrimExpr:
        return logical_not(self)

    # -- comparisons --------------------------------------------------------------
    def __lt__(self, other: ExprLike) -> PrimExpr:
        return _compare(LT, self, other)

    def __le__(self, other: ExprLike) -> PrimExpr:
        return _compare(LE, self, other)

    def __gt__(self, other: ExprLike) -> PrimExpr:
        return _compare(GT, self, other)

    def __ge__(self, other: ExprLike) -> PrimExpr:
        return _compare(GE, self, other)

    def __eq__(self, other: object) -> PrimExpr:  # type: ignore[override]
        if not isinstance(other, (PrimExpr, int, float, bool)):
            return NotImplemented
        return _compare(EQ, self, other)

    def __ne__(self, other: object) -> PrimExpr:  # type: ignore[override]
        if not isinstance(other, (PrimExpr, int, float, bool)):
            return NotImplemented
        return _compare(NE, self, other)

    __hash__ = Node.__hash__

    def __bool__(self) -> bool:
        raise IRTypeError(
            f"cannot use the symbolic expression {self!r} as a Python bool; "
            "use irc.tir.all/any or if_then_else to build a condition",
            node=self,
        )

    def astype(self, dtype: str) -> PrimExpr:
        return cast(self, dtype)


# ---------------------------------------------------------------------------------
# Leaves
# ---------------------------------------------------------------------------------


@node
class Var(PrimExpr):
    """A scalar variable: loop variable, symbolic dimension, let-bound value or a buffer's
    data pointer (dtype ``"handle"``). Compared by binding position, not by name."""

    name: str
    _sequal_ignore: ClassVar[frozenset[str]] = frozenset({"span", "name"})
    _sequal_binding: ClassVar[bool] = True


@node
class IntImm(PrimExpr):
    """An integer (or bool) constant."""

    value: int

    def __post_init__(self) -> None:
        d = dt.parse(self.dtype)
        if d.code not in ("int", "uint", "bool") or d.lanes != 1:
            raise IRTypeError(f"IntImm needs a scalar integer or bool dtype, got {self.dtype!r}")
        if not (dt.min_value(self.dtype) <= self.value <= dt.max_value(self.dtype)):
            raise IRTypeError(f"integer {self.value} does not fit in {self.dtype}")

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value


@node
class FloatImm(PrimExpr):
    """A floating-point constant."""

    value: float

    def __post_init__(self) -> None:
        if not dt.is_float(self.dtype) or dt.lanes(self.dtype) != 1:
            raise IRTypeError(f"FloatImm needs a scalar float dtype, got {self.dtype!r}")

    def __float__(self) -> float:
        return self.value


@node
class StringImm(PrimExpr):
    """A string constant (argument of extern calls)."""

    value: str
    dtype: str = "handle"


# ---------------------------------------------------------------------------------
# Operators
# ---------------------------------------------------------------------------------


@node
class BinaryOp(PrimExpr):
    """Base of two-operand arithmetic; ``a`` and ``b`` have the result's dtype."""

    a: PrimExpr
    b: PrimExpr


@node
class Add(BinaryOp):
    """``a + b``."""


@node
class Sub(BinaryOp):
    """``a - b``."""


@node
class Mul(BinaryOp):
    """``a * b``."""


@node
class Div(BinaryOp):
    """True division for floats, truncating division for integers."""


@node
class Mod(BinaryOp):
    """Truncating remainder (sign follows the dividend)."""


@node
class FloorDiv(BinaryOp):
    """Division rounding toward negative infinity (``a // b``)."""


@node
class FloorMod(BinaryOp):
    """Remainder of floor division (sign follows the divisor)."""


@node
class Min(BinaryOp):
    """The smaller of ``a`` and ``b``."""


@node
class Max(BinaryOp):
    """The larger of ``a`` and ``b``."""


@node
class CmpOp(PrimExpr):
    """Base of comparisons; dtype is bool (or a bool vector)."""

    a: PrimExpr
    b: PrimExpr

    def __bool__(self) -> bool:
        # Only EQ/NE fall back to identity, see below.
        return PrimExpr.__bool__(self)


@node
class EQ(CmpOp):
    """``a == b`` (as a Python bool: whether ``a`` and ``b`` are one object)."""

    def __bool__(self) -> bool:
        return self.a is self.b


@node
class NE(CmpOp):
    """``a != b`` (as a Python bool: whether they are different objects)."""

    def __bool__(self) -> bool:
        return self.a is not self.b


@node
class LT(CmpOp):
    """``a < b``."""


@node
class LE(CmpOp):
    """``a <= b``."""


@node
class GT(CmpOp):
    """``a > b``."""


@node
class GE(CmpOp):
    """``a >= b``."""


@node
class And(PrimExpr):
    """Logical and of two boolean expressions."""

    a: PrimExpr
    b: PrimExpr


@node
class Or(PrimExpr):
    """Logical or of two boolean expressions."""

    a: PrimExpr
    b: PrimExpr


@node
class Not(PrimExpr):
    """Logical negation of a boolean expression."""

    a: PrimExpr


@node
class Cast(PrimExpr):
    """Conversion of ``value`` to ``dtype``."""

    value: PrimExpr


@node
class Select(PrimExpr):
    """``condition ? true_value : false_value``; both sides are evaluated."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr


@node
class Let(PrimExpr):
    """``body`` with ``var`` bound to ``value``."""

    var: Var
    value: PrimExpr
    body: PrimExpr


@node
class Ramp(PrimExpr):
    """The vector ``[base, base + stride, ..., base + (lanes-1)*stride]``."""

    base: PrimExpr
    stride: PrimExpr
    lanes: int


@node
class Broadcast(PrimExpr):
    """The scalar ``value`` repeated ``lanes`` times."""

    value: PrimExpr
    lanes: int


@node
class BufferLoad(PrimExpr):
    """``buffer[indices]``; with a Ramp index the load is a vector."""

    buffer: Buffer
    indices: tuple[PrimExpr, ...]


@node
class Call(PrimExpr):
    """An intrinsic call, e.g. ``exp``, ``if_then_else``, ``sqrt`` (names without prefix;
    the table of known intrinsics is ``irc.tir.intrin``)."""

    op: str
    args: tuple[PrimExpr, ...]


@node
class Range(Node):
    """The half-open interval ``[min, min + extent)``."""

    min: PrimExpr
    extent: PrimExpr

    @staticmethod
    def from_min_extent(min_value: ExprLike, extent: ExprLike) -> Range:
        min_e = convert(min_value)
        ext = convert(extent, min_e.dtype)
        min_e, ext = _match(min_e, ext)
        return Range(min=min_e, extent=ext)


@node
class IterVar(Node):
    """A variable over a range with a role: ``"spatial"`` (data parallel), ``"reduce"``
    (commutative reduction), ``"opaque"``; ``thread_tag`` for GPU thread axes."""

    var: Var
    dom: Range
    iter_type: str = "spatial"
    thread_tag: str = ""

    ITER_TYPES: ClassVar[tuple[str, ...]] = ("spatial", "reduce", "opaque", "ordered")

    def __post_init__(self) -> None:
        if self.iter_type not in self.ITER_TYPES:
            raise IRTypeError(f"unknown iter_type {self.iter_type!r}; use one of {self.ITER_TYPES}")


@node
class Reduce(PrimExpr):
    """A commutative reduction used by ``te.compute`` (``te.sum(A[i, k], axis=k)``):
    ``kind`` in sum/prod/max/min, over ``axis``, of ``source`` where ``condition`` holds,
    starting from ``init`` (the identity when None)."""

    kind: str
    source: PrimExpr
    axis: tuple[IterVar, ...]
    condition: PrimExpr | None = None
    init: PrimExpr | None = None

    KINDS: ClassVar[tuple[str, ...]] = ("sum", "prod", "max", "min")

    def __post_init__(self) -> None:
        if self.kind not in self.KINDS:
            raise IRTypeError(f"unknown reduction {self.kind!r}; use one of {self.KINDS}")

    def identity(self) -> PrimExpr:
        if self.kind == "sum":
            return const(0, self.dtype)
        if self.kind == "prod":
            return const(1, self.dtype)
        if self.kind == "max":
            return min_value(self.dtype)
        return max_value(self.dtype)


# ---------------------------------------------------------------------------------
# Construction helpers
# ---------------------------------------------------------------------------------


def var(name: str, dtype: str = "int32") -> Var:
    """A new variable."""
    return Var(name=name, dtype=dt.check(dtype))


def const(value: int | float | bool, dtype: str | None = None) -> PrimExpr:
    """An immediate of ``dtype`` (inferred from the Python type when omitted)."""
    if dtype is None:
        if isinstance(value, bool):
            dtype = "bool"
        elif isinstance(value, int):
            dtype = "int32" if -(2**31) <= value < 2**31 else "int64"
        elif isinstance(value, float):
            dtype = "float32"
        else:
            raise IRTypeError(f"cannot make a constant of {value!r}")
    d = dt.parse(dtype)
    if d.lanes != 1:
        return Broadcast(dtype=dtype, value=const(value, dt.element_of(dtype)), lanes=d.lanes)
    if isinstance(value, (str, bytes)):
        raise IRTypeError(f"cannot make a {dtype} constant of {value!r}; give a number")
    if dt.is_float(dtype):
        return FloatImm(dtype=dtype, value=float(value))
    if d.code == "bool":
        return IntImm(dtype=dtype, value=int(bool(value)))
    if isinstance(value, float):
        if value != int(value):
            raise IRTypeError(f"{value!r} is not an integer and cannot be a {dtype} constant")
        value = int(value)
    return IntImm(dtype=dtype, value=int(value))


def convert(value: ExprLike, dtype: str | None = None) -> PrimExpr:
    """A PrimExpr from a Python number (using ``dtype`` when given) or the expr itself."""
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, IterVar):
        return value.var
    if isinstance(value, (bool, int, float)):
        if dtype is not None and isinstance(value, float) and not dt.is_float(dtype):
            dtype = "float32"
        return const(value, dtype)
    # numpy scalars
    try:
        if isinstance(value, np.generic):
            return const(value.item(), dt.from_numpy(value.dtype))
    except ImportError:  # pragma: no cover
        pass
    raise IRTypeError(f"cannot convert {type(value).__name__} {value!r} to a loop-IR expression")


def _promote_dtype(a: str, b: str) -> str:
    """The common dtype of a binary operation on ``a`` and ``b``."""
    if a == b:
        return a
    da, db = dt.parse(a), dt.parse(b)
    lanes = max(da.lanes, db.lanes)
    if da.lanes != db.lanes and min(da.lanes, db.lanes) != 1:
        raise IRTypeError(f"cannot combine vector dtypes {a} and {b}")
    sa, sb = dt.element_of(a), dt.element_of(b)
    if sa == sb:
        return dt.with_lanes(sa, lanes)
    fa, fb = dt.is_float(sa), dt.is_float(sb)
    if fa and fb:
        res = sa if da.bits >= db.bits else sb
    elif fa:
        res = sa
    elif fb:
        res = sb
    elif da.code == "bool":
        res = sb
    elif db.code == "bool":
        res = sa
    else:
        bits = max(da.bits, db.bits)
        code = "uint" if da.code == db.code == "uint" else "int"
        res = f"{code}{bits}"
    return dt.with_lanes(res, lanes)


def _coerce(e: PrimExpr, dtype: str) -> PrimExpr:
    if e.dtype == dtype:
        return e
    if dt.lanes(dtype) != dt.lanes(e.dtype):
        if dt.lanes(e.dtype) == 1:
            e = _coerce(e, dt.element_of(dtype))
            return Broadcast(dtype=dtype, value=e, lanes=dt.lanes(dtype))
    if isinstance(e, IntImm) and not dt.is_float(dtype):
        return const(e.value, dtype)
    if isinstance(e, (IntImm, FloatImm)) and dt.is_float(dtype):
        return const(float(e.value), dtype)
    return Cast(dtype=dtype, value=e)


def _match(a: ExprLike, b: ExprLike) -> tuple[PrimExpr, PrimExpr]:
    """Convert both operands to PrimExpr of one common dtype."""
    # An IterVar (e.g. a te reduction axis) stands for its variable, as in TVM.
    a = a.var if isinstance(a, IterVar) else a
    b = b.var if isinstance(b, IterVar) else b
    if not isinstance(a, PrimExpr) and not isinstance(b, PrimExpr):
        a = convert(a)
    if not isinstance(a, PrimExpr):
        assert isinstance(b, PrimExpr)
        a = _python_operand(a, b.dtype)
    if not isinstance(b, PrimExpr):
        b = _python_operand(b, a.dtype)
    if a.dtype != b.dtype:
        target = _promote_dtype(a.dtype, b.dtype)
        a, b = _coerce(a, target), _coerce(b, target)
    return a, b


def _python_operand(value: ExprLike, other_dtype: str) -> PrimExpr:
    """A Python number next to an expression of ``other_dtype`` adopts that dtype."""
    if isinstance(value, PrimExpr):
        return value
    scalar = dt.element_of(other_dtype)
    if isinstance(value, float) and not dt.is_float(scalar):
        return const(value, "float32")
    if isinstance(value, bool) and not dt.is_bool(scalar):
        value = int(value)
    if dt.is_handle(scalar):
        return convert(value)
    if isinstance(value, int) and dt.is_integer(scalar) and not (
        dt.min_value(scalar) <= value <= dt.max_value(scalar)
    ):
        return const(value, "int64")
    return _coerce(const(value, scalar), other_dtype)


_FOLD = {
    "Add": lambda x, y: x + y,
    "Sub": lambda x, y: x - y,
    "Mul": lambda x, y: x * y,
    "Min": min,
    "Max": max,
}


def _binary(cls: type[BinaryOp], a: ExprLike, b: ExprLike) -> PrimExpr:
    a, b = _match(a, b)
    if dt.is_handle(a.dtype):
        raise IRTypeError(f"arithmetic on handle values is not allowed ({cls.__name__})")
    fold = _FOLD.get(cls.__name__)
    if fold is not None and isinstance(a, IntImm) and isinstance(b, IntImm) and a.dtype != "bool":
        value = fold(a.value, b.value)
        if dt.min_value(a.dtype) <= value <= dt.max_value(a.dtype):
            return IntImm(dtype=a.dtype, value=value)
    return cls(dtype=a.dtype, a=a, b=b)


def add(a: ExprLike, b: ExprLike) -> PrimExpr:
    """``a + b`` (Python numbers adopt the other operand's dtype; constants fold)."""
    return _binary(Add, a, b)


def sub(a: ExprLike, b: ExprLike) -> PrimExpr:
    """``a - b``."""
    return _binary(Sub, a, b)


def mul(a: ExprLike, b: ExprLike) -> PrimExpr:
    """``a * b``."""
    return _binary(Mul, a, b)


def div(a: ExprLike, b: ExprLike) -> PrimExpr:
    """True division for floats; truncating division for integers."""
    return _binary(Div, a, b)


def truncdiv(a: ExprLike, b: ExprLike) -> PrimExpr:
    """Integer division rounding toward zero."""
    return _binary(Div, a, b)


def truncmod(a: ExprLike, b: ExprLike) -> PrimExpr:
    """Remainder of truncating division (sign follows the dividend)."""
    return _binary(Mod, a, b)


def floordiv(a: ExprLike, b: ExprLike) -> PrimExpr:
    """Division rounding toward negative infinity."""
    a, b = _match(a, b)
    if isinstance(a, IntImm) and isinstance(b, IntImm) and b.value != 0:
        return IntImm(dtype=a.dtype, value=a.value // b.value)
    return FloorDiv(dtype=a.dtype, a=a, b=b)


def floormod(a: ExprLike, b: ExprLike) -> PrimExpr:
    """Remainder of floor division (sign follows the divisor)."""
    a, b = _match(a, b)
    if isinstance(a, IntImm) and isinstance(b, IntImm) and b.value != 0:
        return IntImm(dtype=a.dtype, value=a.value % b.value)
    return FloorMod(dtype=a.dtype, a=a, b=b)


def min_(a: ExprLike, b: ExprLike) -> PrimExpr:
    """The smaller of ``a`` and ``b`` (``irc.tir.min``)."""
    return _binary(Min, a, b)


def max_(a: ExprLike, b: ExprLike) -> PrimExpr:
    """The larger of ``a`` and ``b`` (``irc.tir.max``)."""
    return _binary(Max, a, b)


def _bool_dtype(lanes: int) -> str:
    return "bool" if lanes == 1 else f"boolx{lanes}"


def _compare(cls: type[CmpOp], a: ExprLike, b: ExprLike) -> PrimExpr:
    a, b = _match(a, b)
    return cls(dtype=_bool_dtype(dt.lanes(a.dtype)), a=a, b=b)


def _as_bool(e: ExprLike) -> PrimExpr:
    e = convert(e, "bool")
    if not dt.is_bool(e.dtype):
        raise IRTypeError(f"expected a boolean condition, got an expression of dtype {e.dtype}",
                          node=e)
    return e


def logical_and(a: ExprLike, b: ExprLike) -> PrimExpr:
    """``a and b`` of boolean expressions."""
    a, b = _as_bool(a), _as_bool(b)
    return And(dtype=a.dtype, a=a, b=b)


def logical_or(a: ExprLike, b: ExprLike) -> PrimExpr:
    """``a or b`` of boolean expressions."""
    a, b = _as_bool(a), _as_bool(b)
    return Or(dtype=a.dtype, a=a, b=b)


def logical_not(a: ExprLike) -> PrimExpr:
    """``not a`` of a boolean expression."""
    a = _as_bool(a)
    return Not(dtype=a.dtype, a=a)


def all(*conds: ExprLike) -> PrimExpr:
    """Conjunction of conditions (``true`` when empty)."""
    if not conds:
        return const(True)
    result = _as_bool(conds[0])
    for c in conds[1:]:
        result = logical_and(result, c)
    return result


def any(*conds: ExprLike) -> PrimExpr:
    """Disjunction of conditions (``false`` when empty)."""
    if not conds:
        return const(False)
    result = _as_bool(conds[0])
    for c in conds[1:]:
        result = logical_or(result, c)
    return result


def cast(value: ExprLike, dtype: str) -> PrimExpr:
    """``value`` converted to ``dtype`` (the value itself if it already has it)."""
    dt.check(dtype)
    e = convert(value)
    if e.dtype == dtype:
        return e
    if isinstance(e, (IntImm, FloatImm)) and dt.lanes(dtype) == 1:
        v = e.value
        if dt.is_float(dtype):
            return FloatImm(dtype=dtype, value=float(v))
        if dt.is_bool(dtype):
            return IntImm(dtype=dtype, value=int(bool(v)))
        if isinstance(v, float):
            v = int(v)
        if dt.min_value(dtype) <= v <= dt.max_value(dtype):
            return IntImm(dtype=dtype, value=int(v))
    return Cast(dtype=dtype, value=e)


def select(condition: ExprLike, true_value: ExprLike, false_value: ExprLike) -> PrimExpr:
    """``true_value if condition else false_value``; both sides are evaluated."""
    cond = _as_bool(condition)
    t, f = _match(true_value, false_value)
    return Select(dtype=t.dtype, condition=cond, true_value=t, false_value=f)


def conjuncts(cond: PrimExpr) -> list[PrimExpr]:
    """The terms of a conjunction ``a and b and ...`` (a literal true contributes none):
    a tile's predicate joins one bound per split loop, a padding guard one per edge."""
    if type(cond) is And:
        return conjuncts(cond.a) + conjuncts(cond.b)
    if type(cond) is IntImm and cond.value == 1 and cond.dtype == "bool":
        return []
    return [cond]


def if_then_else(condition: ExprLike, true_value: ExprLike, false_value: ExprLike) -> PrimExpr:
    """Like select, but only the chosen side is evaluated (safe for guarded loads)."""
    cond = _as_bool(condition)
    t, f = _match(true_value, false_value)
    return Call(dtype=t.dtype, op="if_then_else", args=(cond, t, f))


def min_value(dtype: str) -> PrimExpr:
    """The smallest value of ``dtype`` (``-inf`` for floats)."""
    return const(dt.min_value(dtype), dtype)


def max_value(dtype: str) -> PrimExpr:
    """The largest value of ``dtype`` (``+inf`` for floats)."""
    return const(dt.max_value(dtype), dtype)


def is_const_int(e: object, value: int | None = None) -> bool:
    """True when ``e`` is an integer immediate (equal to ``value`` when given)."""
    return isinstance(e, IntImm) and (value is None or e.value == value)


def as_int(e: ExprLike) -> int | None:
    """The Python int of an integer immediate (or int), else None."""
    if isinstance(e, bool):
        return int(e)
    if isinstance(e, int):
        return e
    if isinstance(e, IntImm):
        return e.value
    return None

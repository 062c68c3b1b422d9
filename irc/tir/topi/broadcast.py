"""Binary (and ternary ``where``) operators with numpy broadcasting.

Each takes tensors or scalars (Python numbers or PrimExprs) and returns one stage named
``T_<op>`` whose loop variables are ``ax0, ax1, ...``. Size-1 dimensions that broadcast
read index 0 (``p3[ax0, 0, 0, ax3]``).
"""

from __future__ import annotations

from typing import Any, Callable

from ...core import dtype as dt
from ...core.diagnostics import IRTypeError
from .. import intrin
from ..expr import FloatImm, IntImm, PrimExpr, const, floordiv, floormod, select, truncdiv, truncmod
from ..expr import max_ as _max
from ..expr import min_ as _min
from ..te.tensor import Tensor, compute, register_tensor_operator
from .utils import BROADCAST, as_index, axis_names, broadcast_shape, index_dtype, read, scalar_like


def _dtype_of(x: Any) -> str | None:
    if isinstance(x, Tensor):
        return x.dtype
    if isinstance(x, PrimExpr):
        return x.dtype
    return None


def _operands(a: Any, b: Any) -> tuple[Any, Any]:
    """Python numbers take the dtype of the other operand."""
    da, db = _dtype_of(a), _dtype_of(b)
    if da is None and db is not None:
        a = scalar_like(a, db)
    if db is None and da is not None:
        b = scalar_like(b, da)
    return a, b


def _shape(x: Any) -> tuple:
    return x.shape if isinstance(x, Tensor) else ()


def broadcast_binary(name: str, fn: Callable[[PrimExpr, PrimExpr], PrimExpr], a: Any, b: Any,
                     tag: str = BROADCAST) -> Any:
    """A broadcasting stage ``T_<name>`` computing ``fn`` elementwise (a PrimExpr when both
    operands are scalars)."""
    a, b = _operands(a, b)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        return fn(a, b)
    out_shape = broadcast_shape(_shape(a), _shape(b), f"topi.{name}")
    return compute(out_shape, lambda *idx: fn(read(a, out_shape, idx), read(b, out_shape, idx)),
                   name=f"T_{name}", tag=tag, axis_names=axis_names(len(out_shape)))


def add(lhs: Any, rhs: Any) -> Any:
    """``lhs + rhs`` with broadcasting."""
    return broadcast_binary("add", lambda x, y: x + y, lhs, rhs)


def subtract(lhs: Any, rhs: Any) -> Any:
    """``lhs - rhs`` with broadcasting."""
    return broadcast_binary("subtract", lambda x, y: x - y, lhs, rhs)


def multiply(lhs: Any, rhs: Any) -> Any:
    """``lhs * rhs`` with broadcasting."""
    return broadcast_binary("multiply", lambda x, y: x * y, lhs, rhs)


def divide(lhs: Any, rhs: Any) -> Any:
    """``lhs / rhs`` with broadcasting (truncating division for integers)."""
    return broadcast_binary("divide", lambda x, y: x / y, lhs, rhs)


def _floor_div(x: PrimExpr, y: PrimExpr) -> PrimExpr:
    if dt.is_float(x.dtype):
        return intrin.floor(x / y)
    return floordiv(x, y)


def _floor_mod(x: PrimExpr, y: PrimExpr) -> PrimExpr:
    if dt.is_float(x.dtype):
        return x - intrin.floor(x / y) * y
    return floormod(x, y)


def floor_divide(lhs: Any, rhs: Any) -> Any:
    """``floor(lhs / rhs)`` with broadcasting."""
    return broadcast_binary("floor_divide", _floor_div, lhs, rhs)


def floor_mod(lhs: Any, rhs: Any) -> Any:
    """The remainder with the sign of ``rhs`` (Python's ``%``) with broadcasting."""
    return broadcast_binary("floor_mod", _floor_mod, lhs, rhs)


def trunc_divide(lhs: Any, rhs: Any) -> Any:
    """Integer division rounding toward zero (C semantics) with broadcasting."""
    return broadcast_binary("trunc_divide", lambda x, y: intrin.trunc(x / y)
                            if dt.is_float(x.dtype) else truncdiv(x, y), lhs, rhs)


def mod(lhs: Any, rhs: Any) -> Any:
    """The remainder with the sign of ``lhs`` (C's ``%`` / ``fmod``) with broadcasting."""
    return broadcast_binary("mod", lambda x, y: intrin.fmod(x, y)
                            if dt.is_float(x.dtype) else truncmod(x, y), lhs, rhs)


def _small_integer_exponent(y: PrimExpr) -> int | None:
    """2, 3 or 4 when ``y`` is that constant, else None."""
    if not isinstance(y, (FloatImm, IntImm)) or y.value not in (2, 3, 4):
        return None
    return int(y.value)


def power(lhs: Any, rhs: Any) -> Any:
    """``lhs ** rhs`` with broadcasting. Integers are raised in float64 and rounded back:
    exact while the result's magnitude is below 2**53 (every int32 result that does not
    overflow); a negative exponent gives 0, except for a base of 1 or -1."""
    def fn(x: PrimExpr, y: PrimExpr) -> PrimExpr:
        if dt.is_float(x.dtype):
            small = _small_integer_exponent(y)
            if small is not None:
                # x ** 2, 3, 4 as multiplications (within an ulp or two of pow, with
                # the same infinities and NaNs): GPT-2's GELU cubes every activation.
                out = x
                for _ in range(small - 1):
                    out = out * x
                return out
            return intrin.pow(x, y)
        if not dt.is_integer(x.dtype):
            raise IRTypeError(f"topi.power needs number tensors, got {x.dtype}")
        raised = intrin.round(intrin.pow(x.astype("float64"), y.astype("float64")))
        if not dt.is_int(y.dtype):
            return raised.astype(x.dtype)
        # x ** -k: 1 / x ** k, truncated toward zero as an integer.
        return select(y < const(0, y.dtype),
                      select(intrin.abs(x) == const(1, x.dtype), raised.astype(x.dtype),
                             const(0, x.dtype)),
                      raised.astype(x.dtype))
    return broadcast_binary("power", fn, lhs, rhs)


def maximum(lhs: Any, rhs: Any) -> Any:
    """The larger of the two, elementwise with broadcasting."""
    return broadcast_binary("maximum", _max, lhs, rhs)


def minimum(lhs: Any, rhs: Any) -> Any:
    """The smaller of the two, elementwise with broadcasting."""
    return broadcast_binary("minimum", _min, lhs, rhs)


def equal(lhs: Any, rhs: Any) -> Any:
    """``lhs == rhs`` (bool) with broadcasting."""
    return broadcast_binary("equal", lambda x, y: x == y, lhs, rhs)


def not_equal(lhs: Any, rhs: Any) -> Any:
    """``lhs != rhs`` (bool) with broadcasting."""
    return broadcast_binary("not_equal", lambda x, y: x != y, lhs, rhs)


def less(lhs: Any, rhs: Any) -> Any:
    """``lhs < rhs`` (bool) with broadcasting."""
    return broadcast_binary("less", lambda x, y: x < y, lhs, rhs)


def less_equal(lhs: Any, rhs: Any) -> Any:
    """``lhs <= rhs`` (bool) with broadcasting."""
    return broadcast_binary("less_equal", lambda x, y: x <= y, lhs, rhs)


def greater(lhs: Any, rhs: Any) -> Any:
    """``lhs > rhs`` (bool) with broadcasting."""
    return broadcast_binary("greater", lambda x, y: x > y, lhs, rhs)


def greater_equal(lhs: Any, rhs: Any) -> Any:
    """``lhs >= rhs`` (bool) with broadcasting."""
    return broadcast_binary("greater_equal", lambda x, y: x >= y, lhs, rhs)


def _as_bool(x: PrimExpr) -> PrimExpr:
    return x if dt.is_bool(x.dtype) else x != 0


def logical_and(lhs: Any, rhs: Any) -> Any:
    """Logical and (non-bool operands count as ``!= 0``) with broadcasting."""
    return broadcast_binary("logical_and", lambda x, y: _as_bool(x) & _as_bool(y), lhs, rhs)


def logical_or(lhs: Any, rhs: Any) -> Any:
    """Logical or with broadcasting."""
    return broadcast_binary("logical_or", lambda x, y: _as_bool(x) | _as_bool(y), lhs, rhs)


def logical_xor(lhs: Any, rhs: Any) -> Any:
    """Logical exclusive or with broadcasting."""
    return broadcast_binary("logical_xor", lambda x, y: _as_bool(x) != _as_bool(y), lhs, rhs)


def bitwise_and(lhs: Any, rhs: Any) -> Any:
    """Bitwise and of integers with broadcasting."""
    return broadcast_binary("bitwise_and", intrin.bitwise_and, lhs, rhs)


def bitwise_or(lhs: Any, rhs: Any) -> Any:
    """Bitwise or of integers with broadcasting."""
    return broadcast_binary("bitwise_or", intrin.bitwise_or, lhs, rhs)


def bitwise_xor(lhs: Any, rhs: Any) -> Any:
    """Bitwise exclusive or of integers with broadcasting."""
    return broadcast_binary("bitwise_xor", intrin.bitwise_xor, lhs, rhs)


def left_shift(lhs: Any, rhs: Any) -> Any:
    """``lhs << rhs`` for integers with broadcasting."""
    return broadcast_binary("left_shift", intrin.shift_left, lhs, rhs)


def right_shift(lhs: Any, rhs: Any) -> Any:
    """``lhs >> rhs`` for integers with broadcasting."""
    return broadcast_binary("right_shift", intrin.shift_right, lhs, rhs)


def where(condition: Any, x: Any, y: Any) -> Any:
    """``x`` where ``condition`` holds, else ``y``; all three broadcast together."""
    x, y = _operands(x, y)
    shapes = [_shape(condition), _shape(x), _shape(y)]
    out_shape = broadcast_shape(broadcast_shape(shapes[0], shapes[1], "topi.where"), shapes[2],
                                "topi.where")
    if not any(isinstance(v, Tensor) for v in (condition, x, y)):
        return select(_as_bool(condition), x, y)

    def fn(*idx: PrimExpr) -> PrimExpr:
        c = _as_bool(read(condition, out_shape, idx))
        tv, fv = read(x, out_shape, idx), read(y, out_shape, idx)
        if tv.dtype != fv.dtype:
            raise IRTypeError(f"topi.where: branches differ in dtype ({tv.dtype} vs "
                              f"{fv.dtype})")
        return select(c, tv, fv)

    return compute(out_shape, fn, name="T_where", tag=BROADCAST,
                   axis_names=axis_names(len(out_shape)))


def broadcast_to(data: Any, shape: Any) -> Tensor:
    """``data`` repeated along size-1 (or missing leading) dimensions to ``shape``."""
    if not isinstance(data, Tensor):
        raise IRTypeError("topi.broadcast_to takes a tensor")
    idt = index_dtype(data)
    target = tuple(as_index(s, idt) for s in (shape if isinstance(shape, (list, tuple))
                                               else [shape]))
    out_shape = broadcast_shape(data.shape, target, "topi.broadcast_to")
    if len(out_shape) != len(target):
        raise IRTypeError(f"topi.broadcast_to: cannot broadcast rank {data.ndim} to rank "
                          f"{len(target)}")
    return compute(target, lambda *idx: read(data, target, idx), name="T_broadcast_to",
                   tag=BROADCAST, axis_names=axis_names(len(target)))



for _name, _fn in (("add", add), ("subtract", subtract), ("multiply", multiply),
                   ("divide", divide)):
    register_tensor_operator(_name, _fn)  # A + B on te tensors

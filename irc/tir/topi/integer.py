"""Shifts and remainders defined for every operand value, with numpy broadcasting.

``shift(a, b, "left" | "right")``: an amount ``b`` outside ``[0, bits)`` gives 0, or -1
for a right shift of a negative signed value (numpy's and ONNX's answer; LLVM leaves such
shifts undefined). ``remainder(a, b, floor)``: ``fmod`` (sign of ``a``) or the floor
remainder (sign of ``b``, numpy's ``%`` including its signed zeros and infinities);
integer remainders by 0 are 0 and ``INT_MIN % -1`` is 0 rather than a trap.
"""

from __future__ import annotations

from typing import Any

from ...core import dtype as dt
from ...core.diagnostics import IRTypeError
from .. import intrin
from ..expr import PrimExpr, const, floormod, select, truncmod
from .broadcast import broadcast_binary
from .elemwise import unary


def shift(lhs: Any, rhs: Any, direction: str) -> Any:
    """``lhs << rhs`` or ``lhs >> rhs`` (arithmetic for signed dtypes) with defined results
    for every shift amount (module docstring)."""
    if direction not in ("left", "right"):
        raise IRTypeError(f"topi.shift: direction must be 'left' or 'right', got "
                          f"{direction!r}")

    def fn(a: PrimExpr, b: PrimExpr) -> PrimExpr:
        if not dt.is_integer(a.dtype):
            raise IRTypeError(f"topi.shift needs integer operands, got {a.dtype}")
        bits = dt.parse(a.dtype).bits
        zero = const(0, a.dtype)
        in_range = b < const(bits, b.dtype)
        if dt.is_int(b.dtype):
            in_range = in_range & (b >= const(0, b.dtype))
        # A shift by an amount kept in range, so the unused branch stays defined too.
        safe = select(in_range, b, const(0, b.dtype))
        if direction == "left":
            return select(in_range, intrin.shift_left(a, safe), zero)
        fill = select(a < zero, const(-1, a.dtype), zero) if dt.is_int(a.dtype) else zero
        return select(in_range, intrin.shift_right(a, safe), fill)

    return broadcast_binary(f"{direction}_shift", fn, lhs, rhs)


def _int_remainder(a: PrimExpr, b: PrimExpr, floor: bool) -> PrimExpr:
    if dt.is_int(a.dtype):
        # x % -1 is 0 for every x; dividing INT_MIN by -1 would trap.
        b = select(b == const(-1, b.dtype), const(1, b.dtype), b)
    return floormod(a, b) if floor else truncmod(a, b)


def _float_remainder(a: PrimExpr, b: PrimExpr, floor: bool) -> PrimExpr:
    r = intrin.fmod(a, b)
    if not floor:
        return r
    zero = const(0.0, a.dtype)
    # Move a nonzero remainder whose sign differs from the divisor's by one divisor; a
    # zero remainder takes the divisor's sign.
    fixed = select((r != zero) & ((r < zero) != (b < zero)), r + b, r)
    return select(fixed == zero, intrin.copysign(zero, b), fixed)


def remainder(lhs: Any, rhs: Any, floor: bool) -> Any:
    """The remainder of ``lhs / rhs``: with the sign of ``rhs`` when ``floor``, else with
    the sign of ``lhs`` (module docstring)."""
    def fn(a: PrimExpr, b: PrimExpr) -> PrimExpr:
        if dt.is_float(a.dtype):
            return _float_remainder(a, b, floor)
        return _int_remainder(a, b, floor)

    return broadcast_binary("floor_mod" if floor else "mod", fn, lhs, rhs)


def bitcast(x: Any, dtype: str) -> Any:
    """The bits of each element of ``x`` read as ``dtype`` (same width; bool as a byte)."""
    def fn(v: PrimExpr) -> PrimExpr:
        if dt.is_bool(v.dtype):
            v = v.astype("uint8")
        if dt.is_bool(dtype):
            return intrin.reinterpret("uint8", v) != const(0, "uint8")
        return intrin.reinterpret(dtype, v)

    return unary("bitcast", fn, x)


__all__ = ["shift", "remainder", "bitcast"]

"""Constant folding with the semantics the generated code has.

Integer arithmetic wraps around in two's complement at the dtype's width (what LLVM's
``add``/``mul`` without ``nsw`` do); ``Div``/``Mod`` truncate toward zero (C), while
``FloorDiv``/``FloorMod`` round toward negative infinity. Floating-point results are
rounded to the dtype's precision (float16, bfloat16 and the narrow float formats, the
latter as ``LowerNarrowDTypes`` encodes them: see ``dtype.round_to_format``). Division by a zero
constant is never folded: the expression is left for the program to evaluate.
"""

from __future__ import annotations

import math
import struct

from ...core import dtype as dt
from ..expr import FloatImm, IntImm, PrimExpr

_INT_INFO: dict[str, tuple[int, int, int, bool]] = {}


def _int_info(dtype: str) -> tuple[int, int, int, bool]:
    """(bits, min, max, signed) of an integer or bool dtype, cached."""
    info = _INT_INFO.get(dtype)
    if info is None:
        d = dt.parse(dtype)
        info = (d.bits, dt.min_value(dtype), dt.max_value(dtype), d.code == "int")
        _INT_INFO[dtype] = info
    return info


def wrap_int(value: int, dtype: str) -> int:
    """``value`` reduced to ``dtype``'s range in two's complement (bool: nonzero -> 1)."""
    if dtype == "bool":
        return 1 if value else 0
    bits, lo, hi, signed = _int_info(dtype)
    if lo <= value <= hi:
        return value
    value &= (1 << bits) - 1
    if signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def round_float(value: float, dtype: str) -> float:
    """``value`` rounded to the precision of the float ``dtype`` (round to nearest even;
    to a narrow float format as compiled code converts, out-of-range values included)."""
    if dtype in dt.FLOAT_FORMATS:
        return dt.round_to_format(value, dtype)
    if dtype == "float64" or math.isnan(value) or math.isinf(value):
        return value
    if dtype == "float32":
        try:
            return struct.unpack("<f", struct.pack("<f", value))[0]
        except OverflowError:
            return math.copysign(math.inf, value)
    if dtype == "float16":
        try:
            return struct.unpack("<e", struct.pack("<e", value))[0]
        except OverflowError:
            return math.copysign(math.inf, value)
    if dtype == "bfloat16":
        as32 = round_float(value, "float32")
        if math.isinf(as32):
            return as32
        bits = struct.unpack("<I", struct.pack("<f", as32))[0]
        bits += 0x7FFF + ((bits >> 16) & 1)  # round to nearest even on the dropped half
        return struct.unpack("<f", struct.pack("<I", (bits >> 16 << 16) & 0xFFFFFFFF))[0]
    return value


def truncdiv(a: int, b: int) -> int:
    """C division of integers (rounds toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def truncmod(a: int, b: int) -> int:
    """C remainder (sign follows the dividend)."""
    return a - b * truncdiv(a, b)


def _fdiv(a: float, b: float) -> float:
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _fmin(a, b):
    # min/max with a NaN operand return NaN, like LLVM's minimum/maximum.
    if isinstance(a, float) and (math.isnan(a) or math.isnan(b)):
        return math.nan
    return a if a <= b else b


def _fmax(a, b):
    if isinstance(a, float) and (math.isnan(a) or math.isnan(b)):
        return math.nan
    return a if a >= b else b


# Folding functions on Python values; None means "do not fold".
INT_BINARY = {
    "Add": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mul": lambda a, b: a * b,
    "Div": lambda a, b: truncdiv(a, b) if b != 0 else None,
    "Mod": lambda a, b: truncmod(a, b) if b != 0 else None,
    "FloorDiv": lambda a, b: a // b if b != 0 else None,
    "FloorMod": lambda a, b: a % b if b != 0 else None,
    "Min": _fmin,
    "Max": _fmax,
}

FLOAT_BINARY = {
    "Add": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mul": lambda a, b: a * b,
    "Div": _fdiv,
    "FloorDiv": lambda a, b: math.floor(a / b) if b != 0.0 else None,
    "FloorMod": lambda a, b: a - b * math.floor(a / b) if b != 0.0 else None,
    "Mod": lambda a, b: math.fmod(a, b) if b != 0.0 else None,
    "Min": _fmin,
    "Max": _fmax,
}

COMPARE = {
    "LT": lambda a, b: a < b,
    "LE": lambda a, b: a <= b,
    "GT": lambda a, b: a > b,
    "GE": lambda a, b: a >= b,
    "EQ": lambda a, b: a == b,
    "NE": lambda a, b: a != b,
}


_INT_CONSTS: dict[tuple[str, int], IntImm] = {}


def make_const(value, dtype: str) -> PrimExpr:
    """An immediate of scalar ``dtype`` holding ``value`` after wrapping/rounding.
    Integer immediates are shared (they are immutable and the simplifier makes many)."""
    if type(value) is int:
        hit = _INT_CONSTS.get((dtype, value))
        if hit is not None:
            return hit
        if dt.is_float(dtype):
            return FloatImm(dtype=dtype, value=round_float(float(value), dtype))
        imm = IntImm(dtype=dtype, value=wrap_int(value, dtype))
        if len(_INT_CONSTS) > 65536:
            _INT_CONSTS.clear()
        _INT_CONSTS[(dtype, value)] = imm
        return imm
    if dt.is_float(dtype):
        return FloatImm(dtype=dtype, value=round_float(float(value), dtype))
    return IntImm(dtype=dtype, value=wrap_int(int(value), dtype))


def fold_binary(op: str, a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
    """Fold ``op`` (a BinaryOp class name) on two scalar immediates of one dtype."""
    dtype = a.dtype
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        if dtype == "bool":
            return None
        value = INT_BINARY[op](a.value, b.value)
        return None if value is None else make_const(value, dtype)
    if isinstance(a, FloatImm) and isinstance(b, FloatImm):
        value = FLOAT_BINARY[op](a.value, b.value)
        return None if value is None else make_const(value, dtype)
    return None


def fold_compare(op: str, a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
    """Fold a comparison of two scalar immediates to a bool immediate."""
    if isinstance(a, (IntImm, FloatImm)) and isinstance(b, (IntImm, FloatImm)):
        return make_const(int(COMPARE[op](a.value, b.value)), "bool")
    return None


def fold_cast(value: PrimExpr, dtype: str) -> PrimExpr | None:
    """Fold a conversion of a scalar immediate to scalar ``dtype`` (C semantics); None when
    the result is undefined (a float out of the integer range, NaN to int)."""
    if not isinstance(value, (IntImm, FloatImm)) or dt.lanes(dtype) != 1:
        return None
    v = value.value
    if value.dtype in dt.FLOAT_FORMATS:  # an immediate may be written unrounded
        v = dt.format_value(v, value.dtype)
    if dtype == "bool":
        return IntImm(dtype="bool", value=1 if v else 0)
    if dt.is_float(dtype):
        return make_const(float(v), dtype)
    if dt.is_integer(dtype):
        if isinstance(v, float):
            if math.isnan(v) or math.isinf(v):
                return None
            iv = int(v)  # truncation toward zero
            if not dt.min_value(dtype) <= iv <= dt.max_value(dtype):
                return None
            return IntImm(dtype=dtype, value=iv)
        return IntImm(dtype=dtype, value=wrap_int(v, dtype))
    return None

"""Data types as strings: ``"float32"``, ``"int64"``, ``"bool"``, ``"float32x16"``, ``"handle"``.

irc keeps dtypes as plain strings (what users write and what the text format prints);
this module validates and takes them apart. A vector dtype appends ``x<lanes>``.

Narrow (storage) dtypes, named as ml_dtypes names them: the 8-bit floats
``float8_e4m3fn``, ``float8_e4m3fnuz``, ``float8_e5m2``, ``float8_e5m2fnuz``,
``float8_e8m0fnu``, the 4-bit float ``float4_e2m1fn`` and the integers ``int4``,
``uint4``, ``int2``, ``uint2``. Each element takes one byte (numpy arrays of ml_dtypes'
types of the same names hold them). Loop IR stores and loads them; every computation on
them happens in float32 (int32 for the integers) after the lowering pass
``LowerNarrowDTypes`` has turned their loads into decodes and their stores into
rounding encodes (see :mod:`irc.tir.transform.lower_narrow_dtypes`).
"""

from __future__ import annotations

import math
import re
import struct
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from .diagnostics import IRTypeError, did_you_mean, require

_DTYPE_RE = re.compile(r"^(int|uint|float|bfloat)(\d+)(?:x(\d+))?$")
_VALID_BITS = {
    "int": (2, 4, 8, 16, 32, 64),
    "uint": (2, 4, 8, 16, 32, 64),
    "float": (16, 32, 64),
    "bfloat": (16,),
}


class FloatFormat(NamedTuple):
    """A narrow float format: exponent and mantissa bits, exponent bias, whether it has a
    sign bit and infinities, and how NaN is spelled (``"fn"``: exponent and mantissa all
    ones; ``"ieee"``: all-ones exponent with a nonzero mantissa; ``"fnuz"``: the negative
    zero pattern; ``"none"``: no NaN)."""

    exp_bits: int
    man_bits: int
    bias: int
    signed: bool
    has_inf: bool
    nan: str

    @property
    def max_value(self) -> float:
        """The largest finite value."""
        top = (1 << self.exp_bits) - 1  # the largest exponent field
        man = (1 << self.man_bits) - 1  # and mantissa field
        if self.nan == "ieee" or self.has_inf:
            top -= 1  # the all-ones exponent is inf / NaN
        elif self.nan == "fn":  # the all-ones pattern is NaN
            if self.man_bits:
                man -= 1
            else:
                top -= 1
        return (1 + man / (1 << self.man_bits)) * 2.0 ** (top - self.bias)

    @property
    def min_exponent(self) -> int:
        """The exponent of the smallest positive value: the smallest subnormal's, or with
        no mantissa (``float8_e8m0fnu``: powers of two, no zero) the smallest power's."""
        return -self.bias if self.man_bits == 0 else 1 - self.bias - self.man_bits

    @property
    def has_negative_zero(self) -> bool:
        """Whether -0.0 is a value of the format (the ``fnuz`` formats spell NaN with it)."""
        return self.signed and self.nan != "fnuz"


FLOAT_FORMATS = {
    "float8_e4m3fn": FloatFormat(4, 3, 7, True, False, "fn"),
    "float8_e4m3fnuz": FloatFormat(4, 3, 8, True, False, "fnuz"),
    "float8_e5m2": FloatFormat(5, 2, 15, True, True, "ieee"),
    "float8_e5m2fnuz": FloatFormat(5, 2, 16, True, False, "fnuz"),
    "float8_e8m0fnu": FloatFormat(8, 0, 127, False, False, "fn"),
    "float4_e2m1fn": FloatFormat(2, 1, 1, True, False, "none"),
}
"""The narrow float dtypes, by name."""

_WIDE_FORMATS = {
    "float16": FloatFormat(5, 10, 15, True, True, "ieee"),
    "bfloat16": FloatFormat(8, 7, 127, True, True, "ieee"),
    "float32": FloatFormat(8, 23, 127, True, True, "ieee"),
    "float64": FloatFormat(11, 52, 1023, True, True, "ieee"),
}

NARROW_INTS = ("int4", "uint4", "int2", "uint2")
"""The narrow integer dtypes (one element per byte, the low bits)."""


class DType(NamedTuple):
    """A parsed dtype: ``code`` in int/uint/float/bfloat/bool/handle/void, bits, lanes."""

    code: str
    bits: int
    lanes: int

    def __str__(self) -> str:
        if self.code in ("handle", "void"):
            return self.code
        base = ("bool" if self.code == "bool" else self.code if self.code in FLOAT_FORMATS
                else f"{self.code}{self.bits}")
        return base if self.lanes == 1 else f"{base}x{self.lanes}"


@lru_cache(maxsize=None)
def parse(dtype: str) -> DType:
    """Take a dtype string apart; raises IRTypeError for unknown spellings."""
    if not isinstance(dtype, str):
        raise IRTypeError(f"dtype must be a string such as 'float32', got {dtype!r}")
    if dtype in ("handle", "void"):
        return DType(dtype, 64 if dtype == "handle" else 0, 1)
    base, _, lanes_s = dtype.partition("x") if dtype.startswith("bool") else (dtype, "", "")
    if base == "bool":
        lanes = int(lanes_s) if lanes_s.isdigit() else 1
        if lanes_s and not lanes_s.isdigit():
            raise IRTypeError(f"unknown dtype {dtype!r}")
        return DType("bool", 1, lanes)
    m = _DTYPE_RE.match(dtype)
    if not m:
        name, sep, lanes_s = dtype.rpartition("x")  # the float formats' names have no x
        if not sep:
            name, lanes_s = dtype, ""
        if name in FLOAT_FORMATS and (not lanes_s or lanes_s.isdigit()):
            lanes = int(lanes_s) if lanes_s else 1
            if lanes < 1:
                raise IRTypeError(f"dtype {dtype!r} must have at least one lane")
            return DType(name, FLOAT_FORMATS[name].exp_bits + FLOAT_FORMATS[name].man_bits
                         + FLOAT_FORMATS[name].signed, lanes)
        common = ("float32", "float16", "float64", "bfloat16", "int8", "int16", "int32",
                  "int64", "uint8", "uint16", "uint32", "uint64", "bool", *FLOAT_FORMATS)
        raise IRTypeError(f"unknown dtype {dtype!r}{did_you_mean(dtype, common)}; expected "
                          "e.g. float32, float16, int64, uint8, bool")
    code, bits, lanes = m.group(1), int(m.group(2)), int(m.group(3) or 1)
    if bits not in _VALID_BITS[code]:
        raise IRTypeError(f"unknown dtype {dtype!r}: {code} has widths {_VALID_BITS[code]}")
    if lanes < 1:
        raise IRTypeError(f"dtype {dtype!r} must have at least one lane")
    return DType(code, bits, lanes)


def check(dtype: str) -> str:
    """Validate ``dtype`` and return it unchanged."""
    parse(dtype)
    return dtype


def is_float(dtype: str) -> bool:
    """Floating point (``float*``, ``bfloat16`` and the narrow float formats)."""
    code = parse(dtype).code
    return code in ("float", "bfloat") or code in FLOAT_FORMATS


def is_narrow(dtype: str) -> bool:
    """A narrow storage dtype: one of :data:`FLOAT_FORMATS` or :data:`NARROW_INTS` (of
    any lane count). Loop IR computes on their values in float32 or int32."""
    d = parse(dtype)
    return d.code in FLOAT_FORMATS or (d.code in ("int", "uint") and d.bits < 8)


def compute_dtype(dtype: str) -> str:
    """The dtype loop IR computes values of ``dtype`` in: float32 for narrow floats,
    int32 for narrow integers, ``dtype`` itself otherwise (lanes kept)."""
    d = parse(dtype)
    if d.code in FLOAT_FORMATS:
        return with_lanes("float32", d.lanes)
    if d.code in ("int", "uint") and d.bits < 8:
        return with_lanes("int32", d.lanes)
    return dtype


def float_format(dtype: str) -> FloatFormat:
    """The :class:`FloatFormat` of a scalar float dtype (the IEEE ones and bfloat16
    included)."""
    f = FLOAT_FORMATS.get(dtype) or _WIDE_FORMATS.get(dtype)
    if f is None:
        raise IRTypeError(f"{dtype!r} is not a scalar floating-point dtype")
    return f


def holds_every_value(wide: str, narrow: str) -> bool:
    """Whether float dtype ``wide`` represents every value of float dtype ``narrow``
    exactly (its infinities, NaN and negative zero included), so that a conversion to
    ``wide`` and back is the identity: float16 holds every float8_e5m2, bfloat16 does not
    hold every float16 (fewer mantissa bits) nor float16 every bfloat16 (smaller range)."""
    a, b = float_format(element_of(narrow)), float_format(element_of(wide))
    return (b.man_bits >= a.man_bits and b.max_value >= a.max_value
            and b.min_exponent <= a.min_exponent and (b.has_inf or not a.has_inf)
            and (b.nan != "none" or a.nan == "none")
            and (b.has_negative_zero or not a.has_negative_zero))


def round_to_format(value: float, name: str) -> float:
    """``value`` converted to the narrow float format ``name`` (a key of
    :data:`FLOAT_FORMATS`), as compiled code converts it (``LowerNarrowDTypes``' encode,
    the rounding ml_dtypes and ONNX's reference do): rounded to float32 first, then to
    nearest, ties to even; beyond the largest finite value infinity where the format has
    one, NaN otherwise (float4_e2m1fn saturates; float8_e8m0fnu rounds magnitudes up to
    a power of two and saturates)."""
    f = FLOAT_FORMATS[name]
    try:
        x = struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        x = math.copysign(math.inf, value)
    if name == "float8_e8m0fnu":
        if math.isnan(x) or math.isinf(x):
            return math.nan
        bits = struct.unpack("<I", struct.pack("<f", x))[0]
        exp = (bits >> 23) & 0xFF
        if bits & 0x7FFFFF and exp < 0xFE:
            exp += 1
        return math.ldexp(1.0, exp - 127)
    if math.isnan(x):  # float4 has no NaN: the other sign's zero, as ml_dtypes gives
        if f.nan == "none":
            return math.copysign(0.0, -x)
        return math.copysign(math.nan, x) if f.nan != "fnuz" else math.nan
    a, top = abs(x), f.max_value
    if f.nan == "none":
        a = min(a, top)
    if math.isinf(a):
        r = a
    else:
        quantum = max(math.frexp(a)[1] - 1, 1 - f.bias) - f.man_bits
        r = math.ldexp(round(math.ldexp(a, -quantum)), quantum)  # round(): ties to even
    if r > top:
        r = math.inf if f.has_inf else math.nan
    if r == 0.0 and not f.has_negative_zero:
        return 0.0
    return math.copysign(r, x)


def format_value(value: float, name: str) -> float:
    """The value an immediate of narrow float format ``name`` written as ``value`` stands
    for: ``value`` itself when the format has it, else ``value`` converted
    (:func:`round_to_format`)."""
    if name == "float8_e8m0fnu" and value == _E8M0_SMALLEST:
        # Code 0; converting it, a float32 subnormal, rounds up (ONNX's rule).
        return value
    return round_to_format(value, name)


_E8M0_SMALLEST = math.ldexp(1.0, -127)


def is_int(dtype: str) -> bool:
    """Signed integer (bool excluded)."""
    return parse(dtype).code == "int"


def is_uint(dtype: str) -> bool:
    """Unsigned integer."""
    return parse(dtype).code == "uint"


def is_integer(dtype: str) -> bool:
    """Signed or unsigned integer (bool excluded)."""
    return parse(dtype).code in ("int", "uint")


def is_bool(dtype: str) -> bool:
    """The boolean dtype."""
    return parse(dtype).code == "bool"


def is_handle(dtype: str) -> bool:
    """An opaque pointer (``handle``)."""
    return dtype == "handle"


def bits(dtype: str) -> int:
    """Bits per lane."""
    return parse(dtype).bits


def lanes(dtype: str) -> int:
    """Number of vector lanes (1 for scalars)."""
    return parse(dtype).lanes


def element_of(dtype: str) -> str:
    """The scalar dtype of a (possibly vector) dtype: ``float32x16`` -> ``float32``."""
    d = parse(dtype)
    return str(DType(d.code, d.bits, 1))


def with_lanes(dtype: str, n: int) -> str:
    """``dtype``'s element type with ``n`` lanes: ``float32``, 4 -> ``float32x4``."""
    d = parse(dtype)
    return str(DType(d.code, d.bits, n))


def itemsize(dtype: str) -> int:
    """Bytes per element in memory (bool and the narrow dtypes take one byte)."""
    d = parse(dtype)
    return max(1, d.bits // 8) * d.lanes


_NUMPY_NAMES = {"bfloat16": "uint16"}


def to_numpy(dtype: str):
    """The numpy dtype that stores ``dtype`` (bfloat16 is stored as its raw uint16 bits)."""
    d = parse(dtype)
    if d.lanes != 1:
        raise IRTypeError(f"vector dtype {dtype!r} has no numpy equivalent")
    if is_narrow(dtype):
        return narrow_numpy(dtype)
    return np.dtype(_NUMPY_NAMES.get(dtype, dtype))


def storage(values, dtype: str) -> np.ndarray:
    """``values`` (numbers, lists, arrays of any dtype) as an array of ``dtype``'s storage
    (``to_numpy``'s dtype) holding the same values: bfloat16 is rounded to nearest even and
    held as its bits, so a value never becomes a bit pattern by accident (``1`` as the
    bfloat16 bits 0x0001 is 9.2e-41)."""
    if dtype == "bfloat16":
        return bfloat16_bits(values)
    return np.asarray(values).astype(to_numpy(dtype))


def values_of(array: np.ndarray, dtype: str) -> np.ndarray:
    """The values held by ``array``, storage of ``dtype`` (``storage``'s inverse): bfloat16
    bits as float32, other arrays as they are."""
    array = np.asarray(array)
    if dtype == "bfloat16":
        return (array.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return array


def user_numpy(dtype: str):
    """The numpy dtype of the arrays of ``dtype`` irc takes and gives back (VM arguments
    and results, ``Tensor.numpy()``): ``to_numpy``'s, except bfloat16 as ml_dtypes'
    ``bfloat16`` (the same 16 bits, a dtype numpy computes with), or its raw uint16 bits
    where ml_dtypes is not installed (``irc.tensor`` and compiled kernels also take the
    bits)."""
    if dtype == "bfloat16":
        return _bfloat16_numpy()
    return to_numpy(dtype)


@lru_cache(maxsize=1)
def _bfloat16_numpy():
    try:
        import ml_dtypes
    except ImportError:
        return np.dtype("uint16")
    return np.dtype(ml_dtypes.bfloat16)


def narrow_numpy(dtype: str):
    """ml_dtypes' numpy dtype of a narrow dtype (one byte per element)."""
    ml_dtypes = require("ml_dtypes", purpose=f"an array of {dtype}",
                        install="pip install ml_dtypes (it comes with irc's onnx extra)")
    return np.dtype(getattr(ml_dtypes, dtype))


def from_numpy(np_dtype) -> str:
    """The irc dtype name of a numpy dtype."""
    # Cached: the VM checks the dtype of every argument on every call.
    try:
        return _FROM_NUMPY[np_dtype]
    except (KeyError, TypeError):
        pass
    name = np.dtype(np_dtype).name
    if name != "bool":
        check(name)
    try:
        _FROM_NUMPY[np_dtype] = name
    except TypeError:  # an unhashable dtype description
        pass
    return name


_FROM_NUMPY: dict = {}


def min_value(dtype: str):
    """The smallest value of ``dtype`` (``-inf`` for floats)."""
    d = parse(dtype)
    if d.code == "int":
        return -(1 << (d.bits - 1))
    if d.code == "uint" or d.code == "bool":
        return 0
    return float("-inf")


def max_value(dtype: str):
    """The largest value of ``dtype`` (``inf`` for floats)."""
    d = parse(dtype)
    if d.code == "int":
        return (1 << (d.bits - 1)) - 1
    if d.code == "uint":
        return (1 << d.bits) - 1
    if d.code == "bool":
        return 1
    return float("inf")


def bfloat16_bits(arr: np.ndarray) -> np.ndarray:
    """The bfloat16 bits (uint16) of ``arr``'s values, rounded to nearest even."""
    f = np.asarray(arr, dtype=np.float32, order="C")
    bits = f.view(np.uint32).astype(np.uint64)
    # np.asarray: arithmetic on a 0-d array gives a numpy scalar, not an array
    rounded = np.asarray((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(f)
    if nan.any():
        rounded[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)
    return rounded

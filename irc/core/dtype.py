"""Data types as strings: ``"float32"``, ``"int64"``, ``"bool"``, ``"float32x16"``, ``"handle"``.

irc keeps dtypes as plain strings (what users write and what the text format prints);
this module validates and takes them apart. A vector dtype appends ``x<lanes>``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from .diagnostics import IRTypeError

_SCALAR_CODES = ("int", "uint", "float", "bfloat")
_DTYPE_RE = re.compile(r"^(int|uint|float|bfloat)(\d+)(?:x(\d+))?$")
_VALID_BITS = {
    "int": (8, 16, 32, 64),
    "uint": (8, 16, 32, 64),
    "float": (16, 32, 64),
    "bfloat": (16,),
}


class DType(NamedTuple):
    """A parsed dtype: ``code`` in int/uint/float/bfloat/bool/handle/void, bits, lanes."""

    code: str
    bits: int
    lanes: int

    def __str__(self) -> str:
        if self.code in ("handle", "void"):
            return self.code
        base = "bool" if self.code == "bool" else f"{self.code}{self.bits}"
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
        raise IRTypeError(
            f"unknown dtype {dtype!r}; expected e.g. float32, float16, int64, uint8, bool"
        )
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
    """Floating point (``float*`` and ``bfloat16``)."""
    return parse(dtype).code in ("float", "bfloat")


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
    """Bytes per element in memory (bool is stored as one byte)."""
    d = parse(dtype)
    return max(1, d.bits // 8) * d.lanes


_NUMPY_NAMES = {"bfloat16": "uint16"}


def to_numpy(dtype: str):
    """The numpy dtype that stores ``dtype`` (bfloat16 is stored as its raw uint16 bits)."""
    d = parse(dtype)
    if d.lanes != 1:
        raise IRTypeError(f"vector dtype {dtype!r} has no numpy equivalent")
    return np.dtype(_NUMPY_NAMES.get(dtype, dtype))


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
    f = np.ascontiguousarray(arr, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(f)
    if nan.any():
        rounded[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)
    return rounded

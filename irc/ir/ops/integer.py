"""Bitwise operators, shifts and remainders, elementwise with numpy broadcasting.

``bitwise_and``, ``bitwise_or``, ``bitwise_xor`` and ``bitwise_not`` take integer (or
bool) tensors. ``left_shift`` / ``right_shift`` shift integers by amounts of the same
dtype; an amount outside ``[0, bits)`` gives 0 (a left shift, or a right shift of a
non-negative value) or -1 (a right shift of a negative value): every amount has a defined
result. ``mod`` is the remainder with the sign of the dividend (C's ``%`` and ``fmod``)
and ``floor_mod`` the one with the sign of the divisor (Python's ``%``), for integers and
floats; an integer remainder by 0 is 0 (for floats it is NaN). ``bitcast`` reads each
element's bits as another dtype of the same width.
"""

from __future__ import annotations

from typing import Any

from ...core import dtype as dt
from ..expr import Call, Expr
from ..op import BROADCAST, ELEMWISE, AttrSpec, make_call, register_op
from ..struct_info import StructInfo
from ._common import conv_required_dtype, fail, tensor_arg, with_dtype
from .binary import infer_binary

# name -> (operand kinds: "int" integers or bools, "num" any number; description)
_BINARY: dict[str, tuple[str, str]] = {
    "bitwise_and": ("int", "x1 & x2"),
    "bitwise_or": ("int", "x1 | x2"),
    "bitwise_xor": ("int", "x1 ^ x2"),
    "left_shift": ("int", "x1 << x2 (0 for amounts outside [0, bits))"),
    "right_shift": ("int", "x1 >> x2, arithmetic for signed dtypes (sign fill for amounts "
                           "outside [0, bits))"),
    "mod": ("num", "remainder of x1 / x2 with the sign of x1 (C's fmod)"),
    "floor_mod": ("num", "remainder of x1 / x2 with the sign of x2 (Python's %)"),
}


def _require_int(call: Call, dtype: str) -> None:
    if dtype and not (dt.is_integer(dtype) or dt.is_bool(dtype)):
        raise fail(call, f"operands must be integer tensors, got {dtype}")


def _register(name: str, kind: str, doc: str) -> None:
    def infer(call: Call, ctx: Any) -> StructInfo:
        out = infer_binary(call, "arith")
        if kind == "int":
            _require_int(call, out.dtype)
            if name in ("left_shift", "right_shift") and dt.is_bool(out.dtype):
                raise fail(call, "cannot shift bool tensors")
        return out

    register_op(name, ["x1", "x2"], pattern=BROADCAST,
                doc=f"R.{name}(x1, x2): elementwise {doc}, broadcasting.")(infer)


for _name, (_kind, _doc) in _BINARY.items():
    _register(_name, _kind, _doc)


@register_op("bitwise_not", ["x"], pattern=ELEMWISE)
def _infer_bitwise_not(call: Call, ctx: Any) -> StructInfo:
    """R.bitwise_not(x): elementwise ``~x`` of an integer tensor."""
    x = tensor_arg(call, 0)
    _require_int(call, x.dtype)
    return x


@register_op("bitcast", ["x"], [AttrSpec("dtype", convert=conv_required_dtype)],
             pattern=ELEMWISE)
def _infer_bitcast(call: Call, ctx: Any) -> StructInfo:
    """R.bitcast(x, dtype): each element's bits read as ``dtype``, of the same width (bool
    is 8 bits wide here, as ONNX stores it)."""
    x = tensor_arg(call, 0)
    to = call.attrs["dtype"]
    if x.dtype and _bit_width(x.dtype) != _bit_width(to):
        raise fail(call, f"cannot bitcast {x.dtype} ({_bit_width(x.dtype)} bits) to {to} "
                         f"({_bit_width(to)} bits): the widths differ")
    return with_dtype(x, to)


def _bit_width(dtype: str) -> int:
    return 8 if dt.is_bool(dtype) else dt.parse(dtype).bits


def bitcast(x: Expr, dtype: str) -> Expr:
    """``R.bitcast(x, dtype)``: the bits of each element read as ``dtype``."""
    return make_call("bitcast", x, dtype=dtype)


def _builder(name: str):
    def build(x1: Expr, x2: Expr) -> Expr:
        return make_call(name, x1, x2)

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"``R.{name}(x1, x2)``: elementwise {_BINARY[name][1]}, broadcasting."
    return build


bitwise_and = _builder("bitwise_and")
bitwise_or = _builder("bitwise_or")
bitwise_xor = _builder("bitwise_xor")
left_shift = _builder("left_shift")
right_shift = _builder("right_shift")
mod = _builder("mod")
floor_mod = _builder("floor_mod")


def bitwise_not(x: Expr) -> Expr:
    """``R.bitwise_not(x)``: elementwise ``~x``."""
    return make_call("bitwise_not", x)


__all__ = [*_BINARY, "bitwise_not", "bitcast"]

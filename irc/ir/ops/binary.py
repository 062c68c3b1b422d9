"""Elementwise binary operators with numpy broadcasting, comparisons, logical operators
and ``where``.

Both operands must have the same dtype (mixing raises with the fix: an explicit
``R.astype``). Arithmetic keeps the dtype; comparisons and logical operators give
``bool``. Broadcasting follows :func:`irc.ir.ops._common.broadcast_shapes`: with
symbolic dimensions, equal variables broadcast, 1 broadcasts, a symbolic dimension
meeting a constant ``c != 1`` gives ``c``, and two different symbolic dimensions give a
result of known rank but unknown shape.
"""

from __future__ import annotations

from typing import Any

from ...core import dtype as dt
from ..expr import Call, Expr
from ..op import BROADCAST, make_call, register_op
from ..struct_info import StructInfo
from ._common import broadcast_sinfo, fail, same_dtype, tensor_arg

# name -> (result kind, description). Kinds: "arith" keeps the dtype, "compare" gives
# bool, "logical" needs bool operands and gives bool.
_BINARY: dict[str, tuple[str, str]] = {
    "add": ("arith", "x1 + x2"),
    "subtract": ("arith", "x1 - x2"),
    "multiply": ("arith", "x1 * x2"),
    "divide": ("arith", "x1 / x2 (true division for floats, truncating for integers)"),
    "floor_divide": ("arith", "floor(x1 / x2)"),
    "power": ("arith", "x1 raised to x2"),
    "maximum": ("arith", "the larger of x1 and x2"),
    "minimum": ("arith", "the smaller of x1 and x2"),
    "equal": ("compare", "x1 == x2"),
    "not_equal": ("compare", "x1 != x2"),
    "less": ("compare", "x1 < x2"),
    "less_equal": ("compare", "x1 <= x2"),
    "greater": ("compare", "x1 > x2"),
    "greater_equal": ("compare", "x1 >= x2"),
    "logical_and": ("logical", "x1 and x2 (bool tensors)"),
    "logical_or": ("logical", "x1 or x2 (bool tensors)"),
}


def infer_binary(call: Call, kind: str) -> StructInfo:
    """Struct info of a broadcasting binary call of ``kind`` arith/compare/logical."""
    a, b = tensor_arg(call, 0), tensor_arg(call, 1)
    dtype = same_dtype(call, a.dtype, b.dtype)
    if kind == "logical":
        for d in (a.dtype, b.dtype):
            if d and not dt.is_bool(d):
                raise fail(call, f"operands must be bool tensors, got {d}",
                           hint="compare with R.not_equal(x, 0) to get a bool tensor")
        dtype = "bool"
    elif kind == "compare":
        dtype = "bool"
    return broadcast_sinfo(call, [a, b], dtype)


def _register_binary(name: str, kind: str, doc: str) -> None:
    def infer(call: Call, ctx: Any) -> StructInfo:
        return infer_binary(call, kind)

    register_op(name, ["x1", "x2"], pattern=BROADCAST,
                doc=f"R.{name}(x1, x2): elementwise {doc}, broadcasting.")(infer)


for _name, (_kind, _doc) in _BINARY.items():
    _register_binary(_name, _kind, _doc)


@register_op("where", ["condition", "x1", "x2"], pattern=BROADCAST)
def _infer_where(call: Call, ctx: Any) -> StructInfo:
    """R.where(condition, x1, x2): x1 where condition holds, else x2 (all broadcast)."""
    cond, a, b = tensor_arg(call, 0), tensor_arg(call, 1), tensor_arg(call, 2)
    if cond.dtype and not dt.is_bool(cond.dtype):
        raise fail(call, f"the condition must be a bool tensor, got {cond.dtype}")
    dtype = same_dtype(call, a.dtype, b.dtype)
    return broadcast_sinfo(call, [cond, a, b], dtype)


def _builder(name: str):
    def build(x1: Expr, x2: Expr) -> Expr:
        return make_call(name, x1, x2)

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"``R.{name}(x1, x2)``: elementwise {_BINARY[name][1]}, broadcasting."
    return build


add = _builder("add")
subtract = _builder("subtract")
multiply = _builder("multiply")
divide = _builder("divide")
floor_divide = _builder("floor_divide")
power = _builder("power")
maximum = _builder("maximum")
minimum = _builder("minimum")
equal = _builder("equal")
not_equal = _builder("not_equal")
less = _builder("less")
less_equal = _builder("less_equal")
greater = _builder("greater")
greater_equal = _builder("greater_equal")
logical_and = _builder("logical_and")
logical_or = _builder("logical_or")


def where(condition: Expr, x1: Expr, x2: Expr) -> Expr:
    """``R.where(condition, x1, x2)``: elementwise selection with broadcasting."""
    return make_call("where", condition, x1, x2)


__all__ = [*_BINARY, "where", "infer_binary"]

"""Elementwise unary operators: math functions, rounding, ``clip`` and ``astype``.

The result has the input's shape and dtype (``astype`` changes the dtype,
``logical_not`` gives ``bool``). Transcendental functions need a floating-point input;
rounding, ``abs`` and ``negative`` accept any numeric dtype; ``isnan`` and ``isinf`` give
``bool``.
"""

from __future__ import annotations

from typing import Any, Callable

from ...core import dtype as dt
from ..expr import Call, Expr
from ..op import ELEMWISE, AttrSpec, make_call, register_op
from ..struct_info import StructInfo
from ._common import (
    conv_required_dtype,
    fail,
    require_float,
    scalar_dtype,
    scalar_sinfo,
    tensor_arg,
    to_prim_value,
    with_dtype,
)

# name -> (needs a floating-point input, one-line description)
_UNARY: dict[str, tuple[bool, str]] = {
    "exp": (True, "e raised to each element"),
    "log": (True, "natural logarithm of each element"),
    "sqrt": (True, "square root of each element"),
    "rsqrt": (True, "reciprocal square root of each element"),
    "tanh": (True, "hyperbolic tangent of each element"),
    "sigmoid": (True, "logistic sigmoid 1 / (1 + exp(-x)) of each element"),
    "erf": (True, "Gauss error function of each element"),
    "sin": (True, "sine of each element"),
    "cos": (True, "cosine of each element"),
    "asin": (True, "arc sine of each element"),
    "acos": (True, "arc cosine of each element"),
    "atan": (True, "arc tangent of each element"),
    "tan": (True, "tangent of each element"),
    "sinh": (True, "hyperbolic sine of each element"),
    "cosh": (True, "hyperbolic cosine of each element"),
    "asinh": (True, "inverse hyperbolic sine of each element"),
    "acosh": (True, "inverse hyperbolic cosine of each element"),
    "atanh": (True, "inverse hyperbolic tangent of each element"),
    "log1p": (True, "log(1 + x) of each element, exact for small x"),
    "expm1": (True, "exp(x) - 1 of each element, exact for small x"),
    "abs": (False, "absolute value of each element"),
    "negative": (False, "negation of each element"),
    "floor": (False, "each element rounded down"),
    "ceil": (False, "each element rounded up"),
    "round": (False, "each element rounded to the nearest integer, halves to even"),
}


def infer_unary(call: Call, float_only: bool) -> StructInfo:
    """Struct info of an elementwise unary call: the input's."""
    x = tensor_arg(call, 0)
    if float_only:
        require_float(call, x)
    return x


def _register_unary(name: str, float_only: bool, doc: str, *, pattern: int = ELEMWISE) -> None:
    def infer(call: Call, ctx: Any) -> StructInfo:
        return infer_unary(call, float_only)

    register_op(name, ["x"], pattern=pattern, doc=f"R.{name}(x): {doc}.")(infer)


def unary_builder(name: str, doc: str) -> Callable[[Expr], Expr]:
    """A builder function ``f(x) -> Call`` for the unary operator ``name``."""

    def build(x: Expr) -> Expr:
        return make_call(name, x)

    build.__name__ = build.__qualname__ = name.rsplit(".", 1)[-1]
    build.__doc__ = f"``R.{name}(x)``: {doc}."
    return build


for _name, (_float_only, _doc) in _UNARY.items():
    _register_unary(_name, _float_only, _doc)


@register_op("logical_not", ["x"], pattern=ELEMWISE)
def _infer_logical_not(call: Call, ctx: Any) -> StructInfo:
    """R.logical_not(x): elementwise negation of a bool tensor."""
    x = tensor_arg(call, 0)
    if x.dtype and not dt.is_bool(x.dtype):
        raise fail(call, f"the input must be a bool tensor, got {x.dtype}",
                   hint="compare with R.not_equal(x, 0) to get a bool tensor")
    return with_dtype(x, "bool")


def _register_float_test(name: str, doc: str) -> None:
    def infer(call: Call, ctx: Any) -> StructInfo:
        return with_dtype(tensor_arg(call, 0), "bool")

    register_op(name, ["x"], pattern=ELEMWISE, doc=f"R.{name}(x): {doc}.")(infer)


# name -> description; bool results, false for every integer element.
_FLOAT_TESTS = {"isnan": "true where an element is NaN",
                "isinf": "true where an element is +inf or -inf"}
for _name, _doc in _FLOAT_TESTS.items():
    _register_float_test(_name, _doc)


def _canonicalize_clip(operands: list, attrs: dict, sinfo_args: list) -> tuple:
    x = operands[0]
    dtype = None
    if isinstance(x, Expr) and x.struct_info is not None:
        dtype = getattr(x.struct_info, "dtype", None) or None
    operands[1] = to_prim_value(operands[1], "R.clip: min", dtype)
    operands[2] = to_prim_value(operands[2], "R.clip: max", dtype)
    return operands, attrs, sinfo_args


@register_op("clip", ["x", "min", "max"], pattern=ELEMWISE,
             extra={"canonicalize": _canonicalize_clip})
def _infer_clip(call: Call, ctx: Any) -> StructInfo:
    """R.clip(x, min, max): each element limited to [min, max] (bounds are scalars)."""
    x = tensor_arg(call, 0)
    for i in (1, 2):
        s = scalar_sinfo(call, i)
        d = scalar_dtype(s)
        if x.dtype and d and dt.is_float(d) and not dt.is_float(x.dtype):
            raise fail(call, f"bound {d} cannot clip an integer tensor of dtype {x.dtype}")
    return x


@register_op("astype", ["x"], [AttrSpec("dtype", convert=conv_required_dtype)],
             pattern=ELEMWISE)
def _infer_astype(call: Call, ctx: Any) -> StructInfo:
    """R.astype(x, dtype): each element converted to ``dtype``."""
    return with_dtype(tensor_arg(call, 0), call.attrs["dtype"])


exp = unary_builder("exp", _UNARY["exp"][1])
log = unary_builder("log", _UNARY["log"][1])
sqrt = unary_builder("sqrt", _UNARY["sqrt"][1])
rsqrt = unary_builder("rsqrt", _UNARY["rsqrt"][1])
tanh = unary_builder("tanh", _UNARY["tanh"][1])
sigmoid = unary_builder("sigmoid", _UNARY["sigmoid"][1])
erf = unary_builder("erf", _UNARY["erf"][1])
sin = unary_builder("sin", _UNARY["sin"][1])
cos = unary_builder("cos", _UNARY["cos"][1])
asin = unary_builder("asin", _UNARY["asin"][1])
acos = unary_builder("acos", _UNARY["acos"][1])
atan = unary_builder("atan", _UNARY["atan"][1])
tan = unary_builder("tan", _UNARY["tan"][1])
sinh = unary_builder("sinh", _UNARY["sinh"][1])
cosh = unary_builder("cosh", _UNARY["cosh"][1])
asinh = unary_builder("asinh", _UNARY["asinh"][1])
acosh = unary_builder("acosh", _UNARY["acosh"][1])
atanh = unary_builder("atanh", _UNARY["atanh"][1])
log1p = unary_builder("log1p", _UNARY["log1p"][1])
expm1 = unary_builder("expm1", _UNARY["expm1"][1])
isnan = unary_builder("isnan", _FLOAT_TESTS["isnan"])
isinf = unary_builder("isinf", _FLOAT_TESTS["isinf"])
abs = unary_builder("abs", _UNARY["abs"][1])
negative = unary_builder("negative", _UNARY["negative"][1])
floor = unary_builder("floor", _UNARY["floor"][1])
ceil = unary_builder("ceil", _UNARY["ceil"][1])
round = unary_builder("round", _UNARY["round"][1])
logical_not = unary_builder("logical_not", "elementwise negation of a bool tensor")


def clip(x: Expr, min: Any, max: Any) -> Expr:
    """``R.clip(x, min, max)``; Python numbers become ``R.prim_value`` operands."""
    return make_call("clip", x, min, max)


def astype(x: Expr, dtype: str) -> Expr:
    """``R.astype(x, dtype)``: elementwise conversion."""
    return make_call("astype", x, dtype=dtype)


__all__ = [*_UNARY, *_FLOAT_TESTS, "logical_not", "clip", "astype", "unary_builder", "infer_unary"]

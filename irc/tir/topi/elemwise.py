"""Elementwise unary operators: math functions, activations, clip and cast.

Each returns one stage ``T_<op>`` over ``ax0, ax1, ...`` reading the input at the same
position.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from ...core import dtype as dt
from ...core.diagnostics import IRTypeError
from .. import intrin
from ..expr import PrimExpr, const, convert, select
from ..expr import cast as _cast
from ..expr import max_ as _max
from ..expr import min_ as _min
from ..te.tensor import Tensor, compute, register_tensor_operator
from .utils import ELEMWISE, axis_names, scalar_like


def unary(name: str, fn: Callable[[PrimExpr], PrimExpr], x: Tensor, tag: str = ELEMWISE,
          stage_name: str | None = None) -> Tensor:
    """A stage applying ``fn`` to every element of ``x``."""
    if not isinstance(x, Tensor):
        raise IRTypeError(f"topi.{name} takes a tensor, got {type(x).__name__}")
    return compute(x.shape, lambda *i: fn(x[i]), name=stage_name or f"T_{name}", tag=tag,
                   axis_names=axis_names(x.ndim))


def _float_only(name: str, fn: Callable[[PrimExpr], PrimExpr]) -> Callable[[Tensor], Tensor]:
    def op(x: Tensor) -> Tensor:
        if isinstance(x, Tensor) and not dt.is_float(x.dtype):
            raise IRTypeError(f"topi.{name} needs a floating-point tensor, got {x.dtype}; "
                              f"cast it first (topi.cast(x, 'float32'))")
        return unary(name, fn, x)
    op.__name__ = name
    op.__doc__ = f"Elementwise ``{name}`` of a floating-point tensor."
    return op


exp = _float_only("exp", intrin.exp)
exp2 = _float_only("exp2", intrin.exp2)
log = _float_only("log", intrin.log)
log2 = _float_only("log2", intrin.log2)
log10 = _float_only("log10", intrin.log10)
log1p = _float_only("log1p", intrin.log1p)
sqrt = _float_only("sqrt", intrin.sqrt)
rsqrt = _float_only("rsqrt", intrin.rsqrt)
sin = _float_only("sin", intrin.sin)
cos = _float_only("cos", intrin.cos)
tan = _float_only("tan", intrin.tan)
asin = _float_only("asin", intrin.asin)
acos = _float_only("acos", intrin.acos)
atan = _float_only("atan", intrin.atan)
sinh = _float_only("sinh", intrin.sinh)
cosh = _float_only("cosh", intrin.cosh)
asinh = _float_only("asinh", intrin.asinh)
acosh = _float_only("acosh", intrin.acosh)
atanh = _float_only("atanh", intrin.atanh)
expm1 = _float_only("expm1", intrin.expm1)
tanh = _float_only("tanh", intrin.tanh)
sigmoid = _float_only("sigmoid", intrin.sigmoid)
erf = _float_only("erf", intrin.erf)


def _rounding(name: str, fn: Callable[[PrimExpr], PrimExpr]) -> Callable[[Tensor], Tensor]:
    def op(x: Tensor) -> Tensor:
        # Rounding an integer tensor is the identity.
        return unary(name, lambda v: fn(v) if dt.is_float(v.dtype) else v, x)
    op.__name__ = name
    op.__doc__ = f"Elementwise ``{name}`` (the identity on integers)."
    return op


floor = _rounding("floor", intrin.floor)
ceil = _rounding("ceil", intrin.ceil)
round = _rounding("round", intrin.round)
trunc = _rounding("trunc", intrin.trunc)


def abs(x: Tensor) -> Tensor:
    """Elementwise absolute value."""
    return unary("abs", intrin.abs, x)


def negative(x: Tensor) -> Tensor:
    """Elementwise ``-x``."""
    return unary("negative", lambda v: -v, x)


def sign(x: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of each element (NaN stays NaN, as in numpy)."""
    def fn(v: PrimExpr) -> PrimExpr:
        zero, one = const(0, v.dtype), const(1, v.dtype)
        neg = const(-1, v.dtype) if not dt.is_uint(v.dtype) else zero
        # A float NaN fails both compares: the innermost choice keeps it (v * 0 is NaN
        # for NaN and 0 for every other finite or zero value; infinities compare).
        rest = v * zero if dt.is_float(v.dtype) else zero
        return select(v > zero, one, select(v < zero, neg, rest))
    return unary("sign", fn, x)


def reciprocal(x: Tensor) -> Tensor:
    """Elementwise ``1 / x``."""
    return unary("reciprocal", lambda v: const(1, v.dtype) / v, x)


def square(x: Tensor) -> Tensor:
    """Elementwise ``x * x``."""
    return unary("square", lambda v: v * v, x)


def identity(x: Tensor) -> Tensor:
    """A copy of ``x``."""
    return unary("identity", lambda v: v, x)


def logical_not(x: Tensor) -> Tensor:
    """Elementwise logical not (non-bool elements count as ``!= 0``)."""
    return unary("logical_not", lambda v: ~(v if dt.is_bool(v.dtype) else v != 0), x)


def bitwise_not(x: Tensor) -> Tensor:
    """Elementwise bitwise not of integers."""
    return unary("bitwise_not", intrin.bitwise_not, x)


def isnan(x: Tensor) -> Tensor:
    """True where an element is NaN."""
    return unary("isnan", intrin.isnan, x)


def isinf(x: Tensor) -> Tensor:
    """True where an element is infinite."""
    return unary("isinf", intrin.isinf, x)


def isfinite(x: Tensor) -> Tensor:
    """True where an element is finite."""
    return unary("isfinite", intrin.isfinite, x)


def clip(x: Tensor, a_min: Any, a_max: Any) -> Tensor:
    """Elementwise ``min(max(x, a_min), a_max)``."""
    def fn(v: PrimExpr) -> PrimExpr:
        lo, hi = scalar_like(a_min, v.dtype), scalar_like(a_max, v.dtype)
        return _max(_min(v, hi), lo)
    return unary("clip", fn, x)


def cast(x: Any, dtype: str) -> Any:
    """``x`` converted to ``dtype`` elementwise (a scalar stays a scalar)."""
    dt.check(dtype)
    if not isinstance(x, Tensor):
        return _cast(convert(x), dtype)
    return unary("cast", lambda v: _cast(v, dtype), x)


def relu(x: Tensor) -> Tensor:
    """``max(x, 0)`` elementwise."""
    return unary("relu", lambda v: _max(v, const(0, v.dtype)), x)


def leaky_relu(x: Tensor, alpha: float) -> Tensor:
    """``x`` where positive, else ``alpha * x``."""
    def fn(v: PrimExpr) -> PrimExpr:
        zero = const(0, v.dtype)
        return select(v > zero, v, v * const(alpha, v.dtype))
    return unary("leaky_relu", fn, x)


def silu(x: Tensor) -> Tensor:
    """``x * sigmoid(x)`` elementwise."""
    return unary("silu", lambda v: v * intrin.sigmoid(v), x)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """GELU: ``0.5 * x * (1 + erf(x / sqrt(2)))``, or with ``approximate="tanh"`` the
    tanh form ``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))``."""
    if approximate not in ("none", "tanh"):
        raise IRTypeError(f"topi.gelu: approximate must be 'none' or 'tanh', got "
                          f"{approximate!r}")

    def exact(v: PrimExpr) -> PrimExpr:
        half, one = const(0.5, v.dtype), const(1.0, v.dtype)
        return half * v * (one + intrin.erf(v * const(1.0 / math.sqrt(2.0), v.dtype)))

    def tanh_form(v: PrimExpr) -> PrimExpr:
        half, one = const(0.5, v.dtype), const(1.0, v.dtype)
        inner = const(math.sqrt(2.0 / math.pi), v.dtype) * (
            v + const(0.044715, v.dtype) * v * v * v)
        return half * v * (one + intrin.tanh(inner))

    if isinstance(x, Tensor) and not dt.is_float(x.dtype):
        raise IRTypeError(f"topi.gelu needs a floating-point tensor, got {x.dtype}")
    if approximate == "tanh":
        return unary("gelu_tanh", tanh_form, x)
    return unary("gelu", exact, x)


register_tensor_operator("negative", negative)  # -A on a te tensor

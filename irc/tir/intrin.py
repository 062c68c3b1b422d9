"""The table of known loop-IR intrinsics and the functions that build calls to them.

An intrinsic is a :class:`~irc.tir.expr.Call` whose ``op`` is a name from this table
(``exp``, ``sqrt``, ``if_then_else``, ``shift_left``, ...). Each entry gives the number of
arguments and a rule that checks the argument dtypes and returns the result dtype; code
generators and the reference interpreter look names up here. Builders such as
:func:`exp` convert Python numbers, check the arguments and raise
:class:`~irc.ir.IRTypeError` for misuse (e.g. ``exp`` of an integer).

Semantics worth knowing: ``round`` and ``nearbyint`` round half to even (as numpy and
LLVM's ``nearbyint`` do); ``fmod`` is the C remainder (sign of the dividend);
``shift_right`` of a signed integer is arithmetic; ``sigmoid(x) = 1 / (1 + exp(-x))``.
Other layers may add their own intrinsics with :func:`register_intrinsic`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ..core import dtype as dt
from ..core.diagnostics import IRTypeError
from .expr import Call, ExprLike, PrimExpr, Select, convert
from .expr import if_then_else as _if_then_else


@dataclass(frozen=True)
class IntrinsicDef:
    """One intrinsic: ``num_args`` (None for any number), ``infer`` (argument dtypes to
    result dtype, raising IRTypeError), a one-line ``doc``, and whether it is ``pure``."""

    name: str
    num_args: int | None
    infer: Callable[[tuple[str, ...], str | None], str]
    doc: str
    pure: bool = True


INTRINSICS: dict[str, IntrinsicDef] = {}


def register_intrinsic(name: str, num_args: int | None,
                       infer: Callable[[tuple[str, ...], str | None], str], doc: str,
                       pure: bool = True) -> IntrinsicDef:
    """Add (or replace) an intrinsic in the table and return its definition."""
    d = IntrinsicDef(name=name, num_args=num_args, infer=infer, doc=doc, pure=pure)
    INTRINSICS[name] = d
    return d


def get_intrinsic(name: str) -> IntrinsicDef:
    """The definition of intrinsic ``name``; IRTypeError naming the known ones if absent."""
    d = INTRINSICS.get(name)
    if d is None:
        raise IRTypeError(
            f"unknown intrinsic {name!r}; known intrinsics: {', '.join(sorted(INTRINSICS))}"
        )
    return d


def infer_dtype(name: str, arg_dtypes: tuple[str, ...], dtype: str | None = None) -> str:
    """Check a call of intrinsic ``name`` on arguments of ``arg_dtypes``; return the result
    dtype (``dtype`` is the requested result dtype for intrinsics such as reinterpret)."""
    d = get_intrinsic(name)
    if d.num_args is not None and len(arg_dtypes) != d.num_args:
        raise IRTypeError(f"intrinsic {name} takes {d.num_args} argument(s), got "
                          f"{len(arg_dtypes)}")
    return d.infer(arg_dtypes, dtype)


def check_call(call: Call) -> None:
    """Raise IRTypeError when ``call`` does not match its intrinsic's signature."""
    expected = infer_dtype(call.op, tuple(a.dtype for a in call.args), call.dtype)
    if expected != call.dtype:
        raise IRTypeError(f"call of {call.op} has dtype {call.dtype}, but its arguments give "
                          f"{expected}", node=call)


def call_intrin(name: str, *args: ExprLike, dtype: str | None = None) -> PrimExpr:
    """A checked Call of intrinsic ``name``; Python numbers become constants."""
    exprs = tuple(convert(a) for a in args)
    result = infer_dtype(name, tuple(e.dtype for e in exprs), dtype)
    return Call(dtype=result, op=name, args=exprs)


# ---------------------------------------------------------------------------------
# dtype rules
# ---------------------------------------------------------------------------------


def _float_same(name: str) -> Callable:
    def rule(args: tuple[str, ...], _dtype: str | None) -> str:
        for a in args:
            if not dt.is_float(a):
                raise IRTypeError(f"{name} needs floating-point arguments, got {a}; cast the "
                                  f"argument first (e.g. x.astype('float32'))")
        if len(set(args)) > 1:
            raise IRTypeError(f"{name} needs arguments of one dtype, got {', '.join(args)}")
        return args[0]
    return rule


def _float_pred(name: str) -> Callable:
    def rule(args: tuple[str, ...], _dtype: str | None) -> str:
        if not dt.is_float(args[0]):
            raise IRTypeError(f"{name} needs a floating-point argument, got {args[0]}")
        return dt.with_lanes("bool", dt.lanes(args[0]))
    return rule


def _int_same(name: str) -> Callable:
    def rule(args: tuple[str, ...], _dtype: str | None) -> str:
        for a in args:
            if not dt.is_integer(a):
                raise IRTypeError(f"{name} needs integer arguments, got {a}")
        if len(set(args)) > 1:
            raise IRTypeError(f"{name} needs arguments of one dtype, got {', '.join(args)}")
        return args[0]
    return rule


def _if_then_else_rule(args: tuple[str, ...], _dtype: str | None) -> str:
    if not dt.is_bool(args[0]):
        raise IRTypeError(f"if_then_else needs a bool condition, got {args[0]}")
    if args[1] != args[2]:
        raise IRTypeError(f"if_then_else branches differ in dtype: {args[1]} vs {args[2]}")
    return args[1]


def _likely_rule(args: tuple[str, ...], _dtype: str | None) -> str:
    if not dt.is_bool(args[0]):
        raise IRTypeError(f"likely needs a bool condition, got {args[0]}")
    return args[0]


def _reinterpret_rule(args: tuple[str, ...], dtype: str | None) -> str:
    if dtype is None:
        raise IRTypeError("reinterpret needs the result dtype: reinterpret(dtype, value)")
    if dt.bits(dtype) * dt.lanes(dtype) != dt.bits(args[0]) * dt.lanes(args[0]):
        raise IRTypeError(f"reinterpret from {args[0]} to {dtype} changes the bit width")
    return dtype


def _sync_rule(args: tuple[str, ...], _dtype: str | None) -> str:
    return "int32"


# How many integers one ``error_values`` call records (the runtime's slots).
MAX_ERROR_VALUES = 8


def _error_values_rule(args: tuple[str, ...], _dtype: str | None) -> str:
    if not 1 <= len(args) <= MAX_ERROR_VALUES:
        raise IRTypeError(f"error_values takes 1 to {MAX_ERROR_VALUES} integers, got "
                          f"{len(args)}")
    for a in args:
        if not (dt.is_integer(a) and dt.lanes(a) == 1):
            raise IRTypeError(f"error_values takes scalar integers, got {a}")
    return "int32"


def format_error_message(message: str, values: Sequence[int]) -> str:
    """``message`` of a failed assertion with the integers an ``error_values`` call
    recorded just before it in place of ``{0}``, ``{1}``, ...; a message that does not
    take them gets them appended."""
    if not values:
        return message
    appended = f"{message} (values: {', '.join(str(v) for v in values)})"
    if "{0}" not in message:
        return appended
    try:
        return message.format(*values)
    except (IndexError, KeyError, ValueError):
        return appended


def _extern_rule(args: tuple[str, ...], dtype: str | None) -> str:
    if not args or args[0] != "handle":
        raise IRTypeError("call_extern needs the function name (a string) as first argument")
    if dtype is None:
        raise IRTypeError("call_extern needs its result dtype: call_intrin('call_extern', "
                          "name, *args, dtype=...)")
    return dtype


_FLOAT_UNARY = {
    "exp": "e to the power x", "exp2": "2 to the power x", "exp10": "10 to the power x",
    "log": "natural logarithm", "log2": "base-2 logarithm", "log10": "base-10 logarithm",
    "log1p": "log(1 + x)", "expm1": "exp(x) - 1", "sqrt": "square root",
    "rsqrt": "1 / sqrt(x)", "sin": "sine", "cos": "cosine", "tan": "tangent",
    "asin": "arc sine", "acos": "arc cosine", "atan": "arc tangent",
    "sinh": "hyperbolic sine", "cosh": "hyperbolic cosine", "tanh": "hyperbolic tangent",
    "asinh": "inverse hyperbolic sine", "acosh": "inverse hyperbolic cosine",
    "atanh": "inverse hyperbolic tangent", "sigmoid": "1 / (1 + exp(-x))",
    "erf": "Gauss error function", "fabs": "absolute value", "floor": "round down",
    "ceil": "round up", "round": "round to nearest, ties to even", "trunc": "round toward zero",
    "nearbyint": "round to nearest, ties to even",
}
_FLOAT_BINARY = {
    "pow": "x to the power y", "fmod": "C remainder (sign of x)",
    "atan2": "arc tangent of y/x (args y, x)", "hypot": "sqrt(x*x + y*y)",
    "copysign": "magnitude of x with the sign of y",
}
_FLOAT_PRED = {"isnan": "x is NaN", "isinf": "x is +-inf", "isfinite": "x is neither inf nor NaN"}
_INT_OPS = {
    "popcount": (1, "number of set bits"), "bitwise_not": (1, "~x"),
    "bitwise_and": (2, "x & y"), "bitwise_or": (2, "x | y"), "bitwise_xor": (2, "x ^ y"),
    "shift_left": (2, "x << y"), "shift_right": (2, "x >> y (arithmetic for signed)"),
}

for _n, _doc in _FLOAT_UNARY.items():
    register_intrinsic(_n, 1, _float_same(_n), _doc)
for _n, _doc in _FLOAT_BINARY.items():
    register_intrinsic(_n, 2, _float_same(_n), _doc)
for _n, _doc in _FLOAT_PRED.items():
    register_intrinsic(_n, 1, _float_pred(_n), _doc)
for _n, (_k, _doc) in _INT_OPS.items():
    register_intrinsic(_n, _k, _int_same(_n), _doc)
register_intrinsic("if_then_else", 3, _if_then_else_rule,
                   "cond ? a : b, evaluating only the chosen side")
register_intrinsic("likely", 1, _likely_rule, "the condition itself, hinted to be true")
register_intrinsic("reinterpret", 1, _reinterpret_rule, "the bits of x read as another dtype")
register_intrinsic("call_extern", None, _extern_rule,
                   "a call of the C function named by the first (string) argument", pure=False)
register_intrinsic("call_pure_extern", None, _extern_rule,
                   "like call_extern, for a function without side effects")
register_intrinsic("error_values", None, _error_values_rule,
                   "record integers for the message of the assertion that fails next "
                   "(shown as {0}, {1}, ...; see format_error_message)", pure=False)
register_intrinsic("tvm_storage_sync", None, _sync_rule,
                   "barrier among the threads of a GPU block (scope string argument)",
                   pure=False)


# ---------------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------------


def _float_arg(x: ExprLike) -> PrimExpr:
    # A Python int next to a float intrinsic means a float constant.
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return convert(float(x), "float32")
    return convert(x)


def _unary(name: str) -> Callable[[ExprLike], PrimExpr]:
    def build(x: ExprLike) -> PrimExpr:
        return call_intrin(name, _float_arg(x))
    build.__name__ = name
    build.__doc__ = f"Intrinsic ``{name}``: {_FLOAT_UNARY[name]}."
    return build


exp = _unary("exp")
exp2 = _unary("exp2")
exp10 = _unary("exp10")
log = _unary("log")
log2 = _unary("log2")
log10 = _unary("log10")
log1p = _unary("log1p")
expm1 = _unary("expm1")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
asin = _unary("asin")
acos = _unary("acos")
atan = _unary("atan")
sinh = _unary("sinh")
cosh = _unary("cosh")
tanh = _unary("tanh")
asinh = _unary("asinh")
acosh = _unary("acosh")
atanh = _unary("atanh")
sigmoid = _unary("sigmoid")
erf = _unary("erf")
fabs = _unary("fabs")
floor = _unary("floor")
ceil = _unary("ceil")
round = _unary("round")
trunc = _unary("trunc")
nearbyint = _unary("nearbyint")


def _binary_float(name: str, a: ExprLike, b: ExprLike) -> PrimExpr:
    x, y = _float_arg(a), _float_arg(b)
    if x.dtype != y.dtype:
        # Constants adopt the other side's dtype; otherwise the user must cast.
        if not isinstance(b, PrimExpr):
            y = convert(float(b), x.dtype)
        elif not isinstance(a, PrimExpr):
            x = convert(float(a), y.dtype)
    return call_intrin(name, x, y)


def pow(x: ExprLike, y: ExprLike) -> PrimExpr:
    """Intrinsic ``pow``: x to the power y (floats)."""
    return _binary_float("pow", x, y)


power = pow


def fmod(x: ExprLike, y: ExprLike) -> PrimExpr:
    """Intrinsic ``fmod``: the C remainder of x / y (sign of x)."""
    return _binary_float("fmod", x, y)


def atan2(y: ExprLike, x: ExprLike) -> PrimExpr:
    """Intrinsic ``atan2``: the arc tangent of y / x in the right quadrant."""
    return _binary_float("atan2", y, x)


def hypot(x: ExprLike, y: ExprLike) -> PrimExpr:
    """Intrinsic ``hypot``: sqrt(x*x + y*y) without overflow."""
    return _binary_float("hypot", x, y)


def copysign(x: ExprLike, y: ExprLike) -> PrimExpr:
    """Intrinsic ``copysign``: |x| with the sign of y."""
    return _binary_float("copysign", x, y)


def isnan(x: ExprLike) -> PrimExpr:
    """True where ``x`` is NaN (always false for integers)."""
    e = convert(x)
    if not dt.is_float(e.dtype):
        return convert(False)
    return call_intrin("isnan", e)


def isinf(x: ExprLike) -> PrimExpr:
    """True where ``x`` is +inf or -inf (always false for integers)."""
    e = convert(x)
    if not dt.is_float(e.dtype):
        return convert(False)
    return call_intrin("isinf", e)


def isfinite(x: ExprLike) -> PrimExpr:
    """True where ``x`` is neither infinite nor NaN (always true for integers)."""
    e = convert(x)
    if not dt.is_float(e.dtype):
        return convert(True)
    return call_intrin("isfinite", e)


def abs(x: ExprLike) -> PrimExpr:
    """Absolute value: ``fabs`` for floats, a select for signed integers, ``x`` for
    unsigned integers and bools."""
    e = convert(x)
    if dt.is_float(e.dtype):
        return call_intrin("fabs", e)
    if dt.is_int(e.dtype):
        zero = convert(0, e.dtype)
        return Select(dtype=e.dtype, condition=e >= zero, true_value=e, false_value=-e)
    return e


def _int_builder(name: str) -> Callable[..., PrimExpr]:
    def build(*args: ExprLike) -> PrimExpr:
        exprs = [a if isinstance(a, PrimExpr) else None for a in args]
        ref = next((e.dtype for e in exprs if e is not None), "int32")
        return call_intrin(name, *(convert(a, ref) for a in args))
    build.__name__ = name
    build.__doc__ = f"Intrinsic ``{name}``: {_INT_OPS[name][1]} (integers)."
    return build


popcount = _int_builder("popcount")
bitwise_not = _int_builder("bitwise_not")
bitwise_and = _int_builder("bitwise_and")
bitwise_or = _int_builder("bitwise_or")
bitwise_xor = _int_builder("bitwise_xor")
shift_left = _int_builder("shift_left")
shift_right = _int_builder("shift_right")


def reinterpret(dtype: str, value: ExprLike) -> PrimExpr:
    """The bits of ``value`` read as ``dtype`` (same total width)."""
    return call_intrin("reinterpret", convert(value), dtype=dt.check(dtype))


def error_values(*values: ExprLike) -> PrimExpr:
    """Record ``values`` (scalar integers, at most :data:`MAX_ERROR_VALUES`) for the
    message of the assertion that fails next: ``{0}``, ``{1}``, ... in its text. An
    ``Evaluate`` of it goes right before an ``AssertStmt`` that fails (or on the failing
    branch before ``assert False``); see :func:`irc.tir.topi.index.checked_index`."""
    return call_intrin("error_values", *[convert(v, "int64") if isinstance(v, int) else v
                                         for v in values])


def likely(cond: ExprLike) -> PrimExpr:
    """``cond`` itself, marked as usually true (a hint for code generators)."""
    return call_intrin("likely", convert(cond, "bool"))


def if_then_else(cond: ExprLike, t: ExprLike, f: ExprLike) -> PrimExpr:
    """``cond ? t : f`` evaluating only the chosen side (safe for guarded loads)."""
    return _if_then_else(cond, t, f)


__all__ = [
    "INTRINSICS", "IntrinsicDef", "register_intrinsic", "get_intrinsic", "infer_dtype",
    "check_call", "call_intrin",
    *_FLOAT_UNARY, "pow", "power", "fmod", "atan2", "hypot", "copysign", "isnan", "isinf",
    "isfinite", "abs", "popcount", "bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor",
    "shift_left", "shift_right", "reinterpret", "likely", "if_then_else", "error_values",
    "MAX_ERROR_VALUES", "format_error_message",
]

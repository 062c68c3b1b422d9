"""Converters of elementwise ONNX operators: arithmetic, comparisons, logic, math
functions, activations, ``Cast``, ``Clip``, ``Where`` and the variadic ``Sum`` / ``Mean`` /
``Max`` / ``Min``. Broadcasting is numpy's on both sides (ONNX opset 7 and newer)."""

from __future__ import annotations

import math
from typing import Any, Callable

from ...core import dtype as dt
from ...ir import ops
from ...ir.expr import Constant, Expr, ShapeExpr, const
from ...ir.ops import integer
from ...ir.struct_info import TensorStructInfo
from ...ir.struct_info_analysis import broadcast_dims
from ...tir import expr as E
from .importer import Node
from .protos import onnx_dtype
from .registry import converter
from .scope import SymShape


def scalar(value: float, dtype: str) -> Constant:
    """A 0-d constant of ``dtype``."""
    return const(dt.storage(value, dtype), dtype)


def broadcast_together(node: Node, xs: list[Expr]) -> list[Expr]:
    """``xs`` unchanged when their broadcast shape is known at import time; otherwise (two
    different symbolic dimensions meet, either of which may be 1 when the model runs)
    each broadcast to the shape computed at run time, whose dimensions are bound as shape
    variables, with a run-time check that the shapes broadcast."""
    sinfos = [node.graph.bb.normalize(x).struct_info for x in xs]
    if any(not isinstance(si, TensorStructInfo) or si.shape is None for si in sinfos):
        return xs
    bound = broadcast_at_run_time(node, [list(si.shape) for si in sinfos])
    if bound is None:
        return xs
    return [ops.broadcast_to(x, ShapeExpr(values=tuple(bound))) for x in xs]


def broadcast_at_run_time(node: Node, shapes: list[list[Any]]) -> list[Any] | None:
    """The numpy broadcast of ``shapes`` as shape variables bound when the model runs (with
    a run-time check that they broadcast), or None when it is known at import time (or
    provably fails, which the operator reports)."""
    dims = broadcast_dims(shapes)
    if dims is None or all(d is not None for d in dims):
        return None
    n = len(dims)
    one = E.const(1, "int64")
    padded = [[one] * (n - len(sh)) + list(sh) for sh in shapes]
    tensors = [node.graph.shape_tensor(SymShape(p), f"{node.name}_shape{i}")
               for i, p in enumerate(padded)]
    hi, lo = tensors[0], tensors[0]
    for sh in tensors[1:]:
        hi, lo = ops.maximum(hi, sh), ops.minimum(lo, sh)
    out = node.emit(ops.multiply(hi, ops.astype(ops.not_equal(lo, scalar(0, "int64")),
                                                "int64")), "broadcast_shape")
    bad = None
    for sh in tensors:
        b = ops.logical_and(ops.not_equal(sh, scalar(1, "int64")), ops.not_equal(sh, out))
        bad = b if bad is None else ops.logical_or(bad, b)
    node.runtime_check(ops.sum(ops.astype(bad, "int64")), "shapes_do_not_broadcast")
    return node.runtime_dims(out, "bcast")


def _sym_binary(node: Node, fn: Callable[[Any, Any], Any]) -> SymShape | None:
    """Integer arithmetic on symbolic shape values, or None when an operand is not one."""
    a, b = node.sym(0), node.sym(1)
    if a is None or b is None or (a.static() is not None and b.static() is not None):
        return None
    n = max(len(a.dims), len(b.dims))
    da = a.dims * n if len(a.dims) == 1 else a.dims
    db = b.dims * n if len(b.dims) == 1 else b.dims
    if len(da) != len(db):
        return None
    return SymShape([fn(x, y) for x, y in zip(da, db)], scalar=a.scalar and b.scalar)


_BINARY = {
    "Add": (ops.add, lambda x, y: x + y),
    "Sub": (ops.subtract, lambda x, y: x - y),
    "Mul": (ops.multiply, lambda x, y: x * y),
    "Div": (ops.divide, lambda x, y: x // y),
    "Pow": (ops.power, None),
}


def _binary(node: Node) -> Expr | SymShape:
    build, sym_fn = _BINARY[node.op_type]
    if sym_fn is not None:
        s = _sym_binary(node, sym_fn)
        if s is not None:
            return s
    a, b = broadcast_together(node, [node.input(0), node.input(1)])
    if node.op_type == "Pow" and node.dtype(1) != node.dtype(0):
        if dt.is_integer(node.dtype(0)) and dt.is_float(node.dtype(1)):
            # An integer to a real power: in float64, truncated back (as numpy's astype).
            return ops.astype(ops.power(ops.astype(a, "float64"), ops.astype(b, "float64")),
                              node.dtype(0))
        b = ops.astype(b, node.dtype(0))
    if node.op_type == "Div" and dt.is_integer(node.dtype(0)):
        return ops.divide(a, b)  # ONNX integer Div truncates, as irc's divide does
    return build(a, b)


for _op in _BINARY:
    converter(_op, since=7)(_binary)


_COMPARE = {"Equal": ops.equal, "Less": ops.less, "LessOrEqual": ops.less_equal,
            "Greater": ops.greater, "GreaterOrEqual": ops.greater_equal}


@converter(*_COMPARE, since=7)
def _compare(node: Node) -> Expr:
    return _COMPARE[node.op_type](*broadcast_together(node, [node.input(0), node.input(1)]))


@converter("And", "Or", since=7)
def _logical(node: Node) -> Expr:
    fn = ops.logical_and if node.op_type == "And" else ops.logical_or
    return fn(*broadcast_together(node, [node.input(0), node.input(1)]))


@converter("Xor", since=7)
def _xor(node: Node) -> Expr:
    return ops.not_equal(node.input(0), node.input(1))


@converter("Not", since=1)
def _not(node: Node) -> Expr:
    return ops.logical_not(node.input(0))


_UNARY: dict[str, Callable[[Expr], Expr]] = {
    "Abs": ops.abs, "Neg": ops.negative, "Exp": ops.exp, "Log": ops.log, "Sqrt": ops.sqrt,
    "Floor": ops.floor, "Ceil": ops.ceil, "Round": ops.round, "Erf": ops.erf,
    "Sin": ops.sin, "Cos": ops.cos, "Tanh": ops.tanh, "Sigmoid": ops.sigmoid,
    "Relu": ops.nn.relu,
}


@converter(*_UNARY, since=6)
def _unary(node: Node) -> Expr:
    return _UNARY[node.op_type](node.input(0))


def _float_input(node: Node) -> tuple[Expr, str]:
    x = node.input(0)
    dtype = node.dtype(0)
    if not dt.is_float(dtype):
        raise node.error(f"needs a floating-point input, got {dtype}")
    return x, dtype


@converter("Reciprocal", since=6)
def _reciprocal(node: Node) -> Expr:
    x, dtype = _float_input(node)
    return ops.divide(scalar(1.0, dtype), x)


@converter("Sign", since=9)
def _sign(node: Node) -> Expr:
    x = node.input(0)
    dtype = node.dtype(0)
    zero, one = scalar(0, dtype), scalar(1, dtype)
    # A float NaN fails both compares; x * 0 keeps it (and is 0 for a zero x).
    rest = ops.multiply(x, zero) if dt.is_float(dtype) else zero
    neg = ops.where(ops.less(x, zero), ops.negative(one) if not dt.is_uint(dtype) else zero,
                    rest)
    return ops.where(ops.greater(x, zero), one, neg)


def _in_float32(fn: Callable[[Expr, str], Expr]) -> Callable[[Node], Expr]:
    """A converter of a float function composed of several operators, ``fn(x, dtype)``:
    float16 and bfloat16 inputs are computed in float32 and rounded once, as the peers
    do (each intermediate rounded to 16 bits would lose several steps)."""
    def convert(node: Node) -> Expr:
        x, dtype = _float_input(node)
        if dt.bits(dtype) < 32:
            return ops.astype(fn(ops.astype(x, "float32"), "float32"), dtype)
        return fn(x, dtype)
    return convert


_LIBM = {"Tan": ops.tan, "Sinh": ops.sinh, "Cosh": ops.cosh, "Asinh": ops.asinh,
         "Acosh": ops.acosh, "Atanh": ops.atanh}


def _libm(node: Node) -> Expr:
    x, _ = _float_input(node)
    return _LIBM[node.op_type](x)


converter("Tan", since=7)(_libm)
converter("Sinh", "Cosh", "Asinh", "Acosh", "Atanh", since=9)(_libm)


def _softplus_of(x: Expr, d: str) -> Expr:
    """log(1 + exp(x)) without overflow or cancellation: max(x, 0) + log1p(exp(-|x|))."""
    return ops.add(ops.maximum(x, scalar(0, d)), ops.log1p(ops.exp(ops.negative(ops.abs(x)))))


converter("Softplus", since=1)(_in_float32(_softplus_of))
converter("Softsign", since=1)(_in_float32(
    lambda x, d: ops.divide(x, ops.add(scalar(1, d), ops.abs(x)))))


@converter("LeakyRelu", since=6)
def _leaky_relu(node: Node) -> Expr:
    x, d = _float_input(node)
    alpha = float(node.attr("alpha", 0.01))
    return ops.where(ops.less(x, scalar(0, d)), ops.multiply(x, scalar(alpha, d)), x)


@converter("PRelu", since=7)
def _prelu(node: Node) -> Expr:
    x, d = _float_input(node)
    slope = node.input(1)
    return ops.where(ops.less(x, scalar(0, d)), ops.multiply(x, slope), x)


@converter("Elu", since=6)
def _elu(node: Node) -> Expr:
    alpha = float(node.attr("alpha", 1.0))
    return _in_float32(lambda x, d: ops.where(
        ops.less(x, scalar(0, d)), ops.multiply(ops.expm1(x), scalar(alpha, d)), x))(node)


@converter("Celu", since=12)
def _celu(node: Node) -> Expr:
    alpha = float(node.attr("alpha", 1.0))

    def celu(x: Expr, d: str) -> Expr:
        neg = ops.multiply(ops.expm1(ops.divide(x, scalar(alpha, d))), scalar(alpha, d))
        return ops.add(ops.maximum(x, scalar(0, d)), ops.minimum(neg, scalar(0, d)))
    return _in_float32(celu)(node)


@converter("Selu", since=6)
def _selu(node: Node) -> Expr:
    alpha = float(node.attr("alpha", 1.67326319217681884765625))
    gamma = float(node.attr("gamma", 1.05070102214813232421875))

    def selu(x: Expr, d: str) -> Expr:
        neg = ops.multiply(ops.expm1(x), scalar(alpha, d))
        return ops.multiply(ops.where(ops.less_equal(x, scalar(0, d)), neg, x),
                            scalar(gamma, d))
    return _in_float32(selu)(node)


@converter("ThresholdedRelu", since=10)
def _thresholded_relu(node: Node) -> Expr:
    x, d = _float_input(node)
    alpha = float(node.attr("alpha", 1.0))
    return ops.where(ops.greater(x, scalar(alpha, d)), x, scalar(0, d))


@converter("HardSigmoid", since=6)
def _hard_sigmoid(node: Node) -> Expr:
    alpha, beta = float(node.attr("alpha", 0.2)), float(node.attr("beta", 0.5))
    return _in_float32(lambda x, d: ops.clip(
        ops.add(ops.multiply(x, scalar(alpha, d)), scalar(beta, d)), 0.0, 1.0))(node)


def _hard_swish_of(x: Expr, d: str) -> Expr:
    hs = ops.clip(ops.add(ops.multiply(x, scalar(1 / 6, d)), scalar(0.5, d)), 0.0, 1.0)
    return ops.multiply(x, hs)


converter("HardSwish", since=14)(_in_float32(_hard_swish_of))
converter("Mish", since=18)(_in_float32(
    lambda x, d: ops.multiply(x, ops.tanh(_softplus_of(x, d)))))


@converter("Gelu", since=20)
def _gelu(node: Node) -> Expr:
    _float_input(node)
    approx = node.attr("approximate", "none")
    if approx not in ("none", "tanh"):
        raise node.error(f"approximate must be 'none' or 'tanh', got {approx!r}")
    return (ops.nn.gelu if approx == "none" else ops.nn.gelu_tanh)(node.input(0))


@converter("Clip", since=6)
def _clip6(node: Node) -> Expr:
    x = node.input(0)
    if node.opset < 11:
        lo, hi = node.attr("min", -math.inf), node.attr("max", math.inf)
        return ops.clip(x, float(lo), float(hi))
    d = node.dtype(0)
    out = x
    if node.has_input(1):
        out = ops.maximum(out, _as_dtype(node.input(1), node, 1, d))
    if node.has_input(2):
        out = ops.minimum(out, _as_dtype(node.input(2), node, 2, d))
    return out


def _as_dtype(e: Expr, node: Node, i: int, dtype: str) -> Expr:
    return e if node.dtype(i) == dtype else ops.astype(e, dtype)


@converter("Cast", since=6)
def _cast(node: Node) -> Expr | SymShape:
    to = onnx_dtype(int(node.required_attr("to")), f"node {node.name!r}: Cast")
    s = node.sym(0)
    if s is not None and s.static() is None and dt.is_integer(to):
        return s
    return cast_to(node, node.input(0), node.dtype(0), to)


@converter("CastLike", since=15)
def _cast_like(node: Node) -> Expr:
    return cast_to(node, node.input(0), node.dtype(0), node.dtype(1))


_SATURATING = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")


def cast_to(node: Node, x: Expr, src: str, to: str) -> Expr:
    """``x`` (of ``src``) converted to ``to`` as ONNX's Cast does: to a float8 format with
    ``saturate=1`` (the default) out-of-range values, infinities included, become the
    largest finite value of their sign; without it they overflow to infinity or NaN (the
    format's conversion, see ``irc.tir.transform.lower_narrow_dtypes``). To
    ``float8_e8m0fnu`` irc rounds up and saturates (ONNX's defaults) only."""
    if to in _SATURATING and node.attr("saturate", 1):
        if src != "float32" and (dt.is_narrow(src) or not dt.is_float(src)):
            x, src = ops.astype(x, "float32"), "float32"
        top = dt.FLOAT_FORMATS[to].max_value
        hi, lo = scalar(top, src), scalar(-top, src)
        # where() rather than clip: NaN stays NaN
        x = ops.where(ops.greater(x, hi), hi, ops.where(ops.less(x, lo), lo, x))
    elif to == "float8_e8m0fnu":
        mode = node.attr("round_mode", "up")
        if mode != "up" or not node.attr("saturate", 1):
            raise node.error(f"irc converts to float8e8m0 rounding up with saturation "
                             f"only, not round_mode={mode!r} saturate="
                             f"{node.attr('saturate', 1)}")
    return ops.astype(x, to)


@converter("Where", since=9)
def _where(node: Node) -> Expr:
    return ops.where(*broadcast_together(node, [node.input(0), node.input(1),
                                                 node.input(2)]))


_VARIADIC = {"Sum": ops.add, "Max": ops.maximum, "Min": ops.minimum, "Mean": ops.add}


@converter(*_VARIADIC, since=8)
def _variadic(node: Node) -> Expr:
    items = [node.input(i) for i in range(node.num_inputs) if node.has_input(i)]
    if not items:
        raise node.error("needs at least one input")
    items = broadcast_together(node, items)
    out = items[0]
    for e in items[1:]:
        out = _VARIADIC[node.op_type](out, e)
    if node.op_type == "Mean":
        out = ops.divide(out, scalar(len(items), node.dtype(0)))
    return out


@converter("Mod", since=10)
def _mod(node: Node) -> Expr:
    # fmod=1: the remainder with the dividend's sign (C's fmod); fmod=0: the one with the
    # divisor's sign, which opset 28 defines for floats too (numpy's %).
    fmod = int(node.attr("fmod", 0))
    if fmod not in (0, 1):
        raise node.error(f"fmod must be 0 or 1, got {fmod}")
    build = integer.mod if fmod else integer.floor_mod
    return build(node.input(0), node.input(1))


__all__: list[str] = []

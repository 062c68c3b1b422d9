"""Builders of the elementwise, comparison, reduction, normalization-free activation,
softmax, cast and quantization operators (see ``spec``)."""

from __future__ import annotations

import numpy as np

from . import spec
from .builder import ABSENT, GraphBuilder, Value, helper_dtype
from .spec import Reject
from .values import (
    FLOAT_DTYPES,
    INT_DTYPES,
    Domain,
    broadcast_partner,
    broadcast_shape,
    distinct,
    is_float,
    np_dtype,
    tie_gap,
)

FLOATS = FLOAT_DTYPES
NUMERIC = FLOAT_DTYPES + INT_DTYPES
SIGNED = FLOAT_DTYPES + ("int8", "int32", "int64")

# Unary float operators: name -> (input domain, attributes drawn for it).
UNARY = {
    "Abs": (None, {}), "Neg": (None, {}),
    "Ceil": (Domain(-6, 6, "int"), {}), "Floor": (Domain(-6, 6, "int"), {}),
    "Round": (Domain(-6, 6, "half"), {}), "Sign": (Domain(-4, 4, "zero"), {}),
    "Sqrt": (Domain(0.0, 100), {}), "Exp": (Domain(-20, 6), {}),
    "Log": (Domain(0.05, 100), {}), "Reciprocal": (Domain(-100, 100, "zero", 0.25), {}),
    "Sin": (Domain(-20, 20), {}), "Cos": (Domain(-20, 20), {}),
    "Tan": (Domain(-1.2, 1.2), {}), "Asin": (Domain(-0.95, 0.95), {}),
    "Acos": (Domain(-0.95, 0.95), {}), "Atan": (None, {}),
    "Sinh": (Domain(-6, 6), {}), "Cosh": (Domain(-6, 6), {}),
    "Asinh": (None, {}), "Acosh": (Domain(1.05, 50), {}),
    "Atanh": (Domain(-0.9, 0.9), {}), "Tanh": (None, {}), "Sigmoid": (None, {}),
    "Erf": (None, {}), "Relu": (None, {}), "Softplus": (Domain(-30, 30), {}),
    "Softsign": (None, {}), "Mish": (Domain(-30, 30), {}),
    "Elu": (Domain(-30, 30), {"alpha": (0.5, 1.0, 2.0)}),
    "Selu": (Domain(-30, 30), {"alpha": (1.67326, 1.2), "gamma": (1.0507, 2.0)}),
    "Celu": (Domain(-30, 30), {"alpha": (1.0, 0.5, 2.0)}),
    "LeakyRelu": (None, {"alpha": (0.01, 0.1, 0.3)}),
    "ThresholdedRelu": (Domain(-8, 8), {"alpha": (1.0, 0.5, 2.0)}),
    "HardSigmoid": (Domain(-8, 8), {"alpha": (0.2, 0.5), "beta": (0.5, 0.3)}),
    "HardSwish": (Domain(-8, 8), {}),
    "Gelu": (Domain(-8, 8), {"approximate": ("none", "tanh")}),
}
# Operators with a threshold: inputs keep away from it.
THRESHOLD = {"ThresholdedRelu": "alpha"}
SINCE = {"HardSwish": 14, "Mish": 18, "Gelu": 20, "Celu": 12, "Round": 11,
         "ThresholdedRelu": 10}


def _unary(name: str):
    domain, attr_choices = UNARY[name]

    def build(g: GraphBuilder) -> None:
        attrs = {k: float(g.choice(v)) if not isinstance(v[0], str) else g.choice(v)
                 for k, v in attr_choices.items()}
        dom = domain
        if name in THRESHOLD:  # keep away from the threshold
            t = attrs[THRESHOLD[name]]
            dom = Domain(-8, 8, "zero", 0.1)
            x = g.pick_float(domain=dom, accept=lambda v: _away(v.array, t))
        else:
            x = g.pick_float(domain=dom)
        g.node(name, [x], **attrs)

    return build


def _away(arr: np.ndarray, point: float, gap: float = 0.05) -> bool:
    return bool((np.abs(np.asarray(arr, np.float64) - point) > gap).all())


for _name in UNARY:
    spec.register(_name, "unary", since=SINCE.get(_name, 7))(_unary(_name))


@spec.register("Abs.int", "unary", dtypes=SIGNED[3:])
def _abs_int(g: GraphBuilder) -> None:
    x = g.pick_of(("int8", "int32", "int64"), accept=lambda v: v.array.min(initial=0) > -100)
    g.node(g.choice(("Abs", "Neg", "Sign", "Relu") if g.opset >= 14 else ("Abs", "Neg")),
           [x])


@spec.register("Identity", "unary", dtypes=NUMERIC + ("bool",))
def _identity(g: GraphBuilder) -> None:
    g.node("Identity", [g.pick_of(NUMERIC + ("bool",))])


@spec.register("Dropout", "unary", since=12)
def _dropout(g: GraphBuilder) -> None:
    x = g.pick_float()
    ratio = g.const(np.array(0.3), x.dtype) if g.coin() else ABSENT
    g.node("Dropout", [x, ratio] if ratio.name else [x], n_out=1 + g.coin(0.3))


@spec.register("Clip", "unary", since=11, dtypes=NUMERIC)
def _clip(g: GraphBuilder) -> None:
    x = g.pick_of(NUMERIC)
    lo, hi = sorted(float(v) for v in np.random.default_rng(
        int(g.rng.integers(1 << 30))).uniform(-3, 3, 2))
    if not is_float(x.dtype):
        lo, hi = np.floor(lo), np.ceil(hi)
        if x.dtype == "uint8":
            lo, hi = 1, 5
    args = [x]
    form = g.choice(("both", "min", "max", "none"))
    if form != "none":
        args.append(g.const(np.array(lo), x.dtype) if form in ("both", "min") else ABSENT)
    if form in ("both", "max"):
        args.append(g.const(np.array(hi), x.dtype))
    g.node("Clip", args)


@spec.register("IsNaN", "unary", since=9)
def _isnan(g: GraphBuilder) -> None:
    _special(g, "IsNaN", {})


@spec.register("IsInf", "unary", since=10)
def _isinf(g: GraphBuilder) -> None:
    _special(g, "IsInf", {"detect_positive": int(g.coin(0.7)),
                          "detect_negative": int(g.coin(0.7))})


def _special(g: GraphBuilder, op: str, attrs: dict) -> None:
    """IsNaN/IsInf on an input that holds NaN and infinities among finite values."""
    shape = g.shape(1, 3)
    arr = g.rng.uniform(-4, 4, shape)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0])
    mask = g.rng.random(shape) < 0.4
    arr[mask] = g.rng.choice(specials, size=int(mask.sum()))
    x = g.place(arr.astype(np_dtype(g.float_dtype)), data=False,
                where=g.choice(("input", "initializer")))
    g.node(op, [x], special=True, **attrs)


@spec.register("Not", "logic", dtypes=("bool",))
def _not(g: GraphBuilder) -> None:
    g.node("Not", [g.pick_of(("bool",))])


@spec.register("BitwiseNot", "bitwise", since=18, dtypes=INT_DTYPES)
def _bitwise_not(g: GraphBuilder) -> None:
    g.node("BitwiseNot", [g.pick_of(INT_DTYPES)])


# -- binary ------------------------------------------------------------------------------

def _partner(g: GraphBuilder, x: Value, domain: Domain | None = None,
             dtype: str | None = None) -> Value:
    """An operand that broadcasts with ``x``: a graph value (whose broadcast with ``x``
    is ``x``'s shape or bigger) or a fresh one of a broadcasting shape."""
    dt = dtype or x.dtype

    def ok(v: Value) -> bool:
        return (v.dtype == dt and v.static and v.name != x.name and 0 < v.size
                and broadcast_shape(v.shape, x.shape) is not None
                and int(np.prod(broadcast_shape(v.shape, x.shape) or (1,))) <= 8192
                and (domain is None or domain.contains(v.array)))

    def make() -> Value:
        shape = broadcast_partner(g.rng, x.shape)
        if g.coin(0.15) and x.rank < 4:  # both operands stretch: [3,1] with [4]
            shape = tuple(x.shape[:-1]) + (1,) if x.rank else (3,)
        if is_float(dt):
            return g.fresh(shape, dt, domain)
        if domain is not None:
            lo, hi = int(np.ceil(domain.lo)), int(np.floor(domain.hi)) + 1
            arr = g.rng.integers(lo, hi, size=shape)
            if domain.avoid == "zero":
                arr[arr == 0] = 1
            return g.place(arr.astype(np_dtype(dt)))
        return g.fresh(shape, dt)

    return g.pick(ok, make, p_fresh=0.5)


def _binary(op: str, dtypes: tuple[str, ...], rhs_domain: Domain | None = None,
            lhs_domain: Domain | None = None):
    def build(g: GraphBuilder) -> None:
        x = g.pick_of(dtypes) if lhs_domain is None else g.pick_float(domain=lhs_domain)
        if lhs_domain is not None and not lhs_domain.contains(x.array):
            raise Reject("lhs out of domain")
        y = _partner(g, x, rhs_domain)
        args = [x, y] if g.coin() or rhs_domain is not None else [y, x]
        g.node(op, args)

    return build


spec.register("Add", "binary", dtypes=NUMERIC)(_binary("Add", NUMERIC))
spec.register("Sub", "binary", dtypes=NUMERIC)(_binary("Sub", NUMERIC))
spec.register("Mul", "binary", dtypes=NUMERIC)(_binary("Mul", NUMERIC))
spec.register("Div", "binary")(_binary("Div", FLOATS, Domain(-20, 20, "zero", 0.25)))
spec.register("Pow", "binary")(_binary("Pow", FLOATS, Domain(-2, 2.5), Domain(0.1, 8)))


@spec.register("Div.int", "binary", dtypes=("int8", "int32", "int64", "uint8"))
def _div_int(g: GraphBuilder) -> None:
    x = g.pick_of(("int8", "uint8", "int32", "int64"))
    y = _partner(g, x, Domain(1, 7 if x.dtype != "uint8" else 9, "zero"))
    if (np.asarray(y.array) == 0).any():
        raise Reject("zero divisor")
    g.node("Div", [x, y])


@spec.register("Pow.int", "binary", since=12, dtypes=("int32", "int64"))
def _pow_int(g: GraphBuilder) -> None:
    x = g.pick_of(("int32", "int64"), accept=lambda v: np.abs(v.array).max(initial=0) < 30)
    y = _partner(g, x, Domain(0, 3))
    g.node("Pow", [x, y])


@spec.register("Mod", "binary", since=10, dtypes=NUMERIC)
def _mod(g: GraphBuilder) -> None:
    x = g.pick_of(NUMERIC)
    fmod = 1 if is_float(x.dtype) else int(g.coin(0.4))
    y = _partner(g, x, Domain(-9, 9, "zero", 0.5) if x.dtype != "uint8" else Domain(1, 9))
    arr = np.asarray(y.array, np.float64)
    if (arr == 0).any() or (is_float(x.dtype) and (np.abs(arr) < 0.5).any()):
        raise Reject("divisor near zero")
    if is_float(x.dtype):  # the result jumps where x is a multiple of y
        q = np.asarray(x.array, np.float64) / np.broadcast_to(arr, np.broadcast_shapes(
            x.shape, y.shape))
        if (np.abs(q - np.round(q)) < 0.02).any():
            raise Reject("near a multiple")
    g.node("Mod", [x, y], fmod=fmod)


@spec.register("PRelu", "binary")
def _prelu(g: GraphBuilder) -> None:
    x = g.pick_float(min_rank=1)
    shape = broadcast_partner(g.rng, x.shape)
    if g.coin(0.3) and x.rank >= 2:  # one slope per channel, as nn.PReLU(C)
        shape = (x.shape[1],) + (1,) * (x.rank - 2)
    if broadcast_shape(shape, x.shape) != x.shape:
        raise Reject("slope must broadcast to x")
    g.node("PRelu", [x, g.fresh(shape, x.dtype, Domain(-0.5, 0.5), data=False)])


def _variadic(op: str, dtypes: tuple[str, ...]):
    def build(g: GraphBuilder) -> None:
        # Max and Min take integers from opset 12 on.
        x = g.pick_of(dtypes if g.opset >= 12 else FLOATS)
        args = [x] + [_partner(g, x) for _ in range(int(g.rng.integers(0, 3)))]
        g.rng.shuffle(args)
        g.node(op, args)

    return build


spec.register("Max", "binary", since=8, dtypes=NUMERIC)(_variadic("Max", NUMERIC))
spec.register("Min", "binary", since=8, dtypes=NUMERIC)(_variadic("Min", NUMERIC))
spec.register("Sum", "binary", since=8)(_variadic("Sum", FLOATS))
spec.register("Mean", "binary", since=8)(_variadic("Mean", FLOATS))

for _op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
    spec.register(_op, "bitwise", since=18, dtypes=INT_DTYPES)(_binary(_op, INT_DTYPES))
for _op in ("And", "Or", "Xor"):
    spec.register(_op, "logic", dtypes=("bool",))(_binary(_op, ("bool",)))


@spec.register("BitShift", "bitwise", since=11, dtypes=("uint8",))
def _bitshift(g: GraphBuilder) -> None:
    x = g.pick_of(("uint8",))
    y = _partner(g, x, Domain(0, 7))
    g.node("BitShift", [x, y], direction=g.choice(("LEFT", "RIGHT")))


def _compare(op: str):
    def build(g: GraphBuilder) -> None:
        x = g.pick_of(NUMERIC)
        y = _partner(g, x)
        if op == "Equal" and is_float(x.dtype) and g.coin(0.6):
            y = x  # equal values somewhere, not only by chance
            if x.rank and g.coin():
                (y,) = g.node("Relu", [x])
        g.node(op, [x, y])

    return build


for _op in ("Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"):
    spec.register(_op, "compare", since=12 if "Or" in _op else 7,
             dtypes=NUMERIC)(_compare(_op))


@spec.register("Where", "compare", since=9, dtypes=NUMERIC + ("bool",))
def _where(g: GraphBuilder) -> None:
    x = g.pick_of(NUMERIC + ("bool",))
    y = _partner(g, x)
    c = _partner(g, x, dtype="bool")
    args = [c, x, y] if g.coin() else [c, y, x]
    g.node("Where", args)


# -- reductions ----------------------------------------------------------------------------

REDUCE = {
    "ReduceSum": None, "ReduceMean": None, "ReduceMax": None, "ReduceMin": None,
    "ReduceProd": Domain(0.5, 1.6), "ReduceL1": None, "ReduceL2": None,
    "ReduceLogSum": Domain(0.1, 4), "ReduceLogSumExp": Domain(-8, 8),
    "ReduceSumSquare": None,
}
# Since which opset each reduction takes its axes as an input.
AXES_INPUT = {"ReduceSum": 13}


def _axes_for(g: GraphBuilder, rank: int) -> list[int]:
    if rank == 0:
        return []
    n = int(g.rng.integers(1, rank + 1))
    axes = sorted(g.rng.choice(rank, size=n, replace=False).tolist())
    return [a - rank if g.coin(0.4) else a for a in axes]


def _reduce(op: str):
    domain = REDUCE[op]

    def build(g: GraphBuilder) -> None:
        x = g.pick_float(domain=domain, max_elements=20000 if g.coin(0.2) else 4096)
        if op == "ReduceProd" and x.size > 64:
            raise Reject("product of many values")
        axes = _axes_for(g, x.rank) if g.coin(0.8) else []
        attrs = {"keepdims": int(g.coin())}
        args = [x]
        if not axes and g.coin(0.3):
            attrs["noop_with_empty_axes"] = int(g.coin(0.3))
        if axes:
            if g.opset >= AXES_INPUT.get(op, 18):
                args.append(g.const(np.array(axes, np.int64)))
            else:
                attrs["axes"] = axes
        g.node(op, args, **attrs)

    return build


for _op in REDUCE:
    spec.register(_op, "reduce", dtypes=FLOATS)(_reduce(_op))


@spec.register("ReduceMax.int", "reduce", dtypes=INT_DTYPES)
def _reduce_int(g: GraphBuilder) -> None:
    x = g.pick_of(("int32", "int64", "int8", "uint8"), min_rank=1)
    op = g.choice(("ReduceMax", "ReduceMin", "ReduceSum"))
    if op == "ReduceSum" and x.dtype in ("int8", "uint8"):
        op = "ReduceMax"
    axes = _axes_for(g, x.rank)
    args = [x]
    attrs = {"keepdims": int(g.coin())}
    if g.opset >= AXES_INPUT.get(op, 18):
        args.append(g.const(np.array(axes, np.int64)))
    else:
        attrs["axes"] = axes
    g.node(op, args, **attrs)


def _arg(op: str):
    def build(g: GraphBuilder) -> None:
        x = g.pick_of(FLOATS + ("int32", "int64"), min_rank=1)
        axis = int(g.rng.integers(-x.rank, x.rank))
        if not distinct(x.array, axis, tie_gap(x.dtype)):
            if is_float(x.dtype) or g.coin(0.5):
                raise Reject("near ties")
        g.node(op, [x], axis=axis, keepdims=int(g.coin()),
               select_last_index=int(g.coin(0.3)) if g.opset >= 12 else None)

    return build


spec.register("ArgMax", "reduce", dtypes=FLOATS + ("int32", "int64"))(_arg("ArgMax"))
spec.register("ArgMin", "reduce", dtypes=FLOATS + ("int32", "int64"))(_arg("ArgMin"))


def _cumulative(op: str):
    def build(g: GraphBuilder) -> None:
        x = g.pick_of(FLOATS + ("int32", "int64"), min_rank=1)
        if op == "CumProd":
            x = g.pick_float(min_rank=1, domain=Domain(0.7, 1.4),
                             accept=lambda v: max(v.shape) <= 16)
        axis = int(g.rng.integers(-x.rank, x.rank))
        g.node(op, [x, g.const(np.array(axis), g.choice(("int32", "int64")))],
               exclusive=int(g.coin(0.3)), reverse=int(g.coin(0.3)))

    return build


spec.register("CumSum", "reduce", since=11, dtypes=FLOATS + ("int32", "int64"))(
    _cumulative("CumSum"))
spec.register("CumProd", "reduce", since=26)(_cumulative("CumProd"))


@spec.register("TopK", "reduce", since=11, dtypes=FLOATS + ("int32", "int64"))
def _topk(g: GraphBuilder) -> None:
    x = g.pick_of(FLOATS + ("int32", "int64"), min_rank=1)
    axis = int(g.rng.integers(-x.rank, x.rank))
    if not distinct(x.array, axis, tie_gap(x.dtype)):
        raise Reject("near ties")
    k = int(g.rng.integers(1, x.shape[axis] + 1))
    g.node("TopK", [x, g.const(np.array([k], np.int64))], n_out=2, axis=axis,
           largest=int(g.coin(0.7)), sorted=1)


def _softmax(op: str):
    def build(g: GraphBuilder) -> None:
        x = g.pick_float(min_rank=1, domain=Domain(-30, 30),
                         max_elements=20000 if g.coin(0.2) else 4096)
        axis = int(g.rng.integers(-x.rank, x.rank))
        if op == "Hardmax" and not distinct(x.array, axis, tie_gap(x.dtype)):
            raise Reject("near ties")
        g.node(op, [x], axis=axis)

    return build


for _op in ("Softmax", "LogSoftmax", "Hardmax"):
    spec.register(_op, "softmax", since=13)(_softmax(_op))


@spec.register("LpNormalization", "norm")
def _lp_norm(g: GraphBuilder) -> None:
    x = g.pick_float(min_rank=1)
    axis = int(g.rng.integers(-x.rank, x.rank))
    p = int(g.choice((1, 2)))
    norm = np.linalg.norm(np.asarray(x.array, np.float64), ord=p, axis=axis)
    if (norm < 0.1).any():
        raise Reject("norm near zero")
    g.node("LpNormalization", [x], axis=axis, p=p)


# -- casts ---------------------------------------------------------------------------------

CAST_RANGE = {"int8": (-100, 100), "uint8": (0, 250), "int32": (-1000, 1000),
              "int64": (-1000, 1000), "bool": (-4, 4), "float16": (-1000, 1000),
              "bfloat16": (-1000, 1000), "float32": (-1e4, 1e4)}


@spec.register("Cast", "cast", since=13, dtypes=NUMERIC + ("bool",))
def _cast(g: GraphBuilder) -> None:
    to = g.choice([d for d in g.dtypes])
    x = g.pick_of(NUMERIC + ("bool",), accept=lambda v: _castable(v, to))
    _emit_cast(g, x, to, like=g.coin(0.25) and g.opset >= 15)


def _castable(v: Value, to: str) -> bool:
    """Whether ``v``'s values convert to ``to`` without rounding ambiguity or overflow
    (floats to integers keep away from integers; no value out of ``to``'s range)."""
    lo, hi = CAST_RANGE.get(to, (-1e4, 1e4))
    x = np.asarray(v.array, np.float64)
    if x.size == 0 or x.min() < lo or x.max() > hi:
        return False
    if is_float(v.dtype) and to in INT_DTYPES:
        return Domain(lo, hi, "int").contains(v.array)
    if is_float(v.dtype) and to == "bool":
        return Domain(lo, hi, "zero").contains(v.array)
    return True


def _emit_cast(g: GraphBuilder, x: Value, to: str, like: bool) -> Value:
    if like:
        target = g.const(np.zeros((1,)), to)
        return g.node("CastLike", [x, target])[0]
    return g.node("Cast", [x], to=helper_dtype(to))[0]


@spec.register("CastLike", "cast", since=15, dtypes=NUMERIC + ("bool",))
def _cast_like(g: GraphBuilder) -> None:
    to = g.choice([d for d in g.dtypes])
    x = g.pick_of(NUMERIC + ("bool",), accept=lambda v: _castable(v, to))
    _emit_cast(g, x, to, like=True)


# Dtypes of one bit width, between which BitCast reinterprets the bits.
SAME_WIDTH = (("float32", "int32"), ("float16", "bfloat16"), ("int8", "uint8"))


@spec.register("BitCast", "cast", since=26, dtypes=NUMERIC)
def _bitcast(g: GraphBuilder) -> None:
    """BitCast of the bits of float values in [-4, 4] to an integer type and back, or
    between the half floats; the source is not perturbed (every bit of an integer
    reading of a float moves with it)."""
    pairs = [p for p in SAME_WIDTH if p[0] in g.dtypes or p[1] in g.dtypes]
    if not pairs:
        raise Reject("no dtype pair")
    a, b = pairs[int(g.rng.integers(len(pairs)))]
    src, dst = (a, b) if g.coin() else (b, a)
    if a in FLOATS:  # the bits of float values of dtype ``a``
        vals = Domain().draw(g.rng, g.shape(0, 3, 256), a)
        if a == "float16" and dst == "bfloat16":  # bfloat16 readings of float16 bits
            vals = np.clip(vals, -1.9, 1.9).astype(np_dtype(a))
    else:
        vals = g.rng.integers(-8, 9, g.shape(0, 3, 256)).astype(np_dtype(a))
    arr = np.asarray(vals).view(np_dtype(src))
    if src in FLOATS and not np.isfinite(np.asarray(arr, np.float64)).all():
        raise Reject("not a finite value")
    x = g.place(arr, data=False, where=g.choice(("initializer", "constant"))
                if src in FLOATS else "")
    g.node("BitCast", [x], to=helper_dtype(dst))


# -- quantization ----------------------------------------------------------------------------

def _scale_zero(g: GraphBuilder, x: np.ndarray, qtype: str) -> tuple[float, int]:
    lo, hi = float(min(0.0, np.min(x))), float(max(0.0, np.max(x)))
    qmin, qmax = (0, 255) if qtype == "uint8" else (-128, 127)
    scale = max((hi - lo) / (qmax - qmin), 1e-3) * float(g.choice((1.0, 1.3, 0.9)))
    zero = int(np.clip(np.round(qmin - lo / scale), qmin, qmax))
    return scale, zero


# How far (in quantization steps) a value to quantize keeps from a rounding tie: far
# beyond float32's rounding of values of a few hundred steps.
TIE_MARGIN = 0.005


def _quantizable(x: np.ndarray, scale: float) -> bool:
    """Whether no value of ``x / scale`` is near a rounding tie."""
    q = np.asarray(x, np.float64) / scale
    return bool((np.abs(q - np.floor(q) - 0.5) > TIE_MARGIN).all())


def _fitted_scale(g: GraphBuilder, x: np.ndarray, qtype: str) -> tuple[float, int]:
    """A scale (and zero point) for quantizing ``x`` to ``qtype`` at which no value of
    ``x`` sits at a rounding tie: the range's scale, nudged until none does."""
    scale, zero = _scale_zero(g, x, qtype)
    for factor in [1.0, *g.rng.uniform(0.85, 1.25, 24)]:
        s = float(np.float32(scale * factor))
        if _quantizable(x, s):
            qmin, qmax = (0, 255) if qtype == "uint8" else (-128, 127)
            lo = float(min(0.0, np.min(x)))
            return s, int(np.clip(np.round(qmin - lo / s), qmin, qmax))
    raise Reject("a value at a rounding tie at every scale tried")


def _quantize(g: GraphBuilder, x: Value, qtype: str) -> tuple[Value, Value, Value]:
    scale, zero = _fitted_scale(g, x.array, qtype)
    s = g.const(np.array(scale, np.float32), "float32")
    z = g.const(np.array(zero), qtype)
    (q,) = g.node("QuantizeLinear", [x, s, z])
    return q, s, z


@spec.register("QuantizeLinear", "quant", since=13)
def _quantize_linear(g: GraphBuilder) -> None:
    x = g.pick_float(dtype="float32", min_rank=1)
    if g.coin(0.3) and x.rank >= 2:  # per-axis
        axis = int(g.rng.integers(-x.rank, x.rank))
        n = x.shape[axis]
        qtype = g.choice(("uint8", "int8"))
        scales = np.array([_scale_zero(g, np.take(x.array, i, axis), qtype)[0]
                           for i in range(n)], np.float32)
        q = np.asarray(x.array, np.float64) / np.expand_dims(
            scales, [a for a in range(x.rank) if a != axis % x.rank])
        if (np.abs(q - np.floor(q) - 0.5) < 0.02).any():
            raise Reject("a value at a rounding tie")
        g.node("QuantizeLinear", [x, g.const(scales, "float32"),
                                  g.const(np.zeros(n), qtype)], axis=axis)
        return
    _quantize(g, x, g.choice(("uint8", "int8")))


# (ONNX's reference evaluator implements DequantizeLinear from its version 19 on.)
@spec.register("DequantizeLinear", "quant", since=19, dtypes=("int8", "uint8", "int32"))
def _dequantize_linear(g: GraphBuilder) -> None:
    x = g.pick_of(("int8", "uint8", "int32"))
    scale = g.const(np.array(g.choice((0.05, 0.1, 0.37)), np.float32), "float32")
    args = [x, scale]
    if x.dtype != "int32" and g.coin():
        args.append(g.const(np.array(int(g.rng.integers(0, 9))), x.dtype))
    g.node("DequantizeLinear", args)


@spec.register("DynamicQuantizeLinear", "quant", since=11)
def _dynamic_quantize(g: GraphBuilder) -> None:
    x = g.pick_float(dtype="float32", min_rank=1)
    lo, hi = min(0.0, float(x.array.min())), max(0.0, float(x.array.max()))
    scale = np.float32((hi - lo) / 255.0)
    if scale <= 0 or not _quantizable(x.array, float(scale)) \
            or abs(-lo / scale - np.floor(-lo / scale) - 0.5) < 0.02:
        raise Reject("a value at a rounding tie")
    g.node("DynamicQuantizeLinear", [x], n_out=3)


def _quant_operand(g: GraphBuilder, shape: tuple[int, ...], qtype: str
                   ) -> tuple[Value, Value, Value]:
    x = g.fresh(shape, "float32", Domain(-2, 2))
    return _quantize(g, x, qtype)


@spec.register("QLinearMatMul", "quant", since=10)
def _qlinear_matmul(g: GraphBuilder) -> None:
    m, k, n = (int(g.choice((1, 2, 3, 5, 8))) for _ in range(3))
    qa, qb = g.choice(("uint8", "int8")), g.choice(("uint8", "int8"))
    a, sa, za = _quant_operand(g, (m, k), qa)
    b, sb, zb = _quant_operand(g, (k, n), qb)
    acc = (np.asarray(a.array, np.int64) - int(za.array)) @ \
        (np.asarray(b.array, np.int64) - int(zb.array))
    real = acc * float(sa.array) * float(sb.array)
    qy = g.choice(("uint8", "int8"))
    sy, zy = _fitted_scale(g, real, qy)
    g.node("QLinearMatMul", [a, sa, za, b, sb, zb, g.const(np.array(sy, np.float32),
                                                            "float32"),
                             g.const(np.array(zy), qy)])


@spec.register("MatMulInteger", "quant", since=10, dtypes=("int8", "uint8"))
def _matmul_integer(g: GraphBuilder) -> None:
    m, k, n = (int(g.choice((1, 2, 3, 7, 16))) for _ in range(3))
    qa, qb = g.choice(("uint8", "int8")), g.choice(("uint8", "int8"))
    a = g.fresh((m, k), qa, low=0 if qa == "uint8" else -20, high=20)
    b = g.fresh((k, n), qb, low=0 if qb == "uint8" else -20, high=20, data=False)
    args = [a, b]
    if g.coin():
        args += [g.const(np.array(3), qa), g.const(np.array(2), qb)]
    g.node("MatMulInteger", args)


@spec.register("ConvInteger", "quant", since=10, dtypes=("uint8",))
def _conv_integer(g: GraphBuilder) -> None:
    c, m, h = int(g.choice((1, 2, 3))), int(g.choice((1, 2, 4))), int(g.choice((4, 5, 7)))
    x = g.fresh((1, c, h, h), "uint8", low=0, high=20)
    w = g.fresh((m, c, 3, 3), "uint8", low=0, high=10, data=False)
    args = [x, w]
    if g.coin():
        args.append(g.const(np.array(4), "uint8"))
    g.node("ConvInteger", args, pads=[1, 1, 1, 1] if g.coin() else None)


@spec.register("QLinearConv", "quant", since=10)
def _qlinear_conv(g: GraphBuilder) -> None:
    c, m, h = int(g.choice((1, 2, 3))), int(g.choice((1, 2, 4))), int(g.choice((4, 5, 7)))
    x, sx, zx = _quant_operand(g, (1, c, h, h), "uint8")
    wf = g.rng.uniform(-1, 1, (m, c, 3, 3))
    sw = float(np.abs(wf).max() / 127)
    w = g.const(np.clip(np.round(wf / sw), -127, 127), "int8")
    xs = (np.asarray(x.array, np.float64) - int(zx.array)) * float(sx.array)
    pads = [1, 1, 1, 1] if g.coin() else [0, 0, 0, 0]
    xp = np.pad(xs, [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])])
    real = _conv_ref(xp, np.asarray(w.array, np.float64) * sw)
    sy, zy = _fitted_scale(g, real, "uint8")
    g.node("QLinearConv", [x, sx, zx, w, g.const(np.array(sw, np.float32), "float32"),
                           g.const(np.array(0), "int8"),
                           g.const(np.array(sy, np.float32), "float32"),
                           g.const(np.array(zy), "uint8")], pads=pads)


def _conv_ref(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    out = np.zeros((n, m, h - kh + 1, wd - kw + 1))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,mc->nmhw", x[:, :, i:i + out.shape[2], j:j + out.shape[3]],
                             w[:, :, i, j])
    return out


__all__ = ["CAST_RANGE", "UNARY"]

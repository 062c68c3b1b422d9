"""Intrinsic calls of loop IR (``Call(op=...)``) translated to LLVM.

Math functions map to LLVM intrinsics where LLVM has one (so the optimizer understands
them and vectorizes what it can) and to the C math library otherwise; a vector argument
of a library-only function is computed lane by lane. float16/bfloat16 compute in float32
and round the result. The op names are those of ``irc.tir.intrin``.
"""

from __future__ import annotations

import math
from typing import Callable

from ..core import dtype as dt
from ..core.diagnostics import CodegenError
from ..runtime.engine import has_symbol
from ..tir import expr as E
from ..tir.intrin import MAX_ERROR_VALUES
from .llvm_builder import Value, const_float, const_int, elem_type, lanes_of, vec
from .llvm_common import is_half, mangle, storage_type, value_type

# Unary float functions with an LLVM intrinsic (llvm.<name>.<type>).
_LLVM_UNARY = {
    "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "log10": "log10",
    "sqrt": "sqrt", "sin": "sin", "cos": "cos", "fabs": "fabs", "floor": "floor",
    "ceil": "ceil", "trunc": "trunc", "round": "roundeven", "nearbyint": "nearbyint",
    "rint": "rint", "roundeven": "roundeven",
}
# Unary float functions from libm (the float version has an ``f`` suffix).
_LIBM_UNARY = {
    "tan": "tan", "tanh": "tanh", "erf": "erf", "erfc": "erfc", "log1p": "log1p",
    "expm1": "expm1", "exp10": "exp10", "asin": "asin", "acos": "acos", "atan": "atan",
    "sinh": "sinh", "cosh": "cosh", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh",
    "cbrt": "cbrt", "lgamma": "lgamma", "tgamma": "tgamma",
}
_LLVM_BINARY = {"pow": "pow", "copysign": "copysign"}
_LIBM_BINARY = {"atan2": "atan2", "hypot": "hypot", "nextafter": "nextafter", "fmod": "fmod"}


def emit_call(cg, e: E.Call) -> Value:
    """The value of intrinsic call ``e``."""
    op = e.op
    handler = _HANDLERS.get(op)
    if handler is not None:
        return handler(cg, e)
    if op in _LLVM_UNARY or op in _LIBM_UNARY:
        _arity(e, 1)
        return cg.unary_intrinsic(op, cg.expr(e.args[0]), e.dtype)
    if op in _LLVM_BINARY or op in _LIBM_BINARY:
        _arity(e, 2)
        return _binary_math(cg, op, cg.expr(e.args[0]), cg.expr(e.args[1]), e.dtype)
    raise CodegenError(f"the LLVM code generator does not know the intrinsic {op!r}", node=e,
                       hint="see irc.tir.intrin for the supported intrinsics")


def _arity(e: E.Call, n: int) -> None:
    if len(e.args) != n:
        raise CodegenError(f"intrinsic {e.op!r} takes {n} argument(s), got {len(e.args)}",
                           node=e)


def _require_float(e: E.Call, dtype: str) -> None:
    if not dt.is_float(dtype):
        raise CodegenError(f"intrinsic {e.op!r} needs a float argument, got {dtype}", node=e)


# Functions glibc's libmvec computes on whole vectors (name without the float suffix).
_MVEC_UNARY = {
    "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc",
    "cbrt",
}
_MVEC_BINARY = {"pow", "atan2", "hypot"}
# (ISA letter, required CPU feature, register bits) of libmvec's variants, widest first.
_MVEC_ISAS = (("e", "+avx512f", 512), ("d", "+avx2", 256), ("b", "", 128))
_symbol_cache: dict[str, bool] = {}


def _has_symbol(name: str) -> bool:
    hit = _symbol_cache.get(name)
    if hit is None:
        hit = _symbol_cache[name] = has_symbol(name)
    return hit


# libmvec's float exp takes a slow path, one scalar call per lane, for every vector with
# a lane outside about [-87.34, 87.34] (where the result leaves float's normal range):
# 7-9x the time per element on a Zen 3, and a softmax under an attention mask of -10000
# hits it on every row (BERT's ran 8x slower than ONNX Runtime's). `_exp_in_fast_range`
# gives lanes whose result is surely 0 (below ``EXP_ZERO_BELOW``) or infinite (above
# ``EXP_INF_ABOVE``) that result directly, and moves the argument of the others beyond
# ``EXP_FAST_LIMIT`` by ``EXP_SHIFT`` towards zero (an integer: the sum is exact),
# multiplying the result by exp(-+EXP_SHIFT) rounded to float: at most about one more
# rounding (a denormal result, by one unit of its last place). This covers the vectors
# irc's schedules make; a loop left to LLVM's own vectorizer, whose exp calls become
# libmvec's after optimization (`llvm_compile.replace_with_vector_library`), keeps the
# slow path.
EXP_FAST_LIMIT = 87.0
EXP_SHIFT = 22.0
EXP_ZERO_BELOW = -104.0  # exp(-104) = 6.8e-46, under half the smallest denormal
EXP_INF_ABOVE = 89.0  # exp(89) = 4.5e38, over the largest float


def _exp_in_fast_range(cg, call: Callable[[Value], Value], x: Value) -> Value:
    """``call(x)`` (libmvec's float exp on a vector) with every lane's argument inside
    the fast range (see above): a vector with every lane inside calls libmvec as it is
    (one compare and a branch more), the others go through :func:`_exp_moved`. NaN
    lanes go to libmvec as they are."""
    b, ty = cg.b, x.ty
    fabs = f"llvm.fabs.{mangle(ty)}"
    cg.declare_intrinsic(fabs, ty, [ty])
    outside = b.fcmp("ogt", b.call(ty, fabs, [x]), const_float(ty, EXP_FAST_LIMIT))
    any_name = f"llvm.vector.reduce.or.{mangle(outside.ty)}"
    cg.declare_intrinsic(any_name, "i1", [outside.ty])
    any_outside = b.call("i1", any_name, [outside])
    return _branches(cg, any_outside, lambda: _exp_moved(cg, call, x), lambda: call(x), "exp")


def _branches(cg, cond: Value, then: Callable[[], Value], other: Callable[[], Value],
              hint: str) -> Value:
    """``cond ? then() : other()`` with a branch: each side is emitted in its own block
    (only the taken one runs) and the results meet in a phi."""
    b = cg.b
    then_b, else_b, end_b = b.block(f"{hint}_then"), b.block(f"{hint}_else"), b.block(f"{hint}_end")
    b.cbr(cond, then_b, else_b)
    b.goto(then_b)
    tv = then()
    then_end = b.cur
    b.br(end_b)
    b.goto(else_b)
    fv = other()
    else_end = b.cur
    b.br(end_b)
    b.goto(end_b)
    phi = b.phi(tv.ty, hint)
    phi.add(tv, then_end)
    phi.add(fv, else_end)
    return Value(tv.ty, phi.name)


def _exp_moved(cg, call: Callable[[Value], Value], x: Value) -> Value:
    """exp of the vector ``x`` by libmvec's fast path whatever its lanes: known results
    for lanes beyond ``EXP_ZERO_BELOW`` and ``EXP_INF_ABOVE``, shifted arguments for the
    others outside ``EXP_FAST_LIMIT``."""
    b, ty = cg.b, x.ty

    def c(value: float) -> Value:
        return const_float(ty, value)

    low = b.fcmp("olt", x, c(-EXP_FAST_LIMIT))
    high = b.fcmp("ogt", x, c(EXP_FAST_LIMIT))
    zero = b.fcmp("olt", x, c(EXP_ZERO_BELOW))
    inf = b.fcmp("ogt", x, c(EXP_INF_ABOVE))
    moved = b.binop("fadd", x, b.select(low, c(EXP_SHIFT),
                                        b.select(high, c(-EXP_SHIFT), c(0.0))))
    # Lanes with a known result compute exp(0) instead: no denormal arithmetic either.
    arg = b.select(b.binop("or", zero, inf), c(0.0), moved)
    scale = b.select(low, c(math.exp(-EXP_SHIFT)),
                     b.select(high, c(math.exp(EXP_SHIFT)), c(1.0)))
    r = b.binop("fmul", call(arg), scale)
    return b.select(zero, c(0.0), b.select(inf, c(math.inf), r))


def vector_math(cg, base: str, args: list[Value]) -> Value | None:
    """``base(args)`` on whole vectors with libmvec (split into register-wide calls), or
    None when no variant fits (scalar element type, lane count, CPU features). Float
    ``exp`` keeps its arguments in libmvec's fast range (:func:`_exp_in_fast_range`)."""
    variant = _mvec_variant(cg, base, args[0].ty, len(args))
    if variant is None:
        return None
    name, width = variant
    if base == "exp" and elem_type(args[0].ty) == "float":
        return _exp_in_fast_range(cg, lambda x: _mvec_call(cg, name, width, [x]), args[0])
    return _mvec_call(cg, name, width, args)


def _mvec_variant(cg, base: str, ty: str, nargs: int) -> tuple[str, int] | None:
    """The libmvec function (name, lanes per call) for ``base`` on vectors of type
    ``ty``, the widest the CPU has; None for scalars, other element types, lane counts
    no variant divides, or a libmvec without the function."""
    n = lanes_of(ty)
    et = elem_type(ty)
    if n == 1 or et not in ("float", "double"):
        return None
    feats = cg.target.llvm_features()
    bits = 32 if et == "float" else 64
    suffix = "f" if et == "float" else ""
    for isa, feature, reg_bits in _MVEC_ISAS:
        width = reg_bits // bits
        if (feature and feature not in feats) or n % width:
            continue
        name = f"_ZGV{isa}N{width}{'v' * nargs}_{base}{suffix}"
        if _has_symbol(name):
            return name, width
    return None


def _mvec_call(cg, name: str, width: int, args: list[Value]) -> Value:
    """``name(args)`` (a libmvec function on ``width`` lanes) on vectors of a multiple
    of ``width`` lanes: one call per register-wide chunk, the results concatenated."""
    ty = args[0].ty
    n = lanes_of(ty)
    wty = vec(elem_type(ty), width)
    cg.declare_extern(name, wty, [wty] * len(args), "nounwind willreturn memory(none)")
    b = cg.b
    if width == n:
        return b.call(wty, name, args)
    parts = []
    for k in range(0, n, width):
        chunk = [b.shuffle(a, None, list(range(k, k + width))) for a in args]
        parts.append(b.call(wty, name, chunk))
    while len(parts) > 1:
        merged = [_concat(b, p, q) for p, q in zip(parts[::2], parts[1::2])]
        if len(parts) % 2:  # an odd count (12 lanes in calls of 4): the last waits
            merged.append(parts[-1])
        parts = merged
    return parts[0]


def _concat(b, p: Value, q: Value) -> Value:
    """The lanes of ``p`` followed by those of ``q`` (``q`` may be the shorter: it is
    padded first, since a shuffle takes two operands of one type)."""
    m, k = lanes_of(p.ty), lanes_of(q.ty)
    if k < m:
        q = b.shuffle(q, None, list(range(k)) + [-1] * (m - k))
    return b.shuffle(p, q, list(range(m)) + list(range(m, m + k)))


def unary_intrinsic(cg, op: str, v: Value, dtype: str) -> Value:
    """``op(v)`` for a float value ``v`` of ``dtype`` (an LLVM intrinsic or libm)."""
    if not dt.is_float(dtype):
        raise CodegenError(f"intrinsic {op!r} needs a float argument, got {dtype}")
    b = cg.b
    fast = vector_math(cg, op, [v]) if op in _MVEC_UNARY else None
    if fast is not None:
        r = fast
    elif op in _LLVM_UNARY:
        name = f"llvm.{_LLVM_UNARY[op]}.{mangle(v.ty)}"
        cg.declare_intrinsic(name, v.ty, [v.ty])
        r = b.call(v.ty, name, [v], cg.fmf, op)
    else:
        r = _libm(cg, _LIBM_UNARY[op], [v])
    return cg.round16(r, dtype) if is_half(dtype) else r


def _vector_variants(cg, base: str, scalar_name: str, et: str, nargs: int) -> str:
    """Call-site attributes naming libmvec's vector versions of a scalar libm function
    (``vector-function-abi-variant``), so LLVM's loop vectorizer can vectorize loops that
    call it; "" when there are none."""
    if base not in _MVEC_UNARY and base not in _MVEC_BINARY:
        return ""
    feats = cg.target.llvm_features()
    bits = 32 if et == "float" else 64
    variants = []
    for isa, feature, reg_bits in _MVEC_ISAS:
        if feature and feature not in feats:
            continue
        width = reg_bits // bits
        vname = f"_ZGV{isa}N{width}{'v' * nargs}_{scalar_name}"
        if not _has_symbol(vname):
            continue
        wty = vec(et, width)
        cg.declare_extern(vname, wty, [wty] * nargs, "nounwind willreturn memory(none)")
        if vname not in cg.module.compiler_used:
            cg.module.compiler_used.append(vname)
        variants.append(f"_ZGV_LLVM_N{width}{'v' * nargs}_{scalar_name}({vname})")
    if not variants:
        return ""
    return cg.module.attribute_group(
        f'nounwind willreturn memory(none) "vector-function-abi-variant"="{",".join(variants)}"')


def _libm(cg, base: str, args: list[Value]) -> Value:
    """Call a libm function, lane by lane for vector arguments."""
    et = elem_type(args[0].ty)
    name = base + ("f" if et == "float" else "")
    cg.declare_extern(name, et, [et] * len(args), "nounwind willreturn memory(none)")
    n = lanes_of(args[0].ty)
    b = cg.b
    if n == 1:
        return b.call(et, name, args, attrs=_vector_variants(cg, base, name, et, len(args)))
    out = Value(args[0].ty, "poison")
    for i in range(n):
        r = b.call(et, name, [b.extract(a, i) for a in args])
        out = b.insert(out, r, i)
    return out


def _binary_math(cg, op: str, a: Value, c: Value, dtype: str) -> Value:
    if not dt.is_float(dtype):
        raise CodegenError(f"intrinsic {op!r} needs float arguments, got {dtype}")
    b = cg.b
    fast = vector_math(cg, op, [a, c]) if op in _MVEC_BINARY else None
    if fast is not None:
        r = fast
    elif op == "fmod":
        r = b.binop("frem", a, c)
    elif op in _LLVM_BINARY:
        name = f"llvm.{_LLVM_BINARY[op]}.{mangle(a.ty)}"
        cg.declare_intrinsic(name, a.ty, [a.ty, a.ty])
        r = b.call(a.ty, name, [a, c], cg.fmf, op)
    else:
        r = _libm(cg, _LIBM_BINARY[op], [a, c])
    return cg.round16(r, dtype) if is_half(dtype) else r


# -- handlers ------------------------------------------------------------------------------


def _rsqrt(cg, e):
    _arity(e, 1)
    _require_float(e, e.dtype)
    s = cg.unary_intrinsic("sqrt", cg.expr(e.args[0]), "float32" if is_half(e.dtype) else e.dtype)
    r = cg.b.binop("fdiv", const_float(s.ty, 1.0), s, cg.fmf)
    return cg.round16(r, e.dtype) if is_half(e.dtype) else r


def _sigmoid(cg, e):
    _arity(e, 1)
    _require_float(e, e.dtype)
    b = cg.b
    x = cg.expr(e.args[0])
    neg = b.emit(f"fneg {x.ty} {x.ref}", x.ty, "neg")
    ex = cg.unary_intrinsic("exp", neg, "float32" if is_half(e.dtype) else e.dtype)
    den = b.binop("fadd", const_float(x.ty, 1.0), ex, cg.fmf)
    r = b.binop("fdiv", const_float(x.ty, 1.0), den, cg.fmf)
    return cg.round16(r, e.dtype) if is_half(e.dtype) else r


def _isnan(cg, e):
    _arity(e, 1)
    x = cg.expr(e.args[0])
    if not dt.is_float(e.args[0].dtype):
        return const_int(vec("i1", lanes_of(x.ty)), 0)
    return cg.b.fcmp("uno", x, x)


def _isinf(cg, e, pred="oeq"):
    _arity(e, 1)
    x = cg.expr(e.args[0])
    if not dt.is_float(e.args[0].dtype):
        return const_int(vec("i1", lanes_of(x.ty)), 1 if pred == "one" else 0)
    ax = cg.unary_intrinsic("fabs", x, e.args[0].dtype)
    return cg.b.fcmp(pred, ax, const_float(x.ty, float("inf")))


def _isfinite(cg, e):
    return _isinf(cg, e, "one")


def _abs(cg, e):
    _arity(e, 1)
    x = cg.expr(e.args[0])
    if dt.is_float(e.dtype):
        return cg.unary_intrinsic("fabs", x, e.dtype)
    if dt.is_uint(e.dtype) or dt.is_bool(e.dtype):
        return x
    neg = cg.b.binop("sub", const_int(x.ty, 0), x)
    return cg.b.select(cg.b.icmp("slt", x, const_int(x.ty, 0)), neg, x)


def _int_unary(llvm_name: str, extra: str = ""):
    def handler(cg, e):
        _arity(e, 1)
        if not dt.is_integer(e.args[0].dtype):
            raise CodegenError(f"intrinsic {e.op!r} needs an integer argument", node=e)
        x = cg.expr(e.args[0])
        name = f"llvm.{llvm_name}.{mangle(x.ty)}"
        args = [x] + ([const_int("i1", 0)] if extra else [])
        cg.declare_intrinsic(name, x.ty, [a.ty for a in args])
        r = cg.b.call(x.ty, name, args)
        return cg.cast_value(r, e.args[0].dtype, e.dtype)
    return handler


def _bitwise(op: str):
    def handler(cg, e):
        _arity(e, 2)
        if dt.is_float(e.dtype):
            raise CodegenError(f"intrinsic {e.op!r} needs integer arguments", node=e)
        a, c = cg.expr(e.args[0]), cg.expr(e.args[1])
        return cg.b.binop(op, a, c)
    return handler


def _bitwise_not(cg, e):
    _arity(e, 1)
    x = cg.expr(e.args[0])
    return cg.b.binop("xor", x, const_int(x.ty, -1))


def _shift_right(cg, e):
    _arity(e, 2)
    a, c = cg.expr(e.args[0]), cg.expr(e.args[1])
    return cg.b.binop("lshr" if dt.is_uint(e.dtype) else "ashr", a, c)


def _reinterpret(cg, e):
    _arity(e, 1)
    src = e.args[0].dtype
    if dt.itemsize(src) != dt.itemsize(e.dtype):
        raise CodegenError(f"reinterpret needs equal sizes: {src} to {e.dtype}", node=e)
    v = cg.to_storage(cg.expr(e.args[0]), src)
    bits = cg.b.conv("bitcast", v, storage_type(e.dtype))
    return cg.from_storage(bits, e.dtype)


def _likely(cg, e):
    _arity(e, 1)
    return cg.expr(e.args[0])


def _if_then_else(cg, e):
    _arity(e, 3)
    cond, t, f = e.args
    if dt.lanes(cond.dtype) > 1:
        return _masked_if_then_else(cg, cond, t, f)
    c = cg.expr(cond)
    if c.ref in ("true", "false"):
        return cg.expr(t if c.ref == "true" else f)
    b = cg.b
    if isinstance(t, E.BufferLoad) and _is_constant(f):
        # A guarded load (padding): load from an address that is always valid and
        # select, without a branch (fewer blocks for LLVM, none to mispredict).
        v = cg.speculated_load(t, c)
        if v is not None:
            return b.select(c, v, cg.expr(f))
    return _branches(cg, c, lambda: cg.expr(t), lambda: cg.expr(f), "ite")


def _is_constant(e) -> bool:
    if isinstance(e, E.Broadcast):
        e = e.value
    return isinstance(e, (E.IntImm, E.FloatImm))


def _masked_if_then_else(cg, cond, t, f):
    """Vector if_then_else: each side is computed with its lanes' mask, so loads of
    disabled lanes do not happen."""
    b = cg.b
    c = cg.expr(cond)
    outer = cg.mask
    not_c = b.binop("xor", c, const_int(c.ty, 1))
    cg.mask = c if outer is None else b.binop("and", c, outer)
    try:
        tv = cg.expr(t)
        cg.mask = not_c if outer is None else b.binop("and", not_c, outer)
        fv = cg.expr(f)
    finally:
        cg.mask = outer
    return b.select(c, tv, fv)


def _call_extern(cg, e):
    if not e.args or not isinstance(e.args[0], E.StringImm):
        raise CodegenError(f"{e.op} needs the function name as its first argument", node=e)
    name = e.args[0].value
    args = [cg.expr(a) for a in e.args[1:]]
    ret = value_type(e.dtype) if e.dtype != "void" else "void"
    cg.declare_extern(name, ret, [a.ty for a in args], "nounwind")
    r = cg.b.call(ret, name, args)
    return r if r is not None else const_int("i32", 0)


def _fma(cg, e):
    _arity(e, 3)
    _require_float(e, e.dtype)
    a, c, d = (cg.expr(x) for x in e.args)
    name = f"llvm.fma.{mangle(a.ty)}"
    cg.declare_intrinsic(name, a.ty, [a.ty] * 3)
    r = cg.b.call(a.ty, name, [a, c, d])
    return cg.round16(r, e.dtype) if is_half(e.dtype) else r


def _minmax_call(kind: str):
    def handler(cg, e):
        _arity(e, 2)
        cls = E.Min if kind == "min" else E.Max
        return cg.expr(cls(dtype=e.dtype, a=e.args[0], b=e.args[1]))
    return handler


def _storage_sync(cg, e):
    raise CodegenError("tvm_storage_sync is a GPU barrier (shared memory) and cannot run on "
                       "the CPU", node=e, hint="build for target 'cuda', or do not cache "
                       "into 'shared' scope in a CPU schedule")


def _error_values(cg, e):
    # Count, then the values, into the runtime's slots (irc.runtime.engine), where the
    # failing kernel's caller reads them to format the assertion's message.
    b = cg.b
    slots = f"[{MAX_ERROR_VALUES + 1} x i64]"
    cg.module.declare("irc_error_values", f"@irc_error_values = external global {slots}")
    for k, a in enumerate(e.args):
        v = cg.cast_value(cg.expr(a), a.dtype, "int64")
        p = b.emit(f"getelementptr inbounds {slots}, ptr @irc_error_values, i64 0, "
                   f"i64 {k + 1}", "ptr", "ev")
        b.store(v, p, 8)
    b.store(const_int("i64", len(e.args)), Value("ptr", "@irc_error_values"), 8)
    return const_int("i32", 0)


def _prefetch(cg, e):
    # A hint only; nothing to compute.
    return const_int("i32", 0)


_HANDLERS: dict[str, Callable] = {
    "rsqrt": _rsqrt,
    "sigmoid": _sigmoid,
    "isnan": _isnan,
    "isinf": _isinf,
    "isfinite": _isfinite,
    "abs": _abs,
    "popcount": _int_unary("ctpop"),
    "clz": _int_unary("ctlz", "i1 false"),
    "bitwise_and": _bitwise("and"),
    "bitwise_or": _bitwise("or"),
    "bitwise_xor": _bitwise("xor"),
    "bitwise_not": _bitwise_not,
    "shift_left": _bitwise("shl"),
    "shift_right": _shift_right,
    "reinterpret": _reinterpret,
    "likely": _likely,
    "if_then_else": _if_then_else,
    "call_extern": _call_extern,
    "call_pure_extern": _call_extern,
    "fma": _fma,
    "min": _minmax_call("min"),
    "max": _minmax_call("max"),
    "prefetch": _prefetch,
    "error_values": _error_values,
    "tvm_storage_sync": _storage_sync,
}


def supported_intrinsics() -> list[str]:
    """Names of the intrinsics the LLVM code generator translates."""
    return sorted({*_HANDLERS, *_LLVM_UNARY, *_LIBM_UNARY, *_LLVM_BINARY, *_LIBM_BINARY})

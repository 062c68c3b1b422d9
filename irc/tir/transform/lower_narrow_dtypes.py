"""LowerNarrowDTypes: compute on the narrow storage dtypes (float8, float4, int4, int2) in
float32 / int32 and keep only their bytes in memory.

No code generator knows the narrow dtypes of :mod:`irc.core.dtype`; this pass removes
them from everything but the function's parameter list:

- every buffer of a narrow dtype is accessed through a ``uint8`` view of the same memory
  (one element per byte; parameters keep their declared dtype, so callers still pass
  float8 arrays and the run-time checks still name it); ``Allocate`` of a narrow dtype
  allocates bytes;
- a load becomes the *decode* of its byte to float32 (int32 for the narrow integers),
  exact for every value of the format; a store becomes the *encode* of its value, which
  rounds it to the format;
- every expression of a narrow dtype is computed in float32 / int32 and rounded to the
  format where the original rounds (a cast to it, arithmetic in it); comparisons,
  selects, min/max need no rounding; a store of a value loaded from a buffer of the same
  dtype copies the byte.

Rounding (the encode), as ml_dtypes and ONNX's reference converter round:

- the float8 / float4 formats round to nearest, ties to even, from float32 (a float64
  value is first rounded to float32, so a float64 exactly between two float32 neighbours
  of a float8 rounding boundary can round differently from a direct conversion); a value
  above the largest finite one becomes infinity where the format has one, NaN otherwise
  (the float4 format, which has neither, saturates to its largest value); NaN keeps its
  sign where the format can spell it;
- ``float8_e8m0fnu`` (a power of two, no sign) rounds up (a value between two powers of
  two becomes the larger one) and saturates, the default of ONNX's ``Cast`` (its
  ``round_mode="up"``); infinities and NaN become its NaN;
- the narrow integers take a float's truncation toward zero and keep the low bits
  (wrapping, as C casts to a narrower integer do); NaN and infinities become 0.

Saturating conversions (ONNX's ``saturate=1``) are the graph's job: clip, then cast.

Preconditions: FlattenBuffer has run (every access is 1-D). Postconditions: no load,
store, allocation or expression of a narrow dtype remains except in ``buffer_map``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...core import dtype as dt
from ...core.diagnostics import LoweringError
from ...core.node import Node, node_fields
from .. import expr as E
from ..buffer import Buffer
from ..functor.rewriter import IRRewriter
from ..stmt import Allocate, BufferStore, DeclBuffer, PrimFunc, Stmt
from .base import PrimFuncPass


def _c(value, dtype: str) -> E.PrimExpr:
    return E.const(value, dtype)


def _like(value, e: E.PrimExpr, elem: str) -> E.PrimExpr:
    """A constant of element type ``elem`` with ``e``'s lanes."""
    return _c(value, dt.with_lanes(elem, dt.lanes(e.dtype)))


def _bin(cls, a: E.PrimExpr, b) -> E.PrimExpr:
    b = b if isinstance(b, E.PrimExpr) else _like(b, a, dt.element_of(a.dtype))
    return cls(dtype=a.dtype, a=a, b=b)


def _cmp(cls, a: E.PrimExpr, b) -> E.PrimExpr:
    b = b if isinstance(b, E.PrimExpr) else _like(b, a, dt.element_of(a.dtype))
    return cls(dtype=dt.with_lanes("bool", dt.lanes(a.dtype)), a=a, b=b)


def _call(op: str, dtype: str, *args: E.PrimExpr) -> E.PrimExpr:
    return E.Call(dtype=dtype, op=op, args=tuple(args))


def _and(a: E.PrimExpr, mask: int) -> E.PrimExpr:
    return _call("bitwise_and", a.dtype, a, _like(mask, a, dt.element_of(a.dtype)))


def _or(a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
    return _call("bitwise_or", a.dtype, a, b)


def _shr(a: E.PrimExpr, n: int) -> E.PrimExpr:
    return a if n == 0 else _call("shift_right", a.dtype, a,
                                  _like(n, a, dt.element_of(a.dtype)))


def _shl(a: E.PrimExpr, n: int) -> E.PrimExpr:
    return a if n == 0 else _call("shift_left", a.dtype, a,
                                  _like(n, a, dt.element_of(a.dtype)))


def _cast(dtype: str, e: E.PrimExpr) -> E.PrimExpr:
    dst = dt.with_lanes(dtype, dt.lanes(e.dtype))
    return e if e.dtype == dst else E.Cast(dtype=dst, value=e)


def _reinterpret(dtype: str, e: E.PrimExpr) -> E.PrimExpr:
    return _call("reinterpret", dt.with_lanes(dtype, dt.lanes(e.dtype)), e)


def _select(c: E.PrimExpr, t: E.PrimExpr, f: E.PrimExpr) -> E.PrimExpr:
    return E.Select(dtype=t.dtype, condition=c, true_value=t, false_value=f)


def _pow2(e: int, like: E.PrimExpr) -> E.PrimExpr:
    return _like(math.ldexp(1.0, e), like, "float32")


def _bind(name: str, value: E.PrimExpr, body) -> E.PrimExpr:
    """``body(v)`` with ``v`` bound to ``value`` by a Let (the encodings use their values
    many times; a Let keeps the expression a DAG of linear size when printed or copied)."""
    if isinstance(value, (E.Var, E.IntImm, E.FloatImm)):
        return body(value)
    v = E.Var(name=name, dtype=value.dtype)
    out = body(v)
    return E.Let(dtype=out.dtype, var=v, value=value, body=out)


# -- decode ----------------------------------------------------------------------------
def decode(dtype: str, byte: E.PrimExpr) -> E.PrimExpr:
    """The float32 (int32) value of the ``uint8`` storage byte of narrow ``dtype``."""
    name = dt.element_of(dtype)
    if name in dt.NARROW_INTS:
        bits = dt.bits(name)
        v = _cast("int32", byte)
        if name.startswith("u"):
            return _and(v, (1 << bits) - 1)
        return _shr(_shl(v, 32 - bits), 32 - bits)  # sign extension
    return _bind("nb", _cast("uint32", byte), lambda u: _decode_float(name, u))


def _decode_float(name: str, u: E.PrimExpr) -> E.PrimExpr:
    f = dt.FLOAT_FORMATS[name]
    if name == "float8_e8m0fnu":  # 2 ** (u - 127); 0xFF is NaN
        val = _reinterpret("float32", _select(_cmp(E.EQ, u, 0), _like(0x400000, u, "uint32"),
                                              _shl(u, 23)))
        return _select(_cmp(E.EQ, u, 0xFF), _like(math.nan, val, "float32"), val)
    e_mask, m_mask = (1 << f.exp_bits) - 1, (1 << f.man_bits) - 1
    sign = _shl(_and(_shr(u, f.exp_bits + f.man_bits), 1), 31)

    def body(exp: E.PrimExpr, man: E.PrimExpr) -> E.PrimExpr:
        normal = _reinterpret("float32", _or(_or(
            sign, _shl(_bin(E.Add, exp, 127 - f.bias), 23)), _shl(man, 23 - f.man_bits)))
        sub = _bin(E.Mul, _cast("float32", man), _pow2(1 - f.bias - f.man_bits, normal))
        sub = _reinterpret("float32", _or(_reinterpret("uint32", sub), sign))  # keeps -0
        val = _select(_cmp(E.EQ, exp, 0), sub, normal)
        nan = _reinterpret("float32", _or(sign, _like(0x7FC00000, u, "uint32")))
        if f.nan == "fn":
            return _select(_cmp(E.EQ, _and(u, 0x7F), 0x7F), nan, val)
        if f.nan == "fnuz":
            return _select(_cmp(E.EQ, u, 0x80), _like(math.nan, val, "float32"), val)
        if f.nan == "ieee":
            inf = _reinterpret("float32", _or(sign, _like(0x7F800000, u, "uint32")))
            top = _cmp(E.EQ, exp, e_mask)
            return _select(top, _select(_cmp(E.EQ, man, 0), inf, nan), val)
        return val

    return _bind("ne", _and(_shr(u, f.man_bits), e_mask), lambda exp: _bind(
        "nm", _and(u, m_mask), lambda man: body(exp, man)))


# -- encode ----------------------------------------------------------------------------
def encode(dtype: str, value: E.PrimExpr) -> E.PrimExpr:
    """The ``uint8`` storage byte of ``value`` (any numeric dtype) rounded to narrow
    ``dtype`` (see the module docstring for the rounding)."""
    name = dt.element_of(dtype)
    if name in dt.NARROW_INTS:
        return _cast("uint8", _and(_int_value(value), (1 << dt.bits(name)) - 1))
    x = value if dt.element_of(value.dtype) == "float32" else _cast("float32", value)
    return _bind("nx", x, lambda x: _bind("nbits", _reinterpret("uint32", x),
                                          lambda bits: _encode_float(name, x, bits)))


def _encode_float(name: str, x: E.PrimExpr, bits: E.PrimExpr) -> E.PrimExpr:
    if name == "float8_e8m0fnu":
        exp = _and(_shr(bits, 23), 0xFF)
        frac = _cmp(E.NE, _and(bits, 0x7FFFFF), 0)
        up = E.And(dtype=frac.dtype, a=frac, b=_cmp(E.LT, exp, 0xFE))
        return _cast("uint8", _select(up, _bin(E.Add, exp, 1), exp))
    f = dt.FLOAT_FORMATS[name]
    M = f.man_bits
    emin = 1 - f.bias
    width = f.exp_bits + M
    sign = _shl(_shr(bits, 31), width)
    top = _like(f.max_value, x, "float32")
    a = _call("fabs", x.dtype, x)
    if f.nan == "none":  # float4 saturates
        a = _select(_cmp(E.GT, a, top), top, a)

    def rounded(a: E.PrimExpr) -> E.PrimExpr:
        # a rounded to the format's grid: the quantum is 2**(max(exponent(a), emin) - M)
        ea = _bin(E.Sub, _cast("int32", _and(_shr(_reinterpret("uint32", a), 23), 0xFF)), 127)
        eq = _bin(E.Sub, E.Max(dtype=ea.dtype, a=ea, b=_like(emin, ea, "int32")), M)
        return _bind("nq", eq, lambda eq: _bin(E.Mul, _call(
            "nearbyint", a.dtype, _bin(E.Mul, a, _exp2(_bin(E.Sub, _like(127, eq, "int32"),
                                                             eq)))),
            _exp2(_bin(E.Add, eq, 127))))

    def code_of(r: E.PrimExpr) -> E.PrimExpr:
        def from_bits(rb: E.PrimExpr) -> E.PrimExpr:
            re = _bin(E.Sub, _cast("int32", _shr(rb, 23)), 127)
            normal = _or(_shl(_cast("uint32", _bin(E.Add, re, f.bias)), M),
                         _and(_shr(rb, 23 - M), (1 << M) - 1))
            # Only a subnormal result is converted to an integer (never inf or NaN).
            is_normal = _cmp(E.GE, re, emin)
            sub = _cast("uint32", _select(is_normal, _like(0.0, r, "float32"),
                                          _bin(E.Mul, r, _pow2(M - emin, r))))
            return _select(is_normal, normal, sub)

        def signed(code: E.PrimExpr) -> E.PrimExpr:
            if f.nan == "fnuz":  # no negative zero: its pattern is NaN
                code = _select(_cmp(E.EQ, code, 0), code, _or(code, sign))
            else:
                code = _or(code, sign)
            if f.nan == "fn":
                over = nan = _or(_like(0x7F, code, "uint32"), sign)
            elif f.nan == "ieee":
                inf_code = ((1 << f.exp_bits) - 1) << M
                over = _or(_like(inf_code, code, "uint32"), sign)
                nan = _or(_like(inf_code | (1 << (M - 1)), code, "uint32"), sign)
            elif f.nan == "fnuz":
                over = nan = _like(0x80, code, "uint32")
            else:  # float4: no NaN; ml_dtypes gives NaN the pattern of the other sign's 0
                over = code
                nan = _select(_cmp(E.NE, sign, 0), _like(0, code, "uint32"),
                              _like(1 << width, code, "uint32"))
            code = _select(_cmp(E.GT, r, top), over, code)
            return _select(_cmp(E.NE, x, x), nan, code)

        return _bind("nc", _bind("nrb", _reinterpret("uint32", r), from_bits), signed)

    return _cast("uint8", _bind("na", a, lambda a: _bind("nr", rounded(a), code_of)))


def _exp2(e: E.PrimExpr) -> E.PrimExpr:
    """The float32 2**(e - 127) of a biased exponent ``e`` in [1, 254]."""
    return _reinterpret("float32", _shl(_cast("uint32", e), 23))


def _int_value(value: E.PrimExpr) -> E.PrimExpr:
    """``value`` as int32 for the narrow integers: floats truncated (NaN, inf -> 0)."""
    if dt.is_float(value.dtype):
        x = value if dt.element_of(value.dtype) in ("float32", "float64") else \
            _cast("float32", value)

        def trunc(x: E.PrimExpr) -> E.PrimExpr:
            fits = _cmp(E.LT, _call("fabs", x.dtype, x),
                        _like(2.0 ** 31, x, dt.element_of(x.dtype)))
            return _select(fits, _cast("int32", x), _like(0, x, "int32"))

        return _bind("nx", x, trunc)
    if dt.element_of(value.dtype) == "int32":
        return value
    return _cast("int32", value)


def _is_e8m0_smallest(e: E.PrimExpr) -> bool:
    """Whether ``e`` is a float8_e8m0fnu immediate (or its broadcast) of the format's
    smallest value, 2**-127 (code 0): the one value converting which (a float32 subnormal)
    gives another (ONNX's rounding up)."""
    imm = e.value if type(e) is E.Broadcast else e
    return type(imm) is E.FloatImm and imm.dtype == "float8_e8m0fnu" and \
        imm.value == math.ldexp(1.0, -127)


def round_to(dtype: str, value: E.PrimExpr) -> E.PrimExpr:
    """``value`` rounded to narrow ``dtype``, as that dtype's compute value."""
    return decode(dtype, encode(dtype, value))


# -- the rewriter ----------------------------------------------------------------------
class _Lower(IRRewriter):
    def __init__(self) -> None:
        super().__init__()
        self._edispatch[E.FloatImm] = self._imm
        self._edispatch[E.IntImm] = self._imm
        self.twins: dict[int, Buffer] = {}

    # buffers: a uint8 view of the same memory
    def rewrite_buffer(self, b: Buffer) -> Buffer:
        r = super().rewrite_buffer(b)
        if not dt.is_narrow(r.dtype):
            return r
        twin = r.replace(dtype="uint8")
        self.twins[id(b)] = twin  # keyed by the original: buffer_map holds it
        return twin

    def _imm(self, e):
        if not dt.is_narrow(e.dtype):
            return e
        c = dt.compute_dtype(e.dtype)
        if dt.is_float(c):  # every value of a narrow float format is a float32
            return E.FloatImm(dtype=c, value=dt.format_value(float(e.value), e.dtype))
        return round_to(e.dtype, E.IntImm(dtype=c, value=int(e.value)))

    def var(self, v):
        if dt.is_narrow(v.dtype):
            raise LoweringError(f"variable {v.name!r} has the narrow dtype {v.dtype}; "
                                "scalar variables of narrow dtypes are not supported",
                                node=v, hint=f"use {dt.compute_dtype(v.dtype)} for scalars")
        return v

    def _load(self, e):
        if not dt.is_narrow(e.dtype):
            return super()._load(e)
        return decode(e.dtype, self._bytes(e))

    def _bytes(self, load: E.BufferLoad) -> E.PrimExpr:
        """The storage bytes a load of a narrow buffer reads (through its uint8 view)."""
        return E.BufferLoad(dtype=dt.with_lanes("uint8", dt.lanes(load.dtype)),
                            buffer=self.buffer(load.buffer),
                            indices=tuple(self.expr(i) for i in load.indices))

    def _store(self, s):
        if not dt.is_narrow(s.buffer.dtype):
            return super()._store(s)
        value = s.value
        if type(value) is E.BufferLoad and value.dtype == s.buffer.dtype:
            raw = self._bytes(value)  # a copy: the byte as it is
        elif _is_e8m0_smallest(value):
            raw = _like(0, value, "uint8")  # its code; converting 2**-127 rounds up
        else:
            if type(value) is E.Cast and dt.is_narrow(value.dtype):
                value = value.value  # the encode rounds: no decode/encode round trip
            raw = encode(s.buffer.dtype, self.expr(value))
        return BufferStore(buffer=self.buffer(s.buffer), value=raw,
                           indices=tuple(self.expr(i) for i in s.indices))

    def stmt_Allocate(self, a: Allocate) -> Stmt:
        a2 = super().stmt_Allocate(a)
        if dt.is_narrow(a2.dtype):
            a2 = a2.replace(dtype=dt.with_lanes("uint8", dt.lanes(a2.dtype)))
        return a2

    # expressions of a narrow dtype compute in float32 / int32
    def _binary(self, e):
        if not dt.is_narrow(e.dtype):
            return super()._binary(e)
        a, b = self.expr(e.a), self.expr(e.b)
        out = type(e)(dtype=dt.compute_dtype(e.dtype), a=a, b=b)
        if type(e) in (E.Min, E.Max):
            return out
        return round_to(e.dtype, out)

    def _cast(self, e):
        src, dst = e.value.dtype, e.dtype
        if not dt.is_narrow(src) and not dt.is_narrow(dst):
            return super()._cast(e)
        v = self.expr(e.value)
        if src == dst:
            return v
        if dt.is_narrow(dst):
            return round_to(dst, v)
        return _cast(dst, v)

    def _select(self, e):
        if not dt.is_narrow(e.dtype):
            return super()._select(e)
        c, t, f = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)
        return E.Select(dtype=dt.compute_dtype(e.dtype), condition=c, true_value=t,
                        false_value=f)

    def _broadcast(self, e):
        if not dt.is_narrow(e.dtype):
            return super()._broadcast(e)
        v = self.expr(e.value)
        return E.Broadcast(dtype=dt.with_lanes(v.dtype, e.lanes), value=v, lanes=e.lanes)

    def _call(self, e):
        narrow_args = any(dt.is_narrow(a.dtype) for a in e.args)
        if not dt.is_narrow(e.dtype) and not narrow_args:
            return super()._call(e)
        if e.op == "reinterpret":
            (arg,) = e.args
            if dt.is_narrow(e.dtype):  # bits -> narrow value
                return decode(e.dtype, _cast("uint8", self.expr(arg)))
            byte = self._bytes(arg) if type(arg) is E.BufferLoad else \
                encode(arg.dtype, self.expr(arg))
            return _cast(e.dtype, byte)  # to int8/uint8: the same byte
        args = tuple(self.expr(a) for a in e.args)
        if not dt.is_narrow(e.dtype):  # isnan(x), ... on a narrow value
            return E.Call(dtype=e.dtype, op=e.op, args=args)
        out = E.Call(dtype=dt.compute_dtype(e.dtype), op=e.op, args=args)
        if e.op in ("if_then_else", "likely"):
            return out
        return round_to(e.dtype, out)

    def _let(self, e):
        if dt.is_narrow(e.var.dtype):
            raise LoweringError(f"let variable {e.var.name!r} has the narrow dtype "
                                f"{e.var.dtype}; not supported", node=e)
        return super()._let(e)


@dataclass(frozen=True)
class LowerNarrowDTypes(PrimFuncPass):
    """Compute on narrow storage dtypes in float32 / int32; keep their bytes in memory."""

    def transform_function(self, func: PrimFunc) -> PrimFunc:
        if not mentions_narrow(func):
            return func
        low = _Lower()
        body = low.stmt(func.body)
        for buf in func.buffer_map.values():
            twin = low.twins.get(id(buf))
            if twin is not None:
                body = DeclBuffer(buffer=twin, body=body)
        return func.with_body(body)


def mentions_narrow(func: PrimFunc) -> bool:
    """Whether any buffer, allocation or expression of ``func`` has a narrow dtype (a
    walk that stops at the first; most functions have none and are returned as is)."""
    if any(dt.is_narrow(b.dtype) for b in func.buffer_map.values()):
        return True
    stack = [func.body]
    while stack:
        x = stack.pop()
        if isinstance(x, (tuple, list)):
            stack.extend(x)
            continue
        if not isinstance(x, Node):
            continue
        if isinstance(x, Buffer):
            if dt.is_narrow(x.dtype):
                return True
            continue
        d = getattr(x, "dtype", None)
        if type(d) is str and d not in ("handle", "void") and dt.is_narrow(d):
            return True
        stack.extend(getattr(x, f) for f in node_fields(type(x)) if f != "span")
    return False

"""Expression translation of the LLVM code generator (a mixin of ``CodeGenLLVM``).

Conventions: signed integer arithmetic of index width (int32/int64) carries ``nsw`` (index
arithmetic does not overflow, which lets LLVM widen induction variables); 8/16-bit
integers wrap like numpy. Float ``a * b + c`` becomes ``llvm.fmuladd``. Fast-math flags
(``reassoc contract``) are set only while a reduction update is emitted (``self.fmf``);
there, float min/max use ``llvm.minimum``/``llvm.maximum`` (NaN-propagating, and
vectorizable as reductions); elsewhere they propagate NaN too, as ``select(c < x, c, x)``
against a constant ``c`` and the same intrinsics otherwise.
Under a vector ``if_then_else`` the chosen side is evaluated with a lane mask
(``self.mask``): its loads become masked loads/gathers, so disabled lanes never touch
memory.
"""

from __future__ import annotations

import numpy as np

from ..core import dtype as dt
from ..core.diagnostics import CodegenError
from ..tir import expr as E
from .llvm_builder import (
    Value,
    const_float,
    const_int,
    const_vector,
    elem_type,
    is_vector,
    lanes_of,
    vec,
)
from .llvm_common import (
    as_ramp,
    flat_index,
    is_half,
    known_multiple,
    mangle,
    pow2_alignment,
    storage_type,
    value_type,
)
from .llvm_intrin import emit_call

_INT_CMP = {"LT": "slt", "LE": "sle", "GT": "sgt", "GE": "sge", "EQ": "eq", "NE": "ne"}
_UINT_CMP = {"LT": "ult", "LE": "ule", "GT": "ugt", "GE": "uge", "EQ": "eq", "NE": "ne"}
# Ordered comparisons are false on NaN; NE is unordered (NaN != NaN), as in numpy.
_FLOAT_CMP = {"LT": "olt", "LE": "ole", "GT": "ogt", "GE": "oge", "EQ": "oeq", "NE": "une"}


def round_half_literal(value: float, dtype: str) -> float:
    """``value`` rounded to the precision of a 16-bit float dtype."""
    e = dt.element_of(dtype)
    if e == "float16":
        return float(np.float16(value))
    if e == "bfloat16":
        bits = int(np.array(value, dtype=np.float32).view(np.uint32))
        if value != value:
            return value
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000) & 0xFFFFFFFF
        return float(np.array(bits, dtype=np.uint32).view(np.float32))
    return value


class ExprCodegen:
    """Mixin: ``expr(e)`` returns the LLVM value of loop-IR expression ``e``."""

    _expr_handlers: dict[type, str] = {}

    def expr(self, e: E.PrimExpr) -> Value:
        """Emit ``e`` (dispatches to ``e_<ClassName>``) and return its value."""
        handler = self._expr_handlers.get(type(e))
        if handler is None:
            handler = self._find_handler(type(e))
        return getattr(self, handler)(e)

    @classmethod
    def _find_handler(cls, t: type) -> str:
        for klass in t.__mro__:
            name = f"e_{klass.__name__}"
            if hasattr(cls, name):
                cls._expr_handlers[t] = name
                return name
        raise CodegenError(f"the LLVM code generator cannot translate {t.__name__} "
                           "expressions")

    # -- leaves -----------------------------------------------------------------------
    def e_IntImm(self, e: E.IntImm) -> Value:
        return const_int(value_type(e.dtype), e.value)

    def e_FloatImm(self, e: E.FloatImm) -> Value:
        return const_float(value_type(e.dtype), round_half_literal(e.value, e.dtype))

    def e_StringImm(self, e: E.StringImm) -> Value:
        raise CodegenError(f"string {e.value!r} can only be the name argument of call_extern",
                           node=e)

    def e_Var(self, e: E.Var) -> Value:
        v = self.vars.get(id(e))
        if v is None:
            raise CodegenError(f"variable {e.name!r} is used but not defined in "
                               f"{self.func_name}", node=e,
                               hint="bind it with a loop, a let or a function parameter")
        return v

    def e_Reduce(self, e: E.Reduce) -> Value:
        raise CodegenError("te reductions must be lowered (irc.tir.transform) before code "
                           "generation", node=e)

    # -- arithmetic ---------------------------------------------------------------------
    def round16(self, v: Value, dtype: str) -> Value:
        """Round a float value of a 16-bit float dtype to that dtype's precision."""
        b = self.b
        e = dt.element_of(dtype)
        n = lanes_of(v.ty)
        if e == "float16":
            h = b.conv("fptrunc", v, vec("half", n))
            return b.conv("fpext", h, v.ty)
        if e == "bfloat16":
            ity = vec("i32", n)
            bits = b.conv("bitcast", v, ity)
            lsb = b.binop("and", b.binop("lshr", bits, const_int(ity, 16)), const_int(ity, 1))
            biased = b.binop("add", b.binop("add", bits, const_int(ity, 0x7FFF)), lsb)
            rounded = b.binop("and", biased, const_int(ity, 0xFFFF0000))
            quiet = b.binop("and", b.binop("or", bits, const_int(ity, 0x400000)),
                            const_int(ity, 0xFFFF0000))
            nan = b.fcmp("uno", v, v)
            return b.conv("bitcast", b.select(nan, quiet, rounded), v.ty)
        return v

    def _int_flags(self, dtype: str) -> str:
        d = dt.parse(dtype)
        return "nsw" if d.code == "int" and d.bits >= 32 else ""

    def _arith(self, e: E.BinaryOp, int_op: str, float_op: str) -> Value:
        if dt.is_float(e.dtype):
            a, b = self.expr(e.a), self.expr(e.b)
            r = self.b.binop(float_op, a, b, self.fmf)
            return self.round16(r, e.dtype) if is_half(e.dtype) else r
        if dt.is_handle(e.dtype):
            raise CodegenError("arithmetic on handles is not supported", node=e)
        a, b = self.expr(e.a), self.expr(e.b)
        if int_op in ("sdiv", "udiv", "srem", "urem"):
            return self._int_divide(int_op, a, b, e.b)
        flags = self._int_flags(e.dtype) if int_op in ("add", "sub", "mul") else ""
        return self.b.binop(int_op, a, b, flags)

    def _int_divide(self, op: str, x: Value, y: Value, divisor: E.PrimExpr) -> Value:
        """Integer ``op`` (sdiv/udiv/srem/urem). A divisor that may be zero is replaced
        by 1 and the result by 0 there (numpy's answer): x86 division by zero would
        kill the process with SIGFPE."""
        const = divisor.value if isinstance(divisor, E.IntImm) else (
            divisor.value.value if isinstance(divisor, E.Broadcast)
            and isinstance(divisor.value, E.IntImm) else None)
        if const is not None and const != 0:
            return self.b.binop(op, x, y)
        b = self.b
        is_zero = b.icmp("eq", y, const_int(y.ty, 0))
        safe = b.select(is_zero, const_int(y.ty, 1), y)
        return b.select(is_zero, const_int(x.ty, 0), b.binop(op, x, safe))

    def e_Add(self, e: E.Add) -> Value:
        if dt.is_float(e.dtype):
            for mul, other in ((e.a, e.b), (e.b, e.a)):
                if isinstance(mul, E.Mul) and mul.dtype == e.dtype:
                    return self._fmuladd(mul.a, mul.b, other, e.dtype)
        return self._arith(e, "add", "fadd")

    def _fmuladd(self, x: E.PrimExpr, y: E.PrimExpr, z: E.PrimExpr, dtype: str) -> Value:
        a, b, c = self.expr(x), self.expr(y), self.expr(z)
        if is_half(dtype):
            # Keep the product's rounding: 16-bit results round after each operation.
            p = self.round16(self.b.binop("fmul", a, b, self.fmf), dtype)
            return self.round16(self.b.binop("fadd", p, c, self.fmf), dtype)
        name = f"llvm.fmuladd.{mangle(a.ty)}"
        self.declare_intrinsic(name, a.ty, [a.ty] * 3)
        return self.b.call(a.ty, name, [a, b, c], self.fmf, "fma")

    def e_Sub(self, e: E.Sub) -> Value:
        return self._arith(e, "sub", "fsub")

    def e_Mul(self, e: E.Mul) -> Value:
        return self._arith(e, "mul", "fmul")

    def e_Div(self, e: E.Div) -> Value:
        if dt.is_float(e.dtype):
            return self._arith(e, "", "fdiv")
        return self._arith(e, "udiv" if dt.is_uint(e.dtype) else "sdiv", "")

    def e_Mod(self, e: E.Mod) -> Value:
        if dt.is_float(e.dtype):
            return self._arith(e, "", "frem")
        return self._arith(e, "urem" if dt.is_uint(e.dtype) else "srem", "")

    def _pow2_divisor(self, e: E.PrimExpr) -> int | None:
        c = e.value if isinstance(e, E.IntImm) else (
            e.value.value if isinstance(e, E.Broadcast) and isinstance(e.value, E.IntImm)
            else None)
        if c is not None and c > 0 and c & (c - 1) == 0:
            return c
        return None

    def e_FloorDiv(self, e: E.FloorDiv) -> Value:
        b = self.b
        if dt.is_float(e.dtype):
            q = self._arith(e, "", "fdiv")
            return self.unary_intrinsic("floor", q, e.dtype)
        if dt.is_uint(e.dtype) or dt.is_bool(e.dtype):
            return self._arith(e, "udiv", "")
        x = self.expr(e.a)
        c = self._pow2_divisor(e.b)
        if c is not None:
            return b.binop("ashr", x, const_int(x.ty, c.bit_length() - 1))
        y = self.expr(e.b)
        if self._positive_constant(e.b) and self.nonnegative(e.a):
            return b.binop("udiv", x, y)  # floor and truncation agree
        q = self._int_divide("sdiv", x, y, e.b)
        r = self._int_divide("srem", x, y, e.b)
        fix = self._floor_fix(x, y, r)
        return b.binop("sub", q, b.conv("zext", fix, x.ty))

    def e_FloorMod(self, e: E.FloorMod) -> Value:
        b = self.b
        if dt.is_float(e.dtype):
            x, y = self.expr(e.a), self.expr(e.b)
            q = self.unary_intrinsic("floor", b.binop("fdiv", x, y), e.dtype)
            r = b.binop("fsub", x, b.binop("fmul", q, y))
            return self.round16(r, e.dtype) if is_half(e.dtype) else r
        if dt.is_uint(e.dtype) or dt.is_bool(e.dtype):
            return self._arith(e, "urem", "")
        x = self.expr(e.a)
        c = self._pow2_divisor(e.b)
        if c is not None:
            return b.binop("and", x, const_int(x.ty, c - 1))
        y = self.expr(e.b)
        if self._positive_constant(e.b) and self.nonnegative(e.a):
            return b.binop("urem", x, y)
        r = self._int_divide("srem", x, y, e.b)
        fix = self._floor_fix(x, y, r)
        return b.binop("add", r, b.select(fix, y, const_int(x.ty, 0)))

    @staticmethod
    def _positive_constant(e: E.PrimExpr) -> bool:
        if isinstance(e, E.Broadcast):
            e = e.value
        return isinstance(e, E.IntImm) and e.value > 0

    def nonnegative(self, e: E.PrimExpr) -> bool:
        """True when the signed integer ``e`` is known to be >= 0: constants, loop
        variables of loops starting at a constant >= 0, and sums, products, minima,
        maxima, quotients and remainders of such values (index arithmetic does not
        overflow: it carries ``nsw``)."""
        t = type(e)
        if t is E.IntImm:
            return e.value >= 0
        if t is E.Var:
            return id(e) in self.nonneg
        if t in (E.Add, E.Mul, E.Min, E.Max, E.FloorDiv, E.FloorMod, E.Div, E.Mod):
            return self.nonnegative(e.a) and self.nonnegative(e.b)
        if t is E.Ramp:
            return self.nonnegative(e.base) and self.nonnegative(e.stride)
        if t is E.Broadcast:
            return self.nonnegative(e.value)
        if t is E.Cast:
            return (dt.is_int(e.value.dtype) and dt.bits(e.dtype) >= dt.bits(e.value.dtype)
                    and self.nonnegative(e.value))
        return False

    def _floor_fix(self, x: Value, y: Value, r: Value) -> Value:
        """True where truncating division must be corrected to floor division: the
        remainder is nonzero and its sign differs from the divisor's."""
        b = self.b
        zero = const_int(x.ty, 0)
        nonzero = b.icmp("ne", r, zero)
        signs = b.icmp("slt", b.binop("xor", r, y), zero)
        return b.binop("and", nonzero, signs)

    def e_Min(self, e: E.Min) -> Value:
        return self._minmax(e, "olt", "ult" if dt.is_uint(e.dtype) else "slt")

    def e_Max(self, e: E.Max) -> Value:
        return self._minmax(e, "ogt", "ugt" if dt.is_uint(e.dtype) else "sgt")

    def _minmax(self, e: E.BinaryOp, fpred: str, ipred: str) -> Value:
        a, b = self.expr(e.a), self.expr(e.b)
        if dt.is_float(e.dtype) and self.fmf:
            # A reduction update (max pooling, softmax): LLVM vectorizes reductions of the
            # NaN-propagating llvm.maximum/minimum, not of compare-and-select.
            name = f"llvm.{'minimum' if fpred == 'olt' else 'maximum'}.{mangle(a.ty)}"
            self.declare_intrinsic(name, a.ty, [a.ty, a.ty])
            return self.b.call(a.ty, name, [a, b], hint="mm")
        if dt.is_float(e.dtype):
            # Float min/max propagate NaN from either operand (numpy's minimum/maximum,
            # ONNX's Relu, Clip, Max). Against a constant that is not NaN,
            # select(c > x, c, x) does it in two instructions: a NaN x fails the ordered
            # compare and is kept. Otherwise the NaN-propagating LLVM intrinsic.
            if _plain_constant(e.b) or _plain_constant(e.a):
                c_val, x_val = (b, a) if _plain_constant(e.b) else (a, b)
                return self.b.select(self.b.fcmp(fpred, c_val, x_val), c_val, x_val)
            name = f"llvm.{'minimum' if fpred == 'olt' else 'maximum'}.{mangle(a.ty)}"
            self.declare_intrinsic(name, a.ty, [a.ty, a.ty])
            return self.b.call(a.ty, name, [a, b], hint="mm")
        else:
            c = self.b.icmp("u" + ipred[1:] if dt.is_bool(e.dtype) else ipred, a, b)
        return self.b.select(c, a, b)

    # -- comparisons and logic ------------------------------------------------------------
    def e_CmpOp(self, e: E.CmpOp) -> Value:
        a, b = self.expr(e.a), self.expr(e.b)
        kind = type(e).__name__
        src = e.a.dtype
        if dt.is_float(src):
            return self.b.fcmp(_FLOAT_CMP[kind], a, b)
        if dt.is_handle(src):
            return self.b.icmp(_UINT_CMP[kind], a, b)
        table = _UINT_CMP if dt.is_uint(src) or dt.is_bool(src) else _INT_CMP
        return self.b.icmp(table[kind], a, b)

    def e_And(self, e: E.And) -> Value:
        return self.b.binop("and", self.expr(e.a), self.expr(e.b))

    def e_Or(self, e: E.Or) -> Value:
        return self.b.binop("or", self.expr(e.a), self.expr(e.b))

    def e_Not(self, e: E.Not) -> Value:
        v = self.expr(e.a)
        return self.b.binop("xor", v, const_int(v.ty, 1))

    # -- conversions --------------------------------------------------------------------
    def e_Cast(self, e: E.Cast) -> Value:
        return self.cast_value(self.expr(e.value), e.value.dtype, e.dtype)

    def cast_value(self, v: Value, src: str, dst: str) -> Value:
        """Convert ``v`` of dtype ``src`` to dtype ``dst`` (same number of lanes, or a
        scalar broadcast to ``dst``'s lanes)."""
        b = self.b
        if dt.lanes(src) != dt.lanes(dst):
            if dt.lanes(src) != 1:
                raise CodegenError(f"cannot cast {src} to {dst}: lane counts differ")
            v = self.cast_value(v, src, dt.element_of(dst))
            return b.splat(v, dt.lanes(dst))
        s, d = dt.parse(src), dt.parse(dst)
        dty = value_type(dst)
        if src == dst:
            return v
        if s.code == "handle" or d.code == "handle":
            if s.code == d.code:
                return v
            return b.conv("ptrtoint" if s.code == "handle" else "inttoptr", v, dty)
        if d.code == "bool":
            if s.code in ("float", "bfloat"):
                return b.fcmp("une", v, const_float(v.ty, 0.0))
            return b.icmp("ne", v, const_int(v.ty, 0))
        if s.code == "bool":
            if d.code in ("float", "bfloat"):
                return b.conv("uitofp", v, dty)
            return b.conv("zext", v, dty)
        if s.code in ("int", "uint"):
            if d.code in ("int", "uint"):
                if s.bits == d.bits:
                    return v
                if s.bits > d.bits:
                    return b.conv("trunc", v, dty)
                return b.conv("sext" if s.code == "int" else "zext", v, dty)
            r = b.conv("sitofp" if s.code == "int" else "uitofp", v, dty)
            return self.round16(r, dst) if is_half(dst) else r
        # from a float
        if d.code in ("int", "uint"):
            return b.conv("fptosi" if d.code == "int" else "fptoui", v, dty)
        if dt.element_of(dst) == "float16" and elem_type(v.ty) == "double":
            # Round once, straight to half (not through float).
            h = b.conv("fptrunc", v, vec("half", lanes_of(v.ty)))
            return b.conv("fpext", h, dty)
        if v.ty != dty:
            v = b.conv("fpext" if elem_type(dty) == "double" else "fptrunc", v, dty)
        return self.round16(v, dst) if is_half(dst) else v

    def to_storage(self, v: Value, dtype: str) -> Value:
        """A value of ``dtype`` in its memory representation."""
        e = dt.element_of(dtype)
        st = storage_type(dtype)
        if e == "bool":
            return self.b.conv("zext", v, st)
        if e == "float16":
            return self.b.conv("fptrunc", v, st)
        if e == "bfloat16":
            n = lanes_of(v.ty)
            bits = self.b.conv("bitcast", v, vec("i32", n))
            return self.b.conv("trunc", self.b.binop("lshr", bits, const_int(bits.ty, 16)), st)
        return v

    def from_storage(self, v: Value, dtype: str) -> Value:
        """The register value of ``dtype`` from its memory representation."""
        e = dt.element_of(dtype)
        vt = value_type(dtype)
        if e == "bool":
            return self.b.icmp("ne", v, const_int(v.ty, 0))
        if e == "float16":
            return self.b.conv("fpext", v, vt)
        if e == "bfloat16":
            n = lanes_of(v.ty)
            wide = self.b.conv("zext", v, vec("i32", n))
            return self.b.conv("bitcast", self.b.binop("shl", wide, const_int(wide.ty, 16)), vt)
        return v

    # -- selection and binding ------------------------------------------------------------
    def e_Select(self, e: E.Select) -> Value:
        c = self.expr(e.condition)
        return self.b.select(c, self.expr(e.true_value), self.expr(e.false_value))

    def e_Let(self, e: E.Let) -> Value:
        self.bind(e.var, self.expr(e.value), e.value)
        try:
            return self.expr(e.body)
        finally:
            self.unbind(e.var)

    # -- vectors ------------------------------------------------------------------------
    def e_Ramp(self, e: E.Ramp) -> Value:
        base = self.expr(e.base)
        stride = E.as_int(e.stride)
        vt = vec(base.ty, e.lanes)
        if stride is not None:
            offsets = const_vector(vt, [str(i * stride) for i in range(e.lanes)])
        else:
            s = self.b.splat(self.expr(e.stride), e.lanes)
            offsets = self.b.binop("mul", s, const_vector(vt, [str(i) for i in range(e.lanes)]))
        if base.is_const_int:
            return self.b.binop("add", const_vector(vt, [str(base.int_value)] * e.lanes), offsets)
        return self.b.binop("add", self.b.splat(base, e.lanes), offsets,
                            self._int_flags(e.base.dtype))

    def e_Broadcast(self, e: E.Broadcast) -> Value:
        v = self.expr(e.value)
        if v.is_const_int:
            return const_int(vec(v.ty, e.lanes), v.int_value)
        if v.ty in ("i1",) and v.ref in ("true", "false"):
            return const_int(vec("i1", e.lanes), 1 if v.ref == "true" else 0)
        return self.b.splat(v, e.lanes)

    # -- memory -------------------------------------------------------------------------
    def _access(self, buffer, indices) -> tuple[Value, int, E.PrimExpr]:
        """(data pointer, its alignment, flat index) of an access to ``buffer``."""
        base = self.vars.get(id(buffer.data))
        if base is None:
            raise CodegenError(f"buffer {buffer.name!r} is used outside the scope of its "
                               f"data pointer {buffer.data.name!r} in {self.func_name}",
                               node=buffer)
        return base, self.ptr_align.get(id(buffer.data), dt.itemsize(buffer.dtype)), \
            flat_index(buffer, indices)

    def e_BufferLoad(self, e: E.BufferLoad) -> Value:
        buf = e.buffer
        base, buf_align, idx = self._access(buf, e.indices)
        st = storage_type(buf.dtype)
        item = dt.itemsize(buf.dtype)
        b = self.b
        if dt.lanes(idx.dtype) == 1:
            mult = known_multiple(idx, self.mult_env)
            p = b.gep(st, base, self.expr(idx))
            v = b.load(st, p, pow2_alignment(mult, item, buf_align))
            return self.from_storage(v, e.dtype)
        lanes = dt.lanes(idx.dtype)
        vst = vec(st, lanes)
        ramp = as_ramp(idx)
        if ramp is not None and E.as_int(ramp[1]) == 0:
            p = b.gep(st, base, self.expr(ramp[0]))
            align = pow2_alignment(known_multiple(ramp[0], self.mult_env), item, buf_align)
            v = b.splat(b.load(st, p, align), lanes)
            return self.from_storage(v, e.dtype)
        if ramp is not None and E.as_int(ramp[1]) == 1:
            p = b.gep(st, base, self.expr(ramp[0]))
            align = pow2_alignment(known_multiple(ramp[0], self.mult_env), item, buf_align)
            if self.mask is None:
                v = b.load(vst, p, align)
            else:
                name = f"llvm.masked.load.{mangle(vst)}.p0"
                self.declare_intrinsic(name, vst, ["ptr", "i32", self.mask.ty, vst])
                v = b.call(vst, name, [p, Value("i32", str(align)), self.mask,
                                       Value(vst, "poison")])
            return self.from_storage(v, e.dtype)
        ptrs = b.gep(st, base, self.expr(idx))
        mask = self.mask if self.mask is not None else const_int(vec("i1", lanes), 1)
        name = f"llvm.masked.gather.{mangle(vst)}.{mangle(ptrs.ty)}"
        self.declare_intrinsic(name, vst, [ptrs.ty, "i32", mask.ty, vst])
        v = b.call(vst, name, [ptrs, Value("i32", str(item)), mask, Value(vst, "poison")])
        return self.from_storage(v, e.dtype)

    def speculated_load(self, e: E.BufferLoad, cond: Value) -> Value | None:
        """``e`` loaded where the scalar ``cond`` holds and from the buffer's first
        element where it does not (an address that is always valid), with no branch:
        the caller selects the value it wants. None when that address is not known to be
        valid (a multi-dimensional or symbolically sized buffer, one smaller than the
        vector, a gather) or loads are masked already."""
        buf = e.buffer
        if self.mask is not None or len(e.indices) != 1 or len(buf.shape) != 1:
            return None
        size = E.as_int(buf.shape[0])
        base, buf_align, idx = self._access(buf, e.indices)
        lanes = dt.lanes(idx.dtype)
        if lanes == 1:
            start, stride = idx, 0
        else:
            ramp = as_ramp(idx)
            if ramp is None:
                return None
            start, stride = ramp[0], E.as_int(ramp[1])
        if stride not in (0, 1):
            return None
        span = lanes if stride == 1 else 1
        if size is None or size < span:
            return None
        st = storage_type(buf.dtype)
        item = dt.itemsize(buf.dtype)
        b = self.b
        # Alignment holds for both addresses: the first element is aligned as the buffer.
        align = pow2_alignment(known_multiple(start, self.mult_env), item, buf_align)
        at = self.expr(start)
        p = b.gep(st, base, b.select(cond, at, const_int(at.ty, 0)))
        if span == lanes:
            v = b.load(vec(st, lanes) if lanes > 1 else st, p, align)
        else:
            v = b.splat(b.load(st, p, align), lanes)
        return self.from_storage(v, e.dtype)

    def store(self, buffer, indices, value: Value, value_dtype: str) -> None:
        """Store ``value`` to ``buffer[indices]`` (vector store or scatter for vector
        indices)."""
        base, buf_align, idx = self._access(buffer, indices)
        st = storage_type(buffer.dtype)
        item = dt.itemsize(buffer.dtype)
        b = self.b
        lanes = dt.lanes(idx.dtype)
        if lanes > 1 and not is_vector(value.ty):
            value = b.splat(value, lanes)
            value_dtype = dt.with_lanes(value_dtype, lanes)
        sv = self.to_storage(value, value_dtype)
        if lanes == 1:
            mult = known_multiple(idx, self.mult_env)
            p = b.gep(st, base, self.expr(idx))
            b.store(sv, p, pow2_alignment(mult, item, buf_align))
            return
        ramp = as_ramp(idx)
        if ramp is not None and E.as_int(ramp[1]) == 1:
            p = b.gep(st, base, self.expr(ramp[0]))
            align = pow2_alignment(known_multiple(ramp[0], self.mult_env), item, buf_align)
            b.store(sv, p, align)
            return
        ptrs = b.gep(st, base, self.expr(idx))
        name = f"llvm.masked.scatter.{mangle(sv.ty)}.{mangle(ptrs.ty)}"
        mask = const_int(vec("i1", lanes), 1)
        self.declare_intrinsic(name, "void", [sv.ty, ptrs.ty, "i32", mask.ty])
        b.call("void", name, [sv, ptrs, Value("i32", str(item)), mask])

    def e_Call(self, e: E.Call) -> Value:
        return emit_call(self, e)


def _plain_constant(e: E.PrimExpr) -> bool:
    """A float constant (or a broadcast of one) that is not NaN."""
    if isinstance(e, E.Broadcast):
        e = e.value
    return isinstance(e, E.FloatImm) and not np.isnan(e.value)

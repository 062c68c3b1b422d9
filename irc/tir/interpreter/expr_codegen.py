"""Expressions of the interpreter's Python code: values, integer wrapping, memory access.

See ``codegen.py`` for the value model. :class:`ExprCompiler` turns one PrimExpr into a
Python expression string (:class:`CE`) and keeps the bookkeeping both expressions and
statements need: variable names, constants, integer bounds and buffer layouts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core import dtype as dt
from ..buffer import Buffer
from ..expr import BufferLoad, Call, IntImm, PrimExpr, Var
from ..stmt import PrimFunc
from .runtime import InterpreterError, bf16_round, storage_dtype

# Python allows 20 nested loops per function; deeper nests continue in a nested function.
MAX_LOOP_NESTING = 15
# Python's parser limits nesting of parentheses; deeper subexpressions go to temporaries.
_MAX_EXPR_DEPTH = 60

_NP_FLOAT = {"float16": "_np.float16", "float32": "_np.float32", "float64": "_np.float64",
             "bfloat16": "_np.float32"}
_UFUNCS = {
    "exp": "_np.exp", "exp2": "_np.exp2", "log": "_np.log", "log2": "_np.log2",
    "log10": "_np.log10", "log1p": "_np.log1p", "expm1": "_np.expm1", "sqrt": "_np.sqrt",
    "sin": "_np.sin", "cos": "_np.cos", "tan": "_np.tan", "asin": "_np.arcsin",
    "acos": "_np.arccos", "atan": "_np.arctan", "sinh": "_np.sinh", "cosh": "_np.cosh",
    "tanh": "_np.tanh", "asinh": "_np.arcsinh", "acosh": "_np.arccosh",
    "atanh": "_np.arctanh", "fabs": "_np.abs", "floor": "_np.floor", "ceil": "_np.ceil",
    "round": "_np.rint", "nearbyint": "_np.rint", "trunc": "_np.trunc",
    "isnan": "_np.isnan", "isinf": "_np.isinf", "isfinite": "_np.isfinite",
    "pow": "_np.power", "fmod": "_np.fmod", "atan2": "_np.arctan2", "hypot": "_np.hypot",
    "copysign": "_np.copysign", "erf": "_erf", "sigmoid": "_sigmoid", "rsqrt": "_rsqrt",
    "exp10": "_exp10",
}
_INFIX = {"Add": "+", "Sub": "-", "Mul": "*", "EQ": "==", "NE": "!=", "LT": "<", "LE": "<=",
          "GT": ">", "GE": ">="}


@dataclass
class CE:
    """A compiled expression: Python ``code`` of ``dtype``; for scalar integers ``lo``/``hi``
    bound the value the code computes (None: unknown, must be wrapped before use)."""

    code: str
    dtype: str
    lo: int | None = None
    hi: int | None = None
    depth: int = 1


def _is_int_scalar(dtype: str) -> bool:
    p = dt.parse(dtype)
    return p.code in ("int", "uint") and p.lanes == 1


def _is_vector(dtype: str) -> bool:
    return dt.lanes(dtype) > 1


def _sanitize(name: str) -> str:
    s = re.sub(r"\W", "_", name)[:24]
    return s or "v"


def int_code(value: int) -> str:
    return str(value) if value >= 0 else f"({value})"


class ExprCompiler:
    """Compiles expressions of one PrimFunc to Python code (see ``codegen.py``)."""

    def __init__(self, func: PrimFunc, name: str = "kernel"):
        self.func = func
        self.name = name
        self.func_name = str(func.attrs.get("global_symbol", "main"))
        self.kernel_count = 0
        self.lines: list[str] = []
        self.indent = 1
        self.counter = 0
        self.consts: list[Any] = []
        self.const_keys: dict[Any, str] = {}
        self.names: dict[int, tuple[str, int | None, int | None]] = {}
        self.mem_dtype: dict[int, str] = {}
        self.layout_override: dict[int, tuple[list[CE], CE]] = {}
        self.free_vars: list[tuple[Var, str]] = []
        self.pre: list[str] = []
        self.hoist_ok = True
        self.loop_depth = 0
        # Inside a GPU kernel: the kernel being generated (see codegen.py), else None.
        self.kernel: Any = None
        # Python name of each memory -> (storage scope, name for messages).
        self.memories: dict[str, tuple[str, str]] = {}

    # -- bookkeeping --------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def flush(self) -> None:
        for line in self.pre:
            self.emit(line)
        self.pre = []

    def const(self, key: Any, value: Any) -> str:
        name = self.const_keys.get(key)
        if name is None:
            name = f"_k{len(self.consts)}"
            self.consts.append(value)
            self.const_keys[key] = name
        return name

    def np_dtype(self, dtype: str) -> str:
        return self.const(("dtype", dtype), storage_dtype(dt.element_of(dtype)))

    def define(self, v: Var, lo: int | None = None, hi: int | None = None,
               name: str | None = None) -> str:
        if name is None:
            name = self.fresh("v") + "_" + _sanitize(v.name)
        if _is_int_scalar(v.dtype) and (lo is None or hi is None):
            lo, hi = dt.min_value(v.dtype), dt.max_value(v.dtype)
        self.names[id(v)] = (name, lo, hi)
        return name

    def undefine(self, v: Var) -> None:
        self.names.pop(id(v), None)

    def lookup(self, v: Var) -> tuple[str, int | None, int | None]:
        info = self.names.get(id(v))
        if info is None:
            name = self.fresh("f") + "_" + _sanitize(v.name)
            self.define(v, name=name)
            self.free_vars.append((v, name))
            info = self.names[id(v)]
        return info

    # -- integers ---------------------------------------------------------------------
    def canon(self, c: CE) -> CE:
        """``c`` with its value inside its integer dtype (wrapping when it may overflow)."""
        if not _is_int_scalar(c.dtype):
            return c
        lo, hi = dt.min_value(c.dtype), dt.max_value(c.dtype)
        if c.lo is not None and c.hi is not None and lo <= c.lo and c.hi <= hi:
            return c
        bits = dt.bits(c.dtype)
        mask = (1 << bits) - 1
        if dt.is_uint(c.dtype):
            code = f"({c.code} & {mask})"
        else:
            half = 1 << (bits - 1)
            code = f"((({c.code}) + {half} & {mask}) - {half})"
        return CE(code, c.dtype, lo, hi, c.depth + 1)

    # -- expressions ------------------------------------------------------------------
    def expr(self, e: PrimExpr) -> CE:
        handler = getattr(self, "e_" + type(e).__name__, None)
        if handler is None:
            raise InterpreterError(f"the interpreter cannot evaluate {type(e).__name__} "
                                   "expressions", node=e)
        c = handler(e)
        if c.depth > _MAX_EXPR_DEPTH and self.hoist_ok:
            name = self.fresh("_h")
            self.pre.append(f"{name} = {c.code}")
            c = CE(name, c.dtype, c.lo, c.hi, 1)
        return c

    def cexpr(self, e: PrimExpr) -> CE:
        return self.canon(self.expr(e))

    def e_IntImm(self, n: IntImm) -> CE:
        if n.dtype == "bool":
            return CE("True" if n.value else "False", "bool")
        return CE(int_code(n.value), n.dtype, n.value, n.value)

    def e_FloatImm(self, n: Any) -> CE:
        if n.dtype == "bfloat16":
            value = bf16_round(n.value)
        else:
            value = np.dtype(n.dtype).type(n.value)
        key = ("f", n.dtype, repr(float(n.value)))
        return CE(self.const(key, value), n.dtype)

    def e_StringImm(self, n: Any) -> CE:
        return CE(repr(n.value), "handle")

    def e_Var(self, v: Var) -> CE:
        name, lo, hi = self.lookup(v)
        return CE(name, v.dtype, lo, hi)

    def _ring(self, n: Any, op: str) -> CE:
        a, b = self.expr(n.a), self.expr(n.b)
        depth = max(a.depth, b.depth) + 1
        code = f"({a.code} {op} {b.code})"
        if not _is_int_scalar(n.dtype):
            return CE(code, n.dtype, depth=depth)
        if None in (a.lo, a.hi, b.lo, b.hi):
            return CE(code, n.dtype, None, None, depth)
        if op == "+":
            lo, hi = a.lo + b.lo, a.hi + b.hi
        elif op == "-":
            lo, hi = a.lo - b.hi, a.hi - b.lo
        else:
            products = (a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi)
            lo, hi = min(products), max(products)
        return CE(code, n.dtype, lo, hi, depth)

    def e_Add(self, n: Any) -> CE:
        return self._ring(n, "+")

    def e_Sub(self, n: Any) -> CE:
        return self._ring(n, "-")

    def e_Mul(self, n: Any) -> CE:
        return self._ring(n, "*")

    def _operands(self, n: Any) -> tuple[CE, CE, int]:
        a, b = self.cexpr(n.a), self.cexpr(n.b)
        return a, b, max(a.depth, b.depth) + 1

    def e_Div(self, n: Any) -> CE:
        a, b, depth = self._operands(n)
        if dt.is_float(n.dtype):
            return CE(f"({a.code} / {b.code})", n.dtype, depth=depth)
        if _is_vector(n.dtype):
            return CE(f"_vtdiv({a.code}, {b.code})", n.dtype, depth=depth)
        return CE(f"_tdiv({a.code}, {b.code})", n.dtype, None, None, depth)

    def e_Mod(self, n: Any) -> CE:
        a, b, depth = self._operands(n)
        if dt.is_float(n.dtype):
            return CE(f"_np.fmod({a.code}, {b.code})", n.dtype, depth=depth)
        if _is_vector(n.dtype):
            return CE(f"_vtmod({a.code}, {b.code})", n.dtype, depth=depth)
        lo, hi = dt.min_value(n.dtype), dt.max_value(n.dtype)
        return CE(f"_tmod({a.code}, {b.code})", n.dtype, lo, hi, depth)

    def e_FloorDiv(self, n: Any) -> CE:
        a, b, depth = self._operands(n)
        if dt.is_float(n.dtype):
            return CE(f"_ffloordiv({a.code}, {b.code})", n.dtype, depth=depth)
        if _is_vector(n.dtype):
            return CE(f"_vfloordiv({a.code}, {b.code})", n.dtype, depth=depth)
        lo = hi = None
        if b.lo is not None and b.lo == b.hi and b.lo > 0:
            lo, hi = a.lo // b.lo, a.hi // b.lo
        return CE(f"({a.code} // {b.code})", n.dtype, lo, hi, depth)

    def e_FloorMod(self, n: Any) -> CE:
        a, b, depth = self._operands(n)
        if dt.is_float(n.dtype):
            return CE(f"_ffloormod({a.code}, {b.code})", n.dtype, depth=depth)
        if _is_vector(n.dtype):
            return CE(f"_vfloormod({a.code}, {b.code})", n.dtype, depth=depth)
        lo, hi = dt.min_value(n.dtype), dt.max_value(n.dtype)
        if b.lo is not None and b.lo == b.hi and b.lo > 0:
            if a.lo // b.lo == a.hi // b.lo:
                lo, hi = a.lo % b.lo, a.hi % b.lo
            else:
                lo, hi = 0, b.lo - 1
        return CE(f"({a.code} % {b.code})", n.dtype, lo, hi, depth)

    def _minmax(self, n: Any, cmp: str) -> CE:
        a, b, depth = self._operands(n)
        is_float = dt.is_float(n.dtype)
        if _is_vector(n.dtype):
            if is_float:
                # NaN from either operand propagates (numpy's minimum/maximum).
                fn = "_np.minimum" if cmp == "<" else "_np.maximum"
                return CE(f"{fn}({a.code}, {b.code})", n.dtype, depth=depth)
            return CE(f"_np.where({a.code} {cmp} {b.code}, {a.code}, {b.code})", n.dtype,
                      depth=depth)
        ta, tb = self.fresh("_t"), self.fresh("_t")
        # A float NaN (x != x) in the first operand is kept; one in the second fails the
        # compare and is taken.
        nan = f" or {ta} != {ta}" if is_float else ""
        code = f"({ta} if ({ta} := {a.code}) {cmp} ({tb} := {b.code}){nan} else {tb})"
        lo = hi = None
        if _is_int_scalar(n.dtype):
            pick = min if cmp == "<" else max
            lo, hi = pick(a.lo, b.lo), pick(a.hi, b.hi)
        return CE(code, n.dtype, lo, hi, depth + 1)

    def e_Min(self, n: Any) -> CE:
        return self._minmax(n, "<")

    def e_Max(self, n: Any) -> CE:
        return self._minmax(n, ">")

    def _compare(self, n: Any) -> CE:
        a, b, depth = self._operands(n)
        return CE(f"({a.code} {_INFIX[type(n).__name__]} {b.code})", n.dtype, depth=depth)

    e_EQ = e_NE = e_LT = e_LE = e_GT = e_GE = _compare

    def e_And(self, n: Any) -> CE:
        a, b, depth = self._operands(n)
        return CE(f"({a.code} & {b.code})", n.dtype, depth=depth)

    def e_Or(self, n: Any) -> CE:
        a, b, depth = self._operands(n)
        return CE(f"({a.code} | {b.code})", n.dtype, depth=depth)

    def e_Not(self, n: Any) -> CE:
        a = self.expr(n.a)
        if _is_vector(n.dtype):
            return CE(f"(~{a.code})", n.dtype, depth=a.depth + 1)
        return CE(f"(not {a.code})", n.dtype, depth=a.depth + 1)

    def e_Select(self, n: Any) -> CE:
        c = self.expr(n.condition)
        t, f = self.cexpr(n.true_value), self.cexpr(n.false_value)
        depth = max(c.depth, t.depth, f.depth) + 2
        if _is_vector(n.dtype) or _is_vector(c.dtype):
            return CE(f"_np.where({c.code}, {t.code}, {f.code})", n.dtype, depth=depth)
        tt, tf = self.fresh("_t"), self.fresh("_t")
        code = f"({tt} if (({tt} := {t.code}), ({tf} := {f.code}), {c.code})[2] else {tf})"
        lo = hi = None
        if _is_int_scalar(n.dtype):
            lo, hi = min(t.lo, f.lo), max(t.hi, f.hi)
        return CE(code, n.dtype, lo, hi, depth)

    def e_Cast(self, n: Any) -> CE:
        src = self.expr(n.value)
        to, frm = n.dtype, n.value.dtype
        depth = src.depth + 1
        if _is_vector(to):
            if dt.element_of(to) == "bfloat16":
                return CE(f"_bf16({src.code})", to, depth=depth)
            return CE(f"_np.asarray({src.code}).astype({self.np_dtype(to)})", to, depth=depth)
        if dt.is_bool(to):
            return CE(f"({self.canon(src).code} != 0)", to, depth=depth)
        if dt.is_integer(to):
            if dt.is_float(frm):
                code = f"_f2i({src.code}, {dt.bits(to)}, {dt.is_int(to)})"
                return CE(code, to, dt.min_value(to), dt.max_value(to), depth)
            if dt.is_bool(frm):
                return CE(f"int({src.code})", to, 0, 1, depth)
            c = self.canon(src)
            return self.canon(CE(c.code, to, c.lo, c.hi, c.depth))
        if to == "bfloat16":
            return CE(f"_bf16({self.canon(src).code})", to, depth=depth)
        return CE(f"{_NP_FLOAT[to]}({self.canon(src).code})", to, depth=depth)

    def e_Let(self, n: Any) -> CE:
        value = self.cexpr(n.value)
        name = self.define(n.var, value.lo, value.hi)
        saved, self.hoist_ok = self.hoist_ok, False
        body = self.expr(n.body)
        self.hoist_ok = saved
        self.undefine(n.var)
        code = f"(({name} := {value.code}), {body.code})[1]"
        return CE(code, n.dtype, body.lo, body.hi, max(value.depth, body.depth) + 2)

    def e_Ramp(self, n: Any) -> CE:
        base, stride = self.cexpr(n.base), self.cexpr(n.stride)
        code = f"_ramp({base.code}, {stride.code}, {n.lanes}, {self.np_dtype(n.dtype)})"
        return CE(code, n.dtype, depth=max(base.depth, stride.depth) + 1)

    def e_Broadcast(self, n: Any) -> CE:
        v = self.cexpr(n.value)
        code = f"_bcast({v.code}, {n.lanes}, {self.np_dtype(n.dtype)})"
        return CE(code, n.dtype, depth=v.depth + 1)

    def e_Reduce(self, n: Any) -> CE:
        raise InterpreterError("a te reduction (Reduce) cannot appear in a PrimFunc; build "
                               "the function with te.create_prim_func", node=n)

    def e_Call(self, n: Call) -> CE:
        op = n.op
        if op == "if_then_else":
            c = self.expr(n.args[0])
            saved, self.hoist_ok = self.hoist_ok, False
            t, f = self.cexpr(n.args[1]), self.cexpr(n.args[2])
            self.hoist_ok = saved
            depth = max(c.depth, t.depth, f.depth) + 1
            if _is_vector(n.dtype):
                return CE(f"_np.where({c.code}, {t.code}, {f.code})", n.dtype, depth=depth)
            lo = hi = None
            if _is_int_scalar(n.dtype):
                lo, hi = min(t.lo, f.lo), max(t.hi, f.hi)
            return CE(f"({t.code} if {c.code} else {f.code})", n.dtype, lo, hi, depth)
        args = [self.cexpr(a) for a in n.args]
        depth = max((a.depth for a in args), default=0) + 1
        codes = [a.code for a in args]
        if op == "likely":
            return CE(codes[0], n.dtype, depth=depth)
        if op in _UFUNCS:
            return CE(f"{_UFUNCS[op]}({', '.join(codes)})", n.dtype, depth=depth)
        ints = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^",
                "shift_right": ">>", "shift_left": "<<"}
        if op in ints:
            code = f"({codes[0]} {ints[op]} {codes[1]})"
            if op == "shift_left" and not _is_vector(n.dtype):
                return self.canon(CE(code, n.dtype, None, None, depth))
            lo, hi = (dt.min_value(n.dtype), dt.max_value(n.dtype)) if not _is_vector(
                n.dtype) else (None, None)
            return CE(code, n.dtype, lo, hi, depth)
        if op == "bitwise_not":
            return self.canon(CE(f"(~{codes[0]})", n.dtype, None, None, depth))
        if op == "popcount":
            return CE(f"_popcount({codes[0]}, {dt.bits(n.dtype)})", n.dtype, 0,
                      dt.bits(n.dtype), depth)
        if op == "reinterpret":
            src = n.args[0].dtype
            code = f"_reinterpret({codes[0]}, {src!r}, {n.dtype!r})"
            if _is_int_scalar(n.dtype):
                return CE(code, n.dtype, dt.min_value(n.dtype), dt.max_value(n.dtype), depth)
            return CE(code, n.dtype, depth=depth)
        if op == "tvm_storage_sync":
            return CE("None", n.dtype, 0, 0, depth)
        if op == "error_values":
            return CE(f"_error_values({', '.join(codes)})", n.dtype, 0, 0, depth)
        raise InterpreterError(f"the interpreter does not support the intrinsic {op!r}",
                               node=n)

    # -- memory ---------------------------------------------------------------------
    def layout(self, buf: Buffer) -> tuple[str, list[CE], list[CE], CE | None]:
        mem = self.lookup(buf.data)[0]
        shape = [self.cexpr(s) for s in buf.shape]
        override = self.layout_override.get(id(buf))
        if override is not None:
            return mem, shape, override[0], override[1]
        if buf.strides:
            strides = [self.cexpr(s) for s in buf.strides]
        else:
            strides = []
            acc: CE = CE("1", "int64", 1, 1)
            for s in reversed(shape):
                strides.append(acc)
                if acc.lo == acc.hi == 1:
                    acc = s
                elif s.lo is not None and s.lo == s.hi and acc.lo == acc.hi:
                    acc = CE(int_code(acc.lo * s.lo), "int64", acc.lo * s.lo, acc.lo * s.lo)
                else:
                    acc = CE(f"({acc.code} * {s.code})", "int64", None, None)
            strides.reverse()
        offset = None if buf.elem_offset is None else self.cexpr(buf.elem_offset)
        if offset is not None and offset.lo == offset.hi == 0:
            offset = None
        return mem, shape, strides, offset

    def _mem_ref(self, buf: Buffer, mem: str) -> str:
        have = self.mem_dtype.get(id(buf.data))
        if have is not None and storage_dtype(have) != storage_dtype(dt.element_of(buf.dtype)):
            return f"{mem}.view({self.np_dtype(buf.dtype)})"
        return mem

    def address(self, buf: Buffer, indices: tuple[PrimExpr, ...]) -> tuple[str, bool, int]:
        """Python code of the flat offset of ``buf[indices]``, whether it is a vector of
        offsets, and the nesting depth."""
        if len(indices) != buf.ndim:
            raise InterpreterError(f"buffer {buf.name} has {buf.ndim} dimensions but is "
                                   f"accessed with {len(indices)} indices", node=buf)
        if dt.lanes(buf.dtype) > 1:
            raise InterpreterError(f"buffer {buf.name}: vector-typed buffers are not "
                                   "supported by the interpreter", node=buf)
        idx = [self.cexpr(i) for i in indices]
        mem, shape, strides, offset = self.layout(buf)
        depth = max([c.depth for c in idx] + [1]) + 2
        if any(_is_vector(c.dtype) for c in idx):
            args = ", ".join(c.code for c in idx)
            code = (f"_vflat({buf.name!r}, ({''.join(s.code + ', ' for s in shape)}), "
                    f"({''.join(s.code + ', ' for s in strides)}), "
                    f"{offset.code if offset is not None else 0}, {args})")
            return code, True, depth
        terms, conds = [], []
        for c, s, st in zip(idx, shape, strides):
            known = s.lo is not None and s.lo == s.hi
            if known and c.lo is not None and c.lo >= 0 and c.hi < s.lo:
                ref = c.code
            else:
                ref = self.fresh("_i")
                conds.append(f"0 <= ({ref} := {c.code}) < {s.code}")
            if st.lo == st.hi == 1:
                terms.append(ref)
            elif not (st.lo == st.hi == 0):
                terms.append(f"{ref} * {st.code}")
        if offset is not None:
            terms.append(offset.code)
        flat = " + ".join(terms) or "0"
        if conds:
            shape_code = "(" + "".join(s.code + ", " for s in shape) + ")"
            idx_code = "(" + "".join(c.code + ", " for c in idx) + ")"
            flat = (f"({flat} if {' and '.join(conds)} else "
                    f"_oob({buf.name!r}, {shape_code}, {idx_code}))")
        return flat, False, depth

    def tracked(self, buf: Buffer, flat: str, vector: bool, write: bool) -> str:
        """``flat`` (the offset of an access to ``buf``), routed through the race
        detection of its memory where the access is in a kernel and the memory is shared
        or global (see ``simt.py``)."""
        kernel = self.kernel
        if kernel is None:
            return flat
        mem = self.lookup(buf.data)[0]
        if self._mem_ref(buf, mem) != mem:
            return flat  # a reinterpreting view: element offsets of another size
        scope, name = self.memories.get(mem, ("global", buf.name))
        if scope == "local":
            return flat
        if scope == "global":
            if not write and kernel.written is not None and mem not in kernel.written:
                return flat  # no thread of the kernel writes it: reads cannot race
            kernel.shadows.setdefault(mem, name)
        shadow = f"{mem}_sh"
        method = ("vwr" if vector else "wr") if write else ("vrd" if vector else "rd")
        return f"{shadow}.{method}({flat}, {kernel.gid})"

    def e_BufferLoad(self, n: BufferLoad) -> CE:
        buf = n.buffer
        flat, vector, depth = self.address(buf, n.indices)
        flat = self.tracked(buf, flat, vector, False)
        mem = self._mem_ref(buf, self.lookup(buf.data)[0])
        elem = dt.element_of(buf.dtype)
        if elem == "bfloat16":
            return CE(f"_bf16_from_bits({mem}[{flat}])", n.dtype, depth=depth)
        if vector:
            return CE(f"{mem}[{flat}]", n.dtype, depth=depth)
        if dt.is_integer(elem) or dt.is_bool(elem):
            lo = hi = None
            if dt.is_integer(elem):
                lo, hi = dt.min_value(elem), dt.max_value(elem)
            return CE(f"{mem}.item({flat})", n.dtype, lo, hi, depth)
        return CE(f"{mem}[{flat}]", n.dtype, depth=depth)

"""Evaluation of loop-IR expressions (``T.`` dialect) from syntax.

The evaluator builds loop-IR nodes *exactly* as written: ``1 + 2`` is an ``Add`` of two
immediates (no constant folding), so that printing and parsing are inverse. Python
literals stay Python values until an operation gives them a dtype: next to an
expression they adopt its dtype, alone they become ``int32`` (``int64`` inside graph-level
shapes, see ``int_default``) or ``float32``.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from ..core import dtype as dt
from ..core.diagnostics import IRTypeError
from ..core.structural import structural_equal
from ..tir import expr as E
from ..tir.buffer import Buffer
from ..tir.intrin import INTRINSICS, infer_dtype
from . import syntax as syn
from .context import (
    NAMESPACES,
    DTypeMarker,
    Namespace,
    Scopes,
    TypeVarDecl,
    bind_args,
    describe,
    expect_dtype,
    expect_int,
    located,
    parse_error,
    type_error,
)


class BufferMethod:
    """``A.view`` before it is called (only valid as a buffer declaration)."""

    __slots__ = ("buffer", "name")

    def __init__(self, buffer: Buffer, name: str):
        self.buffer, self.name = buffer, name


_ARITH = {"+": E.Add, "-": E.Sub, "*": E.Mul, "/": E.Div, "//": E.FloorDiv,
          "%": E.FloorMod}
_CMP = {"<": E.LT, "<=": E.LE, ">": E.GT, ">=": E.GE, "==": E.EQ, "!=": E.NE}

#: Names under ``T.`` that are statements or declarations, handled by the statement
#: builder; in an expression they are an error with a pointer to their use.
STATEMENT_BUILTINS = frozenset({
    "Buffer", "match_buffer", "alloc_buffer", "sblock_alloc_buffer", "decl_buffer",
    "allocate", "grid", "serial", "parallel", "vectorized", "unroll", "thread_binding",
    "block", "sblock", "init", "reads", "writes", "where", "block_attr", "sblock_attr",
    "func_attr", "axis", "axis.spatial", "axis.reduce", "axis.remap", "axis.opaque",
    "axis.scan", "axis.S", "axis.R", "attr", "evaluate", "prim_func", "handle", "let",
    "LetStmt", "Assert",
})


def is_dtype_name(name: str) -> bool:
    """Whether ``T.<name>`` is a dtype (``float32``, ``int64``, ``handle``, ...)."""
    if name in ("handle", "void"):
        return True
    try:
        dt.parse(name)
    except IRTypeError:
        return False
    return True


# ---------------------------------------------------------------------------------
# dtype unification (no folding)
# ---------------------------------------------------------------------------------


def _promote(a: str, b: str, node: Any) -> str:
    da, db = dt.parse(a), dt.parse(b)
    if da.lanes != db.lanes and min(da.lanes, db.lanes) != 1:
        raise type_error(f"cannot combine vectors of dtypes {a} and {b}", node)
    lanes = max(da.lanes, db.lanes)
    sa, sb = dt.element_of(a), dt.element_of(b)
    if "handle" in (sa, sb):
        raise type_error(f"cannot combine values of dtypes {a} and {b}", node)
    if sa == sb:
        return dt.with_lanes(sa, lanes)
    fa, fb = dt.is_float(sa), dt.is_float(sb)
    if fa and fb:
        res = sa if da.bits >= db.bits else sb
    elif fa or fb:
        res = sa if fa else sb
    elif da.code == "bool":
        res = sb
    elif db.code == "bool":
        res = sa
    else:
        code = "uint" if da.code == db.code == "uint" else "int"
        res = f"{code}{max(da.bits, db.bits)}"
    return dt.with_lanes(res, lanes)


def _coerce(e: E.PrimExpr, dtype: str) -> E.PrimExpr:
    if e.dtype == dtype:
        return e
    lanes = dt.lanes(dtype)
    if lanes != dt.lanes(e.dtype):
        scalar = _coerce(e, dt.element_of(dtype))
        return E.Broadcast(dtype=dtype, value=scalar, lanes=lanes)
    if isinstance(e, E.IntImm) and not dt.is_float(dtype) and \
            dt.min_value(dtype) <= e.value <= dt.max_value(dtype):
        return E.IntImm(dtype=dtype, value=e.value)
    if isinstance(e, (E.IntImm, E.FloatImm)) and dt.is_float(dtype):
        return E.FloatImm(dtype=dtype, value=float(e.value))
    return E.Cast(dtype=dtype, value=e)


class ExprEvaluator:
    """Evaluates syntax into loop-IR values within ``scopes``.

    ``int_default`` is the dtype of a lone integer literal (``int32`` in loop IR,
    ``int64`` in graph-level shapes).
    """

    def __init__(self, scopes: Scopes, int_default: str = "int32"):
        self.scopes = scopes
        self.int_default = int_default

    # -- literals ------------------------------------------------------------------
    def literal(self, value: Any, node: Any, dtype: str | None = None) -> E.PrimExpr:
        """A Python literal as an immediate (of ``dtype`` when given)."""
        with located(node):
            if isinstance(value, bool):
                if dtype is not None and not dt.is_bool(dtype):
                    return E.const(int(value), dtype)
                return E.IntImm(dtype="bool", value=int(value))
            if isinstance(value, int):
                if dtype is None or dt.is_handle(dtype):
                    dtype = self.int_default
                    if not (dt.min_value(dtype) <= value <= dt.max_value(dtype)):
                        dtype = "int64"
                return E.const(value, dtype)
            if isinstance(value, float):
                if dtype is None or not dt.is_float(dtype):
                    dtype = "float32"
                return E.const(value, dtype)
            if isinstance(value, str):
                return E.StringImm(value=value)
        raise parse_error(f"expected a loop-IR expression, got {describe(value)}", node)

    def prim(self, value: Any, node: Any, dtype: str | None = None) -> E.PrimExpr:
        """``value`` as a PrimExpr (literals get ``dtype`` or the default)."""
        if isinstance(value, E.PrimExpr):
            return value
        if isinstance(value, (bool, int, float, str)):
            return self.literal(value, node, dtype)
        if isinstance(value, Buffer):
            raise parse_error(f"buffer '{value.name}' used as a value; index it, e.g. "
                              f"{value.name}[i]", node)
        raise parse_error(f"expected a loop-IR expression, got {describe(value)}", node)

    def operand(self, value: Any, other_dtype: str, node: Any) -> E.PrimExpr:
        """A Python literal next to an expression of ``other_dtype`` adopts that dtype."""
        if isinstance(value, E.PrimExpr):
            return value
        if isinstance(value, str):
            raise parse_error(f"a string cannot be an operand of arithmetic, got "
                              f"{describe(value)}", node)
        scalar = dt.element_of(other_dtype)
        if dt.is_handle(scalar):
            raise type_error("arithmetic on handle values is not allowed", node)
        if isinstance(value, bool) and not dt.is_bool(scalar):
            value = int(value)
        if isinstance(value, float) and not dt.is_float(scalar):
            e = self.literal(value, node, "float32")
        elif isinstance(value, int) and not isinstance(value, bool) and dt.is_integer(scalar) \
                and not dt.min_value(scalar) <= value <= dt.max_value(scalar):
            e = self.literal(value, node, "int64")
        elif isinstance(value, (bool, int, float)):
            e = self.literal(value, node, scalar)
        else:
            raise parse_error(f"expected a loop-IR expression, got {describe(value)}", node)
        return _coerce(e, dt.with_lanes(e.dtype, dt.lanes(other_dtype)))

    def unify(self, a: Any, b: Any, node: Any) -> tuple[E.PrimExpr, E.PrimExpr]:
        """Both operands as PrimExprs of one dtype (literals adopt, mixed dtypes promote)."""
        if not isinstance(a, E.PrimExpr) and not isinstance(b, E.PrimExpr):
            a = self.prim(a, node)
        if not isinstance(a, E.PrimExpr):
            a = self.operand(a, b.dtype, node)
        if not isinstance(b, E.PrimExpr):
            b = self.operand(b, a.dtype, node)
        if a.dtype != b.dtype:
            target = _promote(a.dtype, b.dtype, node)
            a, b = _coerce(a, target), _coerce(b, target)
        return a, b

    def condition(self, value: Any, node: Any) -> E.PrimExpr:
        """``value`` as a boolean expression."""
        e = self.prim(value, node, "bool")
        if not dt.is_bool(e.dtype):
            raise type_error(f"expected a boolean condition, got an expression of dtype "
                             f"{e.dtype}", node)
        return e

    # -- evaluation ---------------------------------------------------------------------
    def eval(self, node: Any) -> Any:
        """The value of a syntax expression (IR nodes, Python literals, buffers, ...)."""
        method = getattr(self, "eval_" + type(node).__name__, None)
        if method is None:
            raise parse_error(f"{type(node).__name__.lower()} is not an expression", node)
        return method(node)

    def eval_Name(self, node: syn.Name) -> Any:
        value = self.scopes.lookup(node.id, node)
        if isinstance(value, TypeVarDecl):
            # A module-level TypeVar in a loop function: one int64 variable per function,
            # defined at its first use.
            var = E.Var(name=node.id, dtype="int64", span=node.span)
            self.scopes.frames[self.scopes.function_base][node.id] = var
            return var
        return value

    def eval_Const(self, node: syn.Const) -> Any:
        return node.value

    def eval_TupleExpr(self, node: syn.TupleExpr) -> tuple:
        return tuple(self.eval(e) for e in node.elts)

    def eval_ListExpr(self, node: syn.ListExpr) -> list:
        return [self.eval(e) for e in node.elts]

    def eval_DictExpr(self, node: syn.DictExpr) -> dict:
        out = {}
        for k, v in zip(node.keys, node.values):
            key = self.eval(k)
            if not isinstance(key, (str, int, bool)) and not isinstance(key, E.Var):
                raise parse_error(f"dictionary keys must be strings or numbers, got "
                                  f"{describe(key)}", k)
            out[key] = self.eval(v)
        return out

    def eval_Attr(self, node: syn.Attr) -> Any:
        name = syn.dotted_name(node)
        if name is not None:
            head = name.split(".", 1)[0]
            if isinstance(self.scopes.get(head), Namespace):
                return self.namespace_attr(name, node)
        base = self.eval(node.value)
        if isinstance(base, Buffer):
            return self.buffer_attr(base, node.attr, node)
        raise parse_error(f"{describe(base)} has no attribute '{node.attr}'", node)

    def namespace_attr(self, name: str, node: Any) -> Any:
        prefix, _, rest = name.partition(".")
        if prefix == "T" and is_dtype_name(rest):
            return DTypeMarker(rest)
        raise parse_error(f"unknown name {name}", node)

    def buffer_attr(self, buf: Buffer, attr: str, node: Any) -> Any:
        if attr == "data":
            return buf.data
        if attr == "dtype":
            return buf.dtype
        if attr == "shape":
            return tuple(buf.shape)
        if attr == "ndim":
            return len(buf.shape)
        if attr == "view":
            return BufferMethod(buf, attr)
        raise parse_error(f"buffer '{buf.name}' has no attribute '{attr}' (use .data, .shape, "
                          f".dtype or .view(...))", node)

    def eval_BinOp(self, node: syn.BinOp) -> Any:
        a = self.eval(node.lhs)
        b = self.eval(node.rhs)
        return self.binary(node.op, a, b, node)

    def binary(self, op: str, a: Any, b: Any, node: Any) -> E.PrimExpr:
        """The loop-IR node of ``a <op> b`` (no folding)."""
        if op in ("and", "or"):
            x, y = self.condition(a, node.lhs), self.condition(b, node.rhs)
            if x.dtype != y.dtype:
                raise type_error(f"'{op}' of conditions with dtypes {x.dtype} and {y.dtype}",
                                 node)
            cls = E.And if op == "and" else E.Or
            return cls(dtype=x.dtype, a=x, b=y)
        for v in (a, b):
            if not isinstance(v, (E.PrimExpr, bool, int, float)):
                raise parse_error(f"operator '{op}' cannot take {describe(v)}", node)
        x, y = self.unify(a, b, node)
        if dt.is_handle(x.dtype):
            raise type_error(f"operator '{op}' cannot take handle values", node)
        if op in _ARITH:
            return _ARITH[op](dtype=x.dtype, a=x, b=y)
        lanes = dt.lanes(x.dtype)
        return _CMP[op](dtype="bool" if lanes == 1 else f"boolx{lanes}", a=x, b=y)

    def eval_Unary(self, node: syn.Unary) -> Any:
        v = self.eval(node.operand)
        if node.op == "not":
            if isinstance(v, bool):
                return not v
            c = self.condition(v, node.operand)
            return E.Not(dtype=c.dtype, a=c)
        if isinstance(v, bool) or not isinstance(v, (int, float, E.PrimExpr)):
            raise parse_error(f"unary '{node.op}' cannot take {describe(v)}", node)
        if node.op == "+":
            return v
        if isinstance(v, (int, float)):
            return -v
        with located(node):
            if isinstance(v, E.IntImm) and v.dtype != "bool":
                return E.IntImm(dtype=v.dtype, value=-v.value)
            if isinstance(v, E.FloatImm):
                return E.FloatImm(dtype=v.dtype, value=-v.value)
            if dt.is_handle(v.dtype) or dt.is_bool(v.dtype):
                raise type_error(f"cannot negate a value of dtype {v.dtype}", node)
            return E.Sub(dtype=v.dtype, a=E.const(0, v.dtype), b=v)

    def eval_Index(self, node: syn.Index) -> Any:
        base = self.eval(node.value)
        if isinstance(base, Buffer):
            return self.buffer_load(base, node)
        if isinstance(base, (tuple, list)) and len(node.items) == 1 and \
                not isinstance(node.items[0], syn.Slice):
            i = expect_int(self.eval(node.items[0]), "an index", node.items[0])
            if not -len(base) <= i < len(base):
                raise parse_error(f"index {i} out of range for {describe(base)}", node)
            return base[i]
        raise parse_error(f"{describe(base)} cannot be indexed", node)

    def indices(self, buf: Buffer, node: syn.Index) -> tuple[E.PrimExpr, ...]:
        """The indices of ``buf[...]`` (slices become Ramps), checked against its rank."""
        items = node.items
        if len(items) == 1 and isinstance(items[0], syn.TupleExpr) and not items[0].elts:
            items = []
        out = []
        for item in items:
            if isinstance(item, syn.Slice):
                out.append(self.slice_ramp(item))
            else:
                out.append(self.prim(self.eval(item), item))
        if len(out) != len(buf.shape):
            raise type_error(f"buffer '{buf.name}' has {len(buf.shape)} dimension(s) but is "
                             f"indexed with {len(out)}", node)
        for e, item in zip(out, items or [node]):
            if not dt.is_integer(dt.element_of(e.dtype)):
                raise type_error(f"buffer index must be an integer, got dtype {e.dtype}", item)
        return tuple(out)

    def buffer_load(self, buf: Buffer, node: syn.Index) -> E.BufferLoad:
        """``buf[indices]`` as a (possibly vector) BufferLoad."""
        idx = self.indices(buf, node)
        lanes = max([dt.lanes(i.dtype) for i in idx] + [1])
        dtype = buf.dtype if lanes == 1 else dt.with_lanes(buf.dtype, lanes)
        return E.BufferLoad(dtype=dtype, buffer=buf, indices=idx, span=node.span)

    def slice_ramp(self, item: syn.Slice) -> E.PrimExpr:
        """``lo:hi[:step]`` in an index: the Ramp ``lo, lo + step, ...`` (constant lanes)."""
        if item.hi is None:
            raise parse_error("a vector index needs an end, e.g. A[i:i + 4]", item)
        lo = self.eval(item.lo) if item.lo is not None else 0
        hi = self.eval(item.hi)
        lo_e = self.prim(lo, item)
        n = extent_of(self, lo_e, hi, item)
        count = E.as_int(n) if isinstance(n, E.IntImm) else None
        if count is None:
            raise parse_error("a vector index must have a constant length, e.g. "
                              "A[i:i + 16]", item)
        step = 1 if item.step is None else self.eval(item.step)
        stride = self.operand(step, lo_e.dtype, item)
        s = E.as_int(stride) if isinstance(stride, E.IntImm) else None
        if s is None or s <= 0 or count % s:
            raise parse_error("a vector index step must be a positive constant dividing the "
                              "length; use T.Ramp(base, stride, lanes) otherwise", item)
        lanes = count // s
        if lanes < 1:
            raise parse_error("a vector index must have at least one lane", item)
        return E.Ramp(dtype=dt.with_lanes(lo_e.dtype, lanes), base=lo_e, stride=stride,
                       lanes=lanes)

    # -- calls -----------------------------------------------------------------------
    def args(self, call: syn.Call) -> tuple[list[Any], dict[str, Any]]:
        """The evaluated positional and keyword arguments of a call."""
        return [self.eval(a) for a in call.args], {k: self.eval(v) for k, v, _ in call.kwargs}

    def eval_Call(self, node: syn.Call) -> Any:
        name = syn.dotted_name(node.func)
        if name is not None:
            head = name.split(".", 1)[0]
            if isinstance(self.scopes.get(head), Namespace):
                return self.call_builtin(name, node)
        func = self.eval(node.func)
        if isinstance(func, DTypeMarker):
            return self.dtype_call(func.dtype, node)
        if isinstance(func, BufferMethod):
            raise parse_error(f"{func.buffer.name}.{func.name}(...) declares a buffer; write "
                              f"'name = {func.buffer.name}.{func.name}(...)' as a statement",
                              node)
        raise parse_error(f"{describe(func)} cannot be called", node)

    def call_builtin(self, name: str, node: syn.Call) -> Any:
        """A call of ``T.<name>``: expression builtins, intrinsics and dtype constructors."""
        prefix, _, rest = name.partition(".")
        if prefix == "T":
            handler = EXPR_BUILTINS.get(rest)
            if handler is not None:
                with located(node):
                    return handler(self, node)
            if rest in INTRINSICS:
                with located(node):
                    return self.intrinsic(rest, node)
            if is_dtype_name(rest):
                return self.dtype_call(rest, node)
            if rest in STATEMENT_BUILTINS:
                raise parse_error(f"T.{rest}(...) is not an expression here", node)
        raise parse_error(f"unknown function {name}", node)

    def dtype_call(self, dtype: str, node: syn.Call) -> E.PrimExpr:
        """``T.float32(0.5)``: an immediate, or a cast of an expression."""
        values, kw = self.args(node)
        if kw:
            raise parse_error(f"T.{dtype}(...) takes no keyword arguments", node)
        if not values:
            raise parse_error(f"T.{dtype}() declares a variable; write 'n = T.{dtype}()' as "
                              "a statement", node)
        if len(values) != 1:
            raise parse_error(f"T.{dtype} takes one value, got {len(values)}", node)
        if dtype in ("handle", "void"):
            raise parse_error(f"T.{dtype} has no values", node)
        v = values[0]
        with located(node):
            if isinstance(v, str):
                if not dt.is_float(dtype):
                    raise type_error(f"T.{dtype} cannot take a string", node)
                try:
                    f = float(v)
                except ValueError:
                    raise parse_error(f"T.{dtype}({v!r}) is not a number; use 'inf', '-inf' "
                                      "or 'nan'", node) from None
                return E.const(f, dtype)
            if isinstance(v, float) and not dt.is_float(dtype) and not math.isfinite(v):
                raise type_error(f"T.{dtype} cannot hold {v!r}", node)
            if isinstance(v, (bool, int, float)):
                return E.const(v, dtype)
            e = self.prim(v, node.args[0])
            return e if e.dtype == dtype else E.Cast(dtype=dtype, value=e)

    def intrinsic(self, name: str, node: syn.Call) -> E.PrimExpr:
        """``T.exp(x)``: a Call of a known intrinsic with its dtype inferred."""
        values, kw = self.args(node)
        if kw:
            raise parse_error(f"T.{name} takes no keyword arguments", node)
        ref = next((v.dtype for v in values if isinstance(v, E.PrimExpr)
                    and not isinstance(v, E.StringImm)), None)
        if ref is None and name in _FLOAT_INTRINSICS:
            ref = "float32"
        if name == "if_then_else" and len(values) == 3:
            cond = self.condition(values[0], node)
            t, f = self.unify(values[1], values[2], node)
            exprs = [cond, t, f]
        else:
            exprs = []
            for v, a in zip(values, node.args):
                if isinstance(v, str):
                    exprs.append(E.StringImm(value=v))
                elif ref is not None:
                    exprs.append(self.operand(v, ref, a))
                else:
                    exprs.append(self.prim(v, a))
        dtype = infer_dtype(name, tuple(e.dtype for e in exprs), None)
        return E.Call(dtype=dtype, op=name, args=tuple(exprs))

    def eval_Slice(self, node: syn.Slice) -> Any:
        raise parse_error("a slice is only allowed inside a buffer index", node)


_FLOAT_INTRINSICS = frozenset(n for n, d in INTRINSICS.items()
                              if n not in ("if_then_else", "likely", "reinterpret",
                                           "tvm_storage_sync", "popcount", "bitwise_not",
                                           "bitwise_and", "bitwise_or", "bitwise_xor",
                                           "shift_left", "shift_right"))


def extent_of(ev: ExprEvaluator, lo: E.PrimExpr, hi: Any, node: Any) -> E.PrimExpr:
    """``hi - lo`` as it was printed: ``lo:lo + n`` gives back ``n`` (so ranges round-trip
    without a simplifier), constants are subtracted, anything else is a ``Sub``."""
    hi_e = ev.operand(hi, lo.dtype, node) if not isinstance(hi, E.PrimExpr) else hi
    if isinstance(lo, E.IntImm) and lo.value == 0 and not isinstance(hi_e, E.IntImm):
        return hi_e
    if isinstance(lo, E.IntImm) and isinstance(hi_e, E.IntImm):
        lo_e, hi_c = ev.unify(lo, hi_e, node)
        with located(node):
            return E.const(hi_c.value - lo_e.value, hi_c.dtype)
    if isinstance(hi_e, E.Add) and structural_equal(hi_e.a, lo):
        return hi_e.b
    lo_e, hi_c = ev.unify(lo, hi_e, node)
    return E.Sub(dtype=lo_e.dtype, a=hi_c, b=lo_e)


# ---------------------------------------------------------------------------------
# Expression builtins: T.<name>(...) -> PrimExpr
# ---------------------------------------------------------------------------------


def _two(cls: type) -> Callable[[ExprEvaluator, syn.Call], E.PrimExpr]:
    def build(ev: ExprEvaluator, call: syn.Call) -> E.PrimExpr:
        values, kw = ev.args(call)
        a = bind_args(call, syn.dotted_name(call.func) or f"T.{cls.__name__}", ["a", "b"], 2,
                      values, kw)
        x, y = ev.unify(a["a"], a["b"], call)
        return cls(dtype=x.dtype, a=x, b=y)
    return build


def _cast(ev: ExprEvaluator, call: syn.Call) -> E.PrimExpr:
    values, kw = ev.args(call)
    fname = "T.Cast" if syn.dotted_name(call.func) == "T.Cast" else "T.cast"
    order = ["dtype", "value"] if fname == "T.Cast" else ["value", "dtype"]
    a = bind_args(call, fname, order, 2, values, kw)
    dtype = expect_dtype(a["dtype"], f"the dtype of {fname}", call)
    value = ev.prim(a["value"], call)
    return E.Cast(dtype=dtype, value=value)


def _select(ev: ExprEvaluator, call: syn.Call) -> E.PrimExpr:
    values, kw = ev.args(call)
    a = bind_args(call, "T.Select", ["condition", "true_value", "false_value"], 3, values, kw)
    cond = ev.condition(a["condition"], call)
    t, f = ev.unify(a["true_value"], a["false_value"], call)
    return E.Select(dtype=t.dtype, condition=cond, true_value=t, false_value=f)


def _ramp(ev: ExprEvaluator, call: syn.Call) -> E.PrimExpr:
    values, kw = ev.args(call)
    a = bind_args(call, "T.Ramp", ["base", "stride", "lanes"], 3, values, kw)
    base = ev.prim(a["base"], call)
    stride = ev.operand(a["stride"], base.dtype, call)
    lanes = expect_int(a["lanes"], "the lanes of T.Ramp", call)
    if lanes < 1 or dt.lanes(base.dtype) != 1 or base.dtype != stride.dtype:
        raise type_error("T.Ramp needs a scalar base and stride of one dtype and lanes >= 1",
                         call)
    return E.Ramp(dtype=dt.with_lanes(base.dtype, lanes), base=base, stride=stride,
                   lanes=lanes)


def _broadcast(ev: ExprEvaluator, call: syn.Call) -> E.PrimExpr:
    values, kw = ev.args(call)
    a = bind_args(call, "T.Broadcast", ["value", "lanes"], 2, values, kw)
    value = ev.prim(a["value"], call)
    lanes = expect_int(a["lanes"], "the lanes of T.Broadcast", call)
    if lanes < 1 or dt.lanes(value.dtype) != 1:
        raise type_error("T.Broadcast needs a scalar value and lanes >= 1", call)
    return E.Broadcast(dtype=dt.with_lanes(value.dtype, lanes), value=value, lanes=lanes)


def _let(ev: ExprEvaluator, call: syn.Call) -> E.PrimExpr:
    if len(call.args) != 1 or [k for k, _, _ in call.kwargs] != ["where"]:
        raise parse_error("T.Let is written T.Let(body, where={x: value})", call)
    where = call.kwargs[0][1]
    if not isinstance(where, syn.DictExpr) or not where.keys:
        raise parse_error("T.Let needs where={name: value}", where)
    bindings = []
    with ev.scopes.scope():
        for k, v in zip(where.keys, where.values):
            if not isinstance(k, syn.Name):
                raise parse_error("the keys of T.Let's where= must be new names", k)
            value = ev.prim(ev.eval(v), v)
            var = E.Var(name=k.id, dtype=value.dtype, span=k.span)
            ev.scopes.define(k.id, var, k)
            bindings.append((var, value))
        body = ev.prim(ev.eval(call.args[0]), call.args[0])
    for var, value in reversed(bindings):
        body = E.Let(dtype=body.dtype, var=var, value=value, body=body)
    return body


def _call_intrin(ev: ExprEvaluator, call: syn.Call) -> E.PrimExpr:
    values, kw = ev.args(call)
    a = bind_args(call, "T.call_intrin", ["dtype", "op"], 2, values, kw, variadic=True)
    dtype = expect_dtype(a["dtype"], "the dtype of T.call_intrin", call)
    if not isinstance(a["op"], str) or not a["op"]:
        raise parse_error("the op of T.call_intrin must be a non-empty string", call)
    args = tuple(E.StringImm(value=v) if isinstance(v, str) else ev.prim(v, call)
                 for v in a["*"])
    return E.Call(dtype=dtype, op=a["op"], args=args)


def _call_extern(ev: ExprEvaluator, call: syn.Call) -> E.PrimExpr:
    values, kw = ev.args(call)
    a = bind_args(call, "T.call_extern", ["dtype", "name"], 2, values, kw, variadic=True)
    dtype = expect_dtype(a["dtype"], "the dtype of T.call_extern", call)
    if not isinstance(a["name"], str) or not a["name"]:
        raise parse_error("the function name of T.call_extern must be a non-empty string",
                          call)
    args = [E.StringImm(value=a["name"])]
    args += [E.StringImm(value=v) if isinstance(v, str) else ev.prim(v, call)
             for v in a["*"]]
    return E.Call(dtype=dtype, op="call_extern", args=tuple(args))


def _reinterpret(ev: ExprEvaluator, call: syn.Call) -> E.PrimExpr:
    values, kw = ev.args(call)
    a = bind_args(call, "T.reinterpret", ["dtype", "value"], 2, values, kw)
    dtype = expect_dtype(a["dtype"], "the dtype of T.reinterpret", call)
    value = ev.prim(a["value"], call)
    return E.Call(dtype=infer_dtype("reinterpret", (value.dtype,), dtype), op="reinterpret",
                   args=(value,))


EXPR_BUILTINS: dict[str, Callable[[ExprEvaluator, syn.Call], Any]] = {
    "Cast": _cast, "cast": _cast, "Select": _select, "Ramp": _ramp, "Broadcast": _broadcast,
    "Let": _let, "call_intrin": _call_intrin, "call_extern": _call_extern,
    "reinterpret": _reinterpret,
    "min": _two(E.Min), "max": _two(E.Max), "Min": _two(E.Min), "Max": _two(E.Max),
    "truncdiv": _two(E.Div), "truncmod": _two(E.Mod), "floordiv": _two(E.FloorDiv),
    "floormod": _two(E.FloorMod), "Div": _two(E.Div), "Mod": _two(E.Mod),
    "FloorDiv": _two(E.FloorDiv), "FloorMod": _two(E.FloorMod),
}

__all__ = ["ExprEvaluator", "DTypeMarker", "BufferMethod", "extent_of", "EXPR_BUILTINS",
           "NAMESPACES", "is_dtype_name"]

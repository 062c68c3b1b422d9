"""Loop-IR printing in irc's text format (the ``T.`` dialect).

:class:`TIRPrinter` prints expressions with Python precedence (minimal parentheses),
statements, blocks and whole ``@T.prim_func`` definitions in the one canonical form that
``irc.parse`` reads back to a structurally equal function. Variables and buffers get
unique names (``x``, ``x_1``, ...) from a :class:`NameTable`, since IR names need not be
unique. The graph-level printer (``irc.ir.printer``) uses this module for shapes and for
the loop functions of a module.
"""

from __future__ import annotations

import json
import keyword
import math
import re
from typing import Any, Iterable

from ..core import dtype as dt
from ..core.functor import Visitor, collect
from ..core.node import Printer, register_printer
from ..core.structural import structural_equal
from . import expr as E
from . import stmt as S
from .buffer import Buffer, BufferRegion, MatchBufferRegion
from .intrin import INTRINSICS, infer_dtype

INDENT = "    "

# Python precedence levels (higher binds tighter).
_P_OR, _P_AND, _P_NOT, _P_CMP, _P_ADD, _P_MUL, _P_UNARY, _P_ATOM = 1, 2, 3, 4, 6, 7, 8, 10
_BIN = {E.Add: ("+", _P_ADD), E.Sub: ("-", _P_ADD), E.Mul: ("*", _P_MUL),
        E.Div: ("/", _P_MUL), E.FloorDiv: ("//", _P_MUL), E.FloorMod: ("%", _P_MUL)}
_CMP = {E.LT: "<", E.LE: "<=", E.GT: ">", E.GE: ">=", E.EQ: "==", E.NE: "!="}
_FUNC2 = {E.Min: "T.min", E.Max: "T.max", E.Mod: "T.truncmod"}
_LOOP_FUNCS = {"parallel": "T.parallel", "vectorized": "T.vectorized", "unrolled": "T.unroll",
               "serial": "T.serial"}
_AXIS = {"spatial": "spatial", "reduce": "reduce", "opaque": "opaque", "ordered": "scan"}
_REMAP = {"spatial": "S", "reduce": "R", "opaque": "O"}
_NAME_RE = re.compile(r"[^A-Za-z0-9_]")
RESERVED_NAMES = frozenset(keyword.kwlist) | {
    "T", "R", "I", "range", "metadata", "cls", "True", "False", "None", "TypeVar", "Module"}


def str_literal(s: str) -> str:
    """A double-quoted Python string literal for ``s``."""
    return json.dumps(s)


class NameTable:
    """Unique, valid Python names for IR objects (keyed by identity).

    ``define(obj, hint)`` gives ``hint`` (sanitized) or ``hint_1``, ``hint_2``, ... when
    taken; ``get(obj)`` returns the name or None.
    """

    def __init__(self, reserved: Iterable[str] = ()):
        self.used: set[str] = set(RESERVED_NAMES) | set(reserved)
        self.names: dict[int, str] = {}
        self._keep: list[Any] = []  # keep keyed objects alive so ids stay unique
        self._scopes: list[list[str]] = [[]]

    def push(self) -> None:
        """Open a scope: names defined until :meth:`pop` may be reused afterwards (as
        sibling loops and blocks reuse ``i`` or ``v0``)."""
        self._scopes.append([])

    def pop(self) -> None:
        for name in self._scopes.pop():
            self.used.discard(name)

    def define(self, obj: Any, hint: str) -> str:
        base = _NAME_RE.sub("_", hint or "v") or "v"
        if base[0].isdigit():
            base = "v" + base
        name = base
        i = 1
        while name in self.used:
            name = f"{base}_{i}"
            i += 1
        self.used.add(name)
        self._scopes[-1].append(name)
        self.names[id(obj)] = name
        self._keep.append(obj)
        return name

    def get(self, obj: Any) -> str | None:
        return self.names.get(id(obj))

    def name(self, obj: Any, hint: str) -> str:
        """The name of ``obj``, defining it on first use."""
        got = self.names.get(id(obj))
        return got if got is not None else self.define(obj, hint)


def format_float(value: float, dtype: str) -> str:
    """``T.float32(0.5)``; non-finite values as ``T.float32("inf")``."""
    if math.isnan(value) or math.isinf(value):
        return f'T.{dtype}("{value}")'
    return f"T.{dtype}({value!r})"


class TIRPrinter:
    """Prints loop IR. ``int_default`` is the integer dtype printed as a bare literal
    (``int32`` in loop functions, ``int64`` in graph-level shapes)."""

    def __init__(self, names: NameTable | None = None, int_default: str = "int32"):
        self.names = names if names is not None else NameTable()
        self.int_default = int_default
        self.data_text: dict[int, str] = {}
        self._data_scopes: list[dict[int, str]] = []
        self.loops: dict[int, S.For] = {}
        # Objects with no text form (e.g. compiled modules in attributes) print as
        # ``metadata["Kind"][i]`` references through this hook when one is given.
        self.object_ref: Any = None

    # ------------------------------------------------------------------ expressions
    def expr(self, e: Any) -> str:
        """``e`` as script text with minimal parentheses."""
        return self._expr(e)[0]

    def _wrap(self, e: Any, min_prec: int) -> str:
        text, prec = self._expr(e)
        return f"({text})" if prec < min_prec else text

    def _expr(self, e: Any) -> tuple[str, int]:
        if isinstance(e, E.IntImm):
            return self._int(e)
        if isinstance(e, E.FloatImm):
            return format_float(e.value, e.dtype), _P_ATOM
        if isinstance(e, E.Var):
            return self.names.name(e, e.name), _P_ATOM
        if isinstance(e, E.StringImm):
            return str_literal(e.value), _P_ATOM
        cls = type(e)
        if cls in _BIN:
            op, prec = _BIN[cls]
            return f"{self._wrap(e.a, prec)} {op} {self._wrap(e.b, prec + 1)}", prec
        if cls in _CMP:
            return f"{self._wrap(e.a, _P_CMP + 1)} {_CMP[cls]} {self._wrap(e.b, _P_CMP + 1)}", \
                _P_CMP
        if cls in _FUNC2:
            return f"{_FUNC2[cls]}({self.expr(e.a)}, {self.expr(e.b)})", _P_ATOM
        if isinstance(e, E.And):
            return f"{self._wrap(e.a, _P_AND)} and {self._wrap(e.b, _P_AND + 1)}", _P_AND
        if isinstance(e, E.Or):
            return f"{self._wrap(e.a, _P_OR)} or {self._wrap(e.b, _P_OR + 1)}", _P_OR
        if isinstance(e, E.Not):
            return f"not {self._wrap(e.a, _P_NOT)}", _P_NOT
        if isinstance(e, E.Cast):
            return f"T.Cast({str_literal(e.dtype)}, {self.expr(e.value)})", _P_ATOM
        if isinstance(e, E.Select):
            return (f"T.Select({self.expr(e.condition)}, {self.expr(e.true_value)}, "
                    f"{self.expr(e.false_value)})"), _P_ATOM
        if isinstance(e, E.Ramp):
            return f"T.Ramp({self.expr(e.base)}, {self.expr(e.stride)}, {e.lanes})", _P_ATOM
        if isinstance(e, E.Broadcast):
            return f"T.Broadcast({self.expr(e.value)}, {e.lanes})", _P_ATOM
        if isinstance(e, E.Let):
            value = self.expr(e.value)
            name = self.names.name(e.var, e.var.name)
            return f"T.Let({self.expr(e.body)}, where={{{name}: {value}}})", _P_ATOM
        if isinstance(e, E.BufferLoad):
            return f"{self.buffer_name(e.buffer)}[{self.indices(e.indices)}]", _P_ATOM
        if isinstance(e, E.Call):
            return self.call(e), _P_ATOM
        if isinstance(e, E.Reduce):
            axes = ", ".join(self.names.name(iv.var, iv.var.name) for iv in e.axis)
            cond = "" if e.condition is None else f", where={self.expr(e.condition)}"
            return f"T.{e.kind}({self.expr(e.source)}, axis=[{axes}]{cond})", _P_ATOM
        return f"<{type(e).__name__}>", _P_ATOM

    def _int(self, e: E.IntImm) -> tuple[str, int]:
        if e.dtype == "bool":
            return ("True" if e.value else "False"), _P_ATOM
        if e.dtype == self.int_default:
            return str(e.value), (_P_UNARY if e.value < 0 else _P_ATOM)
        return f"T.{e.dtype}({e.value})", _P_ATOM

    def call(self, e: E.Call) -> str:
        args = [self.expr(a) for a in e.args]
        if e.op == "call_extern" and e.args and isinstance(e.args[0], E.StringImm):
            return f"T.call_extern({str_literal(e.dtype)}, {', '.join(args)})"
        if e.op == "reinterpret" and len(args) == 1:
            return f"T.reinterpret({str_literal(e.dtype)}, {args[0]})"
        if e.op in INTRINSICS and e.op.isidentifier():
            try:
                inferred = infer_dtype(e.op, tuple(a.dtype for a in e.args), None)
            except Exception:  # noqa: BLE001 - an ill-typed call falls back to the long form
                inferred = None
            if inferred == e.dtype and self._literals_round_trip(e):
                return f"T.{e.op}({', '.join(args)})"
        head = f"T.call_intrin({str_literal(e.dtype)}, {str_literal(e.op)}"
        return head + "".join(", " + a for a in args) + ")"

    def _literals_round_trip(self, e: E.Call) -> bool:
        """Whether the short form ``T.op(...)`` parses back to the same argument dtypes:
        the parser gives a bare integer literal the dtype of the call's other arguments
        (or of the other branch of ``if_then_else``)."""
        def bare(a: Any) -> bool:
            return isinstance(a, E.IntImm) and a.dtype in (self.int_default, "bool")

        args = list(e.args[1:]) if e.op == "if_then_else" else list(e.args)
        ref = next((a.dtype for a in args if not bare(a) and not isinstance(a, E.StringImm)),
                   None)
        for a in args:
            if bare(a) and ref is not None and a.dtype != ref:
                return False
            if bare(a) and ref is None and e.op not in ("if_then_else",) and \
                    dt.is_float(e.dtype):
                return False
        return True

    def indices(self, indices: Iterable[E.PrimExpr]) -> str:
        parts = []
        for i in indices:
            if isinstance(i, E.Ramp) and isinstance(i.stride, E.IntImm) and \
                    i.stride.value == 1 and i.stride.dtype == i.base.dtype:
                hi = E.IntImm(dtype=i.base.dtype, value=i.lanes)
                parts.append(f"{self.expr(i.base)}:{self._upper(i.base, hi)}")
            else:
                parts.append(self.expr(i))
        if not parts:
            return "()"
        return ", ".join(parts)

    def _upper(self, lo: E.PrimExpr, extent: E.PrimExpr) -> str:
        """The printed end of ``lo:lo + extent`` (constants are added up)."""
        if isinstance(lo, E.IntImm) and isinstance(extent, E.IntImm) and \
                lo.dtype == extent.dtype:
            if lo.value == 0:
                return self.expr(extent)
            return self.expr(E.IntImm(dtype=lo.dtype, value=lo.value + extent.value))
        if isinstance(lo, E.IntImm) and lo.value == 0 and not isinstance(extent, E.IntImm):
            return self.expr(extent)
        return self.expr(E.Add(dtype=lo.dtype, a=lo, b=extent))

    # ------------------------------------------------------------------ buffers
    def buffer_name(self, buf: Buffer) -> str:
        return self.names.name(buf, buf.name)

    def shape(self, values: Iterable[E.PrimExpr]) -> str:
        items = [self.expr(v) for v in values]
        if len(items) == 1:
            return f"({items[0]},)"
        return f"({', '.join(items)})"

    def region(self, r: BufferRegion) -> str:
        """``A[i, 0:16]``: points for unit extents, ``lo:lo + n`` otherwise."""
        parts = []
        for rng in r.region:
            if isinstance(rng.extent, E.IntImm) and rng.extent.value == 1 and \
                    rng.extent.dtype == rng.min.dtype:
                parts.append(self.expr(rng.min))
            else:
                parts.append(f"{self.expr(rng.min)}:{self._upper(rng.min, rng.extent)}")
        return f"{self.buffer_name(r.buffer)}[{', '.join(parts) if parts else '()'}]"

    def buffer_args(self, buf: Buffer, *, always_dtype: bool, data: str | None = None) -> str:
        """The arguments of ``T.Buffer(...)``/``T.alloc_buffer(...)`` for ``buf``."""
        args = [self.shape(buf.shape)]
        if always_dtype or buf.dtype != "float32":
            args.append(str_literal(buf.dtype))
        if data is not None:
            args.append(f"data={data}")
        if buf.strides:
            args.append(f"strides={self.shape(buf.strides)}")
        if buf.elem_offset is not None:
            args.append(f"elem_offset={self.expr(buf.elem_offset)}")
        if buf.scope != "global":
            args.append(f"scope={str_literal(buf.scope)}")
        if buf.axis_separators:
            args.append(f"axis_separators={list(buf.axis_separators)}")
        return ", ".join(args)

    def define_buffer(self, buf: Buffer) -> str:
        name = self.names.define(buf, buf.name)
        self.data_text.setdefault(id(buf.data), f"{name}.data")
        return name

    def data_ref(self, var: E.Var) -> str:
        text = self.data_text.get(id(var))
        return text if text is not None else self.names.name(var, var.name)

    # ------------------------------------------------------------------ statements
    def _push(self) -> None:
        """Open a scope: names, and ``B.data`` spellings of pointers, defined until
        :meth:`_pop` are forgotten there."""
        self.names.push()
        self._data_scopes.append(dict(self.data_text))

    def _pop(self) -> None:
        self.names.pop()
        self.data_text = self._data_scopes.pop()

    def scoped(self, s: S.Stmt, indent: int) -> list[str]:
        """``s`` printed in its own name scope (a loop, block or branch body)."""
        self._push()
        try:
            return self.stmt(s, indent)
        finally:
            self._pop()

    def stmt(self, s: S.Stmt, indent: int, tail: bool = True) -> list[str]:
        """The lines of statement ``s`` at ``indent`` levels. ``tail`` says whether ``s``
        ends its statement list: only there may a declaration that scopes over the rest
        of the list (let, assert, allocate, buffer declaration) print without ``with``."""
        pad = INDENT * indent
        if isinstance(s, S.SeqStmt):
            out: list[str] = []
            last = len(s.seq) - 1
            for k, x in enumerate(s.seq):
                out += self.stmt(x, indent, tail and k == last)
            return out
        if isinstance(s, _SCOPING) and not tail:
            return self.scoped_declaration(s, indent)
        if isinstance(s, S.BufferStore):
            target = f"{self.buffer_name(s.buffer)}[{self.indices(s.indices)}]"
            return [f"{pad}{target} = {self.expr(s.value)}"]
        if isinstance(s, S.Evaluate):
            if isinstance(s.value, E.Call):
                return [pad + self.expr(s.value)]
            return [f"{pad}T.evaluate({self.expr(s.value)})"]
        if isinstance(s, S.For):
            self._push()
            try:
                return self.for_loop(s, indent)
            finally:
                self._pop()
        if isinstance(s, S.BlockRealize):
            self._push()
            try:
                return self.block(s, indent)
            finally:
                self._pop()
        if isinstance(s, S.IfThenElse):
            return self.if_then_else(s, indent, "if")
        if isinstance(s, S.While):
            return [f"{pad}while {self.expr(s.condition)}:"] + self.scoped(s.body, indent + 1)
        if isinstance(s, S.LetStmt):
            value = self.expr(s.value)
            name = self.names.define(s.var, s.var.name)
            return [f"{pad}{name}: T.{s.var.dtype} = {value}"] + self.stmt(s.body, indent)
        if isinstance(s, S.AssertStmt):
            return [f"{pad}assert {self.assert_args(s)}"] + self.stmt(s.body, indent)
        if isinstance(s, S.AttrStmt):
            return [f"{pad}with T.attr({self.attr_node(s.node)}, {str_literal(s.key)}, "
                    f"{self.expr(s.value)}):"] + self.scoped(s.body, indent + 1)
        if isinstance(s, S.Allocate):
            name, call = self.allocate_call(s)
            return [f"{pad}{name} = {call}"] + self.stmt(s.body, indent)
        if isinstance(s, S.DeclBuffer):
            name, call = self.decl_buffer_call(s)
            return [f"{pad}{name} = {call}"] + self.stmt(s.body, indent)
        if isinstance(s, S.Block):
            return self.block(S.BlockRealize(iter_values=tuple(v.var for v in s.iter_vars),
                                              predicate=E.const(True), block=s), indent)
        return [f"{pad}# <{type(s).__name__}>"]

    def attr_node(self, node: Any) -> str:
        if isinstance(node, E.IterVar):
            # The iteration variable is defined here and scopes over the attribute's body.
            dom = node.dom
            if isinstance(dom.min, E.IntImm) and dom.min.value == 0 and \
                    dom.min.dtype == dom.extent.dtype:
                d = self.expr(dom.extent)
            else:
                d = f"({self.expr(dom.min)}, {self._upper(dom.min, dom.extent)})"
            extra = "" if node.var.dtype == dom.extent.dtype else \
                f", dtype={str_literal(node.var.dtype)}"
            name = self.names.define(node.var, node.var.name)
            return (f"T.iter_var({name}, {d}, {str_literal(node.iter_type)}, "
                    f"{str_literal(node.thread_tag)}{extra})")
        if isinstance(node, E.PrimExpr):
            return self.expr(node)
        if isinstance(node, Buffer):
            return self.buffer_name(node)
        if isinstance(node, str):
            return str_literal(node)
        return repr(node) if isinstance(node, int) or node is None else "None"

    def if_then_else(self, s: S.IfThenElse, indent: int, kw: str) -> list[str]:
        pad = INDENT * indent
        out = [f"{pad}{kw} {self.expr(s.condition)}:"] + self.scoped(s.then_case, indent + 1)
        other = s.else_case
        if other is None:
            return out
        if isinstance(other, S.IfThenElse):
            return out + self.if_then_else(other, indent, "elif")
        return out + [f"{pad}else:"] + self.scoped(other, indent + 1)

    def allocate_call(self, s: S.Allocate) -> tuple[str, str]:
        """The name an allocation defines and its ``T.allocate(...)`` call."""
        extents = "[" + ", ".join(self.expr(x) for x in s.extents) + "]"
        args = [extents, str_literal(s.dtype), str_literal(s.scope)]
        if s.condition is not None:
            args.append(f"condition={self.expr(s.condition)}")
        if s.annotations:
            args.append(f"annotations={self.value(s.annotations)}")
        name = self.names.define(s.buffer_var, s.buffer_var.name)
        return name, f"T.allocate({', '.join(args)})"

    def decl_buffer_call(self, s: S.DeclBuffer) -> tuple[str, str]:
        """The name a buffer declaration defines and its ``T.Buffer(..., data=...)``."""
        data = self.data_ref(s.buffer.data)
        args = self.buffer_args(s.buffer, always_dtype=False, data=data)
        name = self.names.define(s.buffer, s.buffer.name)
        self.data_text.setdefault(id(s.buffer.data), f"{name}.data")
        return name, f"T.Buffer({args})"

    def assert_args(self, s: S.AssertStmt) -> str:
        return f"{self.expr(s.condition)}, {str_literal(s.message)}"

    def scoped_declaration(self, s: S.Stmt, indent: int) -> list[str]:
        """A declaration followed by more statements of its list: ``with T.allocate(...)
        as x:``, ``with T.Buffer(...) as B:``, ``with T.LetStmt(value) as v:`` or ``with
        T.Assert(cond, msg):``, its body indented (the flat form would take the
        statements after it into its body when parsed)."""
        pad = INDENT * indent
        self._push()
        try:
            if isinstance(s, S.LetStmt):
                value = self.expr(s.value)
                head = f"T.LetStmt({value}) as {self.names.define(s.var, s.var.name)}"
            elif isinstance(s, S.AssertStmt):
                head = f"T.Assert({self.assert_args(s)})"
            elif isinstance(s, S.Allocate):
                name, call = self.allocate_call(s)
                head = f"{call} as {name}"
            else:
                name, call = self.decl_buffer_call(s)
                head = f"{call} as {name}"
            return [f"{pad}with {head}:"] + self.stmt(s.body, indent + 1)
        finally:
            self._pop()

    def for_loop(self, s: S.For, indent: int) -> list[str]:
        """A loop; chains of plain serial loops print as one ``T.grid``."""
        pad = INDENT * indent
        if self._plain_serial(s):
            chain = [s]
            used: set[int] = set()
            while True:
                used.add(id(chain[-1].loop_var))
                inner = chain[-1].body
                if not (isinstance(inner, S.For) and self._plain_serial(inner)
                        and not _uses_any(inner.extent, used)):
                    break
                chain.append(inner)
            names = [self._define_loop(f) for f in chain]
            if len(chain) > 1:
                extents = ", ".join(self.expr(f.extent) for f in chain)
                head = f"{pad}for {', '.join(names)} in T.grid({extents}):"
            else:
                head = f"{pad}for {names[0]} in range({self.expr(s.extent)}):"
            return [head] + self.stmt(chain[-1].body, indent + 1)
        bounds = self.expr(s.extent) if self._zero_min(s) else \
            f"{self.expr(s.min)}, {self._upper(s.min, s.extent)}"
        extra = ""
        if s.kind == "thread_binding":
            extra += f", thread={str_literal(s.thread_tag)}"
        if s.annotations:
            extra += f", annotations={self.value(s.annotations)}"
        if s.kind == "serial" and not s.annotations:
            func = "range"
        else:
            func = "T.thread_binding" if s.kind == "thread_binding" else _LOOP_FUNCS[s.kind]
        name = self._define_loop(s)
        return [f"{pad}for {name} in {func}({bounds}{extra}):"] + self.stmt(s.body, indent + 1)

    def _define_loop(self, s: S.For) -> str:
        self.loops[id(s.loop_var)] = s
        return self.names.define(s.loop_var, s.loop_var.name)

    @staticmethod
    def _zero_min(s: S.For) -> bool:
        return isinstance(s.min, E.IntImm) and s.min.value == 0 and s.min.dtype == \
            s.extent.dtype

    def _plain_serial(self, s: S.For) -> bool:
        return s.kind == "serial" and not s.annotations and self._zero_min(s)

    # ------------------------------------------------------------------ blocks
    def block(self, r: S.BlockRealize, indent: int) -> list[str]:
        """``with T.block(...)``: header statements, then init and body."""
        pad = INDENT * indent
        inner = INDENT * (indent + 1)
        b = r.block
        out = [f"{pad}with T.block({str_literal(b.name)}):"]
        out += [inner + line for line in self.axes(r)]
        if not (isinstance(r.predicate, E.IntImm) and r.predicate.dtype == "bool" and
                r.predicate.value == 1):
            out.append(f"{inner}T.where({self.expr(r.predicate)})")
        out.append(f"{inner}T.reads({', '.join(self.region(x) for x in b.reads)})")
        out.append(f"{inner}T.writes({', '.join(self.region(x) for x in b.writes)})")
        if b.annotations:
            out.append(f"{inner}T.block_attr({self.value(b.annotations)})")
        out += [inner + line for line in self.alloc_buffers(b.alloc_buffers)]
        for m in b.match_buffers:
            source = self.region(m.source)
            args = self.buffer_args(m.buffer, always_dtype=False)
            out.append(f"{inner}{self.define_buffer(m.buffer)} = T.match_buffer({source}, "
                       f"{args})")
        if b.init is not None:
            out.append(f"{inner}with T.init():")
            out += self.scoped(b.init, indent + 2)
        return out + self.stmt(b.body, indent + 1)

    def alloc_buffers(self, buffers: Iterable[Buffer]) -> list[str]:
        out = []
        for buf in buffers:
            args = self.buffer_args(buf, always_dtype=False)
            out.append(f"{self.define_buffer(buf)} = T.alloc_buffer({args})")
        return out

    def axes(self, r: S.BlockRealize) -> list[str]:
        """Iteration variables: one ``T.axis.remap`` when all bind loop variables."""
        ivs = r.block.iter_vars
        if len(ivs) >= 2 and all(self._remappable(iv, v) for iv, v in zip(ivs, r.iter_values)):
            kinds = "".join(_REMAP[iv.iter_type] for iv in ivs)
            loops = ", ".join(self.expr(v) for v in r.iter_values)
            names = ", ".join(self.names.define(iv.var, iv.var.name) for iv in ivs)
            return [f"{names} = T.axis.remap({str_literal(kinds)}, [{loops}])"]
        out = []
        for iv, value in zip(ivs, r.iter_values):
            dom = iv.dom
            # A bare literal domain adopts the binding's dtype when parsed.
            dim = self.expr if dom.extent.dtype == value.dtype else self._explicit
            if isinstance(dom.min, E.IntImm) and dom.min.value == 0 and \
                    dom.min.dtype == dom.extent.dtype:
                d = dim(dom.extent)
            else:
                upper = E.IntImm(dtype=dom.min.dtype, value=dom.min.value + dom.extent.value) \
                    if isinstance(dom.min, E.IntImm) and isinstance(dom.extent, E.IntImm) \
                    and dom.min.dtype == dom.extent.dtype else None
                hi = dim(upper) if upper is not None else self._upper(dom.min, dom.extent)
                d = f"({dim(dom.min)}, {hi})"
            extra = ""
            if iv.var.dtype != dom.extent.dtype:
                extra = f", dtype={str_literal(iv.var.dtype)}"
            if iv.thread_tag:
                extra += f", thread_tag={str_literal(iv.thread_tag)}"
            v = self.expr(value)
            name = self.names.define(iv.var, iv.var.name)
            out.append(f"{name} = T.axis.{_AXIS[iv.iter_type]}({d}, {v}{extra})")
        return out

    def _explicit(self, e: E.PrimExpr) -> str:
        """An integer immediate with its dtype spelled out (``T.int32(4)``)."""
        if isinstance(e, E.IntImm) and e.dtype != "bool":
            return f"T.{e.dtype}({e.value})"
        return self.expr(e)

    def _remappable(self, iv: E.IterVar, value: E.PrimExpr) -> bool:
        loop = self.loops.get(id(value)) if isinstance(value, E.Var) else None
        return (loop is not None and loop.loop_var is value and iv.iter_type in _REMAP
                and not iv.thread_tag
                and iv.var.dtype == value.dtype
                and structural_equal(iv.dom.min, loop.min)
                and structural_equal(iv.dom.extent, loop.extent))

    # ------------------------------------------------------------------ values
    def value(self, v: Any) -> str:
        """A Python-level attribute value (func_attr, annotations)."""
        if isinstance(v, bool) or v is None:
            return repr(v)
        if isinstance(v, (int, float)):
            if isinstance(v, float) and not math.isfinite(v):
                return f'T.float64("{v}")'
            return repr(v)
        if isinstance(v, str):
            return str_literal(v)
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(self.value(x) for x in v) + "]"
        if isinstance(v, dict):
            items = sorted(v.items(), key=lambda kv: str(kv[0]))
            return "{" + ", ".join(f"{self.value(k)}: {self.value(x)}" for k, x in items) + "}"
        if isinstance(v, E.PrimExpr):
            return self.expr(v)
        if isinstance(v, Buffer):
            return self.buffer_name(v)
        ref = getattr(v, "metadata_text", None)
        if callable(ref):
            return ref()
        if self.object_ref is not None:
            return self.object_ref(v)
        return str_literal(str(v))

    # ------------------------------------------------------------------ functions
    def prim_func(self, f: S.PrimFunc, name: str, indent: int = 0) -> list[str]:
        """``@T.prim_func`` + ``def name(...)`` + body, at ``indent``."""
        pad = INDENT * indent
        inner = INDENT * (indent + 1)
        private = "global_symbol" not in f.attrs
        out = [pad + ("@T.prim_func(private=True)" if private else "@T.prim_func")]
        params, match_lines = [], []
        scalar_ok: set[int] = set()
        deferred: list[tuple[E.Var, Buffer]] = []
        for p in f.params:
            buf = f.buffer_map.get(p)
            if buf is None:
                params.append(f"{self.names.define(p, p.name)}: T.{p.dtype}")
                scalar_ok.add(id(p))
                continue
            if all(id(v) in scalar_ok for v in _vars_of_buffer(buf)):
                params.append(f"{self.define_buffer(buf)}: T.Buffer("
                              f"{self.buffer_args(buf, always_dtype=True)})")
            else:
                hint = p.name if p.name != buf.name else f"var_{buf.name}"
                params.append(f"{self.names.define(p, hint)}: T.handle")
                deferred.append((p, buf))
        free = free_vars(f)
        for v in free:
            # Declared at function level: name them before any nested scope can.
            self.names.name(v, v.name)
        ret = "" if f.ret_dtype == "void" else f" -> T.{f.ret_dtype}"
        out.append(f"{pad}def {name}({', '.join(params)}){ret}:")
        if f.attrs:
            out.append(f"{inner}T.func_attr({self.value(f.attrs)})")
        decl_at = len(out)
        for p, buf in deferred:
            args = self.buffer_args(buf, always_dtype=True)
            match_lines.append(f"{inner}{self.define_buffer(buf)} = T.match_buffer("
                               f"{self.names.get(p)}, {args})")
        body = self.func_body(f.body, indent + 1)
        decls = [f"{inner}{self.names.get(v)} = T.{v.dtype}()" for v in free]
        out[decl_at:decl_at] = decls + match_lines
        return out + body

    def func_body(self, body: S.Stmt, indent: int) -> list[str]:
        pad = INDENT * indent
        if _is_implicit_root(body):
            out = [f'{pad}# with T.block("root"):']
            out += [pad + line for line in self.alloc_buffers(body.block.alloc_buffers)]
            return out + self.stmt(body.block.body, indent)
        return self.stmt(body, indent)


# Declarations that scope over the statements after them when printed flat.
_SCOPING = (S.LetStmt, S.AssertStmt, S.Allocate, S.DeclBuffer)


def _is_implicit_root(body: S.Stmt) -> bool:
    if not isinstance(body, S.BlockRealize):
        return False
    b = body.block
    pred = body.predicate
    return (b.name == "root" and not b.iter_vars and not b.reads and not b.writes
            and b.init is None and not b.match_buffers and not b.annotations
            and isinstance(pred, E.IntImm) and pred.dtype == "bool" and pred.value == 1
            and _has_block(b.body))


def _has_block(s: Any) -> bool:
    return bool(collect(s, lambda n: isinstance(n, S.Block)))


def _uses_any(e: E.PrimExpr, var_ids: set[int]) -> bool:
    return bool(collect(e, lambda n: isinstance(n, E.Var) and id(n) in var_ids))


def _vars_of_buffer(buf: Buffer) -> list[E.Var]:
    parts = [buf.shape, buf.strides, buf.elem_offset]
    return collect(parts, lambda n: isinstance(n, E.Var))


def free_vars(f: S.PrimFunc) -> list[E.Var]:
    """Scalar variables used in ``f`` but bound by none of its constructs (parameters,
    loops, lets, block iteration variables, allocations, buffer data pointers), in order
    of first use; the printer declares them as ``n = T.int64()``."""
    bound: set[int] = {id(p) for p in f.params}
    seen: set[int] = set()
    order: list[E.Var] = []

    class _V(Visitor):
        def visit_Var(self, v: E.Var) -> None:
            if id(v) not in bound and id(v) not in seen:
                seen.add(id(v))
                order.append(v)

        def visit_Buffer(self, b: Buffer) -> None:
            bound.add(id(b.data))
            self.generic_visit(b)

        def visit_For(self, s: S.For) -> None:
            bound.add(id(s.loop_var))
            self.generic_visit(s)

        def visit_LetStmt(self, s: S.LetStmt) -> None:
            bound.add(id(s.var))
            self.generic_visit(s)

        def visit_Let(self, e: E.Let) -> None:
            bound.add(id(e.var))
            self.generic_visit(e)

        def visit_Allocate(self, s: S.Allocate) -> None:
            bound.add(id(s.buffer_var))
            self.generic_visit(s)

        def visit_IterVar(self, iv: E.IterVar) -> None:
            bound.add(id(iv.var))
            self.generic_visit(iv)

    v = _V()
    for buf in f.buffer_map.values():
        v.visit(buf)
    v.visit(f.body)
    return order


# ---------------------------------------------------------------------------------
# Entry points (registered with the core: ``node.script()`` and ``repr(node)``)
# ---------------------------------------------------------------------------------


def script_header(text_lines: list[str], *, module: bool) -> list[str]:
    """The comment lines naming the dialects ``text_lines`` use, then a blank line."""
    joined = "\n".join(text_lines)
    out = []
    if module:
        out.append("# from irc.script import ir as I")
    if "T." in joined:
        out.append("# from irc.script import tir as T")
    if "R." in joined:
        out.append("# from irc.script import relax as R")
    return out + [""]


def tir_script(node: Any, show_meta: bool = False, metadata: Any = None,
               meta_limit: Any = None) -> str:
    """A loop-IR node as irc script text: a ``PrimFunc`` as a ``@T.prim_func`` definition
    that ``irc.parse`` reads back, statements and expressions as fragments. (The options
    of the graph printer are accepted: loop functions hold no metadata constants.)"""
    del show_meta, metadata, meta_limit
    if isinstance(node, S.PrimFunc):
        name = node.attrs.get("global_symbol", "main")
        lines = TIRPrinter().prim_func(node, name if isinstance(name, str) else "main")
        lines = script_header(lines, module=False) + lines
    elif isinstance(node, S.Stmt):
        lines = TIRPrinter().stmt(node, 0)
    elif isinstance(node, E.PrimExpr):
        lines = [TIRPrinter().expr(node)]
    else:
        lines = [tir_repr(node)]
    return "\n".join(lines) + "\n"


def tir_repr(node: Any) -> str:
    """A short one-line description of a loop-IR node for ``repr()``."""
    if isinstance(node, E.PrimExpr):
        return TIRPrinter().expr(node)
    if isinstance(node, S.PrimFunc):
        params = ", ".join(node.buffer_map[p].name if p in node.buffer_map else p.name
                           for p in node.params)
        return f"PrimFunc {node.attrs.get('global_symbol', '<private>')}({params})"
    if isinstance(node, S.Stmt):
        lines = TIRPrinter().stmt(node, 0)
        head = lines[0].strip() if lines else type(node).__name__
        return head if len(lines) <= 1 else f"{head} ... ({len(lines)} lines)"
    if isinstance(node, BufferRegion):
        return TIRPrinter().region(node)
    if isinstance(node, MatchBufferRegion):
        return f"{node.buffer.name} = T.match_buffer({TIRPrinter().region(node.source)})"
    if isinstance(node, Buffer):
        return repr(node)
    if isinstance(node, E.Range):
        tp = TIRPrinter()
        return f"Range(min={tp.expr(node.min)}, extent={tp.expr(node.extent)})"
    if isinstance(node, E.IterVar):
        tp = TIRPrinter()
        upper = tp._upper(node.dom.min, node.dom.extent)
        return (f"IterVar({tp.expr(node.var)} in [{tp.expr(node.dom.min)}, {upper}), "
                f"{node.iter_type})")
    return f"{type(node).__name__}(...)"


_PRINTER = Printer(script=tir_script, repr=tir_repr)
for _cls in (E.PrimExpr, S.Stmt, S.PrimFunc, Buffer, BufferRegion, MatchBufferRegion,
             E.Range, E.IterVar):
    register_printer(_cls, _PRINTER)

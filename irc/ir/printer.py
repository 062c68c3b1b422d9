"""Printing IR as irc script text: modules, graph functions and struct info.

``graph_script(node, show_meta=False)`` prints a module or a graph-level node in the one
canonical form that ``irc.parse`` reads back; it is registered with the core, so
``mod.script()``/``mod.show()`` and :func:`irc.core.node.script` reach it. The header
comments
``# from irc.script import ir as I`` (``tir as T``, ``relax as R``), ``@I.ir_module``,
``class Module:``, ``@T.prim_func`` / ``@R.function`` definitions, ``with R.dataflow():``
blocks, and non-scalar constants as ``metadata["relax.expr.Constant"][i]`` (with
``show_meta=True`` a ``metadata = {...}`` section holds their data). ``graph_repr`` gives a
short one-line form for ``repr()``. Loop functions are printed by ``irc.tir.printer``.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from ..core import dtype as dt
from ..core.functor import Visitor, collect
from ..core.module import IRModule
from ..core.node import Printer, register_printer
from ..core.structural import structural_equal
from ..tir import expr as E
from ..tir.printer import INDENT, NameTable, TIRPrinter, script_header, str_literal
from ..tir.stmt import PrimFunc
from .expr import (
    Binding,
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    Expr,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    MatchCast,
    Op,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from .op import get_op_def
from .struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)

METADATA_FOOTER = "# Metadata omitted. Use show_meta=True in script() method to show it."


@dataclass(frozen=True)
class MetadataRef:
    """An object the text refers to as ``metadata["kind"][index]`` without its value
    (e.g. a compiled runtime module in module attributes); kept as is by the parser."""

    kind: str
    index: int

    def metadata_text(self) -> str:
        """``metadata["kind"][index]``."""
        return f"metadata[{str_literal(self.kind)}][{self.index}]"


class _Meta:
    """Constants collected while printing, in order of first use."""

    def __init__(self) -> None:
        self.constants: list[Constant] = []
        self.index: dict[int, int] = {}
        self.refs = False
        self.objects: dict[str, list[Any]] = {}

    def object_ref(self, obj: Any) -> str:
        """``metadata["<type name>"][i]`` for an object that has no text form."""
        self.refs = True
        kind = getattr(obj, "metadata_kind", None) or type(obj).__name__
        table = self.objects.setdefault(kind, [])
        for i, o in enumerate(table):
            if o is obj:
                return MetadataRef(kind, i).metadata_text()
        table.append(obj)
        return MetadataRef(kind, len(table) - 1).metadata_text()

    def ref(self, c: Constant) -> str:
        i = self.index.get(id(c))
        if i is None:
            i = len(self.constants)
            self.index[id(c)] = i
            self.constants.append(c)
        return f'metadata["relax.expr.Constant"][{i}]'

    def section(self) -> list[str]:
        items = []
        for c in self.constants:
            # np.asarray, not np.ascontiguousarray: the latter makes a 0-d array 1-d.
            arr = np.asarray(c.data)
            data = base64.b64encode(arr.tobytes(order="C")).decode("ascii")
            items.append(f'        {{"dtype": {str_literal(_const_dtype(c))}, "shape": '
                         f'{list(arr.shape)}, "base64": {str_literal(data)}}},')
        return ["metadata = {", '    "relax.expr.Constant": ['] + items + ["    ],", "}"]


def _const_dtype(c: Constant) -> str:
    s = c.struct_info
    if isinstance(s, TensorStructInfo) and s.dtype:
        return s.dtype
    return dt.from_numpy(c.data.dtype)


class RelaxPrinter:
    """Prints graph functions; ``module_name`` is set when printing inside a module."""

    def __init__(self, meta: _Meta, module_name: str | None = None):
        self.meta = meta
        self.module_name = module_name
        self.names = NameTable()
        self.tir = TIRPrinter(self.names, int_default="int64")
        self.tir.object_ref = meta.object_ref
        self.uses_cls = False

    # ---------------------------------------------------------------- struct info
    def sinfo(self, s: StructInfo | None, defining: bool = False) -> str:
        """Struct info as an annotation; ``defining`` prints new symbolic dimensions as
        strings (in a signature)."""
        if isinstance(s, TensorStructInfo):
            args = []
            if s.shape is not None:
                args.append(self.dims(s.shape, defining))
            if s.dtype:
                args.append(f"dtype={str_literal(s.dtype)}")
            if s.shape is None and s.ndim >= 0:
                args.append(f"ndim={s.ndim}")
            if s.vdevice is not None:
                args.append(f"vdevice={str_literal(s.vdevice)}")
            return f"R.Tensor({', '.join(args)})" if args else "R.Tensor"
        if isinstance(s, TupleStructInfo):
            return "R.Tuple(" + ", ".join(self.sinfo(f, defining) for f in s.fields) + ")"
        if isinstance(s, ShapeStructInfo):
            if s.values is not None:
                return "R.Shape([" + ", ".join(self.dim(v, defining) for v in s.values) + "])"
            return "R.Shape" if s.ndim < 0 else f"R.Shape(ndim={s.ndim})"
        if isinstance(s, PrimStructInfo):
            if s.value is not None:
                value = self.dim(s.value, defining)
                if s.value.dtype == s.dtype:
                    return f"R.Prim(value={value})"
                return f"R.Prim({str_literal(s.dtype)}, value={value})"
            return f"R.Prim({str_literal(s.dtype)})"
        if isinstance(s, FuncStructInfo):
            if s.params is None:
                params = "None"
            else:
                items = [self.sinfo(p, defining) for p in s.params]
                params = f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
            purity = "" if s.purity else ", False"
            return f"R.Callable({params}, {self.sinfo(s.ret, defining)}{purity})"
        if isinstance(s, ObjectStructInfo):
            return "R.Object"
        return "R.Object"

    def dims(self, values: Iterable[E.PrimExpr], defining: bool) -> str:
        items = [self.dim(v, defining) for v in values]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"

    def dim(self, e: E.PrimExpr, defining: bool) -> str:
        """A symbolic dimension: a string where it first defines variables (signature)."""
        if defining:
            new = [v for v in _tir_vars(e) if self.names.get(v) is None]
            if new:
                for v in new:
                    self.names.define(v, v.name)
                return str_literal(self.tir.expr(e))
        return self.tir.expr(e)

    # ---------------------------------------------------------------- expressions
    def expr(self, e: Any) -> str:
        """A graph expression as script text."""
        if isinstance(e, Var):
            return self.names.name(e, e.name_hint)
        if isinstance(e, GlobalVar):
            self.uses_cls = True
            return f"cls.{e.name_hint}"
        if isinstance(e, Call):
            return self.call(e)
        if isinstance(e, Tuple):
            items = [self.expr(f) for f in e.fields]
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        if isinstance(e, TupleGetItem):
            return f"{self.expr(e.tuple_value)}[{e.index}]"
        if isinstance(e, Constant):
            return self.constant(e)
        if isinstance(e, ShapeExpr):
            return "R.shape([" + ", ".join(self.tir.expr(v) for v in e.values) + "])"
        if isinstance(e, PrimValue):
            return f"R.prim_value({self.tir.expr(e.value)})"
        if isinstance(e, StringImm):
            return f"R.str({str_literal(e.value)})"
        if isinstance(e, DataTypeImm):
            return f"R.dtype({str_literal(e.value)})"
        if isinstance(e, ExternFunc):
            return f"R.ExternFunc({str_literal(e.global_symbol)})"
        if isinstance(e, Op):
            return f"R.{e.name}"
        if isinstance(e, E.PrimExpr):
            return self.tir.expr(e)
        return f"<{type(e).__name__}>"

    def constant(self, c: Constant) -> str:
        arr = c.data
        if isinstance(arr, np.ndarray) and arr.ndim == 0 and arr.dtype.kind in "biuf" and \
                _const_dtype(c) != "bfloat16":
            value = arr.item()
            if isinstance(value, float) and not np.isfinite(value):
                return self.meta.ref(c)
            return f"R.const({value!r}, {str_literal(_const_dtype(c))})"
        return self.meta.ref(c)

    def call(self, c: Call) -> str:
        if isinstance(c.op, Op):
            return self.op_call(c)
        args = [self.expr(a) for a in c.args]
        if isinstance(c.op, ExternFunc):
            head = [str_literal(c.op.global_symbol)] + args
            sinfo = ""
            if c.sinfo_args:
                sinfo = ", sinfo_args=" + self._sinfo_list(c.sinfo_args)
            return f"R.call_packed({', '.join(head)}{sinfo})"
        return f"{self.expr(c.op)}({', '.join(args)})"

    def _sinfo_list(self, items: tuple[StructInfo, ...]) -> str:
        if len(items) == 1:
            return self.sinfo(items[0])
        return "[" + ", ".join(self.sinfo(s) for s in items) + "]"

    def op_call(self, c: Call) -> str:
        """``R.op(operands..., attr=value...)`` with every registry attribute."""
        name = c.op.name
        try:
            opdef = get_op_def(name)
        except Exception:  # noqa: BLE001 - an unregistered op still prints
            opdef = None
        args = []
        operand_names = opdef.operands if opdef is not None else ()
        for i, a in enumerate(c.args):
            if isinstance(a, ExternFunc) and i == 0:
                args.append(str_literal(a.global_symbol))
            elif opdef is not None and i < len(operand_names) and \
                    operand_names[i] in getattr(opdef, "optional", ()):
                args.append(f"{operand_names[i]}={self.expr(a)}")
            elif opdef is not None and opdef.variadic and i == len(opdef.operands) - 1:
                if isinstance(a, Tuple):
                    args += [self.expr(f) for f in a.fields]
                else:
                    args.append(f"{operand_names[i]}={self.expr(a)}")
            else:
                args.append(self.expr(a))
        if opdef is not None:
            for spec in opdef.attrs:
                if spec.sinfo:
                    if c.sinfo_args:
                        args.append(f"{spec.name}={self._sinfo_list(c.sinfo_args)}")
                elif spec.name in c.attrs:
                    args.append(f"{spec.name}={self.attr(c.attrs[spec.name])}")
            declared = {spec.name for spec in opdef.attrs}
            # Attributes the registry does not declare still print (the parser then
            # reports them) rather than vanish from the text.
            args += [f"{k}={self.attr(v)}" for k, v in c.attrs.items() if k not in declared]
        else:
            args += [f"{k}={self.attr(v)}" for k, v in c.attrs.items()]
        return f"R.{name}({', '.join(args)})"

    def attr(self, v: Any) -> str:
        if isinstance(v, StructInfo):
            return self.sinfo(v)
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(self.attr(x) for x in v) + "]"
        if isinstance(v, Expr):
            return self.expr(v)
        return self.tir.value(v)

    # ---------------------------------------------------------------- bindings
    def binding_lines(self, b: Any, indent: int) -> list[str]:
        pad = INDENT * indent
        if isinstance(b, MatchCast):
            value = f"R.match_cast({self.expr(b.value)}, {self.sinfo(b.struct_info)})"
            return [pad + self._assign(b.var, value, annotate=True)]
        value = b.value
        if isinstance(value, If):
            return self.if_lines(b.var, value, indent)
        if isinstance(value, Function):
            name = self.names.define(b.var, b.var.name_hint)
            return self.function(value, name, indent, nested=True)
        annotate = not (isinstance(value, Call) and value.sinfo_args and
                        _same_sinfo(b.var.struct_info, value.struct_info))
        return [pad + self._assign(b.var, self.expr(value), annotate)]

    def _assign(self, var: Var, value: str, annotate: bool) -> str:
        name = self.names.get(var) or self.names.define(var, var.name_hint)
        if annotate and var.struct_info is not None:
            return f"{name}: {self.sinfo(var.struct_info)} = {value}"
        return f"{name} = {value}"

    def if_lines(self, var: Var, e: If, indent: int) -> list[str]:
        pad = INDENT * indent
        out = [f"{pad}if {self.expr(e.cond)}:"]
        name = self.names.get(var) or self.names.define(var, var.name_hint)
        for i, branch in enumerate((e.true_branch, e.false_branch)):
            if i == 1:
                out.append(f"{pad}else:")
            blocks, body = (branch.blocks, branch.body) if isinstance(branch, SeqExpr) \
                else ((), branch)
            for blk in blocks:
                out += self.block_lines(blk, indent + 1)
            ann = f": {self.sinfo(var.struct_info)}" if var.struct_info is not None else ""
            out.append(f"{INDENT * (indent + 1)}{name}{ann} = {self.expr(body)}")
        return out

    def block_lines(self, blk: BindingBlock, indent: int) -> list[str]:
        if isinstance(blk, DataflowBlock):
            out = [f"{INDENT * indent}with R.dataflow():"]
            for b in blk.bindings:
                out += self.binding_lines(b, indent + 1)
            outputs = [self.names.get(b.var) for b in blk.bindings
                       if not isinstance(b.var, DataflowVar)]
            if outputs:
                out.append(f"{INDENT * (indent + 1)}R.output({', '.join(outputs)})")
            if not blk.bindings:
                out.append(f"{INDENT * (indent + 1)}pass")
            return out
        out = []
        for b in blk.bindings:
            out += self.binding_lines(b, indent)
        return out

    # ---------------------------------------------------------------- functions
    def function(self, f: Function, name: str, indent: int, nested: bool = False) -> list[str]:
        """The lines of ``@R.function def name(...)`` at ``indent``."""
        pad = INDENT * indent
        inner = INDENT * (indent + 1)
        attrs = dict(f.attrs)
        options = []
        if not nested:
            if attrs.get("global_symbol") == name:
                del attrs["global_symbol"]
            elif "global_symbol" not in attrs:
                options.append("private=True")
        if not f.is_pure:
            options.append("pure=False")
        deco = "@R.function" + (f"({', '.join(options)})" if options else "")
        params = [f"{self.names.define(p, p.name_hint)}: {self.sinfo(p.struct_info, True)}"
                  for p in f.params]
        ret = f" -> {self.sinfo(f.ret_struct_info, True)}" if f.ret_struct_info is not None \
            else ""
        head = [pad + deco, f"{pad}def {name}({', '.join(params)}){ret}:"]
        body: list[str] = []
        if attrs:
            body.append(f"{inner}R.func_attr({self.tir.value(attrs)})")
        uses_before = self.uses_cls
        self.uses_cls = False
        decl_at = len(body)
        seq = f.body
        blocks, result = (seq.blocks, seq.body) if isinstance(seq, SeqExpr) else ((), seq)
        for blk in blocks:
            body += self.block_lines(blk, indent + 1)
        body.append(f"{inner}return {self.expr(result)}")
        decls = [f"{inner}{self.names.get(v)} = T.{v.dtype}()"
                 for v in _body_tir_vars(f) if self.names.get(v) is not None
                 and not self._signature_var(v, f)]
        if self.uses_cls and self.module_name is not None and not nested:
            decls.insert(0, f"{inner}cls = {self.module_name}")
        self.uses_cls = uses_before or self.uses_cls
        body[decl_at:decl_at] = decls
        return head + body

    def _signature_var(self, v: E.Var, f: Function) -> bool:
        return any(v is w for w in _signature_vars(f))


def _same_sinfo(a: Any, b: Any) -> bool:
    return a is not None and b is not None and structural_equal(a, b)


def _tir_vars(e: Any) -> list[E.Var]:
    return collect(e, lambda n: isinstance(n, E.Var))


def _signature_vars(f: Function) -> list[E.Var]:
    return _tir_vars([p.struct_info for p in f.params] + [f.ret_struct_info])


def _body_tir_vars(f: Function) -> list[E.Var]:
    """Symbolic variables of ``f`` (struct infos and values), outside nested functions."""
    order: list[E.Var] = []
    seen: set[int] = set()

    class _V(Visitor):
        def visit_Var(self, v: Any) -> None:
            if isinstance(v, E.Var):
                if id(v) not in seen:
                    seen.add(id(v))
                    order.append(v)
                return
            self.generic_visit(v)

        def visit_Function(self, g: Function) -> None:
            if g is not f:
                return
            self.generic_visit(g)

    _V().visit(f)
    return order


# ---------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------


def _module_lines(mod: IRModule, meta: _Meta) -> list[str]:
    out = ["@I.ir_module", "class Module:"]
    if mod.attrs:
        tp = TIRPrinter()
        tp.object_ref = meta.object_ref
        out.append(f"{INDENT}I.module_attrs({tp.value(mod.attrs)})")
        meta.refs = meta.refs or "metadata[" in out[-1]
    items = list(mod.functions.items())

    def order(kv: tuple) -> tuple:
        return (0 if isinstance(kv[1], PrimFunc) else 1, kv[0].name_hint)

    first = True
    for gv, fn in sorted(items, key=order):
        if not first:
            out.append("")
        first = False
        if isinstance(fn, PrimFunc):
            tp = TIRPrinter()
            tp.object_ref = meta.object_ref
            out += tp.prim_func(fn, gv.name_hint, indent=1)
        elif isinstance(fn, Function):
            out += RelaxPrinter(meta, "Module").function(fn, gv.name_hint, indent=1)
        elif isinstance(fn, ExternFunc):
            out.append(f"{INDENT}{gv.name_hint} = R.ExternFunc({str_literal(fn.global_symbol)})")
        else:
            out.append(f"{INDENT}# {gv.name_hint}: <{type(fn).__name__}>")
    if not items and not mod.attrs:
        out.append(f"{INDENT}pass")
    return out


def graph_script(node: Any, show_meta: bool = False,
                 metadata: dict[str, list[Any]] | None = None,
                 meta_limit: int | None = None) -> str:
    """A graph-level node or a module printed as irc script text (modules and functions
    parse back with ``irc.parse``; other nodes print as a fragment).

    ``show_meta=True`` writes the constants' data into a ``metadata = {...}`` section,
    unless they total more than ``meta_limit`` bytes. ``metadata``, a dict, receives
    what the text refers to as ``metadata["kind"][i]``: the constants and the
    objects that have no text form (compiled modules in module attributes), so that
    ``irc.parse(text, metadata=metadata)`` reads the text back to the same IR whether
    or not the data is in the text.
    """
    meta = _Meta()
    if isinstance(node, IRModule):
        lines = _module_lines(node, meta)
        lines = script_header(lines, module=True) + lines
    elif isinstance(node, Function):
        name = node.attrs.get("global_symbol", "main")
        lines = RelaxPrinter(meta).function(node, name if isinstance(name, str) else "main", 0)
        lines = script_header(lines, module=False) + lines
    elif isinstance(node, StructInfo):
        lines = [RelaxPrinter(meta).sinfo(node)]
    elif isinstance(node, Expr):
        lines = [RelaxPrinter(meta).expr(node)]
    else:
        lines = [graph_repr(node)]
    if metadata is not None:
        if meta.constants:
            metadata["relax.expr.Constant"] = list(meta.constants)
        for kind, objects in meta.objects.items():
            metadata[kind] = list(objects)
    if meta.constants or meta.refs:
        fits = meta_limit is None or sum(np.asarray(c.data).nbytes
                                         for c in meta.constants) <= meta_limit
        if show_meta and meta.constants and fits:
            lines += [""] + meta.section()
        else:
            lines.append(METADATA_FOOTER)
    return "\n".join(lines) + "\n"


def graph_repr(node: Any) -> str:
    """A short one-line description of a graph-level node or a module for ``repr()``."""
    if isinstance(node, IRModule):
        return f"IRModule({', '.join(sorted(node.names()))})"
    if isinstance(node, Function):
        rp = RelaxPrinter(_Meta())
        params = ", ".join(f"{p.name_hint}: {rp.sinfo(p.struct_info)}" for p in node.params)
        return f"Function({params}) -> {rp.sinfo(node.ret_struct_info)}"
    if isinstance(node, StructInfo):
        return RelaxPrinter(_Meta()).sinfo(node)
    if isinstance(node, Var):
        s = f": {RelaxPrinter(_Meta()).sinfo(node.struct_info)}" if node.struct_info else ""
        return f"{node.name_hint}{s}"
    if isinstance(node, Constant) and not (isinstance(node.data, np.ndarray) and
                                           node.data.ndim == 0):
        shape = tuple(getattr(node.data, "shape", ()))
        return f"Constant(shape={shape}, dtype={_const_dtype(node)!r})"
    if isinstance(node, (VarBinding, MatchCast)):
        rp = RelaxPrinter(_Meta())
        return rp.binding_lines(node, 0)[0]
    if isinstance(node, Expr):
        return RelaxPrinter(_Meta()).expr(node)
    if isinstance(node, BindingBlock):
        kind = "DataflowBlock" if isinstance(node, DataflowBlock) else "BindingBlock"
        return f"{kind}({len(node.bindings)} bindings)"
    return f"{type(node).__name__}(...)"


_PRINTER = Printer(script=graph_script, repr=graph_repr)
for _cls in (IRModule, Expr, StructInfo, Binding, BindingBlock):
    register_printer(_cls, _PRINTER)

__all__ = ["graph_script", "graph_repr", "MetadataRef", "METADATA_FOOTER"]

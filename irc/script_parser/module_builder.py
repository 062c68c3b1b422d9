"""Top level of a script: ``@I.ir_module`` classes, single functions, metadata, TypeVars.

``parse(text)`` returns an :class:`~irc.ir.IRModule` for module text and the function for
a single ``@T.prim_func`` / ``@R.function``. Module-level ``n = TypeVar("n")`` (TVM 0.27)
declares a name usable as a symbolic dimension in graph-level signatures. A trailing
``metadata = {...}`` section (printed with ``show_meta=True``) supplies the constants that
``metadata["relax.expr.Constant"][i]`` refers to; without it such references are kept as
:class:`~irc.ir.printer.MetadataRef` (module attributes) or rejected (constants).
"""

from __future__ import annotations

from typing import Any

from ..core.diagnostics import SourceFile
from ..core.module import IRModule
from ..ir.expr import ExternFunc, GlobalVar
from . import syntax as syn
from .context import (
    NAMESPACES,
    Scopes,
    attr_key,
    attr_value,
    bind_args,
    expect_bool,
    located,
    parse_error,
)
from .module_expr import Metadata, ModuleEvaluator, TypeVarDecl, decode_metadata
from .relax_builder import FunctionBuilder, relax_module_builder
from .tir_builder import PrimFuncBuilder
from .tvm_json import decode_tvm_json

#: How TVM's printed metadata section calls its JSON loader.
LOAD_JSON_NAMES = ("tvm.ir.load_json", "ir.load_json", "load_json")


class ModuleBuilder:
    """Builds the result of :func:`irc.parse` from the top-level syntax."""

    def __init__(self, source: SourceFile, metadata: dict[str, list[Any]] | None):
        self.source = source
        self.scopes = Scopes(dict(NAMESPACES))
        self.metadata = Metadata(dict(metadata) if metadata else None)
        self.type_vars: dict[str, TypeVarDecl] = {}

    def build(self, stmts: list) -> Any:
        """The module or function the top-level statements define."""
        definitions = []
        for s in stmts:
            if isinstance(s, (syn.Import, syn.Pass)) or _is_docstring(s):
                continue
            if isinstance(s, syn.Assign) and isinstance(s.target, syn.Name) and \
                    s.target.id == "metadata" and s.annotation is None:
                continue
            if isinstance(s, syn.Assign) and s.annotation is None and \
                    isinstance(s.target, syn.Name) and isinstance(s.value, syn.Call) and \
                    syn.dotted_name(s.value.func) == "TypeVar":
                self.type_var(s)
                continue
            if isinstance(s, (syn.FuncDef, syn.ClassDef)):
                definitions.append(s)
                continue
            raise parse_error("only an @I.ir_module class, a @T.prim_func or @R.function "
                              "definition, TypeVar declarations and a metadata section may "
                              "appear at the top level", s)
        for s in stmts:
            if isinstance(s, syn.Assign) and isinstance(s.target, syn.Name) and \
                    s.target.id == "metadata" and s.annotation is None:
                if s.value is None:
                    raise parse_error("metadata needs a value", s)
                ev = ModuleEvaluator(self.scopes)
                if isinstance(s.value, syn.Call) and \
                        syn.dotted_name(s.value.func) in LOAD_JSON_NAMES:
                    # Apache TVM's section: metadata = tvm.ir.load_json("""{...}""")
                    if len(s.value.args) != 1 or s.value.kwargs:
                        raise parse_error("tvm.ir.load_json takes one string", s.value)
                    tables = decode_tvm_json(ev.eval(s.value.args[0]), s.value)
                else:
                    tables = decode_metadata(ev.eval(s.value), s.value)
                merged = dict(self.metadata.tables or {})
                merged.update(tables)
                self.metadata = Metadata(merged)
        self.scopes.frames[0]["metadata"] = self.metadata
        if not definitions:
            raise parse_error("the text defines nothing; expected an @I.ir_module class or a "
                              "@T.prim_func/@R.function", None)
        if len(definitions) > 1:
            raise parse_error("expected one top-level definition; put several functions in "
                              "an @I.ir_module class", definitions[1])
        d = definitions[0]
        if isinstance(d, syn.ClassDef):
            return self.module(d)
        return self.function(d, module=None)

    def type_var(self, s: syn.Assign) -> None:
        call = s.value
        if not call.args or not isinstance(call.args[0], syn.Const) or \
                call.args[0].value != s.target.id:
            raise parse_error(f"write {s.target.id} = TypeVar(\"{s.target.id}\")", s)
        if any(k not in ("bound",) for k, _, _ in call.kwargs) or len(call.args) > 1:
            raise parse_error("a symbolic TypeVar takes only its name (and bound=int)", s)
        if s.target.id in self.type_vars:
            raise parse_error(f"duplicate definition of '{s.target.id}'", s.target)
        decl = TypeVarDecl(s.target.id)
        self.type_vars[s.target.id] = decl
        self.scopes.define(s.target.id, decl, s.target)

    # -- module ------------------------------------------------------------------------
    def module(self, cls: syn.ClassDef) -> IRModule:
        if len(cls.decorators) != 1 or _decorator_name(cls.decorators[0]) != "I.ir_module":
            raise parse_error("a module class must be decorated with @I.ir_module", cls)
        self._decorator_kwargs(cls.decorators[0], "I.ir_module", ("s_tir", "check_well_formed"))
        attrs: dict[str, Any] = {}
        funcs: list[syn.FuncDef] = []
        gvars: dict[str, GlobalVar] = {}
        externs: dict[str, Any] = {}
        for s in cls.body:
            if _is_docstring(s) or isinstance(s, syn.Pass):
                continue
            if isinstance(s, syn.ExprStmt) and isinstance(s.value, syn.Call) and \
                    syn.dotted_name(s.value.func) == "I.module_attrs":
                ev = ModuleEvaluator(self.scopes)
                values, kw = ev.args(s.value)
                a = bind_args(s.value, "I.module_attrs", ["attrs"], 1, values, kw)
                if not isinstance(a["attrs"], dict):
                    raise parse_error("I.module_attrs takes a dict", s.value)
                attrs.update({attr_key(k, s): attr_value(v, s)
                              for k, v in a["attrs"].items()})
                continue
            if isinstance(s, syn.Assign) and isinstance(s.target, syn.Name) and \
                    isinstance(s.value, syn.Call) and \
                    syn.dotted_name(s.value.func) == "R.ExternFunc":
                if s.target.id in gvars or s.target.id in externs:
                    raise parse_error(f"duplicate definition of function '{s.target.id}'",
                                      s.target)
                externs[s.target.id] = self.extern_func(s.value)
                continue
            if isinstance(s, syn.FuncDef):
                if s.name in gvars or s.name in externs:
                    raise parse_error(f"duplicate definition of function '{s.name}'", s)
                gvars[s.name] = GlobalVar(name_hint=s.name, span=s.span)
                funcs.append(s)
                continue
            raise parse_error("a module class may only contain I.module_attrs(...) and "
                              "@T.prim_func/@R.function definitions", s)
        module_ctx = ModuleContext(cls.name, gvars, funcs, self)
        built = {}
        # Loop functions first: R.call_tir checks its callee against them. Graph functions
        # are declared by signature so that calls between them are typed in any order.
        relax_funcs = []
        for f in funcs:
            if len(f.decorators) == 1 and _decorator_name(f.decorators[0]) == "R.function":
                relax_funcs.append(f)
            else:
                built[f.name] = self.function(f, module=module_ctx)
        if relax_funcs:
            module_ctx.bb = relax_module_builder(built)
            for f in relax_funcs:
                kw = self._decorator_kwargs(f.decorators[0], "R.function",
                                            ("private", "pure", "check_well_formed"))
                sig = FunctionBuilder(self.scopes, module_ctx).signature(
                    f, pure=bool(kw.get("pure", True)))
                module_ctx.bb.declare_function(f.name, sig)
            for f in relax_funcs:
                built[f.name] = self.function(f, module=module_ctx)
        functions = {gvars[f.name]: built[f.name] for f in funcs}
        functions.update({GlobalVar(name_hint=k): v for k, v in externs.items()})
        with located(cls):
            return IRModule(functions=functions, attrs=attrs, span=cls.span)

    def extern_func(self, call: syn.Call) -> Any:
        """``name = R.ExternFunc("symbol")`` in a module class: an external function."""
        if len(call.args) != 1 or call.kwargs or not isinstance(call.args[0], syn.Const) or \
                not isinstance(call.args[0].value, str):
            raise parse_error("R.ExternFunc takes the symbol name as a string", call)
        return ExternFunc(global_symbol=call.args[0].value, span=call.span)

    def function(self, fdef: syn.FuncDef, module: ModuleContext | None) -> Any:
        if len(fdef.decorators) != 1:
            raise parse_error(f"function '{fdef.name}' needs exactly one decorator: "
                              "@T.prim_func or @R.function", fdef)
        deco = fdef.decorators[0]
        name = _decorator_name(deco)
        if name == "T.prim_func":
            kw = self._decorator_kwargs(deco, name, ("private", "s_tir", "check_well_formed"))
            builder = PrimFuncBuilder(ModuleEvaluator(self.scopes))
            return builder.build(fdef, private=bool(kw.get("private", False)))
        if name == "R.function":
            kw = self._decorator_kwargs(deco, name, ("private", "pure", "check_well_formed"))
            builder = FunctionBuilder(self.scopes, module)
            return builder.build(fdef, private=bool(kw.get("private", False)),
                                 pure=bool(kw.get("pure", True)))
        raise parse_error(f"unknown decorator @{name or '...'}; use @T.prim_func or "
                          "@R.function", deco)

    def _decorator_kwargs(self, deco: Any, name: str, allowed: tuple[str, ...]) -> dict:
        if not isinstance(deco, syn.Call):
            return {}
        if deco.args:
            raise parse_error(f"@{name}(...) takes only keyword arguments", deco)
        out = {}
        for key, value, _ in deco.kwargs:
            if key not in allowed:
                raise parse_error(f"@{name} has no option '{key}' (options: "
                                  f"{', '.join(allowed)})", value)
            if not isinstance(value, syn.Const):
                raise parse_error(f"option '{key}' must be True or False", value)
            out[key] = expect_bool(value.value, f"option '{key}'", value)
        return out


class ModuleContext:
    """What a function being parsed knows about its module: the class name (for
    ``cls = Module``), the GlobalVars and the other definitions (for signatures)."""

    def __init__(self, name: str, gvars: dict, funcs: list, builder: ModuleBuilder):
        self.name = name
        self.gvars = gvars
        self.funcs = {f.name: f for f in funcs}
        self.builder = builder
        self.bb: Any = None


def _decorator_name(deco: Any) -> str | None:
    if isinstance(deco, syn.Call):
        deco = deco.func
    return syn.dotted_name(deco)


def _is_docstring(s: Any) -> bool:
    return isinstance(s, syn.ExprStmt) and isinstance(s.value, syn.Const) and \
        isinstance(s.value.value, str)


__all__ = ["ModuleBuilder", "ModuleContext"]

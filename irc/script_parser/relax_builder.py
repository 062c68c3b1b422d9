"""``@R.function`` syntax -> :class:`irc.ir.Function`.

Bindings are built in order into binding blocks (``with R.dataflow():`` gives a
``DataflowBlock`` whose ``R.output`` names are ``Var``s, the others ``DataflowVar``s).
Every value is normalized by the module's BlockBuilder; a binding's annotation must be a
base of the inferred struct info (``is_base_of``) and becomes the variable's struct info.
An ``if``/``else`` whose branches both end by assigning one name binds that name to an
``If``. The function is assembled exactly as ``BlockBuilder.emit_func_output`` does, so
parsed and built functions compare equal.
"""

from __future__ import annotations

from typing import Any

from ..core.module import IRModule
from ..core.structural import structural_equal
from ..ir.block_builder import BlockBuilder
from ..ir.expr import (
    BindingBlock,
    DataflowBlock,
    DataflowVar,
    Expr,
    Function,
    If,
    MatchCast,
    SeqExpr,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..ir.struct_info import FuncStructInfo, ObjectStructInfo, StructInfo, TupleStructInfo
from ..ir.struct_info_analysis import format_sinfo, is_base_of, may_match
from ..tir.expr import Var as TVar
from . import syntax as syn
from .context import (
    Scopes,
    attr_key,
    attr_value,
    bind_args,
    located,
    parse_error,
    type_error,
)
from .relax_expr import ModuleRef, RelaxEvaluator
from .tir_expr import is_dtype_name


def _is_symbolic_decl(value: Any) -> bool:
    """``T.int64()`` (a symbolic variable's declaration)."""
    name = _call_name(value)
    return name is not None and name.startswith("T.") and is_dtype_name(name[2:]) and \
        not value.args and not value.kwargs


def _call_name(node: Any) -> str | None:
    return syn.dotted_name(node.func) if isinstance(node, syn.Call) else None


def _is_docstring(s: Any) -> bool:
    return isinstance(s, syn.ExprStmt) and isinstance(s.value, syn.Const) and \
        isinstance(s.value.value, str)


class _Seq:
    """Binding blocks of one sequence (a function body or an if branch)."""

    def __init__(self) -> None:
        self.blocks: list[BindingBlock] = []
        self.pending: list[Any] = []

    def flush(self) -> None:
        if self.pending:
            self.blocks.append(BindingBlock(bindings=tuple(self.pending)))
            self.pending = []

    def finish(self) -> tuple[BindingBlock, ...]:
        self.flush()
        return tuple(self.blocks)


class FunctionBuilder:
    """Builds one graph function. ``module`` (a ``ModuleContext``) is None for a function
    parsed on its own; ``bb`` is the BlockBuilder that normalizes (typing calls of module
    functions from their declared signatures)."""

    def __init__(self, scopes: Scopes, module: Any, bb: BlockBuilder | None =
                 None, nested: bool = False):
        self.scopes = scopes
        self.module = module
        self.bb = bb if bb is not None else (module.bb if module is not None and
                                              getattr(module, "bb", None) is not None
                                              else BlockBuilder())
        self.ev = RelaxEvaluator(scopes, self.bb.normalize)
        self.nested = nested

    # -- signature ------------------------------------------------------------------------
    def _signature(self, fdef: syn.FuncDef) -> tuple[list[Var], StructInfo | None]:
        params = []
        seen = set()
        for p in fdef.params:
            if p.default is not None:
                raise parse_error(f"parameter '{p.name}' cannot have a default", p.default)
            if p.annotation is None:
                raise parse_error(f"parameter '{p.name}' needs a struct info annotation such "
                                  "as R.Tensor((1, 784), \"float32\")", p)
            if p.name in seen:
                raise parse_error(f"duplicate parameter '{p.name}'", p)
            seen.add(p.name)
            self.ev.define_dims = True
            try:
                sinfo = self.ev.sinfo(p.annotation)
            finally:
                self.ev.define_dims = False
            var = Var(name_hint=p.name, struct_info=sinfo, span=p.span)
            self.scopes.define(p.name, var, p)
            params.append(var)
        ret = None
        if fdef.returns is not None:
            self.ev.define_dims = True
            try:
                ret = self.ev.sinfo(fdef.returns)
            finally:
                self.ev.define_dims = False
        return params, ret

    def signature(self, fdef: syn.FuncDef, pure: bool) -> FuncStructInfo:
        """The function's struct info from its annotations alone (to type calls of it
        before it is built)."""
        with self.scopes.function():
            params, ret = self._signature(fdef)
        return FuncStructInfo(params=tuple(p.struct_info for p in params),
                              ret=ret if ret is not None else ObjectStructInfo(), purity=pure)

    # -- function -------------------------------------------------------------------------
    def build(self, fdef: syn.FuncDef, private: bool, pure: bool) -> Function:
        """The graph Function of ``fdef``."""
        attrs: dict[str, Any] = {}
        with self.scopes.function():
            params, ret = self._signature(fdef)
            seq = _Seq()
            result = None
            stmts = fdef.body
            for i, s in enumerate(stmts):
                if _is_docstring(s) or isinstance(s, syn.Pass):
                    continue
                if isinstance(s, syn.Return):
                    if any(not _is_docstring(x) for x in stmts[i + 1:]):
                        raise parse_error("'return' must be the last statement of the "
                                          "function", stmts[i + 1])
                    if s.value is None:
                        raise parse_error("return needs a value", s)
                    with located(s):
                        result = self.bb.normalize(self.ev.to_expr(self.ev.eval(s.value),
                                                                   s.value))
                    break
                if isinstance(s, syn.ExprStmt) and _call_name(s.value) == "R.func_attr":
                    attrs.update(self.func_attr(s.value))
                    continue
                self.statement(s, seq)
            if result is None:
                raise parse_error(f"function '{fdef.name}' must end with a return statement",
                                  fdef)
        if ret is not None and not structural_equal(ret, result.sinfo) and \
                not is_base_of(ret, result.sinfo):
            raise type_error(f"function '{fdef.name}' is declared to return "
                             f"{format_sinfo(ret)} but returns {format_sinfo(result.sinfo)}",
                             fdef.returns)
        ret_sinfo = ret if ret is not None else result.sinfo
        if not private and not self.nested:
            attrs.setdefault("global_symbol", fdef.name)
        body = SeqExpr(blocks=seq.finish(), body=result, struct_info=result.sinfo)
        with located(fdef):
            return Function(params=tuple(params), body=body, ret_struct_info=ret_sinfo,
                            is_pure=pure, attrs=attrs, span=fdef.span,
                            struct_info=FuncStructInfo(params=tuple(p.sinfo for p in params),
                                                       ret=ret_sinfo, purity=pure))

    def func_attr(self, call: syn.Call) -> dict[str, Any]:
        values, kw = self.ev.args(call)
        a = bind_args(call, "R.func_attr", ["attrs"], 1, values, kw)
        if not isinstance(a["attrs"], dict):
            raise parse_error("R.func_attr takes a dict", call)
        return {attr_key(k, call): attr_value(v, call) for k, v in a["attrs"].items()}

    # -- statements -----------------------------------------------------------------------
    def statement(self, s: Any, seq: _Seq) -> None:
        with located(s):
            if isinstance(s, syn.With):
                self.dataflow(s, seq)
            elif isinstance(s, syn.Assign):
                if self.declaration(s):
                    return
                if isinstance(s.target, syn.TupleExpr):
                    seq.pending.extend(self.unpacking(s, dataflow=False, outputs=set()))
                else:
                    seq.pending.append(self.binding(s, dataflow=False, outputs=set()))
            elif isinstance(s, syn.If):
                seq.pending.append(self.if_binding(s))
            elif isinstance(s, syn.FuncDef):
                seq.pending.append(self.local_function(s))
            elif isinstance(s, syn.ExprStmt):
                seq.pending.append(self.expr_binding(s))
            elif isinstance(s, syn.Return):
                raise parse_error("'return' is only allowed at the end of a function", s)
            else:
                raise parse_error("this statement is not allowed in an R.function", s)

    def declaration(self, s: syn.Assign) -> bool:
        """``cls = Module``, ``n = T.int64()`` and ``m, n = T.int64(), T.int64()``: names,
        not bindings."""
        if s.annotation is None and isinstance(s.target, syn.TupleExpr) and \
                isinstance(s.value, syn.TupleExpr) and \
                len(s.target.elts) == len(s.value.elts) and s.target.elts and \
                all(isinstance(t, syn.Name) for t in s.target.elts) and \
                all(_is_symbolic_decl(v) for v in s.value.elts):
            for t, v in zip(s.target.elts, s.value.elts):
                self.declaration(syn.Assign(t, None, v, s.span))
            return True
        if s.annotation is not None or not isinstance(s.target, syn.Name):
            return False
        if isinstance(s.value, syn.Name) and self.module is not None and \
                s.value.id == self.module.name:
            self.scopes.define(s.target.id, ModuleRef(self.module.name, self.module.gvars),
                               s.target)
            return True
        name = _call_name(s.value)
        if name is not None and name.startswith("T.") and is_dtype_name(name[2:]) and \
                not s.value.args and not s.value.kwargs:
            dtype = name[2:]
            if dtype in ("void", "handle"):
                raise parse_error(f"T.{dtype}() is not a symbolic variable type", s)
            existing = self.scopes.get(s.target.id) \
                if self.scopes.defined_in_function(s.target.id) else None
            if isinstance(existing, TVar):
                # TVM's printer declares a function's symbolic dimensions in its body
                # (``n = T.int64()``) after the parameters' annotations used them.
                if existing.dtype != dtype:
                    raise parse_error(f"'{s.target.id}' is a symbolic variable of dtype "
                                      f"{existing.dtype}; T.{dtype}() declares it again "
                                      "with another dtype", s)
                return True
            self.scopes.define(s.target.id, TVar(name=s.target.id, dtype=dtype,
                                                 span=s.target.span), s.target)
            return True
        return False

    def unpacking(self, s: syn.Assign, dataflow: bool, outputs: set[str]) -> list[VarBinding]:
        """``a, b = R.split(x, 2)``: the tuple bound to a variable of its own, then each
        name to a field of it (what irc prints back)."""
        names = []
        for t in s.target.elts:
            if not isinstance(t, syn.Name):
                raise parse_error("a tuple binding assigns names: a, b = ...", t)
            names.append(t.id)
        if s.annotation is not None:
            raise parse_error("a tuple binding takes no annotation", s.annotation)
        if s.value is None:
            raise parse_error("a binding needs a value", s)
        value = self.bb.normalize(self.ev.to_expr(self.ev.eval(s.value), s.value))
        sinfo = value.sinfo
        if not isinstance(sinfo, TupleStructInfo) or len(sinfo.fields) != len(names):
            raise type_error(f"{len(names)} names are bound to a value of struct info "
                             f"{format_sinfo(sinfo)}, not a tuple of {len(names)}", s.value)
        base = "_".join(names)
        tup_name, k = base, 0
        while self.scopes.defined_in_function(tup_name) or tup_name in names:
            k += 1
            tup_name = f"{base}{k}"
        tvar = (DataflowVar if dataflow else Var)(name_hint=tup_name, struct_info=sinfo,
                                                  span=s.value.span)
        self.scopes.define(tup_name, tvar, s.target)
        out = [VarBinding(var=tvar, value=value, span=s.span)]
        for i, (name, node) in enumerate(zip(names, s.target.elts)):
            item = self.bb.normalize(TupleGetItem(tuple_value=tvar, index=i))
            cls = DataflowVar if dataflow and name not in outputs else Var
            var = cls(name_hint=name, struct_info=item.sinfo, span=node.span)
            self.scopes.define(name, var, node, allow_redefine=True)
            out.append(VarBinding(var=var, value=item, span=s.span))
        return out

    def binding(self, s: syn.Assign, dataflow: bool, outputs: set[str]) -> Any:
        if not isinstance(s.target, syn.Name):
            raise parse_error("a binding assigns one name", s.target)
        if s.value is None:
            raise parse_error("a binding needs a value", s)
        name = s.target.id
        ann = self.ev.sinfo(s.annotation) if s.annotation is not None else None
        cls = DataflowVar if dataflow and name not in outputs else Var
        if _call_name(s.value) == "R.match_cast":
            return self.match_cast(s, ann, cls)
        value = self.bb.normalize(self.ev.to_expr(self.ev.eval(s.value), s.value))
        sinfo = self.annotated(ann, value.sinfo, s.annotation)
        var = cls(name_hint=name, struct_info=sinfo, span=s.target.span)
        self.scopes.define(name, var, s.target, allow_redefine=True)
        return VarBinding(var=var, value=value, span=s.span)

    def annotated(self, ann: StructInfo | None, inferred: StructInfo, node: Any) -> StructInfo:
        if ann is None:
            return inferred
        if not structural_equal(ann, inferred) and not is_base_of(ann, inferred):
            raise type_error(f"the annotation {format_sinfo(ann)} does not match the value's "
                             f"struct info {format_sinfo(inferred)}", node,
                             hint="use R.match_cast(value, ...) to assert a more specific "
                                  "struct info")
        return ann

    def match_cast(self, s: syn.Assign, ann: StructInfo | None, cls: type) -> Any:
        call = s.value
        values, kw = self.ev.args(call)
        a = bind_args(call, "R.match_cast", ["value", "struct_info"], 2, values, kw)
        value = self.bb.normalize(self.ev.to_expr(a["value"], call))
        target = self.ev.to_sinfo(a["struct_info"], call)
        if not may_match(value.sinfo, target):
            raise type_error(f"R.match_cast: a value of {format_sinfo(value.sinfo)} can never "
                             f"match {format_sinfo(target)}", call)
        sinfo = target
        if ann is not None:
            if not structural_equal(ann, target) and not is_base_of(ann, target):
                raise type_error(f"the annotation {format_sinfo(ann)} does not match "
                                 f"{format_sinfo(target)}", s.annotation)
            sinfo = ann
        var = cls(name_hint=s.target.id, struct_info=sinfo, span=s.target.span)
        self.scopes.define(s.target.id, var, s.target, allow_redefine=True)
        return MatchCast(var=var, value=value, struct_info=target, span=s.span)

    def expr_binding(self, s: syn.ExprStmt) -> Any:
        if not isinstance(s.value, syn.Call):
            raise parse_error("an expression statement in an R.function must be a call", s)
        value = self.bb.normalize(self.ev.to_expr(self.ev.eval(s.value), s.value))
        return VarBinding(var=Var(name_hint="_", struct_info=value.sinfo, span=s.span),
                          value=value, span=s.span)

    def dataflow(self, s: syn.With, seq: _Seq) -> None:
        if len(s.items) != 1 or _call_name(s.items[0][0]) != "R.dataflow" or \
                s.items[0][1] is not None:
            raise parse_error("'with' in an R.function is only 'with R.dataflow():'", s)
        if s.items[0][0].args or s.items[0][0].kwargs:
            raise parse_error("R.dataflow() takes no arguments", s.items[0][0])
        stmts = [x for x in s.body if not _is_docstring(x) and not isinstance(x, syn.Pass)]
        outputs: list[tuple[str, Any]] = []
        if stmts and isinstance(stmts[-1], syn.ExprStmt) and \
                _call_name(stmts[-1].value) == "R.output":
            out_call = stmts.pop().value
            if out_call.kwargs:
                raise parse_error("R.output takes the output names", out_call)
            for a in out_call.args:
                if not isinstance(a, syn.Name):
                    raise parse_error("R.output takes names bound in the dataflow block", a)
                outputs.append((a.id, a))
        names = {n for n, _ in outputs}
        bindings = []
        bound: dict[str, Var] = {}
        with self.scopes.scope():
            for x in stmts:
                with located(x):
                    if isinstance(x, syn.Assign):
                        if self.declaration(x):
                            continue
                        if isinstance(x.target, syn.TupleExpr):
                            for b in self.unpacking(x, dataflow=True, outputs=names):
                                bindings.append(b)
                                bound[b.var.name_hint] = b.var
                            continue
                        b = self.binding(x, dataflow=True, outputs=names)
                    elif isinstance(x, syn.ExprStmt) and _call_name(x.value) == "R.output":
                        raise parse_error("R.output(...) must be the last statement of the "
                                          "dataflow block", x)
                    elif isinstance(x, syn.ExprStmt):
                        b = self.expr_binding(x)
                    elif isinstance(x, syn.If):
                        b = self.if_binding(x, DataflowVar, names)
                    elif isinstance(x, syn.FuncDef):
                        b = self.local_function(x, DataflowVar, names)
                    else:
                        raise parse_error("a dataflow block holds only bindings and "
                                          "R.output(...)", x)
                bindings.append(b)
                bound[b.var.name_hint] = b.var
        for name, node in outputs:
            var = bound.get(name)
            if var is None:
                raise parse_error(f"R.output names '{name}', which is not bound in this "
                                  "dataflow block", node)
            self.scopes.define(name, var, node, allow_redefine=True)
        for name in bound:
            if name not in names:
                self.scopes.end(name, f"'{name}' is bound in a dataflow block above but not "
                                      f"listed in its R.output(...): only the names "
                                      f"R.output lists are visible after the block "
                                      f"(end the block with R.output({name}))")
        seq.flush()
        seq.blocks.append(DataflowBlock(bindings=tuple(bindings), span=s.span))

    def if_binding(self, s: syn.If, var_cls: type = Var, outputs: set | None = None) -> Any:
        if not s.orelse:
            raise parse_error("an 'if' in an R.function needs an 'else' branch", s)
        cond = self.bb.normalize(self.ev.to_expr(self.ev.eval(s.test), s.test))
        branches = []
        for stmts in (s.body, s.orelse):
            branches.append(self.branch(stmts, s))
        (t_name, t_node, t_ann, t_seq), (f_name, f_node, f_ann, f_seq) = branches
        if t_name != f_name:
            raise parse_error(f"both branches must end by assigning the same name ('{t_name}' "
                              f"vs '{f_name}')", f_node)
        value = self.bb.normalize(If(cond=cond, true_branch=t_seq, false_branch=f_seq,
                                     span=s.span))
        ann = t_ann if t_ann is not None else f_ann
        sinfo = self.annotated(ann, value.sinfo, t_node)
        cls = Var if outputs is not None and t_name in outputs else var_cls
        var = cls(name_hint=t_name, struct_info=sinfo, span=t_node.span)
        self.scopes.define(t_name, var, t_node, allow_redefine=True)
        return VarBinding(var=var, value=value, span=s.span)

    def branch(self, stmts: list, node: Any) -> tuple:
        stmts = [x for x in stmts if not _is_docstring(x) and not isinstance(x, syn.Pass)]
        if not stmts or not isinstance(stmts[-1], syn.Assign) or \
                not isinstance(stmts[-1].target, syn.Name):
            raise parse_error("each branch of an 'if' must end by assigning its result to a "
                              "name", stmts[-1] if stmts else node)
        last = stmts[-1]
        seq = _Seq()
        with self.scopes.scope():
            for x in stmts[:-1]:
                self.statement(x, seq)
            with located(last):
                if last.value is None:
                    raise parse_error("the branch result needs a value", last)
                result = self.bb.normalize(self.ev.to_expr(self.ev.eval(last.value),
                                                           last.value))
                ann = self.ev.sinfo(last.annotation) if last.annotation is not None else None
        body = SeqExpr(blocks=seq.finish(), body=result, struct_info=result.sinfo)
        return last.target.id, last.target, ann, body

    def local_function(self, fdef: syn.FuncDef, var_cls: type = Var,
                       outputs: set | None = None) -> Any:
        deco = fdef.decorators[0] if len(fdef.decorators) == 1 else None
        name = syn.dotted_name(deco.func if isinstance(deco, syn.Call) else deco) \
            if deco is not None else None
        if name != "R.function":
            raise parse_error("a function defined inside an R.function must be decorated "
                              "with @R.function", fdef)
        pure = True
        if isinstance(deco, syn.Call):
            for key, value, _ in deco.kwargs:
                if key != "pure" or not isinstance(value, syn.Const) or \
                        not isinstance(value.value, bool):
                    raise parse_error("a local @R.function takes only pure=True/False", deco)
                pure = value.value
        inner = FunctionBuilder(self.scopes, self.module, bb=self.bb, nested=True)
        func = inner.build(fdef, private=True, pure=pure)
        func = self.bb.normalize(func)
        cls = Var if outputs is not None and fdef.name in outputs else var_cls
        var = cls(name_hint=fdef.name, struct_info=func.sinfo, span=fdef.span)
        self.scopes.define(fdef.name, var, fdef, allow_redefine=True)
        return VarBinding(var=var, value=func, span=fdef.span)


def relax_module_builder(prim_funcs: dict) -> BlockBuilder:
    """A BlockBuilder over a module holding the already-built loop functions (so
    ``R.call_tir`` can check its callee)."""
    return BlockBuilder(IRModule(functions=dict(prim_funcs)))


__all__ = ["FunctionBuilder", "relax_module_builder", "Expr"]

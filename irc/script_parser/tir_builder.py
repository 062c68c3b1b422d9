"""``@T.prim_func`` syntax -> :class:`irc.tir.PrimFunc`.

Statements are built in order; declarations that scope over what follows them
(``T.allocate``, ``x_1 = T.Buffer(..., data=x)``, ``x: T.int32 = ...``, ``assert``) take
the rest of the statement list as their body, or, written ``with T.allocate(...) as x:``
(``with T.LetStmt(value) as v:``, ``with T.Assert(cond, msg):``), their indented body.
A function whose text contains blocks is wrapped in the implicit root block (``# with
T.block("root"):``) that owns the function-level ``T.alloc_buffer``s, as TVM does.
"""

from __future__ import annotations

from typing import Any

from ..core import dtype as dt
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import Buffer
from . import syntax as syn
from .context import (
    DTypeMarker,
    arg_syntax,
    attr_key,
    attr_value,
    bind_args,
    check_dimension,
    describe,
    expect_dtype,
    expect_int,
    expect_str,
    item_syntax,
    located,
    parse_error,
    target_names,
    type_error,
)
from .tir_block import ALLOC_NAMES, HEADER_ONLY, BlockBuilderMixin
from .tir_expr import BufferMethod, ExprEvaluator, extent_of, is_dtype_name

_LOOP_KINDS = {"range": "serial", "T.serial": "serial", "T.parallel": "parallel",
               "T.vectorized": "vectorized", "T.unroll": "unrolled",
               "T.thread_binding": "thread_binding"}
_BLOCK_NAMES = ("T.block", "T.sblock")
# ``with <declaration> as name:`` forms (the printer uses them where statements follow).
_SCOPED_DECLARATIONS = ("T.allocate", "T.Buffer", "T.decl_buffer", "T.LetStmt")
_SYMBOLIC_EXTENT_HINT = ("a dimension known only at run time is a variable: n = T.int64(), "
                         "then (n, 4)")

_BUFFER_PARAMS = ["shape", "dtype", "data", "strides", "elem_offset", "scope", "align",
                  "offset_factor", "buffer_type", "axis_separators"]


def _call_name(node: Any) -> str | None:
    if isinstance(node, syn.Call):
        return syn.dotted_name(node.func)
    return None


def contains_block(stmts: list) -> bool:
    """True when a statement list (recursively) holds a ``with T.block(...)``."""
    for s in stmts:
        if isinstance(s, syn.With) and any(_call_name(e) in _BLOCK_NAMES for e, _ in s.items):
            return True
        for attr in ("body", "orelse"):
            sub = getattr(s, attr, None)
            if isinstance(sub, list) and contains_block(sub):
                return True
    return False


def _is_docstring(s: Any) -> bool:
    return isinstance(s, syn.ExprStmt) and isinstance(s.value, syn.Const) and \
        isinstance(s.value.value, str)


class PrimFuncBuilder(BlockBuilderMixin):
    """Builds one PrimFunc from a ``def`` decorated with ``@T.prim_func``."""

    def __init__(self, ev: ExprEvaluator):
        self.ev = ev
        self.scopes = ev.scopes
        self.loop_dom: dict[int, tuple[E.PrimExpr, E.PrimExpr]] = {}
        self.attrs: dict[str, Any] = {}
        self.params: list[E.Var] = []
        self.buffer_map: dict[E.Var, Buffer] = {}
        self.root_allocs: list[Buffer] = []
        self.has_blocks = False
        self.depth = 0

    # -- function ---------------------------------------------------------------------
    def build(self, fdef: syn.FuncDef, private: bool) -> S.PrimFunc:
        """The PrimFunc of ``fdef`` (``private`` leaves out the global symbol)."""
        with self.scopes.function():
            for p in fdef.params:
                self.param(p)
            ret_dtype = "void"
            if fdef.returns is not None:
                ret = self.ev.eval(fdef.returns)
                if isinstance(ret, DTypeMarker):
                    ret_dtype = ret.dtype
                elif ret is not None:
                    raise parse_error("the return annotation of a T.prim_func must be a dtype "
                                      "such as T.int32", fdef.returns)
            self.has_blocks = contains_block(fdef.body)
            explicit_root = self._explicit_root(fdef.body)
            body = self.body(fdef.body)
            if self.has_blocks and not explicit_root:
                root = S.Block(name="root", iter_vars=(), reads=(), writes=(), body=body,
                                alloc_buffers=tuple(self.root_allocs))
                body = S.BlockRealize(iter_values=(), predicate=E.const(True), block=root)
            elif self.root_allocs:
                raise parse_error("T.alloc_buffer at function level needs the implicit root "
                                  "block; move it into the explicit root block", fdef)
        attrs = dict(self.attrs)
        if not private:
            attrs.setdefault("global_symbol", fdef.name)
        with located(fdef):
            # (PrimFunc puts the buffer map in parameter order, whichever of T.Buffer and
            # T.match_buffer declared each buffer first.)
            return S.PrimFunc(params=tuple(self.params), buffer_map=dict(self.buffer_map),
                               body=body, attrs=attrs, ret_dtype=ret_dtype, span=fdef.span)

    def _explicit_root(self, stmts: list) -> bool:
        rest = [s for s in stmts if not self._is_function_header(s)]
        if len(rest) != 1 or not isinstance(rest[0], syn.With):
            return False
        expr = rest[0].items[0][0]
        return _call_name(expr) in _BLOCK_NAMES and bool(expr.args) and \
            isinstance(expr.args[0], syn.Const) and expr.args[0].value == "root"

    def _is_function_header(self, s: Any) -> bool:
        if _is_docstring(s):
            return True
        if isinstance(s, syn.ExprStmt):
            return _call_name(s.value) == "T.func_attr"
        if isinstance(s, syn.Assign) and s.annotation is None:
            name = _call_name(s.value)
            if name == "T.match_buffer":
                return True
            if name is not None and name.startswith("T.") and is_dtype_name(name[2:]) and \
                    not s.value.args:
                return True
        return False

    def param(self, p: syn.Param) -> None:
        if p.default is not None:
            raise parse_error(f"parameter '{p.name}' of a T.prim_func cannot have a default",
                              p.default)
        if p.annotation is None:
            raise parse_error(f"parameter '{p.name}' needs a type annotation such as "
                              "T.Buffer((16,), \"float32\"), T.handle or T.int32", p)
        ann = p.annotation
        if _call_name(ann) == "T.Buffer":
            var = E.Var(name=p.name, dtype="handle", span=p.span)
            buf = self.make_buffer(p.name, ann, "T.Buffer")
            self.params.append(var)
            self.buffer_map[var] = buf
            self.scopes.define(p.name, buf, p)
            return
        value = self.ev.eval(ann)
        if not isinstance(value, DTypeMarker) or value.dtype == "void":
            raise parse_error(f"parameter '{p.name}' must be annotated with T.Buffer(...), "
                              f"T.handle or a dtype such as T.int32, got {describe(value)}", ann)
        var = E.Var(name=p.name, dtype=value.dtype, span=p.span)
        self.params.append(var)
        self.scopes.define(p.name, var, p)

    # -- statement lists ------------------------------------------------------------------
    def body(self, stmts: list) -> S.Stmt:
        """A statement list as one statement (scoped declarations take the rest)."""
        out: list[S.Stmt] = []
        for i, s in enumerate(stmts):
            if _is_docstring(s):
                continue
            with located(s):
                result, consumed = self.stmt(s, stmts[i + 1:])
            if result is not None:
                out.append(result)
            if consumed:
                break
        if not out:
            return S.no_op()
        return out[0] if len(out) == 1 else S.SeqStmt(seq=tuple(out))

    def nested(self, stmts: list) -> S.Stmt:
        self.depth += 1
        try:
            with self.scopes.scope():
                return self.body(stmts)
        finally:
            self.depth -= 1

    def stmt(self, s: Any, rest: list) -> tuple[S.Stmt | None, bool]:
        if isinstance(s, syn.Assign):
            return self.assign(s, rest)
        if isinstance(s, syn.ExprStmt):
            return self.expr_stmt(s), False
        if isinstance(s, syn.For):
            return self.for_loop(s), False
        if isinstance(s, syn.With):
            return self.with_stmt(s), False
        if isinstance(s, syn.If):
            cond = self.ev.condition(self.ev.eval(s.test), s.test)
            then = self.nested(s.body)
            other = self.nested(s.orelse) if s.orelse else None
            return S.IfThenElse(condition=cond, then_case=then, else_case=other,
                                 span=s.span), False
        if isinstance(s, syn.While):
            cond = self.ev.condition(self.ev.eval(s.test), s.test)
            return S.While(condition=cond, body=self.nested(s.body), span=s.span), False
        if isinstance(s, syn.Assert):
            cond = self.ev.condition(self.ev.eval(s.test), s.test)
            msg = "" if s.msg is None else expect_str(self.ev.eval(s.msg), "the assert message",
                                                      s.msg)
            with self.scopes.scope():
                body = self.body(rest)
            return S.AssertStmt(condition=cond, message=msg, body=body, span=s.span), True
        if isinstance(s, syn.Pass):
            return None, False
        if isinstance(s, syn.Return):
            raise parse_error("'return' is not supported in a T.prim_func", s)
        if isinstance(s, (syn.FuncDef, syn.ClassDef)):
            raise parse_error("nested definitions are not allowed in a T.prim_func", s)
        raise parse_error("this statement is not allowed in a T.prim_func", s)

    # -- assignments -----------------------------------------------------------------------
    def assign(self, s: syn.Assign, rest: list) -> tuple[S.Stmt | None, bool]:
        if s.value is None:
            raise parse_error("a declaration needs a value, e.g. 'x: T.int32 = 0'", s)
        if isinstance(s.target, syn.Index):
            if s.annotation is not None:
                raise parse_error("a buffer store cannot have an annotation", s.annotation)
            return self.buffer_store(s), False
        if s.annotation is not None:
            return self.let(s, rest), True
        name = _call_name(s.value)
        if isinstance(s.target, (syn.TupleExpr, syn.ListExpr)):
            if name == "T.axis.remap":
                raise parse_error("T.axis.remap must be directly inside a T.block, before its "
                                  "body", s)
            raise parse_error("only T.axis.remap(...) can be assigned to several names", s)
        if not isinstance(s.target, syn.Name):
            raise parse_error("the left side of '=' must be a name or a buffer element",
                              s.target)
        target = s.target.id
        call = s.value
        if name == "T.allocate":
            return self.allocate(target, s, rest), True
        if name in ("T.Buffer", "T.decl_buffer"):
            buf = self.make_buffer(target, call, name)
            if name == "T.decl_buffer" and _fresh_data(call):
                return self.alloc_decl(target, buf, s, rest), True
            return self.decl_buffer(target, buf, s, rest), True
        if isinstance(call, syn.Call) and isinstance(call.func, syn.Attr) and \
                call.func.attr == "view":
            method = self.ev.eval(call.func)
            if isinstance(method, BufferMethod):
                buf = self.view(target, method.buffer, call)
                return self.decl_buffer(target, buf, s, rest), True
        if name in ALLOC_NAMES:
            buf = self.make_buffer(target, call, name)
            if self.depth == 0 and self.has_blocks:
                self.root_allocs.append(buf)
                self.scopes.define(target, buf, s.target)
                return None, False
            if self.has_blocks:
                raise parse_error(f"{name} must be at function level or at the start of a "
                                  "T.block", s)
            return self.alloc_decl(target, buf, s, rest), True
        if name == "T.match_buffer":
            if self.depth != 0:
                raise parse_error("T.match_buffer of a parameter must be at function level",
                                  s)
            self.match_param(target, call)
            return None, False
        if name is not None and name.startswith("T.axis"):
            raise parse_error(f"{name} must be directly inside a T.block, before its body", s)
        if name in ("T.env_thread", "T.launch_thread"):
            raise parse_error(f"{name} is not supported; bind GPU threads with "
                              "T.thread_binding loops", s)
        if name is not None and name.startswith("T.") and is_dtype_name(name[2:]) \
                and not call.args and not call.kwargs:
            dtype = name[2:]
            if dtype == "void":
                raise parse_error("T.void() is not a variable type", s)
            self.scopes.define(target, E.Var(name=target, dtype=dtype, span=s.target.span),
                               s.target)
            return None, False
        return self.let(s, rest), True

    def let(self, s: syn.Assign, rest: list) -> S.Stmt:
        target = s.target
        if not isinstance(target, syn.Name):
            raise parse_error("a let binding needs a plain name on the left", target)
        dtype = None
        if s.annotation is not None:
            ann = s.annotation
            if isinstance(ann, syn.Index) and syn.dotted_name(ann.value) == "T.let" and \
                    len(ann.items) == 1:
                ann = ann.items[0]
            if syn.dotted_name(ann) != "T.let":
                marker = self.ev.eval(ann)
                if not isinstance(marker, DTypeMarker) or marker.dtype == "void":
                    raise parse_error("the annotation of a let binding must be a dtype such as "
                                      "T.int32", ann)
                dtype = marker.dtype
        raw = self.ev.eval(s.value)
        value = self.ev.prim(raw, s.value, dtype)
        if dtype is not None and value.dtype != dtype:
            raise type_error(f"'{target.id}' is declared {dtype} but its value has dtype "
                             f"{value.dtype}", s.value)
        var = E.Var(name=target.id, dtype=value.dtype, span=target.span)
        with self.scopes.scope():
            self.scopes.define(target.id, var, target)
            body = self.body(rest)
        return S.LetStmt(var=var, value=value, body=body, span=s.span)

    def buffer_store(self, s: syn.Assign) -> S.Stmt:
        target = s.target
        buf = self.ev.eval(target.value)
        if not isinstance(buf, Buffer):
            raise parse_error(f"only buffer elements can be assigned; {describe(buf)} is not "
                              "a buffer", target.value)
        indices = self.ev.indices(buf, target)
        lanes = max([dt.lanes(i.dtype) for i in indices] + [1])
        want = buf.dtype if lanes == 1 else dt.with_lanes(buf.dtype, lanes)
        raw = self.ev.eval(s.value)
        if isinstance(raw, E.PrimExpr):
            value = raw
        else:
            value = self.ev.operand(raw, want, s.value)
        if value.dtype != want:
            raise type_error(f"cannot store a value of dtype {value.dtype} into buffer "
                             f"'{buf.name}' of dtype {want}", s.value,
                             hint=f"cast it: T.Cast(\"{want}\", ...)")
        return S.BufferStore(buffer=buf, value=value, indices=indices, span=s.span)

    # -- buffers ---------------------------------------------------------------------------
    def make_buffer(self, name: str, call: syn.Call, fname: str, *,
                    skip_first: bool = False) -> Buffer:
        values, kw = self.ev.args(call)
        params = list(_BUFFER_PARAMS)
        if skip_first:
            values = values[1:]
        a = bind_args(call, fname, params, 1, values, kw)
        shape = self.shape(a["shape"], call, f"{fname} expects a shape tuple", what=fname,
                           syntax=arg_syntax(call, params, "shape", int(skip_first)))
        dtype = expect_dtype(a.get("dtype", "float32"), f"the dtype of {fname}", call)
        data = a.get("data")
        if data is not None and (not isinstance(data, E.Var) or data.dtype != "handle"):
            raise parse_error(f"data= of {fname} must be a pointer (a T.allocate result or "
                              f"X.data), got {describe(data)}", call)
        if data is None:
            data = E.Var(name=name, dtype="handle", span=call.span)
        strides = a.get("strides")
        strides = () if strides is None else self.shape(
            strides, call, f"strides= of {fname} must be a tuple")
        offset = a.get("elem_offset")
        if offset is not None:
            offset = self.ev.prim(offset, call)
        scope = a.get("scope")
        scope = "global" if scope in (None, "") else expect_str(scope, "scope=", call)
        seps = a.get("axis_separators")
        seps = () if seps is None else tuple(
            expect_int(v, "axis_separators", call) for v in _seq(seps, call, "axis_separators"))
        with located(call):
            return Buffer(name=name, shape=shape, dtype=dtype, data=data, strides=strides,
                          elem_offset=offset, scope=scope, axis_separators=seps,
                          span=call.span)

    def shape(self, value: Any, node: Any, message: str, what: str | None = None,
              syntax: Any = None) -> tuple[E.PrimExpr, ...]:
        """Integer expressions from a tuple (or one value). With ``what`` (a shape or
        extents, not strides) a negative constant is an error located at its item of
        ``syntax`` (the tuple's syntax, or a list of the items' syntax)."""
        if isinstance(value, (int, E.PrimExpr)) and not isinstance(value, bool):
            value = (value,)
        if not isinstance(value, (tuple, list)):
            raise parse_error(f"{message}, got {describe(value)}", node)
        out = []
        for i, v in enumerate(value):
            if isinstance(v, bool) or not isinstance(v, (int, E.PrimExpr)):
                raise parse_error(f"{message}; {describe(v)} is not an integer", node)
            e = self.ev.prim(v, node)
            if not dt.is_integer(e.dtype):
                raise type_error(f"{message}; a dimension has dtype {e.dtype}", node)
            if what is not None:
                if isinstance(syntax, list):
                    at = syntax[i] if len(syntax) == len(value) else node
                else:
                    at = node if syntax is None else item_syntax(syntax, i, len(value))
                check_dimension(e, i, what, at, _SYMBOLIC_EXTENT_HINT)
            out.append(e)
        return tuple(out)

    def view(self, name: str, parent: Buffer, call: syn.Call) -> Buffer:
        values, kw = self.ev.args(call)
        if kw:
            raise parse_error(f"{parent.name}.view(...) takes no keyword arguments", call)
        if len(values) == 1 and isinstance(values[0], str):
            dtype = expect_dtype(values[0], "the dtype of view", call)
            if not parent.shape:
                raise type_error("a 0-d buffer cannot be viewed as another dtype", call)
            old, new = dt.bits(parent.dtype) * dt.lanes(parent.dtype), \
                dt.bits(dtype) * dt.lanes(dtype)
            last = parent.shape[-1]
            if not isinstance(last, E.IntImm) or (last.value * old) % new:
                raise type_error(f"cannot view {parent.name} as {dtype}: the last dimension "
                                 "does not divide evenly", call)
            shape = parent.shape[:-1] + (E.IntImm(dtype=last.dtype,
                                                   value=last.value * old // new),)
        else:
            syntax: Any = list(call.args)
            if len(values) == 1 and isinstance(values[0], (tuple, list)):
                values = list(values[0])
                syntax = call.args[0]
            dtype = parent.dtype
            shape = self.shape(values, call, f"{parent.name}.view expects the new shape",
                               what=f"{parent.name}.view", syntax=syntax)
        with located(call):
            return Buffer(name=name, shape=shape, dtype=dtype, data=parent.data,
                          strides=parent.strides if len(shape) == len(parent.shape) else (),
                          elem_offset=parent.elem_offset, scope=parent.scope, span=call.span)

    def decl_buffer(self, name: str, buf: Buffer, s: syn.Assign, rest: list) -> S.Stmt:
        with self.scopes.scope():
            self.scopes.define(name, buf, s.target)
            body = self.body(rest)
        return S.DeclBuffer(buffer=buf, body=body, span=s.span)

    def alloc_decl(self, name: str, buf: Buffer, s: syn.Assign, rest: list) -> S.Stmt:
        """An allocation written as one buffer (``T.alloc_buffer`` in lowered code, TVM
        0.27's ``T.decl_buffer`` without data=): ``Allocate`` + ``DeclBuffer``."""
        decl = self.decl_buffer(name, buf, s, rest)
        extents = buf.shape if buf.shape else (E.IntImm(dtype="int32", value=1),)
        return S.Allocate(buffer_var=buf.data, dtype=buf.dtype, extents=tuple(extents),
                           scope=buf.scope, body=decl, span=s.span)

    def allocate(self, name: str, s: syn.Assign, rest: list) -> S.Stmt:
        call = s.value
        values, kw = self.ev.args(call)
        params = ["extents", "dtype", "scope", "condition", "annotations"]
        a = bind_args(call, "T.allocate", params, 2, values, kw)
        extents = self.shape(a["extents"], call, "T.allocate expects a list of extents",
                             what="T.allocate", syntax=arg_syntax(call, params, "extents"))
        dtype = expect_dtype(a["dtype"], "the dtype of T.allocate", call)
        scope = a.get("scope")
        scope = "global" if scope is None else expect_str(scope, "the scope of T.allocate",
                                                           call)
        cond = a.get("condition")
        cond = None if cond is None else self.ev.condition(cond, call)
        ann = a.get("annotations")
        ann = {} if ann is None else self.annotations(ann, call)
        var = E.Var(name=name, dtype="handle", span=s.target.span)
        with self.scopes.scope():
            self.scopes.define(name, var, s.target)
            body = self.body(rest)
        return S.Allocate(buffer_var=var, dtype=dtype, extents=extents, scope=scope,
                           body=body, condition=cond, annotations=ann, span=s.span)

    def match_param(self, name: str, call: syn.Call) -> None:
        if not call.args:
            raise parse_error("T.match_buffer needs the parameter it describes", call)
        param = self.ev.eval(call.args[0])
        if not isinstance(param, E.Var) or param not in self.params or param.dtype != "handle":
            raise parse_error("the first argument of T.match_buffer must be a T.handle "
                              "parameter", call.args[0])
        if param in self.buffer_map:
            raise parse_error("this parameter already has a buffer", call.args[0])
        buf = self.make_buffer(name, call, "T.match_buffer", skip_first=True)
        self.buffer_map[param] = buf
        self.scopes.define(name, buf, call)

    def annotations(self, value: Any, node: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise parse_error(f"annotations must be a dict, got {describe(value)}", node)
        return {attr_key(k, node): attr_value(v, node) for k, v in value.items()}

    # -- expression statements -------------------------------------------------------------
    def expr_stmt(self, s: syn.ExprStmt) -> S.Stmt | None:
        name = _call_name(s.value)
        if name == "T.func_attr":
            if self.depth != 0:
                raise parse_error("T.func_attr must be at function level", s)
            values, kw = self.ev.args(s.value)
            a = bind_args(s.value, "T.func_attr", ["attrs"], 1, values, kw)
            self.attrs.update(self.annotations(a["attrs"], s.value))
            return None
        if name in HEADER_ONLY or name == "T.init":
            raise parse_error(f"{name}(...) must be directly inside a T.block, before its body",
                              s)
        if name == "T.evaluate":
            values, kw = self.ev.args(s.value)
            a = bind_args(s.value, "T.evaluate", ["value"], 1, values, kw)
            return S.Evaluate(value=self.ev.prim(a["value"], s.value), span=s.span)
        value = self.ev.eval(s.value)
        if not isinstance(value, E.PrimExpr):
            raise parse_error(f"an expression statement must be a call such as "
                              f"T.evaluate(...), got {describe(value)}", s)
        return S.Evaluate(value=value, span=s.span)

    # -- loops -----------------------------------------------------------------------------
    def for_loop(self, s: syn.For) -> S.Stmt:
        it = s.iter
        name = _call_name(it)
        if name is None or (name not in _LOOP_KINDS and name != "T.grid"):
            raise parse_error("a for loop must iterate over range(...), T.grid(...), "
                              "T.serial/T.parallel/T.vectorized/T.unroll(...) or "
                              "T.thread_binding(...)", it)
        targets = target_names(s.target, "a loop variable")
        specs = self.loop_specs(name, it)
        if len(targets) != len(specs):
            raise parse_error(f"{name} gives {len(specs)} loop variable(s) but "
                              f"{len(targets)} name(s) are bound", s.target)
        loops = []
        self.depth += 1
        try:
            with self.scopes.scope():
                for (tname, tnode), (mn, ext, kind, tag, ann) in zip(targets, specs):
                    var = E.Var(name=tname, dtype=ext.dtype, span=tnode.span)
                    self.scopes.define(tname, var, tnode)
                    self.loop_dom[id(var)] = (mn, ext, var)
                    loops.append((var, mn, ext, kind, tag, ann))
                body = self.body(s.body)
        finally:
            self.depth -= 1
        for var, mn, ext, kind, tag, ann in reversed(loops):
            with located(s):
                body = S.For(loop_var=var, min=mn, extent=ext, kind=kind, body=body,
                              thread_tag=tag, annotations=ann, span=s.span)
        return body

    def attr_iter_var(self, expr: syn.Call, s: syn.With) -> S.Stmt:
        """``with T.attr(T.iter_var(v, dom, kind, tag), key, value):`` whose iteration
        variable ``v`` is defined for the body (thread extents)."""
        iv_call = expr.args[0]
        if not iv_call.args or not isinstance(iv_call.args[0], syn.Name):
            raise parse_error("T.iter_var(name, dom, kind, thread_tag) needs a new name first",
                              iv_call)
        values = [self.ev.eval(a) for a in iv_call.args[1:]]
        kw = {k: self.ev.eval(v) for k, v, _ in iv_call.kwargs}
        a = bind_args(iv_call, "T.iter_var", ["dom", "iter_type", "thread_tag", "dtype"], 3,
                      values, kw)
        dom = a["dom"]
        if isinstance(dom, (tuple, list)) and len(dom) == 2:
            lo = self.ev.prim(dom[0], iv_call)
            rng = E.Range(min=lo, extent=extent_of(self.ev, lo, dom[1], iv_call))
        else:
            ext = self.ev.prim(dom, iv_call)
            rng = E.Range(min=E.IntImm(dtype=ext.dtype, value=0) if dt.is_integer(ext.dtype)
                           else ext, extent=ext)
        if not dt.is_integer(rng.extent.dtype) or rng.min.dtype != rng.extent.dtype:
            raise type_error("the domain of T.iter_var must be integers of one dtype", iv_call)
        dtype = rng.extent.dtype if "dtype" not in a else \
            expect_dtype(a["dtype"], "dtype=", iv_call)
        kind = expect_str(a["iter_type"], "the kind of T.iter_var", iv_call)
        tag = expect_str(a["thread_tag"], "the thread tag of T.iter_var", iv_call)
        name_node = iv_call.args[0]
        var = E.Var(name=name_node.id, dtype=dtype, span=name_node.span)
        with located(iv_call):
            iv = E.IterVar(var=var, dom=rng, iter_type=kind, thread_tag=tag)
        rest = [self.ev.eval(x) for x in expr.args[1:]]
        kw2 = {k: self.ev.eval(v) for k, v, _ in expr.kwargs}
        b = bind_args(expr, "T.attr", ["attr_key", "value"], 2, rest, kw2)
        key = expect_str(b["attr_key"], "the key of T.attr", expr)
        self.depth += 1
        try:
            with self.scopes.scope():
                self.scopes.define(name_node.id, var, name_node)
                value = self.ev.prim(b["value"], expr)
                body = self.body(s.body)
        finally:
            self.depth -= 1
        return S.AttrStmt(node=iv, key=key, value=value, body=body, span=s.span)

    def loop_specs(self, name: str, call: syn.Call) -> list[tuple]:
        values, kw = self.ev.args(call)
        if name == "T.grid":
            if kw or not values:
                raise parse_error("T.grid takes one or more extents", call)
            return [(*self.loop_range(None, v, a), "serial", "", {})
                    for v, a in zip(values, call.args)]
        params = ["start", "stop"]
        if name == "range":
            params = ["start", "stop", "step"]
        elif name == "T.thread_binding":
            params = ["start", "stop", "thread", "annotations"]
        else:
            params = ["start", "stop", "annotations"]
        a = bind_args(call, name, params, 1, values, kw)
        if name == "T.thread_binding" and "stop" in a and isinstance(a["stop"], str) and \
                "thread" not in a:
            a["thread"] = a.pop("stop")
        if a.get("step") not in (None, 1):
            raise parse_error("range() with a step is not supported; loops have unit stride",
                              call)
        lo, hi = (None, a["start"]) if a.get("stop") is None else (a["start"], a["stop"])
        mn, ext = self.loop_range(lo, hi, call)
        tag = ""
        if name == "T.thread_binding":
            tag = expect_str(a.get("thread"), "thread= of T.thread_binding", call)
        ann = a.get("annotations")
        ann = {} if ann is None else self.annotations(ann, call)
        return [(mn, ext, _LOOP_KINDS[name], tag, ann)]

    def loop_range(self, lo: Any, hi: Any, node: Any) -> tuple[E.PrimExpr, E.PrimExpr]:
        if lo is None:
            ext = self.ev.prim(hi, node)
            mn = E.IntImm(dtype=ext.dtype, value=0) if dt.is_integer(ext.dtype) else None
        else:
            if isinstance(hi, E.PrimExpr) and not isinstance(lo, E.PrimExpr):
                lo_e = self.ev.operand(lo, hi.dtype, node)
            else:
                lo_e = self.ev.prim(lo, node)
            ext = extent_of(self.ev, lo_e, hi, node)
            mn = lo_e
            if mn.dtype != ext.dtype:
                mn, ext = self.ev.unify(mn, ext, node)
        if mn is None or not dt.is_integer(ext.dtype) or dt.lanes(ext.dtype) != 1:
            raise type_error(f"loop bounds must be integers, got dtype {ext.dtype}", node)
        return mn, ext

    # -- with ------------------------------------------------------------------------------
    def with_stmt(self, s: syn.With) -> S.Stmt:
        if len(s.items) != 1:
            raise parse_error("write one 'with' per line", s)
        expr, target = s.items[0]
        name = _call_name(expr)
        if name in _BLOCK_NAMES:
            if target is not None:
                raise parse_error("T.block(...) does not bind a name", target)
            return self.block(expr, s)
        if name == "T.attr":
            if expr.args and _call_name(expr.args[0]) == "T.iter_var":
                return self.attr_iter_var(expr, s)
            values, kw = self.ev.args(expr)
            a = bind_args(expr, "T.attr", ["node", "attr_key", "value"], 3, values, kw)
            node = a["node"]
            if not isinstance(node, (E.PrimExpr, Buffer, str, int, type(None))) or \
                    isinstance(node, bool):
                raise parse_error(f"T.attr cannot annotate {describe(node)}", expr)
            key = expect_str(a["attr_key"], "the key of T.attr", expr)
            value = self.ev.prim(a["value"], expr)
            return S.AttrStmt(node=node, key=key, value=value, body=self.nested(s.body),
                               span=s.span)
        if name == "T.init":
            raise parse_error("T.init() must be directly inside a T.block, before its body", s)
        if name in _SCOPED_DECLARATIONS:
            return self.scoped_declaration(name, expr, target, s)
        if name == "T.Assert":
            if target is not None:
                raise parse_error("T.Assert(...) does not bind a name", target)
            values, kw = self.ev.args(expr)
            a = bind_args(expr, "T.Assert", ["condition", "message"], 2, values, kw)
            cond = self.ev.condition(a["condition"], expr)
            msg = expect_str(a["message"], "the message of T.Assert", expr)
            return S.AssertStmt(condition=cond, message=msg, body=self.nested(s.body),
                                 span=s.span)
        raise parse_error("'with' is only used for T.block(...), T.init(), T.attr(...) and "
                          "the scoped declarations T.allocate/T.Buffer/T.decl_buffer/"
                          "T.LetStmt(...) as name and T.Assert(...) in a T.prim_func", expr)

    def scoped_declaration(self, name: str, expr: syn.Call, target: Any,
                           s: syn.With) -> S.Stmt:
        """``with T.allocate(...) as x:`` (also ``T.Buffer``, ``T.decl_buffer``) and ``with
        T.LetStmt(value) as v:``: the declaration of ``x = T.allocate(...)`` or ``v:
        T.int32 = value``, scoped over the indented body instead of the rest of the
        statement list (so statements may follow it)."""
        if not isinstance(target, syn.Name):
            raise parse_error(f"write 'with {name}(...) as name:'", target or expr)
        if name == "T.LetStmt":
            if len(expr.args) != 1 or expr.kwargs:
                raise parse_error("T.LetStmt takes the value only: with T.LetStmt(value) as v:",
                                  expr)
            decl = syn.Assign(target, None, expr.args[0], s.span)
        else:
            decl = syn.Assign(target, None, expr, s.span)
        self.depth += 1
        try:
            with self.scopes.scope():
                if name == "T.LetStmt":
                    return self.let(decl, s.body)
                result, _ = self.assign(decl, s.body)
                return result
        finally:
            self.depth -= 1


def _fresh_data(call: syn.Call) -> bool:
    return not any(k == "data" for k, _, _ in call.kwargs) and len(call.args) < 3


def _seq(value: Any, node: Any, what: str) -> list:
    if not isinstance(value, (list, tuple)):
        raise parse_error(f"{what} must be a list, got {describe(value)}", node)
    return list(value)

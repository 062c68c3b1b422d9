"""The BlockBuilder and normalization (filling in struct info).

**Normalization** fills in the struct info of graph expressions, recursively. Leaves get
it from their value (``Constant`` from its array, ``PrimValue`` from its expression,
``ShapeExpr`` from its values); variables keep theirs; calls of operators are inferred
by the operator registry; calls of module functions, function values and closures use
the callee's ``FuncStructInfo`` (symbolic dimensions of its parameters bound from the
arguments); ``If`` joins its branches. Nested calls stay nested (conversion to A-normal
form is a separate pass). A variable bound without struct info is replaced by one
carrying its value's struct info, and every later use is rewritten. Callee-position
nodes (``Op``, ``GlobalVar``, ``ExternFunc``) are left as they are.

**BlockBuilder** builds graph functions binding by binding (see its docstring).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

from ..core import dtype as dt
from ..core.diagnostics import IRCError, IRTypeError
from ..core.module import IRModule
from ..core.structural import structural_equal
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
    shape_of,
)
from .struct_info_analysis import (
    bind_shape_vars,
    erase_to_well_defined,
    format_sinfo,
    get_shape_vars,
    may_match,
    struct_info_lca,
    substitute_sinfo,
)
from .te_call import te_call_tir


class InferContext:
    """What struct-info inference may consult: the module functions reachable by
    ``GlobalVar`` (from a :class:`~irc.ir.BlockBuilder`, a module, or nothing)."""

    def __init__(self, module: Any = None, builder: Any = None):
        self._module = module
        self.builder = builder

    @property
    def module(self) -> Any:
        """The module being built or checked (None when there is none)."""
        if self.builder is not None:
            return self.builder.get()
        return self._module

    def lookup(self, gvar: GlobalVar) -> Any:
        """The function ``gvar`` names, or None when it is not (yet) in the module."""
        mod = self.module
        if mod is not None and gvar.name_hint in mod:
            return mod[gvar.name_hint]
        return None

    def func_sinfo(self, gvar: GlobalVar) -> FuncStructInfo | None:
        """The struct info of the function ``gvar`` names: from the module, from a
        declaration made with ``BlockBuilder.declare_function``, or from ``gvar`` itself."""
        func = self.lookup(gvar)
        if func is not None:
            return function_sinfo(func)
        if self.builder is not None:
            declared = self.builder._declared.get(gvar.name_hint)
            if declared is not None:
                return declared
        if isinstance(gvar.struct_info, FuncStructInfo):
            return gvar.struct_info
        return None


def function_sinfo(func: Any) -> FuncStructInfo:
    """The ``FuncStructInfo`` of a graph ``Function`` or of a loop ``PrimFunc`` (whose
    buffer parameters are tensors and scalar parameters are prim values)."""
    if isinstance(func, Function):
        if isinstance(func.struct_info, FuncStructInfo):
            return func.struct_info
        return FuncStructInfo(params=tuple(p.sinfo for p in func.params),
                              ret=func.ret_struct_info, purity=func.is_pure)
    if isinstance(func, PrimFunc):
        params: list[StructInfo] = []
        for p in func.params:
            buf = func.buffer_map.get(p)
            if buf is not None:
                params.append(TensorStructInfo(shape=shape_of(buf.shape), dtype=buf.dtype))
            elif p.dtype == "handle":
                params.append(ObjectStructInfo())
            else:
                params.append(PrimStructInfo(dtype=p.dtype))
        ret: StructInfo = TupleStructInfo(fields=()) if func.ret_dtype == "void" else \
            PrimStructInfo(dtype=func.ret_dtype)
        return FuncStructInfo(params=tuple(params), ret=ret, purity=False)
    raise IRTypeError(f"expected a graph Function or a PrimFunc, got {type(func).__name__}")


def _call_name(call: Call) -> str:
    op = call.op
    if isinstance(op, Op):
        return f"R.{op.name}"
    if isinstance(op, GlobalVar):
        return f"@{op.name_hint}"
    if isinstance(op, Var):
        return op.name_hint
    return "call"


def derive_call_sinfo(call: Call, fsinfo: FuncStructInfo) -> StructInfo:
    """The struct info of calling a function of struct info ``fsinfo`` with ``call``'s
    (normalized) arguments: arity and argument kinds are checked, symbolic dimensions
    of the parameters are bound from the arguments and substituted into the result."""
    ret = fsinfo.ret
    if fsinfo.params is None:
        return ret
    name = _call_name(call)
    if len(call.args) != len(fsinfo.params):
        raise IRTypeError(f"{name} takes {len(fsinfo.params)} arguments, got {len(call.args)}",
                          node=call, span=call.span)
    mapping: dict = {}
    for k, (param, arg) in enumerate(zip(fsinfo.params, call.args)):
        why = bind_shape_vars(param, arg.sinfo, mapping)
        if why is not None:
            raise IRTypeError(f"{name}: argument {k} does not match parameter "
                              f"{format_sinfo(param)}: {why}", node=call, span=call.span)
    bound = substitute_sinfo(ret, mapping)
    # Variables of the callee that the arguments did not bind mean nothing at the call
    # site: forget the shapes that mention them.
    unbound = {id(v) for v in get_shape_vars(fsinfo)} - {id(v) for v in mapping}
    if any(id(v) in unbound for v in get_shape_vars(bound)):
        bound = erase_to_well_defined(bound, lambda v: id(v) not in unbound)
    return bound


class Normalizer:
    """Fills in struct info; one instance per normalization (it remembers rebound
    variables so that every use of a variable sees the same replacement)."""

    def __init__(self, ctx: InferContext | None = None):
        self.ctx = ctx or InferContext()
        self.remap: dict[int, Var] = {}

    # -- expressions ------------------------------------------------------------------
    def expr(self, e: Expr) -> Expr:
        """``e`` with struct info filled in everywhere below it."""
        if isinstance(e, Var):
            new = self.remap.get(id(e))
            if new is not None:
                return new
            if e.struct_info is None:
                raise IRTypeError(f"variable {e.name_hint} has no struct info; give parameters "
                                  "an annotation such as R.Tensor((1, 784), \"float32\")",
                                  node=e, span=e.span)
            return e
        if isinstance(e, (Op, GlobalVar, ExternFunc)):
            return e
        method = getattr(self, f"_{type(e).__name__}", None)
        if method is None:
            raise IRTypeError(f"cannot normalize a {type(e).__name__} expression", node=e,
                              span=e.span)
        return method(e)

    def _Constant(self, e: Constant) -> Expr:
        if e.struct_info is not None:
            return e
        return e.replace(struct_info=TensorStructInfo(shape=shape_of(e.data.shape),
                                                      dtype=dt.from_numpy(e.data.dtype)))

    def _PrimValue(self, e: PrimValue) -> Expr:
        if e.struct_info is not None:
            return e
        return e.replace(struct_info=PrimStructInfo(dtype=e.value.dtype, value=e.value))

    def _StringImm(self, e: StringImm) -> Expr:
        return e if e.struct_info is not None else e.replace(struct_info=ObjectStructInfo())

    def _DataTypeImm(self, e: DataTypeImm) -> Expr:
        return e if e.struct_info is not None else e.replace(struct_info=ObjectStructInfo())

    def _ShapeExpr(self, e: ShapeExpr) -> Expr:
        if e.struct_info is not None:
            return e
        values = shape_of(e.values)
        return e.replace(values=values if any(a is not b for a, b in zip(values, e.values))
                         else e.values, struct_info=ShapeStructInfo(values=values))

    def _Tuple(self, e: Tuple) -> Expr:
        fields = tuple(self.expr(f) for f in e.fields)
        changed = any(a is not b for a, b in zip(fields, e.fields))
        if e.struct_info is not None and not changed:
            return e
        sinfo = TupleStructInfo(fields=tuple(f.sinfo for f in fields))
        return e.replace(fields=fields, struct_info=sinfo)

    def _TupleGetItem(self, e: TupleGetItem) -> Expr:
        value = self.expr(e.tuple_value)
        if e.struct_info is not None and value is e.tuple_value:
            return e
        s = value.sinfo
        if isinstance(s, TupleStructInfo):
            if not 0 <= e.index < len(s.fields):
                raise IRTypeError(f"tuple index {e.index} is out of range for "
                                  f"{format_sinfo(s)} ({len(s.fields)} fields)",
                                  node=e, span=e.span)
            sinfo = s.fields[e.index]
        elif isinstance(s, ObjectStructInfo):
            sinfo = ObjectStructInfo()
        else:
            raise IRTypeError(f"cannot index {format_sinfo(s)} with [{e.index}]: it is not a "
                              "tuple", node=e, span=e.span)
        return e.replace(tuple_value=value, struct_info=sinfo)

    def _Call(self, e: Call) -> Expr:
        op = e.op if isinstance(e.op, (Op, GlobalVar, ExternFunc)) else self.expr(e.op)
        args = tuple(self.expr(a) for a in e.args)
        changed = op is not e.op or any(a is not b for a, b in zip(args, e.args))
        if e.struct_info is not None and not changed:
            return e
        call = e.replace(op=op, args=args) if changed else e
        return call.replace(struct_info=self.infer_call(call))

    def infer_call(self, call: Call) -> StructInfo:
        """The struct info of ``call`` (its arguments already normalized)."""
        op = call.op
        if isinstance(op, Op):
            opdef = get_op_def(op.name)
            if opdef.infer is None:
                raise IRTypeError(f"R.{op.name} has no struct-info inference", node=call,
                                  span=call.span)
            sinfo = opdef.infer(call, self.ctx)
            if not isinstance(sinfo, StructInfo):
                raise IRTypeError(f"R.{op.name}: inference returned {sinfo!r}, not struct info",
                                  node=call)
            return sinfo
        if isinstance(op, GlobalVar):
            fsinfo = self.ctx.func_sinfo(op)
            if fsinfo is None:
                raise IRTypeError(f"call of @{op.name_hint}, which is not a function of the "
                                  "module; add it first (BlockBuilder.add_func) or declare it "
                                  "(BlockBuilder.declare_function)", node=call, span=call.span)
            return derive_call_sinfo(call, fsinfo)
        if isinstance(op, ExternFunc):
            if not call.sinfo_args:
                return ObjectStructInfo()
            if len(call.sinfo_args) == 1:
                return call.sinfo_args[0]
            return TupleStructInfo(fields=tuple(call.sinfo_args))
        s = op.sinfo
        if isinstance(s, FuncStructInfo):
            return derive_call_sinfo(call, s)
        if isinstance(s, ObjectStructInfo):
            return call.sinfo_args[0] if call.sinfo_args else ObjectStructInfo()
        raise IRTypeError(f"{format_sinfo(s)} is not callable", node=call, span=call.span)

    def _If(self, e: If) -> Expr:
        cond = self.expr(e.cond)
        cs = cond.sinfo
        if not isinstance(cs, (PrimStructInfo, ObjectStructInfo)) and not (
                isinstance(cs, TensorStructInfo) and cs.ndim in (0, -1)):
            raise IRTypeError(f"the condition of an if must be a scalar, got "
                              f"{format_sinfo(cs)}", node=e, span=e.span)
        t, f = self.expr(e.true_branch), self.expr(e.false_branch)
        unchanged = cond is e.cond and t is e.true_branch and f is e.false_branch
        if e.struct_info is not None and unchanged:
            return e
        return e.replace(cond=cond, true_branch=t, false_branch=f,
                         struct_info=struct_info_lca(t.sinfo, f.sinfo))

    def _SeqExpr(self, e: SeqExpr) -> Expr:
        blocks = tuple(self.block(b) for b in e.blocks)
        body = self.expr(e.body)
        changed = body is not e.body or any(a is not b for a, b in zip(blocks, e.blocks))
        if e.struct_info is not None and not changed:
            return e
        return e.replace(blocks=blocks, body=body, struct_info=body.sinfo)

    def _Function(self, e: Function) -> Expr:
        params = tuple(self.expr(p) for p in e.params)
        body = self.expr(e.body)
        changed = body is not e.body or any(a is not b for a, b in zip(params, e.params))
        if e.struct_info is not None and not changed:
            return e
        fn = e.replace(params=params, body=body)
        return fn.replace(struct_info=FuncStructInfo(params=tuple(p.sinfo for p in params),
                                                     ret=fn.ret_struct_info,
                                                     purity=fn.is_pure))

    # -- bindings -----------------------------------------------------------------------
    def block(self, b: BindingBlock) -> BindingBlock:
        """A binding block with every value normalized and every variable typed."""
        bindings = tuple(self.binding(x) for x in b.bindings)
        if all(a is c for a, c in zip(bindings, b.bindings)):
            return b
        return b.replace(bindings=bindings)

    def binding(self, b: Binding) -> Binding:
        """A binding with its value normalized and its variable typed."""
        if isinstance(b, VarBinding):
            value = self.expr(b.value)
            var = b.var
            if var.struct_info is None:
                var = var.replace(struct_info=value.sinfo)
                self.remap[id(b.var)] = var
            return b.replace(var=var, value=value)
        if isinstance(b, MatchCast):
            value = self.expr(b.value)
            var = b.var
            if var.struct_info is None:
                var = var.replace(struct_info=b.struct_info)
                self.remap[id(b.var)] = var
            return b.replace(var=var, value=value)
        raise IRTypeError(f"unknown binding {type(b).__name__}", node=b)


def normalize(expr: Expr, mod: Any = None) -> Expr:
    """``expr`` with struct info filled in (calls of module functions look in ``mod``)."""
    return Normalizer(InferContext(module=mod)).expr(expr)


# ---------------------------------------------------------------------------------
# BlockBuilder
# ---------------------------------------------------------------------------------


class _NameTable:
    """Unique names in one function: ``lv``, ``lv1``, ``lv2``, ... (dots become
    underscores), the way TVM's builder names variables."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def reserve(self, name: str) -> None:
        self.counts.setdefault(name, 0)

    def unique(self, prefix: str) -> str:
        prefix = prefix.replace(".", "_")
        name = prefix
        if prefix in self.counts:
            while True:
                self.counts[prefix] += 1
                name = f"{prefix}{self.counts[prefix]}"
                if name not in self.counts:
                    break
        self.counts[name] = 0
        return name


class _FunctionFrame:
    def __init__(self, name: str, params: Sequence[Var] | None, attrs: dict | None,
                 pure: bool):
        self.name = name
        self.params = tuple(params) if params is not None else None
        self.attrs = dict(attrs or {})
        self.pure = pure
        self.blocks: list[BindingBlock] = []
        self.bindings: list[Binding] = []
        self.in_dataflow = False
        self.names = _NameTable()
        self.result: GlobalVar | None = None
        for p in self.params or ():
            self.names.reserve(p.name_hint)

    def flush(self, dataflow: bool) -> None:
        if self.bindings:
            cls = DataflowBlock if dataflow else BindingBlock
            self.blocks.append(cls(bindings=tuple(self.bindings)))
        self.bindings = []


class BlockBuilder:
    """Builds graph functions binding by binding, normalizing each expression (filling
    in struct info) as it is emitted, and collects them in an IRModule.

    >>> bb = BlockBuilder()
    >>> with bb.function("main", [x]):
    ...     with bb.dataflow():
    ...         y = bb.emit(ops.nn.relu(x))
    ...         gv = bb.emit_output(y)
    ...     bb.emit_func_output(gv)
    >>> mod = bb.get()
    """

    def __init__(self, mod: IRModule | None = None):
        self._mod = mod if mod is not None else IRModule()
        self._frames: list[_FunctionFrame] = []
        self._declared: dict[str, FuncStructInfo] = {}
        self._ctx = InferContext(builder=self)

    # -- scopes -------------------------------------------------------------------------
    @contextmanager
    def function(self, name: str, params: Sequence[Var] | None = None,
                 attrs: dict | None = None, pure: bool = True,
                 private: bool = False) -> Iterator[None]:
        """Open the scope of function ``name``; it must end with :meth:`emit_func_output`.
        ``params`` may instead be given to ``emit_func_output``. The function is public:
        its ``global_symbol`` attribute is ``name`` (unless ``attrs`` gives one), as for
        ``@R.function`` in text; ``private=True`` leaves the attribute out (a helper
        called only from inside the module, printed as ``@R.function(private=True)``)."""
        if params is not None:
            for p in params:
                if not isinstance(p, Var) or p.struct_info is None:
                    raise IRCError(f"function {name!r}: parameters must be Vars with struct "
                                   f"info, got {p!r}")
        attrs = dict(attrs or {})
        if not private:
            attrs.setdefault("global_symbol", name)
        frame = _FunctionFrame(name, params, attrs, pure)
        self._frames.append(frame)
        try:
            yield
        except BaseException:
            self._frames.pop()
            raise
        self._frames.pop()
        if frame.result is None:
            raise IRCError(f"function {name!r} was not finished: call "
                           "bb.emit_func_output(result) inside `with bb.function(...)`")

    @contextmanager
    def dataflow(self) -> Iterator[None]:
        """Open a dataflow block (``with R.dataflow():``): ``emit`` binds DataflowVars,
        visible only inside; ``emit_output`` binds the block's outputs."""
        frame = self._frame("dataflow()")
        if frame.in_dataflow:
            raise IRCError("dataflow blocks do not nest")
        frame.flush(dataflow=False)
        frame.in_dataflow = True
        try:
            yield
        finally:
            frame.flush(dataflow=True)
            frame.in_dataflow = False

    def _frame(self, what: str) -> _FunctionFrame:
        if not self._frames:
            raise IRCError(f"BlockBuilder.{what} needs an open function: use "
                           "`with bb.function(name, params):`")
        return self._frames[-1]

    # -- emitting -----------------------------------------------------------------------
    def normalize(self, expr: Expr) -> Expr:
        """``expr`` with struct info filled in recursively (calls of module functions are
        typed from the module)."""
        return Normalizer(self._ctx).expr(expr)

    def _new_var(self, frame: _FunctionFrame, sinfo: StructInfo, name_hint: str,
                 output: bool, span: Any = None) -> Var:
        default = "lv" if frame.in_dataflow and not output else "gv"
        name = frame.names.unique(name_hint or default)
        if frame.in_dataflow and not output:
            return DataflowVar(name_hint=name, struct_info=sinfo, span=span)
        return Var(name_hint=name, struct_info=sinfo, span=span)

    def emit(self, expr: Expr, name_hint: str = "") -> Var:
        """Bind ``expr`` (normalized) to a new variable: a DataflowVar inside ``dataflow()``
        (default names ``lv``, ``lv1``, ...), else a Var (``gv``, ...)."""
        frame = self._frame("emit")
        value = self.normalize(expr)
        var = self._new_var(frame, value.sinfo, name_hint, output=False, span=expr.span)
        frame.bindings.append(VarBinding(var=var, value=value))
        return var

    def emit_output(self, expr: Expr, name_hint: str = "") -> Var:
        """Bind ``expr`` to a Var visible after the dataflow block (``R.output``)."""
        frame = self._frame("emit_output")
        if not frame.in_dataflow:
            raise IRCError("emit_output is only meaningful inside `with bb.dataflow():`; use "
                           "emit outside dataflow blocks")
        value = self.normalize(expr)
        var = self._new_var(frame, value.sinfo, name_hint, output=True, span=expr.span)
        frame.bindings.append(VarBinding(var=var, value=value))
        return var

    def match_cast(self, expr: Expr, sinfo: StructInfo, name_hint: str = "") -> Var:
        """Bind ``R.match_cast(expr, sinfo)``: a variable of struct info ``sinfo``, checked
        at run time; symbolic variables in ``sinfo`` get their values from ``expr``."""
        frame = self._frame("match_cast")
        value = self.normalize(expr)
        if not may_match(value.sinfo, sinfo):
            raise IRTypeError(f"R.match_cast: a value of {format_sinfo(value.sinfo)} can never "
                              f"match {format_sinfo(sinfo)}", node=expr, span=expr.span)
        var = self._new_var(frame, sinfo, name_hint, output=False, span=expr.span)
        frame.bindings.append(MatchCast(var=var, value=value, struct_info=sinfo))
        return var

    def call_te(self, te_func: Callable[..., Any], *args: Any,
                primfunc_name_hint: str | None = None, **kwargs: Any) -> Expr:
        """``R.call_tir`` of a new PrimFunc computing ``te_func(*args, **kwargs)``, as
        TVM's ``bb.call_te``: the graph tensors among the arguments (also inside lists)
        become te placeholders named after them, ``te_func`` (a te function, e.g.
        one of ``irc.topi``) computes on them, and the PrimFunc of its result is added to
        the module as ``primfunc_name_hint`` (default: the function's name; a
        structurally equal function is reused). The call is returned, not bound."""
        if not callable(te_func):
            raise IRTypeError(f"BlockBuilder.call_te: te_func must be a function of te "
                              f"tensors, got {type(te_func).__name__}")
        name = primfunc_name_hint or getattr(te_func, "__name__", "") or "te_func"
        if not name.isidentifier():  # a lambda's "<lambda>"
            name = "te_func"
        made = te_call_tir(te_func, args, kwargs, name=name, add_func=self.add_func,
                           error=IRTypeError, what=f"BlockBuilder.call_te({name})",
                           name_params=True)
        return self.normalize(made.call())

    def emit_te(self, te_func: Callable[..., Any], *args: Any, name_hint: str = "",
                primfunc_name_hint: str | None = None, **kwargs: Any) -> Var:
        """Bind the ``R.call_tir`` of ``te_func(*args, **kwargs)`` (see :meth:`call_te`)
        to a new variable, as TVM's ``bb.emit_te``::

            with bb.function("main", [x]):
                y = bb.emit_te(topi.nn.relu, x)
                bb.emit_func_output(y)
        """
        self._frame("emit_te")
        return self.emit(self.call_te(te_func, *args, primfunc_name_hint=primfunc_name_hint,
                                      **kwargs), name_hint)

    def emit_func_output(self, output: Expr | Sequence[Expr],
                         params: Sequence[Var] | None = None) -> GlobalVar:
        """Finish the current function with result ``output`` (a sequence becomes a tuple)
        and add it to the module under its name. Returns its GlobalVar."""
        frame = self._frame("emit_func_output")
        if frame.in_dataflow:
            raise IRCError("emit_func_output must be called after the dataflow block ends "
                           "(outside `with bb.dataflow():`)")
        if frame.result is not None:
            raise IRCError(f"function {frame.name!r} already has its output")
        if params is not None:
            if frame.params is not None:
                raise IRCError(f"function {frame.name!r}: parameters given twice (to "
                               "function() and to emit_func_output())")
            frame.params = tuple(params)
            for p in frame.params:
                frame.names.reserve(p.name_hint)
        if frame.params is None:
            raise IRCError(f"function {frame.name!r} has no parameters: pass them to "
                           "bb.function(name, params) or emit_func_output(output, params)")
        if not isinstance(output, Expr):
            output = Tuple(fields=tuple(output))
        body_value = self.normalize(output)
        frame.flush(dataflow=False)
        body = SeqExpr(blocks=tuple(frame.blocks), body=body_value,
                       struct_info=body_value.sinfo)
        ret = body_value.sinfo
        func = Function(params=frame.params, body=body, ret_struct_info=ret,
                        is_pure=frame.pure, attrs=frame.attrs,
                        struct_info=FuncStructInfo(params=tuple(p.sinfo for p in frame.params),
                                                   ret=ret, purity=frame.pure))
        if frame.name in self._mod and frame.name not in self._declared:
            raise IRCError(f"the module already has a function named {frame.name!r}; use "
                           "update_func to replace it")
        gvar = GlobalVar(name_hint=frame.name)
        self._mod = self._mod.with_function(gvar, func)
        self._declared.pop(frame.name, None)
        frame.result = gvar
        return self._mod.get_global_var(frame.name)

    # -- module -------------------------------------------------------------------------
    def add_func(self, func: Any, name: str) -> GlobalVar:
        """Add a graph ``Function`` or a ``PrimFunc`` under ``name`` (made unique). A
        function structurally equal to one already in the module is not added twice:
        the existing GlobalVar is returned."""
        if isinstance(func, Function):
            func = self.normalize(func)
        elif not _is_prim_func(func):
            raise IRCError(f"add_func expects a graph Function or a PrimFunc, got "
                           f"{type(func).__name__}")
        if name in self._declared and name not in self._mod:
            final = name
            self._declared.pop(name)
        else:
            for gv, existing in self._mod.functions.items():
                if type(existing) is type(func) and structural_equal(existing, func):
                    return gv
            final = self._mod.unique_name(name)
        self._mod = self._mod.with_function(final, func)
        return self._mod.get_global_var(final)

    def update_func(self, gvar: GlobalVar, func: Any) -> None:
        """Replace the function ``gvar`` names."""
        if gvar.name_hint not in self._mod:
            raise IRCError(f"update_func: the module has no function @{gvar.name_hint}")
        if isinstance(func, Function):
            func = self.normalize(func)
        self._mod = self._mod.with_function(gvar, func)

    def declare_function(self, name: str, sinfo: FuncStructInfo) -> GlobalVar:
        """Announce function ``name`` with signature ``sinfo`` before adding it, so calls to
        it can be typed (mutual recursion, parsing a module in any order)."""
        if not isinstance(sinfo, FuncStructInfo):
            raise IRCError(f"declare_function({name!r}) needs a FuncStructInfo, got {sinfo!r}")
        self._declared[name] = sinfo
        return GlobalVar(name_hint=name)

    def get(self) -> IRModule:
        """The module built so far (functions still open are not in it)."""
        return self._mod

    def lookup(self, gvar: GlobalVar | str) -> Any:
        """The function named by ``gvar`` (or by a name)."""
        name = gvar if isinstance(gvar, str) else gvar.name_hint
        if name not in self._mod:
            raise IRCError(f"the module has no function @{name}")
        return self._mod[name]


def _is_prim_func(func: Any) -> bool:
    return isinstance(func, PrimFunc)


__all__ = ["BlockBuilder", "InferContext", "Normalizer", "normalize", "function_sinfo",
           "derive_call_sinfo"]

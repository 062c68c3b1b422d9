"""Well-formedness of graph IR: structural invariants every pass may rely on.

``well_formed(mod_or_func)`` raises :class:`IRWellFormedError` naming the function and
the offending node when:

- a variable is used where it is not defined (before its binding, outside the scope of
  the SeqExpr that binds it), or is bound twice (or is a parameter and bound again);
- a ``DataflowVar`` is bound outside a dataflow block, or used after its block ends (the
  value must be emitted as an output, a ``Var``, to leave the block);
- a dataflow block contains an ``If`` or an impure call;
- an expression has no struct info (it was never normalized), or recorded struct info
  contradicts what inference gives (a call's, a binding's variable's, a function's
  return), or a call is ill-typed;
- a symbolic shape variable is used without being defined by a parameter or a
  ``match_cast``;
- a ``GlobalVar`` names no function of the module.

"Contradicts" means neither struct info is a base of the other: an annotation may be
less precise than inference (``R.Tensor(ndim=2)`` for a (1, 256) tensor) or more precise
(a refinement checked at run time), but not incompatible.

Loop functions (``PrimFunc``) are checked by ``irc.tir.well_formed.check_prim_func``
when that module is available.
"""

from __future__ import annotations

from typing import Any

from ..core.diagnostics import IRCError, IRWellFormedError
from ..core.module import IRModule
from ..core.transform import PassInfo, PassInstrument
from ..tir.stmt import PrimFunc
from ..tir.well_formed import check_prim_func
from .block_builder import InferContext, Normalizer
from .expr import (
    Binding,
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
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
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from .op import get_op_def
from .struct_info import FuncStructInfo, StructInfo
from .struct_info_analysis import (
    expr_vars,
    format_sinfo,
    get_shape_vars,
    is_base_of,
)


def well_formed(obj: Any) -> None:
    """Check an IRModule, a graph Function or a PrimFunc; raise IRWellFormedError on the
    first violation (see the module docstring for the rules)."""
    if isinstance(obj, IRModule):
        for gvar, func in obj.functions.items():
            _check_any(func, obj, gvar.name_hint)
        return
    _check_any(obj, None, "<function>")


def is_well_formed(obj: Any) -> bool:
    """True when :func:`well_formed` finds nothing to report."""
    try:
        well_formed(obj)
    except IRWellFormedError:
        return False
    return True


def _check_any(func: Any, mod: IRModule | None, name: str) -> None:
    if isinstance(func, Function):
        _GraphChecker(mod, name).check_function(func)
        return
    if isinstance(func, PrimFunc):
        check_prim_func(func)
        return
    raise IRWellFormedError(f"@{name} is a {type(func).__name__}, not a graph Function or a "
                            "PrimFunc")


def _contradicts(recorded: StructInfo, inferred: StructInfo) -> bool:
    return not (is_base_of(recorded, inferred) or is_base_of(inferred, recorded))


class _GraphChecker:
    def __init__(self, mod: IRModule | None, name: str):
        self.mod = mod
        self.name = name
        self.ctx = InferContext(module=mod)
        self.scopes: list[set[int]] = []      # visible graph variables, innermost last
        self.dataflow: set[int] | None = None  # DataflowVars of the current dataflow block
        self.bound: set[int] = set()           # every variable bound so far
        self.shape_vars: set[int] = set()      # defined symbolic variables
        self.keep: list[Any] = []              # keep checked objects alive (ids stay unique)

    # -- reporting ----------------------------------------------------------------------
    def error(self, message: str, node: Any = None) -> IRWellFormedError:
        span = getattr(node, "span", None)
        return IRWellFormedError(f"in @{self.name}: {message}", node=node, span=span)

    # -- definitions ----------------------------------------------------------------------
    def define(self, var: Var, where: str) -> None:
        if id(var) in self.bound:
            raise self.error(f"variable {var.name_hint} is defined twice ({where})", var)
        self.bound.add(id(var))
        self.keep.append(var)
        self.scopes[-1].add(id(var))
        if isinstance(var, DataflowVar):
            if self.dataflow is None:
                raise self.error(f"DataflowVar {var.name_hint} is bound outside a dataflow "
                                 "block; bind a Var instead", var)
            self.dataflow.add(id(var))
        if var.struct_info is None:
            raise self.error(f"variable {var.name_hint} has no struct info", var)

    def define_shape_vars(self, sinfo: StructInfo) -> None:
        for v in get_shape_vars(sinfo):
            self.shape_vars.add(id(v))
            self.keep.append(v)

    def check_shape_vars(self, sinfo: StructInfo, node: Any, what: str) -> None:
        for v in get_shape_vars(sinfo):
            if id(v) not in self.shape_vars:
                raise self.error(f"symbolic variable {v.name} in {what} "
                                 f"({format_sinfo(sinfo)}) is not defined by a parameter or "
                                 "a match_cast", node)

    # -- functions ------------------------------------------------------------------------
    def check_function(self, func: Function) -> None:
        self.scopes.append(set())
        for p in func.params:
            if isinstance(p, DataflowVar):
                raise self.error(f"parameter {p.name_hint} is a DataflowVar", p)
            if p.struct_info is None:
                raise self.error(f"parameter {p.name_hint} has no struct info", p)
            self.define_shape_vars(p.struct_info)
        for p in func.params:
            self.define(p, "as a parameter")
        body_sinfo = self.expr(func.body)
        self.check_shape_vars(func.ret_struct_info, func, "the return type")
        if _contradicts(func.ret_struct_info, body_sinfo):
            raise self.error(f"the declared return {format_sinfo(func.ret_struct_info)} "
                             f"contradicts the body's {format_sinfo(body_sinfo)}", func)
        self.scopes.pop()

    # -- expressions ----------------------------------------------------------------------
    def expr(self, e: Expr) -> StructInfo:
        """Check ``e``; return its (recorded) struct info."""
        if isinstance(e, Var):
            self.use(e)
            return e.struct_info  # type: ignore[return-value]
        if isinstance(e, GlobalVar):
            self.check_global(e)
            return e.struct_info  # type: ignore[return-value]
        if isinstance(e, (Op, ExternFunc)):
            return e.struct_info  # type: ignore[return-value]
        if isinstance(e, Function):
            # A nested function value: its own parameter scope, same variable registry.
            saved = self.dataflow
            self.dataflow = None
            self.check_function(e)
            self.dataflow = saved
        elif isinstance(e, SeqExpr):
            self.scopes.append(set())
            for block in e.blocks:
                self.block(block)
            body = self.expr(e.body)
            self.scopes.pop()
            if e.struct_info is None:
                raise self.error("a SeqExpr has no struct info (not normalized)", e)
            return body
        elif isinstance(e, Call):
            self.call(e)
        elif isinstance(e, Tuple):
            for f in e.fields:
                self.expr(f)
        elif isinstance(e, TupleGetItem):
            self.expr(e.tuple_value)
        elif isinstance(e, If):
            if self.dataflow is not None:
                raise self.error("an If inside a dataflow block; move it out of "
                                 "`with R.dataflow():`", e)
            self.expr(e.cond)
            self.expr(e.true_branch)
            self.expr(e.false_branch)
        elif isinstance(e, ShapeExpr):
            self.check_prim_vars(e.values, e)
        elif isinstance(e, PrimValue):
            self.check_prim_vars((e.value,), e)
        if e.struct_info is None:
            raise self.error(f"a {type(e).__name__} has no struct info (not normalized); run "
                             "it through BlockBuilder.normalize", e)
        self.check_shape_vars(e.struct_info, e, f"the struct info of a {type(e).__name__}")
        return e.struct_info

    def check_prim_vars(self, values: Any, node: Any) -> None:
        for value in values:
            for v in expr_vars(value):
                if id(v) not in self.shape_vars:
                    raise self.error(f"symbolic variable {v.name} is used but not defined by a "
                                     "parameter or a match_cast", node)

    def use(self, var: Var) -> None:
        if any(id(var) in scope for scope in self.scopes):
            return
        if isinstance(var, DataflowVar) and id(var) in self.bound:
            raise self.error(f"DataflowVar {var.name_hint} is used outside its dataflow block; "
                             "emit it as an output (a Var) to use it after the block", var)
        if id(var) in self.bound:
            raise self.error(f"variable {var.name_hint} is used outside the scope that "
                             "binds it", var)
        raise self.error(f"variable {var.name_hint} is used but never defined (or used "
                         "before its binding)", var)

    def check_global(self, gvar: GlobalVar) -> None:
        if self.mod is not None and gvar.name_hint not in self.mod:
            raise self.error(f"@{gvar.name_hint} names no function of the module", gvar)

    def call(self, call: Call) -> None:
        op = call.op
        if isinstance(op, GlobalVar):
            self.check_global(op)
        elif not isinstance(op, (Op, ExternFunc)):
            self.expr(op)
        for a in call.args:
            self.expr(a)
        if self.dataflow is not None and not self.is_pure(call):
            raise self.error("an impure call inside a dataflow block; move it out of "
                             "`with R.dataflow():`", call)
        if call.struct_info is None:
            return  # reported by expr()
        if isinstance(op, GlobalVar) and self.mod is None:
            return  # a lone function: the callee is unknown
        try:
            inferred = Normalizer(self.ctx).infer_call(call)
        except IRCError as err:
            raise self.error(f"ill-typed call: {err.message}", call) from None
        if _contradicts(call.struct_info, inferred):
            raise self.error(f"the call's recorded struct info "
                             f"{format_sinfo(call.struct_info)} contradicts the inferred "
                             f"{format_sinfo(inferred)}", call)

    def is_pure(self, call: Call) -> bool:
        op = call.op
        if isinstance(op, Op):
            return get_op_def(op.name).pure
        if isinstance(op, GlobalVar):
            fs = self.ctx.func_sinfo(op)
            return fs is None or fs.purity
        s = op.struct_info
        return not isinstance(s, FuncStructInfo) or s.purity

    # -- bindings -------------------------------------------------------------------------
    def block(self, block: BindingBlock) -> None:
        dataflow = isinstance(block, DataflowBlock)
        if dataflow:
            self.dataflow = set()
        for b in block.bindings:
            self.binding(b)
        if dataflow:
            # DataflowVars go out of scope when their block ends.
            assert self.dataflow is not None
            for scope in self.scopes:
                scope.difference_update(self.dataflow)
            self.dataflow = None

    def binding(self, b: Binding) -> None:
        if isinstance(b, VarBinding):
            value_sinfo = self.expr(b.value)
            self.define(b.var, "by a second binding")
            self.check_shape_vars(b.var.struct_info, b.var, f"the type of {b.var.name_hint}")
            if _contradicts(b.var.struct_info, value_sinfo):
                raise self.error(f"{b.var.name_hint} is annotated "
                                 f"{format_sinfo(b.var.struct_info)} but its value is "
                                 f"{format_sinfo(value_sinfo)}", b.var)
        elif isinstance(b, MatchCast):
            self.expr(b.value)
            self.define_shape_vars(b.struct_info)
            self.define(b.var, "by a second binding")
        else:
            raise self.error(f"unknown binding {type(b).__name__}", b)


__all__ = ["well_formed", "is_well_formed"]


class WellFormedInstrument(PassInstrument):
    """Checks well-formedness (graph and loop functions) after every pass and names the
    pass that broke it."""

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        try:
            well_formed(mod)
        except IRCError as err:
            raise type(err)(f"after pass {info.name}: {err.message}", span=err.span,
                            node=err.node) from err

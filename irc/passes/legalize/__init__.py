"""LegalizeOps: graph operator calls become ``R.call_tir`` of loop functions.

Algorithm: every call of a registered operator inside a graph function is replaced by the
operator's legalization rule (``rules.py``: a te computation from ``irc.topi``), which adds
a block-form PrimFunc to the module (structurally equal PrimFuncs are shared) and returns
the ``call_tir``. Arguments are legalized before the call that uses them.

Preconditions: the module is normalized (every expression has struct info).
Postconditions: the module is normalized (a rule's result that nests calls, such as
batch_norm's tuple, is bound to fresh variables); graph functions call only
``call_tir``/``call_dps_packed``/``call_pure_packed``/``shape_of`` and other functions;
variables keep their names and struct info. An operator without a rule raises
``LegalizeError`` naming the operator, the function and the binding that uses it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ...core.diagnostics import IRCError, LegalizeError
from ...core.functor import Mutator
from ...core.module import IRModule
from ...core.transform import Pass, PassContext
from ...ir.expr import Call, Expr, Function, Op, Tuple, VarBinding
from ...ir.op import get_op_def
from ...ir.ops.call import VM_NATIVE
from ..normalize import normalize_function
from . import (  # they register rules
    rules_image,
    rules_index,
    rules_nd,
    rules_quant,
    rules_selection,
)
from .context import LegalizeContext
from .rules import RULES, register_all


class _Legalizer(Mutator):
    def __init__(self, ctx: LegalizeContext, func_name: str,
                 custom: dict[str, Callable[[LegalizeContext, Call], Expr]]):
        super().__init__()
        self.ctx = ctx
        self.func_name = func_name
        self.custom = custom
        self.binding = ""
        # Set when a rule's result nests calls: the function is normalized afterwards.
        self.nested = False

    def visit_VarBinding(self, b: VarBinding) -> VarBinding:
        self.binding = b.var.name_hint
        return self.generic_visit(b)

    def visit_Function(self, f: Function) -> Function:
        return self.generic_visit(f)

    def visit_Call(self, call: Call) -> Expr:
        call = self.generic_visit(call)
        if not isinstance(call.op, Op) or call.op.name in VM_NATIVE:
            return call
        name = call.op.name
        rule = self.custom.get(name) or get_op_def(name).legalize
        where = f"in function {self.func_name}" + (f", binding {self.binding}"
                                                   if self.binding else "")
        if rule is None:
            raise LegalizeError(f"operator R.{name} has no legalization ({where})",
                                span=call.span, node=call,
                                hint="dispatch it to a library first, or add a rule with "
                                     "LegalizeOps(customize_legalize_map={...})")
        self.ctx.where = (f"binding {self.binding} of {self.func_name}" if self.binding
                          else f"function {self.func_name}")
        try:
            out = rule(self.ctx, call)
        except LegalizeError:
            raise
        except IRCError as err:
            raise LegalizeError(f"cannot legalize R.{name} ({where}): {err.message}",
                                span=call.span or err.span, node=call) from err
        if not self.nested and _nests_calls(out):
            self.nested = True
        return out


def _nests_calls(e: Expr) -> bool:
    """True when ``e`` (a rule's result) is not one call of leaf arguments: a tuple of
    calls (batch_norm's result and statistics), or a call with a call among its
    arguments. Such a result is bound to fresh variables afterwards (A-normal form)."""
    if not isinstance(e, Call):
        return True
    stack = list(e.args)
    while stack:
        a = stack.pop()
        if isinstance(a, Call):
            return True
        if isinstance(a, Tuple):
            stack.extend(a.fields)
    return False


@dataclass(frozen=True)
class LegalizeOps(Pass):
    """Replace graph operators by ``call_tir`` of generated loop functions.

    ``customize_legalize_map`` maps operator names to rules ``(ctx, call) -> Expr`` that
    take precedence over the built-in ones.
    """

    # Dicts are options, compared but not hashed (a frozen dataclass hashes its fields).
    customize_legalize_map: dict[str, Any] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        custom = self.customize_legalize_map
        if custom is not None and not isinstance(custom, dict):
            raise IRCError("LegalizeOps: customize_legalize_map must be a dict of operator "
                           f"name to rule, got {type(custom).__name__}")
        for name, rule in (custom or {}).items():
            if not callable(rule):
                raise IRCError(f"LegalizeOps: the rule for {name!r} is a "
                               f"{type(rule).__name__}; a rule is a function (ctx, call) -> "
                               "Expr")
        if custom is not None:  # a copy: changing the caller's dict later changes nothing
            object.__setattr__(self, "customize_legalize_map", dict(custom))

    @property
    def custom(self) -> dict[str, Any]:
        """The user's rules by operator name."""
        return self.customize_legalize_map or {}

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        register_all()
        lctx = LegalizeContext(mod)
        funcs: dict[Any, Any] = {}
        nested = []
        for gv, f in mod.functions.items():
            if isinstance(f, Function):
                legalizer = _Legalizer(lctx, gv.name_hint, self.custom)
                funcs[gv] = legalizer.visit(f)
                if legalizer.nested:
                    nested.append(gv)
            else:
                funcs[gv] = f
        out = lctx.result_module(funcs)
        if not nested:
            return out
        # Keep the module in A-normal form (what the passes after this one expect).
        redo = {id(out[gv]) for gv in nested}
        return out.map_functions(lambda f: normalize_function(f, out), Function,
                                 where=lambda f: id(f) in redo)


__all__ = ["LegalizeContext", "LegalizeOps", "RULES", "VM_NATIVE"]

"""RunCodegen: compile the functions that ``FuseOpsByPattern(annotate_codegen=True)``
marked for a library backend, and call the results by name.

Algorithm: the graph functions with attribute ``Codegen`` are grouped by backend; each
backend's code generator (:func:`irc.dispatch.codegen.get_codegen`) turns its group into
one :class:`~irc.runtime.external.ExternalModule` that provides every function under its
``global_symbol``. Each call of such a function becomes ``R.call_dps_packed("<symbol>",
(args...), out_sinfo=<its result>)``; the functions leave the module, and the modules are
appended to the module attribute ``external_mods`` (printed as
``metadata["runtime.Module"][i]``), which ``irc.compile`` puts into the executable.

Preconditions: codegen functions return one tensor; their backends run on the device of
the current target, if one is current (:func:`irc.dispatch.codegen.check_backend_target`).
Postconditions: no call of a codegen function is left; the program computes the same
values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.diagnostics import IRCError
from ..core.functor import Mutator
from ..core.module import IRModule
from ..core.target import Target
from ..core.transform import Pass, PassContext
from ..dispatch.codegen import check_backend_target, get_codegen
from ..ir.expr import Call, ExternFunc, Function, GlobalVar, Tuple
from ..ir.ops.call import call_dps_packed
from ..ir.struct_info import TensorStructInfo, TupleStructInfo


class _CallRewriter(Mutator):
    def __init__(self, symbols: dict[str, str]):
        super().__init__()
        self.symbols = symbols

    def visit_Call(self, e: Call) -> Any:
        e = self.generic_visit(e)
        if isinstance(e.op, GlobalVar) and e.op.name_hint in self.symbols:
            args = Tuple(fields=tuple(e.args),
                         struct_info=TupleStructInfo(fields=tuple(a.struct_info
                                                                  for a in e.args)))
            call = call_dps_packed(ExternFunc(global_symbol=self.symbols[e.op.name_hint]),
                                   args, out_sinfo=e.struct_info)
            return call.replace(struct_info=e.struct_info)
        return e


@dataclass(frozen=True)
class RunCodegen(Pass):
    """Turn codegen functions into library modules and their calls into packed calls
    (see the module docstring)."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        groups: dict[str, list[tuple[str, Function]]] = {}
        symbols: dict[str, str] = {}
        for gv, f in mod.functions.items():
            if not isinstance(f, Function) or "Codegen" not in f.attrs:
                continue
            if not isinstance(f.ret_struct_info, TensorStructInfo):
                raise IRCError(f"RunCodegen: {gv.name_hint} returns "
                               f"{f.ret_struct_info}; a library function returns one tensor")
            symbol = str(f.attrs.get("global_symbol") or gv.name_hint)
            symbols[gv.name_hint] = symbol
            groups.setdefault(str(f.attrs["Codegen"]), []).append((symbol, f))
        if not groups:
            return mod
        target = Target.current(allow_none=True)
        if target is not None:
            for backend in groups:
                check_backend_target(backend, target, "RunCodegen")
        modules = [get_codegen(backend)(funcs) for backend, funcs in groups.items()]
        rewriter = _CallRewriter(symbols)
        funcs = {}
        for gv, f in mod.functions.items():
            if gv.name_hint in symbols:
                continue
            funcs[gv] = rewriter.visit(f) if isinstance(f, Function) else f
        external = list(mod.attrs.get("external_mods", ())) + modules
        return IRModule(functions=funcs, attrs={**mod.attrs, "external_mods": external})

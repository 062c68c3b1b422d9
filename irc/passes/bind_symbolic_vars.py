"""BindSymbolicVars: give symbolic dimensions of a graph function constant values.

Algorithm: the symbolic variables that the parameters of function ``func_name`` define
(``n`` in ``x: R.Tensor((n, 4))``) and that ``values`` names are replaced by those
integers everywhere in the function — parameter and binding struct info, shape values,
prim values — and the function is normalized again, so shapes computed from them fold
(``n * 2`` becomes ``16``). This specializes a model to one size before building or
tuning it (``irc tune --shape n=8``).

Preconditions: the function exists; every name in ``values`` is a symbolic dimension its
parameters define, and every value is a positive integer (else ``IRTypeError`` naming
the name and listing the dimensions there are).
Postconditions: the named variables no longer occur in the function; its parameters keep
their names and order.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from ..core.diagnostics import IRTypeError
from ..core.functor import Mutator
from ..core.module import IRModule
from ..core.transform import Pass, PassContext
from ..ir.block_builder import normalize
from ..ir.expr import Function
from ..ir.struct_info_analysis import get_defining_shape_vars
from ..tir import expr as E
from ..tir.arith import Analyzer


class _Substitute(Mutator):
    def __init__(self, values: dict[int, E.IntImm]):
        super().__init__()
        self.values = values
        self.analyzer = Analyzer()

    def visit_Var(self, v: Any) -> Any:
        if id(v) in self.values:
            return self.values[id(v)]
        return self.generic_visit(v)

    def visit_PrimExpr(self, e: E.PrimExpr) -> E.PrimExpr:
        new = self.generic_visit(e)
        return e if new is e else self.analyzer.simplify(new)  # n * m -> 6


def parameter_shape_vars(func: Function) -> list[E.Var]:
    """The symbolic dimensions the parameters of ``func`` define, in order."""
    out: dict[int, E.Var] = {}
    for p in func.params:
        for v in get_defining_shape_vars(p.struct_info):
            out.setdefault(id(v), v)
    return list(out.values())


@dataclass(frozen=True)
class BindSymbolicVars(Pass):
    """Replace the symbolic dimensions of ``func_name`` named in ``values`` by those
    integers (see the module docstring)."""

    func_name: str
    values: dict[str, int] = field(hash=False)

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        func = mod[self.func_name]
        if not isinstance(func, Function):
            raise IRTypeError(f"BindSymbolicVars: {self.func_name} is not a graph function")
        by_name = {v.name: v for v in parameter_shape_vars(func)}
        unknown = [n for n in self.values if n not in by_name]
        if unknown:
            lower = {n.lower(): n for n in by_name}
            close = sorted({lower[m] for n in unknown
                            for m in difflib.get_close_matches(n.lower(), list(lower))})
            raise IRTypeError(
                f"{', '.join(unknown)}: {self.func_name} has no symbolic dimension of "
                f"{'this name' if len(unknown) == 1 else 'these names'}; its parameters have "
                f"{', '.join(by_name) or 'none'}"
                + (f" (did you mean {', '.join(close)}?)" if close else ""))
        subst: dict[int, E.IntImm] = {}
        for name, value in self.values.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise IRTypeError(f"BindSymbolicVars: dimension {name} must be a positive "
                                  f"integer, got {value!r}")
            var = by_name[name]
            subst[id(var)] = E.IntImm(dtype=var.dtype, value=value)
        if not subst:
            return mod
        new = _Substitute(subst).visit(func)
        new = normalize(new.replace(struct_info=None), mod)
        return mod.with_function(self.func_name, new)

"""A te computation over graph values as the ``R.call_tir`` of a new PrimFunc: what
``BlockBuilder.call_te`` / ``emit_te`` and the legalization of operators
(``irc.passes.LegalizeOps``) share.

:func:`te_call_tir` replaces every tensor argument (a graph expression with tensor
struct info, or a list of them) by a ``te.placeholder`` of the same shape and dtype,
runs ``fcompute`` (a te function, such as those of ``irc.topi``) on them, makes a
block-form PrimFunc of the result with int64 indices and hands it to ``add_func``, which
puts it into the module. Shape variables of the graph that the computation reads but no
parameter's dimension binds (a fill value ``n``, a length ``max(n, 0)``) become scalar
parameters of the PrimFunc, passed as the call's ``tir_vars``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..core.diagnostics import IRCError
from ..tir import te
from ..tir.analysis.var_use import undefined_vars
from ..tir.expr import IntImm, cast
from ..tir.stmt import PrimFunc
from .expr import Expr, GlobalVar, ShapeExpr, Var
from .ops import call_tir
from .struct_info import TensorStructInfo


@dataclass(frozen=True)
class TeCall:
    """The parts of the ``R.call_tir`` :func:`te_call_tir` makes: the PrimFunc's
    ``gvar``, the graph tensors passed (``args``), ``out_sinfo`` (one tensor struct info,
    or a list for a computation with several outputs) and ``tir_vars`` (None when the
    PrimFunc takes no scalar parameters)."""

    gvar: GlobalVar
    args: list[Expr]
    out_sinfo: Any
    tir_vars: ShapeExpr | None

    def call(self) -> Expr:
        """The ``R.call_tir`` expression (not normalized)."""
        return call_tir(self.gvar, self.args, self.out_sinfo, self.tir_vars)


def te_call_tir(fcompute: Callable[..., Any], args: tuple | list, kwargs: dict[str, Any], *,
                name: str, add_func: Callable[[PrimFunc, str], GlobalVar],
                error: type[IRCError], what: str, name_params: bool = False) -> TeCall:
    """Run ``fcompute(*args, **kwargs)`` on te placeholders standing for the graph
    tensors among the arguments and turn the result into a PrimFunc added by
    ``add_func(func, name)`` (see the module docstring). A graph argument that is not a
    tensor of known shape and dtype is an ``error`` whose message starts with ``what``.
    With ``name_params`` a placeholder standing for a ``Var`` takes its name."""
    inputs: list[Expr] = []
    placeholders: list[Any] = []

    def to_te(a: Any) -> Any:
        if isinstance(a, Expr):
            sinfo = a.struct_info
            if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None \
                    or not sinfo.dtype:
                raise error(f"{what}: an operand has struct info {sinfo!r}; a tensor of "
                            "known shape and dtype is needed", node=a)
            ph_name = a.name_hint if name_params and isinstance(a, Var) \
                else f"p{len(placeholders)}"
            ph = te.placeholder(sinfo.shape, sinfo.dtype, name=ph_name)
            inputs.append(a)
            placeholders.append(ph)
            return ph
        if isinstance(a, (list, tuple)):
            return type(a)(to_te(x) for x in a)
        return a

    te_args = [to_te(a) for a in args]
    te_kwargs = {k: to_te(v) for k, v in kwargs.items()}
    out = fcompute(*te_args, **te_kwargs)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    if not outs or not all(isinstance(o, te.Tensor) for o in outs):
        raise error(f"{what}: the te function returned {out!r}; it must return a te tensor "
                    "(te.compute, a topi function) or a list of them")
    func = te.create_prim_func(placeholders + outs, index_dtype_override="int64")
    free = undefined_vars(func)
    if free:
        func = te.create_prim_func(placeholders + outs + free, index_dtype_override="int64")
    # The module names the function; the VM gives it its symbol when it is compiled.
    func = func.replace(attrs={k: v for k, v in func.attrs.items() if k != "global_symbol"})
    gvar = add_func(func, name)
    sinfos = [TensorStructInfo(shape=tuple(_as_int64(s) for s in o.shape), dtype=o.dtype)
              for o in outs]
    out_sinfo: Any = sinfos if isinstance(out, (list, tuple)) else sinfos[0]
    return TeCall(gvar, inputs, out_sinfo, ShapeExpr(values=tuple(free)) if free else None)


def _as_int64(e: Any) -> Any:
    if isinstance(e, IntImm):
        return IntImm(dtype="int64", value=e.value)
    return cast(e, "int64")

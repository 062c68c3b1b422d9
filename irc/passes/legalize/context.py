"""Turning a te computation over graph values into a ``call_tir`` of a new PrimFunc.

``LegalizeContext.call_te(fcompute, *args, name=..., **kwargs)`` replaces every tensor
argument (a graph expression with tensor struct info, or a list of them) by a
``te.placeholder`` of the same shape and dtype, runs ``fcompute`` (usually an
``irc.topi`` function), makes a block-form PrimFunc of the result with int64 indices,
adds it to the module (a structurally equal function is reused) and returns
``R.call_tir(func, args, out_sinfo)``. A network repeats the same operator on the same
shapes many times: a call with the same ``fcompute`` and arguments that are all
static-shape tensors and plain Python values reuses the function made the first time
without building it again.
"""

from __future__ import annotations

from typing import Any, Callable

from ...core.diagnostics import LegalizeError
from ...core.module import IRModule
from ...core.structural import structural_hash_hex
from ...ir.block_builder import normalize
from ...ir.expr import Expr, GlobalVar, ShapeExpr
from ...ir.ops import call_tir
from ...ir.struct_info import TensorStructInfo
from ...tir import te
from ...tir.analysis.var_use import undefined_vars
from ...tir.expr import FloatImm, IntImm, cast
from ...tir.stmt import PrimFunc


class LegalizeContext:
    """Collects the PrimFuncs created while legalizing one module."""

    def __init__(self, mod: IRModule):
        self.mod = mod
        self.new_funcs: dict[str, PrimFunc] = {}
        self._by_hash: dict[str, GlobalVar] = {}
        self._names = set(mod.names())
        self._gvars: dict[str, GlobalVar] = {}
        # call_te results by (fcompute, name, argument key): (function, output struct info)
        self._memo: dict[tuple, tuple[GlobalVar, Any]] = {}
        for gv, f in mod.functions.items():
            if isinstance(f, PrimFunc):
                self._by_hash.setdefault(structural_hash_hex(f), gv)

    def _unique(self, base: str) -> str:
        base = base.replace(".", "_") or "func"
        name, i = base, 0
        while name in self._names:
            i += 1
            name = f"{base}{i}"
        self._names.add(name)
        return name

    def add_prim_func(self, func: PrimFunc, name: str) -> GlobalVar:
        """Add ``func`` under a unique name derived from ``name`` (or reuse an equal one)."""
        key = structural_hash_hex(func)
        gv = self._by_hash.get(key)
        if gv is not None:
            return gv
        gv = GlobalVar(name_hint=self._unique(name))
        self._by_hash[key] = gv
        self.new_funcs[gv.name_hint] = func
        self._gvars[gv.name_hint] = gv
        return gv

    def result_module(self, graph_funcs: dict[Any, Any]) -> IRModule:
        funcs = dict(graph_funcs)
        for name, f in self.new_funcs.items():
            funcs[self._gvars[name]] = f
        return IRModule(functions=funcs, attrs=self.mod.attrs)

    def call_te(self, fcompute: Callable[..., Any], *args: Any, name: str,
                **kwargs: Any) -> Expr:
        """``R.call_tir`` of the PrimFunc computing ``fcompute(*args, **kwargs)``."""
        try:
            # The key holds fcompute itself: a closure made per call never hits, and its
            # id cannot be reused by another while the key lives.
            memo_key: tuple | None = (fcompute, name, _static_key(args),
                                      _static_key(list(kwargs.items())))
        except _NotStatic:
            memo_key = None
        if memo_key is not None and memo_key in self._memo:
            gv, out_sinfo = self._memo[memo_key]
            return normalize(call_tir(
                gv, _tensor_args(args) + _tensor_args(list(kwargs.values())), out_sinfo))
        inputs: list[Expr] = []
        placeholders: list[Any] = []

        def to_te(a: Any) -> Any:
            if isinstance(a, Expr):
                sinfo = a.struct_info
                if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None \
                        or not sinfo.dtype:
                    raise LegalizeError(f"cannot legalize {name}: an operand has struct info "
                                        f"{sinfo!r}; a tensor of known shape and dtype is "
                                        "needed", node=a)
                ph = te.placeholder(sinfo.shape, sinfo.dtype, name=f"p{len(placeholders)}")
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
        func = te.create_prim_func(placeholders + outs, index_dtype_override="int64")
        # Shape variables of the graph that the computation reads but no parameter's
        # dimension binds (a fill value ``n``, a length ``max(n, 0)``) become scalar
        # parameters, passed as ``tir_vars``.
        free = undefined_vars(func)
        if free:
            func = te.create_prim_func(placeholders + outs + free,
                                       index_dtype_override="int64")
        func = func.replace(attrs={k: v for k, v in func.attrs.items()
                                   if k != "global_symbol"})
        gv = self.add_prim_func(func, name)
        sinfos = [TensorStructInfo(shape=tuple(_as_int64(s) for s in o.shape), dtype=o.dtype)
                  for o in outs]
        out_sinfo: Any = sinfos if isinstance(out, (list, tuple)) else sinfos[0]
        tir_vars = ShapeExpr(values=tuple(free)) if free else None
        if memo_key is not None and not free:
            self._memo[memo_key] = (gv, out_sinfo)
        return normalize(call_tir(gv, inputs, out_sinfo, tir_vars))


class _NotStatic(Exception):
    """An argument that does not key a call_te memo (a symbolic shape, an expression)."""


def _static_key(a: Any) -> Any:
    """A hashable key of a call_te argument, the same for arguments that give the same
    PrimFunc: tensors by static shape and dtype, plain values by type and value (in the
    order call_te visits them); :class:`_NotStatic` for anything else."""
    if isinstance(a, Expr):
        sinfo = a.struct_info
        if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None or not sinfo.dtype:
            raise _NotStatic
        dims = []
        for d in sinfo.shape:
            if isinstance(d, IntImm):
                dims.append((d.dtype, d.value))
            elif isinstance(d, int) and not isinstance(d, bool):
                dims.append(("int", d))
            else:
                raise _NotStatic
        return ("tensor", tuple(dims), sinfo.dtype)
    if isinstance(a, (list, tuple)):
        return (type(a).__name__, tuple(_static_key(x) for x in a))
    if a is None or isinstance(a, (bool, int, float, str)):
        return (type(a).__name__, a)
    if isinstance(a, (IntImm, FloatImm)):  # a constant of the loop IR (a static dimension)
        return (type(a).__name__, a.dtype, a.value)
    raise _NotStatic


def _tensor_args(args: Any) -> list[Expr]:
    """The graph expressions among ``args``, in the order call_te turns them into
    placeholders (the call's arguments)."""
    out: list[Expr] = []
    for a in args:
        if isinstance(a, Expr):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out.extend(_tensor_args(a))
    return out


def _as_int64(e: Any) -> Any:
    if isinstance(e, IntImm):
        return IntImm(dtype="int64", value=e.value)
    return cast(e, "int64")

"""Turning a te computation over graph values into a ``call_tir`` of a new PrimFunc.

``LegalizeContext.call_te(fcompute, *args, name=..., **kwargs)`` replaces every tensor
argument (a graph expression with tensor struct info, or a list of them) by a
``te.placeholder`` of the same shape and dtype, runs ``fcompute`` (usually an
``irc.topi`` function), makes a block-form PrimFunc of the result with int64 indices,
adds it to the module (a structurally equal function is reused) and returns
``R.call_tir(func, args, out_sinfo)`` (:func:`irc.ir.te_call.te_call_tir`, which
``BlockBuilder.emit_te`` shares). A network repeats the same operator on the same
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
from ...ir.expr import Expr, GlobalVar
from ...ir.ops import call_tir
from ...ir.struct_info import TensorStructInfo
from ...ir.te_call import te_call_tir
from ...tir.expr import FloatImm, IntImm
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
        # Where the call being legalized is ("binding y of main"): run-time checks name it.
        self.where = ""
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
        made = te_call_tir(fcompute, args, kwargs, name=name, add_func=self.add_prim_func,
                           error=LegalizeError, what=f"cannot legalize {name}")
        if memo_key is not None and made.tir_vars is None:
            self._memo[memo_key] = (made.gvar, made.out_sinfo)
        return normalize(made.call())


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

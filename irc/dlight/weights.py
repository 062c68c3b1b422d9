"""Constant weights packed once, at compile time, into the layout a default schedule
walks them in.

A parameter of a loop function that every ``call_tir`` of it passes a constant (a bound
weight) is *layout-free*: the schedule may choose its layout, since the caller's array
can be repacked before the program runs. :func:`layout_free_params` finds them;
``ApplyDefaultSchedule`` lists them in the function attribute ``dlight.pack_weights``
while the rules run, and the CPU ``Matmul`` rule rewrites such a weight into the order
its micro-kernel reads it (``Schedule.layout_rewrite``: panels of the output tile's
width, contiguous along the reduction), which turns the kernel's weight stream into
sequential loads. :func:`pack_call_sites` then packs each call site's constant with
``pack_weight`` — once, while compiling — and the scheduled function takes the packed
array. The attributes are dropped afterwards: the function's parameters simply have the
packed shape.

The attribute is the pass's own, not the tuner's ``layout_free_buffers`` (seed 002's
``layout_free_placeholders``): a loop function built with layout-free placeholders and
scheduled by the default rules for ``irc.build`` keeps the layouts its caller passes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.diagnostics import BuildError
from ..core.functor import Mutator, Visitor
from ..core.module import IRModule
from ..ir.expr import Call, Constant, Function, GlobalVar, Op, Tuple, Var
from ..ir.struct_info import TupleStructInfo
from ..tir.schedule import layout_rewrites, pack_weight
from ..tir.stmt import PrimFunc

PACK_WEIGHTS = "dlight.pack_weights"
LAYOUT_FREE = "layout_free_buffers"
LAYOUT_REWRITE = "layout_rewrite"


def _is_call_tir(c: Call) -> bool:
    return isinstance(c.op, Op) and c.op.name == "call_tir" and bool(c.args) \
        and isinstance(c.args[0], GlobalVar)


def call_inputs(call: Call) -> list[Any]:
    """The input expressions of a ``call_tir``."""
    args = call.args[1] if len(call.args) > 1 else Tuple(fields=())
    return list(args.fields) if isinstance(args, Tuple) else [args]


def layout_free_params(mod: IRModule) -> dict[str, list[int]]:
    """For each loop function called from the module's graph functions: the positions
    of the parameters that every call site passes a constant (by function name). A
    function referred to other than as the callee of a ``call_tir`` gets none."""
    sites: dict[str, list[list[bool]]] = {}
    refs: dict[str, int] = {}

    class _Find(Visitor):
        def visit_Call(self, c: Call) -> None:
            if _is_call_tir(c):
                sites.setdefault(c.args[0].name_hint, []).append(
                    [isinstance(a, Constant) for a in call_inputs(c)])
            self.generic_visit(c)

        def visit_GlobalVar(self, gv: GlobalVar) -> None:
            refs[gv.name_hint] = refs.get(gv.name_hint, 0) + 1

        def visit_Var(self, v: Var) -> None:
            return None  # (a use: its struct info holds no call, and may be large)

    for f in mod.functions.values():
        if isinstance(f, Function):
            _Find().visit(f)
    out = {}
    for name, calls in sites.items():
        if refs.get(name, 0) != len(calls):
            continue
        n = min(len(c) for c in calls)
        free = [k for k in range(n) if all(c[k] for c in calls)]
        if free:
            out[name] = free
    return out


def mark_packable(func: PrimFunc, params: list[int]) -> PrimFunc:
    """``func`` with ``params`` listed as weights the rules may repack (and as
    layout-free, which ``Schedule.layout_rewrite`` requires)."""
    if not params:
        return func
    free = list(func.attrs.get(LAYOUT_FREE, ()) or ())
    return func.with_attr(PACK_WEIGHTS, list(params)).with_attr(
        LAYOUT_FREE, sorted(set(free) | set(params)))


def packable_params(func: PrimFunc) -> set[int]:
    """The parameters a rule may repack (see the module docstring)."""
    return set(func.attrs.get(PACK_WEIGHTS, ()) or ())


def without_pack_attrs(func: PrimFunc, original: PrimFunc) -> PrimFunc:
    """Scheduled ``func`` (made from ``original`` marked by :func:`mark_packable`)
    without the packing attributes, its layout-free list as ``original`` had it (once
    its call sites hold packed constants)."""
    if PACK_WEIGHTS not in func.attrs:
        return func
    attrs = {k: v for k, v in func.attrs.items()
             if k not in (PACK_WEIGHTS, LAYOUT_REWRITE, LAYOUT_FREE)}
    if LAYOUT_FREE in original.attrs:
        attrs[LAYOUT_FREE] = original.attrs[LAYOUT_FREE]
    return func.replace(attrs=attrs)


def pack_call_sites(mod: IRModule, rewritten: dict[str, PrimFunc]) -> IRModule:
    """``mod`` with the constant arguments of every ``call_tir`` of a function in
    ``rewritten`` (by name; scheduled functions with layout rewrites) packed into the
    layouts the function expects. Every rewritten parameter must receive a constant at
    every call site (what :func:`layout_free_params` guarantees)."""
    if not rewritten:
        return mod
    plans = {name: layout_rewrites(f) for name, f in rewritten.items()}
    packed_cache: dict[tuple[int, str, int], Constant] = {}

    class _Pack(Mutator):
        def visit_Call(self, c: Call) -> Any:
            c = self.generic_visit(c)
            if not _is_call_tir(c) or c.args[0].name_hint not in plans:
                return c
            name = c.args[0].name_hint
            func = rewritten[name]
            inputs = call_inputs(c)
            for rw in plans[name]:
                arg = inputs[rw.param]
                if not isinstance(arg, Constant):
                    raise BuildError(f"{name}: its parameter {rw.param} has a packed layout "
                                     f"but a call passes a {type(arg).__name__}, not a "
                                     f"constant weight")
                key = (id(arg), name, rw.param)
                if key not in packed_cache:
                    packed_cache[key] = Constant.from_numpy(
                        pack_weight(func, rw.param, np.asarray(arg.data)))
                inputs[rw.param] = packed_cache[key]
            args = Tuple(fields=tuple(inputs),
                         struct_info=TupleStructInfo(fields=tuple(a.struct_info
                                                                  for a in inputs)))
            return c.replace(args=(c.args[0], args) + tuple(c.args[2:]))

    updates = {}
    for gv, f in mod.functions.items():
        if isinstance(f, Function):
            nf = _Pack().visit(f)
            if nf is not f:
                updates[gv] = nf
    return mod.with_functions(updates) if updates else mod

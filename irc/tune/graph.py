"""Tuning graph-level modules: which loop functions to tune, and the module with the
tuned schedules in place.

:func:`prepare_graph` binds weights and runs the default pipeline (legalize, fold
constants, fuse) — the module ``irc.compile`` would build. :func:`graph_tasks` makes one
task per distinct loop function it calls (weight: the number of call sites); a parameter
that every call site passes a constant (a bound weight) is marked layout-free
(``layout_free_buffers``), so the search may rewrite its layout.
:func:`apply_database` puts the best schedule of each task in place: the loop function is
replaced by its scheduled version (attributes ``tir.is_scheduled`` and an opaque
``op_pattern``, so later fusion leaves it alone), and a layout-rewritten weight is packed
once — at compile time for a constant, by a ``call_tir`` of the packing function placed
before the call for a value computed at run time. Functions without records keep their
default (unscheduled) schedule; a record slower than the default is never chosen, and a
record whose trace cannot be replayed is skipped with a warning for the next-best one
(:func:`irc.tune.apply.replay_best`).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from .. import passes
from ..core.diagnostics import IRCError, TuningError
from ..core.functor import Visitor
from ..core.module import IRModule, unique_name
from ..core.target import Target
from ..core.transform import Sequential
from ..dlight.apply import DefaultScheduleForTarget
from ..dlight.weights import call_inputs
from ..ir.block_builder import normalize
from ..ir.expr import (
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    Function,
    GlobalVar,
    Op,
    SeqExpr,
    Tuple,
    Var,
    VarBinding,
)
from ..ir.ops import call_tir
from ..ir.struct_info import TensorStructInfo, TupleStructInfo, shape_of
from ..tir.schedule import layout_rewrite_preproc, layout_rewrites, pack_weight
from ..tir.stmt import PrimFunc
from ..vm import link
from .apply import LayoutRewriteOption, replay_best
from .database import Database, open_database
from .network_check import (
    RecordsWithout,
    not_faster_as_a_whole,
    not_faster_in_network,
    tuned_callees,
)
from .record import workload_key
from .task import TuneTask, flop_count

logger = logging.getLogger(__name__)

OPAQUE_PATTERN = 8


def normalize_params(params: Any) -> dict[str, np.ndarray] | None:
    """Weights as ``{name: array}`` from a dict, or from a list of ``(name, value)``
    pairs (``export_ir``'s form); values may be numpy arrays, irc tensors or anything
    else numpy converts (``nn.Parameter`` s with data)."""
    if params is None:
        return None
    items = params.items() if isinstance(params, dict) else params
    out: dict[str, np.ndarray] = {}
    try:
        for name, value in items:
            arr = value if isinstance(value, np.ndarray) else np.array(value)
            if arr.dtype == object:
                raise TypeError(name)
            out[str(name)] = arr
    except (TypeError, ValueError):
        raise TuningError("params must be a dict {name: array} or a list of (name, array) "
                          "pairs") from None
    return out


def _entry(mod: IRModule) -> str:
    graph = [gv.name_hint for gv, f in mod.functions.items() if isinstance(f, Function)]
    if not graph:
        raise TuningError("the module has no graph-level function to tune")
    return "main" if "main" in graph else graph[0]


def _unscheduled_pipeline() -> Any:
    """The default pipeline without its last step, the default schedule rules (tuning
    starts from unscheduled loop functions)."""
    pipe = passes.get_pipeline("default")
    steps = [p for p in (pipe.passes if isinstance(pipe, Sequential) else [pipe])
             if p.info.name != "DefaultScheduleForTarget"]
    return passes.Sequential(steps, name="default_unscheduled")


def default_schedules(mod: IRModule, target: Any) -> IRModule:
    """``mod`` with the default schedule rules applied to every loop function that is
    not scheduled yet (what an untuned ``irc.compile`` does)."""
    with Target.canon(target):
        return DefaultScheduleForTarget()(mod)


def prepare_graph(mod: Any, params: Any = None, target: Any = None) -> IRModule:
    """``mod`` with ``params`` bound as constants and the default pipeline applied (what
    ``irc.compile`` builds), loop functions left unscheduled for tuning."""
    if isinstance(mod, Function):
        mod = IRModule(functions={"main": mod})
    if not isinstance(mod, IRModule):
        raise TuningError(f"expected an IRModule or a graph Function, got "
                          f"{type(mod).__name__}")
    weights = normalize_params(params)
    if weights:
        mod = passes.BindParams(_entry(mod), weights)(mod)
    t = Target.canon(target or "llvm")
    with t:
        return _unscheduled_pipeline()(mod)


def _call_tir_sites(mod: IRModule) -> list[tuple[Call, PrimFunc]]:
    found: list[tuple[Call, PrimFunc]] = []

    class _Find(Visitor):
        def visit_Call(self, c: Call) -> None:
            if isinstance(c.op, Op) and c.op.name == "call_tir" and c.args \
                    and isinstance(c.args[0], GlobalVar):
                callee = mod.functions.get(c.args[0])
                if isinstance(callee, PrimFunc):
                    found.append((c, callee))
            self.generic_visit(c)

    for f in mod.functions.values():
        if isinstance(f, Function):
            _Find().visit(f)
    return found


def site_function(call: Call, callee: PrimFunc) -> PrimFunc:
    """The callee as tuned for this call site: parameters bound to constants are marked
    layout-free (unless the function already says which are)."""
    if callee.attrs.get("tir.is_scheduled"):
        return callee
    if "layout_free_buffers" in callee.attrs:
        return callee
    free = [k for k, a in enumerate(call_inputs(call)) if isinstance(a, Constant)]
    return callee.with_attr("layout_free_buffers", free) if free else callee


def graph_tasks(mod: IRModule, target: Any = "llvm", include_simple: bool = False
                ) -> list[TuneTask]:
    """One task per distinct loop function (as tuned at its call sites) of a prepared
    graph module; ``weight`` counts the call sites. Functions without floating-point
    work are left out unless ``include_simple``; functions with symbolic shapes and
    already scheduled ones are left out."""
    by_key: dict[str, TuneTask] = {}
    order: list[str] = []
    names = {id(f): gv.name_hint for gv, f in mod.functions.items()}
    for call, callee in _call_tir_sites(mod):
        if callee.attrs.get("tir.is_scheduled"):
            continue
        func = site_function(call, callee)
        key = workload_key(func)
        task = by_key.get(key)
        if task is None:
            flops = flop_count(func)
            if flops < 0 or (flops == 0 and not include_simple):
                continue
            task = TuneTask(func, target, name=names.get(id(callee), "main"), weight=0)
            task._flops = flops
            by_key[key] = task
            order.append(key)
        task.weight += 1
    return [by_key[k] for k in order]


def prim_func_tasks(mod: IRModule, target: Any = "llvm") -> list[TuneTask]:
    """Tasks of the loop functions of a module: through the call sites of its graph
    functions when it has any (weights count calls), else one per PrimFunc."""
    if any(isinstance(f, Function) for f in mod.functions.values()):
        return graph_tasks(mod, target)
    tasks = []
    for gv, f in mod.functions.items():
        if isinstance(f, PrimFunc) and not f.attrs.get("tir.is_scheduled"):
            if flop_count(f) < 0:
                continue
            tasks.append(TuneTask(f, target, name=gv.name_hint, weight=1))
    return tasks


# ---------------------------------------------------------------------------------------
# Applying the database
# ---------------------------------------------------------------------------------------


class _Applier:
    """Rewrites call sites of one module against a database."""

    def __init__(self, mod: IRModule, database: Any, option: int,
                 replays: dict[tuple, Any] | None = None):
        self.mod = mod
        self.database = database
        self.option = option
        # Replayed records by (workload, the trace on top, option), shared by the
        # appliers of one compile_tuned (it applies a database twice).
        self.replays = {} if replays is None else replays
        self.scheduled: dict[str, tuple[GlobalVar, PrimFunc] | None] = {}
        self.new_funcs: dict[GlobalVar, PrimFunc] = {}
        self.taken = {gv.name_hint for gv in mod.functions}
        self.preprocs: dict[tuple[str, int], GlobalVar] = {}
        self.applied = 0
        # A callee whose call sites are all the same workload is replaced in place
        # (keeping its name); otherwise each scheduled variant gets a new function.
        self.site_keys: dict[str, set[str]] = {}
        self.call_keys: dict[int, tuple[Call, PrimFunc, str]] = {}
        for call, callee in _call_tir_sites(mod):
            func = site_function(call, callee)
            key = workload_key(func)
            self.call_keys[id(call)] = (call, func, key)
            self.site_keys.setdefault(call.args[0].name_hint, set()).add(key)

    def _name(self, base: str) -> str:
        name = unique_name(base, self.taken, "_")
        self.taken.add(name)
        return name

    def scheduled_for(self, func: PrimFunc, callee: GlobalVar, key: str
                      ) -> tuple[GlobalVar, PrimFunc] | None:
        if key in self.scheduled:
            return self.scheduled[key]
        best = self._replay(func, callee, key)
        result = None
        if best is not None and not best[0].is_default:
            new = best[1].mod["main"]
            attrs = dict(new.attrs)
            attrs["tir.is_scheduled"] = True
            attrs["op_pattern"] = OPAQUE_PATTERN
            new = new.replace(attrs=attrs)
            base = callee.name_hint
            gv = callee if len(self.site_keys.get(base, ())) == 1 else \
                GlobalVar(name_hint=self._name(base))
            self.new_funcs[gv] = new
            result = (gv, new)
            self.applied += 1
        self.scheduled[key] = result
        return result

    def _replay(self, func: PrimFunc, callee: GlobalVar, key: str) -> Any:
        top = self.database.get_top_k(key, 1)
        memo = (key, top[0].trace_key if top else None, self.option)
        if memo in self.replays:
            return self.replays[memo]
        best = replay_best(func, self.database, self.option, callee.name_hint, key)
        self.replays[memo] = best
        return best

    def preproc_for(self, func: PrimFunc, param: int, key: str) -> GlobalVar:
        gv = self.preprocs.get((key, param))
        if gv is None:
            pre = layout_rewrite_preproc(func, param)
            gv = GlobalVar(name_hint=self._name("layout_rewrite_preproc"))
            self.new_funcs[gv] = pre.with_attr("tir.is_scheduled", True) \
                .with_attr("op_pattern", OPAQUE_PATTERN)
            self.preprocs[(key, param)] = gv
        return gv

    def rewrite_function(self, func: Function) -> Function:
        body = func.body
        if not isinstance(body, SeqExpr):
            return func
        blocks = [self._block(b) for b in body.blocks]
        if all(a is b for a, b in zip(blocks, body.blocks)):
            return func
        return func.replace(body=body.replace(blocks=tuple(blocks)))

    def _block(self, block: Any) -> Any:
        out = []
        changed = False
        for binding in block.bindings:
            value = binding.value if isinstance(binding, VarBinding) else None
            if isinstance(value, Call) and isinstance(value.op, Op) \
                    and value.op.name == "call_tir" and isinstance(value.args[0], GlobalVar):
                new_bindings = self._call(value, binding, isinstance(block, DataflowBlock))
                if new_bindings is not None:
                    out.extend(new_bindings)
                    changed = True
                    continue
            out.append(binding)
        return block.replace(bindings=tuple(out)) if changed else block

    def _call(self, call: Call, binding: Any, dataflow: bool) -> list[Any] | None:
        callee = self.mod.functions.get(call.args[0])
        if not isinstance(callee, PrimFunc) or callee.attrs.get("tir.is_scheduled"):
            return None
        _, func, key = self.call_keys[id(call)]  # (every call site, found in __init__)
        found = self.scheduled_for(func, call.args[0], key)
        if found is None:
            return None
        gv, new = found
        inputs = call_inputs(call)
        pre_bindings = []
        for rw in layout_rewrites(new):
            arg = inputs[rw.param]
            if isinstance(arg, Constant):
                packed = pack_weight(new, rw.param, np.asarray(arg.data))
                inputs[rw.param] = Constant.from_numpy(packed)
                continue
            buf = new.buffer_map[new.params[rw.param]]
            sinfo = TensorStructInfo(shape=shape_of([int(s.value) for s in buf.shape]),
                                     dtype=buf.dtype, ndim=len(buf.shape))
            pre_gv = self.preproc_for(new, rw.param, workload_key(func))
            cls = DataflowVar if dataflow else Var
            var = cls(name_hint=f"{binding.var.name_hint}_packed{rw.param}", struct_info=sinfo)
            pack_call = normalize(call_tir(pre_gv, [arg], sinfo))
            pre_bindings.append(VarBinding(var=var, value=pack_call))
            inputs[rw.param] = var
        # Normalized like every graph expression: the argument tuple has its struct info.
        args = Tuple(fields=tuple(inputs),
                     struct_info=TupleStructInfo(fields=tuple(a.struct_info for a in inputs)))
        new_args = (gv, args) + tuple(call.args[2:])
        new_call = call.replace(args=new_args)
        return pre_bindings + [binding.replace(value=new_call)]

    def run(self) -> IRModule:
        updates: dict[Any, Any] = {}
        for gv, f in self.mod.functions.items():
            if isinstance(f, Function):
                nf = self.rewrite_function(f)
                if nf is not f:
                    updates[gv] = nf
        _log_kept_default(sum(1 for v in self.scheduled.values() if v is None),
                          len(self.scheduled))
        if not updates and not self.new_funcs:
            return self.mod
        mod = self.mod.with_functions(updates) if updates else self.mod
        for gv, f in self.new_funcs.items():
            mod = mod.with_function(gv, f)
        return _drop_unused(mod)


def _log_kept_default(kept: int, total: int) -> None:
    """Say how many loop functions keep their default schedule (no record faster)."""
    if kept:
        logger.info("apply_database: %d of %d loop functions have no tuned record faster than "
                    "their default schedule; they keep it", kept, total)


def _drop_unused(mod: IRModule) -> IRModule:
    """Remove loop functions no graph function calls any more."""
    if not any(isinstance(f, Function) for f in mod.functions.values()):
        return mod
    used_names = {c.args[0].name_hint for c, _ in _call_tir_sites(mod)}
    keep = {gv: f for gv, f in mod.functions.items()
            if not isinstance(f, PrimFunc) or gv.name_hint in used_names}
    return IRModule(functions=keep, attrs=mod.attrs)


def apply_database(mod: IRModule, database: Any, target: Any = None,
                   option: int | None = None) -> IRModule:
    """``mod`` with the best tuned schedule of every loop function in place (see the
    module docstring). For a module of loop functions only (no graph function), each
    PrimFunc is replaced directly (layout rewrites then use ``option``, by default
    ``INSERT_TRANSFORM_STAGE`` so callers keep their layouts)."""
    return _apply_database(mod, database, target, option)


def _apply_database(mod: IRModule, database: Any, target: Any = None,
                    option: int | None = None,
                    replays: dict[tuple, Any] | None = None) -> IRModule:
    """:func:`apply_database`; ``replays`` shares replayed records between calls."""
    db = database if isinstance(database, (Database, RecordsWithout)) \
        else open_database(database, target)
    try:
        if any(isinstance(f, Function) for f in mod.functions.values()):
            opt = LayoutRewriteOption.REWRITE_FOR_PRE_TRANSFORMED if option is None \
                else option
            return _Applier(mod, db, opt, replays).run()
        opt = LayoutRewriteOption.INSERT_TRANSFORM_STAGE if option is None else option
        updates = {}
        candidates = 0
        for gv, f in mod.functions.items():
            if not isinstance(f, PrimFunc) or f.attrs.get("tir.is_scheduled"):
                continue
            candidates += 1
            best = replay_best(f, db, opt, gv.name_hint)
            if best is None or best[0].is_default:
                continue
            new = best[1].mod["main"]
            attrs = dict(new.attrs)
            attrs["tir.is_scheduled"] = True
            if "global_symbol" in f.attrs:
                attrs["global_symbol"] = f.attrs["global_symbol"]
            updates[gv] = new.replace(attrs=attrs)
        _log_kept_default(candidates - len(updates), candidates)
        return mod.with_functions(updates) if updates else mod
    finally:
        if db is not database:
            db.close()


def compile_tuned(mod: Any, database: Any, target: Any = "llvm", params: Any = None,
                  check_in_network: bool = True) -> Any:
    """Prepare ``mod`` (bind ``params``, default pipeline), put the database's best
    schedules in place and build it: an ``irc.vm.Executable``.

    With ``check_in_network`` (CPU targets, graph functions whose inputs
    ``Executable.random_inputs`` can make), the tuned build is compared with the default
    build kernel by kernel while the graph function runs (:mod:`irc.tune.network_check`),
    and a tuned kernel not faster there than the default one by
    ``network_check.MARGIN`` is set aside: its loop function keeps the default schedule.
    If the result does not run the graph function faster than the default build, the
    default build is returned."""
    t = Target.canon(target)
    db = database if isinstance(database, Database) else open_database(database, t)
    try:
        prepared = prepare_graph(mod, params, t)
        replays: dict[tuple, Any] = {}
        tuned = _apply_database(prepared, db, t, replays=replays)
        try:
            ex = link(default_schedules(tuned, t), t)
        except IRCError as err:  # a record that replays but does not build
            logger.warning("compile_tuned: the build with the tuned schedules of %s failed, "
                           "so every loop function keeps its default schedule: %s",
                           db.location or "the database", err)
            return link(default_schedules(prepared, t), t)
        names = tuned_callees(prepared, tuned)
        if not check_in_network or not names or t.kind.name != "llvm":
            return ex
        entry = _entry(prepared)
        try:
            args = ex.random_inputs(entry)
        except IRCError as err:  # symbolic or non-tensor inputs: nothing to run it on
            logger.info("compile_tuned: the tuned build is not checked in the network: %s",
                        err)
            return ex
        default_ex = link(default_schedules(prepared, t), t)
        not_faster = not_faster_in_network(default_ex, ex, names, entry, args)
        if not_faster:
            logger.info("compile_tuned: %d of %d tuned kernels were not faster in the "
                        "network than their default schedule and keep it", len(not_faster),
                        len(names))
            hidden = {workload_key(site_function(call, callee))
                      for call, callee in _call_tir_sites(prepared)
                      if call.args[0].name_hint in not_faster}
            kept = _apply_database(prepared, RecordsWithout(db, hidden), t, replays=replays)
            ex = link(default_schedules(kept, t), t)
        if not_faster_as_a_whole(default_ex, ex, entry, args):
            return default_ex  # tuning never makes the network slower
        return ex
    finally:
        if db is not database:
            db.close()


__all__ = ["apply_database", "compile_tuned", "default_schedules", "graph_tasks",
           "normalize_params", "prepare_graph", "prim_func_tasks", "site_function"]

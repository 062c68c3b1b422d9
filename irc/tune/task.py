"""Tuning tasks and their extraction from a graph module.

A :class:`TuneTask` is one loop function to tune for one target, with a ``weight`` (how
many times the model calls it), a readable description, its workload (database key) and
its FLOP count. :func:`extract_tasks` legalizes and fuses a graph module, then makes
one task per distinct loop function called
through ``R.call_tir`` (structurally equal functions are one task; the weight counts the
call sites). :class:`BlockDAG` prints a function's blocks in the compute-DAG notation of
the seeds (``conv2d_nhwc(nn, yy, xx, ff) += (pad_temp[...]*p1[...])``).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from .. import passes
from ..core.diagnostics import IRCError, TuningError
from ..core.functor import Mutator, Visitor
from ..core.module import IRModule
from ..core.target import Target
from ..dlight import apply_rules, default_rules_for
from ..dlight.weights import mark_packable
from ..ir.expr import Call, Function, GlobalVar, Op
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.analysis.flops import flop_count
from ..tir.stmt import PrimFunc
from ..tir.te.compute_dag import MAX_LINE_WIDTH, expr_repr
from .record import Workload, workload_key

logger = logging.getLogger("irc.tune")


def default_schedule_trace(func: PrimFunc, target: Target, rules: Any = None,
                           name: str = "", log: bool = True) -> tuple[Any, int]:
    """The trace (JSON) of ``func``'s default schedule on ``target`` -- the first of
    ``rules`` (default: the target's ``irc.dlight`` rules) that applies, else None (the
    unscheduled function) -- and how many rules failed half way. The tuner measures this
    candidate as a task's default, so its :func:`~irc.tune.record.trace_key` recognises
    that record."""
    rules = default_rules_for(target) if rules is None else list(rules)
    if not rules:
        return None, 0
    # The default build repacks constant weights into its micro-kernels' order
    # (irc.dlight.weights); the weights a task may lay out freely are those, so its
    # default is measured (and, as a record, built) packed too.
    func = _packable(func)
    outcome = apply_rules(func, target, rules, name=name, log=log)
    if outcome.schedule is None:
        return None, len(outcome.failures)
    return _trace_json(outcome.schedule), len(outcome.failures)


def default_variant_traces(func: PrimFunc, target: Target, rules: Any = None,
                           limit: int = 16) -> list[Any]:
    """Traces (JSON) of up to ``limit`` schedules next to ``func``'s default schedule:
    the variants (:meth:`~irc.dlight.ScheduleRule.variants`) of the first rule that
    applies, most promising first; none when no rule applies or it has none. A rule that
    fails making them is logged at DEBUG on ``irc.tune`` and gives none."""
    rules = default_rules_for(target) if rules is None else list(rules)
    func = _packable(func)
    outcome = apply_rules(func, target, rules, log=False)
    if outcome.rule is None:
        return []
    try:
        schedules = outcome.rule.variants(func, target, limit)
    except IRCError as err:
        logger.debug("%s gives no variants of %s: %s", outcome.rule.name,
                     func.attrs.get("global_symbol", "a function"), err)
        return []
    return [_trace_json(sch) for sch in schedules[:limit]]


def _packable(func: PrimFunc) -> PrimFunc:
    """``func`` with its layout-free weights marked packable (see
    :func:`default_schedule_trace`)."""
    free = list(func.attrs.get("layout_free_buffers", ()) or ())
    return mark_packable(func, free) if free else func


def _trace_json(sch: Any) -> Any:
    return sch.trace.simplified(remove_postproc=False).to_json()


# ---------------------------------------------------------------------------------------
# Printing a function's blocks as a compute DAG
# ---------------------------------------------------------------------------------------


class _Display(Mutator):
    """Expressions as the DAG prints them: block variables without their ``v_`` prefix,
    index constants as plain integers."""

    def __init__(self) -> None:
        super().__init__()
        self.renamed: dict[int, E.Var] = {}

    def visit_Var(self, v: E.Var) -> E.Var:
        if v.name.startswith("v_") and len(v.name) > 2:
            new = self.renamed.get(id(v))
            if new is None:
                new = self.renamed[id(v)] = E.Var(name=v.name[2:], dtype=v.dtype)
            return new
        return v

    def visit_IntImm(self, e: E.IntImm) -> E.IntImm:
        if e.dtype == "int64" and -(2 ** 31) <= e.value < 2 ** 31:
            return E.IntImm(dtype="int32", value=e.value)
        return e


_REDUCE_SIGNS = ((E.Add, "+="), (E.Max, "max="), (E.Min, "min="), (E.Mul, "*="))


class _Blocks(Visitor):
    def __init__(self) -> None:
        self.blocks: list[S.Block] = []

    def visit_Block(self, b: S.Block) -> None:
        if b.name != "root" or b.iter_vars:
            self.blocks.append(b)
        self.generic_visit(b)


def _dims(shape: Any) -> list:
    return [s.value if isinstance(s, E.IntImm) else repr(s) for s in shape]


class BlockDAG:
    """A loop function's blocks printed one per line in the compute-DAG notation
    (placeholders, then each block as ``name(axes) = expr`` or ``+= expr`` for a
    reduction), with :meth:`flop_count` and :meth:`workload_key`."""

    def __init__(self, func: PrimFunc):
        if not isinstance(func, PrimFunc):
            raise TuningError(f"BlockDAG takes a PrimFunc, got {type(func).__name__}")
        self.func = func

    def flop_count(self) -> float:
        """See :func:`flop_count`."""
        return flop_count(self.func)

    @property
    def flop_ct(self) -> float:
        """Alias of :meth:`flop_count` under the auto-scheduler's name."""
        return self.flop_count()

    def workload_key(self) -> str:
        """``["<workload key>", [shape of each parameter], ...]`` as JSON."""
        shapes = [_dims(b.shape) for b in self.func.buffers]
        return json.dumps([workload_key(self.func), *shapes])

    def _lines(self) -> list[str]:
        func = self.func
        params = {id(b.data): b for b in func.buffers}
        declared: set[int] = set()
        finder = _Blocks()
        finder.visit(func.body)
        display = _Display()
        lines: list[str] = []
        for block in finder.blocks:
            for region in block.reads:
                data = id(region.buffer.data)
                if data in params and data not in declared:
                    declared.add(data)
                    buf = params[data]
                    shape = ", ".join(str(d) for d in _dims(buf.shape))
                    lines.append(f"{buf.name} = PLACEHOLDER [{shape}]")
            lines.append(self._block_line(block, display, expr_repr))
        return lines

    @staticmethod
    def _block_line(block: S.Block, display: _Display, expr_repr: Any) -> str:
        axes = ", ".join(display.visit(iv.var).name for iv in block.iter_vars
                         if iv.iter_type != "reduce")
        name = block.writes[0].buffer.name if len(block.writes) == 1 else block.name
        body = block.body
        if not isinstance(body, S.BufferStore):
            return f"{name}({axes}) = <{type(body).__name__}>"
        value = body.value
        if block.init is not None:
            for cls, sign in _REDUCE_SIGNS:
                if type(value) is cls:
                    for own, other in ((value.a, value.b), (value.b, value.a)):
                        if isinstance(own, E.BufferLoad) and own.buffer is body.buffer:
                            return f"{name}({axes}) {sign} {expr_repr(display.visit(other))}"
        return f"{name}({axes}) = {expr_repr(display.visit(value))}"

    def __str__(self) -> str:
        half = MAX_LINE_WIDTH // 2
        out = []
        for line in self._lines():
            if len(line) > MAX_LINE_WIDTH:
                line = line[:half] + " ..(OMITTED).. " + line[-half:]
            out.append(line)
        return "\n".join(out) + "\n"

    def __repr__(self) -> str:
        return f"BlockDAG({self.func.attrs.get('global_symbol', 'main')})"


# ---------------------------------------------------------------------------------------
# Tasks
# ---------------------------------------------------------------------------------------


class TuneTask:
    """A loop function to tune for a target.

    ``func`` is the unscheduled (block-form) function, ``name`` a readable name (the
    function's name in its module), ``weight`` how many times the model calls it.
    ``workload`` keys its records; ``flop_count`` and ``compute_dag`` describe it.
    """

    def __init__(self, func: PrimFunc, target: Any = "llvm", name: str = "", weight: int = 1):
        if not isinstance(func, PrimFunc):
            raise TuningError(f"a tuning task needs a PrimFunc, got {type(func).__name__}")
        if weight < 0:
            raise TuningError(f"task weight must be non-negative, got {weight}")
        self.func = func
        self.target = Target.canon(target)
        self.name = name or str(func.attrs.get("global_symbol", "main"))
        self.weight = weight
        self.workload = Workload.from_func(func, name=self.name)
        self._flops: float | None = None

    @property
    def desc(self) -> str:
        """The task's readable name."""
        return self.name

    @property
    def flop_count(self) -> float:
        """Floating-point operations of one call (-1.0 when not statically known)."""
        if self._flops is None:
            self._flops = flop_count(self.func)
        return self._flops

    @property
    def compute_dag(self) -> BlockDAG:
        """The function's blocks in compute-DAG notation (``print(task.compute_dag)``)."""
        return BlockDAG(self.func)

    @property
    def workload_key(self) -> str:
        """``["<workload key>", [shapes of the parameters]...]`` (the key is
        ``task.workload.key``)."""
        return BlockDAG(self.func).workload_key()

    def __repr__(self) -> str:
        return (f"TuneTask({self.name}, weight={self.weight}, "
                f"flops={self.flop_count:.4g}, target={self.target})")


def _call_tir_callees(func: Any) -> list[Any]:
    """GlobalVars called through ``R.call_tir`` in a graph function, in program order,
    once per call site."""
    found: list[Any] = []

    class _Finder(Visitor):
        def visit_Call(self, c: Call) -> None:
            if isinstance(c.op, Op) and c.op.name == "call_tir" and c.args \
                    and isinstance(c.args[0], GlobalVar):
                found.append(c.args[0])
            self.generic_visit(c)

    _Finder().visit(func)
    return found


def _prepare(mod: IRModule, params: dict | None, fuse: bool | None) -> IRModule:
    if params:
        names = [gv.name_hint for gv, f in mod.functions.items()
                 if not isinstance(f, PrimFunc)]
        entry = "main" if "main" in names else (names[0] if names else None)
        if entry is None:
            raise TuningError("extract_tasks was given params but the module has no graph "
                              "function to bind them to")
        mod = passes.BindParams(entry, params)(mod)
    mod = passes.LegalizeOps()(mod)
    if fuse is not False:
        for fusion in (passes.AnnotateTIROpPattern, passes.FuseOps, passes.FuseTIR):
            mod = fusion()(mod)
    return mod


def extract_tasks(mod: Any, target: Any = "llvm", params: dict | None = None, *,
                  include_simple_tasks: bool = False, fuse: bool | None = None
                  ) -> list[TuneTask]:
    """One :class:`TuneTask` per distinct loop function a graph module calls.

    ``mod`` is an IRModule (or a graph Function, taken as ``main``); ``params`` (name ->
    array) are bound as constants first. The module is legalized, then fused (unless
    ``fuse=False``).
    Structurally equal functions form one task whose ``weight`` is the number of call
    sites. Tasks without floating-point work (reshapes, copies) are left out unless
    ``include_simple_tasks``; functions with symbolic shapes cannot be tuned and are left
    out with a note on the ``irc.tune`` logger.
    """
    if isinstance(mod, Function):
        mod = IRModule(functions={"main": mod})
    if not isinstance(mod, IRModule):
        raise TuningError(f"extract_tasks takes an IRModule or a graph Function, got "
                          f"{type(mod).__name__}")
    mod = _prepare(mod, params, fuse)
    by_key: dict[str, TuneTask] = {}
    order: list[str] = []
    skipped_symbolic: set[str] = set()
    for func in mod.functions.values():
        if isinstance(func, PrimFunc):
            continue
        for callee in _call_tir_callees(func):
            prim = mod[callee]
            if not isinstance(prim, PrimFunc):
                continue
            key = workload_key(prim)
            task = by_key.get(key)
            if task is None:
                flops = flop_count(prim)
                if flops < 0:
                    skipped_symbolic.add(callee.name_hint)
                    continue
                if flops == 0 and not include_simple_tasks:
                    continue
                task = TuneTask(prim, target, name=callee.name_hint, weight=0)
                task._flops = flops
                by_key[key] = task
                order.append(key)
            task.weight += 1
    if skipped_symbolic:
        logger.info("extract_tasks: %d function(s) with symbolic shapes are not tuned: %s",
                    len(skipped_symbolic), ", ".join(sorted(skipped_symbolic)))
    return [by_key[k] for k in order]



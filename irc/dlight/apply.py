"""``ApplyDefaultSchedule``: schedule every loop function with the first default rule
that applies.

Algorithm: for each PrimFunc of the module not marked ``tir.is_scheduled``, under the
current target (``irc.target.Target.current()``, set with ``with Target("cuda"):``), try
the rules in order; a rule written for other targets is skipped, a rule returning None
declines, and a rule whose schedule fails half way with an irc error (a primitive's
``ScheduleError``) is treated as declining, so the next rule gets the original function;
such a failure is logged at WARNING on the ``irc.dlight`` logger with the rule, the
function and the error (a broken rule would otherwise show only as a slowdown).
The first schedule produced replaces the function, marked ``tir.is_scheduled: True``.
Functions no rule accepts stay as they are (they still compile, unscheduled). A function
object scheduled again under the same target and rules (a tuned build and its default
build share the functions tuning left alone) takes the result remembered the first time.

Weights: a parameter every graph-level call passes a constant may be repacked by the
rule (the CPU ``Matmul`` rule packs a convolution's or matmul's weight into its
micro-kernel's panels); the constants at the call sites are then packed once, here
(:mod:`irc.dlight.weights`).

Preconditions: loop functions in block form (the output of legalization and fusion).
Postconditions: scheduled functions carry ``tir.is_scheduled``; graph functions are
untouched.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import NamedTuple, Sequence

from ..core.diagnostics import IRCError
from ..core.module import IRModule
from ..core.parallel import fork_pull, worker_count
from ..core.target import Target
from ..core.transform import Pass, PassContext
from ..tir.schedule import Schedule, layout_rewrites
from ..tir.stmt import PrimFunc
from .base import ScheduleRule, is_scheduled
from .cpu import default_rules
from .gpu import default_rules as gpu_default_rules
from .weights import layout_free_params, mark_packable, pack_call_sites, without_pack_attrs

logger = logging.getLogger(__name__)


@dataclass(frozen=True, init=False)
class ApplyDefaultSchedule(Pass):
    """The pass applying default schedule rules (see the module docstring).

    Example::

        with Target("cuda"):
            mod = dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.Fallback())(mod)
    """

    rules: tuple[ScheduleRule, ...]

    def __init__(self, *rules: ScheduleRule):
        flat: list[ScheduleRule] = []
        for r in rules:
            if isinstance(r, (list, tuple)):
                flat.extend(r)
            else:
                flat.append(r)
        for r in flat:
            if not isinstance(r, ScheduleRule):
                raise IRCError(f"ApplyDefaultSchedule takes schedule rules (e.g. "
                               f"dl.gpu.Fallback()), got {type(r).__name__}")
        object.__setattr__(self, "rules", tuple(flat))

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        target = Target.current()
        if target is None:
            raise IRCError("ApplyDefaultSchedule needs a target: run it under "
                           "'with irc.target.Target(\"llvm\"):' (or \"cuda\")")
        rules = [r for r in self.rules if r.is_target_available(target)]
        packable = layout_free_params(mod)
        updates = {}
        rewritten = {}
        todo = {gv.name_hint: (gv, func, mark_packable(func, packable.get(gv.name_hint, [])))
                for gv, func in mod.functions.items()
                if isinstance(func, PrimFunc) and not is_scheduled(func)}
        context = (str(target), tuple(_rule_key(r) for r in rules))
        keys = {n: (id(func), tuple(packable.get(n, [])), context)
                for n, (_, func, _) in todo.items()}
        # (Under instruments, which must see the work of every pass, rules always run.)
        memo = not ctx.instruments
        scheduled = {n: _recalled(keys[n], func) if memo else _MISS
                     for n, (_, func, _) in todo.items()}
        missing = {n: marked for n, (_, _, marked) in todo.items() if scheduled[n] is _MISS}
        if missing:
            fresh = _schedule_all(missing, target, rules, ctx)
            scheduled.update(fresh)
            if memo:
                for n, new in fresh.items():
                    _remember(keys[n], todo[n][1], new)
        for name, (gv, func, marked) in todo.items():
            new = scheduled[name]
            if new is None:
                continue
            if marked is not func and layout_rewrites(new):
                rewritten[gv.name_hint] = new
            updates[gv] = without_pack_attrs(new, func) if marked is not func else new
        mod = mod.with_functions(updates) if updates else mod
        return pack_call_sites(mod, rewritten)

    def __repr__(self) -> str:
        return f"ApplyDefaultSchedule({', '.join(map(repr, self.rules))})"


# A network's functions are scheduled on several cores (forked processes,
# irc.core.parallel) only where each process gets this many functions on average.
PARALLEL_SCHEDULE_FUNCS = 8

# The functions scheduled lately, by the identity of the function object (kept alive by
# the entry, so its id is not reused), its packable parameters, the target and the
# rules: a module whose functions are scheduled again (the tuned and the default build
# of one model, each scheduling the functions tuning left alone) finds them here. A
# rule's result depends on nothing else; a hit skips logging the rule failures met the
# first time.
_MEMO_SIZE = 1024
_memo: OrderedDict[tuple, tuple[PrimFunc, PrimFunc | None]] = OrderedDict()
_memo_lock = threading.Lock()
_MISS = object()


def _rule_key(rule: ScheduleRule) -> tuple:
    return (type(rule).__module__, type(rule).__qualname__,
            repr(sorted(getattr(rule, "__dict__", {}).items())))


def _recalled(key: tuple, func: PrimFunc):
    with _memo_lock:
        hit = _memo.get(key)
        if hit is None or hit[0] is not func:
            return _MISS
        _memo.move_to_end(key)
        return hit[1]


def _remember(key: tuple, func: PrimFunc, scheduled: PrimFunc | None) -> None:
    with _memo_lock:
        _memo[key] = (func, scheduled)
        while len(_memo) > _MEMO_SIZE:
            _memo.popitem(last=False)


def _schedule_all(funcs: dict[str, PrimFunc], target: Target,
                  rules: Sequence[ScheduleRule], ctx: PassContext
                  ) -> dict[str, PrimFunc | None]:
    """:func:`schedule_func` of every function; many functions are scheduled on several
    cores, each process taking the next function when it has finished one
    (``irc.core.parallel.fork_pull``), unless the pass context has instruments (they
    must see every pass run here). A rule failure must be logged, and only this
    process's log handlers see records: a function whose rules failed in a child is
    scheduled again here."""
    names = list(funcs)
    jobs = min(worker_count(), len(names) // PARALLEL_SCHEDULE_FUNCS)
    if jobs <= 1 or ctx.instruments:
        return {n: schedule_func(funcs[n], target, rules, name=n) for n in names}

    here = os.getpid()

    def one(n: str) -> PrimFunc | None:
        forked = os.getpid() != here
        outcome = apply_rules(funcs[n], target, rules, n, log=not forked)
        if outcome.failures and forked:
            raise _LogHere  # this process schedules the function again and logs
        return _scheduled(outcome)

    return dict(zip(names, fork_pull(one, names, jobs)))


class _LogHere(Exception):
    """A forked share met a rule failure, which must be logged in the parent."""


@dataclass(frozen=True)
class RuleFailure:
    """A default rule that failed half way on a function: the rule's name, the
    function's name and the error."""

    rule: str
    func: str
    error: IRCError


class RuleOutcome(NamedTuple):
    """What :func:`apply_rules` found: the ``schedule`` of the first rule that applies
    and that ``rule`` (both None when none does), and the ``failures`` of the rules
    tried before it."""

    schedule: Schedule | None
    rule: ScheduleRule | None
    failures: tuple[RuleFailure, ...]


def apply_rules(func: PrimFunc, target: Target, rules: Sequence[ScheduleRule],
                name: str = "", log: bool = True) -> RuleOutcome:
    """Try ``rules`` in order on ``func`` (called ``name`` in messages; default its
    ``global_symbol``) and return the first schedule made. A rule failing half way with
    an irc error is logged at WARNING on ``irc.dlight`` (unless ``log`` is False) and
    the next rule is tried."""
    failures: list[RuleFailure] = []
    for rule in rules:
        try:
            sch = rule.apply(func, target, False)
        except IRCError as err:
            # A primitive refused half way: this rule does not fit the function.
            where = name or str(func.attrs.get("global_symbol", "main"))
            failures.append(RuleFailure(rule.name, where, err))
            if log:
                logger.warning("default schedule rule %s failed on function %s (trying the "
                           "next rule): %s", rule.name, where, err)
            continue
        if sch is None or "main" not in sch.mod:
            continue
        return RuleOutcome(sch, rule, tuple(failures))
    return RuleOutcome(None, None, tuple(failures))


def schedule_func(func: PrimFunc, target: Target, rules: Sequence[ScheduleRule],
                  name: str = "") -> PrimFunc | None:
    """``func`` scheduled by the first rule of ``rules`` that applies (marked
    ``tir.is_scheduled``), or None when none does (see :func:`apply_rules`)."""
    return _scheduled(apply_rules(func, target, rules, name))


def _scheduled(outcome: RuleOutcome) -> PrimFunc | None:
    if outcome.schedule is None:
        return None
    return outcome.schedule.mod["main"].with_attr("tir.is_scheduled", True)


@dataclass(frozen=True)
class DefaultScheduleForTarget(Pass):
    """The default pipeline's last step: under an llvm target (the current one when the
    pass runs), apply the CPU rules (``dl.cpu.default_rules()``); under cuda the GPU
    rules (``dl.gpu.default_rules()``: Matmul, GEMV, Reduction, GeneralReduction,
    Fallback); with no target, leave the module as it is."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        target = Target.current()
        rules = default_rules_for(target) if target is not None else []
        if not rules:
            return mod
        return ApplyDefaultSchedule(*rules).transform_module(mod, ctx)


def default_rules_for(target: Target) -> list[ScheduleRule]:
    """The default schedule rules of ``target``'s kind: ``dl.cpu.default_rules()`` for
    llvm, ``dl.gpu.default_rules()`` for cuda, none for another kind."""
    if target.kind.name == "llvm":
        return default_rules()
    if target.kind.name == "cuda":
        return gpu_default_rules()
    return []

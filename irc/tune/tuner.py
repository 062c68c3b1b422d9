"""A tuning run: :func:`tune_tasks` wires the tuning engine to the task scheduler.
Both front doors (``irc.tune.ms`` and ``irc.tune.auto_scheduler``) run their tuning
through it.

:func:`tune_tasks` makes a :class:`~irc.tune.engine.TuningEngine` (search, measurement,
database, cost model) from a :class:`~irc.tune.options.TuneConfig` and
:class:`~irc.tune.options.TuneComponents`, has a
:class:`~irc.tune.task_scheduler.TaskScheduler` drive it round by round, and, with a
time budget, ends by confirming each task's fastest candidates (:func:`confirm_best`);
the summary counts what went wrong (:class:`~irc.tune.task_scheduler.TuningCounts`).
:func:`options_from_keywords` turns the MetaSchedule-style keyword options into the
config and components; :func:`best_records` reads each task's fastest record.
"""

from __future__ import annotations

import logging
import time
from dataclasses import fields, replace
from typing import Any, Callable, Sequence

from ..core.diagnostics import IRCError, TuningError
from .database import Database, open_database
from .engine import (
    SearchSpeed,
    TuningEngine,
    check_gpu_for_measuring,
    check_target_buildable,
    first_line,
)
from .measure import MeasureInput
from .options import SearchOptions, TuneComponents, TuneConfig
from .record import TuningRecord, trace_key
from .search import EvolutionaryStrategy
from .task import TuneTask
from .task_scheduler import TaskScheduler, TuneSummary

logger = logging.getLogger(__name__)


# The share of a time budget kept for confirming each task's best candidates
# (``TuneConfig.confirm_top``, :func:`confirm_best`).
CONFIRM_SHARE = 0.15


def confirm_best(engine: TuningEngine, top: int, deadline: float | None = None,
                 max_measures: int | None = None) -> int:
    """Measure each task's ``top`` fastest candidates and its default schedule once more,
    again for a new leader, until the task's fastest candidate — by the mean of all
    its measurements (``combine_measurements``, which ``Database.get_top_k`` applies) —
    has been measured twice. Each candidate is timed once during the search, and the
    fastest of dozens of such noisy timings is biased low: on ResNet-50 (Zen 4), records
    that beat their default schedules by 18-22% there were 1-4% faster re-timed, and the
    tuned network was no faster than the default one. Tasks go in the order of their
    weighted time (the ones that matter most first) until ``time.monotonic()`` reaches
    ``deadline`` or ``max_measures`` measurements are made; returns how many were.
    The unscheduled function (a record without a trace) is not measured again."""
    db = engine.database
    costs = []
    for task in engine.tasks:
        best = db.get_top_k(task.workload, 1)
        costs.append(task.weight * best[0].mean_cost if best else 0.0)
    made = 0
    for i in sorted(range(len(engine.tasks)), key=lambda i: -costs[i]):
        task = engine.tasks[i]
        default = engine.default_trace(i)
        default_key = trace_key(default) if default is not None else None
        confirmed: set[str] = set()
        while True:
            leaders = [r for r in db.get_top_k(task.workload, top) if not r.is_default]
            if not leaders or leaders[0].trace_key in confirmed:
                break
            traces = {r.trace_key: r.trace for r in leaders}
            if default_key is not None and default_key not in confirmed:
                traces[default_key] = default
            todo = [(k, t) for k, t in traces.items() if k not in confirmed]
            if max_measures is not None:
                todo = todo[:max(0, max_measures - made)]
            if not todo or deadline is not None and time.monotonic() >= deadline:
                return made
            engine.measure(task, [MeasureInput(task.workload, t, task.target)
                                  for _, t in todo])
            confirmed.update(k for k, _ in todo)
            made += len(todo)
    return made


def default_trials_per_round(max_trials: int, num_tasks: int) -> int:
    """Measured candidates per round: small rounds early so the cost model learns
    (between 8 and 64, about a quarter of a task's share of the budget)."""
    share = max(1, max_trials // max(1, num_tasks))
    return int(min(64, max(8, share // 4)))


def tune_tasks(tasks: Sequence[TuneTask], database: Database | str, config: TuneConfig,
               components: TuneComponents = TuneComponents(), *,
               before: Callable[[TuningEngine], None] | None = None
               ) -> tuple[TuneSummary, TuningEngine]:
    """Tune ``tasks`` as ``config`` says (trial budget, rounds, time budget, ...) with
    ``components`` (builder, runner, cost model, space, search strategy, callbacks),
    recording into ``database``; returns the summary (with :class:`TuningCounts` of what
    went wrong) and the (closed) engine, whose counters say what happened. With a zero
    budget nothing is measured: every task keeps its default schedule.
    ``before(engine)`` runs once the engine exists (e.g. to preload records).

    Example::

        summary, _ = tune_tasks([TuneTask(func, "llvm")], "records.json", TuneConfig(64))
    """
    if not isinstance(config, TuneConfig):
        raise TuningError(f"tune_tasks takes a TuneConfig, got {type(config).__name__}",
                          hint="tune_tasks(tasks, database, TuneConfig(max_trials_global))")
    tasks = list(tasks)
    trials = int(config.max_trials_global)
    per_round = config.num_trials_per_iter or default_trials_per_round(trials, len(tasks))
    start = time.monotonic()
    budget = config.time_budget
    confirm = bool(config.confirm_top and budget is not None and trials > 0)
    engine = TuningEngine(tasks, database, config, components)
    try:
        if before is not None:
            before(engine)
        verbose = config.verbose
        sched = TaskScheduler(tasks, task_weights=config.task_weights,
                              strategy=config.task_scheduling,
                              load_log_file=engine.database, seed=config.seed,
                              verbose=1 if verbose and len(tasks) > 1 else 0,
                              num_measures_per_round=per_round,
                              measure_default=config.measure_default, out=config.out)
        summary = sched.tune(engine, trials, time_budget=budget * (1 - CONFIRM_SHARE)
                             if confirm else budget)
        confirmed = 0
        if confirm:
            try:
                # The search stops between rounds, so it may overrun its share: the
                # confirmation still gets a third of its own.
                deadline = max(start + budget, time.monotonic() + budget * CONFIRM_SHARE / 3)
                confirmed = confirm_best(engine, config.confirm_top, deadline,
                                         trials - summary.total_trials)
            except IRCError as err:  # the records measured so far stay
                logger.warning("tuning: confirming the best candidates stopped: %s",
                               first_line(str(err)))
        summary = replace(summary, counts=replace(engine.counts(),
                                                  abandoned_tasks=len(sched.abandoned)))
        n, secs = engine.search_speed()
        rate = f"{n / secs:.0f}" if secs > 0 else "-"
        problems = summary.counts.describe()
        line = (f"Tuning done: {summary.total_trials} trials in {summary.elapsed:.1f} s "
                f"({engine.measure_seconds:.1f} s measuring)"
                + (f", then {confirmed} confirming measurements" if confirmed else "")
                + f"; search scored {n} candidates "
                f"({rate}/s)" + (f"; {problems}" if problems else ""))
        logger.info("%s", line)
        engine.log(line)
        if verbose:
            engine.echo(line)
    finally:
        engine.close()
    return summary, engine


_RENAMED_KEYWORDS = {"strategy": "task_scheduling"}
_CONFIG_KEYWORDS = frozenset(f.name for f in fields(TuneConfig)
                             if f.name != "max_trials_global")
_COMPONENT_KEYWORDS = frozenset(f.name for f in fields(TuneComponents))


def options_from_keywords(max_trials_global: int, **keywords: Any
                          ) -> tuple[TuneConfig, TuneComponents]:
    """The config and components of the keyword options the MetaSchedule-style front
    door takes (``ms.tune_tir(..., runner=..., verbose=0)``,
    ``MetaScheduleTuneTIR(work_dir, max_trials_global, **options)``): the fields of
    :class:`TuneConfig` and :class:`TuneComponents`, ``strategy`` for the task
    scheduling strategy, and ``search_options`` (a dict or :class:`SearchOptions`) for
    the evolutionary search's sizes. A TuningError names an unknown option."""
    config: dict[str, Any] = {}
    components: dict[str, Any] = {}
    search_options = keywords.pop("search_options", None)
    for key, value in keywords.items():
        name = _RENAMED_KEYWORDS.get(key, key)
        if name in _CONFIG_KEYWORDS:
            config[name] = value
        elif name in _COMPONENT_KEYWORDS:
            components[name] = value
        else:
            known = sorted((_CONFIG_KEYWORDS | _COMPONENT_KEYWORDS | {"search_options"}
                            | set(_RENAMED_KEYWORDS)) - set(_RENAMED_KEYWORDS.values()))
            raise TuningError(f"unknown tuning option {key!r}; the options are "
                              f"{', '.join(known)}")
    if search_options is not None:
        if components.get("search_strategy") is not None:
            raise TuningError("give search_options or a search_strategy, not both",
                              hint="size the strategy itself, e.g. "
                                   "EvolutionaryStrategy(SearchOptions(...))")
        components["search_strategy"] = EvolutionaryStrategy(
            SearchOptions.from_dict(search_options))
    if components.get("cost_model") is None:
        components.pop("cost_model", None)
    return TuneConfig(max_trials_global, **config), TuneComponents(**components)


def best_records(database: Any, tasks: Sequence[TuneTask]) -> list[TuningRecord | None]:
    """The fastest valid record of each task's workload (None where there is none)."""
    db = database if isinstance(database, Database) else open_database(database)
    try:
        return [db.best_record(t.workload) for t in tasks]
    finally:
        if db is not database:
            db.close()


__all__ = ["CONFIRM_SHARE", "SearchSpeed", "TuningEngine", "best_records",
           "check_gpu_for_measuring", "check_target_buildable", "confirm_best",
           "default_trials_per_round", "options_from_keywords", "tune_tasks"]

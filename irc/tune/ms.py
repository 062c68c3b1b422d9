"""``irc.tune.ms``: the MetaSchedule-style front door (seed 003).

::

    db = ms.tune_tir(mod, "llvm", work_dir, max_trials_global=64)     # loop functions
    db = ms.tune_relax(mod, params, "llvm", work_dir, max_trials_global=500)
    ex = ms.compile_relax(db, mod, "llvm", params)                   # irc.vm.Executable

    with irc.target.Target("llvm"):
        mod = passes.Sequential([passes.get_pipeline("zero"),
                                 ms.MetaScheduleTuneTIR(work_dir, max_trials_global=64),
                                 ms.MetaScheduleApplyDatabase(work_dir)])(mod)

A work directory holds the database in MetaSchedule's file names
(``database_tuning_record.json``, ``database_workload.json``) and the tuning logs
(``logs/``); pointing a run at an existing directory resumes it. Tuning runs on the
engine of :mod:`irc.tune.tuner` (the same as ``irc.tune.auto_scheduler``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Sequence, TextIO

from ..core.diagnostics import TuningError
from ..core.gc_pauses import with_fewer_gc_pauses
from ..core.module import IRModule
from ..core.target import Target
from ..core.transform import Pass, PassContext
from ..tir.stmt import PrimFunc
from .database import Database, JSONDatabase, open_database
from .graph import apply_database, compile_tuned, graph_tasks, prepare_graph, prim_func_tasks
from .measure import measuring_hardware
from .runner import LocalRunner
from .task import TuneTask
from .tuner import options_from_keywords, tune_tasks


def _work_dir_database(work_dir: str, target: Any = None) -> JSONDatabase:
    if not isinstance(work_dir, (str, os.PathLike)) or not os.fspath(work_dir):
        raise TuningError(f"work_dir must be a directory path, got {work_dir!r}")
    os.makedirs(work_dir, exist_ok=True)
    return JSONDatabase.from_work_dir(os.fspath(work_dir), target)


def _run(tasks: Sequence[TuneTask], work_dir: str, target: Target, max_trials_global: int,
         database: Database | None, **options: Any) -> Database:
    """Tune ``tasks`` into ``database`` (default: the work directory's); ``options`` are
    those of :func:`~irc.tune.tuner.options_from_keywords`."""
    if work_dir:
        options.setdefault("log_dir", os.path.join(os.fspath(work_dir), "logs"))
    config, components = options_from_keywords(max_trials_global, **options)
    db = database if database is not None else \
        _work_dir_database(work_dir, measuring_hardware(components.runner, target))
    if not tasks:
        return db
    tune_tasks(tasks, db, config, components)
    return db


@with_fewer_gc_pauses
def tune_tir(mod: IRModule | PrimFunc, target: Any, work_dir: str, max_trials_global: int,
             *, num_trials_per_iter: int | None = None, time_budget: float | None = None,
             database: Database | None = None, builder: Any = None, runner: Any = None,
             cost_model: Any = "auto", strategy: str = "gradient", seed: int = 0,
             verbose: int = 1, out: TextIO | None = None) -> Database:
    """Tune every loop function of ``mod`` (a PrimFunc, or an IRModule of them) within
    ``max_trials_global`` measurements in total; returns the database (in ``work_dir``
    unless ``database`` is given)."""
    t = Target.canon(target)
    if isinstance(mod, PrimFunc):
        mod = IRModule(functions={"main": mod})
    if not isinstance(mod, IRModule):
        raise TuningError(f"tune_tir takes a PrimFunc or an IRModule, got {type(mod).__name__}")
    tasks = prim_func_tasks(mod, t)
    return _run(tasks, work_dir, t, max_trials_global, database,
                num_trials_per_iter=num_trials_per_iter, time_budget=time_budget,
                builder=builder, runner=runner, cost_model=cost_model, strategy=strategy,
                seed=seed, verbose=verbose, out=out)


#: How a network's CPU kernels are measured (see :func:`network_runner`).
NETWORK_RUNNER_OPTIONS = {"number": 1, "repeat": 3, "min_repeat_ms": 0.0,
                          "enable_cpu_cache_flush": True}


def network_runner(log_dir: str | None = None) -> LocalRunner:
    """The runner of a network's CPU kernels: each candidate timed after a cache flush,
    one run per repeat. In a network each kernel runs after others that evicted its
    weights from the caches, so a candidate that relies on warm weights would win in
    isolation and lose in the model (TVM gives network tuning the same advice)."""
    return LocalRunner(**NETWORK_RUNNER_OPTIONS, log_dir=log_dir)


@with_fewer_gc_pauses
def tune_relax(mod: Any, params: Any, target: Any, work_dir: str, max_trials_global: int,
               time_budget: float | None = None, *, num_trials_per_iter: int | None = None,
               database: Database | None = None, builder: Any = None, runner: Any = None,
               cost_model: Any = "auto", strategy: str = "gradient", seed: int = 0,
               verbose: int = 1, out: TextIO | None = None) -> Database:
    """Tune a graph module: weights ``params`` bound, the default pipeline applied, one
    task per distinct fused loop function (weighted by its calls), trials given by the
    gradient task scheduler within ``max_trials_global`` (and ``time_budget`` seconds);
    returns the database. Without a ``runner``, CPU candidates are timed with cold
    caches (``LocalRunner(number=1, repeat=3, enable_cpu_cache_flush=True)``), as the
    kernels of a network run."""
    t = Target.canon(target)
    prepared = prepare_graph(mod, params, t)
    tasks = graph_tasks(prepared, t)
    own_runner = None
    if runner is None and t.kind.name == "llvm":
        own_runner = runner = network_runner(
            os.path.join(os.fspath(work_dir), "logs") if work_dir else None)
    try:
        return _run(tasks, work_dir, t, max_trials_global, database,
                    num_trials_per_iter=num_trials_per_iter, time_budget=time_budget,
                    builder=builder, runner=runner, cost_model=cost_model,
                    strategy=strategy, seed=seed, verbose=verbose, out=out)
    finally:
        if own_runner is not None:
            own_runner.close()


def compile_relax(database: Any, mod: Any, target: Any, params: Any = None,
                  check_in_network: bool = True) -> Any:
    """Build ``mod`` with the best schedules of ``database`` (a Database, a record file
    or a work directory): an ``irc.vm.Executable``. Loop functions without records keep
    their default schedule, and so do those whose tuned kernel runs slower than the
    default one inside the network (``check_in_network``, on the CPU: both builds are
    profiled on random inputs, :mod:`irc.tune.network_check`)."""
    t = Target.canon(target)
    if isinstance(database, (str, os.PathLike)) and os.path.isdir(database):
        database = _work_dir_database(os.fspath(database), t)
    return compile_tuned(mod, database, t, params, check_in_network=check_in_network)


@dataclass(frozen=True, init=False)
class MetaScheduleTuneTIR(Pass):
    """Tune the loop functions of the module for the current target (``with target:``)
    within ``max_trials_global`` trials, recording into ``work_dir``; the module is
    returned unchanged (apply the results with :class:`MetaScheduleApplyDatabase`).
    ``options`` are the keyword options of :func:`~irc.tune.tuner.options_from_keywords`
    (``num_trials_per_iter``, ``time_budget``, ``runner``, ``cost_model``,
    ``search_options``, ``verbose``, ...); an unknown one is a TuningError."""

    work_dir: str
    max_trials_global: int
    options: dict[str, Any] = field(hash=False)

    def __init__(self, work_dir: str, max_trials_global: int,
                 max_trials_per_task: int | None = None, **options: Any):
        if max_trials_per_task is not None:
            options.setdefault("num_trials_per_iter", max_trials_per_task)
        options_from_keywords(max_trials_global, **options)  # a TuningError names bad ones
        object.__setattr__(self, "work_dir", work_dir)
        object.__setattr__(self, "max_trials_global", max_trials_global)
        object.__setattr__(self, "options", options)

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        target = Target.current()
        if target is None:
            raise TuningError("MetaScheduleTuneTIR needs a target",
                              hint="run the pass inside 'with irc.target.Target(\"llvm\"):'")
        db = _work_dir_database(self.work_dir, target)
        try:
            tasks = prim_func_tasks(mod, target)
            _run(tasks, self.work_dir, target, self.max_trials_global, db, **self.options)
        finally:
            db.close()
        return mod


@dataclass(frozen=True)
class MetaScheduleApplyDatabase(Pass):
    """Replace each loop function by its best tuned schedule from ``work_dir`` (or
    ``database``) for the current target, marked ``tir.is_scheduled``; functions
    without records keep their default schedule. Layout-rewritten weights are packed
    once in the graph (constants at compile time, other values by a packing call)."""

    work_dir: str | None = None
    database: Any = None

    def __post_init__(self) -> None:
        if self.work_dir is None and self.database is None:
            raise TuningError("MetaScheduleApplyDatabase needs work_dir or database")

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        target = Target.current()
        if target is None:
            raise TuningError("MetaScheduleApplyDatabase needs a target",
                              hint="run the pass inside 'with irc.target.Target(\"llvm\"):'")
        if self.database is not None:
            db = open_database(self.database, target)
        else:
            db = _work_dir_database(self.work_dir, target)
        try:
            return apply_database(mod, db, target)
        finally:
            if db is not self.database:
                db.close()


__all__ = ["MetaScheduleApplyDatabase", "MetaScheduleTuneTIR", "compile_relax", "tune_relax",
           "tune_tir"]

"""The tuning engine: search, measurement, database, cost model and task scheduler
working together. Both front doors (``irc.tune.ms`` and ``irc.tune.auto_scheduler``)
run their tuning through :func:`tune_tasks`.

For each round the task scheduler gives a task, the task's
:class:`~irc.tune.search.EvolutionarySearch` proposes candidates the database has not
measured, the builder compiles them in parallel worker processes, the runner times them
one at a time in an isolated process, and every result is committed to the database as
soon as it is known (a killed run loses at most the candidate being timed). The shared
cost model learns from each round. Before the first round of a task, its unscheduled
function (the default schedule) is measured too, so a tuned kernel slower than the
default never becomes the task's best; a run pointed at an existing database resumes:
measured candidates are never measured again, and they seed the cost model and the
initial populations.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from typing import Any, Callable, Sequence, TextIO

from ..codegen import build as build_mod
from ..core.diagnostics import IRCError, TuningError
from ..core.target import Target, host_num_cores
from ..dlight.cpu import default_rules
from .builder import LocalBuilder
from .cost_model import CostModel, create_cost_model
from .database import Database, open_database
from .features import extract_features
from .measure import (
    Builder,
    MeasureInput,
    MeasureResult,
    Runner,
    apply_trace,
    combine_results,
)
from .record import MeasureErrorKind, TuningRecord, trace_key
from .runner import LocalRunner
from .search import EvolutionarySearch, banner
from .search_pool import EvaluatorPool
from .space import SpaceGenerator
from .task import TuneTask
from .task_scheduler import TaskScheduler, TaskTuner, TuneSummary

logger = logging.getLogger("irc.tune")

# Search sizes for tuning runs; see EvolutionarySearch.
DEFAULT_SEARCH = {"population_size": 192, "num_iters": 3, "init_measured_ratio": 0.2,
                  "init_min_unmeasured": 48, "genetic_mutate_prob": 0.85,
                  "eps_greedy": 0.05}


# Search option names of Ansor's SketchPolicy, mapped to irc's.
_ANSOR_SEARCH_NAMES = {"evolutionary_search_population": "population_size",
                       "evolutionary_search_num_iters": "num_iters",
                       "evolutionary_search_mutation_prob": "genetic_mutate_prob",
                       "sample_init_min_population": "init_min_unmeasured",
                       "eps_greedy": "eps_greedy"}
_SEARCH_KEYS = set(DEFAULT_SEARCH) | {"max_fail_count"}


def search_options_of(options: dict | None) -> dict:
    """Search options with Ansor's names translated; a TuningError names unknown ones."""
    out = {}
    for key, value in (options or {}).items():
        key = _ANSOR_SEARCH_NAMES.get(key, key)
        if key not in _SEARCH_KEYS:
            raise TuningError(f"unknown search option {key!r}; the evolutionary search takes "
                              f"{', '.join(sorted(_SEARCH_KEYS))}")
        out[key] = value
    return out


def check_target_buildable(target: Target) -> None:
    """Raise a TuningError when irc cannot compile kernels for ``target`` (tuning
    measures compiled kernels)."""
    if target.kind.name == "llvm":
        return
    if target.kind.name not in getattr(build_mod, "_BUILDERS", {}):
        raise TuningError(f"cannot tune for {target}: irc's code generation for "
                          f"{target.kind.name} is not available yet, so candidates cannot be "
                          "built and measured",
                          hint="tune for 'llvm' (the CPU); GPU search spaces can still be "
                               "generated with irc.tune.space.SpaceGenerator('cuda')")


class _TaskState:
    """A task's search and what the engine knows about it."""

    def __init__(self, task: TuneTask, search: EvolutionarySearch | None, error: str = ""):
        self.task = task
        self.search = search
        self.error = error
        self.best = math.inf
        self.measured = 0
        self.since_best = 0  # trials since the best latency last improved


class TuningEngine(TaskTuner):
    """Measures candidates of ``tasks`` for the task scheduler (see the module docstring).

    ``database`` is a Database or a record file path; ``builder``/``runner`` default to
    :class:`LocalBuilder` and :class:`LocalRunner` (correctness checked against the
    unscheduled function); ``cost_model`` is a CostModel or a name for
    :func:`~irc.tune.cost_model.create_cost_model`; ``space`` a SpaceGenerator (the
    target's defaults when None); ``search_options`` overrides
    :data:`DEFAULT_SEARCH`; ``callbacks`` are called as ``cb(inputs, results)`` after
    each measured candidate; ``search_workers`` processes make candidates for the search
    (default: one per core; 0 or 1: in this process); ``early_stopping`` ends a task
    after that many trials without improvement.
    """

    def __init__(self, tasks: Sequence[TuneTask], database: Any, *,
                 builder: Builder | None = None, runner: Runner | None = None,
                 cost_model: Any = "auto", space: SpaceGenerator | None = None,
                 search_options: dict | None = None,
                 callbacks: Sequence[Callable] = (), seed: int = 0, verbose: int = 1,
                 out: TextIO | None = None, log_dir: str | None = None,
                 early_stopping: int | None = None, search_workers: int | None = None):
        self.tasks = list(tasks)
        if not self.tasks:
            raise TuningError("nothing to tune: the task list is empty")
        self.target = self.tasks[0].target
        for t in self.tasks:
            if t.target != self.target:
                raise TuningError(f"tasks for different targets ({self.target} and "
                                  f"{t.target}) cannot be tuned together")
        check_target_buildable(self.target)
        self.database: Database = open_database(database, self.target) \
            if not isinstance(database, Database) else database
        self._own_db = not isinstance(database, Database)
        self._own_builder = builder is None
        self._own_runner = runner is None
        self.builder = builder if builder is not None else LocalBuilder(log_dir=log_dir)
        self.runner = runner if runner is not None else \
            LocalRunner(check_correctness=True, log_dir=log_dir)
        self._default_runner: Runner | None = None
        self.log_dir = log_dir
        if isinstance(cost_model, CostModel):
            self.cost_model = cost_model
        else:
            self.cost_model = create_cost_model(cost_model or "auto")
        self.space = space if space is not None else SpaceGenerator(self.target)
        n_workers = host_num_cores() if search_workers is None else int(search_workers)
        self.pool = EvaluatorPool(n_workers if n_workers > 1 else 0, log_dir)
        self.search_options = {**DEFAULT_SEARCH, **search_options_of(search_options)}
        self.callbacks = list(callbacks)
        self.seed = int(seed)
        self.verbose = int(verbose)
        self.out = out
        self.states: list[_TaskState | None] = [None] * len(self.tasks)
        self._preexisting = {t.workload.key: len(self.database.records_of(t.workload))
                             for t in self.tasks}
        self.early_stopping = early_stopping
        self._default_traces: dict[int, Any] = {}
        self.error_counts: dict[str, int] = {}
        self.measured = 0
        self.measure_seconds = 0.0
        self._ct = 0

    # -- output ---------------------------------------------------------------------------
    def _print(self, text: str, level: int = 1) -> None:
        if self.verbose >= level:
            print(text, file=self.out if self.out is not None else sys.stdout, flush=True)

    # -- per-task state -------------------------------------------------------------------
    def state(self, i: int) -> _TaskState:
        """The search state of task ``i`` (created on first use, warmed from the
        database)."""
        st = self.states[i]
        if st is not None:
            return st
        task = self.tasks[i]
        db = self.database
        if db.get_workload(task.workload.key) is None:
            db.commit_workload(task.workload)
        try:
            search = EvolutionarySearch(task.func, self.space, self.cost_model,
                                        seed=self.seed + 7919 * i, verbose=self.verbose,
                                        out=self.out, pool=self.pool, **self.search_options)
        except IRCError as err:
            logger.warning("task %s cannot be searched: %s", task.name, err)
            st = self.states[i] = _TaskState(task, None, str(err))
            return st
        st = self.states[i] = _TaskState(task, search)
        self._warm_start(st)
        return st

    def _warm_start(self, st: _TaskState, records: Sequence[TuningRecord] | None = None
                    ) -> int:
        """Teach the search and the cost model what a database already measured (the
        engine's own by default); returns how many records were used."""
        own = records is None
        if records is None:
            records = self.database.records_of(st.task.workload)
        if not records or st.search is None:
            return 0
        search = st.search
        feats, groups, costs = [], [], []
        for rec in records:
            cost = rec.mean_cost
            st.best = min(st.best, cost)
            if rec.is_default or not _is_search_trace(rec.trace):
                # The unscheduled function or a default schedule: learn from it, but it
                # is not a member of the search space to mutate.
                search.mark_measured_trace(rec.trace_key)
                try:
                    f = extract_features(apply_trace(st.task.func, rec.trace))
                except IRCError:
                    continue
            else:
                cand = self.space.replay(st.task.func, rec.trace)
                if cand is None or not search.featurize(cand):
                    search.mark_measured_trace(rec.trace_key)
                    continue
                search.add_measured(cand, cost)
                search.mark_measured_trace(rec.trace_key)
                f = cand.features
            feats.append(f)
            groups.append(st.task.workload.key)
            costs.append(cost)
        if own:
            st.measured = len(records)
        if feats:
            self.cost_model.update_features(feats, groups, costs)
        if own and self._preexisting.get(st.task.workload.key):
            self._print(f"{st.task.name}: resuming from {len(records)} measurement records "
                        f"in {getattr(self.database, 'path_tuning_record', 'the database')}")
        return len(feats)

    def preload(self, task_id: int, database: Database) -> int:
        """Seed task ``task_id``'s search and the cost model with the records of another
        database (``PreloadMeasuredStates``); returns how many were used."""
        st = self.state(task_id)
        return self._warm_start(st, database.records_of(st.task.workload))

    # -- measuring ------------------------------------------------------------------------
    def _default_runner_for(self) -> Runner:
        if self._default_runner is None:
            r = self.runner
            if isinstance(r, LocalRunner):
                # One run per repeat: an unscheduled kernel can take seconds.
                self._default_runner = LocalRunner(timeout=r.timeout, number=1, repeat=1,
                                                   min_repeat_ms=r.min_repeat_ms,
                                                   log_dir=self.log_dir)
            else:
                self._default_runner = r
        return self._default_runner

    def measure(self, task: TuneTask, inputs: Sequence[MeasureInput],
                runner: Runner | None = None) -> list[MeasureResult]:
        """Build ``inputs`` in parallel, then time them one by one; each result is
        committed to the database (and passed to the callbacks) right away."""
        inputs = list(inputs)
        if not inputs:
            return []
        runner = runner or self.runner
        t0 = time.perf_counter()
        builds = self.builder.build(inputs)
        results = []
        for inp, b in zip(inputs, builds):
            run = runner.run([inp], [b])[0]
            res = combine_results([b], [run])[0]
            record = res.to_record(inp, seed=self.seed, task_name=task.name)
            self.database.commit_record(record)
            if res.error_kind:
                self.error_counts[res.error_kind] = self.error_counts.get(res.error_kind, 0) + 1
            for cb in self.callbacks:
                cb([inp], [res])
            results.append(res)
        self.measured += len(results)
        self.measure_seconds += time.perf_counter() - t0
        # Seed 000/002's progress marks: a dot per build, a star per run.
        self._print("." * len(inputs) + "*" * len(results), 2)
        return results

    def default_trace(self, task_id: int) -> Any:
        """The trace of task ``task_id``'s default schedule: the first default schedule
        rule (``irc.dlight``) that applies to it, else None (the unscheduled
        function)."""
        if task_id in self._default_traces:
            return self._default_traces[task_id]
        trace = None
        task = self.tasks[task_id]
        if task.target.kind.name == "llvm":
            for rule in default_rules():
                try:
                    sch = rule.apply(task.func, task.target, False)
                except IRCError:
                    sch = None
                if sch is not None:
                    trace = sch.trace.simplified(remove_postproc=False).to_json()
                    break
        self._default_traces[task_id] = trace
        return trace

    def measure_default(self, task_id: int) -> float | None:
        """Measure the default schedule of a task (see :meth:`default_trace`): what an
        untuned build uses, so a tuned kernel slower than it is never chosen. None when
        the database already has it."""
        task = self.tasks[task_id]
        trace = self.default_trace(task_id)
        st = self.states[task_id]
        if st is not None and st.search is not None and trace is not None:
            st.search.mark_measured_trace(trace_key(trace))
        if self.database.has_measured(task.workload, trace):
            return None
        if self.database.get_workload(task.workload.key) is None:
            self.database.commit_workload(task.workload)
        res = self.measure(task, [MeasureInput(task.workload, trace, task.target)],
                           self._default_runner_for())[0]
        st = self.states[task_id]
        if st is not None:
            st.best = min(st.best, res.mean_cost)
        self._report(task, [res], label="default")
        return res.mean_cost

    def tune_round(self, task_id: int, num_trials: int) -> list[float]:
        st = self.state(task_id)
        if st.search is None:
            return []
        if self.early_stopping is not None and st.since_best >= self.early_stopping:
            self._print(f"{st.task.name}: stopping early, no improvement in "
                        f"{st.since_best} trials")
            return []
        task = st.task
        cands = st.search.generate(num_trials)
        # The search already skips what it knows was measured; the database has the
        # last word (another run may have written to it meanwhile).
        cands = [c for c in cands if not self.database.has_measured(task.workload,
                                                                     c.trace_json)]
        if not cands:
            return []
        inputs = [MeasureInput(task.workload, c.trace_json, task.target, features=c.features)
                  for c in cands]
        self._print(banner("Measure"))
        self._print(f"Get {len(inputs)} programs to measure:")
        results = self.measure(task, inputs)
        costs = [r.mean_cost for r in results]
        for c, cost in zip(cands, costs):
            st.search.add_measured(c, cost)
        self.cost_model.update_features([c.features for c in cands],
                                        [task.workload.key] * len(cands), costs)
        st.measured += len(results)
        self._report(task, results, st=st)
        return costs

    def _report(self, task: TuneTask, results: Sequence[MeasureResult],
                st: _TaskState | None = None, label: str = "") -> None:
        flops = max(task.flop_count, 0.0)
        best = st.best if st is not None else math.inf
        for res in results:
            self._ct += 1
            cost = res.mean_cost
            if st is not None:
                st.since_best = 0 if cost < best else st.since_best + 1
            best = min(best, cost)
            gf = flops / cost / 1e9 if math.isfinite(cost) and cost > 0 else 0.0
            best_gf = flops / best / 1e9 if math.isfinite(best) and best > 0 else 0.0
            if res.is_valid:
                costs = ", ".join(f"{c:.4g}" for c in res.costs)
                what = f"MeasureResult(cost:[{costs}], error_no:0, all_cost:{res.all_cost:.2f}, " \
                       f"Tstamp:{res.timestamp:.2f})"
            else:
                code = MeasureErrorKind.ALL.index(res.error_kind) + 1 \
                    if res.error_kind in MeasureErrorKind.ALL else 1
                what = f"MeasureResult(error_type:{res.error_kind}, error_no:{code}, " \
                       f"all_cost:{res.all_cost:.2f}, Tstamp:{res.timestamp:.2f})"
                msg = res.error_msg.strip().splitlines()
                if msg:
                    what += f"\n    {msg[0][:300]}"
            tag = f" ({label})" if label else ""
            self._print(f"No: {self._ct}\tGFLOPS: {gf:.2f} / {best_gf:.2f}\tresults: {what}{tag}")
        if st is not None:
            st.best = best

    # -- lifetime -------------------------------------------------------------------------
    def search_speed(self) -> tuple[int, float]:
        """(candidates scored, seconds spent scoring them) over all tasks."""
        n, secs = 0, 0.0
        for st in self.states:
            if st is not None and st.search is not None:
                n += st.search.scored
                secs += st.search.score_seconds
        return n, secs

    def close(self) -> None:
        """Stop the worker processes this engine started and close its database."""
        if self._own_builder:
            self.builder.close()
        if self._own_runner:
            self.runner.close()
        if self._default_runner is not None and self._default_runner is not self.runner:
            self._default_runner.close()
        self.pool.close()
        if self._own_db:
            self.database.close()

    def __enter__(self) -> TuningEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _is_search_trace(trace: Any) -> bool:
    """True for a trace the search made (it has a postprocessing part)."""
    insts = trace[0] if isinstance(trace, list) and trace else ()
    return any(isinstance(i, list) and i and i[0] == "EnterPostproc" for i in insts)


def default_trials_per_round(max_trials: int, num_tasks: int) -> int:
    """Measured candidates per round: small rounds early so the cost model learns
    (between 8 and 64, about a quarter of a task's share of the budget)."""
    share = max(1, max_trials // max(1, num_tasks))
    return int(min(64, max(8, share // 4)))


def tune_tasks(tasks: Sequence[TuneTask], database: Any, max_trials_global: int, *,
               num_trials_per_iter: int | None = None, task_weights: Sequence[float] | None
               = None, time_budget: float | None = None, strategy: str = "gradient",
               builder: Builder | None = None, runner: Runner | None = None,
               cost_model: Any = "auto", space: SpaceGenerator | None = None,
               search_options: dict | None = None, callbacks: Sequence[Callable] = (),
               seed: int = 0, verbose: int = 1, out: TextIO | None = None,
               log_dir: str | None = None, measure_default: bool = True,
               early_stopping: int | None = None,
               before: Callable[[TuningEngine], None] | None = None
               ) -> tuple[TuneSummary, TuningEngine]:
    """Tune ``tasks`` with up to ``max_trials_global`` measurements (and within
    ``time_budget`` seconds when given), recording into ``database``; returns the task
    scheduler's summary and the (closed) engine, whose counters say what happened.
    With a zero budget nothing is measured: every task keeps its default schedule.
    ``early_stopping`` ends a task after that many trials without improvement;
    ``before(engine)`` runs once the engine exists (e.g. to preload records)."""
    if max_trials_global is None or int(max_trials_global) < 0:
        raise TuningError(f"the trial budget must be a non-negative integer, got "
                          f"{max_trials_global!r}")
    if time_budget is not None and time_budget <= 0:
        raise TuningError(f"time_budget must be positive seconds, got {time_budget!r}")
    tasks = list(tasks)
    per_round = num_trials_per_iter or default_trials_per_round(int(max_trials_global),
                                                                len(tasks))
    if per_round < 1:
        raise TuningError(f"num_trials_per_iter must be at least 1, got {per_round}")
    engine = TuningEngine(tasks, database, builder=builder, runner=runner,
                          cost_model=cost_model, space=space, search_options=search_options,
                          callbacks=callbacks, seed=seed, verbose=verbose, out=out,
                          log_dir=log_dir, early_stopping=early_stopping)
    try:
        if before is not None:
            before(engine)
        sched = TaskScheduler(tasks, task_weights=task_weights, strategy=strategy,
                              load_log_file=engine.database, seed=seed,
                              verbose=1 if verbose and len(tasks) > 1 else 0,
                              num_measures_per_round=per_round,
                              measure_default=measure_default, out=out)
        summary = sched.tune(engine, int(max_trials_global), time_budget=time_budget)
        if verbose:
            n, secs = engine.search_speed()
            errors = ", ".join(f"{k}: {v}" for k, v in sorted(engine.error_counts.items()))
            rate = f"{n / secs:.0f}" if secs > 0 else "-"
            engine._print(f"Tuning done: {summary.total_trials} trials in "
                          f"{summary.elapsed:.1f} s ({engine.measure_seconds:.1f} s measuring); "
                          f"search scored {n} candidates ({rate}/s)"
                          + (f"; errors: {errors}" if errors else ""))
    finally:
        engine.close()
    return summary, engine


def best_records(database: Any, tasks: Sequence[TuneTask]) -> list[TuningRecord | None]:
    """The fastest valid record of each task's workload (None where there is none)."""
    db = database if isinstance(database, Database) else open_database(database)
    try:
        return [db.best_record(t.workload) for t in tasks]
    finally:
        if db is not database:
            db.close()


__all__ = ["DEFAULT_SEARCH", "TuningEngine", "best_records", "check_target_buildable",
           "default_trials_per_round", "tune_tasks"]

"""The tuning engine: search, measurement, database and cost model working together
for the task scheduler. :func:`irc.tune.tuner.tune_tasks` makes one per run and has a
:class:`~irc.tune.task_scheduler.TaskScheduler` drive it.

The engine is configured by a :class:`~irc.tune.options.TuneConfig` (seed, logging,
early stopping, search workers) and :class:`~irc.tune.options.TuneComponents` (builder,
runner, cost model, search space, search strategy, callbacks). For each round the task
scheduler gives a task, the task's search (made by the
:class:`~irc.tune.strategy.SearchStrategy`; by default
:class:`~irc.tune.search.EvolutionaryStrategy`) proposes candidates the database has not
measured, the builder compiles them in parallel worker processes, the runner times them
one at a time in an isolated process, and every result is committed to the database as
soon as it is known (a killed run loses at most the candidate being timed). The shared
cost model learns from each round. Before the first round of a task, its default
schedule (the default rules', else the unscheduled function) is measured too, so a
tuned kernel slower than the default never becomes the task's best, and the task's
first rounds measure the default rule's neighbouring schedules
(:func:`~irc.tune.task.default_variant_traces`) before the search's candidates, so
tuning starts from the default schedule; a run pointed at an existing database resumes:
measured candidates are never measured again, and they seed the cost model and the
initial populations.

With an :class:`~irc.tune.measure.AsyncRunner` (a cluster) the engine keeps two rounds
of different tasks in flight (:meth:`TuningEngine.start_round`,
:meth:`TuningEngine.finish_rounds`: the overlapped-round side of
:class:`~irc.tune.task_scheduler.TaskTuner`), so the runners measure one round while the
search prepares the next; each :class:`~irc.tune.measure.FinishedCandidate` the runner
returns is recorded at once into the round its :class:`~irc.tune.measure.BatchHandle`
names.

Nothing fails silently: candidates that fail to build or run, records that cannot be
replayed, default rules that fail, search workers that fail and tasks that cannot be
searched are logged on the ``irc.tune`` (and ``irc.dlight``) loggers and counted in
:meth:`TuningEngine.counts` (:class:`~irc.tune.task_scheduler.TuningCounts`).
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time
from typing import Any, NamedTuple, Sequence, TextIO

from ..codegen import can_build
from ..codegen.nvrtc import nvrtc_version
from ..core.diagnostics import IRCError, TuningError
from ..core.target import Target, host_num_cores
from ..dlight import default_rules_for
from ..runtime.device import cuda as cuda_device
from .builder import LocalBuilder
from .cost_model import CostModel, create_cost_model, describe_cost_model
from .database import Database, open_database
from .features import extract_features
from .measure import (
    AsyncRunner,
    BatchHandle,
    BuildResult,
    FinishedCandidate,
    MeasureInput,
    MeasureResult,
    Runner,
    RunResult,
    apply_trace,
    combine_results,
)
from .options import TuneComponents, TuneConfig
from .record import MeasureErrorKind, TuningRecord, trace_key
from .runner import LocalRunner
from .search import EvolutionaryStrategy, banner
from .search_pool import EvaluatorPool
from .space import SpaceGenerator
from .strategy import SearchContext, SearchStrategy, TaskSearch, featurize
from .task import TuneTask, default_schedule_trace, default_variant_traces
from .task_scheduler import FinishedRound, TaskTuner, TuningCounts

logger = logging.getLogger(__name__)


def check_target_buildable(target: Target) -> None:
    """Raise a TuningError when irc cannot compile kernels for ``target`` (tuning
    measures compiled kernels)."""
    if not can_build(target):
        raise TuningError(f"cannot tune for {target}: irc's code generation for "
                          f"{target.kind.name} is not available yet, so candidates cannot be "
                          "built and measured",
                          hint="tune for 'llvm' (the CPU); GPU search spaces can still be "
                               "generated with irc.tune.space.SpaceGenerator('cuda')")
    if target.kind.name == "cuda":
        try:
            nvrtc_version()
        except IRCError as err:
            raise TuningError(f"cannot tune for {target}: CUDA candidates are compiled with "
                              f"NVRTC, which is not available: {err}",
                              hint="pip install 'irc[cuda]'") from None


def check_gpu_for_measuring(target: Target, index: int) -> None:
    """Raise a TuningError unless GPU ``index`` of this machine can run and time
    candidates for the CUDA ``target``: the GPU exists, its architecture is the
    target's ``-arch`` (a cubin for another one does not load), and the limits the search
    assumes (threads and shared memory per block, warp size, registers) are within the
    device's."""
    gpu = cuda_device(index)
    if not gpu.exist:
        raise TuningError(f"cannot tune for {target}: measuring CUDA candidates needs an "
                          f"NVIDIA GPU, and this machine has no cuda({index})",
                          hint="tune on a machine with a GPU (the builder needs none), or "
                               "pass a runner that measures elsewhere")
    attrs = gpu.attributes
    arch = "sm_{}{}".format(*attrs.compute_capability)
    if target.arch != arch:
        raise TuningError(f"cannot tune for {target} on cuda({index}), an {attrs.name} of "
                          f"architecture {arch}: its kernels would not load there",
                          hint=f"tune for 'cuda -arch={arch}' (irc.target.Target."
                               "from_device(irc.cuda()))")
    limits = [("max-num-threads", target.max_num_threads, attrs.max_threads_per_block),
              ("max-shared-memory-per-block", target.max_shared_memory_per_block,
               attrs.max_shared_memory_per_block),
              ("thread-warp-size", target.thread_warp_size, attrs.warp_size)]
    for option, want, have in limits:
        if option == "thread-warp-size" and want != have or want > have:
            raise TuningError(f"cannot tune for {target} on cuda({index}) ({attrs.name}): "
                              f"-{option}={want}, but the device's is {have}",
                              hint=f"leave -{option} out, or set it to {have}")


class SearchSpeed(NamedTuple):
    """How many candidates the searches made and scored, and the seconds it took."""

    scored: int
    seconds: float


class _TaskState:
    """A task's search and what the engine knows about it."""

    def __init__(self, task: TuneTask, search: TaskSearch | None, error: str = ""):
        self.task = task
        self.search = search
        self.error = error
        self.best = math.inf
        self.measured = 0
        self.since_best = 0  # trials since the best latency last improved


class _Variant(NamedTuple):
    """A schedule next to a task's default (:func:`default_variant_traces`) proposed for
    measuring: not a member of the search space, so the search only learns that it was
    measured."""

    trace_json: Any
    features: Any
    trace_key: str


class _Round:
    """A batch handed to an asynchronous runner: its task (``task_id`` -1 for a batch of
    :meth:`TuningEngine.measure`, which is not a search round), candidates and inputs,
    and one result slot per input, filled as results come."""

    __slots__ = ("task", "task_id", "cands", "inputs", "results", "started")

    def __init__(self, task: TuneTask, task_id: int, cands: list,
                 inputs: list[MeasureInput]):
        self.task = task
        self.task_id = task_id
        self.cands = cands
        self.inputs = inputs
        self.results: list[MeasureResult | None] = [None] * len(inputs)
        self.started = time.perf_counter()

    @property
    def done(self) -> bool:
        return all(r is not None for r in self.results)


class TuningEngine(TaskTuner):
    """Measures candidates of ``tasks`` for the task scheduler (see the module docstring).

    ``database`` is a Database or a record file path; ``config`` the run's options
    (:class:`~irc.tune.options.TuneConfig`: the engine reads the seed, the log settings,
    early stopping and the number of search workers); ``components`` the swappable parts
    (:class:`~irc.tune.options.TuneComponents`; the defaults are a
    :class:`LocalBuilder`, a :class:`LocalRunner` checking correctness against the
    unscheduled function, the ``"auto"`` cost model, the target's
    :class:`SpaceGenerator` and :class:`~irc.tune.search.EvolutionaryStrategy`).
    What went wrong is counted (:meth:`counts`) and logged on the ``irc.tune`` logger.
    """

    def __init__(self, tasks: Sequence[TuneTask], database: Database | str,
                 config: TuneConfig, components: TuneComponents = TuneComponents()):
        self.tasks = list(tasks)
        if not self.tasks:
            raise TuningError("nothing to tune: the task list is empty")
        self.target = self.tasks[0].target
        for t in self.tasks:
            if t.target != self.target:
                raise TuningError(f"tasks for different targets ({self.target} and "
                                  f"{t.target}) cannot be tuned together")
        check_target_buildable(self.target)
        self.config = config
        log_dir = config.log_dir
        self._own_builder = components.builder is None
        self._own_runner = components.runner is None
        self.builder = components.builder if components.builder is not None else \
            LocalBuilder(log_dir=log_dir)
        self.runner = components.runner if components.runner is not None else \
            LocalRunner(check_correctness=True, log_dir=log_dir)
        # A runner that measures elsewhere (a cluster) has the last word on the hardware
        # the records belong to: the database sees the records of that hardware.
        self.async_runner = self.runner if isinstance(self.runner, AsyncRunner) else None
        hardware = self.async_runner.hardware_fingerprint(self.target) \
            if self.async_runner is not None else self.target.fingerprint()
        if isinstance(database, Database):
            if database.target_fingerprint not in (None, hardware):
                raise TuningError(
                    f"the database was opened for hardware {database.target_fingerprint}, "
                    f"but the runner measures on {hardware}",
                    hint="open the database with the runner's hardware_fingerprint(target)")
            self.database = database
        else:
            self.database = open_database(database, hardware)
        self._own_db = not isinstance(database, Database)
        # Rounds in flight at once: with a runner that measures in the background, a
        # second round is searched while the first is measured.
        self.rounds_in_flight = 2 if self.async_runner is not None else 1
        self._rounds: dict[BatchHandle, _Round] = {}
        if self.target.kind.name == "cuda" and isinstance(self.runner, LocalRunner):
            check_gpu_for_measuring(self.target, self.runner.device_index)
        self._default_runner: Runner | None = None
        self.log_dir = log_dir
        if isinstance(components.cost_model, CostModel):
            self.cost_model = components.cost_model
        else:
            self.cost_model = create_cost_model(components.cost_model or "auto")
        self.space = components.space if components.space is not None else \
            SpaceGenerator(self.target)
        self.strategy: SearchStrategy = components.search_strategy \
            if components.search_strategy is not None else EvolutionaryStrategy()
        n_workers = host_num_cores() if config.search_workers is None \
            else int(config.search_workers)
        self.pool = EvaluatorPool(n_workers if n_workers > 1 else 0, log_dir)
        self.callbacks = list(components.callbacks)
        self.seed = int(config.seed)
        self.verbose = int(config.verbose)
        self.out = config.out
        self.states: list[_TaskState | None] = [None] * len(self.tasks)
        self._preexisting = {t.workload.key: len(self.database.records_of(t.workload))
                             for t in self.tasks}
        self.early_stopping = config.early_stopping
        # The run's log (``tune.log`` in the log directory): a line per measured trial,
        # numbered on from the records the database already had, and the summary.
        self._trial_base = sum(self._preexisting.values())
        self._log_file: TextIO | None = None
        if log_dir:
            try:
                os.makedirs(log_dir, exist_ok=True)
                self._log_file = open(os.path.join(log_dir, "tune.log"), "a",
                                      encoding="utf-8")
            except OSError as err:
                logger.warning("cannot write the tuning log in %s: %s", log_dir,
                               err.strerror)
        self.echo(describe_cost_model(self.cost_model))
        self.log(f"start: {len(self.tasks)} tasks, target {self.target}, "
                 f"{config.max_trials_global} trials"
                 + (f", {config.time_budget:.0f} s" if config.time_budget else "")
                 + f", {describe_cost_model(self.cost_model)}; "
                 f"{self._trial_base} records in {self.database.location or 'the database'}")
        self._default_traces: dict[int, Any] = {}
        # Per task, the variants of its default schedule not proposed yet (made on the
        # task's first round).
        self._variants: dict[int, list[Any]] = {}
        self.error_counts: dict[str, int] = {}
        self.replay_failures = 0
        self.rule_failures = 0
        self.default_fallbacks = 0
        self.measured = 0
        self.measure_seconds = 0.0
        self._ct = 0

    # -- output ---------------------------------------------------------------------------
    def log(self, text: str) -> None:
        """Append a time-stamped line to the run's ``tune.log`` (when there is a log
        directory)."""
        if self._log_file is None:
            return
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        try:
            self._log_file.write(f"{stamp} {text}\n")
            self._log_file.flush()
        except (OSError, ValueError):
            self._log_file = None  # a full disk or a closed file: stop logging, go on

    def echo(self, text: str, level: int = 1) -> None:
        """Print ``text`` on the run's output when the verbosity is at least ``level``."""
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
        context = SearchContext(self.space, self.cost_model, seed=self.seed + 7919 * i,
                                pool=self.pool, verbose=self.verbose, out=self.out)
        try:
            search = self.strategy.new_search(task, context)
        except IRCError as err:
            self.default_fallbacks += 1
            logger.warning("task %s cannot be searched; only its default schedule and the "
                           "default rule's variants are measured: %s",
                           task.name, err)
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
        failed: list[str] = []
        for rec in records:
            cost = rec.mean_cost
            st.best = min(st.best, cost)
            search.mark_measured_trace(rec.trace_key)
            if rec.is_default or not _is_search_trace(rec.trace):
                # The unscheduled function or a default schedule: learn from it, but it
                # is not a member of the search space to mutate.
                try:
                    f = extract_features(apply_trace(st.task.func, rec.trace))
                except IRCError as err:
                    failed.append(rec.trace_key)
                    logger.debug("task %s: record %s cannot be replayed: %s", st.task.name,
                                 rec.trace_key, err)
                    continue
            else:
                cand = self.space.replay(st.task.func, rec.trace)
                if cand is None or not featurize(cand):
                    failed.append(rec.trace_key)
                    logger.debug("task %s: record %s cannot be replayed into the search "
                                 "space", st.task.name, rec.trace_key)
                    continue
                search.add_measured(cand, cost)
                f = cand.features
            feats.append(f)
            groups.append(st.task.workload.key)
            costs.append(cost)
        if failed:
            self.replay_failures += len(failed)
            logger.warning("task %s: %d of %d measurement records cannot be replayed into "
                           "its search space (they count as measured but do not seed the "
                           "search or the cost model); first: record %s", st.task.name,
                           len(failed), len(records), failed[0])
        if own:
            st.measured = len(records)
        if feats:
            self.cost_model.update_features(feats, groups, costs)
        if own and self._preexisting.get(st.task.workload.key):
            self.echo(f"{st.task.name}: resuming from {len(records)} measurement records "
                        f"in {self.database.location or 'the database'}")
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
                # One run: an unscheduled kernel can take seconds.
                self._default_runner = LocalRunner(timeout=r.timeout, number=1, repeat=1,
                                                   min_repeat_ms=r.min_repeat_ms,
                                                   log_dir=self.log_dir,
                                                   device_index=r.device_index)
            else:
                self._default_runner = r
        return self._default_runner

    def measure(self, task: TuneTask, inputs: Sequence[MeasureInput],
                runner: Runner | None = None) -> list[MeasureResult]:
        """Build ``inputs`` in parallel, then time them (one by one, or on a cluster's
        runners at once); each result is committed to the database (and passed to the
        callbacks) as soon as it is known."""
        inputs = list(inputs)
        if not inputs:
            return []
        runner = runner or self.runner
        t0 = time.perf_counter()
        results: list[MeasureResult | None] = [None] * len(inputs)
        if runner is self.async_runner:
            batch = self.async_runner.submit(inputs, self.builder)
            rnd = self._rounds[batch] = _Round(task, -1, [], inputs)
            try:
                while not rnd.done:
                    self._collect(self.async_runner.poll())
            finally:
                del self._rounds[batch]
            results = rnd.results
        else:
            builds = self.builder.build(inputs)
            for k, (inp, b) in enumerate(zip(inputs, builds)):
                results[k] = self._record(task, inp, b, runner.run([inp], [b])[0])
        self.measure_seconds += time.perf_counter() - t0
        # Seed 000/002's progress marks: a dot per build, a star per run.
        self.echo("." * len(inputs) + "*" * len(results), 2)
        return results  # type: ignore[return-value]

    def _record(self, task: TuneTask, inp: MeasureInput, build: BuildResult,
                run: RunResult) -> MeasureResult:
        """Commit one measured candidate to the database, the callbacks and the log."""
        res = combine_results([build], [run])[0]
        record = res.to_record(inp, seed=self.seed, task_name=task.name)
        self.database.commit_record(record)
        if res.error_kind:
            self.error_counts[res.error_kind] = self.error_counts.get(res.error_kind, 0) + 1
            logger.info("task %s: candidate %s: %s: %s", task.name, inp.trace_key,
                        res.error_kind, first_line(res.error_msg))
        for cb in self.callbacks:
            cb([inp], [res])
        self.measured += 1
        n = self._trial_base + self.measured
        outcome = (f"{res.mean_cost * 1e3:.4f} ms" if res.is_valid else
                   f"{res.error_kind}: {first_line(res.error_msg)}")
        self.log(f"trial {n}: {task.name}: candidate {inp.trace_key}: {outcome}")
        return res

    def _collect(self, finished: Sequence[FinishedCandidate]) -> None:
        """Record candidates an asynchronous runner finished into their rounds."""
        for done in finished:
            rnd = self._rounds.get(done.batch)
            if rnd is None:
                continue  # a batch abandoned by an interrupted run
            rnd.results[done.index] = self._record(rnd.task, rnd.inputs[done.index],
                                                   done.build, done.run)

    def default_trace(self, task_id: int) -> Any:
        """The trace of task ``task_id``'s default schedule: the first default schedule
        rule (``irc.dlight``) that applies to it, else None (the unscheduled
        function)."""
        if task_id in self._default_traces:
            return self._default_traces[task_id]
        task = self.tasks[task_id]
        rules = default_rules_for(task.target)
        trace, failures = default_schedule_trace(task.func, task.target, rules,
                                                 name=task.name)
        self.rule_failures += failures
        if trace is None and rules:
            logger.info("task %s: no default schedule rule applies; its default is the "
                        "unscheduled function", task.name)
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
        if self.database.get_workload(task.workload.key) is None:
            self.database.commit_workload(task.workload)
        if not self.database.claim(task.workload, [trace])[0]:
            return None  # measured (or being measured by another run)
        # A default schedule is measured exactly as the candidates are (the same runner,
        # the same repeats): from one sample, a run that caught a descheduled thread
        # (milliseconds on a shared machine) made the default look 10-40x slower than it
        # is, and a slower tuned kernel replaced it. Only an unscheduled function (no
        # rule applies), which can take seconds, is run once.
        runner = self._default_runner_for() if trace is None else self.runner
        res = self.measure(task, [MeasureInput(task.workload, trace, task.target)],
                           runner)[0]
        st = self.states[task_id]
        if st is not None:
            st.best = min(st.best, res.mean_cost)
        self._report(task, [res], label="default")
        return res.mean_cost

    def tune_round(self, task_id: int, num_trials: int) -> list[float]:
        if self.async_runner is not None:
            if not self.start_round(task_id, num_trials):
                return []
            while True:
                for done in self.finish_rounds():
                    if done.task_id == task_id:
                        return list(done.costs)
        st, cands, inputs = self._propose(task_id, num_trials)
        if not inputs:
            return []
        results = self.measure(st.task, inputs)
        return self._learn(st, cands, results)

    def _propose(self, task_id: int, num_trials: int
                 ) -> tuple[_TaskState, list, list[MeasureInput]]:
        """A round's candidates: new to the search and to the database."""
        st = self.state(task_id)
        task = st.task
        if self.early_stopping is not None and st.since_best >= self.early_stopping:
            self.echo(f"{st.task.name}: stopping early, no improvement in "
                        f"{st.since_best} trials")
            return st, [], []
        cands: list = self._take_variants(task_id, st, num_trials)
        if st.search is None and not cands:
            return st, [], []
        if st.search is not None and len(cands) < num_trials:
            found = st.search.generate(num_trials - len(cands))
            # The search already skips what it knows was measured; the database has
            # the last word (another run may have written to it meanwhile, or be about
            # to measure a candidate: it claims them).
            if found:
                free = self.database.claim(task.workload, [c.trace_json for c in found])
                cands += [c for c, ok in zip(found, free) if ok]
        inputs = [MeasureInput(task.workload, c.trace_json, task.target, features=c.features)
                  for c in cands]
        if inputs:
            self.echo(banner("Measure"))
            self.echo(f"Get {len(inputs)} programs to measure:")
        return st, cands, inputs

    def _learn(self, st: _TaskState, cands: list, results: Sequence[MeasureResult]
               ) -> list[float]:
        """The search and the cost model learn from a measured round; its costs."""
        task = st.task
        costs = [r.mean_cost for r in results]
        for c, cost in zip(cands, costs):
            if isinstance(c, _Variant):
                if st.search is not None:
                    st.search.mark_measured_trace(c.trace_key)
            else:
                st.search.add_measured(c, cost)
        self.cost_model.update_features([c.features for c in cands],
                                        [task.workload.key] * len(cands), costs)
        st.measured += len(results)
        self._report(task, results, st=st)
        return costs

    def _take_variants(self, task_id: int, st: _TaskState, num: int) -> list[_Variant]:
        """Up to ``num`` variants of task ``task_id``'s default schedule not measured yet
        (claimed in the database); they come before the search's candidates, so the
        first rounds measure the default rule's neighbours."""
        pending = self._variants.get(task_id)
        if pending is None:
            pending = []
            if self.config.default_variants > 0:
                pending = default_variant_traces(st.task.func, st.task.target,
                                                 default_rules_for(st.task.target),
                                                 limit=self.config.default_variants)
            self._variants[task_id] = pending
        taken: list[_Variant] = []
        while pending and len(taken) < num:
            trace = pending.pop(0)
            if not self.database.claim(st.task.workload, [trace])[0]:
                continue  # measured before (a resumed run) or by another run
            try:
                features = extract_features(apply_trace(st.task.func, trace))
            except IRCError as err:
                logger.debug("task %s: a variant of its default schedule cannot be "
                             "replayed: %s", st.task.name, err)
                continue
            taken.append(_Variant(trace, features, trace_key(trace)))
        return taken

    # -- rounds in flight (an asynchronous runner) ----------------------------------------
    def start_round(self, task_id: int, num_trials: int) -> bool:
        """Propose a round of task ``task_id`` and hand it to the asynchronous runner;
        False when the search has nothing new to measure."""
        if self.async_runner is None:
            raise TuningError("start_round needs an asynchronous runner (a cluster)")
        st, cands, inputs = self._propose(task_id, num_trials)
        if not inputs:
            return False
        batch = self.async_runner.submit(inputs, self.builder)
        self._rounds[batch] = _Round(st.task, task_id, cands, inputs)
        return True

    def finish_rounds(self, timeout: float | None = None) -> list[FinishedRound]:
        """Wait (up to ``timeout`` seconds; None: until one finishes) for rounds started
        with :meth:`start_round`; returns each finished round. Each candidate is
        recorded as soon as it is measured."""
        if self.async_runner is None or not self._rounds:
            return []
        done: list[FinishedRound] = []
        deadline = None if timeout is None else time.monotonic() + timeout
        while not done:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            self._collect(self.async_runner.poll(left))
            for batch, rnd in list(self._rounds.items()):
                if rnd.task_id < 0 or not rnd.done:
                    continue
                del self._rounds[batch]
                self.measure_seconds += time.perf_counter() - rnd.started
                self.echo("." * len(rnd.inputs) + "*" * len(rnd.inputs), 2)
                costs = self._learn(self.state(rnd.task_id), rnd.cands, rnd.results)
                done.append(FinishedRound(task_id=rnd.task_id, costs=tuple(costs)))
            if deadline is not None and time.monotonic() >= deadline:
                break
        return done

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
            self.echo(f"No: {self._ct}\tGFLOPS: {gf:.2f} / {best_gf:.2f}\tresults: {what}{tag}")
        if st is not None:
            st.best = best

    # -- what happened --------------------------------------------------------------------
    def search_speed(self) -> SearchSpeed:
        """Candidates scored and seconds spent scoring them, over all tasks."""
        n, secs = 0, 0.0
        for st in self.states:
            if st is not None and st.search is not None:
                n += st.search.scored
                secs += st.search.score_seconds
        return SearchSpeed(n, secs)

    def counts(self) -> TuningCounts:
        """What went wrong so far (see :class:`TuningCounts`); ``replay_failures``
        includes the records the cost model skipped in ``update_from_file`` since it was
        created."""
        errors = self.error_counts
        return TuningCounts(
            build_failures=errors.get(MeasureErrorKind.BUILD_ERROR, 0)
            + errors.get(MeasureErrorKind.BUILD_TIMEOUT, 0),
            run_failures=errors.get(MeasureErrorKind.RUN_ERROR, 0)
            + errors.get(MeasureErrorKind.RUN_TIMEOUT, 0),
            wrong_results=errors.get(MeasureErrorKind.WRONG_RESULT, 0),
            replay_failures=self.replay_failures + self.cost_model.replay_failures,
            rule_failures=self.rule_failures,
            pool_failures=self.pool.failures,
            default_fallbacks=self.default_fallbacks)

    # -- lifetime -------------------------------------------------------------------------
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
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> TuningEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def first_line(text: str) -> str:
    """The first line of ``text`` (at most 300 characters), for a log line."""
    lines = text.strip().splitlines()
    return lines[0][:300] if lines else ""


def _is_search_trace(trace: Any) -> bool:
    """True for a trace the search made (it has a postprocessing part)."""
    insts = trace[0] if isinstance(trace, list) and trace else ()
    return any(isinstance(i, list) and i and i[0] == "EnterPostproc" for i in insts)


__all__ = ["SearchSpeed", "TuningEngine", "check_gpu_for_measuring", "check_target_buildable",
           "first_line"]

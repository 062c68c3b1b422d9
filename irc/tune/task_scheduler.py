"""The task scheduler: which task gets the next round of measurement trials.

Tuning a model means tuning many tasks under one trial budget. The objective is the
estimated end-to-end latency ``sum(weight[t] * best_latency[t])`` (or a user function of
the best latencies). Strategies:

- ``"gradient"`` (Ansor's, with a roofline-ordered start): every task's default
  schedule is measured first (one trial each: the estimated total latency is known from
  the start, and tuning begins from what an untuned build runs); then every task gets a
  warm-up round of search, the task with the largest estimated gain first:
  ``weight * (latency - flops / roof)``, ``roof`` being the highest speed any task has
  reached (the fastest kernel measured shows what the machine delivers, an estimate of
  its compute roofline); then the next round goes to the task whose gradient of the
  objective with respect to its trials is the most negative. For task ``i`` with best
  latency ``g``, ``r`` rounds so far and FLOP count ``C``::

      backward = (g_now - g_{window rounds ago}) / window        # recent progress
      forward  = min(-g / r,                                    # optimistic: 1/r better
                     beta * C / max_speed_of_similar_tasks - g)  # what similar tasks reach
      gradient = d objective / d g * (alpha * backward + (1 - alpha) * forward)

  (similar tasks share a name once digits are removed: ``fused_conv2d1_relu1`` is like
  ``fused_conv2d_relu``); with probability ``eps_random`` a random task is picked instead.
- ``"round-robin"``: tasks take turns.

The scheduler does not search by itself: it drives a :class:`TaskTuner`, which measures
a task's default schedule and then rounds of searched candidates. The default's time
counts like any candidate (and as one trial), so a tuned kernel slower than the default
never becomes the task's best. With a zero budget nothing is measured and
every task keeps its default schedule. After each round the scheduler prints the table
of seed 004 (ID, task name, latency, speed, trials; estimated total latency, trials,
elapsed time, next task).
"""

from __future__ import annotations

import logging
import math
import re
import sys
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, TextIO

import numpy as np

from ..core.diagnostics import TuningError
from .database import open_database
from .record import combine_measurements
from .task import TuneTask

# A task whose candidates all fail this many rounds in a row is given up.
logger = logging.getLogger(__name__)

MAX_FAILED_ROUNDS = 3
TASK_SCHEDULING = ("gradient", "round-robin")


@dataclass(frozen=True, slots=True, kw_only=True)
class FinishedRound:
    """A round a tuner measured in the background: its task and the measured seconds
    of its candidates (``inf`` for failures)."""

    task_id: int
    costs: tuple[float, ...]


class TaskTuner(ABC):
    """What the scheduler drives (one object for all tasks; the search's side).

    A tuner measures one round at a time (:meth:`tune_round`), or, when its
    :attr:`rounds_in_flight` is above 1 (the tuning engine with an asynchronous
    runner), several rounds of different tasks at once: the scheduler starts each with
    :meth:`start_round` and collects them with :meth:`finish_rounds`, so the runners
    measure one round while the search prepares the next.
    """

    #: Rounds of different tasks the tuner measures at once (1: one at a time, through
    #: :meth:`tune_round`).
    rounds_in_flight: int = 1

    @abstractmethod
    def tune_round(self, task_id: int, num_trials: int) -> Sequence[float]:
        """Find and measure up to ``num_trials`` new candidates of task ``task_id``;
        return their measured seconds (``inf`` for failures). An empty result means the
        task has nothing left to try."""

    def measure_default(self, task_id: int) -> float | None:
        """Measure the unscheduled function of task ``task_id`` and return its seconds
        (``inf`` when it fails); None when this tuner does not measure defaults."""
        return None

    def start_round(self, task_id: int, num_trials: int) -> bool:
        """Find up to ``num_trials`` new candidates of task ``task_id`` and start
        measuring them in the background; False when the task has nothing left to try.
        Only a tuner with ``rounds_in_flight`` above 1 measures in the background."""
        raise TuningError(f"{type(self).__name__} measures one round at a time: call "
                          "tune_round")

    def finish_rounds(self, timeout: float | None = None) -> list[FinishedRound]:
        """Wait (up to ``timeout`` seconds; None: until one finishes) for rounds started
        with :meth:`start_round`; returns each finished round ([]: none in flight)."""
        return []


@dataclass(frozen=True)
class TuningCounts:
    """What went wrong during a tuning run, counted (every case is also logged on the
    ``irc.tune`` or ``irc.dlight`` logger): candidates that failed to build, failed or
    hung when run, or computed wrong results; measurement records that could not be
    replayed into the search space (and, for the cost model, onto their workload);
    default schedule rules that failed half way on a task; search worker processes
    that failed (their candidates were made in the tuning process instead); tasks that
    could not be searched and keep their default schedule; tasks given up after
    ``MAX_FAILED_ROUNDS`` rounds in which every candidate failed (they keep their default
    schedule too)."""

    build_failures: int = 0
    run_failures: int = 0
    wrong_results: int = 0
    replay_failures: int = 0
    rule_failures: int = 0
    pool_failures: int = 0
    default_fallbacks: int = 0
    abandoned_tasks: int = 0

    def describe(self) -> str:
        """The non-zero counts as a phrase (``"3 candidates failed to build, 1 rule
        failed"``); empty when nothing went wrong."""
        parts = []
        for n, one, many in (
                (self.build_failures, "candidate failed to build",
                 "candidates failed to build"),
                (self.run_failures, "candidate failed to run", "candidates failed to run"),
                (self.wrong_results, "candidate computed a wrong result",
                 "candidates computed wrong results"),
                (self.replay_failures, "record could not be replayed",
                 "records could not be replayed"),
                (self.rule_failures, "default schedule rule failed",
                 "default schedule rules failed"),
                (self.pool_failures, "search worker failed", "search workers failed"),
                (self.default_fallbacks, "task was not searched (default schedules only)",
                 "tasks kept their default schedule (not searchable)"),
                (self.abandoned_tasks, "task given up (every candidate failed)",
                 "tasks given up (every candidate failed)")):
            if n:
                parts.append(f"{n} {one if n == 1 else many}")
        return ", ".join(parts)

    @property
    def total(self) -> int:
        """The number of counted problems."""
        return (self.build_failures + self.run_failures + self.wrong_results
                + self.replay_failures + self.rule_failures + self.pool_failures
                + self.default_fallbacks + self.abandoned_tasks)


@dataclass
class TuneSummary:
    """What a tuning run did: :meth:`TaskScheduler.tune` fills the trials and latencies;
    the tuning engine adds ``counts`` (:class:`TuningCounts`)."""

    best_costs: list[float]
    trials: list[int]
    total_latency: float
    total_trials: int
    rounds: int
    elapsed: float
    stopped_by: str
    counts: TuningCounts = field(default_factory=TuningCounts)


def similarity_key(name: str) -> str:
    """Tasks with equal keys are treated as similar (the name without digits)."""
    return re.sub(r"\d+", "", name)


class TaskScheduler:
    """Allocates trials among ``tasks`` (see the module docstring).

    ``task_weights`` defaults to each task's ``weight``; ``objective_func`` maps the list
    of best latencies to the quantity minimized (default: the weighted sum);
    ``load_log_file`` (a record file or Database) resumes: recorded trials and best
    latencies count from the start. ``verbose`` 0 prints nothing, 1 the table after each
    round.
    """

    def __init__(self, tasks: Sequence[TuneTask], task_weights: Sequence[float] | None = None,
                 objective_func: Callable[[Sequence[float]], float] | None = None,
                 strategy: str = "gradient", load_log_file: Any = None,
                 alpha: float = 0.2, beta: float = 2.0, backward_window_size: int = 3,
                 eps_random: float = 0.05, seed: int = 0, verbose: int = 1,
                 num_measures_per_round: int = 64, measure_default: bool = True,
                 out: TextIO | None = None):
        self.tasks = list(tasks)
        if not self.tasks:
            raise TuningError("the task scheduler needs at least one task")
        if strategy not in TASK_SCHEDULING:
            raise TuningError(f"unknown task scheduling strategy {strategy!r}; use "
                              "'gradient' or 'round-robin'")
        weights = [t.weight for t in self.tasks] if task_weights is None else list(task_weights)
        if len(weights) != len(self.tasks):
            raise TuningError(f"{len(weights)} task weights for {len(self.tasks)} tasks")
        self.weights = np.asarray(weights, dtype=np.float64)
        self.objective_func = objective_func
        self.strategy = strategy
        self.alpha, self.beta = float(alpha), float(beta)
        self.window = max(1, int(backward_window_size))
        self.eps_random = float(eps_random)
        self.verbose = int(verbose)
        self.num_measures_per_round = int(num_measures_per_round)
        if self.num_measures_per_round < 1:
            raise TuningError("num_measures_per_round must be at least 1")
        self.measure_default = measure_default
        self.out = out
        self._rng = np.random.default_rng(seed)
        n = len(self.tasks)
        self.best_costs = np.full(n, math.inf)
        self.task_cts = np.zeros(n, dtype=np.int64)       # trials (measured candidates)
        self.task_rounds = np.zeros(n, dtype=np.int64)
        self.history: list[list[float]] = [[] for _ in range(n)]
        self.failed_rounds = np.zeros(n, dtype=np.int64)
        self.dead = np.zeros(n, dtype=bool)
        self.abandoned: list[int] = []  # tasks given up after MAX_FAILED_ROUNDS
        self.default_measured = np.zeros(n, dtype=bool)
        self.default_trials = np.zeros(n, dtype=np.int64)  # of task_cts: the defaults
        self.flops = np.array([max(t.flop_count, 0.0) for t in self.tasks])
        keys = [similarity_key(t.name) for t in self.tasks]
        self.similar = [[j for j in range(n) if j != i and keys[j] == keys[i]]
                        for i in range(n)]
        self._last = -1
        self._start = time.monotonic()
        self.next_task: int | None = None
        if load_log_file is not None:
            self._load(load_log_file)

    # -- resuming -----------------------------------------------------------------------
    def _load(self, source: Any) -> None:
        db = open_database(source, self.tasks[0].target)
        try:
            for i, task in enumerate(self.tasks):
                records = db.records_of(task.workload)
                if not records:
                    continue
                self.task_cts[i] = len(records)
                self.default_measured[i] = any(r.is_default for r in records)
                best = min((r.mean_cost for r in combine_measurements(records)),
                           default=math.inf)
                self.best_costs[i] = best
        finally:
            if db is not source:
                db.close()

    # -- the objective ------------------------------------------------------------------
    def objective(self, costs: Sequence[float] | None = None) -> float:
        """The estimated total latency for ``costs`` (default: the best latencies)."""
        costs = self.best_costs if costs is None else np.asarray(costs, dtype=np.float64)
        if self.objective_func is not None:
            return float(self.objective_func(list(costs)))
        return float(np.dot(self.weights, costs)) if np.all(np.isfinite(costs)) else math.inf

    def _chain_grad(self, i: int) -> float:
        if self.objective_func is None:
            return float(self.weights[i])
        costs = np.where(np.isfinite(self.best_costs), self.best_costs, 1e10)
        delta = max(costs[i] * 1e-3, 1e-12)
        bumped = costs.copy()
        bumped[i] += delta
        return (float(self.objective_func(list(bumped))) -
                float(self.objective_func(list(costs)))) / delta

    def gradient(self, i: int) -> float:
        """The gradient of the objective with respect to task ``i``'s trials (negative:
        more trials should help)."""
        g = float(self.best_costs[i])
        if not math.isfinite(g):
            return -math.inf  # no valid measurement yet: anything helps
        rounds = max(1, int(self.task_rounds[i]))
        hist = self.history[i]
        backward = (hist[-1] - hist[-1 - self.window]) / self.window \
            if len(hist) > self.window else 0.0
        forward = -g / rounds
        speeds = [self.flops[j] / self.best_costs[j] for j in self.similar[i]
                  if math.isfinite(self.best_costs[j]) and self.best_costs[j] > 0]
        if speeds and self.flops[i] > 0 and max(speeds) > 0:
            forward = min(forward, self.beta * self.flops[i] / max(speeds) - g)
        return self._chain_grad(i) * (self.alpha * backward + (1 - self.alpha) * forward)

    # -- choosing -----------------------------------------------------------------------
    def _alive(self) -> list[int]:
        return [i for i in range(len(self.tasks)) if not self.dead[i]]

    def pick_next(self, exclude: Any = ()) -> int | None:
        """The task to tune next, other than those in ``exclude`` (None when every task
        is done)."""
        alive = [i for i in self._alive() if i not in exclude]
        if not alive:
            return None
        # Warm-up: every task gets a first round, the largest estimated gain first.
        fresh = [i for i in alive
                 if self.task_rounds[i] == 0 and self.task_cts[i] == self.default_trials[i]]
        if fresh:
            gains = self.roofline_gains()
            return max(fresh, key=lambda i: (gains[i], -i))
        if self.strategy == "round-robin":
            later = [i for i in alive if i > self._last]
            return later[0] if later else alive[0]
        if len(alive) > 1 and self._rng.random() < self.eps_random:
            return int(self._rng.choice(alive))
        grads = [self.gradient(i) for i in alive]
        return alive[int(np.argmin(grads))]

    def roofline_gains(self) -> list[float]:
        """Per task, the estimated latency tuning could still remove from the objective:
        ``d objective / d latency * (latency - flops / roof)``, with ``roof`` the highest
        speed measured on any task (``inf`` for a task without a valid measurement;
        ``weight * latency`` while no task has a FLOP count)."""
        speeds = [self.flops[j] / self.best_costs[j] for j in range(len(self.tasks))
                  if self.flops[j] > 0 and math.isfinite(self.best_costs[j])
                  and self.best_costs[j] > 0]
        roof = max(speeds, default=0.0)
        gains = []
        for i in range(len(self.tasks)):
            g = float(self.best_costs[i])
            if not math.isfinite(g):
                gains.append(math.inf)
                continue
            floor = self.flops[i] / roof if roof > 0 and self.flops[i] > 0 else 0.0
            gains.append(self._chain_grad(i) * max(g - floor, 0.0))
        return gains

    # -- the loop -----------------------------------------------------------------------
    def tune(self, tuner: TaskTuner, max_trials: int, time_budget: float | None = None,
             callbacks: Sequence[Callable[[TaskScheduler, int], None]] = ()) -> TuneSummary:
        """Run rounds until ``max_trials`` trials (over all tasks, defaults included) or
        ``time_budget`` seconds are spent, or every task is done."""
        if max_trials < 0:
            raise TuningError(f"max_trials must be non-negative, got {max_trials}")
        self._start = time.monotonic()
        used = 0
        rounds = 0
        stopped_by = "trials"
        self._overlapped = False
        if self.measure_default and max_trials > 0:
            used, stopped_by = self._measure_defaults(tuner, max_trials, time_budget)
        self.next_task = self.pick_next() if used < max_trials else None
        if tuner.rounds_in_flight > 1 and stopped_by != "time":
            used, rounds, stopped_by = self._tune_overlapped(tuner, used, max_trials,
                                                             time_budget, callbacks)
        while stopped_by != "time" and not self._overlapped:
            if used >= max_trials:
                stopped_by = "trials"
                break
            if time_budget is not None and time.monotonic() - self._start >= time_budget:
                stopped_by = "time"
                break
            i = self.pick_next()
            if i is None:
                stopped_by = "done"
                break
            spent = self._round(tuner, i, max_trials - used)
            used += spent
            rounds += 1
            self._last = i
            self.next_task = self.pick_next() if used < max_trials else None
            if self.verbose:
                self._print(self.table())
            for cb in callbacks:
                cb(self, i)
        return TuneSummary(best_costs=[float(c) for c in self.best_costs],
                           trials=[int(c) for c in self.task_cts],
                           total_latency=self.objective(), total_trials=used,
                           rounds=rounds, elapsed=time.monotonic() - self._start,
                           stopped_by=stopped_by)

    def _tune_overlapped(self, tuner: TaskTuner, used: int, max_trials: int,
                         time_budget: float | None,
                         callbacks: Sequence[Callable[[TaskScheduler, int], None]]
                         ) -> tuple[int, int, str]:
        """The loop of :meth:`tune` for a tuner that measures in the background
        (``start_round`` / ``finish_rounds``): up to ``rounds_in_flight`` rounds of
        different tasks at once, so the runners measure one round while the search
        prepares the next. When the time budget runs out, the rounds in flight are
        finished (their candidates are being measured) and nothing new starts."""
        self._overlapped = True
        in_flight: dict[int, int] = {}  # task -> trials asked
        rounds = 0
        stopped_by = "trials"
        while True:
            out_of_time = time_budget is not None and \
                time.monotonic() - self._start >= time_budget
            if out_of_time:
                stopped_by = "time"
            while not out_of_time and len(in_flight) < tuner.rounds_in_flight:
                budget = max_trials - used - sum(in_flight.values())
                if budget <= 0:
                    break
                i = self.pick_next(exclude=in_flight)
                if i is None:
                    if not in_flight:
                        stopped_by = "done"
                    break
                n = min(self.num_measures_per_round, budget)
                if tuner.start_round(i, n):
                    in_flight[i] = n
                else:
                    used += self._account(i, n, [])
                    rounds += 1
            if not in_flight:
                if used >= max_trials and stopped_by != "time":
                    stopped_by = "trials"
                break
            for done in tuner.finish_rounds():
                i = done.task_id
                n = in_flight.pop(i)
                used += self._account(i, n, done.costs)
                rounds += 1
                self._last = i
                self.next_task = self.pick_next(exclude=in_flight) \
                    if used < max_trials else None
                if self.verbose:
                    self._print(self.table())
                for cb in callbacks:
                    cb(self, i)
        return used, rounds, stopped_by

    def _measure_defaults(self, tuner: TaskTuner, max_trials: int,
                          time_budget: float | None) -> tuple[int, str]:
        """Measure the default schedule of every task not measured yet (one trial each);
        returns the trials used and "time" if the time budget ran out, else "trials"."""
        used = 0
        for i in self._alive():
            if used >= max_trials:
                break
            if time_budget is not None and time.monotonic() - self._start >= time_budget:
                return used, "time"
            if self.default_measured[i]:
                continue
            self.default_measured[i] = True
            cost = tuner.measure_default(i)
            if cost is None:
                continue
            used += 1
            self.task_cts[i] += 1
            self.default_trials[i] += 1
            if math.isfinite(cost) and cost > 0:
                self.best_costs[i] = min(self.best_costs[i], float(cost))
        if used and self.verbose:
            self._print(self.table())
        return used, "trials"

    def _round(self, tuner: TaskTuner, i: int, budget: int) -> int:
        # Defaults were measured before the first round (_measure_defaults).
        n = min(self.num_measures_per_round, budget)
        found = list(tuner.tune_round(i, n)) if n > 0 else []
        return self._account(i, n, found)

    def _account(self, i: int, n: int, found: Sequence[float]) -> int:
        """Book a finished round of task ``i`` (``n`` trials asked, costs ``found``);
        returns the trials spent."""
        costs: list[float] = []
        spent = 0
        if n > 0 and not found:
            self.dead[i] = True
            logger.info("task %s: the search has no new candidate left; it gets no more "
                        "trials", self.tasks[i].name)
        costs.extend(float(c) for c in found)
        spent += len(found)
        self.task_cts[i] += spent
        self.task_rounds[i] += 1
        valid = [c for c in costs if math.isfinite(c) and c > 0]
        if valid:
            self.best_costs[i] = min(self.best_costs[i], min(valid))
            self.failed_rounds[i] = 0
        elif costs:
            self.failed_rounds[i] += 1
            if self.failed_rounds[i] >= MAX_FAILED_ROUNDS and \
                    not math.isfinite(self.best_costs[i]):
                self.dead[i] = True
                self.abandoned.append(i)
                logger.warning("task %s: every candidate of %d rounds failed; it gets no more "
                               "trials and keeps its default schedule", self.tasks[i].name,
                               MAX_FAILED_ROUNDS)
        self.history[i].append(float(self.best_costs[i]))
        return spent

    # -- reporting ----------------------------------------------------------------------
    def table(self) -> str:
        """The seed-004 table of tasks, latencies, speeds and trials, with the summary
        line (estimated total latency, trials, elapsed time, next task)."""
        width = max(9, max(len(t.name) for t in self.tasks))
        width = min(width, 40)
        head = (f"|  ID  | {'Task name':<{width}} | Latency (ms) | Speed (GFLOPS) | Trials |")
        rule = "-" * len(head)
        lines = [rule, "-" * 30 + "  [ Task Scheduler ]", rule, head, rule]
        for i, t in enumerate(self.tasks):
            c = self.best_costs[i]
            if math.isfinite(c) and c > 0:
                lat = f"{c * 1e3:12.3f}"
                speed = f"{self.flops[i] / c / 1e9:14.2f}" if self.flops[i] > 0 else \
                    f"{'-':>14}"
            else:
                lat, speed = f"{'-':>12}", f"{'-':>14}"
            name = t.name if len(t.name) <= width else t.name[:width - 2] + ".."
            lines.append(f"| {i:4d} | {name:<{width}} | {lat} | {speed} | "
                         f"{int(self.task_cts[i]):6d} |")
        lines.append(rule)
        total = self.objective()
        total_text = f"{total * 1e3:.3f}" if math.isfinite(total) else "-"
        nxt = "-" if self.next_task is None else str(self.next_task)
        lines.append(f"Estimated total latency: {total_text} ms\tTrials: "
                     f"{int(self.task_cts.sum())}\tUsed time : "
                     f"{time.monotonic() - self._start:.0f} s\tNext ID: {nxt}")
        return "\n".join(lines)

    def _print(self, text: str) -> None:
        stream = self.out if self.out is not None else sys.stdout
        print(text, file=stream, flush=True)

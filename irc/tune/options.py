"""The options of a tuning run, as frozen dataclasses.

- :class:`TuneConfig` — the budget and behaviour of a run: trials, rounds, time, early
  stopping, task weights and scheduling, seed, logging;
- :class:`TuneComponents` — the swappable parts: builder, runner, cost model, search
  space, search strategy, measure callbacks (None: the defaults);
- :class:`SearchOptions` — the sizes of the evolutionary search
  (:class:`irc.tune.search.EvolutionaryStrategy`).

``irc.tune.tuner.tune_tasks(tasks, database, TuneConfig(64), TuneComponents(...))`` takes
them. (The Ansor-compatible ``irc.tune.auto_scheduler.TuningOptions`` is a different,
public class with Ansor's option names; it is translated into these.)
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, fields
from typing import Any, Mapping, Sequence, TextIO

from ..core.diagnostics import TuningError
from .cost_model import CostModel
from .measure import Builder, MeasureCallback, Runner
from .space import SpaceGenerator
from .strategy import SearchStrategy
from .task_scheduler import TASK_SCHEDULING

# Search option names of Ansor's SketchPolicy, mapped to irc's.
ANSOR_SEARCH_NAMES = {"evolutionary_search_population": "population_size",
                      "evolutionary_search_num_iters": "num_iters",
                      "evolutionary_search_mutation_prob": "genetic_mutate_prob",
                      "sample_init_min_population": "init_min_unmeasured",
                      "eps_greedy": "eps_greedy"}


def _int(name: str, value: Any, minimum: int) -> None:
    try:
        n = operator.index(value)
    except TypeError:
        raise TuningError(f"{name} must be an integer, got {value!r}") from None
    if n < minimum:
        raise TuningError(f"{name} must be at least {minimum}, got {n}")


def _fraction(name: str, value: Any) -> None:
    if not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise TuningError(f"{name} must be a number between 0 and 1, got {value!r}")


@dataclass(frozen=True)
class SearchOptions:
    """Sizes of the evolutionary search (see :mod:`irc.tune.search`):
    ``population_size`` candidates per generation (at most), ``num_iters`` GA iterations,
    ``init_measured_ratio`` of the population seeded from measured candidates,
    ``init_min_unmeasured`` fresh samples at least, ``genetic_mutate_prob``,
    ``max_fail_count`` failed samples before the search stops growing the population,
    ``eps_greedy`` share of random picks."""

    population_size: int = 192
    num_iters: int = 3
    init_measured_ratio: float = 0.2
    init_min_unmeasured: int = 48
    genetic_mutate_prob: float = 0.85
    max_fail_count: int = 256
    eps_greedy: float = 0.05

    def __post_init__(self) -> None:
        _int("population_size", self.population_size, 2)
        _int("num_iters", self.num_iters, 0)
        _int("init_min_unmeasured", self.init_min_unmeasured, 1)
        _int("max_fail_count", self.max_fail_count, 1)
        _fraction("init_measured_ratio", self.init_measured_ratio)
        _fraction("genetic_mutate_prob", self.genetic_mutate_prob)
        _fraction("eps_greedy", self.eps_greedy)

    @staticmethod
    def from_dict(options: Mapping[str, Any] | SearchOptions | None) -> SearchOptions:
        """Options from a dict of irc's names or Ansor's (``evolutionary_search_population``,
        ...); a TuningError names an unknown one."""
        if isinstance(options, SearchOptions):
            return options
        known = {f.name for f in fields(SearchOptions)}
        out: dict[str, Any] = {}
        for key, value in (options or {}).items():
            key = ANSOR_SEARCH_NAMES.get(key, key)
            if key not in known:
                raise TuningError(f"unknown search option {key!r}; the evolutionary search "
                                  f"takes {', '.join(sorted(known))}")
            out[key] = value
        return SearchOptions(**out)


@dataclass(frozen=True)
class TuneConfig:
    """The budget and behaviour of a tuning run.

    ``max_trials_global`` measurements in all (0: nothing is measured, every task keeps
    its default schedule), in rounds of ``num_trials_per_iter`` (None: small rounds
    early so the cost model learns), within ``time_budget`` seconds when given;
    ``early_stopping`` ends a task after that many trials without improvement.
    ``task_weights`` (default: each task's ``weight``) and ``task_scheduling``
    (``"gradient"`` or ``"round-robin"``) drive the task scheduler; ``measure_default``
    measures each task's default schedule first, and its first rounds measure up to
    ``default_variants`` schedules next to it (other tile sizes and cache blocking of
    the default rule, :meth:`irc.dlight.ScheduleRule.variants`; 0: none) before the
    search's candidates. At the end, each task's ``confirm_top`` fastest candidates and
    its default schedule are measured once more (until its leader has been measured
    twice), and a candidate's measurements are averaged together, so a candidate whose
    one timing was luckily fast does not win (0: no confirmation; with a
    ``time_budget``, about a seventh of it is kept for this). ``seed`` seeds the searches;
    ``verbose`` 0 prints nothing, 1 the seed-002/004 log, 2 also progress marks, to
    ``out`` (default stdout); ``log_dir`` keeps the worker processes' output;
    ``search_workers`` processes make candidates (None: one per core; 0 or 1: in the
    tuning process).
    """

    max_trials_global: int
    num_trials_per_iter: int | None = None
    time_budget: float | None = None
    early_stopping: int | None = None
    task_weights: tuple[float, ...] | None = None
    task_scheduling: str = "gradient"
    measure_default: bool = True
    default_variants: int = 16
    confirm_top: int = 2
    seed: int = 0
    verbose: int = 1
    out: TextIO | None = None
    log_dir: str | None = None
    search_workers: int | None = None

    def __post_init__(self) -> None:
        try:
            trials = operator.index(self.max_trials_global)
        except TypeError:
            trials = -1
        if trials < 0:
            raise TuningError(f"the trial budget must be a non-negative integer, got "
                              f"{self.max_trials_global!r}")
        if self.time_budget is not None and not (
                isinstance(self.time_budget, (int, float)) and self.time_budget > 0
                and not math.isnan(self.time_budget)):
            raise TuningError(f"time_budget must be positive seconds, got "
                              f"{self.time_budget!r}")
        if self.num_trials_per_iter is not None:
            _int("num_trials_per_iter", self.num_trials_per_iter, 1)
        if self.early_stopping is not None:
            _int("early_stopping", self.early_stopping, 1)
        if self.search_workers is not None:
            _int("search_workers", self.search_workers, 0)
        if self.task_scheduling not in TASK_SCHEDULING:
            raise TuningError(f"unknown task scheduling strategy {self.task_scheduling!r}; "
                              "use 'gradient' or 'round-robin'")
        _int("seed", self.seed, -(1 << 63))
        _int("verbose", self.verbose, 0)
        if not isinstance(self.measure_default, bool):
            raise TuningError(f"measure_default must be True or False, got "
                              f"{self.measure_default!r}")
        _int("default_variants", self.default_variants, 0)
        _int("confirm_top", self.confirm_top, 0)
        if self.task_weights is not None:
            object.__setattr__(self, "task_weights", _weights(self.task_weights))


def _weights(values: Any) -> tuple[float, ...]:
    try:
        weights = tuple(values)
    except TypeError:
        weights = None
    if weights is None or not all(isinstance(w, (int, float)) and not isinstance(w, bool)
                                  and w >= 0 and not math.isnan(w) for w in weights):
        raise TuningError(f"task_weights must be a list of non-negative numbers (one per "
                          f"task), got {values!r}")
    return tuple(float(w) for w in weights)


def _component(name: str, value: Any, kind: type, what: str) -> Any:
    """``value`` when it is a ``kind`` (None and "local" mean the default); a TuningError
    naming the option otherwise."""
    if value is None or (isinstance(value, str) and value == "local"):
        return None
    if not isinstance(value, kind):
        raise TuningError(f"{name} must be {what} (or None / \"local\" for the default), got "
                          f"{value!r}")
    return value


@dataclass(frozen=True)
class TuneComponents:
    """The parts of a tuning run that can be swapped (None: the default).

    ``builder`` (:class:`~irc.tune.LocalBuilder`), ``runner`` (a
    :class:`~irc.tune.LocalRunner` checking results against the unscheduled function),
    ``cost_model`` (a CostModel, or a name for
    :func:`~irc.tune.cost_model.create_cost_model`), ``space`` (the target's
    :class:`~irc.tune.space.SpaceGenerator`), ``search_strategy``
    (:class:`~irc.tune.search.EvolutionaryStrategy` with default sizes), and
    ``callbacks`` called as ``cb(inputs, results)`` after each measured candidate.
    The engine closes the builder and runner it creates, never the ones given here.
    """

    builder: Builder | None = None
    runner: Runner | None = None
    cost_model: CostModel | str = "auto"
    space: SpaceGenerator | None = None
    search_strategy: SearchStrategy | None = None
    callbacks: Sequence[MeasureCallback] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "builder", _component("builder", self.builder, Builder,
                                                       "an irc.tune.Builder"))
        object.__setattr__(self, "runner", _component("runner", self.runner, Runner,
                                                      "an irc.tune.Runner"))
        object.__setattr__(self, "space", _component("space", self.space, SpaceGenerator,
                                                     "an irc.tune.space.SpaceGenerator"))
        object.__setattr__(self, "search_strategy", _component(
            "search_strategy", self.search_strategy, SearchStrategy,
            "a search strategy (an object with new_search(task, context))"))
        if not isinstance(self.cost_model, (CostModel, str)):
            raise TuningError(f"cost_model must be a CostModel or a model name ('auto', "
                              f"'xgb', ...), got {self.cost_model!r}")
        object.__setattr__(self, "callbacks", tuple(self.callbacks))
        for cb in self.callbacks:
            if not callable(cb):
                raise TuningError(f"measure callback {cb!r} is not callable; a callback is "
                                  "called as cb(inputs, results)")


__all__ = ["ANSOR_SEARCH_NAMES", "SearchOptions", "TuneComponents", "TuneConfig"]

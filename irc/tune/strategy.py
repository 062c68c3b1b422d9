"""The search-strategy seam: what the tuning engine asks of a search.

A :class:`SearchStrategy` is given to the engine once per run (``TuneComponents(
search_strategy=...)``; the default is :class:`irc.tune.search.EvolutionaryStrategy`).
For every task it makes a :class:`TaskSearch` — ``strategy.new_search(task, context)``
with a :class:`SearchContext` (the search space, the shared cost model, a seed, the
worker pool for making candidates, the log settings) — and the engine then drives that
search round by round:

1. before the first round, :meth:`TaskSearch.mark_measured_trace` and
   :meth:`TaskSearch.add_measured` tell it what the database already measured (the
   default schedule included), so it never proposes those again;
2. each round, :meth:`TaskSearch.generate` proposes up to ``n`` new candidates
   (:class:`~irc.tune.space.Candidate` with their features; fewer or none when the space
   is exhausted), the engine measures them and reports every cost back through
   :meth:`TaskSearch.add_measured`.

``scored`` and ``score_seconds`` say how many candidates the search made and scored, and
how long that took (the tuning summary reports the rate). A strategy that raises an
:class:`~irc.IRCError` from ``new_search`` leaves that task with its default schedule
(logged and counted in the summary).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TextIO, runtime_checkable

from ..core.diagnostics import IRCError
from .cost_model import CostModel
from .features import extract_features
from .search_pool import EvaluatorPool
from .space import Candidate, SpaceGenerator
from .task import TuneTask


@dataclass(frozen=True)
class SearchContext:
    """What the engine gives a task's search: the ``space`` to search (the target's
    :class:`SpaceGenerator`), the ``cost_model`` shared by all tasks (it learns from
    every measurement; the engine updates it), the task's ``seed``, the ``pool`` of
    worker processes for making candidates (None: make them in this process), and
    ``verbose``/``out`` for the seed-002 log lines."""

    space: SpaceGenerator
    cost_model: CostModel
    seed: int = 0
    pool: EvaluatorPool | None = None
    verbose: int = 0
    out: TextIO | None = None


class TaskSearch(Protocol):
    """The search of one task (see the module docstring)."""

    scored: int
    score_seconds: float

    def generate(self, num: int) -> list[Candidate]:
        """Up to ``num`` candidates never proposed or measured before, with their
        ``features`` set; an empty list when nothing is left to try."""

    def add_measured(self, cand: Candidate, cost: float) -> None:
        """``cand`` was measured: ``cost`` seconds (``inf`` when it failed)."""

    def mark_measured_trace(self, trace_key: str) -> None:
        """A candidate with this :func:`~irc.tune.record.trace_key` was measured (it may
        not be replayable into this search's space)."""


@runtime_checkable
class SearchStrategy(Protocol):
    """Makes the search of each task of a tuning run (see the module docstring).
    ``isinstance(x, SearchStrategy)`` checks that ``x`` has a ``new_search`` method."""

    def new_search(self, task: TuneTask, context: SearchContext) -> TaskSearch:
        """The search of ``task``; an IRCError when the task cannot be searched."""


def featurize(cand: Candidate) -> bool:
    """Compute ``cand.features`` from its scheduled function when missing; False when the
    program cannot be lowered."""
    if cand.features is not None:
        return True
    try:
        cand.features = extract_features(cand.func)
    except IRCError:
        return False
    return True


__all__ = ["SearchContext", "SearchStrategy", "TaskSearch", "featurize"]

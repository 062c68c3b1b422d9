"""Evolutionary search over a task's search space, driven by the cost model (seed 002).

Each round (:meth:`EvolutionarySearch.generate`):

1. **Initial population** — the fastest measured candidates of the workload (a share
   ``init_measured_ratio`` of the population, replayed from their records) and fresh
   samples of the sketches (``Sample Initial Population``);
2. **GA iterations** — the population is scored by the cost model (features of each
   scheduled function); parents are drawn in proportion to their score and mutated (a
   decision replaced and the sketch trace replayed, then postprocessed: never
   re-parsing or re-printing IR) with probability ``genetic_mutate_prob``; the best
   unmeasured candidates seen are kept (``GA Iter``). A generation holds 8 candidates
   per candidate to deliver (at most ``population_size``); while the cost model has
   learned nothing (its scores are random) the iterations are skipped;
3. **Pick** — epsilon-greedy: most candidates are the best-scored ones, a share
   ``eps_greedy`` are random unmeasured members of the initial population.

Candidates are made in batches of jobs (:mod:`irc.tune.search_pool`), in worker
processes when a pool is given. A candidate is never proposed twice: the search
remembers every trace it handed out or found in the database (by trace key) and every
program (by the digest of its features, so two traces making the same program count
once). :attr:`scored` and :attr:`score_seconds` give how many candidates per second the
search makes and scores.

:class:`EvolutionarySearch` is the search of one task (a
:class:`~irc.tune.strategy.TaskSearch`); :class:`EvolutionaryStrategy`, sized by
:class:`~irc.tune.options.SearchOptions`, is the :class:`~irc.tune.strategy.SearchStrategy`
that makes one per task, the tuning engine's default.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import random
import sys
import time
from dataclasses import dataclass, field
from typing import NamedTuple, Sequence, TextIO

import numpy as np

from ..tir.stmt import PrimFunc
from .cost_model import CostModel
from .options import SearchOptions
from .record import workload_key
from .search_pool import EvaluatorPool, Job, JobKind, JobResult, run_job, space_setup
from .space import Candidate, Sketch, SpaceGenerator
from .strategy import SearchContext
from .task import TuneTask

_RULE = "-" * 70


def banner(title: str) -> str:
    """The three-line section header of the tuning log (``[ Search ]``)."""
    return f"{_RULE}\n{'-' * 30}  [ {title} ]\n{_RULE}"


def _digest(features: np.ndarray) -> str:
    return hashlib.blake2b(np.asarray(features, order="C").tobytes(), digest_size=12).hexdigest()


class MeasuredCandidate(NamedTuple):
    """A measured candidate with its cost in seconds (``inf``: it failed)."""

    cost: float
    candidate: Candidate


class _Ranked(NamedTuple):
    """A heap entry of a GA round: score, insertion order (ties), candidate."""

    score: float
    order: int
    candidate: Candidate


class EvolutionarySearch:
    """The search of one task (see the module docstring).

    ``func`` is the unscheduled function, ``space`` its :class:`SpaceGenerator`,
    ``cost_model`` scores feature sets, ``options`` the sizes (:class:`SearchOptions`),
    ``pool`` (optional) makes candidates in worker processes. ``verbose`` >= 1 prints
    the seed-002 log lines to ``out``.
    """

    def __init__(self, func: PrimFunc, space: SpaceGenerator, cost_model: CostModel,
                 options: SearchOptions = SearchOptions(), *, seed: int = 0,
                 verbose: int = 1, out: TextIO | None = None,
                 pool: EvaluatorPool | None = None):
        self.func = func
        self.space = space
        self.cost_model = cost_model
        self.options = options
        self.population_size = int(options.population_size)
        self.num_iters = int(options.num_iters)
        self.init_measured_ratio = float(options.init_measured_ratio)
        self.init_min_unmeasured = int(options.init_min_unmeasured)
        self.genetic_mutate_prob = float(options.genetic_mutate_prob)
        self.max_fail_count = int(options.max_fail_count)
        self.eps_greedy = float(options.eps_greedy)
        self.rng = random.Random(seed)
        self.verbose = int(verbose)
        self.out = out
        self.pool = pool
        self.key = workload_key(func)
        self.sketches: list[Sketch] = space.generate(func, seed=seed + 1)
        self._setup: bytes | None = None
        # Everything proposed or measured, so nothing is proposed twice.
        self.seen_traces: set[str] = set()
        self.seen_programs: set[str] = set()
        # Measured candidates (for the initial population).
        self.measured: list[MeasuredCandidate] = []
        self.scored = 0
        self.score_seconds = 0.0
        self.exhausted = False

    # -- bookkeeping ----------------------------------------------------------------------
    def _print(self, text: str) -> None:
        if self.verbose >= 1:
            print(text, file=self.out if self.out is not None else sys.stdout, flush=True)

    @property
    def candidates_per_second(self) -> float:
        """Candidates made (sampled or mutated, postprocessed) and scored per second."""
        return self.scored / self.score_seconds if self.score_seconds > 0 else 0.0

    def add_measured(self, cand: Candidate, cost: float) -> None:
        """Remember a measured candidate (from this run or from the database)."""
        self.seen_traces.add(cand.trace_key)
        if cand.features is not None:
            self.seen_programs.add(_digest(cand.features))
        self.measured.append(MeasuredCandidate(cost, cand))

    def mark_measured_trace(self, trace_key: str) -> None:
        """Remember a measured trace (even one that cannot be replayed)."""
        self.seen_traces.add(trace_key)

    def _is_new(self, cand: Candidate) -> bool:
        return cand.trace_key not in self.seen_traces and \
            _digest(cand.features) not in self.seen_programs

    # -- making candidates ----------------------------------------------------------------
    def _run(self, jobs: list[Job]) -> list[Candidate | None]:
        """Evaluate jobs (in the pool when there is one) into candidates."""
        if not jobs:
            return []
        t = time.perf_counter()

        def local(js: Sequence[Job]) -> list[JobResult | None]:
            return [run_job(self.func, self.space, self.sketches, j) for j in js]

        def setup() -> bytes:
            if self._setup is None:
                self._setup = space_setup(self.func, self.space, self.sketches)
            return self._setup

        if self.pool is not None:
            raw = self.pool.run(self.key, setup, jobs, local)
        else:
            raw = local(jobs)
        out: list[Candidate | None] = []
        for job, r in zip(jobs, raw):
            out.append(None if r is None else
                       Candidate(None, None, job.sketch, trace_json=r.trace_json,
                                 features=r.features))
        self.score_seconds += time.perf_counter() - t
        self.scored += len(jobs)
        return out

    def _seed(self) -> int:
        return self.rng.randrange(1, 2 ** 31 - 1)

    # -- one round ------------------------------------------------------------------------
    def generate(self, num: int) -> list[Candidate]:
        """Up to ``num`` new candidates to measure (fewer when the space runs out)."""
        if num <= 0:
            return []
        t_start = time.perf_counter()
        self._print(banner("Search"))
        self._print(f"Generate Sketches\t\t#s: {len(self.sketches)}")
        trained = self.cost_model.is_trained
        # The work of a round grows with the candidates it must deliver: a generation of
        # 8 per candidate (up to population_size); while the model is untrained, 4.
        per = 8 if trained else 4
        size = min(self.population_size, max(per * num, self.init_min_unmeasured))
        population = self._initial_population(size)
        init_new = [c for c in population if self._is_new(c)]
        heap: list[_Ranked] = []
        in_heap: set[str] = set()
        counter = 0
        m_ok = m_fail = 0
        iters = self.num_iters if trained else 0
        for it in range(iters + 1):
            scores = self._score(population)
            for c, s in zip(population, scores):
                c.score = float(s)
                if not self._is_new(c):
                    continue
                key = _digest(c.features)
                if key in in_heap:
                    continue
                in_heap.add(key)
                counter += 1
                item = _Ranked(float(s), counter, c)
                if len(heap) < max(num, self.population_size):
                    heapq.heappush(heap, item)
                elif item.score > heap[0].score:
                    heapq.heapreplace(heap, item)
            if it == 0 or it == iters:
                hi = float(max(scores)) if len(scores) else 0.0
                lo = float(min(scores)) if len(scores) else 0.0
                self._print(f"GA Iter: {it}\tMax score: {hi:.4f}\tMin score: {lo:.4f}\t"
                            f"#Pop: {len(population)}\t#M+: {m_ok}\t#M-: {m_fail}")
            if it == iters or not population:
                break
            population, ok, fail = self._next_generation(population, scores, size)
            m_ok += ok
            m_fail += fail
        picked = self._pick(num, heap, init_new, greedy=trained)
        for c in picked:
            self.seen_traces.add(c.trace_key)
            self.seen_programs.add(_digest(c.features))
        if not picked:
            self.exhausted = True
        self._print(f"EvolutionarySearch\t\t#s: {len(picked)}\tTime elapsed: "
                    f"{time.perf_counter() - t_start:.2f}")
        return picked

    def _initial_population(self, size: int) -> list[Candidate]:
        t0 = time.perf_counter()
        pop: list[Candidate] = []
        keys: set[str] = set()
        n_measured = int(size * self.init_measured_ratio)
        for cost, c in sorted(self.measured, key=lambda m: m.cost)[:n_measured]:
            if math.isfinite(cost) and c.features is not None:
                pop.append(c)
                keys.add(_digest(c.features))
        want = max(size - len(pop), min(self.init_min_unmeasured, size))
        fails = 0
        fresh = 0
        k = self.rng.randrange(len(self.sketches))
        while fresh < want and fails < self.max_fail_count:
            n = want - fresh
            jobs = [Job(JobKind.SAMPLE, (k + j) % len(self.sketches), self._seed())
                    for j in range(n)]
            k += n
            made = 0
            for cand in self._run(jobs):
                if cand is None:
                    fails += 1
                    continue
                key = _digest(cand.features)
                if key in keys:
                    fails += 1  # a duplicate program: the space may be small
                    continue
                keys.add(key)
                pop.append(cand)
                fresh += 1
                made += 1
            if made == 0:
                break
        self._print(f"Sample Initial Population\t#s: {len(pop)}\tfail_ct: {fails}\t"
                    f"Time elapsed: {time.perf_counter() - t0:.2f}")
        return pop

    def _score(self, population: Sequence[Candidate]) -> np.ndarray:
        if not population:
            return np.zeros(0)
        t = time.perf_counter()
        scores = np.asarray(self.cost_model.predict_features([c.features for c in population]),
                            dtype=np.float64)
        self.score_seconds += time.perf_counter() - t
        return np.where(np.isfinite(scores), scores, -1e9)

    def _next_generation(self, population: list[Candidate], scores: np.ndarray, size: int
                         ) -> tuple[list[Candidate], int, int]:
        weights = scores - scores.min()
        total = float(weights.sum())
        if not math.isfinite(total) or total <= 0:
            weights = np.ones(len(population))
        weights = list(weights / weights.sum())
        kept: list[Candidate] = []
        jobs: list[Job] = []
        for _ in range(size):
            parent = self.rng.choices(population, weights)[0]
            if self.rng.random() < self.genetic_mutate_prob:
                jobs.append(Job(JobKind.MUTATE, parent.sketch, self._seed(), parent.trace_json))
            else:
                kept.append(parent)
        children = self._run(jobs)
        ok = sum(1 for c in children if c is not None)
        fail = len(children) - ok
        nxt: list[Candidate] = []
        keys: set[str] = set()
        for c in kept + [c for c in children if c is not None]:
            key = _digest(c.features)
            if key in keys:
                continue
            keys.add(key)
            nxt.append(c)
        return nxt, ok, fail

    def _pick(self, num: int, heap: list[_Ranked], init_new: list[Candidate],
              greedy: bool = True) -> list[Candidate]:
        ranked = [r.candidate for r in sorted(heap, key=lambda r: (-r.score, r.order))]
        n_rand = int(round(num * self.eps_greedy)) if greedy else num
        out: list[Candidate] = []
        keys: set[str] = set()

        def take(c: Candidate) -> None:
            key = _digest(c.features)
            if key not in keys and self._is_new(c):
                keys.add(key)
                out.append(c)

        for c in ranked:
            if len(out) >= num - n_rand:
                break
            take(c)
        rest = list(init_new)
        self.rng.shuffle(rest)
        for c in rest:
            if len(out) >= num:
                break
            take(c)
        for c in ranked:  # top up when there were too few random ones
            if len(out) >= num:
                break
            take(c)
        return out


@dataclass(frozen=True)
class EvolutionaryStrategy:
    """The evolutionary search as a :class:`~irc.tune.strategy.SearchStrategy`: one
    :class:`EvolutionarySearch` per task, sized by ``options``."""

    options: SearchOptions = field(default_factory=SearchOptions)

    def new_search(self, task: TuneTask, context: SearchContext) -> EvolutionarySearch:
        """The evolutionary search of ``task`` (its sketches generated now)."""
        return EvolutionarySearch(task.func, context.space, context.cost_model, self.options,
                                  seed=context.seed, verbose=context.verbose,
                                  out=context.out, pool=context.pool)


__all__ = ["EvolutionarySearch", "EvolutionaryStrategy", "MeasuredCandidate", "banner"]

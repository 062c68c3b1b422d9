"""Evaluating candidates for the search in parallel worker processes.

The evolutionary search spends its time making candidates: replaying a sketch trace
with new decisions, postprocessing, lowering and extracting features. A :class:`Job` is
``Job(JobKind.SAMPLE, sketch, seed)`` or ``Job(JobKind.MUTATE, sketch, seed, parent trace
JSON)``; its result is a :class:`JobResult` ``(trace JSON, features)`` or None
(rejected). Each job carries its own seed, so the result does not depend on where it
runs: :func:`evaluate_jobs` runs jobs in this process, :class:`EvaluatorPool` splits them
over persistent worker processes (one per core, forked from the tuner's zygote) and
falls back to this process when a worker fails; each such failure is logged on the
``irc.tune`` logger and counted in :attr:`EvaluatorPool.failures`.
"""

from __future__ import annotations

import enum
import logging
import pickle
import random
import time
from collections import OrderedDict
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from ..core.diagnostics import IRCError
from ..tir.schedule import Trace
from ..tir.stmt import PrimFunc
from .features import extract_features
from .space.sketch import Candidate, Sketch, SpaceGenerator
from .worker_pool import WorkerDied, WorkerProcess, WorkerTimeout

logger = logging.getLogger(__name__)


class JobKind(enum.Enum):
    """How a job makes its candidate."""

    SAMPLE = "sample"  # fresh decisions for a sketch
    MUTATE = "mutate"  # one decision of a parent candidate changed


class Job(NamedTuple):
    """One candidate to make: ``kind``, the index of its ``sketch``, the ``seed`` of its
    random choices and, for a mutation, the ``parent``'s trace JSON."""

    kind: JobKind
    sketch: int
    seed: int
    parent: Any = None


class JobResult(NamedTuple):
    """A job's candidate: its full trace as JSON and its feature array."""

    trace_json: Any
    features: np.ndarray


class _WorkerSpace(NamedTuple):
    """What a worker keeps per workload to evaluate its jobs."""

    func: PrimFunc
    space: SpaceGenerator
    sketches: list[Sketch]


_CACHE_SIZE = 16
# Per worker process: workload key -> its space.
_spaces: OrderedDict[str, _WorkerSpace] = OrderedDict()


def space_setup(func: PrimFunc, space: SpaceGenerator, sketches: Sequence[Sketch]) -> bytes:
    """What a worker needs to evaluate jobs of one workload, pickled once."""
    return pickle.dumps((func, space, [s.trace.to_json() for s in sketches]),
                        protocol=pickle.HIGHEST_PROTOCOL)


def _load(key: str, setup: bytes | None) -> _WorkerSpace:
    entry = _spaces.get(key)
    if entry is not None:
        _spaces.move_to_end(key)
        return entry
    if setup is None:
        raise IRCError(f"the search worker has no search space for workload {key}")
    func, space, traces = pickle.loads(setup)
    sketches = [Sketch(i, Trace.from_json(t), None) for i, t in enumerate(traces)]
    entry = _WorkerSpace(func, space, sketches)
    _spaces[key] = entry
    while len(_spaces) > _CACHE_SIZE:
        _spaces.popitem(last=False)
    return entry


def run_job(func: PrimFunc, space: SpaceGenerator, sketches: Sequence[Sketch], job: Job
            ) -> JobResult | None:
    """One job in this process: its candidate, or None when it was rejected."""
    rng = random.Random(job.seed)
    if job.kind is JobKind.SAMPLE:
        cand = space.sample(func, sketches[job.sketch], rng)
    else:
        cand = space.mutate(func, Candidate(None, None, job.sketch, trace_json=job.parent),
                            rng)
    if cand is None:
        return None
    try:
        feats = extract_features(cand.func)
    except IRCError:
        return None
    return JobResult(cand.trace_json, feats)


def evaluate_jobs(key: str, setup: bytes | None, jobs: Sequence[Job]
                  ) -> list[JobResult | None]:
    """Worker side: run ``jobs`` of workload ``key`` (``setup`` the first time)."""
    ws = _load(key, setup)
    return [run_job(ws.func, ws.space, ws.sketches, job) for job in jobs]


LocalEvaluator = Callable[[Sequence[Job]], list]


class EvaluatorPool:
    """``n_workers`` persistent processes evaluating jobs (see the module docstring).
    ``n_workers`` 0 evaluates in this process. ``failures`` counts the times a worker
    failed and its share of jobs ran in this process instead."""

    def __init__(self, n_workers: int, log_dir: str | None = None):
        self.workers = [WorkerProcess(f"search-{i}", log_dir) for i in range(max(0, n_workers))]
        # Per worker: its process generation and the workload keys it holds, in the
        # order of its own cache (least recently used first), so a space the worker
        # evicted is sent again.
        self._sent: dict[int, tuple[int, OrderedDict[str, None]]] = {}
        self.failures = 0

    def _needs_setup(self, k: int, key: str) -> bool:
        w = self.workers[k]
        gen, keys = self._sent.get(k, (-1, OrderedDict()))
        if gen != w.generation:
            keys = OrderedDict()
            self._sent[k] = (w.generation, keys)
        return key not in keys

    def _mark_sent(self, k: int, key: str) -> None:
        """Record that worker ``k`` now holds ``key`` as its most recent space, evicting
        like the worker's cache does."""
        keys = self._sent[k][1]
        keys[key] = None
        keys.move_to_end(key)
        while len(keys) > _CACHE_SIZE:
            keys.popitem(last=False)

    def _failed(self, w: WorkerProcess, key: str, n_jobs: int, why: str) -> None:
        self.failures += 1
        logger.warning("search worker %s failed on workload %s; its %d jobs run in the "
                       "tuning process instead: %s", w.name, key, n_jobs, why)

    def run(self, key: str, setup: Callable[[], bytes], jobs: Sequence[Job],
            local: LocalEvaluator) -> list[JobResult | None]:
        """Results of ``jobs`` in order. ``setup()`` gives the pickled space (called
        only when a worker lacks it); ``local(jobs)`` evaluates in this process."""
        jobs = list(jobs)
        if not self.workers or len(jobs) < 2 * len(self.workers):
            return local(jobs)
        n = len(self.workers)
        chunks = [jobs[k::n] for k in range(n)]
        blob = None
        started: list[int] = []
        for k, w in enumerate(self.workers):
            try:
                w.wait_ready()
                payload = None
                if self._needs_setup(k, key):
                    blob = blob if blob is not None else setup()
                    payload = blob
                w.send_call(__name__, "evaluate_jobs", (key, payload, chunks[k]))
                self._mark_sent(k, key)
                started.append(k)
            except WorkerDied as err:
                self._failed(w, key, len(chunks[k]), err.message)
            except IRCError as err:
                self._failed(w, key, len(chunks[k]), str(err))
        results: list[list | None] = [None] * n
        for k in started:
            w = self.workers[k]
            try:
                msg = w.recv(time.monotonic() + 600.0)
                while msg[0] == "note":
                    msg = w.recv(time.monotonic() + 600.0)
                if msg[0] == "ok":
                    results[k] = msg[1]
                else:
                    self._failed(w, key, len(chunks[k]), str(msg[-1]).strip())
            except WorkerDied as err:
                self._failed(w, key, len(chunks[k]), err.message)
            except WorkerTimeout:
                self._failed(w, key, len(chunks[k]), "no answer in 600 s (the worker was "
                             "stopped)")
            except Exception as err:  # noqa: BLE001 - a lost worker: evaluate its share here
                self._failed(w, key, len(chunks[k]), f"{type(err).__name__}: {err}")
        for k in range(n):
            if results[k] is None:
                results[k] = local(chunks[k])
        out: list[JobResult | None] = [None] * len(jobs)
        for k in range(n):
            out[k::n] = results[k]
        return out

    def close(self) -> None:
        """Stop the worker processes."""
        for w in self.workers:
            w.close()


__all__ = ["EvaluatorPool", "Job", "JobKind", "JobResult", "evaluate_jobs", "run_job",
           "space_setup"]

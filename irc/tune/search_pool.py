"""Evaluating candidates for the search in parallel worker processes.

The evolutionary search spends its time making candidates: replaying a sketch trace
with new decisions, postprocessing, lowering and extracting features. A job is
``("sample", sketch, seed, None)`` or ``("mutate", sketch, seed, parent trace JSON)``;
its result is ``(trace JSON, features)`` or None (rejected). Each job carries its own
seed, so the result does not depend on where it runs: :func:`evaluate_jobs` runs jobs in
this process, :class:`EvaluatorPool` splits them over persistent worker processes (one
per core, forked from the tuner's zygote) and falls back to this process when a worker
fails.
"""

from __future__ import annotations

import pickle
import random
import time
from collections import OrderedDict
from typing import Any, Sequence

from ..core.diagnostics import IRCError
from ..tir.schedule import Trace
from .features import extract_features
from .space.sketch import Candidate, Sketch
from .worker_pool import WorkerDied, WorkerProcess

Job = tuple  # (kind, sketch index, seed, parent trace JSON or None)
_CACHE_SIZE = 16
# Per worker process: workload key -> (func, space, sketches).
_spaces: OrderedDict[str, tuple] = OrderedDict()


def space_setup(func: Any, space: Any, sketches: Sequence[Any]) -> bytes:
    """What a worker needs to evaluate jobs of one workload, pickled once."""
    return pickle.dumps((func, space, [s.trace.to_json() for s in sketches]),
                        protocol=pickle.HIGHEST_PROTOCOL)


def _load(key: str, setup: bytes | None) -> tuple:
    entry = _spaces.get(key)
    if entry is not None:
        _spaces.move_to_end(key)
        return entry
    if setup is None:
        raise IRCError(f"the search worker has no search space for workload {key}")
    func, space, traces = pickle.loads(setup)
    sketches = [Sketch(i, Trace.from_json(t), None) for i, t in enumerate(traces)]
    entry = (func, space, sketches)
    _spaces[key] = entry
    while len(_spaces) > _CACHE_SIZE:
        _spaces.popitem(last=False)
    return entry


def run_job(func: Any, space: Any, sketches: Sequence[Any], job: Job) -> tuple | None:
    """One job in this process: ``(trace JSON, features)`` or None."""
    kind, sketch, seed, parent = job
    rng = random.Random(seed)
    if kind == "sample":
        cand = space.sample(func, sketches[sketch], rng)
    else:
        cand = space.mutate(func, Candidate(None, None, sketch, trace_json=parent), rng)
    if cand is None:
        return None
    try:
        feats = extract_features(cand.func)
    except IRCError:
        return None
    return cand.trace_json, feats


def evaluate_jobs(key: str, setup: bytes | None, jobs: Sequence[Job]) -> list:
    """Worker side: run ``jobs`` of workload ``key`` (``setup`` the first time)."""
    func, space, sketches = _load(key, setup)
    return [run_job(func, space, sketches, job) for job in jobs]


class EvaluatorPool:
    """``n_workers`` persistent processes evaluating jobs (see the module docstring).
    ``n_workers`` 0 evaluates in this process."""

    def __init__(self, n_workers: int, log_dir: str | None = None):
        self.workers = [WorkerProcess(f"search-{i}", log_dir) for i in range(max(0, n_workers))]
        self._sent: dict[int, tuple[int, set[str]]] = {}
        self.failures = 0

    def _needs_setup(self, k: int, key: str) -> bool:
        w = self.workers[k]
        gen, keys = self._sent.get(k, (-1, set()))
        if gen != w.generation:
            keys = set()
            self._sent[k] = (w.generation, keys)
        return key not in keys

    def run(self, key: str, setup: Any, jobs: Sequence[Job], local: Any) -> list:
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
                self._sent[k][1].add(key)
                started.append(k)
            except (WorkerDied, IRCError):
                self.failures += 1
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
                    self.failures += 1
            except Exception:  # noqa: BLE001 - a lost worker: evaluate its share here
                self.failures += 1
        for k in range(n):
            if results[k] is None:
                results[k] = local(chunks[k])
        out: list = [None] * len(jobs)
        for k in range(n):
            out[k::n] = results[k]
        return out

    def close(self) -> None:
        """Stop the worker processes."""
        for w in self.workers:
            w.close()


__all__ = ["EvaluatorPool", "evaluate_jobs", "run_job", "space_setup"]

"""Evaluating models in worker processes, so that a crash of irc is counted, not fatal.

A task is a seed (:class:`SeedTask`: the worker generates the model of that seed and
evaluates it) or a model (:class:`ModelTask`: the minimiser's candidates). Each worker
is a fresh Python process (:func:`serve`, talking to the parent through two pipes; it
does not import the parent's main module, so any script may run a pool) that evaluates
one task at a time (:func:`run_task`). When a worker dies (a segfault in a
compiled kernel, an abort in a native library) or runs past the time of a task, its task
is a ``crash`` (with the signal or the time, and the last lines the process wrote), the
process is replaced and the run goes on. Workers are also replaced after some tasks, so
that the kernels they compiled do not pile up in memory.

A worker's standard output and error (irc's, ONNX Runtime's and LLVM's messages) go
to a log file of its own, not to the terminal; it keeps library dispatch
decisions (``dispatch="auto"``) in a cache directory of its own, so that runs measure
afresh and leave the user's cache alone.

    with WorkerPool(jobs=2, config=FuzzConfig(), options=EvalOptions()) as pool:
        for task, outcome in pool.imap(SeedTask(s) for s in range(100)):
            print(outcome.line())
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection, wait
from typing import Iterable, Iterator

import numpy as np

from ...core import settings
from .evaluate import CRASH, INVALID, EvalOptions, Outcome, evaluate
from .generator import FuzzConfig, generate_case

# Tasks a worker evaluates before it is replaced.
TASKS_PER_WORKER = 40
# Characters of a dead worker's log kept in its outcome.
LOG_TAIL = 600


@dataclass(frozen=True)
class SeedTask:
    """Generate the model of ``seed`` (with the pool's ``FuzzConfig``) and evaluate it."""

    seed: int


@dataclass(frozen=True)
class ModelTask:
    """Evaluate a given model (serialized) on ``inputs``, perturbing ``perturb``."""

    model: bytes
    inputs: dict[str, np.ndarray]
    perturb: tuple[str, ...]
    seed: int = 0


def run_task(task: SeedTask | ModelTask, config: FuzzConfig, options: EvalOptions
             ) -> Outcome:
    """Evaluate ``task`` in this process. A seed whose model cannot be generated, and a
    model the fuzzer itself fails on (its references, its judge), are ``invalid`` (the
    error is in the reason): no verdict on irc."""
    if isinstance(task, SeedTask):
        try:
            case = generate_case(task.seed, config)
        except Exception as err:  # noqa: BLE001 - a generator failure: no model to judge
            return Outcome(INVALID, f"the generator failed: {type(err).__name__}: {err}",
                           seed=task.seed)
        model, inputs, perturb = case.model, case.inputs, case.perturb
    else:
        import onnx

        model = onnx.load_from_string(task.model)
        inputs, perturb = task.inputs, task.perturb
    try:
        outcome = evaluate(model, inputs, perturb, options, task.seed)
    except Exception as err:  # noqa: BLE001 - irc's exceptions are caught inside evaluate
        return Outcome(INVALID, f"the fuzzer failed: {type(err).__name__}: {err}",
                       seed=task.seed)
    return replace(outcome, seed=task.seed)


def serve(tasks_fd: int, results_fd: int, cache_dir: str) -> None:
    """A worker's loop (in its own process): the first message on ``tasks_fd`` is the
    ``(FuzzConfig, EvalOptions)`` pair, then each task is answered with its outcome on
    ``results_fd``, until None arrives."""
    tasks = Connection(tasks_fd, writable=False)
    results = Connection(results_fd, readable=False)
    config, options = tasks.recv()
    with settings.override(cache_dir=cache_dir):
        while True:
            task = tasks.recv()
            if task is None:
                return
            results.send(run_task(task, config, options))


# What a worker process runs: its module search path first (the parent's, so that the
# same irc, and the module of a custom judge, are imported), then ``serve``.
_BOOT = ("import sys; sys.path[:0] = sys.argv[1].split(chr(10)); "
         "from irc.testing.fuzz.runner import serve; "
         "serve(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])")


class _Worker:
    """One worker process and the task it is on."""

    def __init__(self, config: FuzzConfig, options: EvalOptions, work: str, number: int):
        self.log_path = os.path.join(work, f"worker{number}.log")
        cache_dir = os.path.join(work, f"cache{number}")
        os.makedirs(cache_dir, exist_ok=True)
        open(self.log_path, "w").close()
        task_r, task_w = os.pipe()
        result_r, result_w = os.pipe()
        path = chr(10).join(p for p in sys.path if p)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, path, str(task_r), str(result_w), cache_dir],
                pass_fds=(task_r, result_w), stdin=subprocess.DEVNULL, stdout=log,
                stderr=log)
        os.close(task_r)
        os.close(result_w)
        self.tasks = Connection(task_w, readable=False)
        self.conn = Connection(result_r, writable=False)
        self.tasks.send((config, options))
        self.task: SeedTask | ModelTask | None = None
        self.started = 0.0
        self.done = 0

    def submit(self, task: SeedTask | ModelTask) -> None:
        self.task, self.started = task, time.monotonic()
        try:
            self.tasks.send(task)
        except OSError:  # the process is dead: its results pipe tells the pool so
            pass

    def log_tail(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - LOG_TAIL))
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        return " | ".join(lines[-4:])

    def stop(self) -> None:
        """End the process: politely when it is idle, else by SIGKILL."""
        if self.proc.poll() is None and self.task is None:
            try:
                self.tasks.send(None)
                self.proc.wait(5)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.tasks.close()
        self.conn.close()


class WorkerPool:
    """``jobs`` worker processes evaluating tasks with crash isolation (see the module
    docstring); ``timeout`` seconds per task. Use as a context manager."""

    def __init__(self, jobs: int, config: FuzzConfig, options: EvalOptions,
                 timeout: float = 300.0):
        if jobs < 1:
            raise ValueError(f"a worker pool needs 1 or more jobs, got {jobs}")
        self.jobs = jobs
        self.config = config
        self.options = options
        self.timeout = timeout
        self._work = tempfile.TemporaryDirectory(prefix="irc-fuzz-")
        self._made = 0
        self._workers: list[_Worker] = []

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every worker and remove their logs."""
        for w in self._workers:
            w.stop()
        self._workers = []
        self._work.cleanup()

    def _spawn(self) -> _Worker:
        self._made += 1
        w = _Worker(self.config, self.options, self._work.name, self._made)
        self._workers.append(w)
        return w

    def _replace(self, w: _Worker) -> None:
        w.stop()
        self._workers.remove(w)

    def run(self, task: SeedTask | ModelTask) -> Outcome:
        """The outcome of one task."""
        for _, outcome in self.imap([task]):
            return outcome
        raise AssertionError("the pool gave no outcome")  # imap yields one per task

    def imap(self, tasks: Iterable[SeedTask | ModelTask]
             ) -> Iterator[tuple[SeedTask | ModelTask, Outcome]]:
        """``(task, outcome)`` of each task as they finish, ``jobs`` at a time. The next
        task is taken from ``tasks`` only when a worker is free, so a generator of
        tasks can stop (a time limit) without tasks waiting."""
        source = iter(tasks)
        exhausted = False
        while True:
            idle = [w for w in self._workers if w.task is None]
            while not exhausted and (idle or len(self._workers) < self.jobs):
                task = next(source, None)
                if task is None:
                    exhausted = True
                    break
                w = idle.pop() if idle else self._spawn()
                w.submit(task)
            busy = [w for w in self._workers if w.task is not None]
            if not busy:
                return
            yield from self._collect(busy)

    def _collect(self, busy: list[_Worker]
                 ) -> Iterator[tuple[SeedTask | ModelTask, Outcome]]:
        """Wait for the first of ``busy`` to finish, die or time out."""
        now = time.monotonic()
        left = min(w.started + self.timeout for w in busy) - now
        ready = wait([w.conn for w in busy], timeout=max(0.0, left))
        for w in busy:
            task = w.task
            assert task is not None
            if w.conn in ready:
                try:
                    outcome = w.conn.recv()
                except (EOFError, OSError):
                    outcome = None
                if outcome is not None:
                    w.task = None
                    w.done += 1
                    if w.done >= TASKS_PER_WORKER:
                        self._replace(w)
                    yield task, outcome
                    continue
            if w.conn in ready:  # end of file: the process died
                try:
                    w.proc.wait(5)
                except subprocess.TimeoutExpired:
                    w.proc.kill()
                    w.proc.wait()
                yield task, self._died(w, task)
            elif time.monotonic() - w.started >= self.timeout:
                yield task, self._timed_out(w, task)

    def _died(self, w: _Worker, task: SeedTask | ModelTask) -> Outcome:
        code = w.proc.returncode
        how = f"signal {signal.Signals(-code).name}" if code is not None and code < 0 \
            else f"exit status {code}"
        tail = w.log_tail()
        seconds = time.monotonic() - w.started
        w.task = None
        self._replace(w)
        return Outcome(CRASH, f"the worker process died ({how})" + (
            f"; its last output: {tail}" if tail else ""), where=f"died: {how}",
            seconds=seconds, seed=task.seed)

    def _timed_out(self, w: _Worker, task: SeedTask | ModelTask) -> Outcome:
        w.task = None
        w.proc.kill()
        w.proc.wait()
        self._replace(w)
        return Outcome(CRASH, f"ran past the time limit of {self.timeout:g} s per model",
                       where="timeout", seconds=self.timeout, seed=task.seed)


__all__ = ["ModelTask", "SeedTask", "TASKS_PER_WORKER", "WorkerPool", "run_task"]

"""Measuring candidates: inputs, results, the builder/runner interfaces, and callbacks.

A candidate is a :class:`MeasureInput`: a workload (the unscheduled loop function) plus a
schedule trace in JSON form (``None`` = the unscheduled function itself, the default), or
an already scheduled function. A :class:`Builder` compiles candidates into artifacts
(:class:`BuildResult`); a :class:`Runner` times the artifacts (:class:`RunResult`);
:class:`ProgramMeasurer` does both and hands :class:`MeasureResult` s to callbacks such as
:class:`RecordToDatabase`. An :class:`AsyncRunner` measures in the background:
``submit`` returns a :class:`BatchHandle`, ``poll`` the :class:`FinishedCandidate` s as
they finish. Failures never raise: they become results with an error kind from
:class:`~irc.tune.record.MeasureErrorKind`.
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..core.diagnostics import TuningError
from ..core.module import IRModule
from ..core.target import Target
from ..tir.schedule import Schedule, Trace
from ..tir.stmt import PrimFunc
from .database import open_database
from .record import (
    MeasureErrorKind,
    TuningRecord,
    Workload,
    canonical_trace,
    target_identity,
    trace_key,
)

BUILD_ERROR = MeasureErrorKind.BUILD_ERROR
BUILD_TIMEOUT = MeasureErrorKind.BUILD_TIMEOUT
RUN_ERROR = MeasureErrorKind.RUN_ERROR
RUN_TIMEOUT = MeasureErrorKind.RUN_TIMEOUT
WRONG_RESULT = MeasureErrorKind.WRONG_RESULT


# ---------------------------------------------------------------------------------------
# Traces
# ---------------------------------------------------------------------------------------


def func_of_schedule(sch: Schedule | IRModule | PrimFunc) -> PrimFunc:
    """The scheduled PrimFunc of a Schedule (``sch.mod``: a module with one loop function,
    ``main`` when there are several)."""
    mod = sch.mod if isinstance(sch, Schedule) else sch
    if isinstance(mod, PrimFunc):
        return mod
    if isinstance(mod, IRModule):
        funcs = {gv.name_hint: f for gv, f in mod.functions.items() if isinstance(f, PrimFunc)}
        if "main" in funcs:
            return funcs["main"]
        if len(funcs) == 1:
            return next(iter(funcs.values()))
    raise TuningError("the schedule does not hold exactly one loop function to measure")


def apply_trace(func: PrimFunc, trace: Any) -> PrimFunc:
    """``func`` scheduled by replaying ``trace`` (a Trace or its JSON) with
    ``irc.tir.Schedule``; ``func`` itself when ``trace`` is None."""
    trace = canonical_trace(trace)
    if trace is None:
        return func
    sch = Schedule(func)
    Trace.from_json(trace).apply_to_schedule(sch, remove_postproc=False)
    return func_of_schedule(sch)


# ---------------------------------------------------------------------------------------
# Inputs and results
# ---------------------------------------------------------------------------------------


class MeasureInput:
    """One candidate: ``workload`` (a Workload or the unscheduled PrimFunc), ``trace``
    (JSON or Trace; None = the unscheduled function), ``target``, and optionally ``func``,
    the scheduled function itself (then builders compile it instead of replaying the trace;
    the trace still identifies the candidate in records). ``features`` caches the cost
    model's features when the search already computed them."""

    __slots__ = ("workload", "trace", "target", "func", "features", "_trace_key")

    def __init__(self, workload: Workload | PrimFunc, trace: Any = None, target: Any = "llvm",
                 *, func: PrimFunc | None = None, features: Any = None):
        if isinstance(workload, PrimFunc):
            workload = Workload.from_func(workload)
        if not isinstance(workload, Workload):
            raise TuningError(f"MeasureInput needs a Workload or a PrimFunc, got "
                              f"{type(workload).__name__}")
        if func is not None and not isinstance(func, PrimFunc):
            raise TuningError(f"MeasureInput.func must be a PrimFunc, got {type(func).__name__}")
        self.workload = workload
        self.trace = canonical_trace(trace)
        self.target = Target.canon(target)
        self.func = func
        self.features = features
        self._trace_key: str | None = None

    @property
    def trace_key(self) -> str:
        """See :func:`irc.tune.record.trace_key`."""
        if self._trace_key is None:
            self._trace_key = trace_key(self.trace)
        return self._trace_key

    def scheduled_func(self) -> PrimFunc:
        """The function to compile: ``func`` or the workload with the trace replayed."""
        if self.func is not None:
            return self.func
        return apply_trace(self.workload.func, self.trace)

    def __repr__(self) -> str:
        what = "default" if self.trace is None and self.func is None else self.trace_key
        return f"MeasureInput({self.workload.key}, {what}, {self.target})"


@dataclass
class BuildResult:
    """A compiled candidate: ``artifact`` (a serialized runtime module) or an error."""

    artifact: bytes | None
    error_kind: str = ""
    error_msg: str = ""
    build_secs: float = 0.0

    @property
    def ok(self) -> bool:
        return self.artifact is not None and not self.error_kind


@dataclass
class RunResult:
    """A timed candidate: seconds per run of each repeat (``run_secs``) or an error;
    ``run_wall_secs`` is the wall time the runner spent on it; ``fingerprint`` the
    hardware fingerprint of the machine that measured it, when that is not this one (a
    cluster's runner; empty: this machine)."""

    run_secs: tuple[float, ...] | None
    error_kind: str = ""
    error_msg: str = ""
    run_wall_secs: float = 0.0
    fingerprint: str = ""


@dataclass
class MeasureResult:
    """The outcome of measuring one candidate (build and run)."""

    costs: tuple[float, ...] | None
    error_kind: str = ""
    error_msg: str = ""
    build_secs: float = 0.0
    run_wall_secs: float = 0.0
    timestamp: float = field(default_factory=time.time)
    fingerprint: str = ""

    @property
    def is_valid(self) -> bool:
        return not self.error_kind and bool(self.costs)

    @property
    def mean_cost(self) -> float:
        """Mean seconds per run (infinity for a failure)."""
        if not self.is_valid:
            return math.inf
        return sum(self.costs) / len(self.costs)

    @property
    def all_cost(self) -> float:
        """Seconds spent building and running the candidate."""
        return self.build_secs + self.run_wall_secs

    def to_record(self, inp: MeasureInput, seed: int | None = None,
                  task_name: str = "") -> TuningRecord:
        """The tuning record of this result for ``inp`` (with the hardware fingerprint of
        the machine that measured it)."""
        target, fingerprint = target_identity(inp.target)
        fingerprint = self.fingerprint or fingerprint
        return TuningRecord(workload_key=inp.workload.key, trace=inp.trace,
                            run_secs=self.costs if self.is_valid else None, target=target,
                            fingerprint=fingerprint, error_kind=self.error_kind,
                            error_msg=self.error_msg, seed=seed, timestamp=self.timestamp,
                            build_secs=self.build_secs, task_name=task_name)

    def __repr__(self) -> str:
        if self.is_valid:
            costs = ", ".join(f"{c:.4g}" for c in self.costs)
            return f"MeasureResult(cost:[{costs}], all_cost:{self.all_cost:.2f})"
        return f"MeasureResult({self.error_kind}: {self.error_msg[:200]})"


def combine_results(builds: Sequence[BuildResult], runs: Sequence[RunResult]
                    ) -> list[MeasureResult]:
    """Pair build and run results into MeasureResults (a build error wins)."""
    out = []
    for b, r in zip(builds, runs):
        if b.error_kind:
            out.append(MeasureResult(None, b.error_kind, b.error_msg, b.build_secs, 0.0,
                                     fingerprint=r.fingerprint))
        else:
            out.append(MeasureResult(r.run_secs if not r.error_kind else None, r.error_kind,
                                     r.error_msg, b.build_secs, r.run_wall_secs,
                                     fingerprint=r.fingerprint))
    return out


# ---------------------------------------------------------------------------------------
# Interfaces
# ---------------------------------------------------------------------------------------


class Builder(ABC):
    """Compiles candidates; see :class:`irc.tune.builder.LocalBuilder`."""

    @abstractmethod
    def build(self, inputs: Sequence[MeasureInput]) -> list[BuildResult]:
        """One result per input, in order; failures are results, never exceptions."""

    def close(self) -> None:
        """Release worker processes."""

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Runner(ABC):
    """Times compiled candidates; see :class:`irc.tune.runner.LocalRunner`."""

    @abstractmethod
    def run(self, inputs: Sequence[MeasureInput], builds: Sequence[BuildResult]
            ) -> list[RunResult]:
        """One result per input, in order (a failed build gives its error back)."""

    def close(self) -> None:
        """Release worker processes."""

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchHandle:
    """A batch handed to :meth:`AsyncRunner.submit`: ``number`` tells it from the
    runner's other batches, ``size`` is how many candidates it holds."""

    number: int
    size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class FinishedCandidate:
    """A candidate an :class:`AsyncRunner` finished: the ``index`` of its input in
    ``batch``, how it built (``build``) and how it ran (``run``)."""

    batch: BatchHandle
    index: int
    build: BuildResult
    run: RunResult


class AsyncRunner(Runner):
    """A runner that measures several candidates at once in the background (on a
    cluster), so the search can prepare the next round meanwhile.

    :meth:`submit` hands it a batch (it builds the batch with ``builder`` itself, or has
    its own builders do it) and returns the batch's :class:`BatchHandle`; :meth:`poll`
    returns the candidates finished since the last call as :class:`FinishedCandidate`
    s, in the order they finished. Its :meth:`run` (the plain Runner interface) submits
    a batch and polls until it is done.
    """

    @abstractmethod
    def submit(self, inputs: Sequence[MeasureInput], builder: Builder | None = None,
               builds: Sequence[BuildResult] | None = None) -> BatchHandle:
        """Start measuring ``inputs``: built by ``builder``, or already built
        (``builds``); returns the batch's handle."""

    @abstractmethod
    def poll(self, timeout: float | None = None) -> list[FinishedCandidate]:
        """Candidates finished since the last call (waits up to ``timeout`` seconds for
        the first; None: until one finishes, or returns [] when nothing is in flight)."""

    def hardware_fingerprint(self, target: Any) -> str:
        """The hardware fingerprint of the machines that measure ``target``'s
        candidates (their records carry it)."""
        return Target.canon(target).fingerprint()


def measuring_hardware(runner: Runner | None, target: Any) -> Any:
    """What to open a run's database with: the target itself, or for a runner that
    measures elsewhere (a cluster) the fingerprint of the hardware it measures on, so
    the database sees the records that hardware made."""
    if isinstance(runner, AsyncRunner):
        return runner.hardware_fingerprint(target)
    return target


MeasureCallback = Callable[[Sequence[MeasureInput], Sequence[MeasureResult]], None]
"""Called after each measured batch with its inputs and results."""


class RecordToDatabase:
    """A measure callback that commits every result (and its workload) to a database,
    one durable write per batch."""

    def __init__(self, database: Any, seed: int | None = None, task_name: str = ""):
        self.database = open_database(database)
        self.seed = seed
        self.task_name = task_name

    def __call__(self, inputs: Sequence[MeasureInput], results: Sequence[MeasureResult]
                 ) -> None:
        for inp in inputs:
            if self.database.get_workload(inp.workload.key) is None:
                self.database.commit_workload(inp.workload)
        records = [res.to_record(inp, seed=self.seed,
                                 task_name=self.task_name or inp.workload.name)
                   for inp, res in zip(inputs, results)]
        self.database.commit_records(records)


class ProgramMeasurer:
    """Builds then runs a batch of candidates and calls the callbacks with the results.

    ``measure(inputs)`` returns one :class:`MeasureResult` per input. Building uses the
    builder's worker processes in parallel; running measures one candidate at a time.
    """

    def __init__(self, builder: Builder, runner: Runner,
                 callbacks: Sequence[MeasureCallback] = ()):
        self.builder = builder
        self.runner = runner
        self.callbacks = list(callbacks)
        self.error_counts: dict[str, int] = {}
        self.measured = 0

    def measure(self, inputs: Sequence[MeasureInput]) -> list[MeasureResult]:
        inputs = list(inputs)
        if not inputs:
            return []
        builds = self.builder.build(inputs)
        runs = self.runner.run(inputs, builds)
        results = combine_results(builds, runs)
        for res in results:
            if res.error_kind:
                self.error_counts[res.error_kind] = self.error_counts.get(res.error_kind, 0) + 1
        self.measured += len(results)
        for cb in self.callbacks:
            cb(inputs, results)
        return results

    def close(self) -> None:
        """Close the builder and the runner."""
        self.builder.close()
        self.runner.close()


__all__ = [
    "AsyncRunner", "BUILD_ERROR", "BUILD_TIMEOUT", "BatchHandle", "Builder", "BuildResult",
    "FinishedCandidate", "MeasureCallback",
    "MeasureErrorKind", "MeasureInput", "MeasureResult", "ProgramMeasurer",
    "RecordToDatabase", "RUN_ERROR", "RUN_TIMEOUT", "RunResult", "Runner",
    "WRONG_RESULT",
    "apply_trace", "combine_results", "func_of_schedule", "measuring_hardware",
]

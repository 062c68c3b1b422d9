"""Tuning records and workloads: what a database stores.

A :class:`Workload` is the loop function being tuned, keyed by :func:`workload_key` (the
structural hash of the function, ignoring its ``global_symbol``) and stored as text
(``func.script()``), so the function itself can be read back with ``irc.parse``.

A :class:`TuningRecord` is one measurement of one candidate of a workload: the candidate's
trace (the JSON of an ``irc.tir.schedule.Trace``; ``None`` means the unscheduled function,
the default), the measured seconds per run of each repeat or an error kind and message, the
target with its hardware fingerprint, the irc version, the search seed and a timestamp.
Records serialize to one JSON object per line (:meth:`TuningRecord.to_line`)::

    {"workload": "3b90...", "target": "llvm -mcpu=znver4 -num-cores=2",
     "fingerprint": "cpu|AMD EPYC ...|znver4|feat:1a2b...|cores:2",
     "trace": [...], "run_secs": [0.0123, 0.0121], "error": null,
     "irc": "0.1.0", "seed": 7, "time": 1767225600.0, "build_secs": 0.21}
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

from ..core.diagnostics import TuningError
from ..core.module import IRModule
from ..core.structural import structural_hash_hex
from ..core.target import Target
from ..core.version import __version__
from ..script_parser import parse
from ..tir.schedule import Trace
from ..tir.stmt import PrimFunc


class MeasureErrorKind:
    """The error kinds of a measurement (strings, as they appear in records)."""

    NO_ERROR = ""
    BUILD_ERROR = "BUILD_ERROR"
    """Replaying the trace, lowering or compiling the candidate failed."""
    BUILD_TIMEOUT = "BUILD_TIMEOUT"
    """Compiling the candidate took longer than the builder's timeout."""
    RUN_ERROR = "RUN_ERROR"
    """The kernel crashed (signal), failed a run-time check, or could not be loaded."""
    RUN_TIMEOUT = "RUN_TIMEOUT"
    """The kernel ran longer than the runner's timeout (counted from its start)."""
    WRONG_RESULT = "WRONG_RESULT"
    """The kernel's outputs differ from the unscheduled function's on random inputs."""

    ALL = (BUILD_ERROR, BUILD_TIMEOUT, RUN_ERROR, RUN_TIMEOUT, WRONG_RESULT)


def _strip_symbol(func: PrimFunc) -> PrimFunc:
    if "global_symbol" in func.attrs:
        return func.replace(attrs={k: v for k, v in func.attrs.items() if k != "global_symbol"})
    return func


def workload_key(func: PrimFunc) -> str:
    """The database key of ``func``: a 32-hex-digit structural hash that ignores the
    function's ``global_symbol`` (the same computation keys the same records wherever it
    comes from)."""
    if not isinstance(func, PrimFunc):
        raise TuningError(f"a workload is a loop function (PrimFunc), got {type(func).__name__}")
    return structural_hash_hex(_strip_symbol(func))


def canonical_trace(trace: Any) -> Any:
    """``trace`` as plain JSON data: a Trace object becomes ``trace.to_json()``; None stays
    None (the unscheduled function)."""
    if trace is None:
        return None
    if isinstance(trace, Trace):
        trace = trace.to_json()
    if isinstance(trace, str):
        try:
            return json.loads(trace)
        except json.JSONDecodeError:
            raise TuningError("a trace given as a string must be JSON text") from None
    return trace


def trace_key(trace: Any) -> str:
    """A short digest identifying a candidate's trace (with its decisions); ``"default"``
    for None, the unscheduled function."""
    trace = canonical_trace(trace)
    if trace is None:
        return "default"
    text = json.dumps(trace, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


class Workload:
    """A function to tune: ``key`` (see :func:`workload_key`), its text, and the function
    itself (parsed from the text on first use when the workload was loaded from a file)."""

    __slots__ = ("key", "_text", "_func", "name")

    def __init__(self, key: str, text: str | None = None, func: PrimFunc | None = None,
                 name: str = ""):
        if text is None and func is None:
            raise TuningError(f"workload {key} needs its function or the function's text")
        self.key = key
        self._text = text
        self._func = func
        self.name = name

    @staticmethod
    def from_func(func: PrimFunc, name: str = "") -> Workload:
        """The workload of ``func`` (keyed by its structural hash)."""
        return Workload(workload_key(func), func=func, name=name)

    @property
    def text(self) -> str:
        """The function in irc's text format."""
        if self._text is None:
            self._text = self._func.script()
        return self._text

    @property
    def func(self) -> PrimFunc:
        """The function (parsed from :attr:`text` the first time when loaded from a file)."""
        if self._func is None:
            func = parse(self._text, source_name=f"<workload {self.key}>")
            if not isinstance(func, PrimFunc):
                # A module text with one loop function.
                funcs = [f for f in func.functions.values() if isinstance(f, PrimFunc)] \
                    if isinstance(func, IRModule) else []
                if len(funcs) != 1:
                    raise TuningError(f"the stored text of workload {self.key} is not one "
                                      "loop function")
                func = funcs[0]
            self._func = func
        return self._func

    def to_json(self) -> dict:
        """The workload as one JSON object (a line of a workload file)."""
        out = {"key": self.key, "func": self.text}
        if self.name:
            out["name"] = self.name
        return out

    @staticmethod
    def from_json(obj: dict) -> Workload:
        """The workload written by :meth:`to_json`."""
        if not isinstance(obj, dict) or not isinstance(obj.get("key"), str) \
                or not isinstance(obj.get("func"), str):
            raise TuningError("a workload entry needs a string 'key' and a string 'func'")
        return Workload(obj["key"], text=obj["func"], name=str(obj.get("name", "")))

    def __repr__(self) -> str:
        label = f" {self.name}" if self.name else ""
        return f"Workload({self.key}{label})"


@dataclass
class TuningRecord:
    """One measurement of one candidate (see the module docstring for the line format).

    ``run_secs`` holds seconds per run of each repeat (None when the candidate failed, in
    which case ``error_kind`` is one of :class:`MeasureErrorKind` and ``error_msg`` says
    why). ``trace`` None means the unscheduled function. ``source`` says where a record
    read from a database is (``path:line`` of a JSON-lines file, ``path row N`` of an
    SQLite one; not part of the record's JSON), for messages about it.
    """

    workload_key: str
    trace: Any
    run_secs: tuple[float, ...] | None
    target: str
    fingerprint: str
    error_kind: str = ""
    error_msg: str = ""
    version: str = ""
    seed: int | None = None
    timestamp: float = field(default_factory=time.time)
    build_secs: float = 0.0
    task_name: str = ""
    source: str = field(default="", repr=False, compare=False)
    _trace_key: str | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.trace = canonical_trace(self.trace)
        if self.run_secs is not None:
            self.run_secs = tuple(float(s) for s in self.run_secs)
            if not all(math.isfinite(s) for s in self.run_secs):
                # JSON has no infinities; a time that is not a number is a failed run.
                self.error_kind = self.error_kind or MeasureErrorKind.RUN_ERROR
                self.error_msg = self.error_msg or f"measured times {self.run_secs} are not finite"
                self.run_secs = None
        if not self.version:
            self.version = __version__

    @property
    def is_valid(self) -> bool:
        """True when the candidate ran correctly and has a finite time."""
        return (not self.error_kind and self.run_secs is not None and len(self.run_secs) > 0
                and all(math.isfinite(s) and s >= 0 for s in self.run_secs))

    @property
    def mean_cost(self) -> float:
        """Mean seconds per run (infinity for a failed candidate)."""
        if not self.is_valid:
            return math.inf
        return sum(self.run_secs) / len(self.run_secs)

    @property
    def trace_key(self) -> str:
        """See :func:`trace_key`."""
        if self._trace_key is None:
            self._trace_key = trace_key(self.trace)
        return self._trace_key

    @property
    def is_default(self) -> bool:
        """True for a measurement of the unscheduled function."""
        return self.trace is None

    def to_json(self) -> dict:
        """The record as a JSON object."""
        error = None
        if self.error_kind:
            error = {"kind": self.error_kind, "msg": self.error_msg}
        out = {"workload": self.workload_key, "target": self.target,
               "fingerprint": self.fingerprint, "trace": self.trace,
               "run_secs": list(self.run_secs) if self.run_secs is not None else None,
               "error": error, "irc": self.version, "seed": self.seed,
               "time": self.timestamp, "build_secs": self.build_secs}
        if self.task_name:
            out["task"] = self.task_name
        return out

    def to_line(self) -> str:
        """The record as one line of JSON (with the newline)."""
        return json.dumps(self.to_json(), separators=(",", ":"), allow_nan=False) + "\n"

    @staticmethod
    def from_json(obj: Any) -> TuningRecord:
        """The record written by :meth:`to_json`; TuningError when ``obj`` is not one."""
        if not isinstance(obj, dict):
            raise TuningError("a tuning record is a JSON object")
        try:
            key = obj["workload"]
            target = obj["target"]
            fingerprint = obj["fingerprint"]
        except KeyError as err:
            raise TuningError(f"a tuning record lacks the field {err.args[0]!r}") from None
        if not isinstance(key, str) or not isinstance(target, str) \
                or not isinstance(fingerprint, str):
            raise TuningError("a tuning record's workload, target and fingerprint are strings")
        run_secs = obj.get("run_secs")
        if run_secs is not None:
            if not isinstance(run_secs, list) or not all(
                    isinstance(s, (int, float)) and not isinstance(s, bool) for s in run_secs):
                raise TuningError("a tuning record's run_secs is a list of numbers")
        error = obj.get("error")
        kind, msg = "", ""
        if error is not None:
            if not isinstance(error, dict) or not isinstance(error.get("kind"), str):
                raise TuningError("a tuning record's error is {'kind': ..., 'msg': ...}")
            kind, msg = error["kind"], str(error.get("msg", ""))
        if run_secs is None and not kind:
            raise TuningError("a tuning record has neither run_secs nor an error")
        seed = obj.get("seed")
        return TuningRecord(
            workload_key=key, trace=obj.get("trace"), run_secs=run_secs, target=target,
            fingerprint=fingerprint, error_kind=kind, error_msg=msg,
            version=str(obj.get("irc", "")) or "unknown",
            seed=seed if isinstance(seed, int) else None,
            timestamp=float(obj.get("time", 0.0) or 0.0),
            build_secs=float(obj.get("build_secs", 0.0) or 0.0),
            task_name=str(obj.get("task", "")))


def combine_measurements(records: Any) -> list[TuningRecord]:
    """The valid ``records`` with one record per candidate (trace): a candidate measured
    more than once — the tuner re-measures each task's best candidates and its default
    schedule before choosing (``TuneConfig.confirm_top``) — becomes its first record
    with the samples of all its valid measurements, so its mean is taken over all of
    them. The fastest of many candidates timed once each is biased low (its noise is
    part of why it won); more samples of the leaders correct that."""
    groups: dict[str, TuningRecord] = {}
    for r in records:
        if not r.is_valid:
            continue
        first = groups.get(r.trace_key)
        if first is None:
            groups[r.trace_key] = r
        else:
            groups[r.trace_key] = replace(first, run_secs=first.run_secs + r.run_secs)
    return list(groups.values())


def target_identity(target: Any) -> tuple[str, str]:
    """``(str(target), target.fingerprint())`` of a Target or target string."""
    t = Target.canon(target)
    return str(t), t.fingerprint()

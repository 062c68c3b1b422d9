"""The interface every tuning database offers (JSON lines and SQLite implement it).

A database stores workloads (each function once, as text) and tuning records (one per
measured candidate). Opened with a ``target``, it only sees records measured on hardware
with that target's fingerprint: other records are skipped when loading (and counted in
:attr:`Database.load_report`). Records are never rewritten or deleted; a search asks
:meth:`Database.has_measured` before measuring a candidate so nothing is measured twice.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from ...core.diagnostics import TuningError
from ...core.target import Target
from ...tir.stmt import PrimFunc
from ..record import TuningRecord, Workload, combine_measurements, trace_key, workload_key

logger = logging.getLogger("irc.tune")


@dataclass
class LoadReport:
    """What loading a database found: records kept and entries skipped, by reason."""

    path: str = ""
    records: int = 0
    workloads: int = 0
    unreadable: int = 0
    other_target: int = 0
    unreadable_lines: list[int] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        return self.unreadable + self.other_target

    def __str__(self) -> str:
        parts = [f"{self.records} records, {self.workloads} workloads"]
        if self.other_target:
            parts.append(f"{self.other_target} records of another target skipped")
        if self.unreadable:
            lines = ", ".join(str(n) for n in self.unreadable_lines[:5])
            more = ", ..." if len(self.unreadable_lines) > 5 else ""
            parts.append(f"{self.unreadable} unreadable entries skipped (line {lines}{more})")
        return f"{self.path}: " + "; ".join(parts)

    def log(self) -> None:
        """Report skipped entries on the ``irc.tune`` logger (a warning for unreadable
        ones, which point at a damaged file)."""
        if self.unreadable:
            logger.warning("%s", self)
        elif self.other_target:
            logger.info("%s", self)


def key_of(workload: Any) -> str:
    """The workload key of a Workload, a PrimFunc or a key string."""
    if isinstance(workload, Workload):
        return workload.key
    if isinstance(workload, PrimFunc):
        return workload_key(workload)
    if isinstance(workload, str):
        return workload
    raise TuningError(f"cannot find the workload of a {type(workload).__name__}; pass a "
                      "Workload, a PrimFunc or a workload key")


def fingerprint_of(target: Any) -> str | None:
    """The hardware fingerprint of a target (None passes through)."""
    if target is None:
        return None
    if isinstance(target, str) and target.startswith(("cpu|", "gpu|")):
        return target
    return Target.canon(target).fingerprint()


class Database(ABC):
    """Workloads and tuning records; see the module docstring.

    Subclasses implement the storage; queries take a workload as a :class:`Workload`, a
    PrimFunc or a key string. Use as a context manager to close files on exit.
    """

    def __init__(self, target: Any = None):
        self.target_fingerprint: str | None = fingerprint_of(target)
        self.load_report = LoadReport()

    @property
    def location(self) -> str:
        """Where the records live (the record file's path; empty when they are not in a
        file)."""
        return ""

    # -- workloads --------------------------------------------------------------------
    @abstractmethod
    def get_workload(self, key: str) -> Workload | None:
        """The workload stored under ``key`` (None when unknown)."""

    @abstractmethod
    def workloads(self) -> list[Workload]:
        """Every stored workload."""

    @abstractmethod
    def _store_workload(self, workload: Workload) -> None:
        """Persist a new workload."""

    def commit_workload(self, func: PrimFunc | Workload, name: str = "") -> Workload:
        """Store ``func`` (once) and return its workload."""
        wl = func if isinstance(func, Workload) else Workload.from_func(func, name=name)
        existing = self.get_workload(wl.key)
        if existing is not None:
            return existing
        self._store_workload(wl)
        return wl

    def has_workload(self, workload: Any) -> bool:
        """True when the workload is stored."""
        return self.get_workload(key_of(workload)) is not None

    # -- records ----------------------------------------------------------------------
    @abstractmethod
    def commit_records(self, records: Sequence[TuningRecord]) -> None:
        """Append ``records`` durably (flushed and synced to disk before returning)."""

    def commit_record(self, record: TuningRecord) -> None:
        """Append one record durably."""
        self.commit_records([record])

    @abstractmethod
    def get_all_records(self) -> list[TuningRecord]:
        """Every record this database sees, in commit order."""

    @abstractmethod
    def records_of(self, workload: Any) -> list[TuningRecord]:
        """The records of one workload (valid and failed), in commit order."""

    @abstractmethod
    def has_measured(self, workload: Any, trace: Any) -> bool:
        """True when a candidate with this trace (None: the unscheduled function) was
        measured for this workload, successfully or not."""

    def claim(self, workload: Any, traces: Sequence[Any]) -> list[bool]:
        """Reserve candidates (``traces`` of ``workload``) for measuring by this process;
        False for each one already measured or, in a database several tuning processes
        write at once (SQLite), claimed by another live one. The base implementation
        (a database one process writes) only checks :meth:`has_measured`."""
        return [not self.has_measured(workload, t) for t in traces]

    def get_top_k(self, workload: Any, k: int) -> list[TuningRecord]:
        """The ``k`` fastest valid candidates of the workload, fastest first; a candidate
        measured more than once (the tuner confirms its best ones) is one record with
        all its samples (:func:`combine_measurements`)."""
        valid = combine_measurements(self.records_of(workload))
        valid.sort(key=lambda r: (r.mean_cost, r.timestamp))
        return valid[:max(0, k)]

    def best_record(self, workload: Any) -> TuningRecord | None:
        """The fastest valid record of the workload (None when there is none). When the
        unscheduled function was measured and is fastest, that record (trace None) wins."""
        top = self.get_top_k(workload, 1)
        return top[0] if top else None


    def __len__(self) -> int:
        return len(self.get_all_records())

    def workload_keys(self) -> list[str]:
        """Keys of workloads that have records (in first-record order)."""
        seen: dict[str, None] = {}
        for r in self.get_all_records():
            seen.setdefault(r.workload_key, None)
        return list(seen)

    def accepts(self, record: TuningRecord) -> bool:
        """True when ``record`` belongs to this database's target (or no target is set)."""
        return self.target_fingerprint is None or record.fingerprint == self.target_fingerprint

    # -- lifetime ---------------------------------------------------------------------
    def close(self) -> None:
        """Release files; the database is unusable afterwards."""

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def copy_records(src: Database, dst: Database, records: Iterable[TuningRecord]) -> int:
    """Commit ``records`` of ``src`` to ``dst`` with their workloads, skipping candidates
    ``dst`` already has for the same hardware; returns how many were written."""
    have = {(r.workload_key, r.trace_key, r.fingerprint) for r in dst.get_all_records()}
    out = []
    for r in records:
        ident = (r.workload_key, r.trace_key, r.fingerprint)
        if ident in have:
            continue
        have.add(ident)
        if dst.get_workload(r.workload_key) is None:
            wl = src.get_workload(r.workload_key)
            if wl is not None:
                dst.commit_workload(wl)
        out.append(r)
    if out:
        dst.commit_records(out)
    return len(out)


__all__ = ["Database", "LoadReport", "copy_records", "fingerprint_of", "key_of", "trace_key"]

"""The JSON-lines database: two append-only text files, one JSON object per line.

- the **record file** (e.g. ``matmul.json``): one :class:`~irc.tune.record.TuningRecord`
  per line, in measurement order;
- the **workload file** (by default beside it, ``matmul.workloads.json``): one line per
  workload, ``{"key": ..., "func": <the function as irc text>}``, written before the first
  record that refers to it.

Opening an existing file resumes from it. Every commit appends whole lines with one
``write`` call and then ``fsync``, so a killed process loses at most the record being
written; a truncated last line (or any unreadable line) is skipped on load, counted in
:attr:`load_report` and logged, and never rewritten. When the file does not end with a
newline (a torn write), the next commit starts a new line first.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterator, Sequence

from ...core.diagnostics import TuningError
from ..record import TuningRecord, Workload, trace_key
from .base import Database, LoadReport, key_of


def default_workload_path(path_tuning_record: str) -> str:
    """Where the workload file of a record file lives by default:
    ``x.json`` -> ``x.workloads.json``, ``x.log`` -> ``x.log.workloads.json``."""
    root, ext = os.path.splitext(path_tuning_record)
    if ext == ".json":
        return root + ".workloads.json"
    return path_tuning_record + ".workloads.json"


def _read_lines(path: str) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of each non-empty line; the last one may lack its newline."""
    with open(path, "rb") as f:
        data = f.read()
    for n, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            yield n, line


class _AppendFile:
    """An append-only file written with one ``write`` + ``fsync`` per commit."""

    def __init__(self, path: str):
        self.path = path
        self.fd: int | None = None

    def append(self, data: bytes) -> None:
        """Append ``data`` durably. A write that fails (a full disk, a file size limit,
        an I/O error) is undone (the file is cut back to its size before it, so no torn
        line is left) and raised as a TuningError naming the file and the cause; what
        was committed before stays."""
        start = None
        try:
            if self.fd is None:
                directory = os.path.dirname(os.path.abspath(self.path))
                os.makedirs(directory, exist_ok=True)
                self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                size = os.fstat(self.fd).st_size
                if size:
                    with open(self.path, "rb") as f:
                        f.seek(size - 1)
                        if f.read(1) != b"\n":
                            # A torn last line: finish it so the new record starts cleanly.
                            data = b"\n" + data
            start = os.fstat(self.fd).st_size
            view = memoryview(data)
            while view:
                written = os.write(self.fd, view)
                view = view[written:]
            os.fsync(self.fd)
        except OSError as err:
            if start is not None:
                try:
                    os.ftruncate(self.fd, start)
                except OSError:
                    pass  # the torn line is skipped (and reported) when the file is read
            cause = err.strerror or str(err)
            raise TuningError(f"cannot write to the tuning database {self.path}: {cause}; "
                              "the records committed before are kept",
                              hint="free disk space (or raise the limit) and run again: "
                                   "tuning resumes from the records") from None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __del__(self) -> None:
        self.close()


class JSONDatabase(Database):
    """Tuning records in an append-only JSON-lines file (see the module docstring).

    ``JSONDatabase("matmul.json")`` resumes from the file when it exists;
    ``target`` (a Target or string) hides records measured on other hardware;
    ``JSONDatabase.from_work_dir(dir)`` uses MetaSchedule's file names.
    """

    def __init__(self, path_tuning_record: str, path_workload: str | None = None,
                 target: Any = None):
        super().__init__(target)
        if not isinstance(path_tuning_record, (str, os.PathLike)):
            raise TuningError("JSONDatabase needs the path of its record file")
        self.path_tuning_record = os.fspath(path_tuning_record)
        self.path_workload = os.fspath(path_workload) if path_workload is not None \
            else default_workload_path(self.path_tuning_record)
        self._workloads: dict[str, Workload] = {}
        self._records: list[TuningRecord] = []
        self._by_workload: dict[str, list[TuningRecord]] = {}
        self._measured: set[tuple[str, str]] = set()
        self._record_file = _AppendFile(self.path_tuning_record)
        self._workload_file = _AppendFile(self.path_workload)
        self._load()

    @property
    def location(self) -> str:
        """The record file's path."""
        return self.path_tuning_record

    @staticmethod
    def from_work_dir(work_dir: str, target: Any = None) -> JSONDatabase:
        """The database in ``work_dir``: ``database_tuning_record.json`` and
        ``database_workload.json``."""
        return JSONDatabase(os.path.join(work_dir, "database_tuning_record.json"),
                            os.path.join(work_dir, "database_workload.json"), target=target)

    # -- loading ----------------------------------------------------------------------
    def _load(self) -> None:
        report = LoadReport(path=self.path_tuning_record)
        if os.path.exists(self.path_workload):
            for n, line in _read_lines(self.path_workload):
                try:
                    wl = Workload.from_json(json.loads(line))
                except (ValueError, TuningError, UnicodeDecodeError):
                    report.unreadable += 1
                    report.unreadable_lines.append(n)
                    continue
                self._workloads.setdefault(wl.key, wl)
        if os.path.exists(self.path_tuning_record):
            for n, line in _read_lines(self.path_tuning_record):
                try:
                    rec = TuningRecord.from_json(json.loads(line))
                except (ValueError, TuningError, UnicodeDecodeError, TypeError):
                    report.unreadable += 1
                    report.unreadable_lines.append(n)
                    continue
                rec.source = f"{self.path_tuning_record}:{n}"
                if not self.accepts(rec):
                    report.other_target += 1
                    continue
                self._index(rec)
        report.records = len(self._records)
        report.workloads = len(self._workloads)
        self.load_report = report
        report.log()

    def _index(self, rec: TuningRecord) -> None:
        self._records.append(rec)
        self._by_workload.setdefault(rec.workload_key, []).append(rec)
        self._measured.add((rec.workload_key, rec.trace_key))

    # -- workloads --------------------------------------------------------------------
    def get_workload(self, key: str) -> Workload | None:
        return self._workloads.get(key)

    def workloads(self) -> list[Workload]:
        return list(self._workloads.values())

    def _store_workload(self, workload: Workload) -> None:
        line = json.dumps(workload.to_json(), separators=(",", ":")) + "\n"
        self._workload_file.append(line.encode())
        self._workloads[workload.key] = workload

    # -- records ----------------------------------------------------------------------
    def commit_records(self, records: Sequence[TuningRecord]) -> None:
        if not records:
            return
        data = "".join(r.to_line() for r in records).encode()
        self._record_file.append(data)
        for r in records:
            if self.accepts(r):
                self._index(r)

    def get_all_records(self) -> list[TuningRecord]:
        return list(self._records)

    def records_of(self, workload: Any) -> list[TuningRecord]:
        return list(self._by_workload.get(key_of(workload), ()))

    def has_measured(self, workload: Any, trace: Any) -> bool:
        return (key_of(workload), trace_key(trace)) in self._measured

    def __len__(self) -> int:
        return len(self._records)

    def workload_keys(self) -> list[str]:
        return list(self._by_workload)

    def close(self) -> None:
        self._record_file.close()
        self._workload_file.close()

    def __repr__(self) -> str:
        return f"JSONDatabase({self.path_tuning_record!r}, {len(self._records)} records)"

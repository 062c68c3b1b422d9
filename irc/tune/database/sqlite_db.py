"""The SQLite database: the same interface as the JSON one, for large record sets.

Three tables: ``workloads(key, name, func)`` (each function once, as irc text),
``records(id, workload, trace_key, fingerprint, cost, json)`` where ``json`` is the same
object a JSON-lines record holds and ``cost`` is the mean seconds (NULL for failures),
and ``claims(workload, trace_key, owner, at)``: candidates a tuning process is about to
measure, so that several processes tuning into one file at once measure each candidate
once (:meth:`SQLiteDatabase.claim`).
Indexes make best-record and has-measured queries cheap without loading every record.
The file uses write-ahead logging with ``synchronous=FULL``: a committed record survives
a killed process; a row whose JSON cannot be read is skipped and counted, never fatal.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import socket
import sqlite3
import time
from typing import Any, Sequence

from ...core.diagnostics import TuningError
from ..record import TuningRecord, Workload, combine_measurements, trace_key
from .base import Database, LoadReport, key_of

_SCHEMA = """
CREATE TABLE IF NOT EXISTS workloads (
    key TEXT PRIMARY KEY,
    name TEXT NOT NULL DEFAULT '',
    func TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workload TEXT NOT NULL,
    trace_key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    cost REAL,
    json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS claims (
    workload TEXT NOT NULL,
    trace_key TEXT NOT NULL,
    owner TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (workload, trace_key)
);
CREATE INDEX IF NOT EXISTS records_best ON records (workload, fingerprint, cost);
CREATE INDEX IF NOT EXISTS records_trace ON records (workload, trace_key);
"""


#: Seconds a claim of another host's process holds (see :meth:`SQLiteDatabase.claim`).
CLAIM_SECONDS = 600.0


def _claim_alive(owner: str, at: float, now: float) -> bool:
    """True while the process that made a claim may still measure it."""
    host, _, pid = owner.rpartition(":")
    if host == socket.gethostname() and pid.isdigit():
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return False
        except OSError:
            pass  # it exists (another user's)
        return now - at < CLAIM_SECONDS * 6
    return now - at < CLAIM_SECONDS


class SQLiteDatabase(Database):
    """Tuning records in one SQLite file (``.db``/``.sqlite``); see the module docstring.

    ``readonly=True`` opens an existing tuning database without writing anything: no
    file is created, the schema is not touched, and committing raises TuningError.
    """

    def __init__(self, path: str, target: Any = None, readonly: bool = False):
        super().__init__(target)
        self.path = os.fspath(path)
        self.readonly = readonly
        self._conn: sqlite3.Connection | None = None
        self._workloads: dict[str, Workload] = {}
        self._owner = f"{socket.gethostname()}:{os.getpid()}"
        if readonly:
            self._open_readonly()
            self._count_rows()
            return
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        try:
            self._conn = sqlite3.connect(self.path)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.executescript(_SCHEMA)
            self._conn.commit()
        except sqlite3.DatabaseError as err:
            raise TuningError(f"cannot open the tuning database {self.path}: {err}",
                              hint="is it an SQLite file? JSON-lines records end in .json"
                              ) from None
        self._count_rows()

    def _open_readonly(self) -> None:
        if not os.path.isfile(self.path):
            raise TuningError(f"cannot read the tuning database {self.path}: no such file")
        # Without a write-ahead log beside it, every committed row is in the main file
        # and ``immutable`` reads it creating nothing; with one (a writer is running, or
        # was killed), a read-only connection reads the log too.
        mode = "mode=ro" if os.path.exists(self.path + "-wal") else "immutable=1"
        uri = f"{pathlib.Path(os.path.abspath(self.path)).as_uri()}?{mode}"
        try:
            self._conn = sqlite3.connect(uri, uri=True)
            tables = {row[0] for row in self._conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.Error as err:
            self.close()
            raise TuningError(f"cannot read the tuning database {self.path}: {err}",
                              hint="is it an SQLite file? JSON-lines records end in .json"
                              ) from None
        missing = {"workloads", "records"} - tables
        if missing:
            self.close()
            raise TuningError(f"{self.path} is an SQLite file but not a tuning database: it "
                              f"has no {' and no '.join(sorted(missing))} table",
                              hint="tuning databases are written by irc tune or "
                                   "irc.tune.SQLiteDatabase")

    def _check_writable(self) -> None:
        if self.readonly:
            raise TuningError(f"the tuning database {self.path} was opened read-only")

    def _count_rows(self) -> None:
        report = LoadReport(path=self.path)
        n_wl = self._conn.execute("SELECT COUNT(*) FROM workloads").fetchone()[0]
        if self.target_fingerprint is None:
            n = self._conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
            other = 0
        else:
            n = self._conn.execute("SELECT COUNT(*) FROM records WHERE fingerprint = ?",
                                   (self.target_fingerprint,)).fetchone()[0]
            other = self._conn.execute("SELECT COUNT(*) FROM records WHERE fingerprint != ?",
                                       (self.target_fingerprint,)).fetchone()[0]
        report.records, report.workloads, report.other_target = n, n_wl, other
        self.load_report = report
        report.log()

    # -- helpers ----------------------------------------------------------------------
    def _where(self, clause: str = "") -> tuple[str, tuple]:
        conds, params = [], []
        if clause:
            conds.append(clause)
        if self.target_fingerprint is not None:
            conds.append("fingerprint = ?")
            params.append(self.target_fingerprint)
        return (" WHERE " + " AND ".join(conds)) if conds else "", tuple(params)

    def _decode(self, rows: list[tuple]) -> list[TuningRecord]:
        out = []
        for rowid, text in rows:
            try:
                rec = TuningRecord.from_json(json.loads(text))
            except (ValueError, TuningError, TypeError):
                self.load_report.unreadable += 1
                self.load_report.unreadable_lines.append(rowid)
                continue
            rec.source = f"{self.path} row {rowid}"
            out.append(rec)
        return out

    # -- workloads --------------------------------------------------------------------
    def get_workload(self, key: str) -> Workload | None:
        wl = self._workloads.get(key)
        if wl is None:
            row = self._conn.execute("SELECT key, name, func FROM workloads WHERE key = ?",
                                     (key,)).fetchone()
            if row is None:
                return None
            wl = Workload(row[0], text=row[2], name=row[1])
            self._workloads[key] = wl
        return wl

    def workloads(self) -> list[Workload]:
        rows = self._conn.execute("SELECT key FROM workloads ORDER BY rowid").fetchall()
        return [w for w in (self.get_workload(r[0]) for r in rows) if w is not None]

    def _store_workload(self, workload: Workload) -> None:
        self._check_writable()
        with self._writing():
            self._conn.execute("INSERT OR IGNORE INTO workloads (key, name, func) "
                               "VALUES (?, ?, ?)", (workload.key, workload.name, workload.text))
        self._workloads[workload.key] = workload

    @contextlib.contextmanager
    def _writing(self):
        """A transaction; a failed write (a full disk: SQLITE_FULL, an I/O error) is
        rolled back and raised as a TuningError naming the file and the cause."""
        try:
            with self._conn:
                yield
        except sqlite3.Error as err:
            raise TuningError(f"cannot write to the tuning database {self.path}: {err}; "
                              "the records committed before are kept",
                              hint="free disk space and run again: tuning resumes from the "
                                   "records") from None

    # -- records ----------------------------------------------------------------------
    def commit_records(self, records: Sequence[TuningRecord]) -> None:
        if not records:
            return
        self._check_writable()
        rows = [(r.workload_key, r.trace_key, r.fingerprint,
                 r.mean_cost if r.is_valid else None, r.to_line().rstrip("\n"))
                for r in records]
        with self._writing():
            self._conn.executemany("INSERT INTO records (workload, trace_key, fingerprint, "
                                   "cost, json) VALUES (?, ?, ?, ?, ?)", rows)

    def get_all_records(self) -> list[TuningRecord]:
        where, params = self._where()
        try:
            rows = self._conn.execute(f"SELECT id, json FROM records{where} ORDER BY id",
                                      params).fetchall()
        except sqlite3.DatabaseError as err:
            raise TuningError(f"cannot read the records of {self.path}: {err}") from None
        return self._decode(rows)

    def records_of(self, workload: Any) -> list[TuningRecord]:
        where, params = self._where("workload = ?")
        rows = self._conn.execute(f"SELECT id, json FROM records{where} ORDER BY id",
                                  (key_of(workload),) + params).fetchall()
        return self._decode(rows)

    def get_top_k(self, workload: Any, k: int) -> list[TuningRecord]:
        where, params = self._where("workload = ? AND cost IS NOT NULL")
        rows = self._conn.execute(f"SELECT id, json FROM records{where} ORDER BY id",
                                  (key_of(workload),) + params).fetchall()
        # Every valid measurement: a candidate's repeated ones are combined (see
        # Database.get_top_k).
        out = combine_measurements(self._decode(rows))
        out.sort(key=lambda r: (r.mean_cost, r.timestamp))
        return out[:max(0, int(k))]

    def has_measured(self, workload: Any, trace: Any) -> bool:
        return self._measured_key(key_of(workload), trace_key(trace))

    def claim(self, workload: Any, traces: Sequence[Any]) -> list[bool]:
        """See :meth:`Database.claim`: one transaction holding the write lock checks the
        records and the ``claims`` table and claims the free candidates for this
        process. A claim lapses when its process is gone (same host) or after
        :data:`CLAIM_SECONDS` (another host), so a killed run holds nothing for long."""
        self._check_writable()
        key = key_of(workload)
        keys = [trace_key(t) for t in traces]
        now = time.time()
        out = []
        try:
            with self._conn:
                self._conn.execute("BEGIN IMMEDIATE")
                for tk in keys:
                    if self._measured_key(key, tk):
                        out.append(False)
                        continue
                    row = self._conn.execute("SELECT owner, at FROM claims WHERE workload = ? "
                                             "AND trace_key = ?", (key, tk)).fetchone()
                    if row is not None and row[0] != self._owner and \
                            _claim_alive(row[0], row[1], now):
                        out.append(False)
                        continue
                    self._conn.execute("INSERT OR REPLACE INTO claims (workload, trace_key, "
                                       "owner, at) VALUES (?, ?, ?, ?)",
                                       (key, tk, self._owner, now))
                    out.append(True)
        except sqlite3.Error as err:
            raise TuningError(f"cannot write to the tuning database {self.path}: {err}; "
                              "the records committed before are kept") from None
        return out

    def _measured_key(self, workload: str, key: str) -> bool:
        where, params = self._where("workload = ? AND trace_key = ?")
        return self._conn.execute(f"SELECT 1 FROM records{where} LIMIT 1",
                                  (workload, key) + params).fetchone() is not None

    def __len__(self) -> int:
        where, params = self._where()
        return self._conn.execute(f"SELECT COUNT(*) FROM records{where}", params).fetchone()[0]

    def workload_keys(self) -> list[str]:
        where, params = self._where()
        rows = self._conn.execute(f"SELECT workload, MIN(id) AS first FROM records{where} "
                                  "GROUP BY workload ORDER BY first", params).fetchall()
        return [r[0] for r in rows]

    @property
    def location(self) -> str:
        """The SQLite file's path."""
        return self.path

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __repr__(self) -> str:
        return f"SQLiteDatabase({self.path!r})"

"""Opening a tuning database to read it, as ``irc records`` does: never an empty result
for a path that holds no records.

A database argument is a record file (``.json`` lines, or SQLite ``.db``/``.sqlite``/
``.sqlite3``) or a work directory of ``irc tune`` (MetaSchedule's file names,
``database_tuning_record.json`` and ``database_workload.json``). :func:`open_for_reading`
creates no file (the SQLite one is opened read-only) and raises TuningError, naming the
file, for a missing path, a directory without records, a JSON file none of whose lines is
a record, or a file that is not an SQLite database. A JSON file with some unreadable
lines opens; :func:`load_warning` gives the load report to show the user.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Any, Iterator

from ...core.diagnostics import TuningError
from .base import Database
from .distill import SQLITE_SUFFIXES
from .json_db import JSONDatabase
from .sqlite_db import SQLiteDatabase

WORK_DIR_RECORDS = "database_tuning_record.json"
_SQLITE_MAGIC = b"SQLite format 3\0"
_HINT = "give a record file (.json, .db) or a work directory of irc tune"


def open_for_reading(path: Any, target: Any = None) -> Database:
    """The database at ``path`` (a record file or a work directory; see the module
    docstring), opened without creating or changing any file. ``target`` hides records
    of other hardware. Report :func:`load_warning` to the user after reading."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise TuningError(f"cannot read tuning records from {path}: no such file or "
                          "directory", hint=_HINT)
    if os.path.isdir(path):
        if not os.path.isfile(os.path.join(path, WORK_DIR_RECORDS)):
            raise TuningError(f"{path} is a directory without {WORK_DIR_RECORDS}, so not a "
                              "work directory of irc tune", hint=_HINT)
        return _open_json(os.path.join(path, WORK_DIR_RECORDS), lambda: JSONDatabase
                          .from_work_dir(path, target=target))
    if path.endswith(SQLITE_SUFFIXES):
        with _load_log_silenced():
            return SQLiteDatabase(path, target=target, readonly=True)
    return _open_json(path, lambda: JSONDatabase(path, target=target))


def load_warning(db: Database) -> str | None:
    """The load report of ``db`` when entries were unreadable (call it after reading the
    records: SQLite rows are decoded then), else None."""
    report = db.load_report
    return str(report) if report.unreadable else None


def default_output_path(path: Any, suffix: str, ext: str | None = None) -> str:
    """A file named after the database at ``path``, beside it: ``log.json`` ->
    ``log<suffix>.json``; a work directory ``run/`` -> ``run<suffix>.json``. ``ext``
    replaces the extension (``.png``)."""
    path = os.fspath(path).rstrip("/" + os.sep) or os.fspath(path)
    if os.path.isdir(path):
        root, old_ext = path, ""
    else:
        root, old_ext = os.path.splitext(path)
    return f"{root}{suffix}{ext if ext is not None else (old_ext or '.json')}"


@contextlib.contextmanager
def _load_log_silenced() -> Iterator[None]:
    # A reader shows the load report itself (load_warning); the database's own log
    # line would say the same thing twice.
    log = logging.getLogger("irc.tune")
    was = log.disabled
    log.disabled = True
    try:
        yield
    finally:
        log.disabled = was


def _open_json(record_path: str, make: Any) -> JSONDatabase:
    try:
        with _load_log_silenced():
            db = make()
    except OSError as err:
        raise TuningError(f"cannot read tuning records from {err.filename or record_path}: "
                          f"{err.strerror}") from None
    report = db.load_report
    if report.records or report.other_target or not report.unreadable:
        return db
    lines = _record_lines(record_path)
    if not lines:
        return db  # only the workload file is damaged; the records file is empty
    db.close()
    with open(record_path, "rb") as f:
        head = f.read(len(_SQLITE_MAGIC))
    if head == _SQLITE_MAGIC:
        raise TuningError(f"{record_path} is an SQLite database, not a JSON record file",
                          hint="name SQLite databases .db, .sqlite or .sqlite3")
    raise TuningError(f"{record_path} is not a tuning record file: none of its {lines} "
                      f"lines is a record", hint="a record file has one JSON object per "
                      "line with workload, target, fingerprint and run_secs or error")


def _record_lines(path: str) -> int:
    with open(path, "rb") as f:
        return sum(1 for line in f if line.strip())


__all__ = ["default_output_path", "load_warning", "open_for_reading"]

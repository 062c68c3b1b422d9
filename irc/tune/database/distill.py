"""``distill``: keep only the best record of each workload on each hardware.

Tuning logs grow with every trial; applying the best schedules only needs one record per
(workload, target fingerprint). ``irc.tune.distill("big.json", "best.json")`` writes those
records (and their workloads) to another database; the source is left untouched. From the
shell: ``irc records best big.json -o best.json`` (or ``python -m irc.tune.database
distill -i big.json -o best.json``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ...core.diagnostics import TuningError
from ..record import TuningRecord
from .base import Database, copy_records
from .json_db import JSONDatabase
from .sqlite_db import SQLiteDatabase

SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def open_database(path: Any, target: Any = None) -> Database:
    """A database at ``path``: SQLite for ``.db``/``.sqlite``/``.sqlite3`` files, JSON lines
    otherwise; an existing Database is returned as is."""
    if isinstance(path, Database):
        return path
    if not isinstance(path, (str, os.PathLike)):
        raise TuningError(f"a tuning database is a file path or a Database, got "
                          f"{type(path).__name__}")
    path = os.fspath(path)
    if path.endswith(SQLITE_SUFFIXES):
        return SQLiteDatabase(path, target=target)
    return JSONDatabase(path, target=target)


@dataclass(frozen=True)
class DistillReport:
    """What :func:`distill` did: records read, best records written, workloads without a
    valid record (nothing to keep for them)."""

    read: int
    written: int
    kept: int
    without_valid: int

    def __str__(self) -> str:
        return (f"distilled {self.read} records to {self.kept} best ({self.written} new); "
                f"{self.without_valid} workload/target pairs had no valid record")


def best_per_workload(records: list[TuningRecord]) -> tuple[list[TuningRecord], int]:
    """The fastest valid record per (workload, fingerprint), in first-seen order, and the
    number of pairs that have no valid record."""
    best: dict[tuple[str, str], TuningRecord | None] = {}
    for r in records:
        ident = (r.workload_key, r.fingerprint)
        cur = best.get(ident)
        if r.is_valid and (cur is None or r.mean_cost < cur.mean_cost):
            best[ident] = r
        elif ident not in best:
            best[ident] = None
    kept = [r for r in best.values() if r is not None]
    return kept, sum(1 for r in best.values() if r is None)


def distill(src: Any, dst: Any, target: Any = None) -> DistillReport:
    """Write the best record per workload and target fingerprint of ``src`` into ``dst``
    (paths or Databases; ``target`` limits both to one hardware). Records ``dst`` already
    holds are not written again."""
    if isinstance(src, (str, os.PathLike)) and isinstance(dst, (str, os.PathLike)) \
            and os.path.abspath(src) == os.path.abspath(dst):
        raise TuningError("distill needs a destination different from its source",
                          hint="write to a new file, then replace the old one if wanted")
    if isinstance(src, (str, os.PathLike)) and not os.path.exists(src):
        raise TuningError(f"no tuning records at {os.fspath(src)}")
    src_db = open_database(src, target)
    dst_db = open_database(dst, target)
    try:
        records = src_db.get_all_records()
        kept, without = best_per_workload(records)
        written = copy_records(src_db, dst_db, kept)
    finally:
        if src_db is not src:
            src_db.close()
        if dst_db is not dst:
            dst_db.close()
    return DistillReport(read=len(records), written=written, kept=len(kept),
                         without_valid=without)

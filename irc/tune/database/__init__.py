"""Tuning databases: append-only JSON lines (:class:`JSONDatabase`) and SQLite
(:class:`SQLiteDatabase`) behind one interface (:class:`Database`); :func:`open_database`
picks by file suffix; :func:`distill` keeps the best record per workload and target."""

from .base import Database, LoadReport, copy_records
from .distill import DistillReport, best_per_workload, distill, open_database
from .json_db import JSONDatabase, default_workload_path
from .sqlite_db import SQLiteDatabase

__all__ = [
    "Database", "DistillReport", "JSONDatabase", "LoadReport", "SQLiteDatabase",
    "best_per_workload", "copy_records", "default_workload_path", "distill", "open_database",
]

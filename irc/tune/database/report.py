"""What ``irc records show`` and ``irc records best`` print (and ``python -m
irc.tune.database``, the older entry point, too).

:func:`show_records` prints a table of workloads -- records, valid and failed ones, the
best latency and, where the stored function's FLOP count is known, GFLOPS -- one table
per target; optionally the fastest records of each workload and the failures counted by
error kind. Tables are drawn with rich on a terminal and as plain aligned text
otherwise (a pipe or a file gets no escape codes). :func:`distill_records` writes the
best record per workload and target to another database.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Sequence, TextIO

from ...core.diagnostics import IRCError, TuningError
from ..record import TuningRecord
from ..task import flop_count
from .base import Database
from .distill import DistillReport, distill
from .reader import default_output_path, load_warning, open_for_reading

KEY_CHARS = 12  # of a workload key in tables: enough to tell workloads apart


@dataclass(frozen=True)
class WorkloadSummary:
    """The records of one workload on one machine (target fingerprint)."""

    key: str
    name: str
    target: str
    fingerprint: str
    records: int
    valid: int
    best: TuningRecord | None
    flops: float | None
    """Floating-point operations of one call (None when unknown)."""

    @property
    def failed(self) -> int:
        """Records that failed (no valid time)."""
        return self.records - self.valid

    @property
    def best_gflops(self) -> float | None:
        """GFLOPS of the best record (None when there is none or the FLOPs are unknown)."""
        if self.best is None or not self.flops:
            return None
        return self.flops / self.best.mean_cost / 1e9


class FlopCounter:
    """FLOP counts of a database's stored functions, computed once per workload (None
    when the function is not stored, cannot be read back, or has symbolic extents)."""

    def __init__(self, db: Database):
        self.db = db
        self._flops: dict[str, float | None] = {}

    def __call__(self, key: str) -> float | None:
        if key not in self._flops:
            self._flops[key] = self._count(key)
        return self._flops[key]

    def _count(self, key: str) -> float | None:
        wl = self.db.get_workload(key)
        if wl is None:
            return None
        try:
            flops = flop_count(wl.func)
        except IRCError:
            return None  # a stored text this irc cannot parse: GFLOPS stay unknown
        return flops if flops > 0 else None


def task_names(db: Database, records: Sequence[TuningRecord]) -> dict[str, str]:
    """A name per workload key: the stored workload's name, else the task name its
    records carry, else ""."""
    names: dict[str, str] = {}
    for r in records:
        if names.get(r.workload_key):
            continue
        wl = db.get_workload(r.workload_key)
        names[r.workload_key] = (wl.name if wl is not None and wl.name else "") \
            or r.task_name
    return names


def select_records(records: Sequence[TuningRecord], names: dict[str, str],
                   workload: str | None = None, target: str | None = None
                   ) -> list[TuningRecord]:
    """The records whose workload key or task name contains ``workload`` and whose
    target or hardware fingerprint contains ``target`` (None: any)."""
    out = []
    for r in records:
        if workload and workload not in r.workload_key \
                and workload not in names.get(r.workload_key, ""):
            continue
        if target and target not in r.target and target not in r.fingerprint:
            continue
        out.append(r)
    return out


def summarize(db: Database, records: Sequence[TuningRecord],
              flops: FlopCounter | None = None) -> list[WorkloadSummary]:
    """One summary per (workload, fingerprint) of ``records``, in first-record order."""
    flops = flops or FlopCounter(db)
    names = task_names(db, records)
    groups: dict[tuple[str, str], list[TuningRecord]] = {}
    for r in records:
        groups.setdefault((r.workload_key, r.fingerprint), []).append(r)
    out = []
    for (key, fingerprint), recs in groups.items():
        valid = [r for r in recs if r.is_valid]
        best = min(valid, key=lambda r: r.mean_cost) if valid else None
        out.append(WorkloadSummary(key=key, name=names.get(key, ""), target=recs[-1].target,
                                   fingerprint=fingerprint, records=len(recs),
                                   valid=len(valid), best=best, flops=flops(key)))
    return out


# -- printing -------------------------------------------------------------------------


@dataclass
class Table:
    """Rows of text cells under a title; numeric columns are right-aligned."""

    title: str
    headers: list[str]
    rows: list[list[str]]
    numeric: frozenset[int] = frozenset()


def print_tables(tables: Sequence[Table], out: TextIO) -> None:
    """Print ``tables`` to ``out``: with rich where ``out`` is a terminal (rich's
    judgement, FORCE_COLOR included), as plain aligned text otherwise."""
    from rich.console import Console

    console = Console(file=out)
    if not console.is_terminal:
        for n, table in enumerate(tables):
            if n:
                out.write("\n")
            out.write(_plain(table))
        return
    from rich.table import Table as RichTable

    for table in tables:
        rich_table = RichTable(title=table.title, title_justify="left")
        for i, header in enumerate(table.headers):
            rich_table.add_column(header, justify="right" if i in table.numeric else "left",
                                  overflow="fold")
        for row in table.rows:
            rich_table.add_row(*row)
        console.print(rich_table)


def _plain(table: Table) -> str:
    cells = [table.headers, *table.rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(table.headers))]

    def line(row: list[str]) -> str:
        parts = [c.rjust(w) if i in table.numeric else c.ljust(w)
                 for i, (c, w) in enumerate(zip(row, widths))]
        return "  ".join(parts).rstrip() + "\n"

    rule = "  ".join("-" * w for w in widths) + "\n"
    return f"{table.title}\n" + line(table.headers) + rule + "".join(map(line, table.rows))


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4f}"


def _gflops(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if value >= 0.01 else f"{value:.2g}"


def _when(timestamp: float) -> str:
    if not timestamp:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))


def _first_line(text: str, limit: int = 100) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit - 3] + "..."


def workload_tables(summaries: Sequence[WorkloadSummary]) -> list[Table]:
    """The workload table of each target (fingerprint) among ``summaries``."""
    by_machine: dict[str, list[WorkloadSummary]] = {}
    for s in summaries:
        by_machine.setdefault(s.fingerprint, []).append(s)
    tables = []
    for fingerprint, group in by_machine.items():
        rows = [[s.name or "-", s.key[:KEY_CHARS], str(s.records), str(s.valid),
                 str(s.failed), _ms(s.best.mean_cost) if s.best else "-",
                 _gflops(s.best_gflops)] for s in group]
        tables.append(Table(title=f"target {group[0].target} ({fingerprint})",
                            headers=["task", "workload", "records", "valid", "failed",
                                     "best (ms)", "GFLOPS"],
                            rows=rows, numeric=frozenset({2, 3, 4, 5, 6})))
    return tables


def top_tables(summaries: Sequence[WorkloadSummary], records: Sequence[TuningRecord],
               k: int) -> list[Table]:
    """The ``k`` fastest valid records of each workload and machine."""
    by_group: dict[tuple[str, str], list[TuningRecord]] = {}
    for r in records:
        if r.is_valid:
            by_group.setdefault((r.workload_key, r.fingerprint), []).append(r)
    tables = []
    for s in summaries:
        fastest = sorted(by_group.get((s.key, s.fingerprint), []),
                         key=lambda r: (r.mean_cost, r.timestamp))[:k]
        rows = [[str(n), _ms(r.mean_cost),
                 _gflops(s.flops / r.mean_cost / 1e9 if s.flops else None),
                 _when(r.timestamp), f"{r.build_secs:.2f}",
                 "unscheduled" if r.trace is None else r.trace_key[:KEY_CHARS]]
                for n, r in enumerate(fastest, start=1)]
        title = (f"fastest {len(fastest)} of {s.name or '-'} ({s.key[:KEY_CHARS]}) on "
                 f"{s.target}")
        tables.append(Table(title=title, headers=["#", "latency (ms)", "GFLOPS", "measured",
                                                  "build (s)", "trace"],
                            rows=rows, numeric=frozenset({0, 1, 2, 4})))
    return tables


def error_table(records: Sequence[TuningRecord], names: dict[str, str]) -> Table:
    """Failed records counted by error kind, with one sample message each."""
    kinds: dict[str, list[TuningRecord]] = {}
    for r in records:
        if not r.is_valid:
            kinds.setdefault(r.error_kind or "INVALID", []).append(r)
    rows = []
    for kind, recs in sorted(kinds.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        sample = recs[0]
        name = names.get(sample.workload_key) or sample.workload_key[:KEY_CHARS]
        rows.append([kind, str(len(recs)), str(len({r.workload_key for r in recs})),
                     f"{name}: {_first_line(sample.error_msg) or '(no message)'}"])
    failed = sum(len(v) for v in kinds.values())
    return Table(title=f"failed records: {failed} of {len(records)}",
                 headers=["error", "records", "workloads", "sample message"], rows=rows,
                 numeric=frozenset({1, 2}))


def show_records(path: Any, out: TextIO, err: TextIO, workload: str | None = None,
                 target: str | None = None, top: int = 0, errors: bool = False) -> None:
    """Print the summary of the database at ``path`` to ``out`` (warnings to ``err``);
    see the module docstring. ``workload`` and ``target`` are substrings that select
    records (of the workload key or task name; of the target or fingerprint)."""
    if top < 0:
        raise TuningError(f"--top takes a positive number of records, got {top}")
    with open_for_reading(path) as db:
        records = db.get_all_records()
        warning = load_warning(db)
        if warning:
            err.write(f"warning: {warning}\n")
        names = task_names(db, records)
        chosen = select_records(records, names, workload, target)
        targets = len({r.fingerprint for r in records})
        out.write(f"{os.fspath(path)}: {len(records)} records of "
                  f"{len({r.workload_key for r in records})} workloads on {targets} "
                  f"target{'s' if targets != 1 else ''}\n")
        if not chosen:
            if records:
                wanted = " and ".join(f"{opt} {val!r}" for opt, val in
                                      (("--workload", workload), ("--target", target)) if val)
                out.write(f"no records match {wanted}\n")
            return
        summaries = summarize(db, chosen)
        tables = workload_tables(summaries)
        if top:
            tables += top_tables(summaries, chosen, top)
        failures = error_table(chosen, names) if errors else None
        if failures is not None and failures.rows:
            tables.append(failures)
        out.write("\n")
        print_tables(tables, out)
        if failures is not None and not failures.rows:
            out.write(f"\nno failed records (of {len(chosen)})\n")


def distill_records(path: Any, output: str | None, out: TextIO, err: TextIO
                    ) -> tuple[str, DistillReport]:
    """Write the best valid record per workload and target of the database at ``path``
    to ``output`` (default: ``<stem>.best<ext>`` beside it); print what was written to
    ``out`` and return the output path and the report."""
    output = output or default_output_path(path, ".best")
    with open_for_reading(path) as db:
        if os.path.abspath(output) in (os.path.abspath(db.location),
                                       os.path.abspath(os.fspath(path))):
            raise TuningError(f"cannot distill {os.fspath(path)} into itself",
                              hint="write to a new file (-o), then replace the old one if "
                                   "wanted")
        if os.path.isdir(output):
            raise TuningError(f"cannot write the best records to {output}: it is a "
                              "directory", hint="give a file name such as best.json")
        report = distill(db, output)
        warning = load_warning(db)
    if warning:
        err.write(f"warning: {warning}\n")
    out.write(f"{report} -> {output}\n")
    return output, report


__all__ = ["FlopCounter", "Table", "WorkloadSummary", "distill_records", "error_table",
           "print_tables", "select_records", "show_records", "summarize", "task_names",
           "top_tables", "workload_tables"]

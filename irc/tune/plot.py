"""Plots of a tuning run from its records (``irc records plot``).

Two views, computed by :func:`tuning_curves` and drawn by :func:`plot_tuning`:

- **tasks**: the best GFLOPS of each task against its trial number (its records in
  measurement order, failures included), one line per task (tasks whose FLOP count is
  unknown are left out);
- **total**: the estimated end-to-end latency ``sum(weight_i * best cost_i)`` among the
  records measured up to each moment, against seconds since the first record; it starts
  once every task has a valid record. A task's default-schedule record counts like any
  other (it is the task's cost until something faster is measured). A dashed line marks
  the default build, ``sum(weight_i * default cost_i)``. The weights come from the task
  table ``irc tune`` saves (:mod:`irc.tune.task_table`); without it there is no total.

A task's default-schedule record is the one whose trace is the default schedule the
tuner measures (:func:`~irc.tune.task.default_schedule_trace` of the stored function on
the record's target) or the unscheduled function; failing both (records of an irc whose
default rules differed), the task's first record, as the task scheduler measures every
default before searching.

matplotlib (the ``plot`` extra) is imported when a figure is drawn, with the Agg canvas
(no display needed).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..core.diagnostics import IRCError, TuningError, require
from ..core.target import Target
from .database import Database
from .database.report import FlopCounter, task_names
from .record import TuningRecord, trace_key
from .task import default_schedule_trace

PLOT_KINDS = ("tasks", "total", "both")
FIGURE_FORMATS = (".png", ".svg", ".pdf")
PANEL_SIZE = (6.4, 4.8)  # inches, per view
DPI = 100


@dataclass
class TaskCurve:
    """Best GFLOPS of one task after each of its trials (NaN before its first valid
    record)."""

    name: str
    key: str
    trials: list[int]
    gflops: list[float]


@dataclass
class LatencyCurve:
    """Estimated end-to-end latency (ms) against seconds since the first record, and the
    default build's estimate (None when a task's default record is missing or failed)."""

    seconds: list[float]
    latency_ms: list[float]
    default_ms: float | None


@dataclass
class TuningCurves:
    """What :func:`plot_tuning` draws, and notes on what it could not (to print)."""

    tasks: list[TaskCurve]
    total: LatencyCurve | None
    notes: list[str] = field(default_factory=list)


def tuning_curves(db: Database, records: Sequence[TuningRecord],
                  table: dict | None = None) -> TuningCurves:
    """The curves of ``records`` (of one machine) of ``db``; ``table`` is the task table
    (:func:`~irc.tune.task_table.load_task_table`), None when there is none."""
    machines = sorted({r.fingerprint for r in records})
    if len(machines) > 1:
        raise TuningError(f"the records were measured on {len(machines)} machines "
                          f"({', '.join(machines)}); a plot shows one",
                          hint="choose one with --target")
    by_key: dict[str, list[TuningRecord]] = {}
    for r in records:
        by_key.setdefault(r.workload_key, []).append(r)
    flops = FlopCounter(db)
    notes: list[str] = []
    if table is not None:
        tasks = [(t["name"], t["workload_key"], t["weight"],
                  t["flops"] if t["flops"] > 0 else flops(t["workload_key"]))
                 for t in table["tasks"]]
    else:
        names = task_names(db, records)
        tasks = [(names[key] or key[:12], key, 1.0, flops(key)) for key in by_key]
    curves = []
    for name, key, _, task_flops in tasks:
        recs = by_key.get(key, [])
        if not recs:
            notes.append(f"task {name} has no records")
        elif not task_flops:
            notes.append(f"task {name}: FLOP count unknown, left out of the GFLOPS plot")
        else:
            curves.append(_task_curve(name, key, recs, task_flops))
    total = None
    if table is not None:
        total = _latency_curve(db, [(name, key, weight) for name, key, weight, _ in tasks],
                               by_key, notes)
    return TuningCurves(tasks=curves, total=total, notes=notes)


def _task_curve(name: str, key: str, records: list[TuningRecord], flops: float) -> TaskCurve:
    best = math.inf
    gflops = []
    for r in records:
        best = min(best, r.mean_cost)
        gflops.append(flops / best / 1e9 if math.isfinite(best) and best > 0 else math.nan)
    return TaskCurve(name=name, key=key, trials=list(range(1, len(records) + 1)),
                     gflops=gflops)


def _latency_curve(db: Database, tasks: list[tuple[str, str, float]],
                   by_key: dict[str, list[TuningRecord]], notes: list[str]) -> LatencyCurve:
    index: dict[str, list[int]] = {}
    for i, (_, key, _) in enumerate(tasks):
        index.setdefault(key, []).append(i)
    events = sorted((r for key in index for r in by_key.get(key, [])),
                    key=lambda r: r.timestamp)
    best = [math.inf] * len(tasks)
    seconds: list[float] = []
    latency: list[float] = []
    for r in events:
        for i in index[r.workload_key]:
            best[i] = min(best[i], r.mean_cost)
        if all(math.isfinite(b) for b in best):
            seconds.append(r.timestamp - events[0].timestamp)
            latency.append(sum(w * b for (_, _, w), b in zip(tasks, best)) * 1e3)
    missing = [name for (name, _, _), b in zip(tasks, best) if not math.isfinite(b)]
    if missing:
        notes.append(f"no estimated latency: {len(missing)} tasks have no valid record "
                     f"({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''})")
    default_ms: float | None = 0.0
    for name, key, weight in tasks:
        rec = default_record(db, by_key.get(key, []))
        if rec is None or not rec.is_valid:
            notes.append(f"task {name}: no valid default-schedule record, so no default "
                         "build reference line")
            default_ms = None
            break
        default_ms += weight * rec.mean_cost * 1e3
    return LatencyCurve(seconds=seconds, latency_ms=latency, default_ms=default_ms)


def default_record(db: Database, records: Sequence[TuningRecord]) -> TuningRecord | None:
    """The default-schedule record among ``records`` (of one workload and machine, in
    measurement order); see the module docstring. None when there are no records."""
    if not records:
        return None
    keys = {"default"}  # the unscheduled function's trace key
    wl = db.get_workload(records[0].workload_key)
    if wl is not None:
        try:
            trace, _ = default_schedule_trace(wl.func, Target.canon(records[0].target),
                                              log=False)
        except IRCError:
            trace = None  # a function or target this irc cannot read: the first record
        keys.add(trace_key(trace))
    for r in records:
        if r.trace_key in keys:
            return r
    return records[0]


def _matplotlib() -> tuple[Any, Any]:
    need = {"extra": "plot", "purpose": "plotting tuning records", "package": "matplotlib"}
    agg = require("matplotlib.backends.backend_agg", **need)
    return require("matplotlib.figure", **need).Figure, agg.FigureCanvasAgg


def plot_tuning(curves: TuningCurves, kind: str = "both", title: str = "") -> Any:
    """A matplotlib Figure of ``curves``: ``kind`` "tasks", "total" or "both" (side by
    side; "both" without a total draws the tasks alone)."""
    if kind not in PLOT_KINDS:
        raise TuningError(f"unknown plot kind {kind!r}; choose one of {', '.join(PLOT_KINDS)}")
    views = ["tasks", "total"] if kind == "both" else [kind]
    if curves.total is None:
        if kind == "total":
            raise TuningError("the estimated latency plot needs the task table (task "
                              "weights), which irc tune saves next to the database")
        views = ["tasks"]
    Figure, FigureCanvasAgg = _matplotlib()
    fig = Figure(figsize=(PANEL_SIZE[0] * len(views), PANEL_SIZE[1]), dpi=DPI,
                 layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(views), squeeze=False)[0]
    for ax, view in zip(axes, views):
        if view == "tasks":
            _draw_tasks(ax, curves.tasks)
        else:
            _draw_total(ax, curves.total)
    if title:
        fig.suptitle(title)
    return fig


def _draw_tasks(ax: Any, tasks: list[TaskCurve]) -> None:
    for c in tasks:
        # A marker per trial while they are few: a task with one trial is one point.
        ax.plot(c.trials, c.gflops, drawstyle="steps-post",
                marker="." if len(c.trials) < 50 else None, label=c.name)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("trials")
    ax.set_ylabel("best GFLOPS")
    ax.set_title("best GFLOPS per task")
    ax.grid(True, alpha=0.3)
    if tasks:
        ax.legend(fontsize="x-small", ncols=1 + len(tasks) // 16)
    else:
        ax.text(0.5, 0.5, "no task with a known FLOP count", ha="center", va="center",
                transform=ax.transAxes)


def _draw_total(ax: Any, total: LatencyCurve) -> None:
    if total.latency_ms:
        ax.plot(total.seconds, total.latency_ms, drawstyle="steps-post",
                label="estimated latency")
    else:
        ax.text(0.5, 0.5, "no estimate: a task has no valid record", ha="center",
                va="center", transform=ax.transAxes)
    if total.default_ms is not None:
        ax.axhline(total.default_ms, linestyle="--", color="gray",
                   label=f"default build ({total.default_ms:.3f} ms)")
    ax.set_xlabel("tuning time (s)")
    ax.set_ylabel("estimated latency (ms)")
    ax.set_title("estimated end-to-end latency")
    ax.grid(True, alpha=0.3)
    if total.latency_ms or total.default_ms is not None:
        ax.legend(fontsize="small")


def save_figure(fig: Any, path: str) -> None:
    """Write ``fig`` to ``path`` (.png, .svg or .pdf, by its extension)."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in FIGURE_FORMATS:
        raise TuningError(f"cannot write a plot to {path}: the file name must end in "
                          f"{', '.join(FIGURE_FORMATS)}")
    try:
        fig.savefig(path, dpi=DPI)
    except OSError as err:
        raise TuningError(f"cannot write the plot {path}: {err.strerror}") from None


__all__ = ["LatencyCurve", "TaskCurve", "TuningCurves", "default_record", "plot_tuning",
           "save_figure", "tuning_curves"]

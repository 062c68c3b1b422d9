"""``irc tune``: tune a model's kernels into a tuning database, with a live display.

On a terminal the display refreshes in place (rich): a progress bar over the trials
with the elapsed time and an ETA (and one over the time budget when there is one), and
the table of tasks — weight (calls in the model), trials, best latency and GFLOPS, and
each task's share of the estimated total. The estimated total latency (the sum over
tasks of weight x best latency) is shown from the start: a task not measured yet counts
as unknown, and once the task scheduler has measured every task's default schedule
(its first trials), the estimate is complete. When standard output is not a terminal
(a CI log, a file), progress comes as plain lines instead. Ctrl-C stops cleanly: every
measured record is already in the database ("records kept: N"), and running the same
command again resumes, numbering trials on from those already recorded.

The tasks (names, workload keys, weights, flops) are saved next to the records
(``irc.tune.task_table``), so ``irc records plot`` can draw the estimated latency over
tuning time.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import time
from typing import Any, Sequence

from ..core.diagnostics import IRCError
from ..passes import parameter_shape_vars
from ..tir.analysis.flops import flop_count
from ..tir.stmt import PrimFunc
from . import options
from .models import choose_function, graph_functions, load_model
from .run import MODEL_HELP, TARGET_HELP, _specialize

# The longest --time-budget taken (a year); longer is a typo, not a plan.
MAX_BUDGET = 365 * 24 * 3600.0

_DURATION = re.compile(r"^\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*"
                       r"(?:(\d+(?:\.\d+)?)s?)?\s*$")


def parse_duration(text: str) -> float:
    """Seconds of ``90``, ``90s``, ``10m``, ``1h``, ``1h30m``, ``2m30s``."""
    m = _DURATION.match(text)
    if not m or not text.strip() or not any(m.groups()):
        raise argparse.ArgumentTypeError(f"expected a duration such as 90s, 10m or 1h30m, "
                                         f"got {text!r}")
    h, mi, s = (float(g) if g else 0.0 for g in m.groups())
    secs = h * 3600 + mi * 60 + s
    if secs <= 0:
        raise argparse.ArgumentTypeError(f"a time budget must be positive, got {text!r}")
    if not math.isfinite(secs) or secs > MAX_BUDGET:
        raise argparse.ArgumentTypeError(f"a time budget is at most a year (8760h), got "
                                         f"{text!r}")
    return secs


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``tune`` to the ``irc`` command."""
    p = sub.add_parser(
        "tune", help="tune a model's kernels (live progress; Ctrl-C keeps every record)",
        description="Tune the loop functions of a model with irc's auto-scheduler: the "
                    "task scheduler gives trials to the kernels where they gain most "
                    "end-to-end, and every measurement goes to the tuning database at "
                    "once. Build with the result: irc compile MODEL --records DB.")
    p.add_argument("model", help=MODEL_HELP.replace(", or a compiled .ircx executable", ""))
    p.add_argument("--records", required=True, metavar="DB",
                   help="the tuning database: a work directory (created if needed; "
                        "MetaSchedule's file names) or a record file (.json lines, or "
                        ".db for SQLite). An existing one is resumed.")
    p.add_argument("--trials", type=options.positive, default=200, metavar="N",
                   help="measurements in this run, over all tasks (default: 200)")
    p.add_argument("--time-budget", type=parse_duration, metavar="DURATION",
                   help="stop after this long, e.g. 90s, 10m, 1h30m (default: no limit)")
    p.add_argument("--target", help=TARGET_HELP)
    p.add_argument("--function", metavar="NAME",
                   help="the graph function --shape specializes (default: main, or the "
                        "only graph function)")
    p.add_argument("--shape", action="append", default=[], type=options.binding,
                   metavar="NAME=INT",
                   help="tune for this size of a symbolic dimension of the function's "
                        "parameters (build with the same: irc compile --shape); repeat "
                        "for several")
    p.add_argument("--cost-model", default="auto", choices=["auto", "xgb", "numpy", "random"],
                   help="the cost model ranking candidates: xgb (XGBoost, the "
                        "'irc[tune]' extra), numpy, random, or auto: xgb when installed "
                        "(default: auto)")
    p.add_argument("--trials-per-round", type=options.positive, metavar="N",
                   help="candidates measured per round of a task (default: chosen from "
                        "the trial budget)")
    p.add_argument("--seed", type=options.seed, default=0,
                   help="seed of the search, 0 or more (default: 0)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("-q", "--quiet", action="store_true",
                      help="print only the summary at the end")
    mode.add_argument("-v", "--verbose", action="store_true",
                      help="plain lines with the tuner's own messages (task tables per "
                           "round, resumed records, failures)")
    p.add_argument("--plain", action="store_true",
                   help="plain progress lines even on a terminal")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="build and measure on a Ray cluster (needs the 'cluster' extra): "
                        "'local' starts Ray on this machine, 'auto' joins the cluster this "
                        "machine belongs to (ray start), host:port or ray://host:port names "
                        "its head node; the records stay in --records on this machine")
    p.add_argument("--runner-resource", metavar="NAME",
                   help="with --cluster: measure on the nodes holding this Ray custom "
                        "resource, one runner per unit (ray start --resources='{\"NAME\": "
                        "1}' on the machines to measure on); default: one runner per node "
                        "(CPU targets) or per GPU (cuda)")
    p.set_defaults(func=cmd_tune)


def _open_database(path: str, kind: str, target: Any) -> Any:
    from ..tune.database import JSONDatabase, open_database

    if kind == "file":
        return open_database(path, target)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as err:
        raise IRCError(f"cannot create the work directory {path}: {err.strerror}") from None
    return JSONDatabase.from_work_dir(path, target)


_ADDRESS = re.compile(r"^(?:ray://)?(?P<host>[A-Za-z0-9._\-\[\]:]+):(?P<port>\d{1,5})$")


def _check_cluster(args: argparse.Namespace) -> None:
    if args.cluster is None:
        if args.runner_resource:
            raise IRCError("--runner-resource places runners on a cluster; it needs "
                           "--cluster")
        return
    if args.cluster not in ("auto", "local"):
        m = _ADDRESS.match(args.cluster)
        if not m or not 0 < int(m["port"]) < 65536:
            raise IRCError(f"--cluster {args.cluster!r}: not a cluster address",
                           hint="give auto, local, HOST:PORT or ray://HOST:PORT")
    if args.runner_resource is not None and not args.runner_resource.strip():
        raise IRCError("--runner-resource: give the name of a Ray custom resource")


def _tasks(mod: Any, args: argparse.Namespace, target: Any) -> list[Any]:
    """The tuning tasks of the model: the loop functions its graph functions call (after
    the default pipeline), or, for a module of loop functions alone, each of them. A
    model none of whose loop functions can be tuned is an error saying why, unless there
    is nothing to tune (no floating-point work)."""
    from ..tune.graph import graph_tasks, prepare_graph, prim_func_tasks

    shapes = options.bindings(args.shape)
    names = graph_functions(mod)
    if not names:
        if shapes or args.function:
            given = options.explicit(args, "shape", "function")
            raise IRCError(f"{', '.join(given)}: {args.model} has no graph function, only "
                           "loop functions (each is tuned as it is)")
        tasks = prim_func_tasks(mod, target)
        if not tasks:
            _no_tasks(args.model, mod, None)
        return tasks
    if shapes or args.function is not None:
        mod = _specialize(mod, choose_function(names, args.function, args.model), shapes)
    prepared = prepare_graph(mod, None, target)
    tasks = graph_tasks(prepared, target)
    dims = _dimensions(mod, names)
    if not tasks:
        _no_tasks(args.model, prepared, dims)
    elif _symbolic_loops(prepared):
        left = _symbolic_loops(prepared)
        print(f"note: {len(left)} loop function{'s' if len(left) > 1 else ''} of symbolic "
              f"shape ({', '.join(left[:4])}{', ...' if len(left) > 4 else ''}) "
              "cannot be measured and are left out"
              + (f"; --shape {' --shape '.join(d + '=INT' for d in dims)} would size them"
                 if dims else ""))
    return tasks


def _dimensions(mod: Any, names: Sequence[str]) -> list[str]:
    """The symbolic dimensions the parameters of the graph functions ``names`` define."""
    return list(dict.fromkeys(v.name for n in names for v in parameter_shape_vars(mod[n])))


def _symbolic_loops(mod: Any) -> list[str]:
    """The loop functions of ``mod`` not scheduled yet whose shapes are symbolic."""
    return [gv.name_hint for gv, f in mod.functions.items()
            if isinstance(f, PrimFunc) and not f.attrs.get("tir.is_scheduled")
            and flop_count(f) < 0]


def _no_tasks(model: str, mod: Any, dims: list[str] | None) -> None:
    """Say why nothing of ``mod`` can be tuned (``dims``: the symbolic dimensions of its
    graph functions, None for a module of loop functions alone): raise an IRCError for a
    cause the user can remove; print why and return when there is nothing to tune."""
    loops = [f for f in mod.functions.values() if isinstance(f, PrimFunc)]
    symbolic = _symbolic_loops(mod)
    listed = ", ".join(symbolic[:4]) + (", ..." if len(symbolic) > 4 else "")
    if symbolic and dims is None:
        many = len(symbolic) > 1
        raise IRCError(f"{model}: the loop function{'s' if many else ''} {listed} "
                       f"{'have' if many else 'has'} symbolic shapes, and irc tune measures "
                       "kernels of static shapes",
                       hint="give loop functions of static shapes (or a graph function "
                            "calling them, sized with --shape)")
    if symbolic and dims:
        raise IRCError(f"{model}: the loop functions its graph functions call have symbolic "
                       f"shapes ({listed}), and irc tune measures kernels of static shapes; "
                       f"the model's symbolic dimensions are {', '.join(dims)}",
                       hint="give their sizes: --shape "
                            + " --shape ".join(d + "=INT" for d in dims)
                            + " (and build with the same --shape)")
    if symbolic:
        raise IRCError(f"{model}: the loop functions {listed} have shapes known only at run "
                       "time (they depend on values the model computes), and irc tune "
                       "measures kernels of static shapes")
    if loops and all(f.attrs.get("tir.is_scheduled") for f in loops):
        print(f"{model}: every loop function is scheduled already; there is nothing to "
              "tune")
    elif not loops:
        print(f"{model} has no loop function (its graph does no computation irc builds "
              "kernels for); there is nothing to tune")
    else:
        print(f"{model}: none of its loop functions does floating-point work (they move "
              "or compute integers); there is nothing to tune")


def cmd_tune(args: argparse.Namespace) -> int:
    """``irc tune``: see the module docstring."""
    from ..tune.cost_model import create_cost_model, describe_cost_model
    from ..tune.engine import check_gpu_for_measuring, check_target_buildable
    from ..tune.ms import network_runner
    from ..tune.options import TuneComponents, TuneConfig
    from ..tune.task_table import save_task_table
    from ..tune.tuner import tune_tasks

    target = options.check_target(args.target)
    kind = options.record_path_kind(args.records)
    _check_cluster(args)
    check_target_buildable(target)
    if target.kind.name == "cuda" and args.cluster is None:
        check_gpu_for_measuring(target, 0)  # (measured on this machine's first GPU)
    options.bindings(args.shape)
    cost_model = create_cost_model(args.cost_model)
    log_dir = None if kind == "file" else os.path.join(args.records, "logs")
    config = TuneConfig(args.trials, num_trials_per_iter=args.trials_per_round,
                        time_budget=args.time_budget, seed=args.seed,
                        verbose=1 if args.verbose else 0, out=sys.stdout, log_dir=log_dir)
    mod = load_model(args.model)
    tasks = _tasks(mod, args, target)
    if not tasks:
        return 0
    cluster = None
    hardware: Any = target
    if args.cluster:
        cluster = _connect_cluster(args, target)
        hardware = cluster.runner.hardware_fingerprint(target)
    try:
        db = _open_database(args.records, kind, hardware)
    except BaseException:
        if cluster is not None:
            cluster.close()
        raise
    save_task_table(args.records, str(target), [
        {"name": t.name, "workload_key": t.workload.key, "weight": float(t.weight),
         "flops": float(t.flop_count)} for t in tasks])
    display = TuneDisplay(tasks, db, args.trials, args.time_budget,
                          live=not (args.plain or args.verbose or args.quiet)
                          and sys.stdout.isatty(), quiet=args.quiet)
    # (--verbose: the tuner prints the cost model itself)
    display.header(args.model, target, "" if args.verbose else describe_cost_model(cost_model),
                   args.records)
    runner = network_runner(log_dir) if target.kind.name == "llvm" and cluster is None \
        else None
    if cluster is not None:
        components = TuneComponents(builder=cluster.builder, runner=cluster.runner,
                                    cost_model=cost_model, callbacks=(display.on_measured,))
    else:
        components = TuneComponents(runner=runner, cost_model=cost_model,
                                    callbacks=(display.on_measured,))
    try:
        with display:
            summary, _ = tune_tasks(tasks, db, config, components)
        display.done(summary.stopped_by)  # (reads the database: before it is closed)
    except KeyboardInterrupt:
        display.interrupted()
        return 130
    finally:
        if runner is not None:
            runner.close()
        if cluster is not None:
            cluster.close()
        db.close()
    return 0


def _connect_cluster(args: argparse.Namespace, target: Any) -> Any:
    """The Ray cluster of ``--cluster``, its runners measuring as ``irc tune`` does on
    this machine (CPU kernels after a cache flush, as in a network)."""
    from ..tune.cluster import RayCluster, RunnerPool
    from ..tune.ms import NETWORK_RUNNER_OPTIONS

    pools = None
    if args.runner_resource:
        pools = [RunnerPool({args.runner_resource: 1}, target=target.kind.name)]
    options: dict[str, Any] = dict(NETWORK_RUNNER_OPTIONS) if target.kind.name == "llvm" \
        else {"check_correctness": True}
    return RayCluster(args.cluster, pools, **options)


class TuneDisplay:
    """The progress of ``irc tune``: a live rich display on a terminal, plain lines
    otherwise (see the module docstring). ``on_measured`` is the tuner's measure
    callback; it keeps each task's trials and best latency."""

    def __init__(self, tasks: Sequence[Any], db: Any, trials: int, budget: float | None,
                 live: bool, quiet: bool):
        from ..tune.record import combine_measurements

        self.tasks = list(tasks)
        self.index = {t.workload.key: i for i, t in enumerate(self.tasks)}
        self.db = db
        self.location = db.location or "the database"
        self.trials = trials
        self.budget = budget
        self.quiet = quiet
        self.live_mode = live
        n = len(self.tasks)
        self.best = [math.inf] * n
        self.default = [math.inf] * n
        self.counts = [0] * n
        # Resuming: earlier records count (trials are numbered on from them).
        self.before = 0
        for i, t in enumerate(self.tasks):
            recs = db.records_of(t.workload)
            self.before += len(recs)
            self.counts[i] = len(recs)
            for r in combine_measurements(recs):  # a candidate's measurements together
                if not math.isfinite(self.default[i]):
                    self.default[i] = r.mean_cost  # the first: its default schedule
                self.best[i] = min(self.best[i], r.mean_cost)
        self.done_trials = 0
        self.failed = 0
        self.start = time.monotonic()
        self._last_line = 0.0
        self._live: Any = None
        self._progress: Any = None
        self._bars: list[Any] = []
        self._console: Any = None
        self._line_every = max(1, trials // 20)

    # -- estimates ------------------------------------------------------------------------
    def estimate(self, costs: Sequence[float]) -> tuple[float, int]:
        """``(sum of weight x cost over the tasks with a cost, tasks without one)``."""
        total, unknown = 0.0, 0
        for t, c in zip(self.tasks, costs):
            if math.isfinite(c):
                total += t.weight * c
            else:
                unknown += 1
        return total, unknown

    def _estimate_text(self) -> str:
        total, unknown = self.estimate(self.best)
        if unknown == len(self.tasks):
            return "estimated total latency: - (no task measured yet)"
        text = f"estimated total latency: {total * 1e3:.3f} ms"
        if unknown:
            return text + f" + {unknown} task{'s' if unknown > 1 else ''} not measured yet"
        default, missing = self.estimate(self.default)
        if not missing and default > 0:
            text += f" (default schedules {default * 1e3:.3f} ms, {default / total:.2f}x)"
        return text

    def _eta(self) -> str:
        elapsed = time.monotonic() - self.start
        left = []
        if self.done_trials:
            left.append(elapsed / self.done_trials * (self.trials - self.done_trials))
        if self.budget is not None:
            left.append(max(0.0, self.budget - elapsed))
        return _clock(min(left)) if left else "-"

    # -- the tuner's callback -------------------------------------------------------------
    def on_measured(self, inputs: Sequence[Any], results: Sequence[Any]) -> None:
        """Count a measured candidate (a MeasureCallback)."""
        for inp, res in zip(inputs, results):
            i = self.index.get(inp.workload.key)
            self.done_trials += 1
            if i is None:
                continue
            self.counts[i] += 1
            if res.is_valid:
                cost = res.mean_cost
                if not math.isfinite(self.default[i]):
                    self.default[i] = cost
                self.best[i] = min(self.best[i], cost)
            else:
                self.failed += 1
        self._refresh()

    # -- output ---------------------------------------------------------------------------
    def header(self, model: str, target: Any, cost_line: str, records: str) -> None:
        resumed = (f"; resuming from {self.before} records" if self.before else "")
        print(f"irc tune {model}: {len(self.tasks)} tasks, target {target}, {self.trials} "
              f"trials" + (f" or {_clock(self.budget)}" if self.budget else "")
              + f"; records in {records}{resumed}", flush=True)
        if cost_line and not self.quiet:
            print(cost_line, flush=True)

    def __enter__(self) -> TuneDisplay:
        self.start = time.monotonic()
        if self.live_mode:
            from rich.console import Console
            from rich.live import Live
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._console = Console()
            self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                      MofNCompleteColumn(), TimeElapsedColumn(),
                                      TextColumn("ETA {task.fields[eta]}"),
                                      console=self._console)
            self._bars = [self._progress.add_task("trials", total=self.trials, eta="-")]
            if self.budget is not None:
                self._bars.append(self._progress.add_task("time  ", total=int(self.budget),
                                                          eta="-"))
            self._live = Live(self._renderable(), console=self._console,
                              refresh_per_second=4, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def _stop(self) -> None:
        if self._live is not None:
            self._live.update(self._renderable())
            self._live.__exit__(None, None, None)
            self._live = None

    def _renderable(self) -> Any:
        from rich.console import Group
        from rich.text import Text

        return Group(self._progress, self.table(), Text(self._estimate_text()))

    def table(self) -> Any:
        """The task table (a rich Table)."""
        from rich.table import Table

        table = Table(box=None, pad_edge=False, header_style="bold")
        for col, just in (("ID", "right"), ("task", "left"), ("weight", "right"),
                          ("trials", "right"), ("best ms", "right"), ("GFLOPS", "right"),
                          ("share", "right")):
            table.add_column(col, justify=just)
        for i, row in enumerate(self.rows()):
            table.add_row(str(i), *row)
        return table

    def rows(self) -> list[tuple[str, ...]]:
        """Per task: name, weight, trials, best latency, GFLOPS, share of the estimate."""
        total, _ = self.estimate(self.best)
        out = []
        for i, t in enumerate(self.tasks):
            c = self.best[i]
            known = math.isfinite(c)
            flops = t.flop_count
            out.append((t.name, f"{t.weight:g}", str(self.counts[i]),
                        f"{c * 1e3:.4f}" if known else "-",
                        f"{flops / c / 1e9:.1f}" if known and flops > 0 else "-",
                        f"{t.weight * c / total:.0%}" if known and total > 0 else "-"))
        return out

    def _refresh(self) -> None:
        elapsed = time.monotonic() - self.start
        if self._live is not None:
            eta = self._eta()
            self._progress.update(self._bars[0], completed=min(self.done_trials, self.trials),
                                  eta=eta)
            if len(self._bars) > 1:
                self._progress.update(self._bars[1], completed=min(elapsed, self.budget or 0),
                                      eta=eta)
            self._live.update(self._renderable())
            return
        if self.quiet:
            return
        if self.done_trials % self._line_every == 0 or self.done_trials == self.trials \
                or elapsed - self._last_line >= 30:
            self._last_line = elapsed
            print(f"trial {self.before + self.done_trials} ({self.done_trials}/{self.trials} "
                  f"this run)  elapsed {_clock(elapsed)}  ETA {self._eta()}  "
                  f"{self._estimate_text()}", flush=True)

    def _plain_table(self) -> str:
        rows = [("ID", "task", "weight", "trials", "best ms", "GFLOPS", "share")]
        rows += [(str(i), *r) for i, r in enumerate(self.rows())]
        widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
        return "\n".join("  ".join(c.ljust(w) if k == 1 else c.rjust(w)
                                   for k, (c, w) in enumerate(zip(r, widths)))
                         for r in rows)

    def _records_kept(self) -> int:
        return sum(len(self.db.records_of(t.workload)) for t in self.tasks)

    def interrupted(self) -> None:
        """Ctrl-C: close the display and say what is kept."""
        self._stop()
        print(f"\ninterrupted after {self.done_trials} trials: records kept: "
              f"{self._records_kept()} in {self.location}; run the same command to resume",
              flush=True)

    def done(self, stopped_by: str) -> None:
        """The summary at the end."""
        self._stop()
        why = {"trials": "trial budget spent", "time": "time budget spent",
               "done": "every task's search space exhausted"}.get(stopped_by, stopped_by)
        elapsed = time.monotonic() - self.start
        if self._console is None:
            print(self._plain_table())
        print(f"tuning done ({why}): {self.done_trials} trials in {_clock(elapsed)}"
              + (f", {self.failed} failed" if self.failed else "")
              + f"; {self._estimate_text()}")
        print(f"records: {self._records_kept()} in {self.location}")


def _clock(secs: float) -> str:
    secs = int(round(secs))
    if secs >= 3600:
        return f"{secs // 3600}h{secs % 3600 // 60:02d}m{secs % 60:02d}s"
    if secs >= 60:
        return f"{secs // 60}m{secs % 60:02d}s"
    return f"{secs}s"

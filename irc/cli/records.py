"""``irc records``: list, filter, distill, merge and plot tuning records.

    irc records show run/ --top 3 --errors      # workloads, fastest records, failures
    irc records best log.json                   # best record per workload -> log.best.json
    irc records merge a.json b.db -o all.json   # one machine's records into one file
    irc records plot run/ -o run.svg            # GFLOPS per task, estimated latency

A database is a record file (``.json`` lines, or SQLite ``.db``) or a work directory of
``irc tune``; reading one never creates a file, and a missing or damaged one is an error
(see :mod:`irc.tune.database.reader`).
"""

from __future__ import annotations

import argparse
import os
import sys

from ..core.diagnostics import IRCError, TuningError
from ..tune.database.merge import merge
from ..tune.database.reader import default_output_path, load_warning, open_for_reading
from ..tune.database.report import distill_records, select_records, show_records, task_names
from ..tune.plot import FIGURE_FORMATS, PLOT_KINDS, plot_tuning, save_figure, tuning_curves
from ..tune.task_table import load_task_table, task_table_path
from . import options

_DB_HELP = "tuning records: a record file (.json, .db) or a work directory of irc tune"


def cmd_show(args: argparse.Namespace) -> int:
    """``irc records show``: the workloads of a database, their best records and
    failures."""
    show_records(args.database, sys.stdout, sys.stderr, workload=args.workload,
                 target=args.target, top=args.top, errors=args.errors)
    return 0


def cmd_best(args: argparse.Namespace) -> int:
    """``irc records best`` (or ``distill``): the best valid record per workload and
    target, written to another database."""
    if args.output is not None:
        options.check_output(args.output, "-o", options.RECORD_FILE_SUFFIXES)
    distill_records(args.database, args.output, sys.stdout, sys.stderr)
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    """``irc records merge``: the records of several databases of one machine in one."""
    if args.output is None:
        raise IRCError("irc records merge needs the database to write: -o OUT",
                       hint=f"irc records merge {' '.join(args.inputs)} -o merged.json "
                            "(a new file, or an existing database to add to)")
    if not os.path.isdir(args.output):
        options.check_output(args.output, "-o", options.RECORD_FILE_SUFFIXES)
    sources = []
    try:
        for path in args.inputs:
            sources.append(open_for_reading(path))
        report = merge(args.output, sources, allow_mixed=args.allow_mixed)
        for db in sources:
            warning = load_warning(db)
            if warning:
                print(f"warning: {warning}", file=sys.stderr)
    finally:
        for db in sources:
            db.close()
    print(report)
    if len(report.fingerprints) > 1:
        print(f"note: {report.output} holds records of {len(report.fingerprints)} machines")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    """``irc records plot``: best GFLOPS per task against trials and the estimated
    end-to-end latency against tuning time, as PNG, SVG or PDF."""
    output = args.output or default_output_path(args.database, "", ".png")
    options.check_output(output, "-o", FIGURE_FORMATS)
    with open_for_reading(args.database) as db:
        table = load_task_table(args.database)
        if table is None and args.kind == "total":
            raise TuningError(f"no task table at {task_table_path(args.database)}: the "
                              "estimated latency needs the task weights, which irc tune "
                              "writes there", hint="plot the tasks alone with --kind tasks")
        records = db.get_all_records()
        warning = load_warning(db)
        if warning:
            print(f"warning: {warning}", file=sys.stderr)
        if args.target:
            records = select_records(records, task_names(db, records), target=args.target)
        if not records:
            raise TuningError(f"{args.database} has no records"
                              + (f" of target {args.target!r}" if args.target else "")
                              + " to plot")
        curves = tuning_curves(db, records, table)
    if table is None:
        curves.notes.insert(0, f"no task table at {task_table_path(args.database)} (irc "
                               "tune writes it): plotting the tasks only")
    for note in curves.notes:
        print(f"note: {note}")
    name = os.path.basename(os.fspath(args.database).rstrip("/" + os.sep))
    save_figure(plot_tuning(curves, args.kind, title=name), output)
    print(f"wrote {output}: {len(curves.tasks)} tasks, {len(records)} records")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``records`` sub-command to the ``irc`` command's sub-parsers."""
    p = sub.add_parser("records", help="list, distill, merge and plot tuning records",
                       description="List, distill, merge and plot tuning records. "
                                   + _DB_HELP[0].upper() + _DB_HELP[1:] + ".")
    cmds = p.add_subparsers(dest="records_command", required=True, metavar="COMMAND",
                            help="what to do with the records")

    show = cmds.add_parser("show", help="a table of workloads: records, failures, best "
                                        "latency and GFLOPS")
    show.add_argument("database", help=_DB_HELP)
    show.add_argument("--workload", metavar="SUBSTR",
                      help="only workloads whose key or task name contains SUBSTR")
    show.add_argument("--target", metavar="TARGET",
                      help="only records whose target or hardware fingerprint contains "
                           "TARGET")
    show.add_argument("--top", type=options.non_negative, default=0, metavar="K",
                      help="also list the K fastest records of each workload")
    show.add_argument("--errors", action="store_true",
                      help="also list failed records counted by error kind, with a sample "
                           "message each")
    show.set_defaults(func=cmd_show)

    best = cmds.add_parser("best", aliases=["distill"],
                           help="keep the best valid record per workload and target")
    best.add_argument("database", help=_DB_HELP)
    best.add_argument("-o", "--output", metavar="OUT",
                      help="database to write (.json or .db; default: <database "
                           "stem>.best<ext> beside it, e.g. log.best.json)")
    best.set_defaults(func=cmd_best)

    mer = cmds.add_parser("merge", help="merge databases of one machine into one (-o OUT)")
    mer.add_argument("inputs", nargs="+", metavar="DB", help="databases to merge: " + _DB_HELP)
    mer.add_argument("-o", "--output", metavar="OUT",
                     help="database to write, required: a record file (.json, .db) or a "
                          "work directory; created when missing, added to otherwise")
    mer.add_argument("--allow-mixed", action="store_true",
                     help="merge records of different hardware fingerprints too")
    mer.set_defaults(func=cmd_merge)

    plot = cmds.add_parser("plot", help="plot best GFLOPS per task against trials and the "
                                        "estimated latency against tuning time "
                                        "(needs matplotlib)")
    plot.add_argument("database", help=_DB_HELP)
    plot.add_argument("-o", "--output", metavar="FILE",
                      help="image to write: .png, .svg or .pdf (default: <database "
                           "stem>.png beside it)")
    plot.add_argument("--kind", choices=PLOT_KINDS, default="both",
                      help="tasks: best GFLOPS per task; total: estimated end-to-end "
                           "latency (needs the task table irc tune saves); both (default)")
    plot.add_argument("--target", metavar="TARGET",
                      help="only records whose target or hardware fingerprint contains "
                           "TARGET (needed when the records come from several machines)")
    plot.set_defaults(func=cmd_plot)

"""``python -m irc.tune.database {show,distill} -i DB [-o OUT]``: the older spelling of
``irc records show DB`` and ``irc records distill DB [-o OUT]`` (the same code)."""

from __future__ import annotations

import argparse
import sys

from ...core.diagnostics import IRCError
from .report import distill_records, show_records

PROG = "python -m irc.tune.database"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: ``distill`` (best record per workload and target) or ``show``
    (a summary of a database); returns the exit status."""
    parser = argparse.ArgumentParser(prog=PROG, description="Show or distill tuning "
                                     "records (also: irc records show / irc records distill).")
    parser.add_argument("mode", choices=["distill", "show"],
                        help="show: a table of workloads; distill: keep the best valid "
                             "record per workload and target")
    parser.add_argument("-i", "--input", required=True,
                        help="tuning records: a record file (.json, .db) or a work "
                             "directory of irc tune")
    parser.add_argument("-o", "--output",
                        help="distilled database (default: <input stem>.best<ext> beside "
                             "the input, e.g. log.json -> log.best.json)")
    args = parser.parse_args(argv)
    try:
        if args.mode == "distill":
            distill_records(args.input, args.output, sys.stdout, sys.stderr)
        else:
            show_records(args.input, sys.stdout, sys.stderr)
    except IRCError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``python -m irc.tune.database distill -i log.json [-o best.json]``: distill a log."""

from __future__ import annotations

import argparse
import os
import sys

from ...core.diagnostics import IRCError
from . import open_database
from .distill import distill


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: ``distill`` (best record per workload and target) or ``show``
    (a summary of a database)."""
    parser = argparse.ArgumentParser(prog="python -m irc.tune.database")
    parser.add_argument("mode", choices=["distill", "show"])
    parser.add_argument("-i", "--input", required=True, help="record file (.json or .db)")
    parser.add_argument("-o", "--output", help="distilled file (default: <input>.best.json)")
    args = parser.parse_args(argv)
    try:
        if args.mode == "distill":
            out = args.output
            if out is None:
                root, ext = os.path.splitext(args.input)
                out = f"{root}.best{ext or '.json'}"
            print(f"{distill(args.input, out)} -> {out}")
        else:
            with open_database(args.input) as db:
                print(db.load_report)
                for key in db.workload_keys():
                    best = db.best_record(key)
                    n = len(db.records_of(key))
                    cost = f"{best.mean_cost * 1e3:.4f} ms" if best else "no valid record"
                    wl = db.get_workload(key)
                    name = f" ({wl.name})" if wl is not None and wl.name else ""
                    print(f"  {key}{name}: {n} records, best {cost}")
    except IRCError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

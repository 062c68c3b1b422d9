"""``irc fuzz``: irc's differential fuzzer (:mod:`irc.testing.fuzz`) as a command.

    irc fuzz --models 2000 --jobs 2 --out fuzz-out/        # the long run
    irc fuzz --time-limit 10m --ops conv,Resize --dtypes float16
    irc fuzz --seed 1234 --models 1 --out case/             # one model again, by its seed

Random valid ONNX models are built through irc (and, with ``--dispatch auto`` and
``--tuned``, along those paths too) and their outputs compared with ONNX Runtime's, ONNX's
reference evaluator settling disagreements; wrong results and crashes are minimised and
saved. The summary counts ok / wrong / crash / refused / invalid models and prints the
operator and dtype coverage. The exit status is 1 when a model was wrong or crashed.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys

from ..core.diagnostics import IRCError, MissingDependencyError
from . import options
from .tune import parse_duration

# What the fuzzer needs beyond irc's own dependencies (the 'onnx' extra).
NEEDS = ("onnx", "onnxruntime", "ml_dtypes")


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``fuzz`` to the ``irc`` command."""
    p = sub.add_parser(
        "fuzz", help="check irc against ONNX Runtime on random models (differential "
                     "fuzzing)",
        description="Generate random valid ONNX models over irc's operators, dtypes and "
                    "shapes, build and run each with irc in a worker process, and compare "
                    "the outputs with ONNX Runtime's (ONNX's reference evaluator settles "
                    "disagreements). Wrong results and crashes are minimised and, with "
                    "--out, saved as model.onnx + inputs.npz. Needs the 'onnx' extra.")
    p.add_argument("--models", type=options.positive, metavar="N",
                   help="how many models to check (default: as many as --time-limit "
                        "allows)")
    p.add_argument("--seed", type=options.seed, default=0,
                   help="seed of the first model; model i is that of seed S+i, so "
                        "'--seed S --models 1' makes the model of seed S again (default: 0)")
    p.add_argument("--time-limit", type=parse_duration, metavar="DURATION",
                   help="start no model after this long, e.g. 90s, 10m, 1h30m (failures "
                        "are minimised after it; default: no limit)")
    p.add_argument("--max-nodes", type=options.positive, default=12, metavar="N",
                   help="the most operators a model has (default: 12)")
    p.add_argument("--ops", metavar="LIST",
                   help="draw only these operators: comma-separated ONNX operator types or "
                        "families (unary, binary, bitwise, logic, compare, reduce, softmax, "
                        "norm, cast, quant, shape, index, matmul, conv, pool, resize, rnn, "
                        "signal, control); default: all")
    p.add_argument("--dtypes", metavar="LIST",
                   help="data of these dtypes only: comma-separated, of float32, float16, "
                        "bfloat16, int8, uint8, int32, int64, bool (default: all)")
    p.add_argument("--out", metavar="DIR",
                   help="save each failure (minimised model.onnx, inputs.npz, the model "
                        "as generated, a summary line) in a directory under DIR, listed in "
                        "DIR/failures.txt")
    p.add_argument("--jobs", type=options.jobs, default=1, metavar="N",
                   help="worker processes checking models at once, at most the machine's "
                        "cores (default: 1)")
    p.add_argument("--dispatch", choices=["none", "auto"], default="none",
                   help="with 'auto', also build each model with irc.compile(..., "
                        "dispatch='auto') (library dispatch where measured faster)")
    p.add_argument("--tuned", action="store_true",
                   help="also build each model with tuning records: a schedule sampled "
                        "from each kernel's search space, as 'irc compile --records' builds")
    p.add_argument("--minimize", action=argparse.BooleanOptionalAction, default=True,
                   help="shrink each failing model to the few nodes that keep its failure "
                        "(default: --minimize)")
    p.set_defaults(func=cmd_fuzz)


def _names(text: str | None, what: str) -> tuple[str, ...]:
    if text is None:
        return ()
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise IRCError(f"{what} {text!r}: give one or more names, separated by commas")
    return names


def cmd_fuzz(args: argparse.Namespace) -> int:
    """``irc fuzz``: a fuzzing campaign; see the module docstring."""
    if args.models is None and args.time_limit is None:
        raise IRCError("irc fuzz needs to know when to stop: give --models N, "
                       "--time-limit DURATION, or both",
                       hint="irc fuzz --models 200, or irc fuzz --time-limit 10m")
    missing = [m for m in NEEDS if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingDependencyError(f"irc fuzz needs {', '.join(missing)}: pip install "
                                     "'irc[onnx]'")
    ops = _names(args.ops, "--ops")
    dtypes = _names(args.dtypes, "--dtypes")
    if args.out is not None:
        options.check_output_dir(args.out, "--out")
    # The fuzzer's modules (and ONNX with them) load only when 'irc fuzz' runs.
    from ..testing.fuzz import FuzzConfig, select_ops
    from ..testing.fuzz.campaign import CampaignConfig, run_campaign
    from ..testing.fuzz.evaluate import CRASH, WRONG, EvalOptions
    from ..testing.fuzz.values import ALL_DTYPES

    unknown = [d for d in dtypes if d not in ALL_DTYPES]
    if unknown:
        raise IRCError(f"--dtypes: irc fuzz does not generate {', '.join(unknown)}; the "
                       f"dtypes are {', '.join(ALL_DTYPES)}")
    try:
        specs = select_ops(ops)
    except ValueError as err:
        raise IRCError(f"--ops: {err}") from None
    chosen = dtypes or ALL_DTYPES
    if not any(d in chosen for s in specs for d in s.dtypes):
        raise IRCError(f"--ops {args.ops} and --dtypes {args.dtypes}: none of these operators "
                       "takes data of these dtypes",
                       hint="the operators take: " + ", ".join(sorted(
                           {d for s in specs for d in s.dtypes})))
    builds = ("default",) + (("auto",) if args.dispatch == "auto" else ()) + \
        (("tuned",) if args.tuned else ())
    config = CampaignConfig(
        models=args.models, seed=args.seed, time_limit=args.time_limit,
        fuzz=FuzzConfig(min_nodes=min(3, args.max_nodes), max_nodes=args.max_nodes,
                        ops=ops, dtypes=dtypes),
        options=EvalOptions(builds=builds), jobs=args.jobs, minimise=args.minimize,
        out=args.out)
    summary = run_campaign(config, sys.stdout)
    print(summary.format())
    counts = summary.counts()
    if counts[WRONG] or counts[CRASH]:
        raise IRCError(f"{counts[WRONG]} wrong and {counts[CRASH]} crashed of "
                       f"{len(summary.outcomes)} models"
                       + (f"; the failures are in {args.out}" if args.out else ""),
                       hint="the failures above name their seeds; 'irc fuzz --seed S "
                            "--models 1 --out DIR' saves one")
    return 0

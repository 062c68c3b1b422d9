"""The ``irc`` command (also ``python -m irc``): compile, run, time and tune models, work
with tuning records, and check irc against ONNX Runtime on random models.

    irc compile examples/convnet.ir -o convnet.ircx
    irc run convnet.ircx --input x=image.npy --output out.npz
    irc bench model.onnx --compare onnxruntime
    irc tune examples/convnet.ir --trials 200 --time-budget 10m --records tuning/
    irc records plot tuning/ -o curve.png
    irc show examples/convnet.ir --pipeline default --print-after-all
    irc fuzz --models 2000 --jobs 2 --out fuzz-out/

Errors a user can cause end with ``irc: error: ...`` on standard error and exit status 1;
Ctrl-C ends with status 130 and output into a closed pipe (``irc show x.ir | head``)
ends quietly — never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from ..core.diagnostics import IRCError
from ..core.version import __version__
from . import fuzz, records, run, tune

EXIT_ERROR = 1
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``irc`` command."""
    p = argparse.ArgumentParser(
        prog="irc", description="irc, a deep-learning compiler: compile, run, time and "
                                "tune models; read and plot tuning records.",
        epilog="'irc COMMAND --help' describes a command's options.")
    p.add_argument("--version", action="version", version=f"irc {__version__}",
                   help="print irc's version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND",
                           help="what to do (each has its own --help)")
    run.register(sub)
    tune.register(sub)
    records.register(sub)
    fuzz.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``irc`` command: the exit status."""
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except IRCError as err:
        _flush_quietly()
        print(f"irc: error: {err}", file=sys.stderr)
        return EXIT_ERROR
    except MemoryError as err:
        # A model's own tensors (not its inputs, which are checked before they are made)
        # can outgrow the machine: say so, as for any other error a user can cause.
        _flush_quietly()
        detail = str(err) or "an allocation failed"
        print(f"irc: error: out of memory: {detail}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        _flush_quietly()
        print("irc: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``| head``): stop writing, and keep Python from
        # complaining about the unflushable stdout at exit.
        _silence_stdout()
        return EXIT_BROKEN_PIPE


def _flush_quietly() -> None:
    try:
        sys.stdout.flush()
    except (BrokenPipeError, OSError, ValueError):
        _silence_stdout()


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())

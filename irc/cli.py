"""The ``irc`` command: show, compile and run models written in irc's text format.

    irc run examples/convnet.ir            # compile, run on random inputs, print output+latency
    irc show examples/convnet.ir --pipeline zero
    irc compile examples/convnet.ir -o convnet.ircx
    irc run convnet.ircx
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Sequence

import numpy as np

import irc


def _load_module(path: str):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as err:
        raise irc.IRCError(f"cannot read {path}: {err.strerror}") from None
    mod = irc.parse(text, source_name=path)
    if not isinstance(mod, irc.IRModule):
        mod = irc.IRModule(functions={"main": mod})
    return mod


def _parse_shape_bindings(items: Sequence[str]) -> dict[str, int]:
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        if not name or not value.isdigit():
            raise irc.IRCError(f"--shape expects NAME=INT, got {item!r}")
        out[name] = int(value)
    return out


def _executable(path: str, target: str, pipeline: str):
    if path.endswith(".ircx"):
        return irc.vm.Executable.load(path), 0.0
    mod = _load_module(path)
    start = time.perf_counter()
    ex = irc.compile(mod, target, pipeline=pipeline)
    return ex, time.perf_counter() - start


def _summarize(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_summarize(v) for v in value) + ")"
    if hasattr(value, "numpy"):
        arr = value.numpy()
        with np.printoptions(precision=5, suppress=True, threshold=20, edgeitems=4):
            return f"tensor {arr.shape} {arr.dtype}\n{arr}"
    return repr(value)


def cmd_run(args: argparse.Namespace) -> int:
    """``irc run``: compile (or load) and run on random inputs, with timing."""
    ex, compile_s = _executable(args.file, args.target, args.pipeline)
    vm = irc.vm.VirtualMachine(ex)
    fn = ex.functions.get(args.function)
    if fn is None:
        raise irc.IRCError(f"{args.file} has no function {args.function!r}; it has "
                           f"{', '.join(ex.functions)}")
    inputs = ex.random_inputs(args.function, args.seed, _parse_shape_bindings(args.shape))
    f = vm[args.function]
    out = f(*inputs)
    timer = irc.runtime.time_evaluator(f, irc.cpu(), number=1, repeat=args.repeat)
    result = timer(*inputs)
    stats = ex.stats()
    print(f"irc run {args.file} (target {ex.target})")
    if compile_s:
        print(f"compiled in {compile_s:.2f} s: {stats['kernels']} kernels, "
              f"{stats['instructions']} VM instructions")
    print(f"{args.function}({', '.join(fn.params)}) with random inputs (seed {args.seed}):")
    print(_summarize(out))
    print(f"latency: median {result.median * 1e3:.3f} ms, min {min(result.results) * 1e3:.3f} "
          f"ms over {args.repeat} runs")
    if args.save_output:
        arr = out.numpy() if hasattr(out, "numpy") else np.asarray(out)
        np.save(args.save_output, arr)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """``irc show``: print a model, optionally after a pipeline."""
    mod = _load_module(args.file)
    if args.pipeline:
        with irc.target.Target(args.target):
            mod = irc.passes.get_pipeline(args.pipeline)(mod)
    print(mod.script())
    return 0


def cmd_compile(args: argparse.Namespace) -> int:
    """``irc compile``: write a compiled executable (.ircx)."""
    ex, secs = _executable(args.file, args.target, args.pipeline)
    out = args.output or args.file.rsplit(".", 1)[0] + ".ircx"
    ex.save(out)
    print(f"wrote {out} ({secs:.2f} s): {ex.stats()}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``irc`` command."""
    p = argparse.ArgumentParser(prog="irc", description="irc: a deep-learning compiler")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="compile a model (.ir) or load an executable (.ircx) and "
                                     "run it on random inputs")
    run.add_argument("file")
    run.add_argument("--target", default="llvm")
    run.add_argument("--pipeline", default="default")
    run.add_argument("--function", default="main")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--repeat", type=int, default=20)
    run.add_argument("--shape", action="append", default=[], metavar="NAME=INT",
                     help="value of a symbolic dimension")
    run.add_argument("--save-output", metavar="FILE.npy")
    run.set_defaults(func=cmd_run)

    show = sub.add_parser("show", help="parse a model and print it (optionally after a "
                                       "pipeline)")
    show.add_argument("file")
    show.add_argument("--pipeline", choices=["zero", "default"])
    show.add_argument("--target", default="llvm")
    show.set_defaults(func=cmd_show)

    comp = sub.add_parser("compile", help="compile a model to an executable file (.ircx)")
    comp.add_argument("file")
    comp.add_argument("-o", "--output")
    comp.add_argument("--target", default="llvm")
    comp.add_argument("--pipeline", default="default")
    comp.set_defaults(func=cmd_compile)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``irc`` command."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except irc.IRCError as err:
        print(f"irc: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

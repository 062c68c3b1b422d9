"""Property: any argument list given to the ``irc`` command — every subcommand, every
option, with valid values, invalid ones and random text — either works or ends with
status 1 and ``irc: error: ...`` or with argparse's usage error (status 2); never a
Python traceback or an exception escaping ``irc.cli.main``.

The command runs in this process. To stay fast it compiles each distinct (model, target,
pipeline, ...) once (``compile_model`` is wrapped by a cache), extracts tuning tasks once
per model and size, and stands in for the tuner's search with an immediate return (the
search itself is tested in ``test_tune.py``): what is fuzzed is the command line, its
checks and its error paths. The longer variant is ``-m slow``.
"""

from __future__ import annotations

import contextlib
import io
import os
import types

import numpy as np
import pytest
from conftest import EXAMPLE, save_onnx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli_errors import FORWARD_ONLY

from irc.cli import main
from irc.cli import run as cli_run
from irc.cli import tune as cli_tune

onnx = pytest.importorskip("onnx")

TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
               max_size=12)
# (values that may work, values that cannot)
INTS = (["1", "2", " 2 "], ["0", "-1", "1.5", "abc", "", "0x10"])
# --repeat, --warmup: never a long run
REPEATS = (["1", "2"], ["0", "-3", "x", ""])
WARMUPS = (["0", "1"], ["-3", "x", ""])


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict:
    """Files the argument lists refer to: models, inputs, record databases, outputs."""
    from test_records import MM, fill, rec

    from irc.tune import JSONDatabase

    d = tmp_path_factory.mktemp("fuzz")
    f = onnx.TensorProto.FLOAT
    tiny = save_onnx(d / "tiny.onnx", [onnx.helper.make_node("Relu", ["x"], ["y"])],
                     [("x", f, [2, 3])], [("y", f, [2, 3])])
    add = save_onnx(d / "add.onnx", [onnx.helper.make_node("Add", ["a", "b"], ["y"])],
                    [("a", f, ["n", "m"]), ("b", f, ["n", "m"])], [("y", f, ["n", "m"])])
    (d / "lone.ir").write_text(LONE)
    (d / "forward.ir").write_text(FORWARD_ONLY)
    assert main(["compile", str(add), "-o", str(d / "add.ircx")]) == 0
    (d / "broken.ir").write_text("@I.ir_module\nclass Module:\n    def main(:\n")
    (d / "junk.onnx").write_bytes(b"\x08\x07junk")
    assert main(["compile", str(tiny), "-o", str(d / "tiny.ircx")]) == 0
    (d / "junk.ircx").write_bytes(b"PK\x03\x04junk")
    np.save(d / "x.npy", np.ones((2, 3), "float32"))
    np.save(d / "data.npy", np.zeros((1, 3, 32, 32), "float32"))
    np.savez(d / "xs.npz", x=np.ones((2, 3), "float32"))
    (d / "bad.npy").write_bytes(b"not numpy")
    with JSONDatabase(str(d / "log.json")) as db:
        fill(db)
    with JSONDatabase(str(d / "ok.json")) as db:
        db.commit_workload(MM)
        db.commit_records([rec(MM, None, 1.0)])
    (d / "empty").mkdir()
    (d / "notes.txt").write_text("not records\n")
    return {
        # Each pool: (values that may work, values that cannot).
        "model": ([str(EXAMPLE), str(tiny), str(add), str(d / "lone.ir"), str(d / "tiny.ircx"),
                   str(d / "forward.ir"), str(d / "add.ircx")],
                  [str(d / "broken.ir"), str(d / "junk.onnx"), str(d / "junk.ircx"),
                   str(d / "missing.ir"), str(d / "empty"), str(d / "x.weird"),
                   "no_such_module_zz:model", "irc:nothing", "irc:__version__", ""]),
        "input": ([f"x={d / 'x.npy'}", str(d / "xs.npz"), f"data={d / 'data.npy'}",
                   f"x={d / 'xs.npz'}"],
                  [f"x={d / 'bad.npy'}", f"x={d / 'missing.npy'}", f"={d / 'x.npy'}",
                   str(d / "x.npy"), f"y={d / 'xs.npz'}"]),
        "npz": ([str(d / "out.npz")], [str(d / "out.txt"), str(d / "nodir" / "out.npz"),
                                       str(d / "empty"), ""]),
        "ircx": ([str(d / "out.ircx")], [str(d / "out.bin"), str(d / "nodir" / "x.ircx"),
                                         str(d / "empty"), ""]),
        "plot": ([str(d / "plot.png"), str(d / "plot.svg")],
                 [str(d / "plot.jpeg"), str(d / "empty"), str(d / "nodir" / "p.png")]),
        "db_out": ([str(d / "best.json"), str(d / "best.db")],
                   [str(d / "best.txt"), str(d / "empty"), str(d / "nodir" / "b.json"),
                    str(d / "log.json"), ""]),
        "records": ([str(d / "log.json"), str(d / "ok.json")],
                    [str(d / "missing.json"), str(d / "notes.txt"), str(d / "empty"),
                     str(d / "x.npy")]),
        "write_records": ([str(d / "work"), str(d / "tuned.json"), str(d / "tuned.db"),
                           str(d / "log.json")],
                          [str(d / "r.txt"), str(d / "notes.txt"),
                           str(d / "nodir" / "t.json"), ""]),
        "cwd": str(d),
    }


LONE = '''
@T.prim_func
def main(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32")):
    for i, j in T.grid(8, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
'''

BUILD = {
    "--target": (["llvm", "llvm -num-cores 1"],
                 ["cuda", "garbage", "llvm -foo", "", "llvm -num-cores 1000", "llvm -mcpu=nope"]),
    "--pipeline": (["default", "zero"], ["fast"]),
    "--records": "records",
    "--check-bounds": None,
}
SHAPES = (["n=2", "m=3"], ["n=-1", "n=0", "n=x", "=3", "n", "q=2", f"n={2 ** 40}", "n=1=2",
                           "M=3"])
IO = {
    "--function": (["main", "forward"], ["nope", ""]),
    "--input": "input",
    "--seed": (["0", "7", "99999"], ["-1", "99999999999999999999999", "x"]),
    "--shape": SHAPES,
}
# Options whose value may be any whole number (not the run counts of bench: a long run).
ANY_INTEGER = {"--seed", "--trials", "--trials-per-round", "--top", "--threads", "--shape"}
# subcommand -> (positionals, options, options usually given)
COMMANDS: dict[tuple[str, ...], tuple[list[str], dict, tuple[str, ...]]] = {
    ("compile",): (["model"], {"-o": "ircx", "--function": IO["--function"],
                               "--shape": SHAPES, **BUILD}, ("-o",)),
    ("run",): (["model"], {**IO, "--random": None, "--output": "npz",
                           "--device": (["cpu"], ["cuda", "tpu"]), **BUILD}, ("--random",)),
    ("bench",): (["model"], {**IO, "--repeat": REPEATS, "--warmup": WARMUPS,
                             "--threads": (["1", "2"], ["0", "1000", "-1", "x"]),
                             "--compare": (["onnxruntime"], ["tvm"]), **BUILD},
                 ("--repeat", "--warmup")),
    ("show",): (["model"], {"--pipeline": (["zero", "default"], ["x"]),
                            "--print-after-all": None, "--show-meta": None,
                            "--target": BUILD["--target"]}, ()),
    ("tune",): (["model"], {"--records": "write_records", "--trials": INTS,
                            "--time-budget": (["10s", "1m", "1h30m"],
                                              ["0", "soon", "-5s", "99999999h", "1e3", "",
                                               "9" * 400 + "h"]),
                            "--target": BUILD["--target"], "--function": IO["--function"],
                            "--shape": SHAPES,
                            "--cost-model": (["random", "numpy", "auto"], ["bad"]),
                            "--trials-per-round": INTS, "--seed": IO["--seed"], "-q": None,
                            "-v": None, "--plain": None,
                            "--cluster": (["127.0.0.1:1"], ["nohost", "ray://", "::"]),
                            "--runner-resource": (["gpu"], [""])}, ("--records", "--trials")),
    # Tiny campaigns: one or two models of one or two small operators.
    ("fuzz",): ([], {"--models": (["1"], ["0", "-1", "x", ""]), "--seed": IO["--seed"],
                     "--time-limit": (["1s", "2s"], ["0", "soon", "-5s"]),
                     "--max-nodes": (["1", "2"], ["0", "x"]),
                     "--ops": (["Relu", "Relu,Add", "logic"], ["Nope", "", ",", "Relu,Nope"]),
                     "--dtypes": (["float32", "float32,int8"], ["float64", "x", ""]),
                     "--out": (["fuzz-out"], ["x.npy", "nodir/out", ""]),
                     "--jobs": (["1"], ["0", "1000", "x"]),
                     "--dispatch": (["none", "auto"], ["x"]), "--tuned": None,
                     "--minimize": None, "--no-minimize": None},
                ("--models", "--max-nodes", "--ops")),
    ("records", "show"): (["records"], {"--workload": (["matmul"], ["x"]),
                                        "--target": (["llvm"], ["x"]),
                                        "--top": INTS, "--errors": None}, ()),
    ("records", "best"): (["records"], {"-o": "db_out"}, ()),
    ("records", "distill"): (["records"], {"-o": "db_out"}, ()),
    ("records", "merge"): (["records", "records"], {"-o": "db_out", "--allow-mixed": None},
                           ("-o",)),
    ("records", "plot"): (["records"], {"-o": "plot",
                                        "--kind": (["tasks", "total", "both"], ["x"]),
                                        "--target": (["llvm"], ["x"])}, ()),
}


@st.composite
def argument_lists(draw, world: dict) -> list[str]:
    """An ``irc`` argument list: a subcommand, its positionals and some options (the
    usual ones most of the time). Half the lists are values that may work with at most
    one that cannot (each mistake reached past the others); the rest mix values that
    may work, values that cannot, random text and any whole numbers, and now and then
    a random word anywhere."""
    command = draw(st.sampled_from(sorted(COMMANDS)))
    positionals, opts, usual = COMMANDS[command]
    names = [n for n in usual if draw(st.integers(0, 7)) < 7]
    # (a shuffle, so that every option is as likely as the first ones of the list)
    names += draw(st.permutations(sorted(opts)))[:draw(st.integers(0, 4))]
    slots = len(positionals) + len(names)
    chaos = draw(st.booleans())
    # The one wrong value: mostly an option's (past a model that works), now and then a
    # positional's, or none (slots).
    first = len(positionals) if names and draw(st.integers(0, 3)) else 0
    wrong = draw(st.integers(first, slots)) if not chaos else -1

    def value(pool: str | tuple[list[str], list[str]], slot: int, name: str = "") -> str:
        good, bad = world[pool] if isinstance(pool, str) else pool
        if not chaos:
            return draw(st.sampled_from(bad if slot == wrong else good))
        roll = draw(st.integers(0, 9))
        if roll == 9:
            return draw(TEXT.filter(lambda t: ":" not in t))  # (no random module imports)
        if roll == 8 and name in ANY_INTEGER:
            number = str(draw(st.integers(-2 ** 70, 2 ** 70)))
            return f"n={number}" if name == "--shape" else number
        return draw(st.sampled_from(good if roll < 5 else bad))

    args = list(command) + [value(p, k) for k, p in enumerate(positionals)]
    for k, name in enumerate(names, start=len(positionals)):
        args.append(name)
        if opts[name] is not None:
            args.append(value(opts[name], k, name))
    if chaos and draw(st.integers(0, 7)) == 7:
        args.insert(draw(st.integers(0, len(args))), draw(TEXT))
    return args


class _Cache:
    """``compile_model`` and the task extraction of ``irc tune``, each result (or
    error) kept per distinct call."""

    def __init__(self) -> None:
        self.compiled: dict = {}
        self.tasks: dict = {}
        self.compile_model = cli_run.compile_model
        self.extract = cli_tune._tasks

    def compile(self, mod, target, pipeline, records, check_bounds):
        key = (mod.script(), str(target), pipeline, records, check_bounds)
        return self._once(self.compiled, key,
                          lambda: self.compile_model(mod, target, pipeline, records,
                                                     check_bounds))

    def tune_tasks(self, mod, args, target):
        key = (mod.script(), args.model, tuple(args.shape), args.function, str(target))
        return self._once(self.tasks, key, lambda: self.extract(mod, args, target))

    @staticmethod
    def _once(memo: dict, key, make):
        if key not in memo:
            try:
                memo[key] = (make(), None)
            except Exception as err:  # noqa: BLE001 - replayed as the call raised it
                memo[key] = (None, err)
        value, err = memo[key]
        if err is not None:
            raise err
        return value


def _no_search(tasks, db, config, components):
    return types.SimpleNamespace(stopped_by="trials"), None


@pytest.fixture(scope="module")
def cache() -> _Cache:
    return _Cache()


@contextlib.contextmanager
def _fast_command(cache: _Cache, cwd: str):
    import irc.tune.tuner as tuner

    saved = (cli_run.compile_model, cli_tune._tasks, tuner.tune_tasks, os.getcwd())
    cli_run.compile_model = cache.compile
    cli_tune._tasks = cache.tune_tasks
    tuner.tune_tasks = _no_search
    os.chdir(cwd)
    try:
        yield
    finally:
        cli_run.compile_model, cli_tune._tasks, tuner.tune_tasks = saved[:3]
        os.chdir(saved[3])


def check_outcome(args: list[str], cache: _Cache, cwd: str) -> None:
    """Run ``irc ARGS`` in-process; it must succeed or fail as the module docstring
    says."""
    out, err = io.StringIO(), io.StringIO()
    with _fast_command(cache, cwd), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        try:
            status = main(args)
        except SystemExit as exc:  # argparse: usage errors, --help
            status = exc.code if isinstance(exc.code, int) else 2
    text = err.getvalue()
    assert "Traceback" not in text, (args, text)
    if status == 1:
        assert text.startswith("irc: error: ") or "\nirc: error: " in text, (args, text)
    elif status == 2:
        assert "usage: irc" in text and "error: " in text, (args, text)
    else:
        assert status == 0, (args, status, text)


FAST = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=list(HealthCheck))


@FAST
@given(data=st.data())
def test_any_argument_list_works_or_is_an_irc_error(world, cache, data):
    check_outcome(data.draw(argument_lists(world)), cache, world["cwd"])


@pytest.mark.slow
@settings(max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_any_argument_list_works_or_is_an_irc_error_long(world, cache, data):
    check_outcome(data.draw(argument_lists(world)), cache, world["cwd"])


def test_the_generator_reaches_every_option(world):
    """Every option of every subcommand is among the fuzzed ones (a new option must be
    added to COMMANDS)."""
    import argparse

    from irc.cli import build_parser

    def parsers(p, path=()):
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    yield (*path, name), child
                    yield from parsers(child, (*path, name))

    for path, parser in parsers(build_parser()):
        if path not in COMMANDS:
            assert path == ("records",), path
            continue
        fuzzed = set(COMMANDS[path][1])
        for action in parser._actions:
            if action.option_strings and action.dest != "help":
                assert fuzzed & set(action.option_strings), (path, action.option_strings)


"""Records that cannot be replayed (a damaged trace: tile factors that do not multiply to
the loop's extent, an unknown instruction; a line that is not JSON) are skipped with a
warning on the ``irc.tune`` logger naming the file and line (the SQLite row), and the
next-best record, else the default schedule, is used: by ``ms.compile_relax`` (``irc
compile --records``), ``apply_database`` and ``auto_scheduler``'s ``apply_best``."""

from __future__ import annotations

import copy
import logging
import random
import subprocess
import sys

import numpy as np

import irc
from irc import te
from irc.target import Target
from irc.tune import JSONDatabase, SQLiteDatabase, TuningRecord, auto_scheduler, ms
from irc.tune.graph import apply_database, graph_tasks, prepare_graph
from irc.tune.space import SpaceGenerator

MODEL = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((16, 32), "float32"), w: R.Tensor((32, 16), "float32")):
        with R.dataflow():
            y = R.nn.relu(R.matmul(x, w))
            R.output(y)
        return y
'''


def _good_trace(func, target):
    space = SpaceGenerator(target)
    for seed in range(20):
        cand = space.sample(func, space.generate(func)[0], random.Random(seed))
        if cand is not None:
            return cand.trace_json
    raise AssertionError("no candidate sampled")


def _damaged(trace):
    """Traces that no longer replay: a tile decision whose factors do not multiply to
    the loop's extent, an unknown instruction, a split by literal factors that are too
    small."""
    bad_tile = copy.deepcopy(trace)
    for d in bad_tile[1]:
        if isinstance(d[1], list) and len(d[1]) == 4:
            d[1] = [1, 1, 1, 7]
            break
    else:
        raise AssertionError("no tile decision")
    unknown = copy.deepcopy(trace)
    for inst in unknown[0]:
        if inst[0] == "Reorder":
            inst[0] = "Reorderz"
    bad_split = [[["GetBlock", [], ["T_matmul_NN", "main"], ["b0"]],
                  ["GetLoops", ["b0"], [], ["l1", "l2", "l3"]],
                  ["Split", ["l1", 1, 7], [True], ["l4", "l5"]]], []]
    return {"tile": bad_tile, "unknown": unknown, "split": bad_split}


def _records(path, db_class):
    """A database at ``path`` with a good record (1 us) and three damaged ones that
    claim to be faster; returns (module, the task, {kind: its place in the file})."""
    mod = irc.parse(MODEL)
    target = Target.canon("llvm")
    task = graph_tasks(prepare_graph(mod, None, target), target)[0]
    good = _good_trace(task.func, target)

    def record(trace, secs):
        return TuningRecord(workload_key=task.workload.key, trace=trace, run_secs=(secs,),
                            target=str(target), fingerprint=target.fingerprint())
    db = db_class(str(path))
    db.commit_workload(task.func, name=task.name)
    db.commit_record(record(good, 1e-6))
    damaged = _damaged(good)
    for n, kind in enumerate(damaged):
        db.commit_record(record(damaged[kind], 1e-9 * (n + 1)))
    db.close()
    return mod, task, {kind: n + 2 for n, kind in enumerate(damaged)}


def _replay_warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == "irc.tune" and "cannot be replayed" in r.getMessage()]


def _check_messages(messages, where):
    assert len(messages) == 3, messages
    tile, unknown, split = messages
    assert tile.startswith(where("tile")) and "sample_perfect_tile" in tile
    assert "multiplying to its extent 16" in tile
    assert unknown.startswith(where("unknown")) and "unknown kind 'Reorderz'" in unknown
    assert split.startswith(where("split")) and "split" in split
    for m in messages:
        assert "fused_matmul_relu" in m and "next-best record" in m


def _run(ex):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 32)).astype("float32")
    w = rng.standard_normal((32, 16)).astype("float32")
    got = irc.vm.VirtualMachine(ex, irc.cpu())["main"](irc.tensor(x), irc.tensor(w)).numpy()
    np.testing.assert_allclose(got, np.maximum(x @ w, 0), rtol=1e-4, atol=1e-4)


def test_damaged_json_records_are_skipped_with_their_file_and_line(tmp_path, caplog):
    path = tmp_path / "t3.json"
    mod, task, lines = _records(path, JSONDatabase)
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"workload": "abc", broken\n')
    with caplog.at_level(logging.WARNING, logger="irc.tune"):
        ex = ms.compile_relax(str(path), mod, "llvm", check_in_network=False)
    _check_messages(_replay_warnings(caplog), lambda kind: f"{path}:{lines[kind]}: ")
    assert any(f"{path}: " in r.getMessage() and "unreadable entries skipped (line 5)"
               in r.getMessage() for r in caplog.records)
    _run(ex)
    # The good record is the one applied.
    tuned = apply_database(prepare_graph(mod, None, "llvm"), str(path), "llvm")
    assert tuned[task.name].attrs.get("tir.is_scheduled")


def test_damaged_sqlite_records_are_skipped_with_their_row(tmp_path, caplog):
    path = tmp_path / "t3.db"
    mod, _, rows = _records(path, SQLiteDatabase)
    with caplog.at_level(logging.WARNING, logger="irc.tune"):
        ex = ms.compile_relax(str(path), mod, "llvm", check_in_network=False)
    _check_messages(_replay_warnings(caplog), lambda kind: f"{path} row {rows[kind]}: ")
    _run(ex)


def test_with_no_record_that_replays_the_default_schedule_is_used(tmp_path, caplog):
    path = tmp_path / "bad.json"
    mod = irc.parse(MODEL)
    target = Target.canon("llvm")
    task = graph_tasks(prepare_graph(mod, None, target), target)[0]
    db = JSONDatabase(str(path))
    db.commit_workload(task.func, name=task.name)
    for trace in _damaged(_good_trace(task.func, target)).values():
        db.commit_record(TuningRecord(workload_key=task.workload.key, trace=trace,
                                      run_secs=(1e-9,), target=str(target),
                                      fingerprint=target.fingerprint()))
    db.close()
    with caplog.at_level(logging.WARNING, logger="irc.tune"):
        tuned = apply_database(prepare_graph(mod, None, target), str(path), target)
        ex = ms.compile_relax(str(path), mod, "llvm")
    assert not tuned[task.name].attrs.get("tir.is_scheduled")
    assert len(_replay_warnings(caplog)) == 6  # three records, two builds
    _run(ex)


def test_irc_compile_with_damaged_records_names_them_and_builds(tmp_path):
    path = tmp_path / "t3.json"
    mod, _, lines = _records(path, JSONDatabase)
    model = tmp_path / "model.ir"
    model.write_text(MODEL)
    r = subprocess.run([sys.executable, "-m", "irc", "compile", str(model), "--records",
                        str(path), "-o", str(tmp_path / "model.ircx")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    for kind in ("tile", "unknown", "split"):
        assert f"{path}:{lines[kind]}: the tuning record" in r.stderr


@auto_scheduler.register_workload
def record_replay_matmul(n, dtype):
    a = te.placeholder((n, n), name="A", dtype=dtype)
    b = te.placeholder((n, n), name="B", dtype=dtype)
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return [a, b, c]


def test_apply_best_skips_a_best_record_that_cannot_be_replayed(tmp_path, caplog):
    task = auto_scheduler.SearchTask(func=record_replay_matmul, args=(16, "float32"),
                                     target="llvm")
    target = Target.canon("llvm")
    good = _good_trace(task.func, target)
    path = tmp_path / "mm.json"
    db = JSONDatabase(str(path))
    db.commit_workload(task.func)
    for trace, secs in ((good, 1e-6), (_damaged(good)["unknown"], 1e-9)):
        db.commit_record(TuningRecord(workload_key=task.tune_task.workload.key, trace=trace,
                                      run_secs=(secs,), target=str(target),
                                      fingerprint=target.fingerprint()))
    db.close()
    with caplog.at_level(logging.WARNING, logger="irc.tune"):
        sch, args = task.apply_best(str(path))
        assert "sch.reorder" in task.print_best(str(path))
    assert any(m.startswith(f"{path}:2: ") for m in _replay_warnings(caplog))
    f = irc.build(sch, args, target="llvm")
    x = np.random.default_rng(0).standard_normal((16, 16)).astype("float32")
    out = irc.tensor(np.zeros((16, 16), "float32"))
    f(irc.tensor(x), irc.tensor(x), out)
    np.testing.assert_allclose(out.numpy(), x @ x, rtol=1e-4, atol=1e-4)

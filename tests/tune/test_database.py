"""Tuning databases: JSON lines round trip, resume, damaged files, targets, distill, and
the SQLite database's parity with the JSON one."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

import pytest
from tune_workloads import add_one, matmul

from irc.core.diagnostics import TuningError
from irc.ir import structural_equal
from irc.target import Target
from irc.tune import (
    JSONDatabase,
    MeasureErrorKind,
    SQLiteDatabase,
    TuningRecord,
    Workload,
    distill,
    open_database,
    workload_key,
)
from irc.tune.database.__main__ import main as database_main

TARGET = Target("llvm")


def record(wl: Workload, trace, secs=None, error="", fingerprint=None, seed=0):
    return TuningRecord(workload_key=wl.key, trace=trace,
                        run_secs=None if secs is None else list(secs), target=str(TARGET),
                        fingerprint=fingerprint or TARGET.fingerprint(),
                        error_kind=error, error_msg="boom" if error else "", seed=seed)


def fill(db, wl: Workload) -> None:
    db.commit_workload(wl)
    db.commit_records([
        record(wl, None, [3e-3, 3.2e-3]),
        record(wl, [{"kind": "split", "decisions": [4, 16]}], [1e-3]),
        record(wl, [{"kind": "split", "decisions": [8, 8]}], error=MeasureErrorKind.RUN_ERROR),
        record(wl, [{"kind": "split", "decisions": [2, 32]}], [2e-3]),
    ])


def test_json_round_trip(tmp_path):
    path = str(tmp_path / "log.json")
    wl = Workload.from_func(matmul(16), name="matmul")
    with JSONDatabase(path) as db:
        fill(db, wl)
        assert len(db) == 4
    assert os.path.exists(str(tmp_path / "log.workloads.json"))
    with open(path) as f:
        lines = f.read().splitlines()
    assert len(lines) == 4
    first = json.loads(lines[0])
    assert first["workload"] == wl.key and first["trace"] is None
    assert first["fingerprint"] == TARGET.fingerprint() and first["irc"]
    assert first["run_secs"] == [3e-3, 3.2e-3] and first["error"] is None
    assert json.loads(lines[2])["error"] == {"kind": "RUN_ERROR", "msg": "boom"}

    with JSONDatabase(path) as db:
        assert len(db) == 4 and db.load_report.unreadable == 0
        loaded = db.get_workload(wl.key)
        assert structural_equal(loaded.func, wl.func)
        assert workload_key(loaded.func) == wl.key
        top = db.get_top_k(wl, 2)
        assert [r.mean_cost for r in top] == [1e-3, 2e-3]
        assert top[0].trace == [{"kind": "split", "decisions": [4, 16]}]
        assert db.best_record(wl.func).run_secs == (1e-3,)
        assert db.records_of(wl.key)[2].error_kind == "RUN_ERROR"


def test_resume_appends_and_never_remeasures(tmp_path):
    path = str(tmp_path / "log.json")
    wl = Workload.from_func(matmul(16))
    with JSONDatabase(path) as db:
        fill(db, wl)
    with JSONDatabase(path) as db:
        assert db.has_measured(wl, None)
        assert db.has_measured(wl, [{"kind": "split", "decisions": [8, 8]}])  # failed too
        assert not db.has_measured(wl, [{"kind": "split", "decisions": [1, 64]}])
        db.commit_workload(wl.func)  # stored once
        db.commit_record(record(wl, [{"kind": "split", "decisions": [1, 64]}], [5e-4]))
    with JSONDatabase(path) as db:
        assert len(db) == 5
        assert db.best_record(wl).mean_cost == 5e-4
    with open(str(tmp_path / "log.workloads.json")) as f:
        assert len(f.read().splitlines()) == 1


def test_truncated_and_garbage_lines_are_skipped_not_rewritten(tmp_path, caplog):
    path = str(tmp_path / "log.json")
    wl = Workload.from_func(add_one(8))
    with JSONDatabase(path) as db:
        fill(db, wl)
    with open(path, "a") as f:
        f.write('{"workload": "abc", "trace": nul')  # a record cut short by a kill
    with open(path, "rb") as f:
        damaged = f.read()
    with JSONDatabase(path) as db:
        assert len(db) == 4
        assert db.load_report.unreadable == 1 and db.load_report.unreadable_lines == [5]
        db.commit_record(record(wl, ["after"], [1e-4]))
    with open(path, "rb") as f:
        now = f.read()
    assert now.startswith(damaged)  # the damaged bytes are kept as they were
    lines = now.decode().splitlines()
    assert json.loads(lines[-1])["trace"] == ["after"]
    # A garbage line in the middle of the file is skipped too.
    with open(path, "a") as f:
        f.write("not json at all\n")
    with JSONDatabase(path) as db:
        assert len(db) == 5 and db.load_report.unreadable == 2
        assert "2 unreadable entries skipped" in str(db.load_report)
    assert any("unreadable" in r.getMessage() for r in caplog.records)


def test_records_of_other_hardware_are_skipped(tmp_path):
    path = str(tmp_path / "log.json")
    wl = Workload.from_func(add_one(8))
    with JSONDatabase(path) as db:
        db.commit_workload(wl)
        db.commit_record(record(wl, ["here"], [1e-3]))
        db.commit_record(record(wl, ["there"], [1e-6], fingerprint="cpu|other-machine"))
    with JSONDatabase(path, target=TARGET) as db:
        assert len(db) == 1 and db.load_report.other_target == 1
        assert db.best_record(wl).trace == ["here"]
        assert not db.has_measured(wl, ["there"])
    with JSONDatabase(path) as db:  # no target: everything
        assert len(db) == 2


def test_best_record_prefers_a_faster_default(tmp_path):
    wl = Workload.from_func(add_one(8))
    with JSONDatabase(str(tmp_path / "log.json")) as db:
        db.commit_records([record(wl, ["tuned"], [2e-3]), record(wl, None, [1e-3])])
        best = db.best_record(wl)
        assert best.is_default and best.trace is None


def test_distill_keeps_best_per_workload_and_target(tmp_path):
    src = str(tmp_path / "big.json")
    dst = str(tmp_path / "best.json")
    w1 = Workload.from_func(matmul(16))
    w2 = Workload.from_func(add_one(8))
    w3 = Workload.from_func(add_one(4))
    with JSONDatabase(src) as db:
        fill(db, w1)
        fill(db, w2)
        db.commit_record(record(w2, ["far"], [5.0], fingerprint="cpu|other-machine"))
        db.commit_record(record(w3, ["broken"], error=MeasureErrorKind.BUILD_ERROR))
    with open(src, "rb") as f:
        before = f.read()
    report = distill(src, dst)
    assert (report.read, report.kept, report.written, report.without_valid) == (10, 3, 3, 1)
    with open(src, "rb") as f:
        assert f.read() == before
    with JSONDatabase(dst) as db:
        assert len(db) == 3
        assert db.best_record(w1).mean_cost == 1e-3
        assert {r.fingerprint for r in db.records_of(w2)} == {TARGET.fingerprint(),
                                                              "cpu|other-machine"}
        assert structural_equal(db.get_workload(w1.key).func, w1.func)
    assert distill(src, dst).written == 0  # nothing new the second time
    with pytest.raises(TuningError, match="different from its source"):
        distill(src, src)


def test_distill_command_line(tmp_path, capsys):
    src = str(tmp_path / "log.json")
    wl = Workload.from_func(add_one(8))
    with JSONDatabase(src) as db:
        fill(db, wl)
    assert database_main(["distill", "-i", src]) == 0
    out = capsys.readouterr().out
    assert "distilled 4 records to 1 best" in out
    with JSONDatabase(str(tmp_path / "log.best.json")) as db:
        assert len(db) == 1
    assert database_main(["show", "-i", src]) == 0
    assert wl.key[:12] in capsys.readouterr().out  # tables show the key's first 12 digits


def test_sqlite_matches_json(tmp_path):
    w1 = Workload.from_func(matmul(16), name="mm")
    w2 = Workload.from_func(add_one(8))
    dbs = [JSONDatabase(str(tmp_path / "log.json")), SQLiteDatabase(str(tmp_path / "log.db"))]
    for db in dbs:
        fill(db, w1)
        fill(db, w2)
        db.commit_record(record(w2, ["x"], [1e-6], fingerprint="cpu|other-machine"))

    def summary(db):
        return (len(db), db.workload_keys(),
                [(r.trace, r.mean_cost) for r in db.get_top_k(w1, 3)],
                db.best_record(w2).trace, db.has_measured(w1, None),
                db.has_measured(w1, ["nope"]), [r.error_kind for r in db.records_of(w1)],
                sorted(w.key for w in db.workloads()))

    assert summary(dbs[0]) == summary(dbs[1])
    for db in dbs:
        db.close()
    # Reopened with a target, both skip the other machine's record.
    reopened = [open_database(str(tmp_path / "log.json"), TARGET),
                open_database(str(tmp_path / "log.db"), TARGET)]
    assert isinstance(reopened[1], SQLiteDatabase)
    assert summary(reopened[0]) == summary(reopened[1])
    assert [db.load_report.other_target for db in reopened] == [1, 1]
    assert reopened[1].get_workload(w1.key).name == "mm"
    assert structural_equal(reopened[1].get_workload(w1.key).func, w1.func)
    for db in reopened:
        db.close()


def test_distill_between_json_and_sqlite(tmp_path):
    wl = Workload.from_func(add_one(8))
    with JSONDatabase(str(tmp_path / "log.json")) as db:
        fill(db, wl)
    report = distill(str(tmp_path / "log.json"), str(tmp_path / "best.sqlite"))
    assert report.kept == 1
    with SQLiteDatabase(str(tmp_path / "best.sqlite")) as db:
        assert db.best_record(wl).mean_cost == 1e-3


def test_bad_inputs_raise_clear_errors(tmp_path):
    with pytest.raises(TuningError, match="no tuning records"):
        distill(str(tmp_path / "missing.json"), str(tmp_path / "out.json"))
    with pytest.raises(TuningError, match="neither run_secs nor an error"):
        TuningRecord.from_json({"workload": "k", "target": "llvm", "fingerprint": "f"})
    bad = tmp_path / "bad.db"
    bad.write_text("this is not sqlite")
    with pytest.raises(TuningError, match="cannot open the tuning database"):
        SQLiteDatabase(str(bad))
    with pytest.raises(TuningError, match="PrimFunc"):
        workload_key("not a function")


def test_non_finite_times_become_errors():
    wl = Workload.from_func(add_one(8))
    rec = record(wl, ["t"], [float("inf")])
    assert rec.error_kind == MeasureErrorKind.RUN_ERROR and not rec.is_valid
    assert json.loads(rec.to_line())["run_secs"] is None


_WRITER = """
import sys
from irc.target import Target
from irc.tune import JSONDatabase, TuningRecord
t = Target("llvm")
db = JSONDatabase(sys.argv[1])
i = 0
while True:
    db.commit_record(TuningRecord(workload_key="w", trace=[i, "x" * 200], run_secs=[1e-3],
                                  target=str(t), fingerprint=t.fingerprint()))
    i += 1
    print(i, flush=True)
"""


def test_killed_writer_loses_at_most_the_record_in_flight(tmp_path):
    path = str(tmp_path / "log.json")
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, path], stdout=subprocess.PIPE,
                            text=True)
    committed = 0
    for line in proc.stdout:
        committed = int(line)
        if committed >= 30:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with JSONDatabase(path) as db:
        assert len(db) >= committed
        assert db.load_report.unreadable <= 1
        traces = [r.trace[0] for r in db.get_all_records()]
        assert traces == list(range(len(traces)))
        db.commit_record(record(Workload.from_func(add_one(8)), ["resumed"], [1e-3]))
    with JSONDatabase(path) as db:
        assert db.get_all_records()[-1].trace == ["resumed"]


def test_sqlite_claims_keep_concurrent_tuners_off_each_others_candidates(tmp_path):
    """Two tuning processes on one SQLite file: a candidate one has claimed (and not yet
    measured) is refused to the other; measured ones are refused to both; a claim of a
    process that is gone lapses. A JSON database only checks what was measured."""
    path = str(tmp_path / "shared.db")
    wl = Workload.from_func(add_one(16))
    first, second = SQLiteDatabase(path), SQLiteDatabase(path)
    second._owner = f"{second._owner}-other"  # as if another process
    assert first.claim(wl, [["a"], ["b"]]) == [True, True]
    assert second.claim(wl, [["b"], ["c"], None]) == [False, True, True]
    assert first.claim(wl, [["b"], ["c"]]) == [True, False]  # its own claim holds
    first.commit_workload(wl)
    first.commit_record(TuningRecord(wl.key, ["a"], (1e-3,), "llvm", "cpu|x"))
    assert second.claim(wl, [["a"]]) == [False]  # measured
    # A claim of a process that no longer exists lapses.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    second._owner = f"{socket.gethostname()}:{dead.pid}"
    assert second.claim(wl, [["d"]]) == [True]
    assert first.claim(wl, [["d"]]) == [True]
    first.close()
    second.close()
    db = JSONDatabase(str(tmp_path / "r.json"))
    db.commit_workload(wl)
    db.commit_record(TuningRecord(wl.key, ["a"], (1e-3,), "llvm", "cpu|x"))
    assert db.claim(wl, [["a"], ["b"]]) == [False, True]
    db.close()

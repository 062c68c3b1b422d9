"""Tuning survives being killed and sharing its database (issue 16): ``kill -9`` of the
whole ``irc tune`` process group at random moments leaves a readable database from
which a resumed run measures nothing twice, and two ``irc tune`` processes writing one
SQLite database at once lose no record and measure no candidate twice."""

import json
import os
import pathlib
import random
import signal
import subprocess
import sys
import time

import pytest

from irc.tune.database import JSONDatabase, SQLiteDatabase

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "convnet.ir"


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep)
    return env


def _tune(records, trials: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "irc", "tune", str(EXAMPLE), "--records",
                             str(records), "--trials", str(trials), "-q", "--seed",
                             str(random.randrange(1000))], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _lines(path: pathlib.Path) -> int:
    return sum(1 for _ in open(path, "rb")) if path.exists() else 0


def _no_candidate_twice(records) -> None:
    seen = set()
    for r in records:
        key = (r.workload_key, r.trace_key)
        assert key not in seen, f"candidate {r.trace_key} of {r.task_name} measured twice"
        seen.add(key)


@pytest.mark.slow
def test_kill_9_at_random_moments_then_resume(tmp_path):
    work = tmp_path / "work"
    record_file = work / "database_tuning_record.json"
    rng = random.Random(0)
    kept = 0
    for _ in range(4):
        p = _tune(work, 200)
        target = _lines(record_file) + rng.randint(1, 8)
        deadline = time.monotonic() + 240
        while _lines(record_file) < target and time.monotonic() < deadline \
                and p.poll() is None:
            time.sleep(rng.uniform(0.01, 0.2))
        time.sleep(rng.uniform(0, 0.5))  # somewhere in a build, a run or a write
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=60)
        db = JSONDatabase.from_work_dir(str(work))
        records = db.get_all_records()
        assert db.load_report.unreadable <= 1  # at most the line being written
        assert len(records) >= kept  # nothing measured earlier is lost
        kept = len(records)
        _no_candidate_twice(records)
        db.close()
    r = subprocess.run([sys.executable, "-m", "irc", "tune", str(EXAMPLE), "--records",
                        str(work), "--trials", "4", "-q"], env=_env(), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    db = JSONDatabase.from_work_dir(str(work))
    assert len(db.get_all_records()) == kept + 4
    _no_candidate_twice(db.get_all_records())
    print(json.dumps({"kills": 4, "records_after_kills": kept,
                      "records_after_resume": len(db.get_all_records())}))
    db.close()


@pytest.mark.slow
def test_two_tuners_write_one_sqlite_database(tmp_path):
    path = tmp_path / "shared.db"
    first, second = _tune(path, 12), _tune(path, 12)
    for p in (first, second):
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    db = SQLiteDatabase(str(path))
    records = db.get_all_records()
    assert len(records) == 24  # every measurement of both runs, none lost
    keys = [(r.workload_key, r.trace_key) for r in records]
    # Each run claims its candidates in the database before measuring them, so no
    # candidate (the tasks' default schedules included) is measured by both.
    print(json.dumps({"writers": 2, "records": len(records),
                      "readable": db.load_report.records,
                      "measured_by_both": len(keys) - len(set(keys))}))
    _no_candidate_twice(records)
    db.close()


# ---------------------------------------------------------------------------------------
# Workers that die or hang; a full disk
# ---------------------------------------------------------------------------------------

sys.path.insert(0, os.path.dirname(__file__))
from tune_workloads import matmul  # noqa: E402

from irc.core.diagnostics import TuningError  # noqa: E402
from irc.tune.builder import LocalBuilder  # noqa: E402
from irc.tune.database import json_db  # noqa: E402
from irc.tune.options import TuneComponents, TuneConfig  # noqa: E402
from irc.tune.runner import LocalRunner  # noqa: E402
from irc.tune.task import TuneTask  # noqa: E402
from irc.tune.tuner import tune_tasks  # noqa: E402


def test_a_killed_builder_and_a_hung_runner_are_replaced_and_the_run_finishes(tmp_path):
    """A builder worker killed with SIGKILL and the runner process stopped with SIGSTOP
    (a hang no kernel caused) during a run each cost at most one candidate: the worker
    is replaced, the stopped runner is given up after its setup timeout and replaced,
    and the run measures all its trials."""
    builder = LocalBuilder(n_parallel=2)
    runner = LocalRunner(timeout=2.0, setup_timeout=3.0, number=1, repeat=1, min_repeat_ms=1,
                         check_correctness=True)
    seen = []

    def sabotage(inputs, results):
        seen.append(results[0])
        if len(seen) == 2:
            os.kill(builder._workers[0].pid, signal.SIGKILL)
        if len(seen) == 4:
            os.kill(runner._worker.pid, signal.SIGSTOP)

    db = JSONDatabase(str(tmp_path / "records.json"))
    try:
        summary, _ = tune_tasks([TuneTask(matmul(32), "llvm")], db, TuneConfig(14, verbose=0,
                                                                               seed=1),
                                TuneComponents(builder=builder, runner=runner,
                                               callbacks=(sabotage,)))
    finally:
        builder.close()
        runner.close()
    assert summary.total_trials == 14
    records = db.get_all_records()
    assert len(records) == 14
    _no_candidate_twice(records)
    errors = [r for r in records if not r.is_valid]
    assert len(errors) <= 2, [r.error_msg for r in errors]
    assert any("took longer than 3 s" in r.error_msg for r in errors), \
        [r.error_msg for r in errors]
    assert runner.restarts >= 1
    db.close()


def test_a_full_disk_ends_with_an_irc_error_and_a_readable_database(tmp_path, monkeypatch):
    """The disk fills up in the middle of a record line: the run ends with a TuningError
    naming the file and the cause, the torn line is cut away, and the database reads
    back with every record committed before; a resumed run continues from them."""
    real_write = os.write
    writes = {"n": 0}

    def write(fd, data):
        writes["n"] += 1
        if writes["n"] == 7:
            real_write(fd, bytes(data)[:20])  # part of a line, then the disk is full
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    path = tmp_path / "records.json"
    monkeypatch.setattr(json_db.os, "write", write)
    with pytest.raises(TuningError) as info:
        tune_tasks([TuneTask(matmul(24), "llvm")], str(path), TuneConfig(12, verbose=0))
    assert "cannot write to the tuning database" in str(info.value)
    assert str(path) in str(info.value) and "No space left on device" in str(info.value)
    monkeypatch.setattr(json_db.os, "write", real_write)
    db = JSONDatabase(str(path))
    kept = len(db)
    assert kept >= 4 and db.load_report.unreadable == 0
    assert path.read_bytes().endswith(b"\n")
    db.close()
    summary, _ = tune_tasks([TuneTask(matmul(24), "llvm")], str(path),
                            TuneConfig(4, verbose=0))
    db = JSONDatabase(str(path))
    assert len(db) == kept + 4
    _no_candidate_twice(db.get_all_records())
    db.close()


def test_a_full_sqlite_database_ends_with_an_irc_error_and_keeps_its_records(tmp_path):
    path = tmp_path / "records.db"
    tune_tasks([TuneTask(matmul(24), "llvm")], str(path), TuneConfig(4, verbose=0))
    db = SQLiteDatabase(str(path))
    pages = db._conn.execute("PRAGMA page_count").fetchone()[0]
    db._conn.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full now
    with pytest.raises(TuningError, match="cannot write to the tuning database .*full"):
        tune_tasks([TuneTask(matmul(24), "llvm")], db, TuneConfig(40, verbose=0))
    db.close()
    db = SQLiteDatabase(str(path))
    assert len(db) >= 4
    _no_candidate_twice(db.get_all_records())
    db.close()


@pytest.mark.slow
def test_irc_tune_on_a_full_disk_says_so_and_resumes(tmp_path):
    """``irc tune`` whose record file may not grow past a size limit (as on a full disk):
    'irc: error: cannot write to the tuning database ...', exit status 1, no traceback;
    the same command without the limit resumes."""
    import resource

    work = tmp_path / "work"
    records = work / "database_tuning_record.json"

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (12_000, 12_000))

    r = subprocess.run([sys.executable, "-m", "irc", "tune", str(EXAMPLE), "--records",
                        str(work), "--trials", "60", "-q"], env=_env(), capture_output=True,
                       text=True, timeout=600, preexec_fn=limit)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "irc: error: cannot write to the tuning database" in r.stderr
    assert "File too large" in r.stderr and "Traceback" not in r.stderr
    kept = JSONDatabase.from_work_dir(str(work))
    n = len(kept)
    assert n > 0 and kept.load_report.unreadable == 0
    kept.close()
    assert records.stat().st_size <= 12_000
    r = subprocess.run([sys.executable, "-m", "irc", "tune", str(EXAMPLE), "--records",
                        str(work), "--trials", "4", "-q"], env=_env(), capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    db = JSONDatabase.from_work_dir(str(work))
    assert len(db) == n + 4
    _no_candidate_twice(db.get_all_records())
    db.close()

"""Tuning survives being killed and sharing its database (issue 16): ``kill -9`` of the
whole ``irc tune`` process group at random moments leaves a readable database from
which a resumed run measures nothing twice, and two ``irc tune`` processes writing one
SQLite database at once lose no record."""

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
    db.close()

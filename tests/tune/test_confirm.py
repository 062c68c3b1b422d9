"""Confirming the best candidates: a candidate measured more than once is ranked by the
mean of all its samples, and tuning ends by measuring each task's leaders again."""

from __future__ import annotations

import io
import math
from collections import Counter

import pytest

from irc import te
from irc.core.diagnostics import TuningError
from irc.core.target import Target
from irc.tune import JSONDatabase, TuningRecord
from irc.tune.database.sqlite_db import SQLiteDatabase
from irc.tune.options import TuneConfig
from irc.tune.record import combine_measurements, trace_key
from irc.tune.task import TuneTask
from irc.tune.tuner import confirm_best, tune_tasks


def _matmul(n=32):
    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return te.create_prim_func([a, b, c])


def _rec(key, trace, secs, error=""):
    t = Target.canon("llvm")
    return TuningRecord(workload_key=key, trace=trace, run_secs=secs, target=str(t),
                        fingerprint=t.fingerprint(), error_kind=error)


def test_repeated_measurements_of_a_candidate_are_one_record_with_all_samples():
    a1 = _rec("w", ["a"], (1.0, 2.0))
    b = _rec("w", ["b"], (1.2,))
    a2 = _rec("w", ["a"], (3.0,))
    failed = _rec("w", ["a"], None, error="RUN_ERROR")
    combined = combine_measurements([a1, b, failed, a2])
    assert [r.trace for r in combined] == [["a"], ["b"]]
    assert combined[0].run_secs == (1.0, 2.0, 3.0) and combined[0].mean_cost == 2.0
    assert combined[0].timestamp == a1.timestamp and combined[0].trace_key == a1.trace_key
    assert combined[1] is b
    assert combine_measurements([failed]) == []


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_the_database_ranks_a_candidate_by_all_its_measurements(tmp_path, kind):
    task = TuneTask(_matmul(), "llvm")
    path = str(tmp_path / ("db.json" if kind == "json" else "db.sqlite"))
    db = JSONDatabase(path, target="llvm") if kind == "json" else \
        SQLiteDatabase(path, target="llvm")
    db.commit_workload(task.workload)
    key = task.workload.key
    # "lucky" was timed fast once, then slow; "steady" is in between both times.
    db.commit_records([_rec(key, ["lucky"], (1.0,)), _rec(key, ["steady"], (1.5,))])
    assert db.best_record(key).trace == ["lucky"]
    db.commit_records([_rec(key, ["lucky"], (3.0,)), _rec(key, ["steady"], (1.5,))])
    top = db.get_top_k(key, 5)
    assert [r.trace for r in top] == [["steady"], ["lucky"]]
    assert top[0].run_secs == (1.5, 1.5) and top[1].mean_cost == 2.0
    assert len(db) == 4  # every measurement stays recorded
    db.close()


class _FakeEngine:
    """What confirm_best uses of a TuningEngine; each measurement of a trace records the
    next time from ``times[trace]``."""

    def __init__(self, tmp_path, times, default):
        self.tasks = [TuneTask(_matmul(), "llvm")]
        self.database = JSONDatabase(str(tmp_path / "db.json"), target="llvm")
        self.database.commit_workload(self.tasks[0].workload)
        self.times = {k: list(v) for k, v in times.items()}
        self.default = default
        self.measured: list[list[str]] = []
        for trace in self.times:
            self._measure_one(trace)

    def _measure_one(self, trace):
        t = self.times[trace].pop(0)
        self.database.commit_record(_rec(self.tasks[0].workload.key, [trace], (t,)))

    def default_trace(self, i):
        return [self.default]

    def measure(self, task, inputs):
        names = [inp.trace[0] if isinstance(inp.trace, list) else inp.trace
                 for inp in inputs]
        self.measured.append(names)
        for n in names:
            self._measure_one(n)


def test_confirming_measures_the_leaders_and_the_default_until_the_leader_is_confirmed(
        tmp_path):
    # Timed once: "lucky" 1.0, "b" 1.1, "c" 1.3, the default 1.4. Again: "lucky" 2.0 and
    # "b" 1.6 (so "c" leads by its single timing), then "c" 1.3 (confirmed).
    engine = _FakeEngine(tmp_path, {"lucky": [1.0, 2.0], "b": [1.1, 1.6], "c": [1.3, 1.3],
                                    "default": [1.4, 1.4]}, "default")
    made = confirm_best(engine, top=2)
    assert engine.measured == [["lucky", "b", "default"], ["c"]]
    assert made == 4
    best = engine.database.best_record(engine.tasks[0].workload.key)
    assert best.trace == ["c"] and best.run_secs == (1.3, 1.3)
    assert Counter(r.trace_key for r in engine.database.get_all_records())[
        trace_key(["c"])] == 2


def test_confirming_stops_at_its_deadline_and_measure_limit(tmp_path):
    engine = _FakeEngine(tmp_path, {"a": [1.0, 2.0], "b": [1.1, 1.2],
                                    "default": [1.4, 1.4]}, "default")
    assert confirm_best(engine, top=2, deadline=0.0) == 0 and engine.measured == []
    assert confirm_best(engine, top=2, max_measures=1) == 1
    assert engine.measured == [["a"]]


def test_confirm_top_is_checked():
    with pytest.raises(TuningError, match="confirm_top"):
        TuneConfig(8, confirm_top=-1)


@pytest.mark.slow  # about 45 s: the tuning run, then its confirmation measurements
def test_a_timed_tuning_run_ends_by_confirming_its_best_candidates(tmp_path):
    task = TuneTask(_matmul(64), "llvm")
    db = JSONDatabase(str(tmp_path / "db.json"), target="llvm")
    out = io.StringIO()
    summary, _ = tune_tasks([task], db, TuneConfig(10000, time_budget=4, verbose=1, out=out,
                                                   search_workers=0))
    # (The leader need not be confirmed: a 4 s budget leaves the confirmation little.)
    counts = Counter(r.trace_key for r in db.get_all_records() if r.is_valid)
    assert "confirming measurements" in out.getvalue()
    assert max(counts.values()) >= 2
    assert math.isfinite(db.best_record(task.workload.key).mean_cost)
    db.close()

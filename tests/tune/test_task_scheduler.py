"""The task scheduler's allocation of trials, with a fake tuner whose latencies improve
along known curves."""

from __future__ import annotations

import io
import math

import pytest
from tune_workloads import add_one, matmul

from irc.core.diagnostics import TuningError
from irc.target import Target
from irc.tune import (
    FinishedRound,
    JSONDatabase,
    TaskScheduler,
    TaskTuner,
    TuneTask,
    TuningRecord,
)


class FakeTuner(TaskTuner):
    """Task i's t-th trial measures ``start[i] * (floor[i] + (1 - floor[i]) * 0.97**t)``;
    ``defaults`` gives each task's unscheduled latency."""

    def __init__(self, start, floor, defaults=None, exhausted=()):
        self.start, self.floor = start, floor
        self.defaults = defaults
        self.exhausted = set(exhausted)
        self.trials = [0] * len(start)
        self.calls: list[tuple[int, int]] = []

    def tune_round(self, task_id, num_trials):
        self.calls.append((task_id, num_trials))
        if task_id in self.exhausted:
            return []
        out = []
        for _ in range(num_trials):
            t = self.trials[task_id]
            self.trials[task_id] += 1
            f = self.floor[task_id]
            out.append(self.start[task_id] * (f + (1 - f) * 0.97 ** t))
        return out

    def measure_default(self, task_id):
        return None if self.defaults is None else self.defaults[task_id]


def make_tasks(n):
    sizes = [8, 16, 32, 64, 4, 12]
    return [TuneTask(matmul(sizes[i]), "llvm", name=f"task{i}") for i in range(n)]


def test_warm_up_then_gradient_prefers_the_heavy_task():
    tasks = make_tasks(3)
    out = io.StringIO()
    sched = TaskScheduler(tasks, task_weights=[1, 1, 20], num_measures_per_round=4,
                          eps_random=0.0, out=out)
    tuner = FakeTuner(start=[1e-3, 1e-3, 1e-3], floor=[0.5, 0.5, 0.5])
    summary = sched.tune(tuner, max_trials=48)
    assert [c[0] for c in tuner.calls[:3]] == [0, 1, 2]  # every task gets a first round
    assert summary.total_trials == 48 and summary.stopped_by == "trials"
    assert summary.trials[2] > summary.trials[0] + summary.trials[1]
    assert summary.total_latency == pytest.approx(
        sum(w * c for w, c in zip([1, 1, 20], summary.best_costs)))
    table = out.getvalue()
    assert "|  ID  | Task name | Latency (ms) | Speed (GFLOPS) | Trials |" in table
    assert "Estimated total latency:" in table and "Next ID:" in table


def test_gradient_beats_round_robin_on_the_objective():
    results = {}
    for strategy in ("gradient", "round-robin"):
        tasks = make_tasks(4)
        sched = TaskScheduler(tasks, task_weights=[1, 1, 1, 1], strategy=strategy,
                              num_measures_per_round=8, eps_random=0.0, verbose=0)
        # Task 3 is slow and keeps improving; the others are fast and flat early.
        tuner = FakeTuner(start=[1e-4, 1e-4, 1e-4, 1e-2], floor=[0.9, 0.9, 0.9, 0.05])
        results[strategy] = (sched.tune(tuner, max_trials=160), tuner)
    grad, rr = results["gradient"][0], results["round-robin"][0]
    assert rr.trials == [40, 40, 40, 40]
    assert grad.trials[3] > 100
    assert grad.total_latency < rr.total_latency


def test_zero_budget_measures_nothing_and_keeps_defaults():
    tasks = make_tasks(2)
    out = io.StringIO()
    sched = TaskScheduler(tasks, out=out)
    tuner = FakeTuner(start=[1e-3, 1e-3], floor=[0.5, 0.5], defaults=[2e-3, 2e-3])
    summary = sched.tune(tuner, max_trials=0)
    assert tuner.calls == [] and summary.rounds == 0 and summary.total_trials == 0
    assert math.isinf(summary.total_latency)
    text = sched.table()
    assert "Estimated total latency: - ms" in text
    assert text.count("|            - |") == 2


def test_default_counts_as_a_trial_and_a_slower_tuned_kernel_never_wins():
    tasks = make_tasks(2)
    sched = TaskScheduler(tasks, num_measures_per_round=4, verbose=0, eps_random=0.0)
    # Task 0's tuned kernels are all slower than its default.
    tuner = FakeTuner(start=[5e-3, 1e-3], floor=[1.0, 0.5], defaults=[1e-3, 2e-3])
    summary = sched.tune(tuner, max_trials=10)
    assert summary.best_costs[0] == 1e-3
    assert summary.best_costs[1] < 1e-3
    # Both defaults were measured first (one trial each), then rounds of four.
    assert tuner.calls[:2] == [(0, 4), (1, 4)]
    assert summary.total_trials == 10 and summary.trials == [5, 5]


def test_defaults_first_then_warm_up_by_distance_to_the_roofline():
    """Every default is measured before any search, so the first table already has an
    estimated total; the warm-up rounds go first to the task furthest from the speed
    the fastest kernel reached (weighted), not in task order."""
    tasks = make_tasks(3)  # matmuls of 8, 16, 32: 1 KFLOP, 8 KFLOP, 64 KFLOP
    out = io.StringIO()
    sched = TaskScheduler(tasks, task_weights=[1, 1, 1], num_measures_per_round=2,
                          eps_random=0.0, out=out)
    # Task 1 runs at 8 GFLOPS (the roof), task 0 at 0.1 and task 2 at 0.5 GFLOPS:
    # task 2 has 128 us to gain, task 0 10 us, task 1 none.
    defaults = [1024 / 0.1e9, 8192 / 8e9, 65536 / 0.5e9]
    tuner = FakeTuner(start=[1e-3] * 3, floor=[0.5] * 3, defaults=defaults)
    gains = None

    def first_round(sched_, i):
        nonlocal gains
        if gains is None:
            gains = sched_.roofline_gains()

    summary = sched.tune(tuner, max_trials=9, callbacks=[first_round])
    assert [c[0] for c in tuner.calls] == [2, 0, 1]
    assert summary.trials == [3, 3, 3]
    first_table = out.getvalue().split("Estimated total latency:")[1].split()[0]
    assert float(first_table) == pytest.approx(sum(defaults) * 1e3, rel=1e-2)  # 3 decimals
    assert gains is not None and gains[1] == 0.0


def test_exhausted_and_failing_tasks_are_dropped():
    tasks = make_tasks(3)
    sched = TaskScheduler(tasks, num_measures_per_round=2, verbose=0, eps_random=0.0)

    class Failing(FakeTuner):
        def tune_round(self, task_id, num_trials):
            out = super().tune_round(task_id, num_trials)
            return [math.inf] * len(out) if task_id == 2 else out

    tuner = Failing(start=[1e-3] * 3, floor=[0.5] * 3, exhausted={0})
    summary = sched.tune(tuner, max_trials=40)
    assert sched.dead[0] and sched.dead[2]
    assert sum(1 for t, _ in tuner.calls if t == 0) == 1
    assert sum(1 for t, _ in tuner.calls if t == 2) == 3
    assert summary.trials[1] == 40 - summary.trials[2]


def test_time_budget_and_objective_function():
    tasks = make_tasks(2)
    sched = TaskScheduler(tasks, num_measures_per_round=2, verbose=0,
                          objective_func=lambda costs: max(costs))
    summary = sched.tune(FakeTuner(start=[1e-3, 2e-3], floor=[0.5, 0.5]), max_trials=1000,
                         time_budget=0.0)
    assert summary.stopped_by == "time" and summary.rounds == 0
    summary = sched.tune(FakeTuner(start=[1e-3, 2e-3], floor=[0.5, 0.5]), max_trials=20)
    assert summary.total_latency == pytest.approx(max(summary.best_costs))
    # With the max as objective, the slower task gets the trials after warm-up.
    assert summary.trials[1] > summary.trials[0]


def test_resume_from_records(tmp_path):
    tasks = [TuneTask(add_one(16), "llvm", name="a"), TuneTask(add_one(32), "llvm", name="b")]
    t = Target("llvm")
    path = str(tmp_path / "log.json")
    with JSONDatabase(path) as db:
        for secs in (3e-6, 2e-6):
            db.commit_record(TuningRecord(workload_key=tasks[0].workload.key, trace=[secs],
                                          run_secs=[secs], target=str(t),
                                          fingerprint=t.fingerprint()))
        db.commit_record(TuningRecord(workload_key=tasks[0].workload.key, trace=None,
                                      run_secs=[5e-6], target=str(t),
                                      fingerprint=t.fingerprint()))
    sched = TaskScheduler(tasks, load_log_file=path, verbose=0, num_measures_per_round=2,
                          eps_random=0.0)
    assert list(sched.task_cts) == [3, 0] and sched.best_costs[0] == 2e-6
    assert sched.default_measured[0] and not sched.default_measured[1]
    tuner = FakeTuner(start=[1e-6, 1e-6], floor=[0.5, 0.5], defaults=[1e-6, 1e-6])
    sched.tune(tuner, max_trials=2)
    assert tuner.calls == [(1, 1)]  # task a is already warm; b's default plus one trial


def test_bad_arguments():
    with pytest.raises(TuningError, match="at least one task"):
        TaskScheduler([])
    with pytest.raises(TuningError, match="strategy"):
        TaskScheduler(make_tasks(1), strategy="greedy")
    with pytest.raises(TuningError, match="task weights"):
        TaskScheduler(make_tasks(2), task_weights=[1])


class OverlappedTuner(FakeTuner):
    """A FakeTuner measuring two rounds at once: each finish_rounds call finishes the
    oldest round in flight."""

    rounds_in_flight = 2

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.in_flight: list[FinishedRound] = []
        self.most_in_flight = 0

    def start_round(self, task_id, num_trials):
        assert task_id not in [r.task_id for r in self.in_flight]
        costs = self.tune_round(task_id, num_trials)
        if not costs:
            return False
        self.in_flight.append(FinishedRound(task_id=task_id, costs=tuple(costs)))
        self.most_in_flight = max(self.most_in_flight, len(self.in_flight))
        return True

    def finish_rounds(self, timeout=None):
        return [self.in_flight.pop(0)] if self.in_flight else []


def test_a_tuner_with_rounds_in_flight_is_driven_through_start_and_finish():
    tasks = make_tasks(3)
    sched = TaskScheduler(tasks, num_measures_per_round=4, eps_random=0.0, verbose=0)
    tuner = OverlappedTuner(start=[1e-3] * 3, floor=[0.5] * 3, exhausted=[1])
    summary = sched.tune(tuner, max_trials=48)
    assert summary.total_trials == 48 and summary.stopped_by == "trials"
    assert tuner.most_in_flight == 2 and not tuner.in_flight
    assert summary.trials[1] == 0 and sched.dead[1]  # nothing to try: no round started
    # Two tasks left, two rounds in flight: they alternate.
    assert summary.trials[0] == summary.trials[2] == 24
    # A tuner measuring one round at a time has no rounds in flight.
    with pytest.raises(TuningError, match="one round at a time"):
        FakeTuner(start=[1e-3], floor=[0.5]).start_round(0, 4)
    assert FakeTuner(start=[1e-3], floor=[0.5]).finish_rounds() == []

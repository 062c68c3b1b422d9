"""The tuning engine end to end on small workloads: found schedules are correct and faster
than the default; crashing, hanging and wrong candidates become error records while
tuning goes on; a killed run resumes without losing or re-measuring records."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from tune_workloads import add_one, calls_abort, hangs, matmul

import irc
from irc.core.diagnostics import TuningError
from irc.core.functor import Mutator
from irc.tune import (
    EvolutionaryStrategy,
    JSONDatabase,
    LocalBuilder,
    LocalRunner,
    MeasureErrorKind,
    MeasureInput,
    SearchOptions,
    TuneComponents,
    TuneConfig,
    TuneTask,
    Workload,
    schedule_from_record,
)
from irc.tune.measure import Builder
from irc.tune.space import (
    AutoInline,
    MultiLevelTiling,
    ParallelizeVectorizeUnroll,
    RandomComputeLocation,
    SpaceGenerator,
)
from irc.tune.task_scheduler import TuningCounts
from irc.tune.tuner import options_from_keywords, tune_tasks

SMALL = EvolutionaryStrategy(SearchOptions(population_size=24, num_iters=2,
                                           init_min_unmeasured=16))
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def runner():
    r = LocalRunner(timeout=2.0, number=1, repeat=2, min_repeat_ms=2, check_correctness=True)
    yield r
    r.close()


def serial_space():
    """The CPU space without parallel loops: timings of single-threaded kernels do not
    depend on what else runs on the machine, so the comparison below is stable."""
    rules = [AutoInline(), MultiLevelTiling(), ParallelizeVectorizeUnroll(parallel_factors=()),
             RandomComputeLocation()]
    return SpaceGenerator("llvm", rules=rules)


def test_tuned_schedule_is_correct_and_beats_the_default(tmp_path, runner):
    task = TuneTask(matmul(128), "llvm", name="matmul128")
    db_path = str(tmp_path / "mm.json")
    summary, engine = tune_tasks([task], db_path, TuneConfig(12, num_trials_per_iter=6, verbose=0),
                                 TuneComponents(runner=runner, search_strategy=SMALL,
                                                space=serial_space()))
    assert summary.total_trials == 12
    db = JSONDatabase(db_path, target="llvm")
    records = db.records_of(task.workload)
    assert len(records) == 12
    assert len({r.trace_key for r in records}) == 12
    default = next(r for r in records if r.trace == engine.default_trace(0))
    # Measured as the candidates are (a single sample let one descheduled run make a
    # default look many times slower than it is).
    assert len(default.run_secs) == runner.repeat == 2
    best = db.best_record(task.workload)
    assert best.mean_cost <= default.mean_cost  # never worse than the default schedule
    # The search's own best beats the unscheduled function by far.
    searched = min(r.mean_cost for r in records if r is not default)
    builder = LocalBuilder(timeout=30)
    try:
        inp = MeasureInput(task.workload, None, "llvm")
        unscheduled = runner.run([inp], builder.build([inp]))[0]
    finally:
        builder.close()
    assert searched < min(unscheduled.run_secs) / 2
    sch = schedule_from_record(task.func, best)
    f = irc.build(sch.mod, target="llvm")
    a = np.random.default_rng(0).random((128, 128), dtype=np.float32)
    out = irc.tensor(np.zeros((128, 128), np.float32))
    f(irc.tensor(a), irc.tensor(a), out)
    np.testing.assert_allclose(out.numpy(), a @ a, rtol=1e-4, atol=1e-4)
    db.close()


class SabotagingBuilder(Builder):
    """Builds the first three candidates as a crashing, a hanging and a wrong kernel."""

    def __init__(self):
        self.inner = LocalBuilder(timeout=30)
        self.count = 0

    def build(self, inputs):
        out = []
        for inp in inputs:
            self.count += 1
            bad = {2: calls_abort, 3: hangs, 4: _wrong}.get(self.count)
            if bad is not None:
                inp = MeasureInput(inp.workload, inp.trace, inp.target,
                                   func=bad(inp.workload.func))
            out.append(inp)
        return self.inner.build(out)

    def close(self):
        self.inner.close()


def _wrong(func):
    """``func`` with every stored value doubled (a wrong result)."""
    class Double(Mutator):
        def visit_BufferStore(self, store):
            return store.replace(value=store.value * 2.0)

    return Double().visit(func)


def test_crashing_hanging_and_wrong_candidates_become_error_records(tmp_path):
    task = TuneTask(matmul(64), "llvm", name="mm64")
    db_path = str(tmp_path / "bad.json")
    builder = SabotagingBuilder()
    runner = LocalRunner(timeout=1.0, number=1, repeat=1, min_repeat_ms=1,
                         check_correctness=True)
    try:
        summary, engine = tune_tasks([task], db_path, TuneConfig(8, num_trials_per_iter=7,
                                                                 verbose=0),
                                     TuneComponents(builder=builder, runner=runner,
                                                    search_strategy=SMALL))
    finally:
        builder.close()
        runner.close()
    db = JSONDatabase(db_path)
    kinds = [r.error_kind for r in db.records_of(task.workload)]
    assert kinds.count(MeasureErrorKind.RUN_ERROR) == 1
    assert kinds.count(MeasureErrorKind.RUN_TIMEOUT) == 1
    assert kinds.count(MeasureErrorKind.WRONG_RESULT) == 1
    assert len(kinds) == 8
    assert sum(1 for k in kinds if not k) == 5  # tuning went on
    assert engine.error_counts == {"RUN_ERROR": 1, "RUN_TIMEOUT": 1, "WRONG_RESULT": 1}
    assert summary.counts == TuningCounts(run_failures=2, wrong_results=1)
    assert summary.counts.describe() == ("2 candidates failed to run, 1 candidate computed "
                                         "a wrong result")
    db.close()


def test_zero_budget_measures_nothing(tmp_path):
    task = TuneTask(matmul(32), "llvm")
    summary, _ = tune_tasks([task], str(tmp_path / "z.json"), TuneConfig(0, verbose=0))
    assert summary.total_trials == 0
    assert not os.path.exists(tmp_path / "z.json") or \
        len(JSONDatabase(str(tmp_path / "z.json"))) == 0


def test_bad_options_are_irc_errors(tmp_path):
    task = TuneTask(matmul(32), "llvm")
    with pytest.raises(TuningError, match="non-negative"):
        TuneConfig(-1)
    with pytest.raises(TuningError, match="time_budget"):
        TuneConfig(4, time_budget=0)
    with pytest.raises(TuningError, match="num_trials_per_iter must be at least 1"):
        TuneConfig(4, num_trials_per_iter=0)
    with pytest.raises(TuningError, match="unknown task scheduling strategy"):
        TuneConfig(4, task_scheduling="fastest")
    with pytest.raises(TuningError, match="takes a TuneConfig"):
        tune_tasks([task], str(tmp_path / "e.json"), 4)
    with pytest.raises(TuningError, match="empty"):
        tune_tasks([], str(tmp_path / "e.json"), TuneConfig(4))
    with pytest.raises(TuningError, match="unknown search option 'populaton'"):
        SearchOptions.from_dict({"populaton": 3})
    with pytest.raises(TuningError, match="eps_greedy must be a number between 0 and 1"):
        SearchOptions(eps_greedy=2)
    with pytest.raises(TuningError, match="unknown tuning option 'trials'"):
        options_from_keywords(4, trials=3)
    with pytest.raises(TuningError, match="not both"):
        options_from_keywords(4, search_options={}, search_strategy=SMALL)


_CHILD = textwrap.dedent("""
    import sys
    sys.path.insert(0, {here!r})
    from tune_workloads import matmul
    from irc.tune import LocalRunner, TuneTask
    from irc.tune.tuner import options_from_keywords, tune_tasks
    runner = LocalRunner(timeout=2.0, number=1, repeat=1, min_repeat_ms=1)
    tune_tasks([TuneTask(matmul(96), "llvm", name="mm96")], {db!r},
               *options_from_keywords(400, num_trials_per_iter=8, runner=runner, verbose=0,
                                      search_options={{"population_size": 16, "num_iters": 1,
                                                       "init_min_unmeasured": 12}}))
""")


@pytest.mark.slow
def test_kill_and_resume_loses_nothing_and_measures_nothing_twice(tmp_path):
    db_path = str(tmp_path / "resume.json")
    code = _CHILD.format(here=HERE, db=db_path)
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if os.path.exists(db_path) and len(open(db_path).readlines()) >= 10:
                break
            if proc.poll() is not None:
                break
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    with open(db_path) as f:
        before = f.read().splitlines()
    assert len(before) >= 10
    task = TuneTask(matmul(96), "llvm", name="mm96")
    runner = LocalRunner(timeout=2.0, number=1, repeat=1, min_repeat_ms=1)
    try:
        tune_tasks([task], db_path, *options_from_keywords(
            8, num_trials_per_iter=8, runner=runner, verbose=0,
            search_options={"population_size": 16, "num_iters": 1, "init_min_unmeasured": 12}))
    finally:
        runner.close()
    with open(db_path) as f:
        after = f.read().splitlines()
    complete = [line for line in before if line.endswith("}")]
    assert after[:len(complete)] == complete  # nothing lost, nothing rewritten
    db = JSONDatabase(db_path)
    keys = [r.trace_key for r in db.records_of(task.workload)]
    assert len(keys) == len(set(keys))  # nothing measured twice
    assert len(keys) >= len(complete) + 8 - 1
    db.close()


def test_correctness_references_survive_many_interleaved_tasks():
    """Tuning a network measures tasks in any order; the runner process keeps a few
    reference outputs and the tuner must resend those it evicted (ResNet-18 regression:
    'the runner process has no reference for this workload')."""
    builder = LocalBuilder()
    runner = LocalRunner(timeout=2, number=1, repeat=1, min_repeat_ms=1, check_correctness=True)
    try:
        wls = [Workload.from_func(add_one(64 + 8 * i)) for i in range(7)]
        for i in [0, 5, 2, 6, 1, 3, 4, 0, 6, 2]:
            inp = MeasureInput(wls[i])
            res = runner.run([inp], builder.build([inp]))[0]
            assert not res.error_kind, res.error_msg
    finally:
        builder.close()
        runner.close()

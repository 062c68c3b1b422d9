"""LocalRunner: isolated measurement; crashing, hanging and wrong candidates become error
records while the others are measured."""

from __future__ import annotations

import pytest
from tune_workloads import add_one, calls_abort, hangs, matmul, slow_add_one, writes_out_of_bounds

from irc.core.diagnostics import TuningError
from irc.tune import (
    BuildResult,
    JSONDatabase,
    LocalBuilder,
    LocalRunner,
    MeasureErrorKind,
    MeasureInput,
    ProgramMeasurer,
    RecordToDatabase,
    Workload,
)
from irc.tune.runner import output_params


@pytest.fixture(scope="module")
def builder():
    b = LocalBuilder(timeout=30)
    yield b
    b.close()


@pytest.fixture(scope="module")
def checking_runner():
    r = LocalRunner(timeout=1.0, number=2, repeat=2, min_repeat_ms=1, check_correctness=True)
    yield r
    r.close()


def test_crashing_candidates_become_run_errors(builder, checking_runner, tmp_path):
    wl = Workload.from_func(add_one(256), name="add_one")
    inputs = [MeasureInput(wl),
              MeasureInput(wl, ["abort"], func=calls_abort(wl.func)),
              MeasureInput(wl, ["segv"], func=writes_out_of_bounds(wl.func)),
              MeasureInput(wl, ["same"], func=add_one(256))]
    db = JSONDatabase(str(tmp_path / "log.json"))
    measurer = ProgramMeasurer(builder, checking_runner, [RecordToDatabase(db, seed=3)])
    restarts = checking_runner.restarts
    results = measurer.measure(inputs)
    kinds = [r.error_kind for r in results]
    assert kinds == ["", MeasureErrorKind.RUN_ERROR, MeasureErrorKind.RUN_ERROR, ""]
    assert "SIGABRT" in results[1].error_msg and "kernel crashed" in results[1].error_msg
    assert "SIGSEGV" in results[2].error_msg
    for r in (results[0], results[3]):
        assert len(r.costs) == 2 and all(c > 0 for c in r.costs)
    assert checking_runner.restarts - restarts == 2
    assert measurer.error_counts == {"RUN_ERROR": 2}
    records = db.records_of(wl)
    assert [r.error_kind for r in records] == kinds
    assert all(r.seed == 3 and r.task_name == "add_one" for r in records)
    assert db.has_measured(wl, ["segv"]) and db.best_record(wl) is not None
    db.close()


def test_hanging_and_wrong_candidates(builder, checking_runner):
    wl = Workload.from_func(add_one(256))
    inputs = [MeasureInput(wl, ["wrong"], func=add_one(256, 2.0)),
              MeasureInput(wl, ["hang"], func=hangs(wl.func)),
              MeasureInput(wl)]
    results = ProgramMeasurer(builder, checking_runner).measure(inputs)
    assert [r.error_kind for r in results] == [MeasureErrorKind.WRONG_RESULT,
                                               MeasureErrorKind.RUN_TIMEOUT, ""]
    assert "'B' differs" in results[0].error_msg and "expected" in results[0].error_msg
    assert "run timeout of 1 s" in results[1].error_msg
    assert results[2].mean_cost > 0


def test_run_timeout_starts_with_the_kernel(builder):
    # Computing the reference outputs with this workload's unscheduled function takes
    # longer than the run timeout; only the candidate's own time counts against it.
    wl = Workload.from_func(slow_add_one(64, 5_000_000))
    runner = LocalRunner(timeout=0.3, number=1, min_repeat_ms=0, check_correctness=True)
    try:
        inp = MeasureInput(wl, ["fast"], func=add_one(64))
        res = runner.run([inp], builder.build([inp]))
        assert res[0].error_kind == "", res[0].error_msg
        assert res[0].run_wall_secs > 0.3  # the reference run happened before the clock
    finally:
        runner.close()


def test_without_check_a_wrong_kernel_is_just_timed(builder):
    wl = Workload.from_func(add_one(64))
    inputs = [MeasureInput(wl, ["wrong"], func=add_one(64, 2.0))]
    runner = LocalRunner(number=1, repeat=3, min_repeat_ms=0, enable_cpu_cache_flush=True)
    try:
        res = runner.run(inputs, builder.build(inputs))
    finally:
        runner.close()
    assert res[0].error_kind == "" and len(res[0].run_secs) == 3


def test_build_errors_pass_through_and_options_are_checked(builder):
    runner = LocalRunner()
    res = runner.run([MeasureInput(add_one(8))],
                     [BuildResult(None, MeasureErrorKind.BUILD_ERROR, "no")])
    assert res[0].error_kind == MeasureErrorKind.BUILD_ERROR and res[0].error_msg == "no"
    runner.close()
    with pytest.raises(TuningError, match="cannot finish within the timeout"):
        LocalRunner(timeout=1, min_repeat_ms=2000)
    with pytest.raises(TuningError, match="number >= 1"):
        LocalRunner(number=0)


def test_output_params():
    assert output_params(matmul(8)) == [2]
    assert output_params(add_one(8)) == [1]


def test_timing_with_cache_flushes_keeps_the_staged_copies_alive():
    # A misaligned array is staged into an aligned copy that the native arguments point
    # to; the copies must live until the last timed call (a rebound loop variable once
    # freed them, and candidates wrote into freed memory, crashing the runner or
    # corrupting its timings).
    import gc
    import time
    import weakref

    from irc.tune import runner as runner_mod

    class _Staged:
        pass

    class _Kernel:
        def __init__(self):
            self.calls = 0

        def prepare(self, arrays):
            staged = [_Staged()]
            self.alive = weakref.ref(staged[0])
            return [0], staged

        def c_function(self, *native):
            gc.collect()
            self.calls += 1
            time.sleep(0.003)  # steady, so that no sample counts as a stall
            return 0 if self.alive() is not None else 1

    kernel = _Kernel()
    secs = runner_mod._time_flushing(kernel, [], number=2, repeat=3, cooldown_ms=0.0)
    assert len(secs) == 3 and kernel.calls >= 1 + 2 * 3


def test_the_runner_hands_kernels_aligned_arrays():
    import numpy as np

    from irc.runtime.ndarray import ALIGNMENT
    from irc.tune import runner as runner_mod

    big = np.arange(100_000, dtype="float32")[1:]  # misaligned by 4 bytes
    copy = runner_mod._aligned_copy(big)
    assert copy.ctypes.data % ALIGNMENT == 0 and np.array_equal(copy, big)


def test_a_cold_sample_that_caught_a_stall_is_taken_again(monkeypatch):
    from irc.tune import runner as runner_mod

    # A simulated clock: each call of the kernel advances it by 2 ms, or 30 ms when the
    # call stalls, so the test does not depend on how long a real sleep takes on a
    # loaded machine.
    clock = [0.0]
    monkeypatch.setattr(runner_mod.time, "perf_counter", lambda: clock[0])

    class _Kernel:
        def __init__(self, stalls):
            self.calls = 0
            self.stalls = stalls

        def prepare(self, arrays):
            return [], []

        def c_function(self, *native):
            self.calls += 1
            clock[0] += 0.03 if self.calls in self.stalls else 0.002
            return 0

    # The warm-up is call 1; the second timed sample stalls and is replaced.
    kernel = _Kernel(stalls={3})
    secs = runner_mod._time_flushing(kernel, [], number=1, repeat=3, cooldown_ms=0.0)
    assert kernel.calls == 1 + 3 + 1 and max(secs) < 0.02
    # A kernel that keeps stalling gets at most ``repeat`` extra samples.
    kernel = _Kernel(stalls=set(range(3, 100)))
    secs = runner_mod._time_flushing(kernel, [], number=1, repeat=3, cooldown_ms=0.0)
    assert kernel.calls == 1 + 3 + 3 and len(secs) == 3
    # One sample cannot be compared with anything: it is kept.
    kernel = _Kernel(stalls={2})
    secs = runner_mod._time_flushing(kernel, [], number=1, repeat=1, cooldown_ms=0.0)
    assert kernel.calls == 2 and secs[0] > 0.02

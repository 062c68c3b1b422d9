"""LocalBuilder: parallel persistent workers, build errors and build timeouts."""

from __future__ import annotations

import numpy as np
import pytest
from tune_workloads import add_one, calls_missing_function, matmul, tiling_trace

from irc.core.diagnostics import TuningError
from irc.runtime.module import Module
from irc.tune import LocalBuilder, MeasureErrorKind, MeasureInput, Workload, apply_trace


@pytest.fixture(scope="module")
def builder():
    b = LocalBuilder(timeout=30, n_parallel=2)
    yield b
    b.close()


def test_builds_in_parallel_workers_and_reports_errors(builder):
    wl = Workload.from_func(add_one(64))
    inputs = [MeasureInput(wl),
              MeasureInput(wl, ["bad"], func=calls_missing_function(wl.func)),
              MeasureInput(matmul(16)),
              MeasureInput(wl, ["other"], func=add_one(64, 3.0))]
    results = builder.build(inputs)
    assert [r.error_kind for r in results] == ["", MeasureErrorKind.BUILD_ERROR, "", ""]
    assert "irc_test_no_such_function" in results[1].error_msg
    assert results[1].artifact is None
    for r in (results[0], results[2], results[3]):
        mod = Module.deserialize(r.artifact)
        assert mod.entry_name == "main" and r.build_secs > 0
    pids = {w.pid for w in builder._workers}
    assert len(pids) == 2
    # The workers persist: a second batch reuses the same processes.
    again = builder.build(inputs[:1] * 3)
    assert all(r.ok for r in again)
    assert {w.pid for w in builder._workers} == pids


def test_build_timeout_kills_only_that_candidate():
    b = LocalBuilder(timeout=1e-4, n_parallel=1)
    try:
        b.start()
        b._workers[0].wait_ready()
        res = b.build([MeasureInput(add_one(32, 5.0))])
        assert res[0].error_kind == MeasureErrorKind.BUILD_TIMEOUT
        assert "build timeout" in res[0].error_msg
        b.timeout = 30.0
        ok = b.build([MeasureInput(add_one(32, 6.0))])  # on a fresh worker
        assert ok[0].ok
    finally:
        b.close()


def test_in_process_builder_and_trace_replay_errors():
    b = LocalBuilder(n_parallel=0)
    res = b.build([MeasureInput(add_one(16)),
                   MeasureInput(add_one(16), func=calls_missing_function(add_one(16)))])
    assert res[0].ok and res[1].error_kind == MeasureErrorKind.BUILD_ERROR


def test_bad_options():
    with pytest.raises(TuningError, match="timeout"):
        LocalBuilder(timeout=0)
    with pytest.raises(TuningError, match="module:function"):
        LocalBuilder(postproc="no_colon")


def test_postprocessor_runs_before_compiling():
    b = LocalBuilder(n_parallel=0, postproc="tune_workloads:replace_with_add_two")
    res = b.build([MeasureInput(add_one(8))])
    fn = Module.deserialize(res[0].artifact)["main"]
    a = np.arange(8, dtype="float32")
    out = np.zeros(8, dtype="float32")
    fn(a, out)
    np.testing.assert_allclose(out, a + 2)


def test_replays_traces_in_the_worker(builder):
    wl = Workload.from_func(matmul(64))
    traces = [tiling_trace(wl.func, seed=s) for s in range(3)]
    results = builder.build([MeasureInput(wl, t) for t in traces])
    a = np.random.default_rng(0).uniform(size=(64, 64)).astype("float32")
    b = np.random.default_rng(1).uniform(size=(64, 64)).astype("float32")
    for trace, res in zip(traces, results):
        assert res.ok, res.error_msg
        out = np.zeros((64, 64), dtype="float32")
        Module.deserialize(res.artifact)["main"](a, b, out)
        np.testing.assert_allclose(out, a @ b, rtol=1e-4)
        assert apply_trace(wl.func, trace) is not wl.func
    # A trace that does not fit the workload is a build error, not a crash.
    bad = [[["GetBlock", [], ["no_such_block", "main"], ["b0"]]], []]
    res = builder.build([MeasureInput(wl, bad)])
    assert res[0].error_kind == MeasureErrorKind.BUILD_ERROR
    assert "no_such_block" in res[0].error_msg

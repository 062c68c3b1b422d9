"""``irc.tune.auto_scheduler``: the seed 000/002/004 flows with irc names and small
budgets — register, create a task, print its DAG, tune into a record file, apply the
best, build, check against numpy, print the schedule, resume without re-measuring."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import irc
from irc import te, topi
from irc.core.diagnostics import TuningError
from irc.frontend import nn
from irc.testing import ref
from irc.tune import JSONDatabase, auto_scheduler
from irc.tune.apply import LayoutRewriteOption

SMALL = {"population_size": 16, "num_iters": 1, "init_min_unmeasured": 12}
RUNNER = dict(timeout=5, number=1, repeat=2, min_repeat_ms=2)


@auto_scheduler.register_workload
def matmul_add(N, L, M, dtype):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    C = te.placeholder((N, M), name="C", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    matmul = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul",
                        attrs={"layout_free_placeholders": [B]})
    out = te.compute((N, M), lambda i, j: matmul[i, j] + C[i, j], name="out")
    return [A, B, C, out]


@auto_scheduler.register_workload
def conv2d_layer(N, H, W, CO, CI, KH, KW, stride, padding):
    data = te.placeholder((N, CI, H, W), name="data")
    kernel = te.placeholder((CO, CI, KH, KW), name="kernel")
    bias = te.placeholder((1, CO, 1, 1), name="bias")
    conv = topi.nn.conv2d_nchw(data, kernel, stride, padding, dilation=1, out_dtype="float32")
    out = topi.nn.relu(conv + bias)
    return [data, kernel, bias, out]


SEED_002_DAG = """\
A = PLACEHOLDER [64, 64]
B = PLACEHOLDER [64, 64]
matmul(i, j) += (A[i, k]*B[k, j])
C = PLACEHOLDER [64, 64]
out(i, j) = (matmul[i, j] + C[i, j])
"""


@pytest.fixture(scope="module")
def tuned_matmul(tmp_path_factory):
    """Seed 002's flow, tuned once for the tests of this module."""
    log_file = str(tmp_path_factory.mktemp("as") / "matmul.json")
    task = auto_scheduler.SearchTask(func=matmul_add, args=(64, 64, 64, "float32"),
                                     target="llvm")
    ctx = auto_scheduler.LocalRPCMeasureContext(**RUNNER)
    opts = auto_scheduler.TuningOptions(
        num_measure_trials=6, runner=ctx.runner, verbose=0,
        measure_callbacks=[auto_scheduler.RecordToFile(log_file)])
    task.tune(opts, search_policy=auto_scheduler.SketchPolicy(task, params=SMALL))
    ctx.close()
    return task, log_file


def test_compute_dag_and_workload_key():
    task = auto_scheduler.SearchTask(func=matmul_add, args=(64, 64, 64, "float32"),
                                     target="llvm")
    assert str(task.compute_dag) == SEED_002_DAG
    assert task.workload_key == '["matmul_add", 64, 64, 64, "float32"]'
    assert task.flop_ct == 2 * 64 ** 3 + 64 * 64
    by_name = auto_scheduler.SearchTask(func="matmul_add", args=(64, 64, 64, "float32"))
    assert by_name.tune_task.workload.key == task.tune_task.workload.key


def test_seed_002_build_run_and_print(tuned_matmul):
    task, log_file = tuned_matmul
    sch, args = task.apply_best(log_file)
    assert "def main" in irc.lower(sch, args, simple_mode=True).script()
    func = irc.build(sch, args, "llvm")
    g = np.random.default_rng(0)
    a, b, c = (g.uniform(size=(64, 64)).astype(np.float32) for _ in range(3))
    out = irc.runtime.empty((64, 64), "float32")
    func(irc.tensor(a), irc.tensor(b), irc.tensor(c), out)
    np.testing.assert_allclose(out.numpy(), a @ b + c, rtol=1e-3)
    text = task.print_best(log_file, print_mode="schedule")
    assert text.startswith("#") or "sch.get_block" in text
    with pytest.raises(TuningError, match="prints code for the cuda target, but this task "
                                          "is for llvm"):
        task.print_best(log_file, print_mode="cuda")


def test_pre_transformed_layout_takes_packed_weights(tuned_matmul):
    task, log_file = tuned_matmul
    db = JSONDatabase(log_file)
    tuned = [r for r in db.records_of(task.tune_task.workload)
             if r.is_valid and "LayoutRewrite" in str(r.trace)]
    db.close()
    # The matmul's B is layout-free: the sketches rewrite its layout (5 of the 6 measured
    # candidates do), so none doing so is a regression, not a reason to skip.
    assert tuned, "no measured candidate rewrote the layout of the layout-free weight"
    sch, args = task.apply_best(log_file, layout_rewrite_option=LayoutRewriteOption
                                .REWRITE_FOR_PRE_TRANSFORMED)
    func = irc.build(sch, args, "llvm")
    g = np.random.default_rng(1)
    a, b, c = (g.uniform(size=(64, 64)).astype(np.float32) for _ in range(3))
    packed = task.pack_weights(sch, a, b, c, np.zeros((64, 64), np.float32))
    ts = [irc.tensor(x) for x in packed]
    func(*ts)
    np.testing.assert_allclose(ts[3].numpy(), a @ b + c, rtol=1e-3)


def test_resume_measures_nothing_twice(tuned_matmul, capsys):
    task, log_file = tuned_matmul
    before = JSONDatabase(log_file)
    n_before = len(before.records_of(task.tune_task.workload))
    before.close()
    cost_model = auto_scheduler.XGBModel()
    assert cost_model.update_from_file(log_file) == n_before
    policy = auto_scheduler.SketchPolicy(
        task, cost_model, params=SMALL,
        init_search_callbacks=[auto_scheduler.PreloadMeasuredStates(log_file)])
    ctx = auto_scheduler.LocalRPCMeasureContext(**RUNNER)
    task.tune(auto_scheduler.TuningOptions(
        num_measure_trials=3, runner=ctx.runner,
        measure_callbacks=[auto_scheduler.RecordToFile(log_file)]), search_policy=policy)
    ctx.close()
    out = capsys.readouterr().out
    assert f"SearchPolicy: Loaded {n_before} measurement records from {log_file}" in out
    after = JSONDatabase(log_file)
    keys = [r.trace_key for r in after.records_of(task.tune_task.workload)]
    after.close()
    assert len(keys) == n_before + 3 and len(set(keys)) == len(keys)


def test_seed_000_conv_layer(tmp_path):
    log_file = str(tmp_path / "conv2d.json")
    task = auto_scheduler.SearchTask(func=conv2d_layer,
                                     args=(1, 7, 7, 16, 8, 3, 3, (1, 1), (1, 1)), target="llvm")
    assert "conv2d_nchw(nn, ff, yy, xx) += " in str(task.compute_dag)
    ctx = auto_scheduler.LocalRPCMeasureContext(**RUNNER)
    task.tune(auto_scheduler.TuningOptions(
        num_measure_trials=4, runner=ctx.runner, verbose=0,
        measure_callbacks=[auto_scheduler.RecordToFile(log_file)]),
        search_policy=auto_scheduler.SketchPolicy(task, params=SMALL))
    del ctx
    sch, args = task.apply_best(log_file)
    func = irc.build(sch, args, "llvm")
    g = np.random.default_rng(2)
    data = g.uniform(size=(1, 8, 7, 7)).astype(np.float32)
    weight = g.uniform(size=(16, 8, 3, 3)).astype(np.float32)
    bias = g.uniform(size=(1, 16, 1, 1)).astype(np.float32)
    want = np.maximum(ref.conv2d_nchw(data, weight, padding=1) + bias, 0.0)
    out = irc.runtime.empty(want.shape, "float32")
    func(irc.tensor(data), irc.tensor(weight), irc.tensor(bias), out)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-3)


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 32)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


def test_seed_004_network_flow(tmp_path):
    mod, params = TinyNet().export_ir({"forward": {"x": nn.spec.Tensor((4, 32), "float32")}})
    g = np.random.default_rng(3)
    weights = {n: g.random(p.shape, dtype=np.float32) for n, p in params}
    tasks, task_weights = auto_scheduler.extract_tasks(mod, weights, "llvm")
    assert tasks and len(task_weights) == len(tasks) and all(w >= 1 for w in task_weights)
    for t in tasks:
        assert t.workload_key.startswith('["') and str(t.compute_dag)
    log_file = str(tmp_path / "net.json")
    ctx = auto_scheduler.LocalRPCMeasureContext(**RUNNER)
    tuner = auto_scheduler.TaskScheduler(tasks, task_weights)
    tuner.tune(auto_scheduler.TuningOptions(
        num_measure_trials=3 * len(tasks), runner=ctx.runner, verbose=0,
        num_measures_per_round=3, measure_callbacks=[auto_scheduler.RecordToFile(log_file)]),
        search_policy_params=SMALL)
    ctx.close()
    assert tuner.summary.total_trials == 3 * len(tasks)
    with auto_scheduler.ApplyHistoryBest(log_file):
        ex = auto_scheduler.compile(mod, target="llvm", params=weights)
    x = g.random((4, 32), dtype=np.float32)
    y = irc.vm.VirtualMachine(ex, irc.cpu())["forward"](irc.tensor(x)).numpy()
    want = np.maximum(x @ weights["fc1_weight"].T + weights["fc1_bias"], 0) \
        @ weights["fc2_weight"].T + weights["fc2_bias"]
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)


def test_option_and_usage_errors(tmp_path):
    with pytest.raises(TuningError, match="non-negative"):
        auto_scheduler.TuningOptions(num_measure_trials=-3)
    with pytest.raises(TuningError, match="only 'local'"):
        auto_scheduler.TuningOptions(runner="rpc")
    with pytest.raises(TuningError, match="registered"):
        auto_scheduler.SearchTask(func="no_such_workload", args=())
    task = auto_scheduler.SearchTask(func=matmul_add, args=(16, 16, 16, "float32"))
    with pytest.raises(TuningError, match="no tuning records"):
        task.apply_best(str(tmp_path / "missing.json"))
    with pytest.raises(TuningError, match="ApplyHistoryBest context"):
        auto_scheduler.compile(None)
    with pytest.raises(TuningError, match="already registered"):
        auto_scheduler.register_workload("matmul_add", lambda: None)


@pytest.mark.slow
@pytest.mark.parametrize("script, extra", [
    ("tune_seed002_matmul.py", ["--size", "64"]),
    ("tune_seed000_conv2d.py", []),
])
def test_seed_examples_run(tmp_path, script, extra):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(root, "examples", script)
    res = subprocess.run([sys.executable, path, "--trials", "3",
                          "--log-file", str(tmp_path / "log.json"), *extra],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Equivalent python schedule:" in res.stdout
    assert "SearchPolicy: Loaded 3 measurement records" in res.stdout

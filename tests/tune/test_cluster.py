"""Tuning on a Ray cluster (irc.tune.cluster): a real Ray instance on this machine whose
custom resources stand for distinct "device hosts". The runs show records in the same
format as local tuning, measurements only on runners whose resource matches the target,
a runner killed mid-run costing at most its candidate, and resuming measuring nothing
twice. The multi-node run (a node removed mid-run) is marked slow."""

from __future__ import annotations

import json
import os
import signal
import sys

import pytest

from irc.core.diagnostics import TuningError
from irc.core.target import Target
from irc.tune import ms
from irc.tune.cluster import RayBuilder, RayCluster, RayRunner, RunnerPool, connect
from irc.tune.cluster.connection import probe_address
from irc.tune.database import JSONDatabase
from irc.tune.measure import MeasureInput, MeasureResult

sys.path.insert(0, os.path.dirname(__file__))
from tune_workloads import matmul

# The cluster extra (pip install 'irc[cluster]'). The test extra installs it, so CI runs
# these tests; a machine set up with fewer extras (a GPU host) still collects the rest
# of the suite.
ray = pytest.importorskip("ray", reason="tuning on a cluster needs the 'cluster' extra "
                                        "(pip install 'irc[cluster]')")

# Generous time limits: these tests are about routing and losing workers, not about
# timeouts, and under a parallel test run (pytest -n) a build or measurement can wait
# for a core well past the defaults (a run had 2 of 10 candidates time out).
RUNNER = {"number": 1, "repeat": 1, "min_repeat_ms": 5.0, "check_correctness": True,
          "timeout": 60.0}
BUILD_TIMEOUT = 120.0


_LOCAL_RESOURCES = {"gpu_host": 1, "cpu_host": 2}


@pytest.fixture(scope="module")
def _ray_down_after_the_module():
    yield
    if ray.is_initialized():
        ray.shutdown()


@pytest.fixture
def local_ray(_ray_down_after_the_module):
    """A Ray instance of 2 CPUs, a "gpu_host" (1) and a "cpu_host" (2): the one running
    when it has those resources (tests share it), else a new one (a test that starts
    a cluster of its own shuts it down, which may leave Ray off or another instance on)."""
    if ray.is_initialized():
        resources = ray.cluster_resources()
        if all(resources.get(k) == v for k, v in _LOCAL_RESOURCES.items()):
            yield ray
            return
        ray.shutdown()
    connect("local", num_cpus=2, resources=dict(_LOCAL_RESOURCES))
    yield ray


def _records(work_dir) -> list[dict]:
    path = os.path.join(work_dir, "database_tuning_record.json")
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _trace_keys(db) -> list[str]:
    return [r.trace_key for r in db.get_all_records()]


@pytest.mark.slow  # about 20 s with the local cluster's start: CI runs under 20 minutes
@pytest.mark.usefixtures("local_ray")
def test_tune_on_the_cluster_routes_by_resource(tmp_path):
    runner = RayRunner(pools=[RunnerPool({"gpu_host": 1}, target="cuda"),
                              RunnerPool({"cpu_host": 1}, target="llvm")], **RUNNER)
    builder = RayBuilder(timeout=BUILD_TIMEOUT)
    func = matmul(32)
    try:
        db = ms.tune_tir(func, "llvm", str(tmp_path), 10, builder=builder, runner=runner,
                         verbose=0)
    finally:
        runner.close()
    records = db.get_all_records()
    assert len(records) == 10
    assert len(set(_trace_keys(db))) == 10
    assert sum(r.is_valid for r in records) >= 9
    # Every measurement ran on a runner holding the llvm pool's resource.
    assert len(runner.assignments) == 10
    for _, _, target, pool, _, _, resources in runner.assignments:
        assert pool == 1 and target.startswith("llvm")
        assert resources.get("cpu_host") == 1.0 and "gpu_host" not in resources
    # Two runners (cpu_host: 2) measured at once.
    assert len({a[5] for a in runner.assignments}) == 1  # one node here
    # The records are those of a local run: same fields, the measuring hardware's
    # fingerprint (this machine's).
    local = MeasureResult((1e-3,)).to_record(MeasureInput(func, None, "llvm"),
                                             task_name="main")
    for raw in _records(tmp_path):
        assert set(raw) == set(local.to_json())
    assert {r.fingerprint for r in records} == {Target("llvm").fingerprint()}


@pytest.mark.slow  # about 22 s: CI runs under 20 minutes
@pytest.mark.usefixtures("local_ray")
def test_killed_runner_costs_at_most_its_candidate_and_resume_measures_nothing_twice(tmp_path):
    killed = []

    with RayCluster(pools=[RunnerPool({"cpu_host": 1}, target="llvm")],
                    build_timeout=BUILD_TIMEOUT, **RUNNER) as cluster:
        runner = cluster.runner

        def kill_a_runner(inputs, results):
            # At the first result: a runner measuring a candidate if one is, else an
            # idle one (found dead when it is handed its next candidate).
            if killed:
                return
            alive = [w for w in runner.workers if not w.dead and w.identity]
            alive.sort(key=lambda w: w.busy is None)
            if alive:
                os.kill(alive[0].identity.pid, signal.SIGKILL)
                killed.append(alive[0].identity.pid)

        db = ms.tune_tir(matmul(24), "llvm", str(tmp_path), 12, builder=cluster.builder,
                         runner=runner, verbose=0)
        first = _trace_keys(db)
        # (the callback is the engine's; pass it through the MetaSchedule-style door)
        db2 = JSONDatabase.from_work_dir(str(tmp_path))
        from irc.tune.options import TuneComponents, TuneConfig
        from irc.tune.task import TuneTask
        from irc.tune.tuner import tune_tasks
        summary, _ = tune_tasks(
            [TuneTask(matmul(24), "llvm")], db2, TuneConfig(12, verbose=0),
            TuneComponents(builder=cluster.builder, runner=runner,
                           callbacks=(kill_a_runner,)))
        assert killed
        assert summary.total_trials == 12
        keys = _trace_keys(db2)
        # Resuming measured nothing twice, and the killed runner's candidate was measured
        # again on another runner (or recorded as an error): 12 new records either way.
        assert keys[:len(first)] == first
        assert len(keys) == len(first) + 12
        assert len(set(keys)) == len(keys)
        errors = [r for r in db2.get_all_records() if not r.is_valid]
        assert len(errors) <= 1
        assert runner.stats["retries"] >= 1 or errors
        assert runner.stats["replaced_actors"] >= 1
        db2.close()


@pytest.mark.usefixtures("local_ray")
def test_cluster_errors_are_irc_errors():
    with pytest.raises(TuningError, match="no tpu_host to give"):
        RayRunner(pools=[RunnerPool({"tpu_host": 1})], **RUNNER).pools  # noqa: B018
    runner = RayRunner(pools=[RunnerPool({"cpu_host": 1}, target="llvm")], **RUNNER)
    try:
        with pytest.raises(TuningError, match="no runner pool of the cluster measures"):
            runner.hardware_fingerprint("cuda")
        assert runner.hardware_fingerprint("llvm") == Target("llvm").fingerprint()
    finally:
        runner.close()
    with pytest.raises(TuningError, match="RunnerPool objects"):
        RayRunner(pools=[{"GPU": 1}])
    with pytest.raises(TuningError, match="number >= 1"):
        RayRunner(number=0)


def test_unreachable_cluster_address_is_an_error_at_once():
    # (connect() checks the address this way before Ray would retry for minutes)
    with pytest.raises(TuningError, match="nothing answers at the cluster address"):
        probe_address("127.0.0.1:1")
    with pytest.raises(TuningError, match="nothing answers at the cluster address"):
        probe_address("ray://127.0.0.1:1")
    with pytest.raises(TuningError, match="has no port number"):
        probe_address("head:abc")


def test_without_ray_the_error_says_how_to_install(monkeypatch):
    from irc.tune import cluster

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(TuningError, match="needs Ray") as info:
        cluster.import_ray()
    assert "irc[cluster]" in info.value.hint


@pytest.mark.slow
def test_a_node_lost_mid_run_costs_only_its_candidates(tmp_path):
    """A head and two worker nodes (real raylets on this machine), each worker node a
    "device host"; the node of one runner is removed during the run."""
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    nodes = [cluster.add_node(num_cpus=1, resources={"dev_host": 1}) for _ in range(2)]
    cluster.wait_for_nodes()
    removed = []
    try:
        connect(cluster.address)
        runner = RayRunner(pools=[RunnerPool({"dev_host": 1}, target="llvm")], **RUNNER)

        def remove_a_node(inputs, results):
            if not removed and len(runner.assignments) >= 3:
                cluster.remove_node(nodes[1])
                removed.append(nodes[1])

        from irc.tune.options import TuneComponents, TuneConfig
        from irc.tune.task import TuneTask
        from irc.tune.tuner import tune_tasks

        db = JSONDatabase.from_work_dir(str(tmp_path))
        summary, _ = tune_tasks([TuneTask(matmul(24), "llvm")], db, TuneConfig(12, verbose=0),
                                TuneComponents(builder=RayBuilder(timeout=BUILD_TIMEOUT),
                                               runner=runner, callbacks=(remove_a_node,)))
        assert removed
        assert summary.total_trials == 12
        keys = _trace_keys(db)
        assert len(keys) == 12 and len(set(keys)) == 12
        assert sum(not r.is_valid for r in db.get_all_records()) <= 2
        runner.close()
        db.close()
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.mark.usefixtures("local_ray")
def test_auto_scheduler_rpc_runner_is_a_cluster_runner():
    """Seed 004's RPCRunner(key, host, port): key = the measuring machines' resource."""
    from irc.tune import auto_scheduler

    host, port = ray.get_runtime_context().gcs_address.rsplit(":", 1)
    runner = auto_scheduler.RPCRunner("cpu_host", host, int(port), n_parallel=4,
                                      number=2, min_repeat_ms=10)
    try:
        assert isinstance(runner, RayRunner)
        assert runner.pools == [RunnerPool({"cpu_host": 1})]
        assert runner.runner_options["number"] == 2
        assert runner.hardware_fingerprint("llvm") == Target("llvm").fingerprint()
    finally:
        runner.close()
    with pytest.raises(TuningError, match="key names"):
        auto_scheduler.RPCRunner("", host, int(port))

"""``irc.tune.ms``: tune_tir / tune_relax / compile_relax and the tuning passes of seed
003; applying a database to graph modules (tuned schedules in place, layout-rewritten
weights packed once)."""

from __future__ import annotations

import random

import numpy as np
import pytest

import irc
from irc import passes, te
from irc.core.diagnostics import TuningError
from irc.frontend import nn
from irc.target import Target
from irc.tune import JSONDatabase, TuningRecord, ms
from irc.tune.graph import apply_database, graph_tasks, prepare_graph
from irc.tune.space import SpaceGenerator

SMALL = {"population_size": 16, "num_iters": 1, "init_min_unmeasured": 12}


class MLP(nn.Module):
    """Seed 003's model, smaller."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(32, 10, bias=False)

    def forward(self, x):
        return self.fc2(self.relu1(self.fc1(x)))


def mlp():
    mod, params = MLP().export_ir({"forward": {"x": nn.spec.Tensor((1, 64), "float32")}})
    g = np.random.default_rng(0)
    weights = {name: g.random(p.shape, dtype=np.float32) for name, p in params}
    return mod, weights


def mlp_reference(x, w):
    return np.maximum(x @ w["fc1_weight"].T + w["fc1_bias"], 0) @ w["fc2_weight"].T


def sampled_record(task, seed=0, cost=1e-6):
    """A record of a sampled candidate of ``task`` (no measurement: tests of applying)."""
    space = SpaceGenerator(task.target)
    sketch = next(s for s in space.generate(task.func) if "cache_write" in
                  s.trace.as_python()) if len(space.generate(task.func)) > 1 else \
        space.generate(task.func)[0]
    cand = space.sample(task.func, sketch, random.Random(seed))
    t = Target.canon(task.target)
    return TuningRecord(workload_key=task.workload.key, trace=cand.trace_json,
                        run_secs=(cost,), target=str(t), fingerprint=t.fingerprint())


def test_tune_tir_then_apply_to_loop_functions(tmp_path):
    a = te.placeholder((64, 64), name="A")
    b = te.placeholder((64, 64), name="B")
    k = te.reduce_axis((0, 64), name="k")
    c = te.compute((64, 64), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C",
                   attrs={"layout_free_placeholders": [b]})
    func = te.create_prim_func([a, b, c])
    db = ms.tune_tir(func, "llvm", str(tmp_path), 6, num_trials_per_iter=6, verbose=0)
    assert (tmp_path / "database_tuning_record.json").exists()
    assert len(db) == 6
    mod = apply_database(irc.IRModule(functions={"main": func}), db, "llvm")
    f = mod["main"]
    assert f.attrs.get("tir.is_scheduled")
    # Loop-function modules keep the caller's layouts (the weight is packed inside).
    x = np.random.default_rng(1).random((64, 64), dtype=np.float32)
    out = irc.tensor(np.zeros((64, 64), np.float32))
    irc.build(f, target="llvm")(irc.tensor(x), irc.tensor(x), out)
    np.testing.assert_allclose(out.numpy(), x @ x, rtol=1e-4, atol=1e-4)
    db.close()


def test_seed_003_tuning_passes(tmp_path):
    mod, w = mlp()
    with Target("llvm"):
        tuned = passes.Sequential([
            passes.get_pipeline("zero"),
            passes.MetaScheduleTuneTIR(work_dir=str(tmp_path), max_trials_global=6,
                                       search_options=SMALL, verbose=0),
            passes.MetaScheduleApplyDatabase(work_dir=str(tmp_path)),
        ])(mod)
    scheduled = [gv.name_hint for gv, f in tuned.functions.items()
                 if getattr(f, "attrs", {}).get("tir.is_scheduled")]
    assert "matmul" in scheduled
    ex = irc.compile(tuned, target="llvm")
    vm = irc.vm.VirtualMachine(ex, irc.cpu())
    x = np.random.default_rng(2).random((1, 64), dtype=np.float32)
    y = vm["forward"](irc.tensor(x), *[irc.tensor(w[n]) for n in
                                        ("fc1_weight", "fc1_bias", "fc2_weight")]).numpy()
    np.testing.assert_allclose(y, mlp_reference(x, w), rtol=1e-4, atol=1e-4)


def test_tuning_passes_need_a_target(tmp_path):
    mod, _ = mlp()
    with pytest.raises(TuningError, match="needs a target"):
        ms.MetaScheduleTuneTIR(str(tmp_path), 4)(mod)
    with pytest.raises(TuningError, match="needs a target"):
        ms.MetaScheduleApplyDatabase(str(tmp_path))(mod)
    with pytest.raises(TuningError, match="work_dir or database"):
        ms.MetaScheduleApplyDatabase()


def test_constant_weights_are_packed_at_compile_time(tmp_path):
    mod, w = mlp()
    prepared = prepare_graph(mod, w, "llvm")
    tasks = graph_tasks(prepared, "llvm")
    mm = next(t for t in tasks if t.func.attrs.get("layout_free_buffers"))
    db = JSONDatabase(str(tmp_path / "db.json"), target="llvm")
    db.commit_workload(mm.workload)
    db.commit_record(sampled_record(mm))
    applied = apply_database(prepared, db, "llvm")
    rewritten = [f for f in applied.functions.values()
                 if getattr(f, "attrs", {}).get("layout_rewrite")]
    assert rewritten, "the sampled schedule packs the constant weight"
    assert "layout_rewrite_preproc" not in applied.names()  # packed now, not at run time
    ex = ms.compile_relax(db, mod, "llvm", w)
    x = np.random.default_rng(3).random((1, 64), dtype=np.float32)
    y = irc.vm.VirtualMachine(ex, irc.cpu())["forward"](irc.tensor(x)).numpy()
    np.testing.assert_allclose(y, mlp_reference(x, w), rtol=1e-4, atol=1e-4)
    db.close()


PARAM_WEIGHT = """
@I.ir_module
class Module:
    @T.prim_func
    def mm(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
        T.func_attr({"layout_free_buffers": [1], "tir.noalias": True})
        for i, j, k in T.grid(32, 32, 32):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(C[vi, vj])
                with T.init():
                    C[vi, vj] = T.float32(0.0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @R.function
    def main(x: R.Tensor((32, 32), dtype="float32"), w: R.Tensor((32, 32), dtype="float32")) -> R.Tensor((32, 32), dtype="float32"):
        cls = Module
        with R.dataflow():
            y = R.call_tir(cls.mm, (x, w), out_sinfo=R.Tensor((32, 32), dtype="float32"))
            R.output(y)
        return y
"""  # noqa: E501


def test_parameter_weights_get_a_packing_call(tmp_path):
    mod = irc.parse(PARAM_WEIGHT)
    tasks = graph_tasks(mod, "llvm")
    assert len(tasks) == 1
    db = JSONDatabase(str(tmp_path / "db.json"), target="llvm")
    db.commit_workload(tasks[0].workload)
    db.commit_record(sampled_record(tasks[0], seed=4))
    with Target("llvm"):
        applied = ms.MetaScheduleApplyDatabase(database=db)(mod)
    assert any(n.startswith("layout_rewrite_preproc") for n in applied.names())
    ex = irc.compile(applied, target="llvm")
    g = np.random.default_rng(5)
    x, wt = (g.random((32, 32), dtype=np.float32) for _ in range(2))
    y = irc.vm.VirtualMachine(ex, irc.cpu())["main"](irc.tensor(x), irc.tensor(wt)).numpy()
    np.testing.assert_allclose(y, x @ wt, rtol=1e-4, atol=1e-4)
    db.close()


def test_without_records_compile_relax_keeps_the_default(tmp_path):
    mod, w = mlp()
    ex = ms.compile_relax(str(tmp_path), mod, "llvm", w)
    x = np.random.default_rng(6).random((1, 64), dtype=np.float32)
    y = irc.vm.VirtualMachine(ex, irc.cpu())["forward"](irc.tensor(x)).numpy()
    np.testing.assert_allclose(y, mlp_reference(x, w), rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_tune_relax_then_compile_relax(tmp_path):
    mod, w = mlp()
    db = ms.tune_relax(mod, w, "llvm", str(tmp_path), 16, num_trials_per_iter=4, verbose=0)
    assert len(db) >= 8
    ex = ms.compile_relax(db, mod, "llvm", w)
    x = np.random.default_rng(7).random((1, 64), dtype=np.float32)
    y = irc.vm.VirtualMachine(ex, irc.cpu())["forward"](irc.tensor(x)).numpy()
    np.testing.assert_allclose(y, mlp_reference(x, w), rtol=1e-4, atol=1e-4)
    db.close()


def test_tune_tir_rejects_other_objects(tmp_path):
    with pytest.raises(TuningError, match="PrimFunc or an IRModule"):
        ms.tune_tir("main", "llvm", str(tmp_path), 4)



def test_tune_relax_times_cpu_candidates_with_cold_caches(monkeypatch, tmp_path):
    """Without a runner, network tuning on the CPU flushes the caches before each timed
    run (one run per repeat), as the kernels of a network find them; a given runner is
    used as it is."""
    seen = []

    def fake_run(tasks, work_dir, target, max_trials, database, **options):
        seen.append(options["runner"])
        return None

    monkeypatch.setattr(ms, "_run", fake_run)
    mod, w = mlp()
    ms.tune_relax(mod, w, "llvm", str(tmp_path), max_trials_global=1)
    runner = seen[-1]
    assert runner.enable_cpu_cache_flush and runner.number == 1 and runner.repeat == 3
    mine = irc.tune.LocalRunner()
    try:
        ms.tune_relax(mod, w, "llvm", str(tmp_path), max_trials_global=1, runner=mine)
        assert seen[-1] is mine and not mine.enable_cpu_cache_flush
    finally:
        mine.close()


def _linked_modules(monkeypatch):
    """Spy on the builds compile_relax makes: the modules it links, in order."""
    import irc.tune.graph as graph

    seen = []
    real = graph.link

    def spy(mod, target):
        seen.append(mod)
        return real(mod, target)

    monkeypatch.setattr(graph, "link", spy)
    return seen


def _tuned_mlp(tmp_path):
    mod, w = mlp()
    prepared = prepare_graph(mod, w, "llvm")
    mm = next(t for t in graph_tasks(prepared, "llvm") if t.func.attrs.get("layout_free_buffers"))
    db = JSONDatabase(str(tmp_path / "db.json"), target="llvm")
    db.commit_workload(mm.workload)
    db.commit_record(sampled_record(mm))
    return mod, w, db, mm.name


@pytest.mark.parametrize("tuned_time", [2e-6, 0.99e-6, 0.5e-6])
def test_compile_relax_keeps_the_default_of_kernels_not_faster_in_the_network(
        tmp_path, monkeypatch, caplog, tuned_time):
    import irc.tune.network_check as nc

    mod, w, db, name = _tuned_mlp(tmp_path)
    # Slower, a tie within the margin (both keep the default), clearly faster.
    set_aside = tuned_time > (1 - nc.MARGIN) * 1e-6

    def fake_times(vms, entry, args):
        assert entry == "forward" and [a.shape for a in args][0] == (1, 64)
        return [{name: [1e-6] * 3}, {name: [tuned_time] * 3}]

    monkeypatch.setattr(nc, "_kernel_times", fake_times)
    monkeypatch.setattr(nc, "_run_times", lambda vms, entry, args: [1e-3, 0.9e-3])
    linked = _linked_modules(monkeypatch)
    with caplog.at_level("INFO", logger="irc.tune"):
        ex = ms.compile_relax(db, mod, "llvm", w)
    from irc.ir import structural_equal

    kernel = [m.functions[m.get_global_var(name)] for m in linked]
    # The tuned build, then the default build it is compared with ...
    assert not structural_equal(kernel[0], kernel[1])
    if set_aside:
        # ... then a build with the tuned record set aside: the default kernel.
        assert len(linked) == 3 and structural_equal(kernel[2], kernel[1])
        assert "keep it" in caplog.text and name in caplog.text
    else:
        assert len(linked) == 2  # the tuned build is returned
    x = np.random.default_rng(8).random((1, 64), dtype=np.float32)
    y = irc.vm.VirtualMachine(ex, irc.cpu())["forward"](irc.tensor(x)).numpy()
    np.testing.assert_allclose(y, mlp_reference(x, w), rtol=1e-4, atol=1e-4)
    db.close()


@pytest.mark.parametrize("tuned_run", [1.5e-3, 1e-3])
def test_compile_relax_returns_the_default_build_when_the_tuned_one_is_not_faster(
        tmp_path, monkeypatch, caplog, tuned_run):
    import irc.tune.network_check as nc

    mod, w, db, name = _tuned_mlp(tmp_path)
    # Every tuned kernel passes the kernel check, but the network as a whole is slower,
    # or as fast: a tie goes to the default build.
    monkeypatch.setattr(nc, "_kernel_times",
                        lambda vms, entry, args: [{name: [1e-6]}, {name: [0.5e-6]}])
    monkeypatch.setattr(nc, "_run_times", lambda vms, entry, args: [1e-3, tuned_run])
    returned = []
    real = nc.not_faster_as_a_whole

    def spy(default_ex, tuned_ex, entry, args):
        returned.append(default_ex)
        return real(default_ex, tuned_ex, entry, args)

    monkeypatch.setattr("irc.tune.graph.not_faster_as_a_whole", spy)
    with caplog.at_level("INFO", logger="irc.tune"):
        ex = ms.compile_relax(db, mod, "llvm", w)
    assert ex is returned[0]  # the default build
    assert "the default build is kept" in caplog.text
    x = np.random.default_rng(9).random((1, 64), dtype=np.float32)
    y = irc.vm.VirtualMachine(ex, irc.cpu())["forward"](irc.tensor(x)).numpy()
    np.testing.assert_allclose(y, mlp_reference(x, w), rtol=1e-4, atol=1e-4)
    db.close()


def test_the_network_check_compares_kernels_round_by_round(monkeypatch):
    import irc.tune.network_check as nc

    # A slow phase of the machine covers rounds 1-2 and the tuned build's third round:
    # the two builds' medians would make the tuned kernel "k" 2.7x slower, while round
    # by round it is 10% faster; "j" is slower in every round.
    default = {"k": [3.0, 3.0, 1.0, 1.0, 1.0], "j": [1.0] * 5}
    tuned = {"k": [2.7, 2.7, 2.7, 0.9, 0.9], "j": [1.1] * 5}
    monkeypatch.setattr(nc, "VirtualMachine", lambda ex: ex)
    monkeypatch.setattr(nc, "_kernel_times", lambda vms, entry, args: [default, tuned])
    assert nc.not_faster_in_network(None, None, {"k", "j", "missing"}, "main", []) == {"j"}


def test_network_check_profiles_both_builds_and_can_be_turned_off(tmp_path, monkeypatch):
    mod, w, db, name = _tuned_mlp(tmp_path)
    linked = _linked_modules(monkeypatch)
    ms.compile_relax(db, mod, "llvm", w, check_in_network=False)
    assert len(linked) == 1
    # For real (no fakes): the check runs the network and names only tuned kernels.
    from irc.tune.network_check import not_faster_as_a_whole, not_faster_in_network

    tuned_ex = irc.vm.link(linked[0], "llvm")
    default_ex = ms.compile_relax(str(tmp_path / "empty"), mod, "llvm", w)
    args = tuned_ex.random_inputs("forward")
    assert not_faster_in_network(default_ex, tuned_ex, {name}, "forward", args) <= {name}
    # (and times the whole network for real: which build wins is the machine's call)
    assert isinstance(not_faster_as_a_whole(default_ex, tuned_ex, "forward", args), bool)
    db.close()

"""The tuning seams as types: a search strategy plugged into the engine, the options
objects, jobs and results of the candidate pool, ``CostModel.is_trained``, the code
generator's ``can_build``; and the decisions the tuner makes on its own (a failing
default rule, an unreplayable record, a failing search worker, an unsearchable task),
logged and counted in the tuning summary."""

from __future__ import annotations

import importlib
import inspect
import io
import logging
import pickle
import pkgutil
import random

import numpy as np
import pytest
from tune_workloads import matmul

import irc
from irc import te
from irc.codegen import can_build
from irc.codegen.build import _BUILDERS
from irc.core.diagnostics import ScheduleError, TuningError
from irc.dlight import ScheduleRule
from irc.dlight.cpu import default_rules
from irc.tune import (
    EvolutionaryStrategy,
    JSONDatabase,
    LocalRunner,
    MeasureErrorKind,
    NumpyModel,
    RandomModel,
    SearchContext,
    SearchOptions,
    TuneComponents,
    TuneConfig,
    TuneTask,
    TuningCounts,
    TuningEngine,
    TuningRecord,
    XGBModel,
    ms,
    space,
)
from irc.tune import engine as engine_mod
from irc.tune.features import NUM_FEATURES
from irc.tune.record import trace_key
from irc.tune.search_pool import EvaluatorPool, Job, JobKind, JobResult
from irc.tune.strategy import featurize
from irc.tune.task import default_variant_traces
from irc.tune.tuner import options_from_keywords, tune_tasks


@pytest.fixture(scope="module")
def runner():
    r = LocalRunner(timeout=2.0, number=1, repeat=1, min_repeat_ms=1, check_correctness=True)
    yield r
    r.close()


class RandomSampling:
    """A toy search strategy: uniformly random samples of the sketches, no cost model."""

    def __init__(self):
        self.searches: list[_RandomSearch] = []

    def new_search(self, task, context):
        search = _RandomSearch(task, context)
        self.searches.append(search)
        return search


class _RandomSearch:
    def __init__(self, task, context: SearchContext):
        self.func = task.func
        self.space = context.space
        self.rng = random.Random(context.seed)
        self.sketches = context.space.generate(task.func)
        self.seen: set[str] = set()
        self.costs: list[float] = []
        self.scored = 0
        self.score_seconds = 0.0

    def generate(self, num):
        out = []
        for _ in range(20 * num):
            if len(out) == num:
                break
            cand = self.space.sample(self.func, self.rng.choice(self.sketches), self.rng)
            if cand is None or cand.trace_key in self.seen or not featurize(cand):
                continue
            self.seen.add(cand.trace_key)
            out.append(cand)
        self.scored += len(out)
        return out

    def add_measured(self, cand, cost):
        self.costs.append(cost)

    def mark_measured_trace(self, trace_key):
        self.seen.add(trace_key)


class Unsearchable:
    """A strategy that cannot search anything."""

    def new_search(self, task, context):
        raise TuningError(f"no search for {task.name}")


def _config(trials, **kw):
    return TuneConfig(trials, **{"num_trials_per_iter": 4, "verbose": 0, "search_workers": 0,
                                 **kw})


def test_a_toy_strategy_plugs_into_the_tuner(tmp_path, runner):
    strategy = RandomSampling()
    task = TuneTask(matmul(16), "llvm", name="mm16")
    db_path = str(tmp_path / "toy.json")
    # No variants of the default schedule: every round is the strategy's.
    summary, engine = tune_tasks([task], db_path, _config(5, default_variants=0),
                                 TuneComponents(runner=runner, cost_model="random",
                                                search_strategy=strategy))
    assert summary.total_trials == 5
    assert len(strategy.searches) == 1
    search = strategy.searches[0]
    assert len(search.costs) == 4  # the default schedule is the fifth trial
    assert all(np.isfinite(search.costs))
    with JSONDatabase(db_path) as db:
        keys = {r.trace_key for r in db.records_of(task.workload)}
    assert len(keys) == 5 and keys <= search.seen  # the default was marked measured too
    assert summary.counts == TuningCounts()
    assert engine.search_speed().scored == 4


def test_the_default_rules_variants_come_before_the_strategys_candidates(tmp_path, runner):
    # Tuning starts from the default schedule: its first rounds measure the default
    # rule's neighbouring plans, then the strategy gets the rest of the budget.
    strategy = RandomSampling()
    task = TuneTask(matmul(16), "llvm", name="mm16")
    variants = default_variant_traces(task.func, task.target)
    assert 0 < len(variants) <= 16
    db_path = str(tmp_path / "v.json")
    summary, _ = tune_tasks([task], db_path, _config(1 + len(variants) + 4),
                            TuneComponents(runner=runner, cost_model="random",
                                           search_strategy=strategy))
    assert summary.total_trials == 1 + len(variants) + 4
    search = strategy.searches[0]
    assert len(search.costs) == 4
    with JSONDatabase(db_path) as db:
        records = db.records_of(task.workload)
    by_key = {r.trace_key: r for r in records}
    assert {trace_key(v) for v in variants} <= set(by_key)
    assert all(by_key[trace_key(v)].is_valid for v in variants)
    assert {trace_key(v) for v in variants} <= search.seen  # the search knows of them
    # A resumed run measures none of them again.
    summary, _ = tune_tasks([task], db_path, _config(4, default_variants=16),
                            TuneComponents(runner=runner, cost_model="random",
                                           search_strategy=RandomSampling()))
    with JSONDatabase(db_path) as db:
        keys = [r.trace_key for r in db.records_of(task.workload)]
    assert len(keys) == len(set(keys))


def test_an_unsearchable_task_keeps_its_default_and_is_counted(tmp_path, runner, caplog):
    task = TuneTask(matmul(16), "llvm", name="mm16")
    variants = default_variant_traces(task.func, task.target)
    assert variants
    with caplog.at_level(logging.WARNING, logger="irc.tune"):
        summary, _ = tune_tasks([task], str(tmp_path / "u.json"), _config(64),
                                TuneComponents(runner=runner, cost_model="random",
                                               search_strategy=Unsearchable()))
    # The default schedule and the default rule's variants only.
    assert summary.total_trials == 1 + len(variants)
    assert summary.counts.default_fallbacks == 1
    assert "1 task was not searched (default schedules only)" in summary.counts.describe()
    msgs = [r.getMessage() for r in caplog.records if r.name.startswith("irc.tune")]
    assert any("mm16 cannot be searched; only its default schedule and the default rule's "
               "variants are measured: no search for mm16" in m for m in msgs)


class _Broken(ScheduleRule):
    target_keys = ("cpu",)

    def apply(self, func, target, tunable=False):
        raise ScheduleError("half way and then no more")


def test_a_failing_default_rule_is_logged_and_counted(tmp_path, runner, caplog, monkeypatch):
    monkeypatch.setattr(engine_mod, "default_rules_for",
                        lambda target: [_Broken(), *default_rules()])
    out = io.StringIO()
    task = TuneTask(matmul(16), "llvm", name="mm16")
    with caplog.at_level(logging.INFO):
        summary, engine = tune_tasks([task], str(tmp_path / "r.json"),
                                     _config(1, verbose=1, out=out),
                                     TuneComponents(runner=runner, cost_model="random"))
    assert summary.counts.rule_failures == 1
    assert engine.default_trace(0) is not None  # the next rule scheduled it
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.name for r in warnings] == ["irc.dlight.apply"]
    assert warnings[0].getMessage() == (
        "default schedule rule _Broken failed on function mm16 (trying the next rule): "
        "half way and then no more")
    done = [r.getMessage() for r in caplog.records if r.name == "irc.tune.tuner"
            and r.getMessage().startswith("Tuning done")]
    assert len(done) == 1 and done[0].endswith("; 1 default schedule rule failed")
    assert "1 default schedule rule failed" in out.getvalue()


def _renamed_matmul(n, name):
    """A matmul whose output block has another name: its traces do not replay onto
    ``matmul(n)``."""
    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    r = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name=name)
    return te.create_prim_func([a, b, c])


def _records(task, n_good, n_bad):
    """Records of ``task``: ``n_good`` sampled candidates and ``n_bad`` traces of another
    function (they cannot be replayed onto it)."""
    gen = space.SpaceGenerator("llvm")
    rng = random.Random(3)
    target = irc.target.Target("llvm")
    out = []
    for func, n in ((task.func, n_good), (_renamed_matmul(16, "D"), n_bad)):
        sketches = gen.generate(func)
        made = 0
        while made < n:
            cand = gen.sample(func, sketches[made % len(sketches)], rng)
            if cand is None:
                continue
            out.append(TuningRecord(workload_key=task.workload.key, trace=cand.trace_json,
                                    run_secs=(1e-4 * (made + 1),), target=str(target),
                                    fingerprint=target.fingerprint()))
            made += 1
    return out


def test_unreplayable_records_are_logged_and_counted(tmp_path, caplog):
    task = TuneTask(matmul(16), "llvm", name="mm16")
    records = _records(task, 3, 2)
    other = JSONDatabase(str(tmp_path / "other.json"))
    other.commit_workload(task.workload)
    other.commit_records(records)
    strategy = RandomSampling()
    with caplog.at_level(logging.WARNING, logger="irc.tune"):
        with TuningEngine([task], str(tmp_path / "own.json"), _config(0),
                          TuneComponents(cost_model="random", search_strategy=strategy)
                          ) as engine:
            used = engine.preload(0, other)
            counts = engine.counts()
    other.close()
    assert used == 3
    assert counts.replay_failures == 2
    assert len(strategy.searches[0].costs) == 3
    # The unreplayable ones count as measured too.
    assert strategy.searches[0].seen == {r.trace_key for r in records}
    msgs = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("task mm16: 2 of 5 measurement records cannot be replayed")
               for m in msgs)


def test_cost_model_skips_unreplayable_records_visibly(tmp_path, caplog):
    task = TuneTask(matmul(16), "llvm", name="mm16")
    path = str(tmp_path / "records.json")
    with JSONDatabase(path) as db:
        db.commit_workload(task.workload)
        db.commit_records(_records(task, 2, 1))
    model = RandomModel()
    with caplog.at_level(logging.WARNING, logger="irc.tune"):
        assert model.update_from_file(path) == 2
    assert model.replay_failures == 1
    [rec] = [r for r in caplog.records if r.name == "irc.tune.cost_model.base"]
    assert rec.levelno == logging.WARNING
    assert rec.getMessage().startswith(f"cost model: 1 of 3 records in {path} cannot be "
                                       "replayed onto their workload and were skipped "
                                       "(first: record ")
    assert "no block named 'D'" in rec.getMessage()


def test_a_failing_search_worker_is_logged_and_counted(caplog):
    pool = EvaluatorPool(2)
    jobs = [Job(JobKind.SAMPLE, 0, k) for k in range(8)]
    try:
        with caplog.at_level(logging.WARNING, logger="irc.tune"):
            # A setup the workers cannot unpickle: each fails, its share runs here.
            out = pool.run("wl-key", lambda: b"not a pickle", jobs,
                           lambda js: [None] * len(js))
    finally:
        pool.close()
    assert out == [None] * 8
    assert pool.failures == 2
    msgs = sorted(r.getMessage() for r in caplog.records
                  if r.name == "irc.tune.search_pool")
    assert len(msgs) == 2
    assert msgs[0].startswith("search worker search-0 failed on workload wl-key; its 4 jobs "
                              "run in the tuning process instead: ")


def test_counts_describe_what_went_wrong():
    assert TuningCounts().describe() == "" and TuningCounts().total == 0
    counts = TuningCounts(build_failures=3, replay_failures=2, rule_failures=1)
    assert counts.describe() == ("3 candidates failed to build, 2 records could not be "
                                 "replayed, 1 default schedule rule failed")
    assert counts.total == 6


def test_engine_counts_group_measure_errors(tmp_path):
    with TuningEngine([TuneTask(matmul(16), "llvm")], str(tmp_path / "c.json"), _config(0),
                      TuneComponents(cost_model="random")) as engine:
        engine.error_counts.update({MeasureErrorKind.BUILD_ERROR: 2,
                                    MeasureErrorKind.BUILD_TIMEOUT: 1,
                                    MeasureErrorKind.RUN_TIMEOUT: 1})
        assert engine.counts() == TuningCounts(build_failures=3, run_failures=1)


def test_jobs_and_results_are_named_and_pickle():
    job = Job(JobKind.MUTATE, 2, 77, [["x"]])
    assert (job.kind, job.sketch, job.seed, job.parent) == (JobKind.MUTATE, 2, 77, [["x"]])
    assert Job(JobKind.SAMPLE, 0, 1).parent is None
    assert pickle.loads(pickle.dumps(job)) == job
    res = JobResult([["trace"]], np.zeros((1, NUM_FEATURES), np.float32))
    again = pickle.loads(pickle.dumps(res))
    assert again.trace_json == [["trace"]] and again.features.shape == (1, NUM_FEATURES)


def test_cost_models_say_whether_they_are_trained():
    feats = [np.random.default_rng(i).random((2, NUM_FEATURES)).astype(np.float32)
             for i in range(6)]
    costs = [1e-3 * (i + 1) for i in range(6)]
    for model in (XGBModel(seed=0), NumpyModel(seed=0)):
        assert not model.is_trained
        model.update_features(feats[:1], ["w"], costs[:1])
        assert not model.is_trained  # one sample: nothing to rank
        model.update_features(feats[1:], ["w"] * 5, costs[1:])
        assert model.is_trained
    random_model = RandomModel()
    random_model.update_features(feats, ["w"] * 6, costs)
    assert not random_model.is_trained  # random scores never carry anything learned


def test_the_code_generator_says_what_it_can_build(monkeypatch):
    assert can_build("llvm") and can_build(irc.target.Target("llvm"))
    assert can_build("cuda")  # NVRTC compiles CUDA C without a GPU
    monkeypatch.delitem(_BUILDERS, "cuda")
    assert not can_build("cuda")


def test_keyword_options_become_config_and_components():
    config, components = options_from_keywords(
        10, strategy="round-robin", time_budget=5.0, verbose=0, task_weights=[1, 2],
        search_options={"evolutionary_search_population": 8, "num_iters": 1})
    assert config == TuneConfig(10, time_budget=5.0, task_scheduling="round-robin",
                                verbose=0, task_weights=(1.0, 2.0))
    assert components.search_strategy == EvolutionaryStrategy(
        SearchOptions(population_size=8, num_iters=1))
    assert components.cost_model == "auto" and components.builder is None
    with pytest.raises(TuningError, match="unknown tuning option 'max_trials'"):
        ms.MetaScheduleTuneTIR("work", 4, max_trials=3)


def test_options_are_frozen():
    config = TuneConfig(8)
    with pytest.raises(AttributeError):
        config.max_trials_global = 9
    assert SearchOptions().population_size == 192


def test_no_two_irc_classes_share_the_name_schedule_rule_or_mutator():
    """``irc.dlight.ScheduleRule`` (a default rule) and ``irc.core.functor.Mutator`` (an
    IR rewriter) keep their names; the search space's are ``SketchRule`` and
    ``TraceMutator``."""
    found: dict[str, set[str]] = {}
    for info in pkgutil.walk_packages(irc.__path__, "irc."):
        if info.name.endswith("__main__") or info.name == "irc.tune._worker":
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional dependency is missing
            continue
        for obj in vars(module).values():
            if inspect.isclass(obj) and obj.__name__ in ("ScheduleRule", "Mutator") \
                    and obj.__module__.startswith("irc."):
                found.setdefault(obj.__name__, set()).add(f"{obj.__module__}.{obj.__name__}")
    assert found == {"ScheduleRule": {"irc.dlight.base.ScheduleRule"},
                     "Mutator": {"irc.core.functor.Mutator"}}
    assert space.SketchRule.__name__ == "SketchRule"
    assert space.TraceMutator.__name__ == "TraceMutator"

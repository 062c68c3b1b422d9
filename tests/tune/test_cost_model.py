"""Cost models: ranking learned from synthetic and measured data, persistence, the numpy
fallback, and xgboost staying optional."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from tune_workloads import add_one, matmul, tiling_trace

import irc.tune.cost_model as cm
from irc.core.diagnostics import MissingDependencyError, TuningError
from irc.target import Target
from irc.tune import (
    JSONDatabase,
    MeasureInput,
    MeasureResult,
    NumpyModel,
    RandomModel,
    TuningRecord,
    Workload,
    XGBModel,
    create_cost_model,
)
from irc.tune.cost_model import normalized_throughput, pairwise_logistic
from irc.tune.features import NUM_FEATURES


def synthetic(n: int, group: str, rng: np.random.Generator, weights: np.ndarray):
    """Candidates of 1-3 stores whose time falls with a nonlinear function of a few
    features (as tile sizes and vector widths would make it)."""
    feats, costs = [], []
    for _ in range(n):
        rows = rng.uniform(0, 4, size=(int(rng.integers(1, 4)), NUM_FEATURES)).astype(np.float32)
        goodness = np.tanh(rows[:, :8] @ weights).sum() + 0.5 * (rows[:, 8] > 2).sum()
        feats.append(rows)
        costs.append(float(np.exp(-goodness)))
    return feats, [group] * n, costs


def spearman(a, b) -> float:
    ra = np.argsort(np.argsort(a))
    rb = np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


@pytest.mark.parametrize("make", [lambda: XGBModel(seed=0), lambda: NumpyModel(seed=0)],
                         ids=["xgb", "numpy"])
def test_models_learn_a_ranking(make):
    rng = np.random.default_rng(0)
    weights = rng.normal(size=8) / 4
    model = make()
    feats, groups, costs = [], [], []
    for g in ("w0", "w1"):
        f, gr, c = synthetic(120, g, rng, weights)
        feats += f
        groups += gr
        costs += c
    model.update_features(feats, groups, costs)
    test_f, _, test_c = synthetic(100, "w2", rng, weights)
    scores = model.predict_features(test_f)
    assert scores.shape == (100,)
    assert spearman(scores, -np.asarray(test_c)) > 0.6
    assert model.num_samples == 240


def test_random_model_is_seeded_and_learns_nothing():
    feats = [np.zeros((1, NUM_FEATURES), np.float32)] * 5
    a = RandomModel(seed=1).predict_features(feats)
    b = RandomModel(seed=1).predict_features(feats)
    assert np.array_equal(a, b) and np.all((a >= 0) & (a < 1))


def test_untrained_models_give_random_scores():
    feats = [np.zeros((2, NUM_FEATURES), np.float32)] * 4
    for model in (XGBModel(seed=0), NumpyModel(seed=0)):
        assert model.predict_features(feats).shape == (4,)
        # One sample per workload: nothing to rank yet.
        model.update_features(feats[:2], ["a", "b"], [1.0, 2.0])
        assert model.predict_features(feats).shape == (4,)


@pytest.mark.parametrize("cls", [XGBModel, NumpyModel, RandomModel])
def test_save_and_load(tmp_path, cls):
    rng = np.random.default_rng(1)
    model = cls(seed=0)
    model.update_features(*synthetic(40, "w", rng, rng.normal(size=8)))
    probe, _, _ = synthetic(10, "w", rng, rng.normal(size=8))
    path = str(tmp_path / "model.bin")
    model.save(path)
    other = cls(seed=0)
    other.load(path)
    if cls is not RandomModel:
        np.testing.assert_allclose(model.predict_features(probe), other.predict_features(probe),
                                   rtol=1e-5)
        assert other.num_samples == 40
    with pytest.raises(Exception, match="cost model"):
        (NumpyModel if cls is not NumpyModel else XGBModel)().load(path)


@pytest.mark.parametrize("cls", [XGBModel, NumpyModel])
@pytest.mark.parametrize("damage", [
    lambda d: d[:len(d) // 2],
    lambda d: b"",
    # "version needed" of the first central-directory entry, then its compression method.
    lambda d: d[:d.index(b"PK\x01\x02") + 6] + b"\x54\x00" + d[d.index(b"PK\x01\x02") + 8:],
    lambda d: d[:d.index(b"PK\x01\x02") + 10] + b"\x63\x00" + d[d.index(b"PK\x01\x02") + 12:],
], ids=["half", "empty", "zip-version", "compression-method"])
def test_loading_a_damaged_model_file_is_a_tuning_error(tmp_path, cls, damage):
    rng = np.random.default_rng(1)
    model = cls(seed=0)
    model.update_features(*synthetic(20, "w", rng, rng.normal(size=8)))
    path = tmp_path / "model.bin"
    model.save(str(path))
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(TuningError, match="cannot read a cost model from .*model.bin"):
        cls(seed=0).load(str(path))


def test_update_from_measurements_and_record_files(tmp_path):
    wl = Workload.from_func(matmul(32))
    traces = [None] + [tiling_trace(wl.func, seed=s) for s in range(5)]
    inputs = [MeasureInput(wl, t) for t in traces]
    results = [MeasureResult([1e-3 / (i + 1)]) for i in range(5)] + \
        [MeasureResult(None, "RUN_ERROR", "crash")]
    model = XGBModel(seed=0)
    model.update(inputs, results)
    assert model.num_samples == 6 and model.booster is not None
    assert model.predict(inputs).shape == (6,)
    # The same measurements as a record file.
    t = Target("llvm")
    path = str(tmp_path / "log.json")
    with JSONDatabase(path) as db:
        db.commit_workload(wl)
        db.commit_workload(Workload.from_func(add_one(16)))
        for inp, res in zip(inputs, results):
            db.commit_record(res.to_record(inp))
        db.commit_record(TuningRecord(workload_key=workload_key_of_add(), trace=None,
                                      run_secs=[1e-6], target=str(t),
                                      fingerprint=t.fingerprint()))
    fresh = XGBModel(seed=0)
    assert fresh.update_from_file(path) == 7
    assert fresh.num_samples == 7 and fresh.booster is not None
    for m in (model, fresh):
        scores = m.predict(inputs)
        # Trained on these candidates: the fastest ranks above the slowest and the failure.
        assert scores[4] > scores[0] and scores[4] > scores[5]


def workload_key_of_add() -> str:
    return Workload.from_func(add_one(16)).key


def test_normalized_throughput_and_pairwise_loss():
    y = normalized_throughput([2.0, 1.0, float("inf"), 4.0], ["a", "a", "a", "b"])
    np.testing.assert_allclose(y, [0.5, 1.0, 0.0, 1.0])
    rng = np.random.default_rng(0)
    good = pairwise_logistic(np.array([0.0, 5.0]), np.array([0.0, 1.0]), np.array(["a", "a"]),
                             rng)
    bad = pairwise_logistic(np.array([5.0, 0.0]), np.array([0.0, 1.0]), np.array(["a", "a"]),
                            rng)
    assert good[0] < bad[0]
    assert bad[1][1] < 0 < bad[1][0]  # pushes the better candidate up


def test_create_cost_model_falls_back_without_xgboost(monkeypatch):
    assert isinstance(create_cost_model("auto"), XGBModel)
    monkeypatch.setattr(cm, "xgboost_available", lambda: False)
    assert isinstance(cm.create_cost_model("auto"), NumpyModel)
    assert isinstance(cm.create_cost_model("random"), RandomModel)
    with pytest.raises(Exception, match="unknown cost model"):
        cm.create_cost_model("magic")


def test_missing_xgboost_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "xgboost", None)
    with pytest.raises(MissingDependencyError, match=r"irc\[tune\]"):
        XGBModel()


def test_importing_irc_does_not_import_xgboost():
    code = "import sys, irc, irc.tune; print('xgboost' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"

"""XGBModel: gradient-boosted trees over per-store features, trained to rank.

The model scores each store statement and sums the scores of a candidate's stores (a
"pack sum": a kernel's time is roughly the sum of its statements' times). Training uses
a custom objective on those sums: by default the pairwise logistic ranking loss within
each workload (``loss="rank"``), or squared error against the normalized throughput
(``loss="reg"``). It retrains from all samples at each update, as Ansor's model does.
Until it has seen a pair of candidates it can rank, predictions are random.

xgboost is imported when the model is created; without it, a one-line error names the
``tune`` extra (``irc.tune.cost_model.create_cost_model("auto")`` falls back to the numpy
model instead).
"""

from __future__ import annotations

import io
import json
import os
from typing import Any, Sequence

import numpy as np

from ...core.diagnostics import DAMAGED_FILE_ERRORS, TuningError, require
from .base import CostModel, TrainingSet, pack, pairwise_logistic


class XGBModel(CostModel):
    """Boosted-tree cost model (see the module docstring).

    ``loss`` is ``"rank"`` (default) or ``"reg"``; ``num_boost_round`` trees of depth
    ``max_depth`` with learning rate ``eta``; ``num_warmup_sample`` measurements before
    the model is trusted (random scores until then); ``adaptive_training`` retrains only
    when the data grew by 20 %; ``model_file`` is saved after every update;
    ``verbose_eval`` prints the training loss every that many rounds (0: silent).
    """

    def __init__(self, verbose_eval: int = 0, num_warmup_sample: int = 0,
                 seed: int | None = None, model_file: str | None = None,
                 adaptive_training: bool = False, loss: str = "rank",
                 num_boost_round: int = 80, max_depth: int = 6, eta: float = 0.2,
                 nthread: int = 1):
        super().__init__()
        self._xgb = require("xgboost", "tune")
        if loss not in ("rank", "reg"):
            raise TuningError(f"XGBModel loss must be 'rank' or 'reg', got {loss!r}")
        self.loss = loss
        self.verbose_eval = int(verbose_eval or 0)
        self.num_warmup_sample = int(num_warmup_sample)
        self.seed = 0 if seed is None else int(seed)
        self.model_file = model_file
        self.adaptive_training = adaptive_training
        self.num_boost_round = int(num_boost_round)
        self.params = {
            "max_depth": int(max_depth), "eta": float(eta), "gamma": 1e-4,
            "min_child_weight": 0.05, "lambda": 1.0, "subsample": 1.0,
            "nthread": int(nthread), "verbosity": 0,
            "seed": self.seed, "base_score": 0.0, "disable_default_eval_metric": 1,
            "tree_method": "hist", "max_bin": 64,
        }
        self.booster: Any = None
        self._trained_on = 0
        self._rng = np.random.default_rng(self.seed)

    # -- training -----------------------------------------------------------------------
    def _fit(self) -> None:
        n = len(self.data)
        if n < max(2, self.num_warmup_sample):
            return
        if self.adaptive_training and self.booster is not None and n < self._trained_on * 1.2:
            return
        rows, ids = pack(self.data.features)
        if not len(rows):
            return
        targets = self.data.targets()
        groups = np.asarray(self.data.groups)
        if self.loss == "rank" and not _has_pairs(targets, groups):
            return
        xgb = self._xgb
        dtrain = xgb.DMatrix(rows)
        n_packs = n
        rng = np.random.default_rng(self.seed)
        loss_kind = self.loss
        history: list[float] = []

        def objective(preds: np.ndarray, _dtrain: Any) -> tuple[np.ndarray, np.ndarray]:
            scores = np.bincount(ids, preds, minlength=n_packs)
            if loss_kind == "rank":
                loss, g, h = pairwise_logistic(scores, targets, groups, rng)
            else:
                err = scores - targets
                loss, g, h = float(np.mean(err ** 2)), err, np.ones(n_packs)
            history.append(loss)
            # Every store of a candidate gets its candidate's gradient (d sum / d store = 1).
            return g[ids], np.maximum(h[ids], 1e-6)

        self.booster = xgb.train(dict(self.params), dtrain, self.num_boost_round, obj=objective,
                                 verbose_eval=False)
        self._trained_on = n
        if self.verbose_eval:
            for r in range(0, len(history), self.verbose_eval):
                print(f"XGBModel round {r}: {self.loss} loss {history[r]:.5f}")
        if self.model_file:
            self.save(self.model_file)

    @property
    def is_trained(self) -> bool:
        """True once the trees are trained (a workload had two candidates to rank)."""
        return self.booster is not None

    # -- scoring ------------------------------------------------------------------------
    def predict_features(self, features: Sequence[np.ndarray]) -> np.ndarray:
        n = len(features)
        if self.booster is None:
            return self._rng.uniform(0.0, 1.0, size=n)
        rows, ids = pack(features)
        if not len(rows):
            return np.zeros(n)
        preds = self.booster.inplace_predict(rows)
        return np.bincount(ids, np.asarray(preds, dtype=np.float64), minlength=n)


    # -- files --------------------------------------------------------------------------
    def save(self, path: str) -> None:
        meta = {"kind": "xgb", "loss": self.loss, "trained_on": self._trained_on,
                "params": self.params, "num_boost_round": self.num_boost_round}
        booster = bytes(self.booster.save_raw("ubj")) if self.booster is not None else b""
        buf = io.BytesIO()
        np.savez(buf, meta=np.asarray(json.dumps(meta)),
                 booster=np.frombuffer(booster, dtype=np.uint8), **self.data.to_arrays())
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(buf.getvalue())
        os.replace(tmp, path)

    def load(self, path: str) -> None:
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                raw = data["booster"].tobytes()
                self.data = TrainingSet.from_arrays(data)
        except DAMAGED_FILE_ERRORS as err:
            raise TuningError(f"cannot read a cost model from {path}: {err}") from None
        if meta.get("kind") != "xgb":
            raise TuningError(f"{path} holds a {meta.get('kind')!r} cost model, not an XGBModel")
        self.loss = meta.get("loss", self.loss)
        self._trained_on = int(meta.get("trained_on", 0))
        if raw:
            self.booster = self._xgb.Booster(params={"nthread": self.params["nthread"]})
            self.booster.load_model(bytearray(raw))
        else:
            self.booster = None


def _has_pairs(targets: np.ndarray, groups: np.ndarray) -> bool:
    """True when some workload has two candidates with different targets."""
    seen: dict[str, float] = {}
    for t, g in zip(targets, groups):
        prev = seen.setdefault(g, t)
        if prev != t:
            return True
    return False

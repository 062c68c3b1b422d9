"""NumpyModel: a linear ranking model in pure numpy, the fallback without xgboost.

Each candidate is summarized by the sum and the maximum of its stores' feature vectors,
standardized; the model is a weight vector trained with Adam on the same pairwise logistic
ranking loss the XGBoost model uses (within each workload), with L2 regularization. It is
weaker than boosted trees but ranks tile sizes and loop structures usefully and has no
dependency beyond numpy.
"""

from __future__ import annotations

import io
import json
import os
from typing import Sequence

import numpy as np

from ...core.diagnostics import DAMAGED_FILE_ERRORS, TuningError
from ..features import NUM_FEATURES
from .base import CostModel, TrainingSet, pairwise_logistic


def summarize(features: Sequence[np.ndarray]) -> np.ndarray:
    """One row per candidate: the sum and the maximum of its store rows."""
    out = np.zeros((len(features), 2 * NUM_FEATURES))
    for i, f in enumerate(features):
        if len(f):
            out[i, :NUM_FEATURES] = f.sum(axis=0)
            out[i, NUM_FEATURES:] = f.max(axis=0)
    return out


class NumpyModel(CostModel):
    """Linear pairwise-ranking cost model (see the module docstring): ``l2`` weight decay,
    ``iterations`` Adam steps with learning rate ``lr`` per update."""

    def __init__(self, seed: int | None = None, l2: float = 1e-3, iterations: int = 300,
                 lr: float = 0.05, num_warmup_sample: int = 0):
        super().__init__()
        self.seed = 0 if seed is None else int(seed)
        self.l2 = float(l2)
        self.iterations = int(iterations)
        self.lr = float(lr)
        self.num_warmup_sample = int(num_warmup_sample)
        self.weights: np.ndarray | None = None
        self.mean = np.zeros(2 * NUM_FEATURES)
        self.scale = np.ones(2 * NUM_FEATURES)
        self._rng = np.random.default_rng(self.seed)

    def _fit(self) -> None:
        if len(self.data) < max(2, self.num_warmup_sample):
            return
        x = summarize(self.data.features)
        targets = self.data.targets()
        groups = np.asarray(self.data.groups)
        self.mean = x.mean(axis=0)
        std = x.std(axis=0)
        self.scale = np.where(std > 1e-9, std, 1.0)
        z = (x - self.mean) / self.scale
        rng = np.random.default_rng(self.seed)
        w = np.zeros(z.shape[1]) if self.weights is None or len(self.weights) != z.shape[1] \
            else self.weights.copy()
        m = np.zeros_like(w)
        v = np.zeros_like(w)
        beta1, beta2, eps = 0.9, 0.999, 1e-8
        for step in range(1, self.iterations + 1):
            _, g_scores, _ = pairwise_logistic(z @ w, targets, groups, rng)
            grad = z.T @ g_scores + self.l2 * w
            m = beta1 * m + (1 - beta1) * grad
            v = beta2 * v + (1 - beta2) * grad * grad
            w -= self.lr * (m / (1 - beta1 ** step)) / (np.sqrt(v / (1 - beta2 ** step)) + eps)
        self.weights = w

    @property
    def is_trained(self) -> bool:
        """True once the weights are trained."""
        return self.weights is not None

    def predict_features(self, features: Sequence[np.ndarray]) -> np.ndarray:
        if self.weights is None:
            return self._rng.uniform(0.0, 1.0, size=len(features))
        z = (summarize(features) - self.mean) / self.scale
        return z @ self.weights

    def save(self, path: str) -> None:
        buf = io.BytesIO()
        weights = self.weights if self.weights is not None else np.zeros(0)
        np.savez(buf, meta=np.asarray(json.dumps({"kind": "numpy", "l2": self.l2})),
                 weights=weights, mean=self.mean, scale=self.scale, **self.data.to_arrays())
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(buf.getvalue())
        os.replace(tmp, path)

    def load(self, path: str) -> None:
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                weights = data["weights"]
                self.mean, self.scale = data["mean"], data["scale"]
                self.data = TrainingSet.from_arrays(data)
        except DAMAGED_FILE_ERRORS as err:
            raise TuningError(f"cannot read a cost model from {path}: {err}") from None
        if meta.get("kind") != "numpy":
            raise TuningError(f"{path} holds a {meta.get('kind')!r} cost model, not a NumpyModel")
        self.weights = weights if len(weights) else None

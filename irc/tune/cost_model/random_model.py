"""RandomModel: uniformly random scores, the baseline a learned model must beat (and
what a search uses when it should explore without a model)."""

from __future__ import annotations

import json
import os
from typing import Sequence

import numpy as np

from ...core.diagnostics import TuningError
from .base import CostModel


class RandomModel(CostModel):
    """Scores uniform in [0, 1) from a seeded generator; updates only count samples."""

    def __init__(self, seed: int | None = None):
        super().__init__()
        self.seed = 0 if seed is None else int(seed)
        self._rng = np.random.default_rng(self.seed)

    def _fit(self) -> None:
        # Nothing to learn: random scores ignore the data.
        return

    @property
    def is_trained(self) -> bool:
        """Always False: random scores carry nothing learned."""
        return False

    def predict_features(self, features: Sequence[np.ndarray]) -> np.ndarray:
        return self._rng.uniform(0.0, 1.0, size=len(features))

    def save(self, path: str) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            json.dump({"kind": "random", "seed": self.seed}, f)

    def load(self, path: str) -> None:
        try:
            with open(path) as f:
                meta = json.load(f)
        except (OSError, ValueError) as err:
            raise TuningError(f"cannot read a cost model from {path}: {err}") from None
        if meta.get("kind") != "random":
            raise TuningError(f"{path} holds a {meta.get('kind')!r} cost model, not a "
                              "RandomModel")
        self.seed = int(meta.get("seed", 0))
        self._rng = np.random.default_rng(self.seed)

"""The cost model interface and the training data every model keeps.

A cost model scores candidates: higher means faster. It learns from measured candidates,
each a set of per-store feature vectors (:mod:`irc.tune.features`) with a measured time.
Targets are **normalized throughputs per workload**: ``best time of the workload / time``
(1 for the fastest candidate seen, 0 for a failed one), so one model can learn from many
workloads of very different sizes and only the ranking within a workload matters.
"""

from __future__ import annotations

import logging
import math
import os
from abc import ABC, abstractmethod
from typing import Any, Sequence

import numpy as np

from ...core.diagnostics import IRCError, TuningError
from ..database import open_database
from ..features import NUM_FEATURES, extract_features, features_of_inputs
from ..measure import MeasureInput, MeasureResult, apply_trace

logger = logging.getLogger(__name__)


def normalized_throughput(costs: Sequence[float], groups: Sequence[str]) -> np.ndarray:
    """``min cost of the group / cost`` per sample (0 for an infinite or failed cost)."""
    costs = np.asarray(costs, dtype=np.float64)
    out = np.zeros(len(costs))
    best: dict[str, float] = {}
    for c, g in zip(costs, groups):
        if math.isfinite(c) and c > 0:
            best[g] = min(best.get(g, math.inf), c)
    for i, (c, g) in enumerate(zip(costs, groups)):
        if math.isfinite(c) and c > 0:
            out[i] = best[g] / c
    return out


class TrainingSet:
    """Measured samples: feature sets, workload keys (groups) and costs in seconds."""

    def __init__(self) -> None:
        self.features: list[np.ndarray] = []
        self.groups: list[str] = []
        self.costs: list[float] = []

    def __len__(self) -> int:
        return len(self.costs)

    def add(self, features: Sequence[np.ndarray], groups: Sequence[str],
            costs: Sequence[float]) -> None:
        if not (len(features) == len(groups) == len(costs)):
            raise TuningError("a cost model update needs as many feature sets, groups and "
                              "costs")
        for f in features:
            f = np.asarray(f, dtype=np.float32)
            if f.ndim != 2 or f.shape[1] != NUM_FEATURES:
                raise TuningError(f"feature sets have shape (stores, {NUM_FEATURES}), got "
                                  f"{f.shape}")
            self.features.append(f)
        self.groups.extend(str(g) for g in groups)
        self.costs.extend(float(c) for c in costs)

    def targets(self) -> np.ndarray:
        return normalized_throughput(self.costs, self.groups)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The set as plain arrays (for saving)."""
        sizes = np.array([len(f) for f in self.features], dtype=np.int64)
        rows = np.concatenate(self.features) if self.features else \
            np.zeros((0, NUM_FEATURES), dtype=np.float32)
        return {"rows": rows, "sizes": sizes, "costs": np.asarray(self.costs, dtype=np.float64),
                "groups": np.asarray(self.groups, dtype=str)}

    @staticmethod
    def from_arrays(data: Any) -> TrainingSet:
        ts = TrainingSet()
        rows, sizes = data["rows"], data["sizes"]
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        ts.features = [rows[offsets[i]:offsets[i + 1]] for i in range(len(sizes))]
        ts.groups = [str(g) for g in data["groups"]]
        ts.costs = [float(c) for c in data["costs"]]
        return ts


def pack(features: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """All store rows stacked, and the candidate index of each row."""
    sizes = np.array([len(f) for f in features], dtype=np.int64)
    if sizes.sum() == 0:
        return np.zeros((0, NUM_FEATURES), dtype=np.float32), np.zeros(0, dtype=np.int64)
    rows = np.concatenate([np.asarray(f, dtype=np.float32) for f in features if len(f)])
    ids = np.repeat(np.arange(len(features)), sizes)
    return rows, ids


class CostModel(ABC):
    """Scores candidates (higher = predicted faster) and learns from measurements.

    The search calls :meth:`predict_features` with per-store feature arrays it computed
    (or :meth:`predict` with MeasureInputs) and :meth:`update` with measured inputs and
    results. :meth:`update_from_file` learns from a record file; ``replay_failures``
    counts the records it had to skip (their trace no longer applies to their workload).
    :attr:`is_trained` says whether the scores carry anything learned.
    """

    def __init__(self) -> None:
        self.data = TrainingSet()
        self.replay_failures = 0

    @property
    @abstractmethod
    def is_trained(self) -> bool:
        """True when the model's scores come from what it learned (False while they are
        random: nothing learned yet, or a model that never learns)."""

    # -- learning -----------------------------------------------------------------------
    def update(self, inputs: Sequence[MeasureInput], results: Sequence[MeasureResult]
               ) -> None:
        """Learn from measured candidates (MeasureInputs and their MeasureResults)."""
        if len(inputs) != len(results):
            raise TuningError("cost model update: one result per input is needed")
        feats = features_of_inputs(inputs)
        groups = [inp.workload.key for inp in inputs]
        costs = [res.mean_cost for res in results]
        self.update_features(feats, groups, costs)

    def update_features(self, features: Sequence[np.ndarray], groups: Sequence[str],
                        costs: Sequence[float]) -> None:
        """Learn from feature sets with their workload keys and measured seconds
        (``inf`` for a failed candidate)."""
        self.data.add(features, groups, costs)
        self._fit()

    @abstractmethod
    def _fit(self) -> None:
        """(Re)train on :attr:`data`."""

    def update_from_file(self, path: Any, target: Any = None) -> int:
        """Learn from the records in a database file (or Database): each record's trace is
        replayed onto its workload to extract features. ``target`` limits the records to
        one hardware. Returns the number of records learned from; a record that cannot be
        replayed is skipped, logged on the ``irc.tune`` logger and counted in
        :attr:`replay_failures`."""
        if isinstance(path, (str, os.PathLike)) and not os.path.exists(path):
            raise TuningError(f"no tuning records at {os.fspath(path)}")
        db = open_database(path, target)
        feats, groups, costs = [], [], []
        skipped = 0
        first_error = ""
        try:
            for key in db.workload_keys():
                wl = db.get_workload(key)
                if wl is None:
                    continue
                func = wl.func
                for rec in db.records_of(key):
                    try:
                        f = extract_features(apply_trace(func, rec.trace))
                    except IRCError as err:
                        skipped += 1
                        first_error = first_error or f"record {rec.trace_key} of workload " \
                            f"{wl.name or key}: {str(err).splitlines()[0]}"
                        logger.debug("cost model: skipping record %s of workload %s (%s): %s",
                                     rec.trace_key, key, wl.name, err)
                        continue
                    feats.append(f)
                    groups.append(key)
                    costs.append(rec.mean_cost)
        finally:
            if db is not path:
                db.close()
        if skipped:
            self.replay_failures += skipped
            logger.warning("cost model: %d of %d records in %s cannot be replayed onto their "
                           "workload and were skipped (first: %s)", skipped,
                           skipped + len(feats), _describe_source(path), first_error)
        if feats:
            self.update_features(feats, groups, costs)
        return len(feats)

    # -- scoring ------------------------------------------------------------------------
    def predict(self, inputs: Sequence[Any]) -> np.ndarray:
        """Scores of MeasureInputs (higher = faster)."""
        return self.predict_features(features_of_inputs(inputs))

    @abstractmethod
    def predict_features(self, features: Sequence[np.ndarray]) -> np.ndarray:
        """Scores of candidates given as per-store feature arrays."""

    # -- files --------------------------------------------------------------------------
    @abstractmethod
    def save(self, path: str) -> None:
        """Write the model (and its training data) to ``path``."""

    @abstractmethod
    def load(self, path: str) -> None:
        """Read a model written by :meth:`save`."""

    @property
    def num_samples(self) -> int:
        """How many measured candidates the model has learned from."""
        return len(self.data)


def _describe_source(source: Any) -> str:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    return repr(source)


def pairwise_logistic(scores: np.ndarray, targets: np.ndarray, groups: np.ndarray,
                      rng: np.random.Generator, max_full: int = 512, partners: int = 64
                      ) -> tuple[float, np.ndarray, np.ndarray]:
    """Loss, gradient and hessian (per candidate) of the pairwise logistic ranking loss
    ``sum log(1 + exp(-(s_i - s_j)))`` over pairs of one group with ``t_i > t_j``.
    Groups larger than ``max_full`` use ``partners`` random partners per candidate.
    Each group's terms are divided by its size so large groups do not drown small ones."""
    n = len(scores)
    grad = np.zeros(n)
    hess = np.zeros(n)
    loss = 0.0
    _, codes = np.unique(groups, return_inverse=True)
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    for idx in np.split(order, bounds):
        m = len(idx)
        if m < 2:
            continue
        s, t = scores[idx], targets[idx]
        if m <= max_full:
            a = np.repeat(np.arange(m), m)
            b = np.tile(np.arange(m), m)
        else:
            a = np.repeat(np.arange(m), partners)
            b = rng.integers(0, m, size=m * partners)
        keep = t[a] > t[b] + 1e-9
        a, b = a[keep], b[keep]
        if not len(a):
            continue
        diff = s[a] - s[b]
        p = 1.0 / (1.0 + np.exp(np.clip(diff, -50, 50)))  # sigmoid(-diff)
        w = 1.0 / m
        loss += float(np.sum(np.logaddexp(0.0, -diff))) * w
        pw = p * w
        hp = pw * (1.0 - p)
        grad[idx] += np.bincount(b, pw, minlength=m) - np.bincount(a, pw, minlength=m)
        hess[idx] += np.bincount(a, hp, minlength=m) + np.bincount(b, hp, minlength=m)
    return loss, grad, hess

"""Cost models: :class:`XGBModel` (boosted trees, needs xgboost), :class:`NumpyModel`
(pure numpy fallback), :class:`RandomModel`; :func:`create_cost_model` picks one.

Importing this package never imports xgboost: ``XGBModel()`` does, when created."""

from __future__ import annotations

import importlib.util
import logging
from typing import Any

from ...core.diagnostics import TuningError
from .base import CostModel, TrainingSet, normalized_throughput, pack, pairwise_logistic
from .numpy_model import NumpyModel
from .random_model import RandomModel
from .xgb import XGBModel


def xgboost_available() -> bool:
    """True when the xgboost package can be imported."""
    return importlib.util.find_spec("xgboost") is not None


def create_cost_model(kind: str = "auto", **kwargs: Any) -> CostModel:
    """A cost model by name: ``"xgb"``, ``"numpy"``, ``"random"``, or ``"auto"`` (XGBoost
    when installed, else the numpy model with a note on the ``irc.tune`` logger)."""
    if kind == "auto":
        if xgboost_available():
            kind = "xgb"
        else:
            logging.getLogger("irc.tune").info(
                "xgboost is not installed; using the numpy cost model (pip install "
                "'irc[tune]' for the XGBoost model)")
            kind = "numpy"
    if kind == "xgb":
        return XGBModel(**kwargs)
    if kind == "numpy":
        return NumpyModel(**kwargs)
    if kind == "random":
        return RandomModel(**kwargs)
    raise TuningError(f"unknown cost model {kind!r}; use 'xgb', 'numpy', 'random' or 'auto'")


__all__ = ["CostModel", "NumpyModel", "RandomModel", "TrainingSet", "XGBModel",
           "create_cost_model", "normalized_throughput", "pack", "pairwise_logistic",
           "xgboost_available"]

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


def describe_cost_model(model: CostModel) -> str:
    """What the tuning log says at the start: the cost model in use, and, for the numpy
    model while XGBoost is missing, how to install it."""
    if isinstance(model, XGBModel):
        import xgboost  # installed: XGBModel exists

        return f"cost model: XGBoost {xgboost.__version__} (boosted trees)"
    name = type(model).__name__
    if isinstance(model, NumpyModel) and not xgboost_available():
        return (f"cost model: {name} (XGBoost is not installed, so tuning finds fast "
                "schedules more slowly: pip install 'irc[tune]')")
    return f"cost model: {name}"


__all__ = ["CostModel", "NumpyModel", "RandomModel", "TrainingSet", "XGBModel",
           "create_cost_model", "describe_cost_model", "normalized_throughput", "pack",
           "pairwise_logistic",
           "xgboost_available"]

"""Converters of the ``ai.onnx.ml`` operators that are tensor arithmetic: ``Binarizer``
and ``ArrayFeatureExtractor`` (steps of scikit-learn pipelines exported to ONNX). The
domain's classical machine-learning models (tree ensembles, label encoders, ...) are left
out (``registry.REFUSED_DOMAINS``)."""

from __future__ import annotations

import math

from ...core import dtype as dt
from ...ir import ops
from ...ir.expr import Expr
from ...tir import expr as E
from .importer import Node
from .ops_elementwise import scalar
from .registry import converter


@converter("Binarizer", since=1, domain="ai.onnx.ml")
def _binarizer(node: Node) -> Expr:
    """1 where ``x > threshold``, else 0, in ``x``'s dtype (an integer ``x`` is compared
    with the threshold rounded down, which selects the same values)."""
    dtype = node.dtype(0)
    threshold = float(node.attr("threshold", 0.0))
    if not dt.is_float(dtype):
        if not math.isfinite(threshold):
            raise node.error(f"threshold {threshold} for an integer input")
        threshold = math.floor(threshold)
    return ops.astype(ops.greater(node.input(0), scalar(threshold, dtype)), dtype)


@converter("ArrayFeatureExtractor", since=1, domain="ai.onnx.ml")
def _array_feature_extractor(node: Node) -> Expr:
    """The entries of the last axis of ``X`` that the int64 indices ``Y`` name (flattened,
    checked at run time), as ``X[..., Y]``; a 1-d ``X`` gives one row, as ONNX Runtime
    does."""
    if not dt.is_integer(node.dtype(1)):
        raise node.error(f"the indices must be integers, got {node.dtype(1)}")
    n = node.ndim(0)
    if n < 1:
        raise node.error("X must have at least one axis")
    count = 1
    for d in node.shape(1):
        if not isinstance(d, E.IntImm):
            count = -1
            break
        count *= int(d.value)
    out = ops.take(node.input(0), ops.reshape(node.input(1), [count]), n - 1, mode="raise")
    return ops.expand_dims(out, 0) if n == 1 else out


__all__: list[str] = []

"""Converters of ONNX operators whose outputs have a length known only at run time and
that select by comparing elements: ``Unique`` and ``NonMaxSuppression``.

Each is one graph operator (``irc/ir/ops/selection.py``: ``R.unique``,
``R.non_max_suppression``) whose results are sized for the largest selection, with the
number selected as a one-element tensor; that number is bound as a shape variable at run
time (``Node.runtime_dims``) and the leading entries taken.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core import dtype as dt
from ...ir import ops
from ...ir.expr import Constant, Expr, TupleGetItem
from ...ir.ops import selection
from ...tir import expr as E
from .importer import Node
from .registry import converter


def _fields(node: Node, call: Expr, n: int, name: str) -> list[Expr]:
    tup = node.emit(call, name)
    return [TupleGetItem(tuple_value=tup, index=i) for i in range(n)]


def _leading(node: Node, count: Expr, what: str) -> Expr:
    """``arange(count[0])`` with the count bound as a shape variable."""
    (k,) = node.runtime_dims(count, what)
    return ops.arange(0, k, 1, "int64")


def _product(dims: list[Any]) -> Any:
    out: Any = E.IntImm(dtype="int64", value=1)
    for d in dims:
        out = out * d
    return out


@converter("Unique", since=11)
def _unique(node: Node) -> list[Expr]:
    """The distinct values (``axis`` absent: of the flattened input) or slices along
    ``axis``, sorted or in order of first occurrence, with the index of each one's first
    occurrence, each element's (slice's) position among them and how often each
    occurs."""
    x = node.input(0)
    shape = list(node.shape(0))
    if node.dtype(0) == "bool":
        raise node.error("bool inputs are not supported; ONNX Unique takes numeric tensors")
    sorted_ = bool(node.attr("sorted", 1))
    axis = node.attr("axis")
    if axis is None:
        data = ops.reshape(x, [_product(shape)])
        rows = ops.reshape(data, [_product(shape), 1])
        axis = 0
    else:
        axis = int(axis)
        if not -len(shape) <= axis < len(shape):
            raise node.error(f"axis {axis} is out of range for rank {len(shape)}")
        axis %= len(shape)
        data = x
        rest = shape[:axis] + shape[axis + 1:]
        moved = ops.permute_dims(x, [axis] + [a for a in range(len(shape)) if a != axis])
        rows = ops.reshape(moved, [shape[axis], _product(rest)])
    first, inverse, counts, count = _fields(node, selection.unique(rows, sorted_), 4,
                                            "unique")
    keep = node.emit(_leading(node, count, "count"), "unique_positions")
    indices = node.emit(ops.take(first, keep, axis=0), "unique_indices")
    return [ops.take(data, indices, axis=axis), indices, inverse,
            ops.take(counts, keep, axis=0)]


def _scalar(node: Node, i: int, dtype: str, what: str) -> Expr:
    sinfo = node.sinfo(i)
    if sinfo.shape is not None and len(sinfo.shape) > 1:
        raise node.error(f"{what} (input {i}) must hold one value, got shape "
                         f"{list(sinfo.shape)}")
    if sinfo.shape is not None and len(sinfo.shape) == 1 and \
            isinstance(sinfo.shape[0], E.IntImm) and int(sinfo.shape[0].value) != 1:
        raise node.error(f"{what} (input {i}) must hold one value, got shape "
                         f"{list(sinfo.shape)}")
    value = node.input(i)
    if node.dtype(i) != dtype:
        value = ops.astype(value, dtype)
    return ops.reshape(value, [])


@converter("NonMaxSuppression", since=10)
def _non_max_suppression(node: Node) -> Expr:
    """Greedy suppression per batch and class; ``(batch, class, box)`` of every box kept,
    batches and classes in order, boxes by decreasing score."""
    for i, what in ((0, "boxes"), (1, "scores")):
        if not dt.is_float(node.dtype(i)):
            raise node.error(f"{what} must be a float tensor, got {node.dtype(i)}")
    dtype = node.dtype(0)
    boxes, scores = node.input(0), node.input(1)
    if node.dtype(1) != dtype:
        scores = ops.astype(scores, dtype)
    center = int(node.attr("center_point_box", 0))
    if center not in (0, 1):
        raise node.error(f"center_point_box must be 0 or 1, got {center}")
    if not node.has_input(2):  # no limit given: no box is selected
        return Constant.from_numpy(np.zeros((0, 3), "int64"))
    if not dt.is_integer(node.dtype(2)):
        raise node.error(f"max_output_boxes_per_class must be an integer tensor, got "
                         f"{node.dtype(2)}")
    limit = _scalar(node, 2, "int64", "max_output_boxes_per_class")
    iou = _scalar(node, 3, dtype, "iou_threshold") if node.has_input(3) else \
        Constant.from_numpy(np.zeros(()), dtype)
    threshold = _scalar(node, 4, dtype, "score_threshold") if node.has_input(4) else None
    selected, count = _fields(node, selection.non_max_suppression(
        boxes, scores, limit, iou, threshold, center_point_box=bool(center)), 2, "nms")
    return ops.take(selected, _leading(node, count, "count"), axis=0)


__all__: list[str] = []

"""Operators that select a number of entries known only at run time: ``unique`` and
``non_max_suppression``.

Their results have the largest size the selection can take, with the number selected in
a one-element int64 tensor (the last field); a caller binds that number as a shape
variable (``R.tensor_to_shape`` and ``R.match_cast``) and takes the leading entries, as
the ONNX importer does.
"""

from __future__ import annotations

from typing import Any

from ...core import dtype as dt
from ...tir.expr import const
from ..expr import Call, Expr
from ..op import OPAQUE, AttrSpec, conv_bool, make_call, register_op
from ..struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from ..struct_info_analysis import format_sinfo, prove_not_equal
from ._common import fail, tensor, tensor_arg


def _count(vdevice: Any) -> TensorStructInfo:
    return tensor([const(1, "int64")], "int64", vdevice=vdevice)


def _scalar(call: Call, i: int, what: str, kind: str) -> None:
    s = tensor_arg(call, i)
    if s.ndim > 0:
        raise fail(call, f"{what} must be a 0-d tensor, got {format_sinfo(s)}")
    if s.dtype and not (dt.is_integer(s.dtype) if kind == "int" else dt.is_float(s.dtype)):
        raise fail(call, f"{what} must be a{'n integer' if kind == 'int' else ' float'} "
                         f"tensor, got {s.dtype}")


@register_op("unique", ["x"], [AttrSpec("sorted", True, conv_bool)], pattern=OPAQUE)
def _infer_unique(call: Call, ctx: Any) -> StructInfo:
    """R.unique(x, sorted=True): the distinct rows of the 2-d ``x`` (``n`` rows), as a
    tuple ``(indices, inverse_indices, counts, count)`` of int64 tensors: the first
    ``count[0]`` entries of ``indices`` (``[n]``) are the rows where each distinct row first
    occurs and those of ``counts`` (``[n]``) how often it occurs, in lexicographic order of
    the rows (``sorted``) or of first occurrence; ``inverse_indices[i]`` (``[n]``) is the
    position of row ``i`` among them. NaN equals NaN and sorts last."""
    x = tensor_arg(call, 0)
    if x.ndim >= 0 and x.ndim != 2:
        raise fail(call, f"x must be 2-d (rows to compare), got {format_sinfo(x)}")
    if x.dtype == "bool":
        raise fail(call, "x must be numeric, got bool")
    if x.shape is None:
        rows = TensorStructInfo(dtype="int64", ndim=1, vdevice=x.vdevice)
        return TupleStructInfo(fields=(rows, rows, rows, _count(x.vdevice)))
    rows = tensor([x.shape[0]], "int64", vdevice=x.vdevice)
    return TupleStructInfo(fields=(rows, rows, rows, _count(x.vdevice)))


@register_op("non_max_suppression", ["boxes", "scores", "max_output_boxes_per_class",
                                     "iou_threshold", "score_threshold"],
             [AttrSpec("center_point_box", False, conv_bool)], pattern=OPAQUE,
             optional=["score_threshold"])
def _infer_non_max_suppression(call: Call, ctx: Any) -> StructInfo:
    """R.non_max_suppression(boxes, scores, max_output_boxes_per_class, iou_threshold,
    score_threshold=None, center_point_box=False): greedy non-maximum suppression per
    batch and class (ONNX NonMaxSuppression) of ``boxes`` (``[batch, n, 4]``) scored by
    ``scores`` (``[batch, classes, n]``), the thresholds and the per-class limit 0-d
    tensors read at run time. A tuple ``(selected, count)``: the first ``count[0]`` rows of
    ``selected`` (int64 ``[batch * classes * n, 3]``) are ``(batch, class, box)``."""
    boxes, scores = tensor_arg(call, 0), tensor_arg(call, 1)
    for s, what in ((boxes, "boxes"), (scores, "scores")):
        if s.ndim >= 0 and s.ndim != 3:
            raise fail(call, f"{what} must be 3-d, got {format_sinfo(s)}")
        if s.dtype and not dt.is_float(s.dtype):
            raise fail(call, f"{what} must be a float tensor, got {s.dtype}")
    if boxes.dtype and scores.dtype and boxes.dtype != scores.dtype:
        raise fail(call, f"boxes ({boxes.dtype}) and scores ({scores.dtype}) must share a "
                         "dtype")
    _scalar(call, 2, "max_output_boxes_per_class", "int")
    _scalar(call, 3, "iou_threshold", "float")
    if len(call.args) > 4:
        _scalar(call, 4, "score_threshold", "float")
    if boxes.shape is None or scores.shape is None:
        return TupleStructInfo(fields=(TensorStructInfo(dtype="int64", ndim=2),
                                       _count(boxes.vdevice)))
    if prove_not_equal(boxes.shape[2], 4):
        raise fail(call, f"boxes must have 4 coordinates per box, got {format_sinfo(boxes)}")
    for k, (a, b) in enumerate(((boxes.shape[0], scores.shape[0]),
                                (boxes.shape[1], scores.shape[2]))):
        if prove_not_equal(a, b):
            raise fail(call, f"boxes {format_sinfo(boxes)} and scores "
                             f"{format_sinfo(scores)} disagree on the "
                             f"{'batch' if k == 0 else 'number of boxes'}")
    capacity = scores.shape[0] * scores.shape[1] * scores.shape[2]
    return TupleStructInfo(fields=(tensor([capacity, const(3, "int64")], "int64",
                                          vdevice=boxes.vdevice), _count(boxes.vdevice)))


def unique(x: Expr, sorted: bool = True) -> Expr:
    """``R.unique(x, sorted)``: (indices, inverse_indices, counts, count)."""
    return make_call("unique", x, sorted=sorted)


def non_max_suppression(boxes: Expr, scores: Expr, max_output_boxes_per_class: Expr,
                        iou_threshold: Expr, score_threshold: Expr | None = None,
                        center_point_box: bool = False) -> Expr:
    """``R.non_max_suppression(...)``: (selected, count)."""
    args = [boxes, scores, max_output_boxes_per_class, iou_threshold]
    if score_threshold is not None:
        args.append(score_threshold)
    return make_call("non_max_suppression", *args, center_point_box=center_point_box)


__all__ = ["unique", "non_max_suppression"]

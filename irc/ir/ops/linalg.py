"""The ``linalg.*`` operators: matrix functions computed by loop kernels (``linalg.det``),
beside the products of ``linear_algebra``."""

from __future__ import annotations

from typing import Any

from ..expr import Call, Expr
from ..op import OPAQUE, make_call, register_op
from ..struct_info import StructInfo, TensorStructInfo
from ..struct_info_analysis import format_sinfo, prove_not_equal
from ._common import fail, require_float, tensor_arg


@register_op("linalg.det", ["x"], pattern=OPAQUE)
def _infer_det(call: Call, ctx: Any) -> StructInfo:
    """R.linalg.det(x): the determinants of the square matrices ``x[..., :, :]`` (shape
    ``x.shape[:-2]``, ``x``'s float dtype)."""
    x = tensor_arg(call, 0)
    require_float(call, x, "x")
    if 0 <= x.ndim < 2:
        raise fail(call, f"x must have rank 2 or more (square matrices), got "
                         f"{format_sinfo(x)}")
    if x.shape is None:
        return TensorStructInfo(dtype=x.dtype, ndim=x.ndim - 2 if x.ndim >= 2 else -1,
                                vdevice=x.vdevice)
    if prove_not_equal(x.shape[-1], x.shape[-2]):
        raise fail(call, f"x must hold square matrices, got {format_sinfo(x)}")
    return TensorStructInfo(shape=tuple(x.shape[:-2]), dtype=x.dtype, vdevice=x.vdevice)


def det(x: Expr) -> Expr:
    """``R.linalg.det(x)``: the determinants of the matrices of ``x`` (``[..., n, n]``)."""
    return make_call("linalg.det", x)


__all__ = ["det"]

"""``matmul`` (numpy semantics: batch dimensions broadcast, 1-D operands are promoted
and the added dimension removed) and ``linear`` (``data @ weight.T + bias``)."""

from __future__ import annotations

from typing import Any

from ..expr import Call, Expr
from ..op import OUT_ELEMWISE_FUSABLE, AttrSpec, conv_dtype, make_call, register_op
from ..struct_info import StructInfo, TensorStructInfo
from ..struct_info_analysis import format_shape, prove_not_equal
from ._common import broadcast_shapes, broadcast_sinfo, fail, same_dtype, tensor_arg


def _out_dtype(call: Call, a: TensorStructInfo, b: TensorStructInfo) -> str:
    out = call.attrs.get("out_dtype", "void")
    if out not in ("void", "", None):
        return out
    return same_dtype(call, a.dtype, b.dtype)


def matmul_sinfo(call: Call, a: TensorStructInfo, b: TensorStructInfo, dtype: str,
                 rhs_transposed: bool = False) -> TensorStructInfo:
    """The result of ``a @ b`` (``a @ b.T`` when ``rhs_transposed``) under numpy rules."""
    vdevice = a.vdevice or b.vdevice
    for s in (a, b):
        if s.ndim == 0:
            raise fail(call, "operands must have rank 1 or more, got a rank-0 tensor")
    if a.ndim < 0 or b.ndim < 0:
        return TensorStructInfo(dtype=dtype, vdevice=vdevice)
    out_ndim = max(a.ndim, b.ndim) - (a.ndim == 1) - (b.ndim == 1)
    if a.ndim == 1 and b.ndim == 1:
        out_ndim = 0
    if a.shape is None or b.shape is None:
        return TensorStructInfo(dtype=dtype, ndim=out_ndim, vdevice=vdevice)
    sa = a.shape if a.ndim > 1 else (None, a.shape[0])
    sb = b.shape
    if b.ndim == 1:
        sb = (sb[0], None)
    elif rhs_transposed:
        sb = (*sb[:-2], sb[-1], sb[-2])
    k_a, k_b = sa[-1], sb[-2]
    if prove_not_equal(k_a, k_b):
        shown_b = format_shape(b.shape) + (".T" if rhs_transposed else "")
        raise fail(call, f"inner dimensions differ: {format_shape(a.shape)} @ {shown_b}")
    batch = broadcast_shapes(call, [tuple(sa[:-2]), tuple(sb[:-2])], "batch dimensions")
    dims = list(batch)
    if a.ndim > 1:
        dims.append(sa[-2])
    if b.ndim > 1:
        dims.append(sb[-1])
    if any(d is None for d in dims):
        return TensorStructInfo(dtype=dtype, ndim=out_ndim, vdevice=vdevice)
    return TensorStructInfo(shape=tuple(dims), dtype=dtype, vdevice=vdevice)


@register_op("matmul", ["x1", "x2"], [AttrSpec("out_dtype", "void", conv_dtype)],
             pattern=OUT_ELEMWISE_FUSABLE)
def _infer_matmul(call: Call, ctx: Any) -> StructInfo:
    """R.matmul(x1, x2, out_dtype="void"): matrix product with numpy broadcasting."""
    a, b = tensor_arg(call, 0), tensor_arg(call, 1)
    return matmul_sinfo(call, a, b, _out_dtype(call, a, b))


@register_op("linear", ["data", "weight", "bias"], [AttrSpec("out_dtype", "void", conv_dtype)],
             pattern=OUT_ELEMWISE_FUSABLE, optional=["bias"])
def _infer_linear(call: Call, ctx: Any) -> StructInfo:
    """R.linear(data, weight, bias=None, out_dtype="void"): ``data @ weight.T + bias`` with
    ``weight`` of shape (out_features, in_features)."""
    data, weight = tensor_arg(call, 0), tensor_arg(call, 1)
    if weight.ndim not in (-1, 1, 2):
        raise fail(call, f"weight must have rank 1 or 2 (out_features, in_features), got "
                         f"rank {weight.ndim}")
    out = matmul_sinfo(call, data, weight, _out_dtype(call, data, weight), rhs_transposed=True)
    if len(call.args) > 2:
        bias = tensor_arg(call, 2)
        same_dtype(call, out.dtype, bias.dtype)
        out = broadcast_sinfo(call, [out, bias], out.dtype)
    return out


def matmul(x1: Expr, x2: Expr, out_dtype: str | None = "void") -> Expr:
    """``R.matmul(x1, x2, out_dtype)``; ``"void"``/None means the operands' dtype."""
    return make_call("matmul", x1, x2, out_dtype=out_dtype)


def linear(data: Expr, weight: Expr, bias: Expr | None = None,
           out_dtype: str | None = "void") -> Expr:
    """``R.linear(data, weight, bias)``: a fully connected layer, ``weight`` being
    (out_features, in_features)."""
    return make_call("linear", data, weight, bias, out_dtype=out_dtype)


__all__ = ["matmul", "linear", "matmul_sinfo"]

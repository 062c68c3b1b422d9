"""Normalizations: layer norm, group norm and batch norm (inference).

Layer and group norm compute the mean and the variance in two passes (a sum, then a sum
of squared deviations) for accuracy, then normalize in one elementwise stage. Floats
narrower than 32 bits are read into float32 (``accumulator_dtype``): the sums, the
normalization and the scale and shift compute there, and the output is rounded once.
"""

from __future__ import annotations

from typing import Any, Sequence

from ....core import dtype as dt
from ....core.diagnostics import IRTypeError
from ... import intrin
from ...expr import PrimExpr, cast, const, floordiv
from ...te import tensor as te
from ...te.tensor import Tensor, compute
from ..utils import (
    accumulator_dtype,
    as_index,
    axis_names,
    const_int,
    index_dtype,
    normalize_axes,
    prod,
)


def _float(x: Tensor, what: str) -> None:
    if not isinstance(x, Tensor):
        raise IRTypeError(f"topi.nn.{what} takes a tensor")
    if not dt.is_float(x.dtype):
        raise IRTypeError(f"topi.nn.{what} needs a floating-point tensor, got {x.dtype}")


def layer_norm(data: Tensor, gamma: Tensor | None, beta: Tensor | None,
               axis: Any = -1, epsilon: float = 1e-5) -> Tensor:
    """``(x - mean) / sqrt(var + epsilon) * gamma + beta`` with mean and variance over
    ``axis`` (an axis or a list); ``gamma``/``beta`` have the shape of those axes (either
    may be None)."""
    _float(data, "layer_norm")
    axes = normalize_axes(axis, data.ndim)
    idt = index_dtype(data)
    keep = [d for d in range(data.ndim) if d not in axes]
    red_shape = tuple(data.shape[d] for d in keep)
    acc = accumulator_dtype(data.dtype)
    n = cast(prod([data.shape[d] for d in axes], idt), acc)

    def x(idx: tuple) -> PrimExpr:
        return cast(data[idx], acc)

    def full_index(kept: tuple, raxes: dict) -> tuple:
        out, pos = [], 0
        for d in range(data.ndim):
            if d in raxes:
                out.append(raxes[d].var)
            else:
                out.append(kept[pos])
                pos += 1
        return tuple(out)

    def new_axes() -> dict:
        return {d: te.reduce_axis((const(0, data.shape[d].dtype), data.shape[d]), name=f"k{d}")
                for d in axes}

    def total(*idx: PrimExpr) -> PrimExpr:
        r = new_axes()
        return te.sum(x(full_index(idx, r)), axis=[r[d] for d in axes])

    s = compute(red_shape, total, name="T_layer_norm_red_sum", tag="comm_reduce",
                axis_names=axis_names(len(red_shape)))

    def sqdev(*idx: PrimExpr) -> PrimExpr:
        r = new_axes()
        diff = x(full_index(idx, r)) - s[idx] / n
        return te.sum(diff * diff, axis=[r[d] for d in axes])

    v = compute(red_shape, sqdev, name="T_layer_norm_red_var", tag="comm_reduce",
                axis_names=axis_names(len(red_shape)))
    eps = const(epsilon, acc)

    def norm(*idx: PrimExpr) -> PrimExpr:
        kept = tuple(idx[d] for d in keep)
        out = (x(idx) - s[kept] / n) * intrin.rsqrt(v[kept] / n + eps)
        param_idx = tuple(idx[d] for d in axes)
        if gamma is not None:
            out = out * cast(gamma[param_idx], acc)
        if beta is not None:
            out = out + cast(beta[param_idx], acc)
        return cast(out, data.dtype)

    return compute(data.shape, norm, name="T_layer_norm", tag="injective",
                   axis_names=axis_names(data.ndim))


def group_norm(data: Tensor, gamma: Tensor | None, beta: Tensor | None, num_groups: int,
               channel_axis: int = 1, axes: Sequence[int] | None = None,
               epsilon: float = 1e-5) -> Tensor:
    """Normalization over channel groups: the channels are split into ``num_groups``
    groups; mean and variance are taken over each group's channels and ``axes`` (the
    spatial axes, by default all but batch and channel); ``gamma``/``beta`` are per
    channel."""
    _float(data, "group_norm")
    ca = normalize_axes(channel_axis, data.ndim)[0]
    if axes is None:
        axes = [d for d in range(data.ndim) if d not in (0, ca)]
    sp = [d for d in normalize_axes(axes, data.ndim) if d != ca]
    channels = data.shape[ca]
    c = const_int(channels)
    if c is not None and c % num_groups:
        raise IRTypeError(f"topi.nn.group_norm: {c} channels do not split into {num_groups} "
                          "groups")
    idt = index_dtype(data)
    per_group = floordiv(as_index(channels, idt), num_groups)
    keep = [d for d in range(data.ndim) if d not in sp]
    red_shape = tuple(const(num_groups, idt) if d == ca else data.shape[d] for d in keep)
    acc = accumulator_dtype(data.dtype)
    count = cast(per_group * prod([data.shape[d] for d in sp], idt), acc)

    def x(idx: tuple) -> PrimExpr:
        return cast(data[idx], acc)

    def source(idx: tuple, rc: Any, raxes: dict) -> tuple:
        out, pos = [], 0
        for d in range(data.ndim):
            if d in raxes:
                out.append(raxes[d].var)
            elif d == ca:
                out.append(idx[pos] * per_group + rc.var)
                pos += 1
            else:
                out.append(idx[pos])
                pos += 1
        return tuple(out)

    def reduce_axes() -> tuple[Any, dict]:
        rc = te.reduce_axis((const(0, idt), per_group), name="rc")
        raxes = {d: te.reduce_axis((const(0, data.shape[d].dtype), data.shape[d]),
                                   name=f"k{d}") for d in sp}
        return rc, raxes

    def total(*idx: PrimExpr) -> PrimExpr:
        rc, raxes = reduce_axes()
        return te.sum(x(source(idx, rc, raxes)), axis=[rc] + [raxes[d] for d in sp])

    s = compute(red_shape, total, name="T_group_norm_red_sum", tag="comm_reduce",
                axis_names=axis_names(len(red_shape)))

    def sqdev(*idx: PrimExpr) -> PrimExpr:
        rc, raxes = reduce_axes()
        diff = x(source(idx, rc, raxes)) - s[idx] / count
        return te.sum(diff * diff, axis=[rc] + [raxes[d] for d in sp])

    v = compute(red_shape, sqdev, name="T_group_norm_red_var", tag="comm_reduce",
                axis_names=axis_names(len(red_shape)))
    eps = const(epsilon, acc)

    def norm(*idx: PrimExpr) -> PrimExpr:
        kept = tuple(floordiv(idx[d], per_group) if d == ca else idx[d] for d in keep)
        out = (x(idx) - s[kept] / count) * intrin.rsqrt(v[kept] / count + eps)
        if gamma is not None:
            out = out * cast(gamma[idx[ca]], acc)
        if beta is not None:
            out = out + cast(beta[idx[ca]], acc)
        return cast(out, data.dtype)

    return compute(data.shape, norm, name="T_group_norm", tag="injective",
                   axis_names=axis_names(data.ndim))


def batch_norm(data: Tensor, gamma: Tensor | None, beta: Tensor | None,
               moving_mean: Tensor, moving_var: Tensor, axis: int = 1,
               epsilon: float = 1e-5, center: bool = True, scale: bool = True) -> Tensor:
    """Inference batch norm: ``(x - mean[c]) / sqrt(var[c] + epsilon) * gamma[c] +
    beta[c]`` with per-channel statistics along ``axis``; returns the normalized tensor."""
    _float(data, "batch_norm")
    ax = normalize_axes(axis, data.ndim)[0]
    acc = accumulator_dtype(data.dtype)  # 16-bit floats in float32, rounded once
    eps = const(epsilon, acc)

    def fn(*idx: PrimExpr) -> PrimExpr:
        c = idx[ax]
        out = (cast(data[idx], acc) - cast(moving_mean[c], acc)) * \
            intrin.rsqrt(cast(moving_var[c], acc) + eps)
        if scale and gamma is not None:
            out = out * cast(gamma[c], acc)
        if center and beta is not None:
            out = out + cast(beta[c], acc)
        return cast(out, data.dtype)

    return compute(data.shape, fn, name="T_batch_norm", tag="injective",
                   axis_names=axis_names(data.ndim))

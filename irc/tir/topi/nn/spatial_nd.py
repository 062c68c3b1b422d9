"""Convolution and pooling over any number of spatial axes, for channel-first data
``(N, C, *spatial)``: ``conv_nd``, ``conv_transpose_nd``, ``max_pool_nd`` /
``avg_pool_nd`` / ``lp_pool_nd`` and ``max_pool_nd_indices`` (where each maximum was
found), and ``deform_conv2d``.

Paddings are ONNX-ordered: the begins of every spatial axis, then the ends. Pooling
follows PyTorch's ceil mode: the output grows to cover a last, partial window, unless
that window would start inside the end padding. A transposed convolution is computed
directly (each output cell gathers the input cells whose stride lands on it), so any
padding, negative padding included (from ONNX's ``output_shape``), works the same way.

Sums (convolutions, average and Lp pooling) of floats narrower than 32 bits accumulate
in float32 (``accumulator_dtype``) and are rounded once, in a stage after the reduction.
"""

from __future__ import annotations

from typing import Any, Sequence

from ....core import dtype as dt
from ....core.diagnostics import IRTypeError
from ...expr import PrimExpr, all, cast, const, floordiv, floormod, if_then_else, select
from ...expr import max_ as _max
from ...expr import min_ as _min
from ...intrin import abs as _abs
from ...intrin import floor as _floor
from ...intrin import pow as _pow
from ...te import tensor as te
from ...te.tensor import Tensor, compute
from ..utils import (
    accumulator_dtype,
    as_index,
    axis_names,
    const_int,
    get_const_int,
    index_dtype,
    round_to,
)
from .pad import pad
from .pooling import max_pad_value


def _spatial_args(data: Tensor, what: str, values: dict[str, Any]) -> int:
    if not isinstance(data, Tensor) or data.ndim < 3:
        raise IRTypeError(f"topi.nn.{what} needs a tensor (N, C, spatial...) of rank 3 or "
                          "more")
    k = data.ndim - 2
    for name, v in values.items():
        want = 2 * k if name == "padding" else k
        if len(v) != want:
            raise IRTypeError(f"topi.nn.{what}: {name} has {len(v)} entries for {k} spatial "
                              f"axes (expected {want})")
    return k


def _term(i: PrimExpr, scale: int) -> PrimExpr:
    return i if scale == 1 else i * scale


def _read(t: Tensor, dtype: str, idx: Sequence[PrimExpr]) -> PrimExpr:
    return cast(t[tuple(idx)], dtype)


def conv_nd(data: Tensor, kernel: Tensor, strides: Sequence[int], padding: Sequence[int],
            dilation: Sequence[int], groups: int = 1, out_dtype: str | None = None) -> Tensor:
    """Convolution of ``data`` (N, C, *S) with ``kernel`` (O, C / groups, *K)."""
    k = _spatial_args(data, "conv_nd", {"strides": strides, "padding": padding,
                                        "dilation": dilation})
    if not isinstance(kernel, Tensor) or kernel.ndim != data.ndim:
        raise IRTypeError("topi.nn.conv_nd: the kernel must have the data's rank")
    idt = index_dtype(data, kernel)
    ks = [get_const_int(kernel.shape[2 + i], "kernel size") for i in range(k)]
    begin, end = list(padding[:k]), list(padding[k:])
    src = data
    if any(begin) or any(end):
        src = pad(data, [0, 0] + begin, [0, 0] + end, 0.0, name="pad_temp")
    out_c, k_in = as_index(kernel.shape[0], idt), as_index(kernel.shape[1], idt)
    groups = int(groups)
    co = const_int(out_c)
    if groups < 1 or (co is not None and co % groups):
        raise IRTypeError(f"topi.nn.conv_nd: groups={groups} must divide the {co} output "
                          "channels")
    per_group = floordiv(out_c, groups) if groups > 1 else None
    shape = [as_index(data.shape[0], idt), out_c]
    for i in range(k):
        size = as_index(data.shape[2 + i], idt)
        eff = (ks[i] - 1) * dilation[i] + 1
        shape.append(floordiv(size + begin[i] + end[i] - eff, strides[i]) + 1)
    rc = te.reduce_axis((const(0, idt), k_in), name="rc")
    rk = [te.reduce_axis((const(0, idt), const(ks[i], idt)), name=f"rk{i}") for i in range(k)]
    out = out_dtype or data.dtype
    acc = accumulator_dtype(out)

    def fn(n: PrimExpr, f: PrimExpr, *xs: PrimExpr) -> PrimExpr:
        chan = rc.var if per_group is None else floordiv(f, per_group) * k_in + rc.var
        d_idx = [n, chan] + [_term(xs[i], strides[i]) + _term(rk[i].var, dilation[i])
                             for i in range(k)]
        w_idx = [f, rc.var] + [r.var for r in rk]
        return te.sum(_read(src, acc, d_idx) * _read(kernel, acc, w_idx), axis=[rc] + rk)

    return round_to(compute(tuple(shape), fn, name="conv_nd", tag="conv_nd",
                            axis_names=["nn", "ff"] + [f"x{i}" for i in range(k)]), out)


def conv_transpose_nd(data: Tensor, kernel: Tensor, strides: Sequence[int],
                      padding: Sequence[int], output_padding: Sequence[int],
                      dilation: Sequence[int], groups: int = 1,
                      out_dtype: str | None = None) -> Tensor:
    """Transposed convolution of ``data`` (N, C, *S) with ``kernel`` (C, O / groups, *K):
    output size ``(S - 1) * stride - pad_begin - pad_end + dilation * (K - 1) +
    output_padding + 1`` per axis; paddings may be negative."""
    k = _spatial_args(data, "conv_transpose_nd", {
        "strides": strides, "padding": padding, "output_padding": output_padding,
        "dilation": dilation})
    if not isinstance(kernel, Tensor) or kernel.ndim != data.ndim:
        raise IRTypeError("topi.nn.conv_transpose_nd: the kernel must have the data's rank")
    idt = index_dtype(data, kernel)
    ks = [get_const_int(kernel.shape[2 + i], "kernel size") for i in range(k)]
    groups = int(groups)
    in_c = as_index(data.shape[1], idt)
    og = as_index(kernel.shape[1], idt)
    ci = const_int(in_c)
    if groups < 1 or (ci is not None and ci % groups):
        raise IRTypeError(f"topi.nn.conv_transpose_nd: groups={groups} must divide the {ci} "
                          "input channels")
    cg = floordiv(in_c, groups) if groups > 1 else in_c
    sizes = [as_index(data.shape[2 + i], idt) for i in range(k)]
    shape = [as_index(data.shape[0], idt), og * groups if groups > 1 else og]
    for i in range(k):
        shape.append((sizes[i] - 1) * strides[i] - padding[i] - padding[k + i]
                     + dilation[i] * (ks[i] - 1) + output_padding[i] + 1)
    rc = te.reduce_axis((const(0, idt), cg), name="rc")
    rk = [te.reduce_axis((const(0, idt), const(ks[i], idt)), name=f"rk{i}") for i in range(k)]
    out = out_dtype or data.dtype
    acc = accumulator_dtype(out)

    def fn(n: PrimExpr, o: PrimExpr, *xs: PrimExpr) -> PrimExpr:
        if groups > 1:
            chan = floordiv(o, og) * cg + rc.var
            oc = floormod(o, og)
        else:
            chan, oc = rc.var, o
        conds, src = [], [n, chan]
        for i in range(k):
            t = xs[i] + padding[i] - _term(rk[i].var, dilation[i])
            conds.append(t >= 0)
            if strides[i] != 1:
                conds.append(floormod(t, strides[i]) == 0)
                t = floordiv(t, strides[i])
            conds.append(t < sizes[i])
            src.append(t)
        prod = _read(data, acc, src) * _read(kernel, acc, [chan, oc] + [r.var for r in rk])
        return te.sum(if_then_else(all(*conds), prod, const(0, acc)), axis=[rc] + rk)

    return round_to(compute(tuple(shape), fn, name="conv_transpose_nd",
                            tag="conv_transpose_nd",
                            axis_names=["nn", "ff"] + [f"x{i}" for i in range(k)]), out)


def pool_output_size(size: PrimExpr, kernel: int, stride: int, dilation: int, begin: int,
                     end: int, ceil_mode: bool) -> PrimExpr:
    """The number of windows along one axis; in ceil mode a last, partial window counts
    when it starts before the end padding."""
    eff = (kernel - 1) * dilation + 1
    if not ceil_mode:
        return floordiv(size + begin + end - eff, stride) + 1
    out = floordiv(size + begin + end - eff + stride - 1, stride) + 1
    return _min(out, floordiv(size + begin - 1, stride) + 1)


def _pool_setup(data: Tensor, what: str, kernel: Sequence[int], strides: Sequence[int],
                padding: Sequence[int], dilation: Sequence[int], ceil_mode: bool,
                fill: PrimExpr) -> tuple:
    k = _spatial_args(data, what, {"kernel": kernel, "strides": strides, "padding": padding,
                                   "dilation": dilation})
    idt = index_dtype(data)
    begin, end = list(padding[:k]), list(padding[k:])
    # Ceil mode: stride - 1 more cells at the end let the last, partial window be read.
    extra = [s - 1 if ceil_mode else 0 for s in strides]
    src = data
    if any(begin) or any(e + x for e, x in zip(end, extra)):
        src = pad(data, [0, 0] + begin, [0, 0] + [e + x for e, x in zip(end, extra)], fill,
                  name="pad_temp", axis_names=axis_names(data.ndim))
    sizes = [as_index(data.shape[2 + i], idt) for i in range(k)]
    shape = [as_index(data.shape[0], idt), as_index(data.shape[1], idt)] + [
        pool_output_size(sizes[i], kernel[i], strides[i], dilation[i], begin[i], end[i],
                         ceil_mode) for i in range(k)]
    rk = [te.reduce_axis((const(0, idt), const(kernel[i], idt)), name=f"rv{i}")
          for i in range(k)]

    def window(idx: Sequence[PrimExpr]) -> list[PrimExpr]:
        return list(idx[:2]) + [_term(idx[2 + i], strides[i]) + _term(rk[i].var, dilation[i])
                                for i in range(k)]

    return k, idt, src, sizes, tuple(shape), rk, window


def max_pool_nd(data: Tensor, kernel: Sequence[int], strides: Sequence[int],
                padding: Sequence[int], dilation: Sequence[int],
                ceil_mode: bool = False) -> Tensor:
    """The maximum of each window."""
    _k, _idt, src, _s, shape, rk, window = _pool_setup(
        data, "max_pool_nd", kernel, strides, padding, dilation, ceil_mode,
        max_pad_value(data.dtype))
    return compute(shape, lambda *i: te.max(src[tuple(window(i))], axis=rk), name="pool_max",
                   tag="pool_max", axis_names=axis_names(data.ndim))


def avg_pool_nd(data: Tensor, kernel: Sequence[int], strides: Sequence[int],
                padding: Sequence[int], dilation: Sequence[int], ceil_mode: bool = False,
                count_include_pad: bool = False) -> Tensor:
    """The mean of each window: over its cells inside the input, or with
    ``count_include_pad`` over its cells inside the padded input (never the cells ceil
    mode adds beyond the end padding)."""
    k, idt, src, sizes, shape, rk, window = _pool_setup(
        data, "avg_pool_nd", kernel, strides, padding, dilation, ceil_mode,
        const(0, data.dtype))
    acc = accumulator_dtype(data.dtype)
    total = compute(shape, lambda *i: te.sum(cast(src[tuple(window(i))], acc), axis=rk),
                    name="pool_sum", tag="pool_sum", axis_names=axis_names(data.ndim))

    def count(i: int, o: PrimExpr) -> PrimExpr:
        d, kk = dilation[i], kernel[i]
        start = _term(o, strides[i]) - padding[i]
        if count_include_pad:
            if not ceil_mode:
                return const(kk, idt)
            last = _min(start + (kk - 1) * d, sizes[i] + padding[k + i] - 1)
            return floordiv(last - start, d) + 1
        first = _max(floordiv(-start + d - 1, d), const(0, idt))
        last = _min(floordiv(sizes[i] - 1 - start, d), const(kk - 1, idt))
        # A window wholly in the padding averages nothing: 0 / 0 is NaN for floats, as in
        # ONNX; integers divide by one instead.
        return _max(last - first + 1, const(0 if dt.is_float(acc) else 1, idt))

    def average(*idx: PrimExpr) -> PrimExpr:
        n = count(0, idx[2])
        for i in range(1, k):
            n = n * count(i, idx[2 + i])
        v = total[idx]
        return cast(v / cast(n, v.dtype), data.dtype)

    return compute(shape, average, name="pool_avg", tag="elemwise",
                   axis_names=axis_names(data.ndim))


def lp_pool_nd(data: Tensor, kernel: Sequence[int], strides: Sequence[int],
               padding: Sequence[int], dilation: Sequence[int], ceil_mode: bool = False,
               p: int = 2) -> Tensor:
    """``(sum |x| ** p) ** (1 / p)`` of each window (padding counts as zeros)."""
    _k, _idt, src, _s, shape, rk, window = _pool_setup(
        data, "lp_pool_nd", kernel, strides, padding, dilation, ceil_mode,
        const(0, data.dtype))

    def power(v: PrimExpr) -> PrimExpr:
        if p == 1:
            return _abs(v)
        if p == 2:
            return v * v
        return _pow(_abs(v), const(float(p), v.dtype))

    acc = accumulator_dtype(data.dtype)
    total = compute(shape, lambda *i: te.sum(power(cast(src[tuple(window(i))], acc)),
                                             axis=rk),
                    name="pool_lp_sum", tag="pool_sum", axis_names=axis_names(data.ndim))

    def root(*idx: PrimExpr) -> PrimExpr:
        v = total[idx]
        return cast(v if p == 1 else _pow(v, const(1.0 / p, v.dtype)), data.dtype)

    return compute(shape, root, name="pool_lp", tag="elemwise",
                   axis_names=axis_names(data.ndim))


def max_pool_nd_indices(data: Tensor, kernel: Sequence[int], strides: Sequence[int],
                        padding: Sequence[int], dilation: Sequence[int],
                        ceil_mode: bool = False, storage_order: int = 0) -> Tensor:
    """Where each window's maximum is, as an int64 index into the flattened input (the
    first such cell in the window's row-major order); ``storage_order=1`` numbers the
    spatial cells column-major."""
    k, idt, src, sizes, shape, rk, window = _pool_setup(
        data, "max_pool_nd_indices", kernel, strides, padding, dilation, ceil_mode,
        max_pad_value(data.dtype))
    names = axis_names(data.ndim)
    best = compute(shape, lambda *i: te.max(src[tuple(window(i))], axis=rk), name="pool_max",
                   tag="pool_max", axis_names=names)
    sizes64 = [cast(s, "int64") for s in sizes]
    row = [const(1, "int64")] * k
    for i in range(k - 2, -1, -1):
        row[i] = row[i + 1] * sizes64[i + 1]
    plane = row[0] * sizes64[0]
    never = const(2 ** 62, "int64")

    def first(*idx: PrimExpr) -> PrimExpr:
        at = window(idx)
        conds, pos = [src[tuple(at)] == best[idx]], const(0, "int64")
        for i in range(k):
            c = at[2 + i] - padding[i]
            conds += [c >= 0, c < sizes[i]]
            pos = pos + cast(c, "int64") * row[i]
        return te.min(select(all(*conds), pos, never), axis=rk)

    where = compute(shape, first, name="pool_argmax", tag="comm_reduce_idx",
                    axis_names=names)

    def flat(*idx: PrimExpr) -> PrimExpr:
        pos = where[idx]
        if storage_order:
            col, scale = const(0, "int64"), const(1, "int64")
            for i in range(k):
                col = col + floormod(floordiv(pos, row[i]), sizes64[i]) * scale
                scale = scale * sizes64[i]
            pos = col
        channel = cast(idx[0], "int64") * cast(as_index(data.shape[1], idt), "int64") \
            + cast(idx[1], "int64")
        return channel * plane + pos

    return compute(shape, flat, name="pool_indices", tag="elemwise", axis_names=names)


def deform_conv2d(data: Tensor, offset: Tensor, kernel: Tensor, mask: Tensor | None,
                  strides: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                  groups: int = 1, offset_groups: int = 1) -> Tensor:
    """Deformable 2-D convolution (ONNX ``DeformConv``): each kernel tap reads the input
    at its regular position plus a learned (dy, dx) offset, bilinearly interpolated
    (zero outside the input), scaled by the mask when given. ``offset`` is
    (N, offset_groups * KH * KW * 2, OH, OW), ``mask`` (N, offset_groups * KH * KW, OH,
    OW); the kernel is (O, C / groups, KH, KW)."""
    if data.ndim != 4 or kernel.ndim != 4 or offset.ndim != 4:
        raise IRTypeError("topi.nn.deform_conv2d needs 4-d data, offset and kernel")
    idt = index_dtype(data, kernel, offset)
    kh = get_const_int(kernel.shape[2], "kernel height")
    kw = get_const_int(kernel.shape[3], "kernel width")
    n, c = as_index(data.shape[0], idt), as_index(data.shape[1], idt)
    h, w = as_index(data.shape[2], idt), as_index(data.shape[3], idt)
    oh, ow = as_index(offset.shape[2], idt), as_index(offset.shape[3], idt)
    k_in = as_index(kernel.shape[1], idt)
    out_c = as_index(kernel.shape[0], idt)
    per_offset_group = floordiv(c, offset_groups)
    dt = data.dtype
    # The sampling positions, the interpolation and the sums all compute in the
    # accumulator dtype (float32 for narrow floats).
    acc = accumulator_dtype(dt)

    def sample(b: PrimExpr, ch: PrimExpr, ky: PrimExpr, kx: PrimExpr, y: PrimExpr,
               x: PrimExpr) -> PrimExpr:
        g = floordiv(ch, per_offset_group)
        tap = ky * kw + kx
        base = (g * (kh * kw) + tap) * 2
        py = cast(y * strides[0] - padding[0] + ky * dilation[0], acc) + \
            cast(offset[b, base, y, x], acc)
        px = cast(x * strides[1] - padding[1] + kx * dilation[1], acc) + \
            cast(offset[b, base + 1, y, x], acc)
        y0f, x0f = _floor(py), _floor(px)
        y0, x0 = cast(y0f, idt), cast(x0f, idt)
        wy1, wx1 = py - y0f, px - x0f
        wy0, wx0 = const(1.0, acc) - wy1, const(1.0, acc) - wx1

        def at(yy: PrimExpr, xx: PrimExpr) -> PrimExpr:
            inside = all(yy >= 0, yy < h, xx >= 0, xx < w)
            return if_then_else(inside, cast(data[b, ch, yy, xx], acc), const(0.0, acc))

        v = (wy0 * wx0 * at(y0, x0) + wy0 * wx1 * at(y0, x0 + 1)
             + wy1 * wx0 * at(y0 + 1, x0) + wy1 * wx1 * at(y0 + 1, x0 + 1))
        if mask is not None:
            v = v * cast(mask[b, g * (kh * kw) + tap, y, x], acc)
        return v

    cols = compute((n, c, const(kh, idt), const(kw, idt), oh, ow), sample,
                   name="deform_columns", tag="injective",
                   axis_names=["b", "ch", "ky", "kx", "y", "x"])
    rc = te.reduce_axis((const(0, idt), k_in), name="rc")
    ry = te.reduce_axis((const(0, idt), const(kh, idt)), name="ry")
    rx = te.reduce_axis((const(0, idt), const(kw, idt)), name="rx")
    per_group = floordiv(out_c, groups) if groups > 1 else None

    def fn(b: PrimExpr, f: PrimExpr, y: PrimExpr, x: PrimExpr) -> PrimExpr:
        chan = rc.var if per_group is None else floordiv(f, per_group) * k_in + rc.var
        return te.sum(cols[b, chan, ry.var, rx.var, y, x] *
                      cast(kernel[f, rc.var, ry.var, rx.var], acc), axis=[rc, ry, rx])

    return round_to(compute((n, out_c, oh, ow), fn, name="deform_conv2d",
                            tag="deform_conv2d", axis_names=["nn", "ff", "yy", "xx"]), dt)


__all__ = ["avg_pool_nd", "conv_nd", "conv_transpose_nd", "deform_conv2d", "lp_pool_nd",
           "max_pool_nd", "max_pool_nd_indices", "pool_output_size"]

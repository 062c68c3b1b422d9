"""Pooling over the H and W axes of NCHW or NHWC tensors: max/avg pooling with padding,
dilation and ceil mode; adaptive pooling; global pooling.

Max pooling pads with the lowest finite value (``pad_temp``) and reduces with
``pool_max``; average pooling sums (``pool_sum``) and divides (``pool_avg``) by the
window size, counting padded cells only with ``count_include_pad``. Averages of floats
narrower than 32 bits sum and divide in float32 (``accumulator_dtype``) and round once.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ....core import dtype as dt
from ....core.diagnostics import IRTypeError
from ...expr import PrimExpr, cast, const, floordiv
from ...expr import max_ as _max
from ...expr import min_ as _min
from ...te import tensor as te
from ...te.tensor import Tensor, compute
from ..utils import accumulator_dtype, as_index, axis_names, get_const_int, index_dtype
from .pad import get_pad_tuple, pad, pair


def max_pad_value(dtype: str) -> PrimExpr:
    """What max pooling pads with: the lowest finite value of ``dtype`` (every window
    holds an input cell, so the padding never reaches the output)."""
    if dt.is_float(dtype):
        info = np.finfo(np.dtype("float32" if dtype == "bfloat16" else dtype))
        return const(float(info.min), dtype)
    return const(dt.min_value(dtype), dtype)


def _hw(layout: str) -> tuple[int, int]:
    if layout not in ("NCHW", "NHWC"):
        raise IRTypeError(f"pooling layout must be NCHW or NHWC, got {layout!r}")
    return layout.index("H"), layout.index("W")


def pool2d(data: Tensor, kernel: Any, stride: Any, dilation: Any, padding: Any,
           pool_type: str, ceil_mode: bool = False, layout: str = "NCHW",
           count_include_pad: bool = True) -> Tensor:
    """Max (``pool_type="max"``) or average (``"avg"``) pooling of a 4-d tensor."""
    if pool_type not in ("max", "avg"):
        raise IRTypeError(f"pool_type must be 'max' or 'avg', got {pool_type!r}")
    if not isinstance(data, Tensor) or data.ndim != 4:
        raise IRTypeError("pool2d needs a 4-d tensor")
    ha, wa = _hw(layout)
    kh, kw = pair(kernel, "pool size")
    sh, sw = pair(stride, "strides")
    dh, dw = pair(dilation, "dilation")
    pt, pl, pb, pr = get_pad_tuple(padding, (kh, kw))
    idt = index_dtype(data)
    h, w = as_index(data.shape[ha], idt), as_index(data.shape[wa], idt)
    ekh, ekw = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    # Ceil mode: extra cells at the end let a last, partial window start.
    xb, xr = (sh - 1, sw - 1) if ceil_mode else (0, 0)
    out_h = floordiv(h + pt + pb + xb - ekh, sh) + 1
    out_w = floordiv(w + pl + pr + xr - ekw, sw) + 1
    before, after = [0] * 4, [0] * 4
    before[ha], before[wa], after[ha], after[wa] = pt, pl, pb + xb, pr + xr
    fill = max_pad_value(data.dtype) if pool_type == "max" else const(0, data.dtype)
    src = data
    if any(before) or any(after):
        src = pad(data, before, after, fill, name="pad_temp", axis_names=axis_names(4))
    shape = list(data.shape)
    shape[ha], shape[wa] = out_h, out_w
    rv0 = te.reduce_axis((const(0, idt), const(kh, idt)), name="rv0")
    rv1 = te.reduce_axis((const(0, idt), const(kw, idt)), name="rv1")

    def window(*idx: PrimExpr) -> list[PrimExpr]:
        at = list(idx)
        at[ha] = (idx[ha] * sh if sh != 1 else idx[ha]) + (rv0.var * dh if dh != 1 else rv0.var)
        at[wa] = (idx[wa] * sw if sw != 1 else idx[wa]) + (rv1.var * dw if dw != 1 else rv1.var)
        return at

    names = axis_names(4)
    if pool_type == "max":
        return compute(tuple(shape), lambda *i: te.max(src[tuple(window(*i))], axis=[rv0, rv1]),
                       name="pool_max", tag="pool_max", axis_names=names)
    acc = accumulator_dtype(data.dtype)
    total = compute(tuple(shape),
                    lambda *i: te.sum(cast(src[tuple(window(*i))], acc), axis=[rv0, rv1]),
                    name="pool_sum", tag="pool_sum", axis_names=names)

    def count(o: PrimExpr, k: int, s: int, d: int, pad_head: int, pad_tail: int,
              size: PrimExpr) -> PrimExpr:
        start = o * s - pad_head
        if count_include_pad:
            if not ceil_mode:
                return const(k, idt)
            end = _min(start + (k - 1) * d, size + pad_tail - 1)
            return floordiv(end - start, d) + 1
        first = _max(floordiv(-start + d - 1, d), const(0, idt))
        last = _min(floordiv(size - 1 - start, d), const(k - 1, idt))
        # A window wholly in the padding averages nothing: 0 / 0 is NaN for floats, as in
        # ONNX; integers divide by one instead.
        return _max(last - first + 1, const(0 if dt.is_float(acc) else 1, idt))

    def average(*idx: PrimExpr) -> PrimExpr:
        n = count(idx[ha], kh, sh, dh, pt, pb, h) * count(idx[wa], kw, sw, dw, pl, pr, w)
        v = total[idx]
        return cast(v / cast(n, v.dtype), data.dtype)

    return compute(tuple(shape), average, name="pool_avg", tag="elemwise", axis_names=names)


def max_pool2d(data: Tensor, pool_size: Any, strides: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, layout: str = "NCHW") -> Tensor:
    """2-d max pooling (``strides`` default to ``pool_size``)."""
    strides = pool_size if strides is None else strides
    return pool2d(data, pool_size, strides, dilation, padding, "max", ceil_mode, layout)


def avg_pool2d(data: Tensor, pool_size: Any, strides: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, layout: str = "NCHW",
               count_include_pad: bool = True) -> Tensor:
    """2-d average pooling (``strides`` default to ``pool_size``)."""
    strides = pool_size if strides is None else strides
    return pool2d(data, pool_size, strides, dilation, padding, "avg", ceil_mode, layout,
                  count_include_pad)


def adaptive_pool(data: Tensor, output_size: Any, pool_type: str,
                  layout: str = "NCHW") -> Tensor:
    """Pooling to a fixed ``output_size`` (H, W): output cell ``o`` covers input rows
    ``floor(o*H/OH)`` to ``ceil((o+1)*H/OH)``. Windows of uneven size use the largest
    window with a ``where`` mask."""
    if pool_type not in ("max", "avg"):
        raise IRTypeError(f"pool_type must be 'max' or 'avg', got {pool_type!r}")
    if not isinstance(data, Tensor) or data.ndim != 4:
        raise IRTypeError("adaptive_pool needs a 4-d tensor")
    ha, wa = _hw(layout)
    idt = index_dtype(data)
    h = get_const_int(data.shape[ha], "adaptive pooling input height")
    w = get_const_int(data.shape[wa], "adaptive pooling input width")
    oh, ow = pair(output_size if output_size is not None else (h, w), "output_size")
    shape = list(data.shape)
    shape[ha], shape[wa] = const(oh, idt), const(ow, idt)

    def bounds(o: PrimExpr, size: int, out: int) -> tuple[PrimExpr, PrimExpr]:
        start = floordiv(o * size, out)
        end = floordiv((o + 1) * size + out - 1, out)
        return start, end

    def max_window(size: int, out: int) -> int:
        return max(math.ceil((o + 1) * size / out) - (o * size) // out for o in range(out))

    even_h, even_w = h % oh == 0, w % ow == 0
    kh, kw = max_window(h, oh), max_window(w, ow)
    rv0 = te.reduce_axis((const(0, idt), const(kh, idt)), name="rv0")
    rv1 = te.reduce_axis((const(0, idt), const(kw, idt)), name="rv1")
    reducer = te.max if pool_type == "max" else te.sum
    # Sums accumulate in float32 for narrow floats; maxima are exact in any dtype.
    acc = data.dtype if pool_type == "max" else accumulator_dtype(data.dtype)

    def fn(*idx: PrimExpr) -> PrimExpr:
        at = list(idx)
        conds = []
        if even_h:
            at[ha] = idx[ha] * kh + rv0.var if kh != 1 else idx[ha] + rv0.var
        else:
            s, e = bounds(idx[ha], h, oh)
            at[ha] = s + rv0.var
            conds.append(rv0.var < e - s)
        if even_w:
            at[wa] = idx[wa] * kw + rv1.var if kw != 1 else idx[wa] + rv1.var
        else:
            s, e = bounds(idx[wa], w, ow)
            at[wa] = s + rv1.var
            conds.append(rv1.var < e - s)
        where = None
        if conds:
            where = conds[0] if len(conds) == 1 else conds[0] & conds[1]
        return reducer(cast(data[tuple(at)], acc), axis=[rv0, rv1], where=where)

    names = axis_names(4)
    name = "adaptive_pool_max" if pool_type == "max" else "adaptive_pool_sum"
    pooled = compute(tuple(shape), fn, name=name, tag=name, axis_names=names)
    if pool_type == "max":
        return pooled

    def average(*idx: PrimExpr) -> PrimExpr:
        if even_h:
            ch: PrimExpr = const(kh, idt)
        else:
            s, e = bounds(idx[ha], h, oh)
            ch = e - s
        if even_w:
            cw: PrimExpr = const(kw, idt)
        else:
            s, e = bounds(idx[wa], w, ow)
            cw = e - s
        v = pooled[idx]
        return cast(v / cast(ch * cw, v.dtype), data.dtype)

    return compute(tuple(shape), average, name="adaptive_pool_avg", tag="elemwise",
                   axis_names=names)


def global_pool(data: Tensor, pool_type: str, layout: str = "NCHW") -> Tensor:
    """Max or average over the whole H and W axes (output H = W = 1)."""
    return adaptive_pool(data, (1, 1), pool_type, layout)


"""Image operators: resizing (nearest, linear and cubic interpolation over any axes, with
ONNX's coordinate transformations and antialiasing), depth/space rearrangements, grid
sampling, and the gathers of ``RoiAlign``, ``Col2Im`` and ``MaxUnpool``.

Resize is separable: each resized axis gets small tables computed once per output
coordinate (the source coordinate, the indices of the taps and their weights), and the
output reads the input at the taps of every resized axis, weighted by the product of the
per-axis weights. Weights are computed in float64, the weighted sum in float32 (float64
for float64 data).

Every coordinate transformation maps output index ``o`` to ``alpha * o + beta``. With the
scale, the region of interest and the input size known when the kernel is built, alpha
and beta are exact rationals (a scale from ONNX's ``sizes`` is ``size / input size``, one
from ``scales`` a binary float), and the kernel computes ``(A * o + B) / C`` from their
integer numerators and common denominator: integers below 2**52 are exact in float64 and
the one division is correctly rounded, so ``floor``, the comparisons with ``k + 0.5`` that
pick the nearest pixel and the ``tf_crop_and_resize`` bounds are decided as in exact
arithmetic (a float64 evaluation of ONNX's formulas lands one ulp beside an exact integer
or half-integer, and ``nearest`` then picks the neighbouring pixel). Scales read at run
time use the formulas in float64.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Sequence

from ...core import dtype as dt
from ...core.diagnostics import IRTypeError
from .. import intrin
from ..expr import PrimExpr, all, any, cast, const, floordiv, floormod, select
from ..expr import max_ as _max
from ..expr import min_ as _min
from ..te import tensor as te
from ..te.tensor import Tensor, compute
from .utils import (
    INJECTIVE,
    accumulator_dtype,
    as_index,
    axis_names,
    const_int,
    index_dtype,
    round_to,
)

F64 = "float64"

COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                    "align_corners", "asymmetric", "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
RESIZE_METHODS = ("nearest", "linear", "cubic")


def _f64(v: float) -> PrimExpr:
    return const(float(v), F64)


def _as_f64(e: Any) -> PrimExpr:
    if isinstance(e, (int, float)):
        return _f64(e)
    return e if e.dtype == F64 else cast(e, F64)


def accumulate_dtype(dtype: str) -> str:
    """The dtype interpolation sums in: float64 for float64 data, else float32."""
    return F64 if dtype == F64 else "float32"


def from_accumulator(value: PrimExpr, dtype: str) -> PrimExpr:
    """An interpolated value cast back to ``dtype``: integers round half to even and
    saturate (as ONNX's reference does)."""
    if dt.is_float(dtype):
        return value if value.dtype == dtype else cast(value, dtype)
    if dtype == "bool":
        return value != const(0, value.dtype)
    lo, hi = dt.min_value(dtype), dt.max_value(dtype)
    r = intrin.nearbyint(value)
    r = _min(_max(r, const(float(lo), value.dtype)), const(float(hi), value.dtype))
    return cast(r, dtype)



def cubic_weight(t: PrimExpr, a: float) -> PrimExpr:
    """Keys' cubic convolution kernel with coefficient ``a`` at distance ``t``."""
    x = intrin.fabs(t)
    x2 = x * x
    x3 = x2 * x
    near = (x3 * _f64(a + 2)) - (x2 * _f64(a + 3)) + _f64(1)
    far = x3 * _f64(a) - x2 * _f64(5 * a) + x * _f64(8 * a) - _f64(4 * a)
    return select(x <= _f64(1), near, select(x < _f64(2), far, _f64(0)))


def linear_weight(t: PrimExpr) -> PrimExpr:
    """The triangle (tent) kernel at distance ``t``."""
    return _max(_f64(1) - intrin.fabs(t), _f64(0))


def source_affine(mode: str, scale: Fraction, n_in: int, n_out: int,
                  roi: tuple[Fraction, Fraction] | None = None) -> tuple[Fraction, Fraction]:
    """(alpha, beta), exact: ONNX's coordinate transformation ``mode`` maps output index
    ``o`` of an axis resized from ``n_in`` to ``n_out`` by ``scale`` to the input
    coordinate ``alpha * o + beta``. As ONNX's reference, ``align_corners``,
    ``pytorch_half_pixel`` and ``tf_crop_and_resize`` use the unrounded output width
    ``scale * n_in``; ``roi`` is ``tf_crop_and_resize``'s (start, end)."""
    half = Fraction(1, 2)
    width = scale * n_in
    if mode == "asymmetric":
        return 1 / scale, Fraction(0)
    if mode == "half_pixel" or (mode == "pytorch_half_pixel" and width != 1):
        return 1 / scale, half / scale - half
    if mode == "pytorch_half_pixel":
        return Fraction(0), -half
    if mode == "half_pixel_symmetric":
        return 1 / scale, Fraction(n_in, 2) * (1 - n_out / width) + half / scale - half
    if mode == "align_corners":
        return (Fraction(0) if width == 1 else (n_in - 1) / (width - 1)), Fraction(0)
    if mode == "tf_crop_and_resize":
        if roi is None:
            raise IRTypeError("topi.image.resize: tf_crop_and_resize needs a roi")
        r0, r1 = roi
        span = (r1 - r0) * (n_in - 1)
        if width == 1:
            return Fraction(0), span / 2 + r0 * (n_in - 1)
        return span / (width - 1), r0 * (n_in - 1)
    raise IRTypeError(f"topi.image.resize: unknown coordinate_transformation_mode {mode!r}")


def exact_integers(alpha: Fraction, beta: Fraction, n_out: int
                   ) -> tuple[int, int, int] | None:
    """(A, B, C) with ``alpha = A / C`` and ``beta = B / C`` when ``A * o + B`` (for every
    ``0 <= o < n_out``) and ``C`` are below 2**52, so float64 holds them exactly; else
    None."""
    c = alpha.denominator * beta.denominator // math.gcd(alpha.denominator,
                                                         beta.denominator)
    a, b = alpha.numerator * (c // alpha.denominator), beta.numerator * (c // beta.denominator)
    if c >= _EXACT_LIMIT or abs(a) * max(n_out - 1, 0) + abs(b) >= _EXACT_LIMIT:
        return None
    return a, b, c


def _finite(v: Any) -> bool:
    """Whether ``v`` is a Python number that is not infinite nor NaN."""
    return isinstance(v, (int, float)) and math.isfinite(v)


# The bound on the integers of an exact source coordinate (see exact_integers): below
# it, a float64 quotient never crosses an integer or a half-integer.
_EXACT_LIMIT = 2 ** 52


class _ResizeAxis:
    """The tables of one resized axis (see the module docstring)."""

    def __init__(self, data: Tensor, axis: int, pos: int, out_size: int, scale: Any,
                 roi: tuple[Any, Any] | None, coord_mode: str):
        self.axis = axis
        self.idt = index_dtype(data)
        self.in_size = as_index(data.shape[axis], self.idt)
        self.out_size = int(out_size)
        static_in = const_int(data.shape[axis])
        self.in_f = _f64(static_in) if static_in is not None else cast(self.in_size, F64)
        self.scale = scale if isinstance(scale, PrimExpr) else _f64(scale)
        self.static_scale = None if isinstance(scale, PrimExpr) else float(scale)
        self.roi = roi
        self.coord_mode = coord_mode
        self.name = f"{pos}"
        self.affine = None
        if static_in is not None and isinstance(scale, Fraction) and scale > 0 and (
                roi is None or _finite(roi[0]) and _finite(roi[1])):
            exact_roi = None if roi is None else (Fraction(roi[0]), Fraction(roi[1]))
            alpha, beta = source_affine(coord_mode, scale, static_in, self.out_size,
                                        exact_roi)
            self.affine = exact_integers(alpha, beta, self.out_size)
        self.coords = compute((const(self.out_size, self.idt),), self._source,
                              name=f"resize_coord{pos}", tag=INJECTIVE, axis_names=["o"])

    def _source(self, o: PrimExpr) -> PrimExpr:
        """The input coordinate output index ``o`` maps to (ONNX's transformations)."""
        y = cast(o, F64)
        if self.affine is not None:
            a, b, c = self.affine
            x = y * _f64(a) + _f64(b) if a != 1 else y + _f64(b)
            return x / _f64(c) if c != 1 else x
        s, n_in = self.scale, self.in_f
        width = s * n_in  # the output width before rounding
        mode = self.coord_mode
        if mode == "asymmetric":
            return y / s
        if mode == "half_pixel":
            return (y + _f64(0.5)) / s - _f64(0.5)
        if mode == "pytorch_half_pixel":
            return select(width == _f64(1), _f64(-0.5), (y + _f64(0.5)) / s - _f64(0.5))
        if mode == "half_pixel_symmetric":
            adjustment = _f64(self.out_size) / width
            offset = n_in / _f64(2) * (_f64(1) - adjustment)
            return offset + (y + _f64(0.5)) / s - _f64(0.5)
        if mode == "align_corners":
            return select(width == _f64(1), _f64(0),
                          y * (n_in - _f64(1)) / (width - _f64(1)))
        if mode == "tf_crop_and_resize":
            r0, r1 = (_as_f64(v) for v in self.roi)
            span = (r1 - r0) * (n_in - _f64(1))
            x = select(width == _f64(1), span / _f64(2), y * span / (width - _f64(1)))
            return x + r0 * (n_in - _f64(1))
        raise IRTypeError(f"topi.image.resize: unknown coordinate_transformation_mode "
                          f"{mode!r}")

    def outside(self, o: PrimExpr) -> PrimExpr:
        """Whether output index ``o`` maps outside the input (tf_crop_and_resize)."""
        x = self.coords[o]
        return any(x < _f64(0), x > self.in_f - _f64(1))

    def clamp(self, i: PrimExpr) -> PrimExpr:
        return _min(_max(i, const(0, self.idt)), self.in_size - 1)

    def nearest_table(self, nearest_mode: str) -> Tensor:
        def fn(o: PrimExpr) -> PrimExpr:
            x = self.coords[o]
            lo = intrin.floor(x)
            r = x - lo
            base = cast(lo, self.idt)
            if nearest_mode == "floor":
                return self.clamp(base)
            up = {"round_prefer_floor": r > _f64(0.5), "round_prefer_ceil": r >= _f64(0.5),
                  "ceil": r > _f64(0)}[nearest_mode]
            return self.clamp(base + cast(up, self.idt))

        return compute((const(self.out_size, self.idt),), fn, name=f"resize_index{self.name}",
                       tag=INJECTIVE, axis_names=["o"])

    def filter_tables(self, method: str, cubic_a: float, exclude_outside: bool,
                      antialias: bool, min_scale: float, acc: str) -> tuple[Tensor, Tensor]:
        """(indices, weights), both of shape (out, taps)."""
        support = 1.0 if method == "linear" else 2.0
        # Antialiasing stretches the filter by 1/scale when downsampling; a window sized
        # for the smallest scale possible also covers larger ones (the extra taps weigh 0).
        stretch = min(min_scale, 1.0) if antialias else 1.0
        start = math.floor(-support / stretch) + 1
        taps = 2 - 2 * start
        factor = None
        if antialias and not (self.static_scale is not None and self.static_scale >= 1.0):
            factor = _min(self.scale, _f64(1))
        out = const(self.out_size, self.idt)
        ntaps = const(taps, self.idt)

        def tap(o: PrimExpr, k: PrimExpr) -> PrimExpr:
            j = cast(intrin.floor(self.coords[o]), self.idt) + k
            return j + const(start, self.idt) if start else j

        def raw(o: PrimExpr, k: PrimExpr) -> PrimExpr:
            t = cast(tap(o, k), F64) - self.coords[o]
            t = t * factor if factor is not None else t
            w = linear_weight(t) if method == "linear" else cubic_weight(t, cubic_a)
            if exclude_outside:
                j = tap(o, k)
                w = select(all(j >= const(0, self.idt), j < self.in_size), w, _f64(0))
            return w

        index = compute((out, ntaps), lambda o, k: self.clamp(tap(o, k)),
                        name=f"resize_tap{self.name}", tag=INJECTIVE, axis_names=["o", "k"])
        if antialias or exclude_outside:
            rk = te.reduce_axis((const(0, self.idt), ntaps), name="rk")
            total = compute((out,), lambda o: te.sum(raw(o, rk.var), axis=[rk]),
                            name=f"resize_weight_sum{self.name}", axis_names=["o"])

            def weight(o: PrimExpr, k: PrimExpr) -> PrimExpr:
                s = total[o]
                return cast(raw(o, k) / select(s == _f64(0), _f64(1), s), acc)
        else:
            def weight(o: PrimExpr, k: PrimExpr) -> PrimExpr:
                return cast(raw(o, k), acc)

        weights = compute((out, ntaps), weight, name=f"resize_weight{self.name}",
                          tag=INJECTIVE, axis_names=["o", "k"])
        return index, weights


def resize(data: Tensor, axes: Sequence[int], sizes: Sequence[int], scales: Any,
           roi: Any = None, method: str = "nearest",
           coordinate_transformation_mode: str = "half_pixel",
           nearest_mode: str = "round_prefer_floor", cubic_coeff_a: float = -0.75,
           exclude_outside: bool = False, extrapolation_value: float = 0.0,
           antialias: bool = False, min_scales: Sequence[float] | None = None,
           scale_ratios: Sequence[int] = ()) -> Tensor:
    """``data`` resized along ``axes`` to ``sizes`` (ONNX ``Resize`` semantics).

    ``scales`` gives one scale per resized axis: Python floats, or a 1-D float tensor read
    at run time. ``scale_ratios``, when given, are the exact scales as the numerators then
    the denominators (a scale ``size / input size`` is not a binary float). ``roi`` (for
    ``tf_crop_and_resize``) gives the starts then the ends, one per resized axis: floats
    or a tensor. ``min_scales`` bounds run-time scales from below (only antialiasing needs
    it: it sizes the filter window)."""
    if method not in RESIZE_METHODS:
        raise IRTypeError(f"topi.image.resize: method must be one of {RESIZE_METHODS}, "
                          f"got {method!r}")
    if coordinate_transformation_mode not in COORDINATE_MODES:
        raise IRTypeError("topi.image.resize: unknown coordinate_transformation_mode "
                          f"{coordinate_transformation_mode!r}")
    if nearest_mode not in NEAREST_MODES:
        raise IRTypeError(f"topi.image.resize: unknown nearest_mode {nearest_mode!r}")
    k = len(axes)
    if len(sizes) != k:
        raise IRTypeError(f"topi.image.resize: {len(sizes)} sizes for {k} axes")
    crop = coordinate_transformation_mode == "tf_crop_and_resize"
    if crop and roi is None:
        raise IRTypeError("topi.image.resize: tf_crop_and_resize needs a roi")

    if scale_ratios and (isinstance(scales, Tensor) or len(scale_ratios) != 2 * k or
                         min(int(d) for d in scale_ratios[k:]) <= 0):
        raise IRTypeError(f"topi.image.resize: scale_ratios must be {k} numerators, then "
                          f"{k} positive denominators, of constant scales; got "
                          f"{list(scale_ratios)}")

    def scale_of(i: int) -> Any:
        if isinstance(scales, Tensor):
            return cast(scales[i], F64)
        if scale_ratios:
            return Fraction(int(scale_ratios[i]), int(scale_ratios[k + i]))
        value = float(scales[i])
        return Fraction(value) if math.isfinite(value) else value

    def roi_of(i: int) -> tuple[Any, Any] | None:
        if not crop:
            return None
        if isinstance(roi, Tensor):
            return cast(roi[i], F64), cast(roi[k + i], F64)
        return float(roi[i]), float(roi[k + i])

    if min_scales is None:
        if isinstance(scales, Tensor) and antialias:
            raise IRTypeError("topi.image.resize: antialiasing with run-time scales needs "
                              "min_scales")
        min_scales = [1.0] * k if isinstance(scales, Tensor) else [float(s) for s in scales]
    tables = [_ResizeAxis(data, a, i, sizes[i], scale_of(i), roi_of(i),
                          coordinate_transformation_mode) for i, a in enumerate(axes)]
    shape = list(data.shape)
    for t in tables:
        shape[t.axis] = const(t.out_size, t.idt)
    names = axis_names(data.ndim)
    dtype = data.dtype
    fill = const(extrapolation_value, dtype) if dt.is_float(dtype) else \
        const(int(extrapolation_value), dtype)

    if method == "nearest":
        index = [t.nearest_table(nearest_mode) for t in tables]

        def gather(*idx: PrimExpr) -> PrimExpr:
            src = list(idx)
            for t, table in zip(tables, index):
                src[t.axis] = table[idx[t.axis]]
            value = data[tuple(src)]
            if crop:
                return select(any(*(t.outside(idx[t.axis]) for t in tables)), fill, value)
            return value

        return compute(tuple(shape), gather, name="resize", tag=INJECTIVE, axis_names=names)

    if not dt.is_float(dtype) and dtype not in ("int8", "uint8", "int16", "uint16", "int32",
                                                "uint32"):
        raise IRTypeError(f"topi.image.resize: {method} interpolation of {dtype} data is "
                          "not supported")
    acc = accumulate_dtype(dtype)
    filt = [t.filter_tables(method, cubic_coeff_a, exclude_outside, antialias,
                            min_scales[i], acc) for i, t in enumerate(tables)]
    raxes = [te.reduce_axis((const(0, t.idt), w.shape[1]), name=f"rk{i}")
             for i, (t, (_, w)) in enumerate(zip(tables, filt))]

    def interpolate(*idx: PrimExpr) -> Any:
        src = list(idx)
        weight = None
        for t, (index, w), r in zip(tables, filt, raxes):
            o = idx[t.axis]
            src[t.axis] = index[o, r.var]
            weight = w[o, r.var] if weight is None else weight * w[o, r.var]
        value = data[tuple(src)]
        value = value if value.dtype == acc else cast(value, acc)
        return te.sum(value * weight, axis=raxes)

    if dtype == acc and not crop:
        return compute(tuple(shape), interpolate, name="resize", axis_names=names)
    total = compute(tuple(shape), interpolate, name="resize_sum", axis_names=names)

    def finish(*idx: PrimExpr) -> PrimExpr:
        value = from_accumulator(total[idx], dtype)
        if crop:
            return select(any(*(t.outside(idx[t.axis]) for t in tables)), fill, value)
        return value

    return compute(tuple(shape), finish, name="resize", tag=INJECTIVE, axis_names=names)




# -- grid sampling ---------------------------------------------------------------------------

GRID_SAMPLE_METHODS = ("nearest", "linear", "cubic")
GRID_PADDING_MODES = ("zeros", "border", "reflection")


def _reflect(x: PrimExpr, lo: PrimExpr, hi: PrimExpr) -> PrimExpr:
    """``x`` reflected at the borders ``lo`` and ``hi`` until it lies between them."""
    span = hi - lo
    zero = const(0.0, x.dtype)
    below = lo - x
    above = x - hi
    dist = select(x < lo, below, above)
    folds = intrin.floor(dist / span)
    rest = dist - folds * span
    odd = folds - intrin.floor(folds / const(2.0, x.dtype)) * const(2.0, x.dtype) > zero
    from_lo = select(odd, hi - rest, lo + rest)
    from_hi = select(odd, lo + rest, hi - rest)
    return select(x < lo, from_lo, select(x > hi, from_hi, x))


def grid_sample(data: Tensor, grid: Tensor, method: str = "linear",
                padding_mode: str = "zeros", align_corners: bool = False,
                cubic_coeff_a: float = -0.75) -> Tensor:
    """ONNX ``GridSample``: ``data`` (N, C, D1, ..., Dk) sampled at the normalized
    coordinates of ``grid`` (N, O1, ..., Ok, k), whose last axis lists them innermost
    dimension first (x, y, ...); the result is (N, C, O1, ..., Ok)."""
    if method not in GRID_SAMPLE_METHODS:
        raise IRTypeError(f"topi.image.grid_sample: method must be one of "
                          f"{GRID_SAMPLE_METHODS}, got {method!r}")
    if padding_mode not in GRID_PADDING_MODES:
        raise IRTypeError(f"topi.image.grid_sample: padding_mode must be one of "
                          f"{GRID_PADDING_MODES}, got {padding_mode!r}")
    k = data.ndim - 2
    if k < 1 or grid.ndim != k + 2:
        raise IRTypeError(f"topi.image.grid_sample: a grid of rank {k + 2} is needed for "
                          f"data of rank {data.ndim}, got rank {grid.ndim}")
    idt = index_dtype(data, grid)
    fdt = grid.dtype
    sizes = [as_index(s, idt) for s in data.shape[2:]]
    fsizes = [cast(s, fdt) for s in sizes]

    def lo_hi(i: int) -> tuple[PrimExpr, PrimExpr]:
        if align_corners:
            return const(0.0, fdt), fsizes[i] - const(1.0, fdt)
        return const(-0.5, fdt), fsizes[i] - const(0.5, fdt)

    def source(*idx: PrimExpr) -> PrimExpr:
        # idx = (n, o1, ..., ok, i): the coordinate along input dimension i (D1 first).
        n, out, i = idx[0], idx[1:-1], idx[-1]
        values = []
        for d in range(k):
            g = grid[(n, *out, const(k - 1 - d, idt))]
            one, two = const(1.0, fdt), const(2.0, fdt)
            if align_corners:
                x = (g + one) / two * (fsizes[d] - one)
            else:
                x = ((g + one) * fsizes[d] - one) / two
            if method == "nearest":
                x = intrin.nearbyint(x)
            lo, hi = lo_hi(d)
            if padding_mode == "border":
                x = select(any(x < lo, x > hi),
                           _min(_max(x, const(0.0, fdt)), fsizes[d] - one), x)
            elif padding_mode == "reflection":
                x = _reflect(x, lo, hi)
            values.append(x)
        out_value = values[k - 1]
        for d in range(k - 2, -1, -1):
            out_value = select(i == const(d, idt), values[d], out_value)
        return out_value

    coords = compute((grid.shape[0], *grid.shape[1:-1], const(k, idt)), source,
                     name="grid_coord", tag=INJECTIVE)
    out_shape = (data.shape[0], data.shape[1], *grid.shape[1:-1])

    def pixel_index(d: int, j: PrimExpr) -> tuple[PrimExpr, PrimExpr | None]:
        """(in-range index, validity condition or None) of integer position ``j``."""
        last = sizes[d] - 1
        if padding_mode == "zeros":
            return _min(_max(j, const(0, idt)), last), all(j >= const(0, idt), j <= last)
        if padding_mode == "border":
            return _min(_max(j, const(0, idt)), last), None
        # An integer position reflected at the borders: period 2d about -0.5 and d - 0.5,
        # 2(d - 1) about 0 and d - 1 with align_corners.
        period = sizes[d] * 2 - (2 if align_corners else 0)
        m = floormod(j, _max(period, const(1, idt)))
        mirror = period - (0 if align_corners else 1)
        return select(m < sizes[d], m, mirror - m), None

    def load(n: PrimExpr, c: PrimExpr, taps: list[PrimExpr]) -> PrimExpr:
        src, conds = [n, c], []
        for d, j in enumerate(taps):
            pos, ok = pixel_index(d, j)
            src.append(pos)
            if ok is not None:
                conds.append(ok)
        value = data[tuple(src)]
        if conds:
            value = select(all(*conds), value, const(0, data.dtype))
        return value

    if method == "nearest":
        def nearest(n: PrimExpr, c: PrimExpr, *out: PrimExpr) -> PrimExpr:
            taps = [cast(coords[(n, *out, const(d, idt))], idt) for d in range(k)]
            return load(n, c, taps)

        return compute(out_shape, nearest, name="grid_sample", tag=INJECTIVE)

    acc = accumulate_dtype(data.dtype)
    ntaps, start = (2, 0) if method == "linear" else (4, -1)
    raxes = [te.reduce_axis((const(0, idt), const(ntaps, idt)), name=f"rk{d}")
             for d in range(k)]

    def interpolate(n: PrimExpr, c: PrimExpr, *out: PrimExpr) -> Any:
        taps, weight = [], None
        for d, r in enumerate(raxes):
            x = coords[(n, *out, const(d, idt))]
            base = intrin.floor(x)
            j = cast(base, idt) + r.var + const(start, idt) if start else \
                cast(base, idt) + r.var
            t = _as_f64(cast(j, fdt) - x)
            w = linear_weight(t) if method == "linear" else cubic_weight(t, cubic_coeff_a)
            w = cast(w, acc)
            taps.append(j)
            weight = w if weight is None else weight * w
        value = load(n, c, taps)
        value = value if value.dtype == acc else cast(value, acc)
        return te.sum(value * weight, axis=raxes)

    if data.dtype == acc:
        return compute(out_shape, interpolate, name="grid_sample")
    total = compute(out_shape, interpolate, name="grid_sample_sum")
    return compute(out_shape, lambda *i: from_accumulator(total[i], data.dtype),
                   name="grid_sample", tag=INJECTIVE)


# -- col2im --------------------------------------------------------------------------------


def col2im(data: Tensor, image_shape: Sequence[int], block_shape: Any, channels: int,
           strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int]) -> Tensor:
    """ONNX ``Col2Im``: the blocks of ``data`` (N, C * prod(block_shape), L) summed into
    an image (N, C, *image_shape). ``block_shape``: ints, or a 1-D integer tensor read at
    run time. ``pads`` lists the starts then the ends."""
    k = len(image_shape)
    idt = index_dtype(data)
    ck = const_int(data.shape[1])
    if ck is None or channels < 1 or ck % channels:
        raise IRTypeError(f"topi.image.col2im: dimension 1 of the input ({data.shape[1]}) "
                          f"must be a static multiple of the {channels} channels")
    kprod = ck // channels
    if isinstance(block_shape, Tensor):
        blocks = [cast(block_shape[const(d, idt)], idt) for d in range(k)]
    else:
        blocks = [const(int(b), idt) for b in block_shape]
    ishape = [const(int(v), idt) for v in image_shape]
    counts = [floordiv(ishape[d] + (pads[d] + pads[k + d]) - (blocks[d] - 1) * dilations[d]
                       - 1, const(strides[d], idt)) + 1 for d in range(k)]
    length = as_index(data.shape[2], idt)
    rk = te.reduce_axis((const(0, idt), const(kprod, idt)), name="rk")
    acc = accumulator_dtype(data.dtype)

    def fn(n: PrimExpr, c: PrimExpr, *pos: PrimExpr) -> Any:
        rem, offsets = rk.var, [None] * k
        for d in range(k - 1, -1, -1):
            offsets[d] = floormod(rem, blocks[d])
            rem = floordiv(rem, blocks[d])
        conds, flat = [], None
        for d in range(k):
            num = pos[d] + pads[d] - offsets[d] * dilations[d]
            s = const(strides[d], idt)
            where = floordiv(num, s)
            conds += [num >= const(0, idt), where < counts[d]]
            if strides[d] != 1:
                conds.append(floormod(num, s) == const(0, idt))
            flat = where if flat is None else flat * counts[d] + where
        flat = _min(_max(flat, const(0, idt)), length - 1)
        value = cast(data[n, c * kprod + rk.var, flat], acc)
        return te.sum(select(all(*conds), value, const(0, acc)), axis=[rk])

    shape = (data.shape[0], const(channels, idt), *ishape)
    return round_to(compute(shape, fn, name="col2im"), data.dtype)


# -- roi align -----------------------------------------------------------------------------


def roi_align(data: Tensor, rois: Tensor, batch_indices: Tensor, output_size: Sequence[int],
              spatial_scale: float, sampling_ratio: int, mode: str = "avg",
              half_pixel: bool = True) -> Tensor:
    """ONNX ``RoiAlign``: for each region ``rois[r] = (x1, y1, x2, y2)`` of image
    ``batch_indices[r]`` in ``data`` (N, C, H, W), the (C, out_h, out_w) average or
    maximum of ``sampling_ratio`` x ``sampling_ratio`` bilinear samples per bin."""
    if mode not in ("avg", "max"):
        raise IRTypeError(f"topi.image.roi_align: mode must be avg or max, got {mode!r}")
    if sampling_ratio < 1:
        raise IRTypeError("topi.image.roi_align: sampling_ratio must be positive")
    idt = index_dtype(data, rois)
    out_h, out_w = (int(v) for v in output_size)
    height, width = (as_index(s, idt) for s in data.shape[2:])
    grid = sampling_ratio
    acc = accumulate_dtype(data.dtype)
    iy = te.reduce_axis((const(0, idt), const(grid, idt)), name="iy")
    ix = te.reduce_axis((const(0, idt), const(grid, idt)), name="ix")
    offset = _f64(0.5 if half_pixel else 0.0)

    def box(r: PrimExpr, j: int) -> PrimExpr:
        return cast(rois[r, const(j, idt)], F64) * _f64(spatial_scale) - offset

    def sample_axis(r: PrimExpr, lo_col: int, hi_col: int, bins: int, o: PrimExpr,
                    i: PrimExpr, size: PrimExpr) -> tuple[Any, Any, Any, Any, Any]:
        """(low index, high index, low weight, high weight, in range) along one axis."""
        start = box(r, lo_col)
        extent = box(r, hi_col) - start
        if not half_pixel:
            extent = _max(extent, _f64(1))
        step = extent / _f64(bins)
        pos = start + cast(o, F64) * step + (cast(i, F64) + _f64(0.5)) * step / _f64(grid)
        fsize = cast(size, F64)
        inside = all(pos >= _f64(-1), pos <= fsize)
        pos = _max(pos, _f64(0))
        low = cast(pos, idt)
        at_end = low >= size - 1
        low = select(at_end, size - 1, low)
        high = select(at_end, size - 1, low + 1)
        frac = select(at_end, _f64(0), pos - cast(low, F64))
        return low, high, _f64(1) - frac, frac, inside

    def fn(r: PrimExpr, c: PrimExpr, ph: PrimExpr, pw: PrimExpr) -> Any:
        b = cast(batch_indices[r], idt)
        b = _min(_max(b, const(0, idt)), as_index(data.shape[0], idt) - 1)
        y0, y1, hy, ly, in_y = sample_axis(r, 1, 3, out_h, ph, iy.var, height)
        x0, x1, hx, lx, in_x = sample_axis(r, 0, 2, out_w, pw, ix.var, width)
        terms = []
        for yy, wy in ((y0, hy), (y1, ly)):
            for xx, wx in ((x0, hx), (x1, lx)):
                v = data[b, c, yy, xx]
                v = v if v.dtype == acc else cast(v, acc)
                terms.append(cast(wy * wx, acc) * v)
        zero = const(0.0, acc)
        if mode == "avg":
            value = select(all(in_y, in_x), terms[0] + terms[1] + terms[2] + terms[3], zero)
            return te.sum(value, axis=[iy, ix])
        best = _max(_max(terms[0], terms[1]), _max(terms[2], terms[3]))
        return te.max(select(all(in_y, in_x), best, zero), axis=[iy, ix])

    shape = (rois.shape[0], data.shape[1], const(out_h, idt), const(out_w, idt))
    pooled = compute(shape, fn, name="roi_align_pool")
    count = const(float(grid * grid), acc)

    def finish(*idx: PrimExpr) -> PrimExpr:
        v = pooled[idx]
        return from_accumulator(v / count if mode == "avg" else v, data.dtype)

    return compute(shape, finish, name="roi_align", tag=INJECTIVE)


__all__ = ["resize", "grid_sample", "col2im", "roi_align", "cubic_weight", "linear_weight",
           "accumulate_dtype", "from_accumulator", "COORDINATE_MODES", "NEAREST_MODES",
           "RESIZE_METHODS", "GRID_SAMPLE_METHODS", "GRID_PADDING_MODES"]

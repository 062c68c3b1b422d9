"""Converters of ONNX's signal operators: ``DFT`` (opsets 17 and 20), ``STFT`` and
``MelWeightMatrix``.

A DFT of a static length is a product with constant matrices of cosines and sines (the
transform axis moved last, real and imaginary parts kept apart): O(n^2) work per signal
rather than an FFT's O(n log n), which is what a compiled matrix product does well for
the short signals models use (spectrogram frames). Zero padding and truncation to
``dft_length``, ``onesided`` output and the inverse (including the one-sided, real-output
inverse, ``numpy.fft.irfft``) are folded into the matrices.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core import dtype as dt
from ...core.diagnostics import IRCError
from ...ir import ops
from ...ir.expr import Constant, Expr, If, SeqExpr, Tuple
from ...ir.ops import integer
from ...ir.struct_info import TensorStructInfo
from .importer import Node
from .protos import onnx_dtype, valid_name
from .registry import converter


def _scalar_input(node: Node, i: int, what: str) -> int | None:
    if not node.has_input(i):
        return None
    c = node.const(i)
    if c is None:
        raise node.error(f"{what} (input {i}) must be known at import time")
    if c.size != 1:
        raise node.error(f"{what} (input {i}) must be a scalar, got shape {list(c.shape)}")
    return int(c.reshape(-1)[0])


def _matrices(m: int, n: int, inverse: bool, onesided: bool
              ) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray] | None]:
    """((P, Q), (R, S) or None) with real = re @ P + im @ Q and imag = re @ R + im @ S for
    ``m`` input points along the axis and a transform of length ``n``."""
    if not inverse:
        n_out = n // 2 + 1 if onesided else n
        t = np.arange(min(m, n)).reshape(-1, 1)
        theta = 2 * np.pi * t * np.arange(n_out).reshape(1, -1) / n
        c, s = _padded(np.cos(theta), m), _padded(np.sin(theta), m)
        return (c, s), (-s, c)
    if onesided:  # numpy.fft.irfft: a Hermitian spectrum from its first n // 2 + 1 points
        k_used = min(m, n // 2 + 1)
        k = np.arange(k_used).reshape(-1, 1)
        theta = 2 * np.pi * k * np.arange(n).reshape(1, -1) / n
        weight = np.where((k == 0) | ((n % 2 == 0) & (k == n // 2)), 1.0, 2.0) / n
        return (_padded(weight * np.cos(theta), m), _padded(-weight * np.sin(theta), m)), None
    k = np.arange(min(m, n)).reshape(-1, 1)
    theta = 2 * np.pi * k * np.arange(n).reshape(1, -1) / n
    c, s = _padded(np.cos(theta) / n, m), _padded(np.sin(theta) / n, m)
    return (c, -s), (s, c)


def _padded(a: np.ndarray, m: int) -> np.ndarray:
    """``a`` with zero rows appended up to ``m`` rows (input points past the transform's
    length are dropped: their rows are zero)."""
    if a.shape[0] >= m:
        return a[:m]
    return np.concatenate([a, np.zeros((m - a.shape[0], a.shape[1]))], axis=0)


@converter("DFT", since=17)
def _dft(node: Node) -> Expr:
    shape = node.static_shape(0)
    if shape is None:
        raise node.error("the input's shape must be static")
    r = len(shape)
    if r < 2 or shape[-1] not in (1, 2):
        raise node.error(f"the input must end in a dimension of 1 (real) or 2 (complex), "
                         f"got shape {shape}")
    d = node.dtype(0)
    if not dt.is_float(d) or d == "bfloat16":
        raise node.error(f"needs a float16, float32 or float64 input, got {d}")
    n = _scalar_input(node, 1, "dft_length")
    if n is not None and n < 1:
        raise node.error(f"dft_length must be positive, got {n}")
    if node.opset >= 20 and node.has_input(2) and node.const(2) is None:
        return _runtime_axis(node, shape, n)
    if node.opset >= 20:
        axis = _scalar_input(node, 2, "axis")
        axis = -2 if axis is None else axis
    else:
        axis = int(node.attr("axis", 1))
    if not -r <= axis < r - 1 or axis == -1:
        raise node.error(f"axis {axis} is out of range for an input of rank {r} (the last "
                         "dimension holds the real and imaginary parts)")
    return _along(node, shape, axis % r, n)


def _along(node: Node, shape: list[int], axis: int, n: int | None) -> Expr:
    """The DFT of input 0 along ``axis`` (non-negative, not the last)."""
    return _transform(node, node.input(0), shape, axis, n, bool(node.attr("inverse", 0)),
                      bool(node.attr("onesided", 0)))


def _transform(node: Node, x: Expr, shape: list[int], axis: int, n: int | None,
               inverse: bool, onesided: bool) -> Expr:
    """The DFT of ``x`` (of static ``shape``, real or complex in its last dimension) along
    ``axis``."""
    r = len(shape)
    d = node.dtype(0)
    m = shape[axis]
    if n is None:
        n = 2 * (m - 1) if inverse and onesided else m
    if n < 1:
        raise node.error(f"a one-sided inverse of {m} points has no default length; give "
                         "dft_length")
    (p, q), second = _matrices(m, n, inverse, onesided)
    perm = [a for a in range(r - 1) if a != axis] + [axis]
    back = [int(v) for v in np.argsort(perm)]

    def part(j: int) -> Expr:
        v = ops.squeeze(ops.take(x, Constant.from_numpy(np.array([j], "int64")), axis=r - 1),
                        [r - 1])
        return ops.permute_dims(v, perm)

    def const(a: np.ndarray) -> Constant:
        return Constant.from_numpy(a, d)

    re = part(0)
    im = part(1) if shape[-1] == 2 else None

    def combine(a: np.ndarray, b: np.ndarray) -> Expr:
        y = ops.matmul(re, const(a))
        if im is not None:
            y = ops.add(y, ops.matmul(im, const(b)))
        return ops.expand_dims(ops.permute_dims(y, back), r - 1)

    real = combine(p, q)
    if second is None:
        return real
    return ops.concat(Tuple(fields=(real, combine(*second))), r - 1)


def _runtime_axis(node: Node, shape: list[int], n: int | None) -> Expr:
    """The axis known only at run time: the transform along every possible axis, the one
    asked for picked by graph-level ``If``s (each a shape of its own when they differ)."""
    r = len(shape)
    a = ops.astype(ops.reshape(node.input(2), []), "int64")
    a = node.emit(ops.where(ops.less(a, _i64(0)), ops.add(a, _i64(r)), a), "axis")
    outs: dict[int, Expr] = {}
    for axis in range(r - 1):
        try:
            outs[axis] = node.emit(_along(node, shape, axis, n), f"dft_axis{axis}")
        except IRCError:  # no transform along this axis (checked at run time)
            pass
    if not outs:
        raise node.error(f"no axis of the input of shape {shape} can be transformed")
    valid = Constant.from_numpy(np.array(sorted(outs), "int64"))
    node.runtime_check(ops.astype(ops.logical_not(ops.max(ops.equal(valid, a))), "int64"),
                       "axis_not_transformable")
    axes = sorted(outs)
    result = outs[axes[-1]]
    for axis in reversed(axes[:-1]):
        cond = node.emit(ops.equal(a, _i64(axis)), "is_axis")
        value = If(cond=cond, true_branch=SeqExpr(blocks=(), body=outs[axis]),
                   false_branch=SeqExpr(blocks=(), body=result))
        result = node.emit(value, "dft")
        sinfo = node.graph.bb.normalize(result).struct_info
        if sinfo.shape is None:
            dims = [node.graph.fresh_dim(f"{valid_name(node.output_names[0], 'd')}_d{j}")
                    for j in range(r)]
            result = node.graph.bb.match_cast(result, TensorStructInfo(shape=tuple(dims),
                                                                       dtype=node.dtype(0)),
                                              "dft")
    return result


@converter("STFT", since=17)
def _stft(node: Node) -> Expr:
    """Frames of the signal (``frame_step`` apart, zero-padded past its end to the window's
    length), weighted by the window, each transformed (one-sided by default)."""
    shape = node.static_shape(0)
    if shape is None or len(shape) != 3 or shape[-1] not in (1, 2):
        raise node.error(f"the signal must have a static shape [batch, length, 1 or 2], "
                         f"got {shape}")
    d = node.dtype(0)
    if not dt.is_float(d) or d == "bfloat16":
        raise node.error(f"needs a float16, float32 or float64 signal, got {d}")
    runtime_step = node.has_input(1) and node.const(1) is None
    if node.has_input(3) and node.const(3) is None:
        return _stft_runtime_length(node, shape, d)
    step = 1 if runtime_step else _scalar_input(node, 1, "frame_step")
    frame_length = _scalar_input(node, 3, "frame_length")
    window = node.input(2) if node.has_input(2) else None
    size = None
    if window is not None:
        wshape = node.static_shape(2)
        if wshape is None or len(wshape) != 1:
            raise node.error(f"the window must be 1-D of static length, got {wshape}")
        size = wshape[0]
    frame_length = frame_length or size or shape[1]
    size = size or frame_length
    if step is None or step < 1 or frame_length < 1 or frame_length > shape[1] or \
            size < frame_length:
        raise node.error(f"frame_step {step} and frame_length {frame_length} do not frame "
                         f"a signal of length {shape[1]}")
    x = node.input(0)
    # The last frame starts at most frame_length before the end: a window longer than the
    # frame reads up to size - frame_length zeros past it.
    if size > frame_length:
        pad = Constant.from_numpy(np.zeros((shape[0], size - frame_length, shape[2])), d)
        x = ops.concat(Tuple(fields=(x, pad)), 1)
    if runtime_step:
        # The number of frames depends on the step: a shape variable bound at run time.
        st = _runtime_step(node)
        count = ops.add(ops.floor_divide(_i64(shape[1] - frame_length), st), _i64(1))
        (frames,) = node.runtime_dims(count, "frames")
        x = _framed(x, shape, st, frames, size, Constant.from_numpy(np.arange(size,
                                                                              dtype="int64")))
    else:
        frames = 1 + (shape[1] - frame_length) // step
        flat = Constant.from_numpy((np.arange(frames).reshape(-1, 1) * step + np.arange(
            size).reshape(1, -1)).reshape(-1).astype("int64"))
        x = ops.reshape(ops.take(x, flat, axis=1), [shape[0], frames, size, shape[2]])
    if window is not None:
        x = ops.multiply(x, ops.reshape(window, [1, 1, size, 1]))
    x = node.emit(x, "frames")
    return _transform(node, x, [shape[0], frames, size, shape[2]], 2, frame_length, False,
                      bool(node.attr("onesided", 1)))


def _framed(x: Expr, shape: list[int], st: Expr, frames: Any, width: Any,
            offsets: Expr) -> Expr:
    """``x`` ([batch, length, parts]) cut into ``frames`` frames of ``width`` points
    starting ``st`` apart (``offsets``: ``arange(width)``): [batch, frames, width, parts]."""
    starts = ops.multiply(ops.arange(0, frames, 1, "int64"), st)
    index = ops.add(ops.reshape(starts, [frames, 1]), ops.reshape(offsets, [1, width]))
    return ops.reshape(ops.take(x, ops.reshape(index, [frames * width]), axis=1),
                       [shape[0], frames, width, shape[2]])


def _runtime_step(node: Node) -> Expr:
    """``frame_step`` (input 1) known only at run time, checked to be at least 1."""
    st = _runtime_scalar(node, 1, "frame_step")
    node.runtime_check(ops.reshape(ops.less(st, _i64(1)), []), "frame_step_below_1")
    return st


def _runtime_scalar(node: Node, i: int, what: str) -> Expr:
    """Input ``i`` (an integer scalar known at run time) as a 1-element int64 tensor."""
    v = node.input(i)
    sinfo = node.sinfo(i)
    if sinfo.ndim > 1 or not dt.is_integer(str(sinfo.dtype)):
        raise node.error(f"{what} (input {i}) must be an integer scalar, got "
                         f"{sinfo.dtype} of rank {sinfo.ndim}")
    return node.emit(ops.astype(ops.reshape(v, [1]), "int64"), what)


def _stft_runtime_length(node: Node, shape: list[int], d: str) -> Expr:
    """STFT whose frame length is known only at run time (no window: a window's length
    would fix it): the frame count, the number of frequencies and the matrices of cosines
    and sines are computed when the model runs, their sizes bound as shape variables."""
    if node.has_input(2):
        raise node.error("a window together with a run-time frame_length is not supported; "
                         "give frame_length as a constant")
    batch, length, parts = shape
    fl = _runtime_scalar(node, 3, "frame_length")
    node.runtime_check(ops.reshape(ops.logical_or(ops.less(fl, _i64(1)),
                                                  ops.greater(fl, _i64(length))), []),
                       "frame_length_out_of_range")
    if node.has_input(1) and node.const(1) is None:
        st = _runtime_step(node)
    else:
        step = _scalar_input(node, 1, "frame_step") or 1
        if step < 1:
            raise node.error(f"frame_step {step} is below 1")
        st = _i64(np.asarray([step]))
    onesided = bool(node.attr("onesided", 1))
    count = ops.add(ops.floor_divide(ops.subtract(_i64(length), fl), st), _i64(1))
    bins = ops.add(ops.floor_divide(fl, _i64(2)), _i64(1)) if onesided else fl
    (n,) = node.runtime_dims(fl, "frame_length")
    (frames,) = node.runtime_dims(count, "frames")
    (k,) = node.runtime_dims(node.emit(bins, "bins"), "bins")
    x = node.emit(_framed(node.input(0), shape, st, frames, n,
                          ops.arange(0, n, 1, "int64")), "frames")
    # theta[t, f] = 2 pi ((t f) mod n) / n, the product reduced first so it stays exact
    tf = ops.multiply(ops.reshape(ops.arange(0, n, 1, "int64"), [n, 1]),
                      ops.reshape(ops.arange(0, k, 1, "int64"), [1, k]))
    theta = ops.divide(ops.multiply(ops.astype(integer.floor_mod(tf, fl), "float64"),
                                    Constant.from_numpy(np.asarray(2 * np.pi))),
                       ops.astype(fl, "float64"))
    theta = node.emit(theta, "theta")
    c = node.emit(ops.astype(ops.cos(theta), d), "cos")
    s = node.emit(ops.astype(ops.sin(theta), d), "sin")
    re = ops.reshape(ops.take(x, _i64(np.asarray([0])), axis=3), [batch, frames, n])
    real = ops.matmul(re, c)
    imag = ops.negative(ops.matmul(re, s))
    if parts == 2:
        im = ops.reshape(ops.take(x, _i64(np.asarray([1])), axis=3), [batch, frames, n])
        real = ops.add(real, ops.matmul(im, s))
        imag = ops.add(imag, ops.matmul(im, c))
    return ops.concat(Tuple(fields=(ops.expand_dims(real, 3), ops.expand_dims(imag, 3))), 3)


def _i64(v: int) -> Constant:
    return Constant.from_numpy(np.asarray(v, "int64"))


@converter("MelWeightMatrix", since=17)
def _mel_weight_matrix(node: Node) -> Expr:
    """The ``[dft_length // 2 + 1, num_mel_bins]`` matrix of triangular filters that
    maps a one-sided spectrum to mel bands, computed as ONNX's reference does: the band
    edges evenly spaced in mel between the two edge frequencies (in the edges' dtype),
    converted to spectrum bins in float64 and rounded down; each filter rises from its
    left edge to 1 at its centre and falls to its right edge. The sizes are read at run
    time when they are not constants."""
    for i, what in ((0, "num_mel_bins"), (1, "dft_length"), (2, "sample_rate")):
        if not dt.is_integer(node.dtype(i)) or node.ndim(i) != 0:
            raise node.error(f"{what} (input {i}) must be an integer scalar")
    for i, what in ((3, "lower_edge_hertz"), (4, "upper_edge_hertz")):
        if not dt.is_float(node.dtype(i)) or node.ndim(i) != 0:
            raise node.error(f"{what} (input {i}) must be a float scalar")
    edge = node.dtype(3)
    out_dtype = onnx_dtype(int(node.attr("output_datatype", 1)), "output_datatype")

    def f64(e: Expr) -> Expr:
        return ops.astype(e, "float64")

    def const(v: float, dtype: str = "float64") -> Constant:
        return Constant.from_numpy(np.asarray(v), dtype)

    def mel(hertz: Expr) -> Expr:  # 2595 * log10(1 + hz / 700), in the edges' dtype
        x = ops.astype(hertz, edge) if node.dtype(4) != edge else hertz
        ratio = ops.log(ops.add(const(1, edge), ops.divide(x, const(700, edge))))
        return ops.multiply(const(2595, edge), ops.divide(ratio, const(np.log(10), edge)))

    bins = ops.astype(node.input(0), "int64")
    dft_length = ops.astype(node.input(1), "int64")
    rows = ops.add(ops.floor_divide(dft_length, _i64(2)), _i64(1))
    (n_rows, n_bins) = node.runtime_dims(ops.reshape(ops.concat(Tuple(fields=(
        ops.reshape(rows, [1]), ops.reshape(bins, [1]))), 0), [2]), "dim")
    low, high = mel(node.input(3)), mel(node.input(4))
    step = ops.divide(ops.subtract(high, low), ops.astype(ops.add(bins, _i64(2)), edge))
    points = ops.arange(0, n_bins + 2, 1, "int64")
    hz = ops.add(ops.multiply(f64(points), f64(step)), f64(low))
    hz = ops.multiply(const(700), ops.subtract(
        ops.exp(ops.multiply(ops.divide(hz, const(2595)), const(np.log(10)))), const(1)))
    edges = ops.astype(ops.floor(ops.divide(
        ops.multiply(f64(ops.add(dft_length, _i64(1))), hz), f64(node.input(2)))), "int64")
    left, centre, right = (ops.take(edges, ops.arange(k, n_bins + k, 1, "int64"), axis=0)
                           for k in range(3))
    j = ops.expand_dims(ops.arange(0, n_rows, 1, "int64"), 1)  # [rows, 1] against [bins]
    rising = ops.logical_and(ops.greater_equal(j, left), ops.less(j, centre))
    falling = ops.logical_and(ops.greater(j, centre), ops.less(j, right))
    up = ops.divide(f64(ops.subtract(j, left)), f64(ops.maximum(ops.subtract(centre, left),
                                                                 _i64(1))))
    down = ops.divide(f64(ops.subtract(right, j)), f64(ops.maximum(ops.subtract(right, centre),
                                                                    _i64(1))))
    value = ops.where(ops.equal(j, centre), const(1), ops.where(
        rising, up, ops.where(falling, down, const(0))))
    return ops.astype(value, out_dtype)


__all__: list[str] = []

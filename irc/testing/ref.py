"""Numpy reference implementations of operators, the oracle of numeric tests.

Straightforward and readable rather than fast; float64 accumulation where cheap.
"""

from __future__ import annotations

from math import erf, sqrt
from typing import Sequence

import numpy as np


def _pair(v: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(v, int):
        return v, v
    v = tuple(v)
    return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])


def _pad4(padding: int | Sequence[int]) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from 1, 2 or 4 values."""
    if isinstance(padding, int):
        return padding, padding, padding, padding
    p = tuple(padding)
    if len(p) == 1:
        return p[0], p[0], p[0], p[0]
    if len(p) == 2:
        return p[0], p[1], p[0], p[1]
    return p[0], p[1], p[2], p[3]


def conv2d_nchw(data: np.ndarray, weight: np.ndarray, strides=1, padding=0, dilation=1,
                groups: int = 1) -> np.ndarray:
    """2-D convolution, data NCHW, weight OIHW (I = in_channels / groups)."""
    sh, sw = _pair(strides)
    dh, dw = _pair(dilation)
    top, left, bottom, right = _pad4(padding)
    n, c, h, w = data.shape
    o, ig, kh, kw = weight.shape
    x = np.pad(data, ((0, 0), (0, 0), (top, bottom), (left, right)))
    oh = (h + top + bottom - dh * (kh - 1) - 1) // sh + 1
    ow = (w + left + right - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow), dtype=np.float64)
    og = o // groups
    for g in range(groups):
        xg = x[:, g * ig:(g + 1) * ig].astype(np.float64)
        wg = weight[g * og:(g + 1) * og].astype(np.float64)
        for i in range(kh):
            for j in range(kw):
                patch = xg[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                           j * dw:j * dw + sw * (ow - 1) + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, wg[:, :, i, j])
    return out.astype(data.dtype)


def conv2d_nhwc(data: np.ndarray, weight_hwio: np.ndarray, strides=1, padding=0, dilation=1,
                groups: int = 1) -> np.ndarray:
    """2-D convolution, data NHWC, weight HWIO."""
    out = conv2d_nchw(data.transpose(0, 3, 1, 2), weight_hwio.transpose(3, 2, 0, 1), strides,
                      padding, dilation, groups)
    return out.transpose(0, 2, 3, 1)


def pool2d_nchw(data: np.ndarray, pool_size, strides, padding=0, kind: str = "max",
                count_include_pad: bool = False) -> np.ndarray:
    """Max or average pooling over NCHW data (no ceil mode)."""
    kh, kw = _pair(pool_size)
    sh, sw = _pair(strides)
    top, left, bottom, right = _pad4(padding)
    n, c, h, w = data.shape
    fill = -np.inf if kind == "max" else 0.0
    x = np.pad(data.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)),
               constant_values=fill)
    valid = np.pad(np.ones((h, w)), ((top, bottom), (left, right)))
    oh = (h + top + bottom - kh) // sh + 1
    ow = (w + left + right - kw) // sw + 1
    out = np.empty((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = x[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw]
            if kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                count = kh * kw if count_include_pad else \
                    valid[i * sh:i * sh + kh, j * sw:j * sw + kw].sum()
                out[:, :, i, j] = win.sum(axis=(2, 3)) / count
    return out.astype(data.dtype)


def adaptive_avg_pool2d_nchw(data: np.ndarray, output_size) -> np.ndarray:
    """Adaptive average pooling (PyTorch's window rule)."""
    oh, ow = _pair(output_size)
    n, c, h, w = data.shape
    out = np.empty((n, c, oh, ow), dtype=np.float64)
    for i in range(oh):
        h0, h1 = (i * h) // oh, -((-(i + 1) * h) // oh)
        for j in range(ow):
            w0, w1 = (j * w) // ow, -((-(j + 1) * w) // ow)
            out[:, :, i, j] = data[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return out.astype(data.dtype)


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Softmax along ``axis`` (max-subtracted, so large inputs do not overflow)."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Log-softmax along ``axis``."""
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, axes=(-1,),
               epsilon: float = 1e-5) -> np.ndarray:
    """Layer norm over ``axes`` with scale ``gamma`` and shift ``beta``."""
    axes = tuple(axes)
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return ((x - mean) / np.sqrt(var + epsilon) * gamma + beta).astype(x.dtype)


def batch_norm(x: np.ndarray, gamma, beta, mean, var, axis: int = 1,
               epsilon: float = 1e-5) -> np.ndarray:
    """Inference batch norm with moving statistics along ``axis``."""
    shape = [1] * x.ndim
    shape[axis] = -1
    r = [np.reshape(a, shape) for a in (gamma, beta, mean, var)]
    return ((x - r[2]) / np.sqrt(r[3] + epsilon) * r[0] + r[1]).astype(x.dtype)


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU, ``x * Phi(x)``, with ``math.erf`` element by element."""
    verf = np.vectorize(erf)
    return (0.5 * x * (1.0 + verf(x / sqrt(2.0)))).astype(x.dtype)


def relu(x: np.ndarray) -> np.ndarray:
    """``max(x, 0)``."""
    return np.maximum(x, 0)

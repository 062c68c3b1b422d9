"""Vectorized numpy building blocks of the model zoo's reference forwards.

The loop references of :mod:`irc.testing.ref` are the readable oracle of single operators
but too slow for whole networks at ImageNet size. These do the same arithmetic with numpy's
own machinery (windows from ``sliding_window_view`` contracted by BLAS) and are
checked against :mod:`irc.testing.ref` in ``tests/models/test_reference_ops.py``. Every
function takes ``layout`` ``"NCHW"`` or ``"NHWC"`` and computes in the input's dtype (pass
float64 arrays for an oracle, float32 for a timing peer).
"""

from __future__ import annotations

import math

import numpy as np

# relu and softmax are already vectorized in the single-operator references.
from ..ref import _pad4, _pair, relu, softmax

_LAYOUTS = ("NCHW", "NHWC")


def _check_layout(layout: str) -> None:
    if layout not in _LAYOUTS:
        raise ValueError(f"layout must be 'NCHW' or 'NHWC', got {layout!r}")


def _to_nhwc(x: np.ndarray, layout: str) -> np.ndarray:
    return x.transpose(0, 2, 3, 1) if layout == "NCHW" else x


def _from_nhwc(x: np.ndarray, layout: str) -> np.ndarray:
    return x.transpose(0, 3, 1, 2) if layout == "NCHW" else x


def _windows(x_nhwc: np.ndarray, kh: int, kw: int, strides, padding,
             fill: float = 0.0) -> np.ndarray:
    """Strided (N, OH, OW, C, kh, kw) view of the padded input's windows."""
    sh, sw = _pair(strides)
    top, left, bottom, right = _pad4(padding)
    if top or left or bottom or right:
        x_nhwc = np.pad(x_nhwc, ((0, 0), (top, bottom), (left, right), (0, 0)),
                        constant_values=fill)
    win = np.lib.stride_tricks.sliding_window_view(x_nhwc, (kh, kw), axis=(1, 2))
    return win[:, ::sh, ::sw]


def conv2d(x: np.ndarray, weight: np.ndarray, strides=1, padding=0, groups: int = 1,
           layout: str = "NCHW") -> np.ndarray:
    """2-D convolution of ``x`` (``layout``) with an OIHW ``weight`` (I = in / groups);
    no dilation. Dense convolutions are one matrix product over the windows, depthwise
    ones (one input channel per group) a sum over the kernel taps."""
    _check_layout(layout)
    o, ig, kh, kw = weight.shape
    win = _windows(_to_nhwc(x, layout), kh, kw, strides, padding)  # N OH OW C kh kw
    if groups == 1:
        out = np.tensordot(win, weight, axes=([3, 4, 5], [1, 2, 3]))
    elif ig == 1 and o == groups:
        out = np.zeros(win.shape[:4], dtype=np.result_type(x, weight))
        for i in range(kh):
            for j in range(kw):
                out += win[..., i, j] * weight[:, 0, i, j]
    else:
        og = o // groups
        out = np.concatenate([
            np.tensordot(win[:, :, :, g * ig:(g + 1) * ig], weight[g * og:(g + 1) * og],
                         axes=([3, 4, 5], [1, 2, 3]))
            for g in range(groups)], axis=3)
    return np.asarray(_from_nhwc(out, layout), order="C")


def max_pool2d(x: np.ndarray, pool_size, strides, padding=0,
               layout: str = "NCHW") -> np.ndarray:
    """Max pooling (padding never wins: it is -inf)."""
    _check_layout(layout)
    kh, kw = _pair(pool_size)
    win = _windows(_to_nhwc(x, layout), kh, kw, strides, padding, fill=-np.inf)
    return np.asarray(_from_nhwc(win.max(axis=(4, 5)), layout), order="C")


def global_avg_pool2d(x: np.ndarray, layout: str = "NCHW") -> np.ndarray:
    """Mean over the spatial axes, kept as 1x1 (adaptive average pooling to 1)."""
    _check_layout(layout)
    axes = (2, 3) if layout == "NCHW" else (1, 2)
    return x.mean(axis=axes, keepdims=True)


def batch_norm(x: np.ndarray, state: dict, prefix: str, layout: str = "NCHW",
               eps: float = 1e-5) -> np.ndarray:
    """Inference batch norm with the running statistics ``prefix.running_mean`` /
    ``running_var`` and the affine ``prefix.weight`` / ``bias`` of ``state``."""
    _check_layout(layout)
    axis = 1 if layout == "NCHW" else 3
    shape = [1, 1, 1, 1]
    shape[axis] = -1

    def get(name: str) -> np.ndarray:
        return state[f"{prefix}.{name}"].astype(x.dtype).reshape(shape)

    return (x - get("running_mean")) / np.sqrt(get("running_var") + eps) * get("weight") \
        + get("bias")


def channel_bias(x: np.ndarray, bias: np.ndarray, layout: str = "NCHW") -> np.ndarray:
    """``x`` plus one value per channel."""
    shape = (1, -1, 1, 1) if layout == "NCHW" else (1, 1, 1, -1)
    return x + bias.astype(x.dtype).reshape(shape)


def linear(x: np.ndarray, state: dict, prefix: str) -> np.ndarray:
    """``x @ weight.T + bias`` with ``prefix.weight`` (out, in) and ``prefix.bias``."""
    y = x @ state[f"{prefix}.weight"].astype(x.dtype).T
    bias = state.get(f"{prefix}.bias")
    return y if bias is None else y + bias.astype(x.dtype)


def layer_norm(x: np.ndarray, state: dict, prefix: str, eps: float = 1e-5) -> np.ndarray:
    """Layer norm over the last axis with ``prefix.weight`` and ``prefix.bias``."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * state[f"{prefix}.weight"].astype(x.dtype) \
        + state[f"{prefix}.bias"].astype(x.dtype)


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU, ``x * Phi(x)``. The error function comes from scipy when it is
    installed (vectorized), else from ``math.erf`` element by element (slower, equally
    exact): numpy has no erf of its own."""
    try:
        from scipy.special import erf as verf  # optional: imported only where used
    except ImportError:

        def verf(a: np.ndarray) -> np.ndarray:
            return np.frompyfunc(math.erf, 1, 1)(a).astype(a.dtype)

    return 0.5 * x * (1.0 + verf(x / x.dtype.type(np.sqrt(2.0))))


def as_compute(state: dict, dtype: str | np.dtype) -> dict:
    """``state`` with every floating-point array converted to ``dtype`` (no copy of
    arrays already in ``dtype``, so a prepared state costs nothing per forward); integer
    arrays unchanged."""
    return {k: (v.astype(dtype, copy=False) if np.issubdtype(v.dtype, np.floating) else v)
            for k, v in state.items()}


__all__ = ["conv2d", "max_pool2d", "global_avg_pool2d", "batch_norm", "channel_bias",
           "linear", "layer_norm", "gelu", "relu", "softmax", "as_compute"]

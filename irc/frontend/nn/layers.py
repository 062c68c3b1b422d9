"""Layers: ``Linear``, activations, ``Conv2D``, pooling, normalizations, ``Embedding``,
``Dropout``, ``Flatten``, ``Softmax``.

Parameters have the layouts PyTorch uses (``Linear.weight`` is (out, in), ``Conv2D.weight``
(out, in / groups, kh, kw)), so a PyTorch state dict converted to numpy loads with
``load_state_dict``. Everything is inference-only: dropout is the identity and batch
normalization uses its running statistics.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...core import dtype as dt
from ...core.diagnostics import IRTypeError
from . import op
from .core import NNError, Parameter, Tensor
from .module import Module


def _pair(value: Any, what: str, layer: str, minimum: int = 1) -> tuple[int, int]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (int(value), int(value))
    if (not isinstance(value, (tuple, list)) or len(value) != 2
            or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < minimum
                   for v in value)):
        raise NNError(f"{layer}: {what} must be an int or a pair of ints of at least {minimum}, "
                      f"got {value!r}")
    return (int(value[0]), int(value[1]))


def _padding(value: Any, layer: str) -> tuple[int, ...]:
    if isinstance(value, (tuple, list)) and len(value) == 4:
        if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0
               for v in value):
            raise NNError(f"{layer}: padding must be non-negative ints, got {value!r}")
        return tuple(int(v) for v in value)
    return _pair(value, "padding", layer, minimum=0)


def _positive(value: Any, what: str, layer: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise NNError(f"{layer}: {what} must be a positive int, got {value!r}")
    return int(value)


def _float_dtype(dtype: str, layer: str) -> str:
    if not isinstance(dtype, str) or not dt.is_float(dt.check(dtype)):
        raise NNError(f"{layer}: dtype must be a floating-point dtype such as 'float32', "
                      f"got {dtype!r}")
    return dtype


def _require_rank(x: Any, ranks: Sequence[int], layer: str, layout: str) -> None:
    if not isinstance(x, Tensor):
        raise NNError(f"{layer} expects an nn.Tensor, got {type(x).__name__}")
    if x.ndim >= 0 and x.ndim not in ranks:
        want = " or ".join(map(str, ranks))
        raise IRTypeError(f"{layer} expects an input of rank {want} ({layout}), got {x!r}")


class Linear(Module):
    """``y = x @ weight.T + bias`` over the last axis; ``weight`` is (out_features,
    in_features), ``bias`` (out_features,). ``out_dtype`` (None: the input's) is the
    dtype of the matmul's result."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype: str = "float32", out_dtype: str | None = None):
        super().__init__()
        self.in_features = _positive(in_features, "in_features", "Linear")
        self.out_features = _positive(out_features, "out_features", "Linear")
        self.out_dtype = out_dtype
        self.weight = Parameter((out_features, in_features), _float_dtype(dtype, "Linear"))
        self.bias = Parameter((out_features,), dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        """The affine map (``permute_dims``, ``matmul``, ``add``)."""
        y = op.matmul(x, op.permute_dims(self.weight), out_dtype=self.out_dtype)
        if self.bias is not None:
            y = y + self.bias
        return y

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class _Activation(Module):
    _fn: Any = None

    def forward(self, x: Tensor) -> Tensor:
        """The activation, elementwise."""
        return type(self)._fn(x)


class ReLU(_Activation):
    """``max(x, 0)``."""

    _fn = staticmethod(op.relu)


class SiLU(_Activation):
    """``x * sigmoid(x)``."""

    _fn = staticmethod(op.silu)


class Sigmoid(_Activation):
    """``1 / (1 + exp(-x))``."""

    _fn = staticmethod(op.sigmoid)


class Tanh(_Activation):
    """``tanh(x)``."""

    _fn = staticmethod(op.tanh)


class GELU(Module):
    """``x * Phi(x)``; ``approximate="tanh"`` for the tanh approximation."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise NNError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        """GELU, elementwise."""
        return op.gelu(x, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Conv2D(Module):
    """2-D convolution. ``weight`` is (out_channels, in_channels / groups, kh, kw) whatever
    ``data_layout`` (``"NCHW"`` or ``"NHWC"``) is; ``bias`` is (out_channels,). ``padding``
    is an int, (h, w) or (top, left, bottom, right)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 data_layout: str = "NCHW", dtype: str = "float32"):
        super().__init__()
        self.in_channels = _positive(in_channels, "in_channels", "Conv2D")
        self.out_channels = _positive(out_channels, "out_channels", "Conv2D")
        self.groups = _positive(groups, "groups", "Conv2D")
        if in_channels % groups or out_channels % groups:
            raise NNError(f"Conv2D: in_channels {in_channels} and out_channels {out_channels} "
                          f"must both be divisible by groups {groups}")
        self.kernel_size = _pair(kernel_size, "kernel_size", "Conv2D")
        self.stride = _pair(stride, "stride", "Conv2D")
        self.padding = _padding(padding, "Conv2D")
        self.dilation = _pair(dilation, "dilation", "Conv2D")
        if data_layout not in ("NCHW", "NHWC"):
            raise NNError(f"Conv2D: data_layout must be 'NCHW' or 'NHWC', got {data_layout!r}")
        self.data_layout = data_layout
        self.weight = Parameter((out_channels, in_channels // groups, *self.kernel_size),
                                _float_dtype(dtype, "Conv2D"))
        self.bias = Parameter((out_channels,), dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        """The convolution (``conv2d``), then the bias (``reshape``, ``add``)."""
        _require_rank(x, [4], "Conv2D", self.data_layout)
        return op.conv2d(x, self.weight, self.bias, stride=self.stride, padding=self.padding,
                         dilation=self.dilation, groups=self.groups,
                         data_layout=self.data_layout)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}")


class MaxPool2D(Module):
    """2-D max pooling; ``stride`` defaults to ``kernel_size``."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 dilation: Any = 1, ceil_mode: bool = False, layout: str = "NCHW"):
        super().__init__()
        self.kernel_size = _pair(kernel_size, "kernel_size", "MaxPool2D")
        self.stride = self.kernel_size if stride is None else _pair(stride, "stride",
                                                                    "MaxPool2D")
        self.padding = _padding(padding, "MaxPool2D")
        self.dilation = _pair(dilation, "dilation", "MaxPool2D")
        self.ceil_mode = bool(ceil_mode)
        self.layout = layout

    def forward(self, x: Tensor) -> Tensor:
        """Max over each window."""
        _require_rank(x, [4], "MaxPool2D", self.layout)
        return op.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                             self.ceil_mode, self.layout)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2D(Module):
    """2-D average pooling; ``stride`` defaults to ``kernel_size``; padded zeros count in
    the average unless ``count_include_pad=False`` (PyTorch's default)."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 layout: str = "NCHW"):
        super().__init__()
        self.kernel_size = _pair(kernel_size, "kernel_size", "AvgPool2D")
        self.stride = self.kernel_size if stride is None else _pair(stride, "stride",
                                                                    "AvgPool2D")
        self.padding = _padding(padding, "AvgPool2D")
        self.ceil_mode = bool(ceil_mode)
        self.count_include_pad = bool(count_include_pad)
        self.layout = layout

    def forward(self, x: Tensor) -> Tensor:
        """Mean over each window."""
        _require_rank(x, [4], "AvgPool2D", self.layout)
        return op.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                             self.count_include_pad, self.layout)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2D(Module):
    """Average pooling to a fixed ``output_size`` (an int or (h, w))."""

    def __init__(self, output_size: Any, layout: str = "NCHW"):
        super().__init__()
        self.output_size = _pair(output_size, "output_size", "AdaptiveAvgPool2D")
        self.layout = layout

    def forward(self, x: Tensor) -> Tensor:
        """Mean over adaptive windows."""
        _require_rank(x, [4], "AdaptiveAvgPool2D", self.layout)
        return op.adaptive_avg_pool2d(x, self.output_size, self.layout)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


def _affine(shape: tuple[int, ...], dtype: str, affine: bool) -> tuple[Any, Any]:
    if affine:
        return Parameter(shape, dtype, init="ones"), Parameter(shape, dtype, init="zeros")
    return None, None


def _or_const(p: Parameter | None, shape: tuple[int, ...], dtype: str, fill: float) -> Tensor:
    # Non-affine normalizations still give the operator its gamma/beta operands.
    return p if p is not None else Tensor.from_const(np.full(shape, fill), dtype)


class BatchNorm2D(Module):
    """Inference batch normalization of (N, C, H, W) input with the running statistics:
    ``weight``/``bias`` (gamma/beta, when ``affine``) and ``running_mean``/``running_var``
    are all parameters of shape (num_features,)."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = True, dtype: str = "float32"):
        super().__init__()
        self.num_features = _positive(num_features, "num_features", "BatchNorm2D")
        self.eps = float(eps)
        self.momentum = float(momentum)
        dtype = _float_dtype(dtype, "BatchNorm2D")
        self.weight, self.bias = _affine((num_features,), dtype, affine)
        self.running_mean = Parameter((num_features,), dtype, init="zeros")
        self.running_var = Parameter((num_features,), dtype, init="ones")

    def forward(self, x: Tensor) -> Tensor:
        """``(x - mean) / sqrt(var + eps) * weight + bias`` per channel."""
        _require_rank(x, [4], "BatchNorm2D", "NCHW")
        shape, dtype = (self.num_features,), self.running_mean.dtype
        return op.batch_norm(x, _or_const(self.weight, shape, dtype, 1.0),
                             _or_const(self.bias, shape, dtype, 0.0), self.running_mean,
                             self.running_var, axis=1, eps=self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_features}, eps={self.eps}, affine={self.weight is not None}"


class LayerNorm(Module):
    """Normalization over the last ``len(normalized_shape)`` axes with ``weight`` and
    ``bias`` of shape ``normalized_shape`` (when ``elementwise_affine``)."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True, dtype: str = "float32"):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
            tuple(normalized_shape)
        self.normalized_shape = tuple(_positive(d, "normalized_shape", "LayerNorm")
                                      for d in shape)
        self.eps = float(eps)
        self._dtype = _float_dtype(dtype, "LayerNorm")
        self.weight, self.bias = _affine(self.normalized_shape, dtype, elementwise_affine)

    def forward(self, x: Tensor) -> Tensor:
        """Layer normalization."""
        k = len(self.normalized_shape)
        if not isinstance(x, Tensor) or x.ndim < 0:
            raise NNError("LayerNorm needs an nn.Tensor of known rank")
        if x.ndim < k:
            raise IRTypeError(f"LayerNorm over {k} axes {self.normalized_shape} needs an input "
                              f"of rank {k} or more, got {x!r}")
        dtype = self.weight.dtype if self.weight is not None else self._dtype
        return op.layer_norm(x, _or_const(self.weight, self.normalized_shape, dtype, 1.0),
                             _or_const(self.bias, self.normalized_shape, dtype, 0.0),
                             axes=list(range(x.ndim - k, x.ndim)), eps=self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"


class GroupNorm(Module):
    """Group normalization of (N, C, ...) input: ``num_channels`` in ``num_groups`` groups;
    ``weight``/``bias`` of shape (num_channels,) when ``affine``."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, dtype: str = "float32"):
        super().__init__()
        self.num_groups = _positive(num_groups, "num_groups", "GroupNorm")
        self.num_channels = _positive(num_channels, "num_channels", "GroupNorm")
        if num_channels % num_groups:
            raise NNError(f"GroupNorm: num_channels {num_channels} must be divisible by "
                          f"num_groups {num_groups}")
        self.eps = float(eps)
        self._dtype = _float_dtype(dtype, "GroupNorm")
        self.weight, self.bias = _affine((num_channels,), dtype, affine)

    def forward(self, x: Tensor) -> Tensor:
        """Group normalization over every axis after the channels."""
        if not isinstance(x, Tensor) or x.ndim < 0:
            raise NNError("GroupNorm needs an nn.Tensor of known rank")
        if x.ndim < 2:
            raise IRTypeError(f"GroupNorm expects an input of rank 2 or more (N, C, ...), "
                              f"got {x!r}")
        shape = (self.num_channels,)
        dtype = self.weight.dtype if self.weight is not None else self._dtype
        return op.group_norm(x, self.num_groups, _or_const(self.weight, shape, dtype, 1.0),
                             _or_const(self.bias, shape, dtype, 0.0), eps=self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}"


class Embedding(Module):
    """A lookup table: ``weight`` is (num_embeddings, embedding_dim); integer indices of
    any shape give vectors of shape ``indices.shape + (embedding_dim,)``."""

    def __init__(self, num_embeddings: int, embedding_dim: int, dtype: str = "float32"):
        super().__init__()
        self.num_embeddings = _positive(num_embeddings, "num_embeddings", "Embedding")
        self.embedding_dim = _positive(embedding_dim, "embedding_dim", "Embedding")
        self.weight = Parameter((num_embeddings, embedding_dim), _float_dtype(dtype, "Embedding"),
                                init="normal")

    def forward(self, x: Tensor) -> Tensor:
        """Rows of ``weight`` at ``x`` (``take``)."""
        return op.take(self.weight, x, axis=0)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


class Dropout(Module):
    """Dropout; the identity at inference (no binding is emitted)."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise NNError(f"Dropout: p must be in [0, 1), got {p!r}")
        self.p = float(p)

    def forward(self, x: Tensor) -> Tensor:
        """``x`` unchanged."""
        return x

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Flatten(Module):
    """Dimensions ``start_dim`` to ``end_dim`` merged (default: all but the batch axis)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim = int(start_dim)
        self.end_dim = int(end_dim)

    def forward(self, x: Tensor) -> Tensor:
        """A reshape merging the dimensions."""
        return op.flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Softmax(Module):
    """Softmax along ``dim`` (default: the last axis)."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = int(dim)

    def forward(self, x: Tensor) -> Tensor:
        """Softmax."""
        return op.softmax(x, axis=self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Identity(Module):
    """Returns its input (no binding is emitted)."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` unchanged."""
        return x


__all__ = [
    "Linear", "ReLU", "GELU", "SiLU", "Sigmoid", "Tanh", "Conv2D", "MaxPool2D", "AvgPool2D",
    "AdaptiveAvgPool2D", "BatchNorm2D", "LayerNorm", "GroupNorm", "Embedding", "Dropout",
    "Flatten", "Softmax", "Identity",
]

"""MobileNet-V2 (torchvision's architecture) and its numpy reference forward.

A 3x3/2 stem convolution to 32 channels; seventeen inverted residual blocks (a 1x1
expansion by ``t`` with ReLU6 when ``t > 1``, a 3x3 depthwise convolution — groups equal
to channels — with ReLU6, a linear 1x1 projection; the input added back when the block
keeps shape); a 1x1 convolution to 1280 channels with ReLU6; global average pooling and a
classifier. Every convolution is followed by batch norm and has no bias; ReLU6 is
``R.clip(x, 0, 6)``. Parameter names: ``stem.conv.weight``, ``blocks.3.depthwise.bn.bias``,
``head.conv.weight``, ``classifier.weight`` (weights OIHW in both layouts).
"""

from __future__ import annotations

import numpy as np

from ...frontend import nn
from . import reference_ops as R
from ._layers import BatchNorm, randomize_batch_norms, relu6
from .resnet import export_image_model

# (expansion t, output channels c, repeats n, first stride s), as in the paper's table 2
_SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
             (6, 160, 3, 2), (6, 320, 1, 1))
_STEM, _HEAD = 32, 1280


def _block_specs() -> list[tuple[int, int, int, int]]:
    """(in channels, hidden channels, out channels, stride) of each inverted residual."""
    specs, cin = [], _STEM
    for t, c, n, s in _SETTINGS:
        for i in range(n):
            specs.append((cin, cin * t, c, s if i == 0 else 1))
            cin = c
    return specs


class ConvBN(nn.Module):
    """A bias-free convolution, batch norm and (when ``act``) ReLU6."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1,
                 act: bool = True, layout: str = "NCHW"):
        super().__init__()
        self.conv = nn.Conv2D(cin, cout, kernel, stride=stride, padding=kernel // 2,
                              groups=groups, bias=False, data_layout=layout)
        self.bn = BatchNorm(cout, layout)
        self.act = act

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        """``relu6(bn(conv(x)))`` (no ReLU6 when ``act`` is off)."""
        y = self.bn(self.conv(x))
        return relu6(y) if self.act else y


class InvertedResidual(nn.Module):
    """Expand (1x1, unless the expansion is 1), depthwise 3x3, project (1x1, linear);
    the input added back when stride is 1 and the channel count is kept."""

    def __init__(self, cin: int, hidden: int, cout: int, stride: int, layout: str):
        super().__init__()
        self.expand = ConvBN(cin, hidden, 1, layout=layout) if hidden != cin else None
        self.depthwise = ConvBN(hidden, hidden, 3, stride, groups=hidden, layout=layout)
        self.project = ConvBN(hidden, cout, 1, act=False, layout=layout)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        """The block."""
        y = x if self.expand is None else self.expand(x)
        y = self.project(self.depthwise(y))
        return y + x if self.residual else y


class MobileNetV2(nn.Module):
    """MobileNet-V2 (width multiplier 1) on images in ``layout``; returns logits."""

    def __init__(self, num_classes: int = 1000, layout: str = "NCHW"):
        super().__init__()
        if layout not in ("NCHW", "NHWC"):
            raise nn.NNError(f"MobileNetV2: layout must be 'NCHW' or 'NHWC', got {layout!r}")
        self.layout = layout
        self.stem = ConvBN(3, _STEM, 3, 2, layout=layout)
        self.blocks = nn.Sequential(*[InvertedResidual(*spec, layout=layout)
                                      for spec in _block_specs()])
        self.head = ConvBN(_SETTINGS[-1][1], _HEAD, 1, layout=layout)
        self.pool = nn.AdaptiveAvgPool2D(1, layout=layout)
        self.classifier = nn.Linear(_HEAD, num_classes)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        """Stem, blocks, head, pooling, classifier (dropout is the identity here)."""
        y = self.head(self.blocks(self.stem(x)))
        return self.classifier(nn.op.flatten(self.pool(y), 1))


def build_mobilenet_v2(num_classes: int = 1000, layout: str = "NCHW",
                       seed: int = 0) -> MobileNetV2:
    """A MobileNet-V2 with seeded random weights and batch-norm statistics."""
    model = MobileNetV2(num_classes, layout).init_random(seed)
    return randomize_batch_norms(model, seed + 1)


def get_mobilenet_v2(batch_size: int = 1, image_size: int = 224, layout: str = "NCHW",
                     num_classes: int = 1000, seed: int = 0) -> tuple:
    """``(mod, params, input_shape)`` of a seeded MobileNet-V2's exported ``forward(x)``."""
    return export_image_model(build_mobilenet_v2(num_classes, layout, seed), batch_size,
                              image_size, layout, "MobileNet-V2")


def mobilenet_v2_reference(state: dict[str, np.ndarray], x: np.ndarray,
                           layout: str = "NCHW") -> np.ndarray:
    """The MobileNet-V2 forward in numpy from a state dict, in the dtype of ``x``."""
    s = R.as_compute(state, x.dtype)

    def conv_bn(y: np.ndarray, prefix: str, stride: int = 1, groups: int = 1,
                act: bool = True) -> np.ndarray:
        w = s[f"{prefix}.conv.weight"]
        y = R.conv2d(y, w, strides=stride, padding=w.shape[2] // 2, groups=groups,
                     layout=layout)
        y = R.batch_norm(y, s, f"{prefix}.bn", layout)
        return np.clip(y, 0.0, 6.0) if act else y

    y = conv_bn(x, "stem", 2)
    for i, (cin, hidden, cout, stride) in enumerate(_block_specs()):
        p = f"blocks.{i}"
        z = conv_bn(y, f"{p}.expand") if hidden != cin else y
        z = conv_bn(z, f"{p}.depthwise", stride, groups=hidden)
        z = conv_bn(z, f"{p}.project", act=False)
        y = z + y if stride == 1 and cin == cout else z
    y = conv_bn(y, "head")
    y = R.global_avg_pool2d(y, layout).reshape(y.shape[0], -1)
    return R.linear(y, s, "classifier")


__all__ = ["MobileNetV2", "InvertedResidual", "ConvBN", "build_mobilenet_v2",
           "get_mobilenet_v2", "mobilenet_v2_reference"]

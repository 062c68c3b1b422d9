"""ResNet (torchvision's architecture) in NCHW or NHWC, and its numpy reference forward.

A 7x7/2 stem convolution, batch norm, ReLU and 3x3/2 max pooling; four stages of basic
(ResNet-18/34) or bottleneck (ResNet-50/101/152) blocks whose first block of stages 2-4
halves the resolution, the shortcut then being a strided 1x1 convolution with batch norm
(``downsample``); global average pooling and a fully connected classifier. Convolutions
have no bias (batch norm follows each). Parameter names are torchvision's
(``layer1.0.conv1.weight``, ``layer2.0.downsample.0.weight``, ``fc.bias``), and so is the
weight layout (OIHW whatever the data layout), so one state dict serves both layouts.
"""

from __future__ import annotations

import numpy as np

from ...frontend import nn
from . import reference_ops as R
from ._layers import BatchNorm, randomize_batch_norms

# depth -> (block kind, blocks per stage)
_CONFIGS = {
    18: ("basic", (2, 2, 2, 2)),
    34: ("basic", (3, 4, 6, 3)),
    50: ("bottleneck", (3, 4, 6, 3)),
    101: ("bottleneck", (3, 4, 23, 3)),
    152: ("bottleneck", (3, 8, 36, 3)),
}
_EXPANSION = {"basic": 1, "bottleneck": 4}
_WIDTHS = (64, 128, 256, 512)


def _config(depth: int) -> tuple[str, tuple[int, ...]]:
    if depth not in _CONFIGS:
        raise nn.NNError(f"ResNet depth must be one of {sorted(_CONFIGS)}, got {depth!r}")
    return _CONFIGS[depth]


def _conv(cin: int, cout: int, k: int, stride: int, layout: str) -> nn.Conv2D:
    return nn.Conv2D(cin, cout, k, stride=stride, padding=k // 2, bias=False,
                     data_layout=layout)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with batch norm, plus the shortcut, then ReLU."""

    def __init__(self, cin: int, width: int, stride: int, layout: str):
        super().__init__()
        self.conv1 = _conv(cin, width, 3, stride, layout)
        self.bn1 = BatchNorm(width, layout)
        self.conv2 = _conv(width, width, 3, 1, layout)
        self.bn2 = BatchNorm(width, layout)
        self.downsample = None
        if stride != 1 or cin != width:
            self.downsample = nn.Sequential(_conv(cin, width, 1, stride, layout),
                                            BatchNorm(width, layout))

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        """``relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))``."""
        y = nn.op.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        shortcut = x if self.downsample is None else self.downsample(x)
        return nn.op.relu(y + shortcut)


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (strided), 1x1 expand by 4, each with batch norm; the shortcut
    added before the last ReLU."""

    def __init__(self, cin: int, width: int, stride: int, layout: str):
        super().__init__()
        cout = width * _EXPANSION["bottleneck"]
        self.conv1 = _conv(cin, width, 1, 1, layout)
        self.bn1 = BatchNorm(width, layout)
        self.conv2 = _conv(width, width, 3, stride, layout)
        self.bn2 = BatchNorm(width, layout)
        self.conv3 = _conv(width, cout, 1, 1, layout)
        self.bn3 = BatchNorm(cout, layout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(_conv(cin, cout, 1, stride, layout),
                                            BatchNorm(cout, layout))

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        """The bottleneck residual block."""
        y = nn.op.relu(self.bn1(self.conv1(x)))
        y = nn.op.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        shortcut = x if self.downsample is None else self.downsample(x)
        return nn.op.relu(y + shortcut)


class ResNet(nn.Module):
    """ResNet-``depth`` (18, 34, 50, 101 or 152) taking images in ``layout``; returns
    (batch, num_classes) logits."""

    def __init__(self, depth: int = 18, layout: str = "NCHW", num_classes: int = 1000):
        super().__init__()
        kind, blocks = _config(depth)
        if layout not in ("NCHW", "NHWC"):
            raise nn.NNError(f"ResNet: layout must be 'NCHW' or 'NHWC', got {layout!r}")
        self.depth, self.layout = depth, layout
        block_cls = BasicBlock if kind == "basic" else Bottleneck
        self.conv1 = nn.Conv2D(3, 64, 7, stride=2, padding=3, bias=False, data_layout=layout)
        self.bn1 = BatchNorm(64, layout)
        self.maxpool = nn.MaxPool2D(3, stride=2, padding=1, layout=layout)
        cin = 64
        for stage, (width, count) in enumerate(zip(_WIDTHS, blocks)):
            layers = []
            for i in range(count):
                stride = 2 if stage > 0 and i == 0 else 1
                layers.append(block_cls(cin, width, stride, layout))
                cin = width * _EXPANSION[kind]
            setattr(self, f"layer{stage + 1}", nn.Sequential(*layers))
        self.avgpool = nn.AdaptiveAvgPool2D(1, layout=layout)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        """Stem, four stages, pooling and the classifier."""
        y = self.maxpool(nn.op.relu(self.bn1(self.conv1(x))))
        for stage in (self.layer1, self.layer2, self.layer3, self.layer4):
            y = stage(y)
        return self.fc(nn.op.flatten(self.avgpool(y), 1))


def build_resnet(depth: int = 18, layout: str = "NCHW", num_classes: int = 1000,
                 seed: int = 0) -> ResNet:
    """A ResNet with seeded random weights and batch-norm statistics."""
    model = ResNet(depth, layout, num_classes).init_random(seed)
    return randomize_batch_norms(model, seed + 1)


def input_shape(batch_size: int, image_size: int, layout: str) -> tuple[int, int, int, int]:
    """The image batch's shape in ``layout``."""
    if layout == "NCHW":
        return (batch_size, 3, image_size, image_size)
    return (batch_size, image_size, image_size, 3)


def export_image_model(model: nn.Module, batch_size: int, image_size: int, layout: str,
                       what: str) -> tuple:
    """``(mod, params, input_shape)``: ``model.forward(x)`` exported for float32 images of
    ``image_size`` (at least 32: the networks halve the resolution five times)."""
    if isinstance(image_size, bool) or not isinstance(image_size, int) or image_size < 32:
        raise nn.NNError(f"{what} needs images of at least 32x32 (five halvings), got "
                         f"{image_size!r}")
    shape = input_shape(batch_size, image_size, layout)
    mod, params = model.export_ir({"forward": {"x": nn.spec.Tensor(shape, "float32")}})
    return mod, params, shape


def get_resnet(depth: int = 18, batch_size: int = 1, image_size: int = 224,
               layout: str = "NCHW", num_classes: int = 1000, seed: int = 0) -> tuple:
    """``(mod, params, input_shape)``: the exported ``forward(x)`` of a seeded ResNet, its
    ``(name, nn.Parameter)`` list (with data) and the input's shape."""
    return export_image_model(build_resnet(depth, layout, num_classes, seed), batch_size,
                              image_size, layout, f"ResNet-{depth}")


def resnet_reference(state: dict[str, np.ndarray], x: np.ndarray, depth: int = 18,
                     layout: str = "NCHW") -> np.ndarray:
    """The ResNet forward in numpy from a state dict (dotted torchvision names), in the
    dtype of ``x`` (float64 for an oracle)."""
    kind, blocks = _config(depth)
    s = R.as_compute(state, x.dtype)

    def conv_bn(y: np.ndarray, conv: str, bn: str, stride: int = 1) -> np.ndarray:
        w = s[f"{conv}.weight"]
        y = R.conv2d(y, w, strides=stride, padding=w.shape[2] // 2, layout=layout)
        return R.batch_norm(y, s, bn, layout)

    y = R.relu(conv_bn(x, "conv1", "bn1", 2))
    y = R.max_pool2d(y, 3, 2, 1, layout)
    for stage, count in enumerate(blocks):
        for i in range(count):
            p = f"layer{stage + 1}.{i}"
            stride = 2 if stage > 0 and i == 0 else 1
            if f"{p}.downsample.0.weight" in s:
                shortcut = conv_bn(y, f"{p}.downsample.0", f"{p}.downsample.1", stride)
            else:
                shortcut = y
            if kind == "basic":
                z = R.relu(conv_bn(y, f"{p}.conv1", f"{p}.bn1", stride))
                z = conv_bn(z, f"{p}.conv2", f"{p}.bn2")
            else:
                z = R.relu(conv_bn(y, f"{p}.conv1", f"{p}.bn1"))
                z = R.relu(conv_bn(z, f"{p}.conv2", f"{p}.bn2", stride))
                z = conv_bn(z, f"{p}.conv3", f"{p}.bn3")
            y = R.relu(z + shortcut)
    y = R.global_avg_pool2d(y, layout).reshape(y.shape[0], -1)
    return R.linear(y, s, "fc")


__all__ = ["ResNet", "BasicBlock", "Bottleneck", "build_resnet", "get_resnet",
           "resnet_reference", "input_shape", "export_image_model"]

"""Plain PyTorch modules behind :mod:`irc.testing.models.onnx_zoo`: the networks written as
their authors write them (torchvision's ResNet and MobileNet-V2 blocks, a BERT-style
encoder, a GPT-style decoder, an LSTM tagger, a branch and a recurrence in TorchScript) so
that ``torch.onnx.export`` writes the graphs real exporters write. Widths are parameters;
the zoo picks reduced ones for the committed files and the published ones for the slow
tests. Importing this module imports torch.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def _conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout)]


class BasicBlock(nn.Module):
    """ResNet-18/34's block: two 3x3 convolutions and the shortcut."""

    expansion = 1

    def __init__(self, cin: int, width: int, stride: int):
        super().__init__()
        self.conv1, self.bn1 = _conv_bn(cin, width, 3, stride)
        self.conv2, self.bn2 = _conv_bn(width, width, 3)
        self.downsample = (nn.Sequential(*_conv_bn(cin, width, 1, stride))
                           if stride != 1 or cin != width else nn.Identity())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.downsample(x))


class Bottleneck(nn.Module):
    """ResNet-50's block: 1x1 reduce, 3x3 (strided), 1x1 expand by 4, and the shortcut."""

    expansion = 4

    def __init__(self, cin: int, width: int, stride: int):
        super().__init__()
        cout = width * 4
        self.conv1, self.bn1 = _conv_bn(cin, width, 1)
        self.conv2, self.bn2 = _conv_bn(width, width, 3, stride)
        self.conv3, self.bn3 = _conv_bn(width, cout, 1)
        self.downsample = (nn.Sequential(*_conv_bn(cin, cout, 1, stride))
                           if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)))
        return torch.relu(self.bn3(self.conv3(y)) + self.downsample(x))


class ResNet(nn.Module):
    """torchvision's ResNet with stage widths ``base * (1, 2, 4, 8)``."""

    def __init__(self, depth: int, base: int = 64, num_classes: int = 1000):
        super().__init__()
        block, counts = {18: (BasicBlock, (2, 2, 2, 2)),
                         50: (Bottleneck, (3, 4, 6, 3))}[depth]
        self.conv1, self.bn1 = _conv_bn(3, base, 7, 2)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, cin = [], base
        for stage, count in enumerate(counts):
            width = base * 2 ** stage
            for i in range(count):
                layers.append(block(cin, width, 2 if stage > 0 and i == 0 else 1))
                cin = width * block.expansion
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.maxpool(torch.relu(self.bn1(self.conv1(x))))
        y = torch.flatten(nn.functional.adaptive_avg_pool2d(self.layers(y), 1), 1)
        return self.fc(y)


def _divisible(v: float, d: int = 8) -> int:
    return max(d, int(v + d / 2) // d * d)


class InvertedResidual(nn.Module):
    """MobileNet-V2's block: 1x1 expand, 3x3 depthwise, ReLU6 after both, 1x1 project."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        layers: list[nn.Module] = []
        if expand != 1:
            layers += _conv_bn(cin, hidden, 1) + [nn.ReLU6()]
        layers += _conv_bn(hidden, hidden, 3, stride, groups=hidden) + [nn.ReLU6()]
        layers += _conv_bn(hidden, cout, 1)
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    """torchvision's MobileNet-V2 with width multiplier ``width`` (the last 1x1 convolution
    scaled too, so a small multiplier makes a small model)."""

    SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1))

    def __init__(self, width: float = 1.0, num_classes: int = 1000):
        super().__init__()
        cin = _divisible(32 * width)
        last = _divisible(1280 * width)
        layers: list[nn.Module] = [*_conv_bn(3, cin, 3, 2), nn.ReLU6()]
        for t, c, n, s in self.SETTINGS:
            cout = _divisible(c * width)
            for i in range(n):
                layers.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        layers += [*_conv_bn(cin, last, 1), nn.ReLU6()]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(y, 1))


class SelfAttention(nn.Module):
    """Multi-head attention as BERT and GPT-2 write it: three projections, scaled scores
    plus an additive mask, softmax, the weighted sum, the output projection."""

    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.query, self.key, self.value = (nn.Linear(hidden, hidden) for _ in range(3))
        self.out = nn.Linear(hidden, hidden)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, s = x.shape[0], x.shape[1]
        return x.view(b, s, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        q, k, v = self._split(self.query(x)), self._split(self.key(x)), self._split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim) + mask
        y = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2)
        return self.out(y.reshape(x.shape[0], x.shape[1], -1))


class EncoderLayer(nn.Module):
    """BERT's post-norm layer: attention, add & LayerNorm, GELU (erf) MLP, add & LayerNorm."""

    def __init__(self, hidden: int, heads: int, ffn: int):
        super().__init__()
        self.attn = SelfAttention(hidden, heads)
        self.norm1, self.norm2 = nn.LayerNorm(hidden, eps=1e-12), nn.LayerNorm(hidden, eps=1e-12)
        self.fc1, self.fc2 = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + self.attn(x, mask))
        return self.norm2(x + self.fc2(nn.functional.gelu(self.fc1(x))))


class BertEncoder(nn.Module):
    """Word, position and token-type embeddings, LayerNorm, ``layers`` encoder layers, and
    the pooler (tanh of a projection of the first token). Inputs ``input_ids`` and
    ``attention_mask`` (1 = attend, 0 = padding), both int64 of shape (batch, seq)."""

    def __init__(self, vocab: int, hidden: int, layers: int, heads: int, ffn: int,
                 max_positions: int):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(max_positions, hidden)
        self.token_type = nn.Embedding(2, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(EncoderLayer(hidden, heads, ffn) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        seq = input_ids.shape[1]
        positions = torch.arange(seq, dtype=torch.int64).unsqueeze(0)
        x = self.word(input_ids) + self.position(positions) + self.token_type(
            torch.zeros_like(input_ids))
        x = self.norm(x)
        mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return x, torch.tanh(self.pooler(x[:, 0]))


class DecoderLayer(nn.Module):
    """GPT-2's pre-norm layer: LayerNorm, causal attention, add; LayerNorm, GELU MLP, add."""

    def __init__(self, hidden: int, heads: int, ffn: int):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.attn = SelfAttention(hidden, heads)
        self.fc1, self.fc2 = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), mask)
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm2(x)), approximate="tanh"))


class GPTDecoder(nn.Module):
    """A GPT-2-style decoder over ``input_ids`` (int64, (batch, seq)) of any length up to
    ``max_positions``: the causal mask and the positions are computed from the input's
    length, so the exported graph has a symbolic sequence length. Returns the logits of
    every position (the output projection tied to the word embedding)."""

    def __init__(self, vocab: int, hidden: int, layers: int, heads: int, ffn: int,
                 max_positions: int):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(max_positions, hidden)
        self.layers = nn.ModuleList(DecoderLayer(hidden, heads, ffn) for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        seq = input_ids.shape[1]
        positions = torch.arange(seq, dtype=torch.int64)
        x = self.word(input_ids) + self.position(positions).unsqueeze(0)
        future = positions.unsqueeze(0) > positions.unsqueeze(1)
        mask = torch.where(future, torch.tensor(-1e9), torch.tensor(0.0))
        for layer in self.layers:
            x = layer(x, mask)
        return torch.matmul(self.norm(x), self.word.weight.t())


class LSTMTagger(nn.Module):
    """An embedding-free sequence tagger: a two-layer LSTM over (seq, batch, features) and
    a linear layer on every step's hidden state."""

    def __init__(self, features: int, hidden: int, classes: int):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, num_layers=2)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.lstm(x)
        return self.head(y)


class Branch(nn.Module):
    """A data-dependent branch (scripted, so ONNX ``If``): one projection with ReLU when the
    input's mean is positive, another with tanh (scaled) otherwise."""

    def __init__(self, features: int):
        super().__init__()
        self.pos, self.neg = nn.Linear(features, features), nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if bool(x.mean() > 0):
            y = torch.relu(self.pos(x))
        else:
            y = torch.tanh(self.neg(x)) * 2.0
        return y + 1.0


class Recurrence(nn.Module):
    """An Elman RNN written as a Python loop over the input's first axis (scripted, so
    ONNX ``Loop`` with the trip count read from the input's symbolic length)."""

    def __init__(self, features: int, hidden: int, classes: int):
        super().__init__()
        self.hidden = hidden
        self.inp = nn.Linear(features, hidden)
        self.rec = nn.Linear(hidden, hidden, bias=False)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(x.size(1), self.hidden)
        for t in range(x.size(0)):
            h = torch.tanh(self.inp(x[t]) + self.rec(h))
        return self.head(h)


class SmallCNN(nn.Module):
    """The CNN the QDQ model quantizes: conv-BN-ReLU twice, max pooling, a 1x1 convolution
    with a residual add, global average pooling, a linear classifier."""

    def __init__(self, width: int = 16, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(*_conv_bn(3, width, 3), nn.ReLU(),
                                  *_conv_bn(width, 2 * width, 3, 2), nn.ReLU(),
                                  nn.MaxPool2d(2))
        self.mix = nn.Conv2d(2 * width, 2 * width, 1)
        self.fc = nn.Linear(2 * width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.stem(x)
        y = torch.relu(y + self.mix(y))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1))

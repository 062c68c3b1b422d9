"""Seed 003's MLP, the README's tour: 784 -> 256 -> ReLU -> 10, batch 1 (benchmarks time
a call of it with its weights as arguments: the VM's overhead, latency under load)."""

from __future__ import annotations

from ...frontend import nn


class MLP(nn.Module):
    """``fc2(relu(fc1(x)))`` with ``fc1`` 784 -> 256 and ``fc2`` 256 -> 10 without bias."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(256, 10, bias=False)

    def forward(self, x):
        return self.fc2(self.relu1(self.fc1(x)))

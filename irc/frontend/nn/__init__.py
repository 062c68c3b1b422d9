"""``irc.frontend.nn``: build models in Python, PyTorch style, and export them to a
graph-level IRModule.

>>> from irc.frontend import nn
>>> class MLP(nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.fc1 = nn.Linear(784, 256)
...         self.relu1 = nn.ReLU()
...         self.fc2 = nn.Linear(256, 10, bias=False)
...     def forward(self, x):
...         return self.fc2(self.relu1(self.fc1(x)))
>>> mod, params = MLP().export_ir({"forward": {"x": nn.spec.Tensor((1, 784), "float32")}})

``mod`` has one graph function per exported method, taking the inputs and then the
parameters (``params``: ``[(name, nn.Parameter)]``); ``nn.op`` holds the functional
operators, ``nn.spec`` the input specifications.
"""

from . import op, spec
from .core import NNError, Parameter, Tensor
from .layers import (
    GELU,
    AdaptiveAvgPool2D,
    AvgPool2D,
    BatchNorm2D,
    Conv2D,
    Dropout,
    Embedding,
    Flatten,
    GroupNorm,
    Identity,
    LayerNorm,
    Linear,
    MaxPool2D,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Tanh,
)
from .module import Module, ModuleList, Sequential, export_module, export_params

__all__ = [
    "op", "spec", "NNError", "Parameter", "Tensor", "Module", "ModuleList", "Sequential",
    "export_module", "export_params",
    "Linear", "ReLU", "GELU", "SiLU", "Sigmoid", "Tanh", "Conv2D", "MaxPool2D", "AvgPool2D",
    "AdaptiveAvgPool2D", "BatchNorm2D", "LayerNorm", "GroupNorm", "Embedding", "Dropout",
    "Flatten", "Softmax", "Identity",
]

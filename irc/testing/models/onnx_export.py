"""The zoo's networks as ONNX models, for peers that read ONNX (ONNX Runtime) and for the
ONNX importer's tests: the same weights as the irc export, the graph torchvision's
exporter writes for the architecture (Conv without bias, BatchNormalization, Relu,
MaxPool, Add, GlobalAveragePool, Flatten, Gemm). Built node by node with ``onnx.helper``
(the ``onnx`` package, extra ``irc[onnx]``), so no PyTorch or torchvision is needed.

>>> m = get_model("resnet18")
>>> proto = resnet_onnx(m.state_dict(), depth=18, input_shape=m.input_shape)
>>> onnxruntime.InferenceSession(proto.SerializeToString())
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.diagnostics import IRCError
from ...frontend.onnx.importer import onnx_module
from .resnet import _config


class _Graph:
    """Nodes and initializers being collected, with fresh value names."""

    def __init__(self, onnx: Any, state: dict[str, np.ndarray]):
        self.onnx, self.state = onnx, state
        self.nodes: list[Any] = []
        self.inits: dict[str, Any] = {}
        self.count = 0

    def weight(self, name: str) -> str:
        if name not in self.inits:
            if name not in self.state:
                raise IRCError(f"ONNX export: the state dict has no {name!r}")
            arr = np.asarray(self.state[name], dtype="float32", order="C")
            self.inits[name] = self.onnx.numpy_helper.from_array(arr, name)
        return name

    def node(self, op: str, inputs: list[str], **attrs: Any) -> str:
        self.count += 1
        out = f"{op.lower()}_{self.count}"
        self.nodes.append(self.onnx.helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv_bn(self, x: str, conv: str, bn: str, stride: int = 1) -> str:
        w = self.state[f"{conv}.weight"]
        k = int(w.shape[2])
        y = self.node("Conv", [x, self.weight(f"{conv}.weight")], kernel_shape=[k, k],
                      strides=[stride, stride], pads=[k // 2] * 4)
        return self.node("BatchNormalization",
                         [y] + [self.weight(f"{bn}.{p}") for p in
                                ("weight", "bias", "running_mean", "running_var")],
                         epsilon=1e-5)


def resnet_onnx(state: dict[str, np.ndarray], depth: int = 18,
                input_shape: tuple[int, ...] = (1, 3, 224, 224), opset: int = 17) -> Any:
    """The zoo's NCHW ResNet-``depth`` with weights ``state`` (torchvision's names) as an
    ``onnx.ModelProto`` with input ``x`` of ``input_shape`` and output ``logits``."""
    onnx = onnx_module()
    if len(input_shape) != 4 or input_shape[1] != 3:
        raise IRCError(f"resnet_onnx: the input must be NCHW images with 3 channels, got "
                       f"shape {tuple(input_shape)}")
    kind, blocks = _config(depth)
    g = _Graph(onnx, state)
    y = g.node("Relu", [g.conv_bn("x", "conv1", "bn1", 2)])
    y = g.node("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    for stage, count in enumerate(blocks):
        for i in range(count):
            p = f"layer{stage + 1}.{i}"
            stride = 2 if stage > 0 and i == 0 else 1
            shortcut = y
            if f"{p}.downsample.0.weight" in state:
                shortcut = g.conv_bn(y, f"{p}.downsample.0", f"{p}.downsample.1", stride)
            if kind == "basic":
                z = g.node("Relu", [g.conv_bn(y, f"{p}.conv1", f"{p}.bn1", stride)])
                z = g.conv_bn(z, f"{p}.conv2", f"{p}.bn2")
            else:
                z = g.node("Relu", [g.conv_bn(y, f"{p}.conv1", f"{p}.bn1")])
                z = g.node("Relu", [g.conv_bn(z, f"{p}.conv2", f"{p}.bn2", stride)])
                z = g.conv_bn(z, f"{p}.conv3", f"{p}.bn3")
            y = g.node("Relu", [g.node("Add", [z, shortcut])])
    y = g.node("Flatten", [g.node("GlobalAveragePool", [y])], axis=1)
    g.nodes.append(onnx.helper.make_node(
        "Gemm", [y, g.weight("fc.weight"), g.weight("fc.bias")], ["logits"], transB=1,
        name="fc"))
    classes = int(state["fc.weight"].shape[0])
    graph = onnx.helper.make_graph(
        g.nodes, f"resnet{depth}",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(input_shape))],
        [onnx.helper.make_tensor_value_info("logits", onnx.TensorProto.FLOAT,
                                            [input_shape[0], classes])],
        initializer=list(g.inits.values()))
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)],
                                   producer_name="irc.testing.models")
    onnx.checker.check_model(model)
    return model


__all__ = ["resnet_onnx"]

"""Small float32 ONNX models for tests and benchmarks, written with ``onnx.helper``
(``onnx`` is imported when a model is made: it is an optional dependency)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def float_model(nodes: Sequence[Any], inputs: Sequence[tuple[str, Sequence[int]]],
                output: str, inits: dict[str, np.ndarray], opset: int = 17) -> Any:
    """A model of ``nodes`` with float32 ``inputs`` (name, shape), one float32 output of
    unspecified shape and the arrays ``inits`` as initializers (weights)."""
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        list(nodes), "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


__all__ = ["float_model"]

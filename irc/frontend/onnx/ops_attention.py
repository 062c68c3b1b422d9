"""Converters of attention operators that ONNX defines outside a function body:
``FlexAttention`` (domain ``ai.onnx.preview``).

FlexAttention is scaled dot-product attention whose scores and probabilities may pass
through user subgraphs (``score_mod``, ``prob_mod``); each subgraph is inlined once, its
one input bound to the tensor it modifies (``GraphImporter.inline_subgraph``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core import dtype as dt
from ...ir import ops
from ...ir.expr import Constant, Expr
from .importer import Node
from .protos import DTYPES
from .registry import converter
from .scope import SymShape

# softmax_precision values ONNX allows (TensorProto element types).
_PRECISIONS = {1: "float32", 10: "float16", 16: "bfloat16", 11: "float64"}


def _modifier(node: Node, graph: Any, value: Expr, name: str) -> Expr:
    """``value`` through the one-input, one-output subgraph ``graph``."""
    if len(graph.input) != 1 or len(graph.output) != 1:
        raise node.error(f"{name} must take one input and give one output, got "
                         f"{len(graph.input)} and {len(graph.output)}")
    bound = node.emit(value, name + "_in")
    node.graph.scope.bind(graph.input[0].name, bound)
    (out,) = node.graph.inline_subgraph(graph, [graph.output[0].name])
    if isinstance(out, SymShape):
        raise node.error(f"{name} returns a shape value, not the modified tensor")
    return out


@converter("FlexAttention", since=1, domain="ai.onnx.preview")
def _flex_attention(node: Node) -> Expr:
    """``softmax(score_mod(Q K^T * scale)) -> prob_mod -> @ V`` over rank-4 ``[batch,
    heads, length, size]`` inputs, K and V heads shared by contiguous groups of query
    heads; scores and probabilities in ``softmax_precision`` (float32 for inputs
    narrower than 32 bits, else the input's dtype), scaled by ``sqrt(scale)`` on each
    side of the product as ONNX's reference does."""
    q, k, v = node.input(0), node.input(1), node.input(2)
    for i in range(3):
        if node.ndim(i) != 4:
            raise node.error(f"input {i} must have rank 4, got rank {node.ndim(i)}")
        if not dt.is_float(node.dtype(i)):
            raise node.error(f"input {i} must be a float tensor, got {node.dtype(i)}")
    dtype = node.dtype(0)
    q_shape, k_shape = node.static_shape(0), node.static_shape(1)
    if q_shape is None or k_shape is None:
        raise node.error("Q and K need static shapes (the head counts and head size)")
    heads, kv_heads, size = q_shape[1], k_shape[1], q_shape[3]
    if kv_heads <= 0 or heads % kv_heads:
        raise node.error(f"the {heads} query heads are not a multiple of the {kv_heads} "
                         "key/value heads")
    if node.attr("softmax_precision") is not None:
        precision = int(node.attr("softmax_precision"))
        if precision not in _PRECISIONS:
            raise node.error(f"softmax_precision {precision} is not one of "
                             f"{', '.join(f'{p} ({DTYPES[p]})' for p in _PRECISIONS)}")
        compute = _PRECISIONS[precision]
    else:
        compute = "float32" if dt.bits(dtype) < 32 else dtype
    scale = node.attr("scale")
    scale = 1.0 / np.sqrt(size) if scale is None else float(scale)
    root = Constant.from_numpy(np.sqrt(np.float32(scale)), dtype)
    if kv_heads != heads:
        k = ops.repeat(k, heads // kv_heads, axis=1)
        v = ops.repeat(v, heads // kv_heads, axis=1)
    scores = ops.matmul(ops.multiply(q, root),
                        ops.permute_dims(ops.multiply(k, root), [0, 1, 3, 2]))
    scores = ops.astype(scores, compute)
    if node.attr("score_mod") is not None:
        scores = ops.astype(_modifier(node, node.attr("score_mod"), scores, "score_mod"),
                            compute)
    probs = ops.nn.softmax(scores, axis=-1)
    if node.attr("prob_mod") is not None:
        probs = ops.astype(_modifier(node, node.attr("prob_mod"), probs, "prob_mod"),
                           compute)
    return ops.astype(ops.matmul(probs, ops.astype(v, compute)), node.dtype(2))


__all__: list[str] = []

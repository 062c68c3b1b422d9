"""Import-time evaluation: a node whose inputs are all known when the model is imported
(constants, initializers, ``Constant`` nodes, the static shape of a tensor) is evaluated
then and there by ONNX's own reference implementation (``onnx.reference``) when it is
shape arithmetic, data movement or elementwise arithmetic (:data:`_FOLDED`; reductions
of integers too, :data:`_FOLDED_INTEGER`), and its outputs become constants. This folds
the shape arithmetic exporters write (``Shape -> Gather -> Concat -> Reshape``) when
shapes are static.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...core import dtype as dt
from ...core.diagnostics import IRCError
from ...ir.expr import Constant

if TYPE_CHECKING:
    from .importer import Node

# The operators evaluated at import time when all their inputs are known: shape
# arithmetic, data movement and elementwise arithmetic, whose reference results are exact
# (data movement) or one rounding per element like irc's kernels. Anything else (windows,
# normalizations, control flow, reductions of floats) stays in the graph, where
# ``FoldConstant`` evaluates it with irc's own compiled kernels: ONNX's reference
# evaluator is a specification aid, not an implementation to take results from.
_FOLDED = frozenset({
    # shapes and data movement
    "Shape", "Size", "Gather", "GatherElements", "GatherND", "Slice", "Concat", "Split",
    "Unsqueeze", "Squeeze", "Reshape", "Flatten", "Expand", "Tile", "Transpose",
    "ConstantOfShape", "Range", "Identity", "Constant", "Pad", "Where", "NonZero",
    "Trilu", "OneHot", "CastLike", "Cast", "EyeLike", "SpaceToDepth", "DepthToSpace",
    # elementwise arithmetic and comparison
    "Add", "Sub", "Mul", "Div", "Mod", "Pow", "Neg", "Abs", "Sign", "Floor", "Ceil",
    "Round", "Sqrt", "Reciprocal", "Exp", "Log", "Min", "Max", "Clip", "Relu",
    "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "And", "Or",
    "Xor", "IsNaN", "IsInf", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor",
    "BitwiseNot",
})
# Reductions folded when their input is an integer tensor (the product of a shape's
# dimensions, the largest of several sizes): exact, unlike a float accumulation.
_FOLDED_INTEGER = frozenset({"ReduceProd", "ReduceSum", "ReduceMin", "ReduceMax",
                             "ArgMax", "ArgMin", "CumSum"})
# The largest constant import-time evaluation may create (elements).
_FOLD_LIMIT = 1 << 22


def fold(node: Node) -> bool:
    """Evaluate ``node`` now, binding its outputs as constants, when all its inputs are
    known and its operator is one folded (module docstring); returns whether it did."""
    graph = node.graph
    if node.proto.domain not in ("", "ai.onnx") or node.op_type not in (
            _FOLDED | _FOLDED_INTEGER):
        return False
    arrays = []
    for i in range(node.num_inputs):
        if not node.has_input(i):
            arrays.append(None)
            continue
        c = node.const(i)
        if c is None:
            return False
        arrays.append(c)
    if all(a is None for a in arrays) and node.op_type != "Constant":
        return False
    if node.op_type in _FOLDED_INTEGER and not all(
            a.dtype.kind in "biu" for a in arrays if a is not None):
        return False
    try:
        outs = _reference_run(graph.onnx, node.proto, arrays, graph.opset)
    except Exception:  # noqa: BLE001 - the reference lacks or rejects it: the converter decides
        return False
    limit = max(_FOLD_LIMIT, 2 * sum(a.size for a in arrays if a is not None))
    if any(not isinstance(o, np.ndarray) or o.size > limit or not _irc_array(o)
           for o in outs):
        return False
    for name, arr in zip(node.output_names, outs):
        if name:
            graph.scope.bind(name, Constant.from_numpy(np.asarray(arr)))
    return True


def _irc_array(arr: np.ndarray) -> bool:
    """Whether irc has a dtype for ``arr``'s (numbers, bools, ml_dtypes' bfloat16 and
    narrow formats; not strings nor objects)."""
    if arr.dtype.kind not in "biufV":
        return False
    try:
        dt.from_numpy(arr.dtype)
    except IRCError:
        return False
    return True


def _reference_run(onnx: Any, node: Any, arrays: list[np.ndarray | None],
                   opset: int) -> list[np.ndarray]:
    """The outputs of ``node`` run alone by ONNX's reference evaluator on ``arrays`` (None
    where an input is omitted)."""
    from onnx.reference import ReferenceEvaluator

    inputs, feeds = [], {}
    names = []
    for i, arr in enumerate(arrays):
        if arr is None:
            names.append("")
            continue
        n = f"in{i}"
        names.append(n)
        elem = onnx.helper.np_dtype_to_tensor_dtype(arr.dtype)
        inputs.append(onnx.helper.make_tensor_value_info(n, elem, list(arr.shape)))
        feeds[n] = arr
    outs = [f"out{i}" if o else "" for i, o in enumerate(node.output)]
    n2 = onnx.helper.make_node(node.op_type, names, outs)
    n2.attribute.extend(node.attribute)
    graph = onnx.helper.make_graph(
        [n2], "fold", inputs,
        [onnx.helper.make_empty_tensor_value_info(o) for o in outs if o])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
    res = ReferenceEvaluator(model).run(None, feeds)
    # a sequence (a list) stays one, so the fold declines it and the converter decides
    return [r if isinstance(r, list) else np.asarray(r) for r in res]

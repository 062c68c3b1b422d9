"""Converters of ONNX's sequence operators: ``SequenceConstruct``, ``SequenceEmpty``,
``SequenceAt``, ``SequenceLength``, ``SequenceInsert``, ``SequenceErase``,
``ConcatFromSequence``, ``SplitToSequence``, ``SequenceMap`` (unrolled).

irc represents an ONNX sequence as a tuple, so its length must be known when the model is
imported: the positions ``SequenceAt``, ``SequenceInsert`` and ``SequenceErase`` read
must be constants, and ``SplitToSequence`` must know how many pieces it makes (a static
axis, or split sizes given as a 1-D tensor whose length is static). What would make a
sequence's length depend on run-time data is refused with an
:class:`~irc.UnsupportedOperatorError` saying so. This is what exporters write for
``torch.split``/``torch.unbind`` followed by ``torch.cat``/``torch.stack`` of the list.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.diagnostics import UnsupportedOperatorError
from ...ir import ops
from ...ir.expr import Constant, Expr, Tuple, TupleGetItem, Var
from ...ir.struct_info import TensorStructInfo, TupleStructInfo
from ...tir import expr as E
from .importer import Node
from .ops_tensor import split_runtime
from .protos import valid_name
from .registry import converter
from .scope import SymShape

STATIC_LENGTH = ("irc represents a sequence as a tuple whose length is fixed when the model "
                 "is imported")


def _refuse(what: str) -> UnsupportedOperatorError:
    """The refusal of a sequence whose length or positions would depend on run-time data."""
    return UnsupportedOperatorError(f"{what} must be known at import time: {STATIC_LENGTH}")


def elements(node: Node, i: int) -> list[Expr]:
    """The elements of sequence input ``i`` (a tuple of static length)."""
    seq = node.input(i)
    if isinstance(seq, Tuple):
        return list(seq.fields)
    sinfo = node.graph.bb.normalize(seq).struct_info
    if not isinstance(sinfo, TupleStructInfo):
        raise node.error(f"input {i} is not a sequence: {STATIC_LENGTH}, and this input "
                         "is not one")
    return [TupleGetItem(tuple_value=seq, index=k) for k in range(len(sinfo.fields))]


def _tensor_sinfo(node: Node, e: Expr) -> TensorStructInfo:
    sinfo = node.graph.bb.normalize(e).struct_info
    if not isinstance(sinfo, TensorStructInfo):
        raise node.error("a sequence element is not a tensor")
    return sinfo


def _position(node: Node, i: int, length: int, insert: bool = False) -> int:
    """Input ``i``, a position in a sequence of ``length`` (negative ones count from the
    end; inserting may also name ``length``), known at import time."""
    c = node.const(i)
    if c is None:
        raise _refuse(f"the position (input {i})")
    if c.size != 1 or c.dtype.kind not in "iu":
        raise node.error(f"the position must be one integer, got {c.dtype} of shape "
                         f"{c.shape}")
    p = int(c.reshape(-1)[0])
    high = length if insert else length - 1
    if not -length <= p <= high:
        raise node.error(f"position {p} is out of range for a sequence of {length} "
                         f"element{'s' if length != 1 else ''} (from {-length} to {high})")
    return p + length if p < 0 else p


@converter("SequenceConstruct", since=11)
def _sequence_construct(node: Node) -> Expr:
    return Tuple(fields=tuple(node.input(i) for i in range(node.num_inputs)))


@converter("SequenceEmpty", since=11)
def _sequence_empty(node: Node) -> Expr:
    return Tuple(fields=())


@converter("SequenceAt", since=11)
def _sequence_at(node: Node) -> Expr:
    items = elements(node, 0)
    return items[_position(node, 1, len(items))]


@converter("SequenceLength", since=11)
def _sequence_length(node: Node) -> Expr:
    return Constant.from_numpy(np.asarray(len(elements(node, 0)), "int64"))


@converter("SequenceInsert", since=11)
def _sequence_insert(node: Node) -> Expr:
    items = elements(node, 0)
    p = _position(node, 2, len(items), insert=True) if node.has_input(2) else len(items)
    items.insert(p, node.input(1))
    return Tuple(fields=tuple(items))


@converter("SequenceErase", since=11)
def _sequence_erase(node: Node) -> Expr:
    items = elements(node, 0)
    if not items:
        raise node.error("cannot erase from an empty sequence")
    p = _position(node, 1, len(items)) if node.has_input(1) else len(items) - 1
    del items[p]
    return Tuple(fields=tuple(items))


@converter("ConcatFromSequence", since=11)
def _concat_from_sequence(node: Node) -> Expr:
    items = elements(node, 0)
    if not items:
        raise node.error("cannot concatenate an empty sequence")
    ndim = _tensor_sinfo(node, items[0]).ndim
    if ndim < 0:
        raise node.error("the sequence's elements have unknown rank")
    axis = int(node.required_attr("axis"))
    new_axis = int(node.attr("new_axis", 0))
    rank = ndim + 1 if new_axis else ndim
    if not -rank <= axis < rank:
        raise node.error(f"axis {axis} is out of range for {rank}-d results")
    axis = axis + rank if axis < 0 else axis
    if new_axis:
        items = [ops.expand_dims(x, axis) for x in items]
    if len(items) == 1:
        return items[0]
    return ops.concat(Tuple(fields=tuple(items)), axis)


def _split_sizes(node: Node, dim: Any, axis: int) -> list[int]:
    """The static sizes SplitToSequence cuts an axis of size ``dim`` into."""
    split = node.const(1)
    if split is not None and split.ndim == 1:
        return [int(v) for v in split]
    if not isinstance(dim, E.IntImm):
        raise _refuse(f"the size of the split axis {axis} (a dimension known only at run "
                      "time here)")
    total = int(dim.value)
    if split is None:
        return [1] * total
    chunk = int(split.reshape(-1)[0])
    if chunk <= 0:
        raise node.error(f"split must be positive, got {chunk}")
    return [chunk] * (total // chunk) + ([total % chunk] if total % chunk else [])


@converter("SplitToSequence", since=11)
def _split_to_sequence(node: Node) -> Expr:
    shape = node.shape(0)
    axis = int(node.attr("axis", 0))
    if not -len(shape) <= axis < len(shape):
        raise node.error(f"axis {axis} is out of range for a {len(shape)}-d input")
    axis = axis + len(shape) if axis < 0 else axis
    x = node.input(0)
    if node.has_input(1) and node.const(1) is None:
        split_shape = node.static_shape(1)
        if split_shape is None or len(split_shape) != 1:
            raise _refuse("the number of pieces (split is a run-time scalar here, so the "
                          "count depends on its value)")
        return Tuple(fields=tuple(split_runtime(node, axis, split_shape[0])))
    sizes = _split_sizes(node, shape[axis], axis)
    if len(sizes) == 1:
        pieces: list[Expr] = [x]
    else:
        cuts = np.cumsum(sizes[:-1]).tolist()
        parts = node.emit(ops.split(x, [int(c) for c in cuts], axis), "split")
        pieces = [TupleGetItem(tuple_value=parts, index=k) for k in range(len(sizes))]
    if not node.has_input(1) and not int(node.attr("keepdims", 1)):
        pieces = [ops.squeeze(p, [axis]) for p in pieces]
    return Tuple(fields=tuple(pieces))


__all__ = ["STATIC_LENGTH", "elements"]


@converter("SequenceMap", since=17)
def _sequence_map(node: Node) -> list[Expr]:
    """The body converted once per position of the sequences (unrolled): each sequence
    input gives the body its element there, each tensor input itself."""
    graph = node.graph
    body = node.required_attr("body")
    if len(body.input) != node.num_inputs:
        raise node.error(f"the body has {len(body.input)} inputs for {node.num_inputs} "
                         "node inputs")
    sequences = {i: elements(node, i) for i in range(node.num_inputs)
                 if isinstance(graph.bb.normalize(node.input(i)).struct_info,
                               TupleStructInfo)}
    lengths = {len(items) for items in sequences.values()}
    if len(lengths) != 1:
        raise node.error(f"the sequences have different lengths {sorted(lengths)}"
                         if lengths else "input 0 must be a sequence")
    outputs: list[list[Expr]] = [[] for _ in body.output]
    for k in range(lengths.pop()):
        with graph.in_scope(graph.scope.nested()) as scope:
            for i, formal in enumerate(body.input):
                value = sequences[i][k] if i in sequences else node.input(i)
                if not isinstance(value, (Var, Constant)):
                    value = graph.bb.emit(value, valid_name(f"{formal.name}_{k}"))
                scope.bind(formal.name, value)
            results = graph.inline_subgraph(body, [vi.name for vi in body.output])
            for j, (vi, value) in enumerate(zip(body.output, results)):
                if isinstance(value, SymShape):
                    value = graph.shape_tensor(value, f"{vi.name}_{k}")
                outputs[j].append(value)
    return [Tuple(fields=tuple(items)) for items in outputs]

"""What ``from_onnx`` is given, read: the model (from a path, bytes or a ``ModelProto``),
refused when it computes nothing; the settings, refused when they name nothing in the
model or have the wrong kind; and the types of the graph's inputs under those settings
(``shape_dict`` fixes sizes, names dimensions or gives a sequence its length,
``dtype_dict`` overrides dtypes) and the values of its initializers."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core import dtype as dt
from ...core.diagnostics import IRCError, did_you_mean
from ...ir.expr import Constant
from ...ir.struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from ...tir import expr as E
from .protos import onnx_dtype, valid_name

if TYPE_CHECKING:
    from .importer import GraphImporter


def load_model(model: Any, onnx: Any) -> Any:
    """The ``ModelProto`` of ``model``: a path (with its external data files), the
    serialized bytes, or a ``ModelProto`` itself."""
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.exists(path):
            raise IRCError(f"from_onnx: no such file {path!r}")
        try:
            return onnx.load(path, load_external_data=True)
        except Exception as err:  # noqa: BLE001 - protobuf's decode errors share no base
            raise IRCError(f"from_onnx: {path!r} is not a readable ONNX model: "
                           f"{type(err).__name__}: {err}") from None
    if isinstance(model, (bytes, bytearray)):
        try:
            return onnx.load_from_string(bytes(model))
        except Exception as err:  # noqa: BLE001 - as above
            raise IRCError(f"from_onnx: the bytes are not an ONNX model: "
                           f"{type(err).__name__}: {err}") from None
    if isinstance(model, onnx.ModelProto):
        return model
    raise IRCError(f"from_onnx expects an onnx.ModelProto, a path or bytes, got "
                   f"{type(model).__name__}")


def check_model(proto: Any, model: Any) -> None:
    """Refuse a model that computes nothing: no graph (an empty or cut-short file parses
    as an empty model) or a graph without outputs. A graph whose outputs are its inputs
    (no nodes) is a model."""
    if isinstance(model, (str, os.PathLike)):
        source = f"the file {os.fspath(model)!r}"
        empty = os.path.getsize(model) == 0
    elif isinstance(model, (bytes, bytearray)):
        source, empty = "the bytes given", len(model) == 0
    else:
        source, empty = "the ModelProto given", proto.ByteSize() == 0
    if not proto.HasField("graph"):
        why = "it is empty (0 bytes)" if empty else "it has no graph"
        raise IRCError(f"from_onnx: cannot import {source}: {why}, so it is not an ONNX "
                       "model",
                       hint="give the .onnx file the exporter wrote (a file cut short by a "
                            "failed copy or download parses as an empty model)")
    if not proto.graph.output:
        raise IRCError(f"from_onnx: cannot import {source}: its graph "
                       f"{proto.graph.name!r} has no outputs, so it computes nothing",
                       hint="export the model with its outputs declared")


def check_settings(proto: Any, shape_dict: Any, dtype_dict: Any, opset: Any) -> None:
    """Refuse a setting that names nothing in the model, or whose value has the wrong
    kind, instead of ignoring it: ``shape_dict`` keys are graph inputs (value: a list of
    sizes, names or None, one per dimension) or named dimensions of them (value: a size);
    ``dtype_dict`` keys are graph inputs; ``opset`` is an int from 1."""
    init_names = {t.name for t in proto.graph.initializer}
    inputs = [vi for vi in proto.graph.input if vi.name not in init_names]
    ranks: dict[str, int | None] = {}
    dim_names: list[str] = []
    sequences = {vi.name for vi in inputs if _sequence_type(vi.type) is not None}
    for vi in inputs:
        tt = vi.type.tensor_type if vi.type.WhichOneof("value") == "tensor_type" else None
        if tt is None or not tt.HasField("shape"):
            ranks[vi.name] = None
            continue
        ranks[vi.name] = len(tt.shape.dim)
        for axis, d in enumerate(tt.shape.dim):
            if not (d.HasField("dim_value") and d.dim_value >= 0):
                dim_names.append(d.dim_param if d.HasField("dim_param")
                                 else f"{vi.name}_dim{axis}")
    inputs_text = ", ".join(repr(n) for n in ranks) or "none"

    def unknown(what: str, key: Any, known: list[str], extra: str) -> IRCError:
        return IRCError(f"from_onnx: {what} names {key!r}, which is not {extra} of the "
                        f"model{did_you_mean(str(key), known)}",
                        hint=f"the model's graph inputs are {inputs_text}" + (
                            f"; its named dimensions {', '.join(map(repr, dim_names))}"
                            if dim_names else ""))

    if shape_dict is not None:
        if not isinstance(shape_dict, dict):
            raise IRCError(f"from_onnx: shape_dict must be a dict of input or dimension name "
                           f"to shape or size, got {type(shape_dict).__name__}")
        for key, value in shape_dict.items():
            if key in sequences:
                if not _sequence_setting(value):
                    raise IRCError(f"from_onnx: shape_dict[{key!r}] gives the sequence "
                                   f"input {key!r} its length (an int >= 0) or its "
                                   f"elements' shapes (a list of lists), got {value!r}")
            elif key in ranks:
                if not isinstance(value, (list, tuple)) or not all(
                        d is None or isinstance(d, str) or (isinstance(d, (int, np.integer))
                                                            and not isinstance(d, bool))
                        for d in value):
                    raise IRCError(f"from_onnx: shape_dict[{key!r}] must be a list of "
                                   f"sizes, dimension names or None, got {value!r}")
                rank = ranks[key]
                if rank is not None and len(value) != rank:
                    raise IRCError(f"from_onnx: shape_dict[{key!r}] has {len(value)} "
                                   f"dimensions, but the model declares input {key!r} with "
                                   f"{rank}")
            elif key in dim_names:
                if not isinstance(value, (int, np.integer)) or isinstance(value, bool) \
                        or value < 0:
                    raise IRCError(f"from_onnx: shape_dict[{key!r}] fixes the named "
                                   f"dimension {key!r}; give its size (an int >= 0), got "
                                   f"{value!r}")
            else:
                raise unknown("shape_dict", key, [*ranks, *dim_names],
                              "a graph input or a named dimension of one")
    if dtype_dict is not None:
        if not isinstance(dtype_dict, dict):
            raise IRCError(f"from_onnx: dtype_dict must be a dict of input name to dtype, "
                           f"got {type(dtype_dict).__name__}")
        for key, value in dtype_dict.items():
            if key not in ranks:
                raise unknown("dtype_dict", key, list(ranks), "a graph input")
            try:
                dt.check(str(value))
            except IRCError as err:
                raise IRCError(f"from_onnx: dtype_dict[{key!r}]: {err.message}") from None
    if opset is not None and (not isinstance(opset, (int, np.integer))
                              or isinstance(opset, bool) or opset < 1):
        raise IRCError(f"from_onnx: opset must be an ONNX opset version (an int from 1), "
                       f"got {opset!r}")


def _sequence_type(t: Any) -> Any:
    """The ``SequenceProto`` type of a graph input's type (itself, or the element of an
    optional), when it is a sequence of tensors; else None."""
    if t.WhichOneof("value") == "optional_type":
        t = t.optional_type.elem_type
    if t.WhichOneof("value") != "sequence_type" or \
            t.sequence_type.elem_type.WhichOneof("value") != "tensor_type":
        return None
    return t.sequence_type


def _sequence_setting(value: Any) -> bool:
    """Whether ``value`` gives a sequence input its length or its elements' shapes."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return value >= 0
    return isinstance(value, (list, tuple)) and all(
        isinstance(shape, (list, tuple)) and all(
            d is None or (isinstance(d, (int, np.integer)) and not isinstance(d, bool)
                          and d >= 0) for d in shape) for shape in value)


def input_sinfo(graph: GraphImporter, vi: Any) -> StructInfo:
    """The struct info of graph input ``vi`` (a ``ValueInfoProto``): a tensor, or a tuple
    for a sequence; a dimension the model leaves open is the shape variable of its name
    (``graph.named_dim``)."""
    t = vi.type
    if t.WhichOneof("value") == "optional_type":
        # a compiled function's signature is fixed: the optional input must be given
        t = t.optional_type.elem_type
    seq = _sequence_type(t)
    if seq is not None:
        return _sequence_input_sinfo(graph, vi.name, seq)
    if t.WhichOneof("value") != "tensor_type":
        raise IRCError(f"from_onnx: graph input {vi.name!r} is a "
                       f"{t.WhichOneof('value') or 'untyped value'}; irc imports tensor "
                       "inputs")
    tt = t.tensor_type
    dtype = graph.dtype_dict.get(vi.name) or onnx_dtype(tt.elem_type,
                                                        f"graph input {vi.name!r}")
    dtype = dt.check(str(dtype))
    fixed = graph.shape_dict.get(vi.name)
    if fixed is not None:
        dims = []
        for axis, d in enumerate(fixed):
            if isinstance(d, str) or d is None:
                dims.append(graph.named_dim(d or f"{vi.name}_dim{axis}"))
            else:
                if int(d) < 0:
                    raise IRCError(f"from_onnx: shape_dict[{vi.name!r}] gives dimension "
                                   f"{axis} as {d}; give a size (>= 0), or a name or None "
                                   "for a dimension known only at run time")
                dims.append(E.IntImm(dtype="int64", value=int(d)))
        return TensorStructInfo(shape=tuple(dims), dtype=dtype)
    if not tt.HasField("shape"):
        return TensorStructInfo(shape=None, dtype=dtype, ndim=-1)
    dims = [_dim(graph, d, vi.name, a) for a, d in enumerate(tt.shape.dim)]
    return TensorStructInfo(shape=tuple(dims), dtype=dtype)


def _dim(graph: GraphImporter, d: Any, input_name: str, axis: int) -> Any:
    # Some exporters write -1 for a dimension known only at run time: it is one.
    if d.HasField("dim_value") and d.dim_value >= 0:
        return E.IntImm(dtype="int64", value=int(d.dim_value))
    name = d.dim_param if d.HasField("dim_param") else f"{input_name}_dim{axis}"
    fixed = graph.shape_dict.get(name)
    if isinstance(fixed, (int, np.integer)) and not isinstance(fixed, bool):
        return E.IntImm(dtype="int64", value=int(fixed))
    return graph.named_dim(name)


def _sequence_input_sinfo(graph: GraphImporter, name: str, seq: Any) -> TupleStructInfo:
    """A sequence input as a tuple, its length (or its elements' shapes) given by
    ``shape_dict``; each element gets its own variables for the dimensions the model
    leaves open (ONNX lets a sequence's elements differ in shape)."""
    fixed = graph.shape_dict.get(name)
    if fixed is None:
        raise IRCError(
            f"from_onnx: graph input {name!r} is a sequence, and irc needs its length "
            "when the model is imported (it represents a sequence as a tuple)",
            hint=f"give it with shape_dict={{{name!r}: 3}} (3 elements of the declared "
                 f"type) or shape_dict={{{name!r}: [[4], [3], [2]]}} (their shapes); "
                 "pass the input as a list or tuple of arrays")
    tt = seq.elem_type.tensor_type
    dtype = dt.check(str(graph.dtype_dict.get(name) or onnx_dtype(
        tt.elem_type, f"the elements of graph input {name!r}")))
    fields = []
    count = len(fixed) if isinstance(fixed, (list, tuple)) else int(fixed)
    for k in range(count):
        if isinstance(fixed, (list, tuple)):
            dims: list[Any] = list(fixed[k])
        elif tt.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else None
                    for d in tt.shape.dim]
        else:
            fields.append(TensorStructInfo(shape=None, dtype=dtype, ndim=-1))
            continue
        fields.append(TensorStructInfo(shape=tuple(
            graph.fresh_dim(valid_name(f"{name}_{k}_d{a}", "d")) if d is None
            else E.IntImm(dtype="int64", value=int(d)) for a, d in enumerate(dims)),
            dtype=dtype))
    return TupleStructInfo(fields=tuple(fields))


def initializer_array(onnx: Any, t: Any) -> np.ndarray:
    """The value of initializer ``t`` (a ``TensorProto``); bfloat16 as ml_dtypes'
    ``bfloat16``."""
    onnx_dtype(t.data_type, f"initializer {t.name!r}")
    try:
        arr = onnx.numpy_helper.to_array(t)
    except Exception as err:  # noqa: BLE001 - malformed tensors fail in many ways
        raise IRCError(f"from_onnx: cannot read initializer {t.name!r}: "
                       f"{type(err).__name__}: {err}") from None
    arr = np.asarray(arr)
    if t.data_type == 16 and arr.dtype.name != "bfloat16":
        # ml_dtypes' bfloat16, as irc gives bfloat16 arrays back (older onnx versions
        # return the bits or float32 values)
        bits = arr if arr.dtype.itemsize == 2 else dt.bfloat16_bits(arr)
        arr = bits.view(dt.user_numpy("bfloat16"))
    return arr


def initializer_constant(onnx: Any, t: Any) -> Constant:
    """Initializer ``t`` as a constant of its ONNX dtype."""
    return Constant.from_numpy(initializer_array(onnx, t), onnx_dtype(t.data_type, t.name))

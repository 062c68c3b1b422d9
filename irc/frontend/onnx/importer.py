"""``from_onnx``: an ONNX model to a graph-level IRModule with a ``main`` function.

The graph's inputs (those that are not initializers) become ``main``'s parameters, in
order; a ``dim_param`` dimension becomes an int64 shape variable of that name, the same
variable wherever the name appears, and a dimension with neither value nor name a fresh
variable. Initializers become constants, or parameters after the inputs with
``keep_params_in_input`` (returned with their values). Nodes are converted in graph order
by the converter table (:mod:`irc.frontend.onnx.registry`), each output bound to a
variable named after the ONNX value (made a valid identifier), so printed IR reads like
the model.

Import-time simplification: a node whose inputs are all known at import time (constants,
initializers, ``Constant`` nodes, the static shape of a tensor) is evaluated then and
there by ONNX's own reference implementation (``onnx.reference``) when it is shape
arithmetic, data movement or elementwise arithmetic (``_FOLDED``), and its outputs become
constants, which folds the shape arithmetic exporters write (``Shape -> Gather ->
Concat -> Reshape``) when shapes are static. Where a shape is symbolic, ``Shape`` gives a
*symbolic shape value* (its dimensions as expressions) that ``Gather``, ``Slice``,
``Concat``, ``Unsqueeze``, ``Squeeze``, ``Cast`` and integer arithmetic carry along and
``Reshape``, ``Expand``, ``ConstantOfShape``, ``Range`` and ``Tile`` read; a symbolic
shape used as data by any other operator is an import error naming the node.
``Identity``, ``Dropout`` (inference) and ``Constant`` produce no computation.

Errors: every operator type without a converter for the model's opset is collected first
and reported together in one :class:`~irc.UnsupportedOperatorError`; anything else wrong
with a node (missing input, bad attribute, shapes that contradict) is an
:class:`IRCError` naming the node and its operator.
"""

from __future__ import annotations

import keyword
import os
import re
from typing import Any, Sequence

import numpy as np

from ...core import dtype as dt
from ...core.diagnostics import (
    IRCError,
    UnsupportedOperatorError,
    did_you_mean,
    require,
)
from ...core.gc_pauses import with_fewer_gc_pauses
from ...core.module import IRModule
from ...ir import ops
from ...ir.block_builder import BlockBuilder
from ...ir.expr import (
    BindingBlock,
    Constant,
    Expr,
    If,
    MatchCast,
    PrimValue,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
)
from ...ir.struct_info import (
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from ...tir import expr as E
from .dataflow import if_out_of_dataflow
from .registry import MIN_OPSET, STRING_TENSORS, lookup, refusal

# ONNX TensorProto element types irc has a dtype for.
DTYPES = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
    9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 16: "bfloat16",
    17: "float8_e4m3fn", 18: "float8_e4m3fnuz", 19: "float8_e5m2", 20: "float8_e5m2fnuz",
    21: "uint4", 22: "int4", 23: "float4_e2m1fn", 24: "float8_e8m0fnu", 25: "uint2",
    26: "int2",
}
_TYPE_NAMES = {8: "string", 14: "complex64", 15: "complex128"}
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


def onnx_module() -> Any:
    """The ``onnx`` package, or an install hint."""
    return require("onnx", "onnx", purpose="the ONNX importer")


def onnx_dtype(elem_type: int, what: str) -> str:
    """irc's dtype of an ONNX element type (an IRCError naming ``what`` otherwise; an
    :class:`~irc.UnsupportedOperatorError` for strings, which irc leaves out)."""
    if elem_type in DTYPES:
        return DTYPES[elem_type]
    if elem_type == 8:
        raise UnsupportedOperatorError(f"{what}: {STRING_TENSORS}")
    name = _TYPE_NAMES.get(elem_type, f"type {elem_type}")
    raise IRCError(f"{what}: irc has no {name} tensors")


def valid_name(name: str, fallback: str = "v") -> str:
    """``name`` made a valid irc identifier (``input.1`` -> ``input_1``)."""
    s = re.sub(r"\W", "_", name).strip("_") or fallback
    if s[0].isdigit() or keyword.iskeyword(s) or s in ("R", "T", "I"):
        s = f"{fallback}_{s}"
    return s


class SymShape:
    """A 0-d or 1-d int64 value known as expressions at import time (a tensor's shape, or
    arithmetic on shapes), some of them symbolic."""

    def __init__(self, dims: Sequence[Any], scalar: bool = False):
        self.dims = tuple(E.IntImm(dtype="int64", value=int(d))
                          if isinstance(d, (int, np.integer)) else d for d in dims)
        self.scalar = scalar
        if scalar and len(self.dims) != 1:
            raise ValueError("a scalar SymShape has one element")

    def static(self) -> list[int] | None:
        """The values when every one is known, else None."""
        out = []
        for d in self.dims:
            if not isinstance(d, E.IntImm):
                return None
            out.append(int(d.value))
        return out


class Node:
    """One ONNX node being converted: its inputs (irc expressions, None where omitted),
    attributes and output names; what converters read."""

    def __init__(self, graph: GraphImporter, proto: Any, opset: int):
        self.graph = graph
        self.proto = proto
        self.op_type: str = proto.op_type
        self.name: str = proto.name or f"{proto.op_type} -> {', '.join(proto.output)}"
        self.opset = opset
        self.input_names = list(proto.input)
        self.output_names = list(proto.output)
        # Inputs this node's converter reads as another expression: see
        # GraphImporter.settle_branch_ranks.
        self.replaced: dict[int, Expr] = {}
        onnx = graph.onnx
        self.attrs: dict[str, Any] = {}
        for a in proto.attribute:
            v = onnx.helper.get_attribute_value(a)
            if isinstance(v, bytes):
                v = v.decode("utf-8", "replace")
            elif isinstance(v, list) and v and isinstance(v[0], bytes):
                v = [x.decode("utf-8", "replace") for x in v]
            self.attrs[a.name] = v

    # -- errors ----------------------------------------------------------------------------
    def error(self, message: str, hint: str | None = None) -> IRCError:
        """An IRCError naming this node."""
        return IRCError(f"ONNX node {self.name!r} ({self.op_type}): {message}", hint=hint)

    # -- attributes ------------------------------------------------------------------------
    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def required_attr(self, name: str) -> Any:
        if name not in self.attrs:
            raise self.error(f"the attribute {name!r} is required")
        return self.attrs[name]

    # -- inputs ----------------------------------------------------------------------------
    @property
    def num_inputs(self) -> int:
        return len(self.input_names)

    def has_input(self, i: int) -> bool:
        return i < len(self.input_names) and self.input_names[i] != ""

    def sym(self, i: int) -> SymShape | None:
        """Input ``i`` as a symbolic shape value, when it is one (or a known constant
        integer vector)."""
        if not self.has_input(i):
            return None
        name = self.input_names[i]
        s = self.graph.syms.get(name)
        if s is not None:
            return s
        c = self.const(i)
        if c is not None and c.ndim <= 1 and np.issubdtype(c.dtype, np.integer):
            return SymShape(c.reshape(-1).tolist(), scalar=c.ndim == 0)
        return None

    def shape_value(self, i: int) -> SymShape | None:
        """Input ``i`` when it exists only as a symbolic shape value (not as a tensor)."""
        if not self.has_input(i) or self.input_names[i] in self.graph.values:
            return None
        return self.graph.syms.get(self.input_names[i])

    def input(self, i: int) -> Expr:
        """Input ``i`` as an irc expression (it must be given)."""
        if not self.has_input(i):
            raise self.error(f"input {i} is required")
        if i in self.replaced:
            return self.replaced[i]
        name = self.input_names[i]
        e = self.graph.values.get(name)
        if e is None:
            s = self.graph.syms.get(name)
            static = s.static() if s is not None else None
            if static is not None:
                arr = np.asarray(static[0] if s.scalar else static, dtype="int64")
                return Constant.from_numpy(arr)
            if s is None:
                raise self.error(f"input {name!r} is not defined")
            return self.graph.shape_tensor(s, name)
        return e

    def optional(self, i: int) -> Expr | None:
        return self.input(i) if self.has_input(i) else None

    def const(self, i: int) -> np.ndarray | None:
        """Input ``i``'s value when it is known at import time, else None (bfloat16 as
        ml_dtypes' ``bfloat16``, not its bits)."""
        if not self.has_input(i):
            return None
        e = self.graph.values.get(self.input_names[i])
        if isinstance(e, Constant):
            data = np.asarray(e.data)
            if e.struct_info.dtype == "bfloat16":
                return data.view(dt.user_numpy("bfloat16"))
            return data
        s = self.graph.syms.get(self.input_names[i])
        if s is not None and s.static() is not None:
            vals = s.static()
            return np.asarray(vals[0] if s.scalar else vals, dtype="int64")
        return None

    def ints(self, i: int, what: str) -> list[int]:
        """Input ``i`` as a list of Python ints, known at import time."""
        c = self.const(i)
        if c is None:
            raise self.error(f"{what} (input {i}) must be known at import time; irc does "
                             "not take it as a run-time tensor here")
        return [int(v) for v in np.asarray(c).reshape(-1)]

    def sinfo(self, i: int) -> TensorStructInfo:
        s = self.input(i).struct_info
        if not isinstance(s, TensorStructInfo):
            raise self.error(f"input {i} is not a tensor")
        return s

    def ndim(self, i: int) -> int:
        n = self.sinfo(i).ndim
        if n < 0:
            raise self.error(f"input {i} has unknown rank")
        return n

    def dtype(self, i: int) -> str:
        return str(self.sinfo(i).dtype)

    def shape(self, i: int) -> tuple[Any, ...]:
        s = self.sinfo(i)
        if s.shape is None:
            raise self.error(f"input {i} has unknown shape")
        return tuple(s.shape)

    def static_shape(self, i: int) -> list[int] | None:
        out = []
        for d in self.shape(i):
            if not isinstance(d, E.IntImm):
                return None
            out.append(int(d.value))
        return out

    # -- building --------------------------------------------------------------------------
    def emit(self, expr: Expr, name: str = "") -> Expr:
        """Bind ``expr`` now (for converters that inspect the struct info of a partial
        result); returns the variable."""
        var = self.graph.bb.emit(expr, valid_name(name or self.op_type.lower()))
        if isinstance(expr, If):
            self.graph.ifs[var] = expr
        return var

    def runtime_dims(self, values: Expr, what: str = "d") -> list[E.Var]:
        """Shape variables bound at run time to the values of ``values`` (a 1-D int64
        tensor of known length): ``R.tensor_to_shape`` and ``R.match_cast``."""
        sinfo = self.graph.bb.normalize(values).struct_info
        n = int(sinfo.shape[0].value)
        base = valid_name(f"{self.output_names[0] if self.output_names else ''}_{what}", "d")
        dims = [self.graph.fresh_dim(f"{base}{i}") for i in range(n)]
        shape = self.graph.bb.emit(ops.tensor_to_shape(values), f"{base}_shape")
        self.graph.bb.match_cast(shape, ShapeStructInfo(values=tuple(dims)), f"{base}_vars")
        return dims

    def runtime_check(self, bad: Expr, what: str) -> None:
        """Fail at run time, naming ``what``, when the int64 scalar ``bad`` is not 0."""
        flag = ops.reshape(ops.astype(bad, "int64"), [1])
        shape = self.graph.bb.emit(ops.tensor_to_shape(flag), "check")
        self.graph.bb.match_cast(shape, ShapeStructInfo(values=(E.IntImm(dtype="int64",
                                                                         value=0),)),
                                 valid_name(f"{self.name}_{what}", "check"))


def _load(model: Any, onnx: Any) -> Any:
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


def _check_model(proto: Any, model: Any) -> None:
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


def _check_settings(proto: Any, shape_dict: Any, dtype_dict: Any, opset: Any) -> None:
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


def _default_opset(proto: Any) -> int:
    for imp in proto.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return int(imp.version)
    return 1


class GraphImporter:
    """Converts one ONNX graph (see the module docstring)."""

    def __init__(self, proto: Any, shape_dict: dict | None, dtype_dict: dict | None,
                 opset: int | None, keep_params_in_input: bool):
        self.onnx = onnx_module()
        self.proto = proto
        self.opset = int(opset) if opset is not None else _default_opset(proto)
        self.shape_dict = dict(shape_dict or {})
        self.dtype_dict = dict(dtype_dict or {})
        self.keep_params = keep_params_in_input
        self.values: dict[str, Expr] = {}
        self.syms: dict[str, SymShape] = {}
        self.dim_vars: dict[str, E.Var] = {}
        self.bb = BlockBuilder()
        self.params: dict[str, np.ndarray] = {}
        self.output_names = {vi.name for vi in proto.graph.output}
        self.emitted_outputs: set[str] = set()
        # The graph-level Ifs converters bound (Node.emit), and the variables bound to their
        # outputs with the output's index: what settle_branch_ranks reads.
        self.ifs: dict[Var, If] = {}
        self.if_outputs: dict[Var, tuple[If, int]] = {}
        self.padded: dict[tuple[Var, int], Expr] = {}

    def shape_tensor(self, s: SymShape, name: str) -> Expr:
        """A symbolic shape value as an int64 tensor computed at run time (its dimensions
        are read from the shape variables bound by then); bound once per value name."""
        def element(d: Any) -> Expr:
            return ops.full([] if s.scalar else [1], PrimValue(value=d), "int64")

        if s.scalar:
            value: Expr = element(s.dims[0])
        elif not s.dims:
            value = Constant.from_numpy(np.zeros(0, "int64"))
        else:
            value = ops.concat(Tuple(fields=tuple(element(d) for d in s.dims)), 0)
        var = self.bb.emit(value, valid_name(name, "shape"))
        self.values[name] = var
        return var

    def fresh_dim(self, name: str) -> E.Var:
        """A new int64 shape variable named after ``name`` (made unique)."""
        base, k = name, 1
        while name in self.dim_vars:
            name = f"{base}_{k}"
            k += 1
        self.dim_vars[name] = E.Var(name=name, dtype="int64")
        return self.dim_vars[name]

    # -- the graph's interface -------------------------------------------------------------
    def _dim(self, d: Any, input_name: str, axis: int) -> Any:
        # Some exporters write -1 for a dimension known only at run time: it is one.
        if d.HasField("dim_value") and d.dim_value >= 0:
            return E.IntImm(dtype="int64", value=int(d.dim_value))
        name = d.dim_param if d.HasField("dim_param") else f"{input_name}_dim{axis}"
        fixed = self.shape_dict.get(name)
        if isinstance(fixed, (int, np.integer)) and not isinstance(fixed, bool):
            return E.IntImm(dtype="int64", value=int(fixed))
        vname = valid_name(name, "d")
        if vname not in self.dim_vars:
            self.dim_vars[vname] = E.Var(name=vname, dtype="int64")
        return self.dim_vars[vname]

    def _input_sinfo(self, vi: Any) -> StructInfo:
        t = vi.type
        if t.WhichOneof("value") == "optional_type":
            # a compiled function's signature is fixed: the optional input must be given
            t = t.optional_type.elem_type
        seq = _sequence_type(t)
        if seq is not None:
            return self._sequence_input_sinfo(vi.name, seq)
        if t.WhichOneof("value") != "tensor_type":
            raise IRCError(f"from_onnx: graph input {vi.name!r} is a "
                           f"{t.WhichOneof('value') or 'untyped value'}; irc imports tensor "
                           "inputs")
        tt = t.tensor_type
        dtype = self.dtype_dict.get(vi.name) or onnx_dtype(tt.elem_type,
                                                            f"graph input {vi.name!r}")
        dtype = dt.check(str(dtype))
        fixed = self.shape_dict.get(vi.name)
        if fixed is not None:
            dims = []
            for axis, d in enumerate(fixed):
                if isinstance(d, str) or d is None:
                    name = d or f"{vi.name}_dim{axis}"
                    vname = valid_name(name, "d")
                    dims.append(self.dim_vars.setdefault(vname, E.Var(name=vname,
                                                                      dtype="int64")))
                else:
                    if int(d) < 0:
                        raise IRCError(f"from_onnx: shape_dict[{vi.name!r}] gives dimension "
                                       f"{axis} as {d}; give a size (>= 0), or a name or None "
                                       "for a dimension known only at run time")
                    dims.append(E.IntImm(dtype="int64", value=int(d)))
            return TensorStructInfo(shape=tuple(dims), dtype=dtype)
        if not tt.HasField("shape"):
            return TensorStructInfo(shape=None, dtype=dtype, ndim=-1)
        dims = [self._dim(d, vi.name, a) for a, d in enumerate(tt.shape.dim)]
        return TensorStructInfo(shape=tuple(dims), dtype=dtype)

    def _sequence_input_sinfo(self, name: str, seq: Any) -> TupleStructInfo:
        """A sequence input as a tuple, its length (or its elements' shapes) given by
        ``shape_dict``; each element gets its own variables for the dimensions the model
        leaves open (ONNX lets a sequence's elements differ in shape)."""
        fixed = self.shape_dict.get(name)
        if fixed is None:
            raise IRCError(
                f"from_onnx: graph input {name!r} is a sequence, and irc needs its length "
                "when the model is imported (it represents a sequence as a tuple)",
                hint=f"give it with shape_dict={{{name!r}: 3}} (3 elements of the declared "
                     f"type) or shape_dict={{{name!r}: [[4], [3], [2]]}} (their shapes); "
                     "pass the input as a list or tuple of arrays")
        tt = seq.elem_type.tensor_type
        dtype = dt.check(str(self.dtype_dict.get(name) or onnx_dtype(
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
                self.fresh_dim(valid_name(f"{name}_{k}_d{a}", "d")) if d is None
                else E.IntImm(dtype="int64", value=int(d)) for a, d in enumerate(dims)),
                dtype=dtype))
        return TupleStructInfo(fields=tuple(fields))

    def _initializer(self, t: Any) -> np.ndarray:
        onnx_dtype(t.data_type, f"initializer {t.name!r}")
        try:
            arr = self.onnx.numpy_helper.to_array(t)
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

    # -- conversion ------------------------------------------------------------------------
    def check_supported(self, graph: Any) -> None:
        """Raise one error listing every operator type that has neither a converter nor a
        function body (see :func:`function_body`) irc can convert, with the reason where
        irc leaves it out deliberately (:func:`~irc.frontend.onnx.registry.refusal`)."""
        missing: dict[tuple[str, str], list[str]] = {}
        for node in all_nodes(graph):
            if not self.convertible(node.domain, node.op_type, self.opset):
                key = (node.domain or "ai.onnx", node.op_type)
                missing.setdefault(key, []).append(node.name or ", ".join(node.output))
        if not missing:
            return
        # Each domain's operators are versioned by that domain's entry in opset_import.
        versions = {imp.domain or "ai.onnx": int(imp.version)
                    for imp in self.proto.opset_import}
        lines = []
        for (domain, op), names in sorted(missing.items()):
            first = ", ".join(repr(n) for n in names[:3]) + (", ..." if len(names) > 3 else "")
            version = self.opset if domain == "ai.onnx" else versions.get(domain)
            where = (f"opset {version}" if version is not None
                     else "a domain missing from the model's opset_import")
            why = refusal(op, domain)
            lines.append(f"  {op} ({domain}, {where}): {len(names)} node"
                         f"{'s' if len(names) > 1 else ''}, first {first}"
                         + (f"; {why}" if why else ""))
        raise UnsupportedOperatorError(
            f"from_onnx: {len(missing)} operator type{'s' if len(missing) > 1 else ''} "
            f"of this model {'have' if len(missing) > 1 else 'has'} no irc converter:\n"
            + "\n".join(lines),
            hint="irc.frontend.onnx.supported_ops() lists what irc converts" + (
                f"; converters start at opset {MIN_OPSET} for most operators: upgrade the "
                "model with onnx.version_converter.convert_version"
                if self.opset < MIN_OPSET else ""))

    def convertible(self, domain: str, op_type: str, opset: int, depth: int = 0) -> bool:
        """Whether irc converts ``op_type``: by a converter, or by expanding the function
        body ONNX defines for it when every operator of that body is convertible (a body
        that depends on the input types is assumed convertible; its operators are checked
        when it is expanded)."""
        if refusal(op_type, domain) is not None:
            return False
        if domain not in ("", "ai.onnx"):
            version = self.domain_opset(domain)
            return version is not None and lookup(op_type, version, domain) is not None
        if lookup(op_type, opset) is not None:
            return True
        kind = function_kind(self.onnx, op_type, opset)
        if kind == "context":
            return depth < _MAX_FUNCTION_DEPTH
        if kind != "static" or depth >= _MAX_FUNCTION_DEPTH:
            return False
        body = function_body(self.onnx, op_type, opset)
        inner = _function_opset(body, opset)
        return all(self.convertible(n.domain, n.op_type, inner, depth + 1) for n in body.node)

    def domain_opset(self, domain: str) -> int | None:
        """The model's opset version of ``domain`` (None when it does not import it)."""
        for imp in self.proto.opset_import:
            if imp.domain == domain:
                return int(imp.version)
        return None

    def run(self) -> IRModule:
        graph = self.proto.graph
        self.check_supported(graph)
        init_names = {t.name for t in graph.initializer}
        params: list[Var] = []
        for vi in graph.input:
            if vi.name in init_names:
                continue
            v = Var(name_hint=valid_name(vi.name, "x"), struct_info=self._input_sinfo(vi))
            params.append(v)
            self.values[vi.name] = v
        num_input = len(params)
        for t in graph.initializer:
            arr = self._initializer(t)
            if self.keep_params:
                v = Var(name_hint=valid_name(t.name, "p"),
                        struct_info=TensorStructInfo(
                            shape=tuple(E.IntImm(dtype="int64", value=int(n))
                                        for n in arr.shape),
                            dtype=onnx_dtype(t.data_type, t.name)))
                params.append(v)
                self.params[v.name_hint] = arr
                self.values[t.name] = v
            else:
                self.values[t.name] = Constant.from_numpy(arr, onnx_dtype(t.data_type, t.name))
        attrs = {"num_input": num_input} if self.keep_params else None
        with self.bb.function("main", params, attrs=attrs):
            with self.bb.dataflow():
                for node in graph.node:
                    self.convert(node)
                outs = []
                for vi in graph.output:
                    if vi.name not in self.values and vi.name not in self.syms:
                        raise IRCError(f"from_onnx: graph output {vi.name!r} is produced by "
                                       "no node")
                    e = self._value(vi.name)
                    if vi.name not in self.emitted_outputs:
                        e = self.bb.emit_output(e, valid_name(vi.name, "out"))
                    outs.append(e)
            result = outs[0] if len(outs) == 1 else Tuple(fields=tuple(outs))
            self.bb.emit_func_output(result)
        return if_out_of_dataflow(self.bb.get())

    # -- subgraphs (If, Loop) -------------------------------------------------------------
    def subgraph_function(self, graph: Any, name: str,
                          inputs: Sequence[TensorStructInfo]) -> tuple[Any, list[Expr]]:
        """Convert the ONNX subgraph ``graph`` into a module function: its parameters are
        the subgraph's formal inputs (``inputs`` their struct info), then the values of the
        enclosing scope it reads (constants and shape values are used directly). Returns
        the function's GlobalVar and the enclosing expressions to pass after the formal
        inputs; the function returns a tuple of the subgraph's outputs."""
        formal = [vi.name for vi in graph.input]
        if len(formal) != len(inputs):
            raise IRCError(f"from_onnx: subgraph {graph.name!r} has {len(formal)} inputs, "
                           f"expected {len(inputs)}")
        values: dict[str, Expr] = {}
        syms: dict[str, SymShape] = {}
        params: list[Var] = []
        captured: list[Expr] = []
        for nm, sinfo in zip(formal, inputs):
            v = Var(name_hint=valid_name(nm, "x"), struct_info=sinfo)
            params.append(v)
            values[nm] = v
        inner = {t.name for t in graph.initializer} | set(formal)
        for nm in free_names(graph):
            if nm in inner:
                continue
            if nm in self.syms and nm not in self.values:
                syms[nm] = self.syms[nm]
                continue
            e = self.values.get(nm)
            if e is None:
                raise IRCError(f"from_onnx: subgraph {graph.name!r} reads {nm!r}, which no "
                               "enclosing graph defines")
            if isinstance(e, Constant):
                values[nm] = e
                continue
            v = Var(name_hint=valid_name(nm, "x"), struct_info=e.struct_info)
            params.append(v)
            captured.append(e)
            values[nm] = v
        for t in graph.initializer:
            values[t.name] = Constant.from_numpy(self._initializer(t),
                                                 onnx_dtype(t.data_type, t.name))
        saved = (self.values, self.syms, self.output_names, self.emitted_outputs)
        self.values, self.syms = values, syms
        self.output_names = {vi.name for vi in graph.output}
        self.emitted_outputs = set()
        fname = self.bb.get().unique_name(valid_name(name, "subgraph"))
        try:
            with self.bb.function(fname, params, private=True):
                with self.bb.dataflow():
                    for node in graph.node:
                        self.convert(node)
                    outs = []
                    for vi in graph.output:
                        if vi.name not in self.values and vi.name not in self.syms:
                            raise IRCError(f"from_onnx: subgraph output {vi.name!r} is "
                                           "produced by no node")
                        e = self._value(vi.name)
                        declared = self._declared_static(vi, e)
                        if declared is not None:
                            # the subgraph declares a static shape its converted value
                            # has only symbolically (run-time slices): checked and kept
                            e = self.bb.emit_output(self.bb.match_cast(
                                e, declared, valid_name(vi.name, "out")),
                                valid_name(vi.name, "out"))
                        elif vi.name not in self.emitted_outputs or isinstance(e,
                                                                               Constant):
                            e = self.bb.emit_output(e, valid_name(vi.name, "out"))
                        outs.append(e)
                gvar = self.bb.emit_func_output(Tuple(fields=tuple(outs)))
        finally:
            self.values, self.syms, self.output_names, self.emitted_outputs = saved
        return gvar, captured

    def _declared_static(self, vi: Any, e: Expr) -> TensorStructInfo | None:
        """The static struct info subgraph output ``vi`` declares, when the converted
        value ``e`` has the same rank but not that static shape; None otherwise."""
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is None or not tt.HasField("shape"):
            return None
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else None
                for d in tt.shape.dim]
        sinfo = self.bb.normalize(e).struct_info
        if any(d is None for d in dims) or not isinstance(sinfo, TensorStructInfo) or \
                sinfo.ndim != len(dims) or sinfo.static_shape is not None:
            return None
        return TensorStructInfo(shape=tuple(E.const(d, "int64") for d in dims),
                                dtype=sinfo.dtype)

    def inline_subgraph(self, graph: Any, outputs: Sequence[str]) -> list[Expr]:
        """Convert the nodes of ``graph`` (a subgraph without inputs) in the current scope
        and return its outputs (an ``If`` whose condition is known at import time)."""
        for t in graph.initializer:
            self.values[t.name] = Constant.from_numpy(self._initializer(t),
                                                      onnx_dtype(t.data_type, t.name))
        for node in graph.node:
            self.convert(node)
        result = []
        for vi in graph.output:
            if vi.name not in self.values and vi.name not in self.syms:
                raise IRCError(f"from_onnx: subgraph output {vi.name!r} is produced by no "
                               "node")
            result.append(self.syms[vi.name] if vi.name in self.syms and
                          vi.name not in self.values else self.values[vi.name])
        return result

    def _value(self, name: str) -> Expr:
        if name in self.values:
            return self.values[name]
        s = self.syms[name]
        static = s.static()
        if static is None:
            raise IRCError(f"from_onnx: graph output {name!r} is a run-time shape with "
                           "symbolic dimensions; irc cannot return it as a tensor yet")
        return Constant.from_numpy(np.asarray(static[0] if s.scalar else static, "int64"))

    def convert(self, proto: Any, opset: int | None = None, depth: int = 0) -> None:
        """Convert one node (of the graph, or of a function body being expanded, whose
        operators may import another ``opset``)."""
        opset = self.opset if opset is None else opset
        for name in proto.input:
            if name and name not in self.values and name not in self.syms:
                raise IRCError(f"ONNX node {proto.name or proto.op_type!r} ({proto.op_type}) "
                               f"reads {name!r}, which is neither a graph input, an "
                               "initializer nor the output of an earlier node")
        node = Node(self, proto, opset)
        if self._fold(node):
            return
        if proto.domain in ("", "ai.onnx"):
            conv = lookup(proto.op_type, opset)
        else:
            version = self.domain_opset(proto.domain)
            conv = lookup(proto.op_type, version, proto.domain) if version is not None \
                else None
        if conv is None:
            self.expand(node, depth)
            return
        if proto.op_type in _BROADCASTING:
            self.settle_branch_ranks(node)
        try:
            result = conv.fn(node)
        except IRCError as err:
            if err.message.startswith("ONNX node "):
                raise
            named = node.error(err.message, hint=err.hint)
            if isinstance(err, UnsupportedOperatorError):  # a deliberate refusal stays one
                raise UnsupportedOperatorError(named.message, hint=err.hint) from None
            raise named from None
        self._bind(node, result)

    def expand(self, node: Node, depth: int) -> None:
        """Convert ``node`` through the function body ONNX defines for its operator: the
        body's nodes, renamed into this graph (formal inputs and outputs to the node's,
        internal values under the node's name) with attribute references resolved, are
        converted one by one."""
        if depth >= _MAX_FUNCTION_DEPTH or not self.convertible(
                node.proto.domain, node.op_type, node.opset, depth):
            raise UnsupportedOperatorError(
                f"from_onnx: ONNX node {node.name!r} ({node.op_type}, opset {node.opset}) "
                "has no irc converter and no function body irc can expand",
                hint="irc.frontend.onnx.supported_ops() lists what irc converts")
        kind = function_kind(self.onnx, node.op_type, node.opset)
        try:
            if kind == "context":
                body = function_body(self.onnx, node.op_type, node.opset, node.proto,
                                     [self._type_proto(node, i)
                                      for i in range(node.num_inputs)])
            else:
                body = function_body(self.onnx, node.op_type, node.opset)
        except IRCError:
            raise
        except Exception as err:  # noqa: BLE001 - onnx's C++ function builders fail in many ways
            raise node.error(f"ONNX could not build the function body of {node.op_type} "
                             f"for these inputs: {type(err).__name__}: {err}") from None
        inner = _function_opset(body, node.opset)
        schema = self.onnx.defs.get_schema(node.op_type, node.opset, node.proto.domain)
        rename = _function_renaming(node, body)
        for sub in body.node:
            if not self.convertible(sub.domain, sub.op_type, inner, depth + 1):
                raise UnsupportedOperatorError(
                    f"from_onnx: ONNX node {node.name!r} ({node.op_type}) expands to a "
                    f"function body using {sub.op_type} (opset {inner}), which irc does not "
                    "convert", hint="irc.frontend.onnx.supported_ops() lists what irc "
                    "converts")
            self.convert(_instantiate(self.onnx, sub, rename, node, body, schema), inner,
                         depth + 1)

    def _type_proto(self, node: Node, i: int) -> Any:
        """ONNX's type of input ``i`` (for function bodies that depend on it)."""
        helper = self.onnx.helper
        if not node.has_input(i):
            return self.onnx.TypeProto()
        name = node.input_names[i]
        if name not in self.values:  # a symbolic shape value: a 0-d or 1-d int64
            s = self.syms[name]
            return helper.make_tensor_type_proto(7, [] if s.scalar else [len(s.dims)])
        sinfo = node.sinfo(i)
        elem = _ELEM_TYPES.get(str(sinfo.dtype))
        if elem is None:
            raise node.error(f"input {i} has dtype {sinfo.dtype}, which ONNX has no type for")
        if sinfo.shape is None:
            return helper.make_tensor_type_proto(elem, None)
        dims = [int(d.value) if isinstance(d, E.IntImm) else str(d) for d in sinfo.shape]
        return helper.make_tensor_type_proto(elem, dims)

    def _bind(self, node: Node, result: Any) -> None:
        if isinstance(result, (SymShape, Expr)) or result is None:
            result = [result]
        result = list(result)
        if len(result) == 1 and isinstance(result[0], Expr) and len(node.output_names) > 1 \
                and isinstance(self.bb.normalize(result[0]).struct_info, TupleStructInfo):
            tup = self.bb.emit(result[0], valid_name(node.op_type.lower()))
            n = len(tup.struct_info.fields)
            result = [TupleGetItem(tuple_value=tup, index=i) for i in range(n)]
        for name, value in zip(node.output_names, result):
            if not name or value is None:
                continue
            if isinstance(value, SymShape):
                self.syms[name] = value
                continue
            if not isinstance(value, (Var, Constant)) or (
                    name in self.output_names and name not in self.emitted_outputs):
                emit = self.bb.emit
                if name in self.output_names:  # a graph output: visible after the block
                    emit = self.bb.emit_output
                    self.emitted_outputs.add(name)
                source = value
                try:
                    value = emit(value, valid_name(name))
                except IRCError as err:
                    raise node.error(err.message, hint=err.hint) from None
                if isinstance(source, TupleGetItem) and source.tuple_value in self.ifs:
                    self.if_outputs[value] = (self.ifs[source.tuple_value], source.index)
            self.values[name] = value
        absent = [n for i, n in enumerate(node.output_names)
                  if n and (i >= len(result) or result[i] is None)]
        if absent:
            raise node.error(f"irc does not compute the output(s) {', '.join(absent)}")

    def settle_branch_ranks(self, node: Node) -> None:
        """Give ``node`` (a broadcasting elementwise operator) a known rank for each input
        of unknown rank that is an output of a graph-level ``If`` whose branches give
        static shapes of different ranks, none above the largest rank among the node's
        other inputs: the result's rank is that largest rank whichever branch ran, and
        the input, broadcast, has the same values with unit dimensions in front. The
        node reads instead an ``If`` on the same condition that reshapes each branch's
        value to that rank (bound once per value and rank)."""
        unknown, ranks = [], []
        for i in range(node.num_inputs):
            if node.has_input(i):
                s = node.input(i).struct_info
                if isinstance(s, TensorStructInfo):
                    (unknown if s.ndim < 0 else ranks).append((i, s.ndim))
        if not unknown or not ranks:
            return
        rank = max(r for _, r in ranks)
        for i, _ in unknown:
            v = node.input(i)
            if not isinstance(v, Var) or v not in self.if_outputs:
                continue
            key = (v, rank)
            if key not in self.padded:
                padded = self._padded_branches(v, rank)
                if padded is None:
                    continue
                self.padded[key] = padded
            node.replaced[i] = self.padded[key]

    def _padded_branches(self, v: Var, rank: int) -> Expr | None:
        """``v`` (an If's output) reshaped to ``rank`` in each branch, or None when a
        branch's shape is not static or has a higher rank."""
        if_expr, index = self.if_outputs[v]
        branches = []
        for branch in (if_expr.true_branch, if_expr.false_branch):
            s = self.bb.normalize(branch).struct_info
            s = s.fields[index] if isinstance(s, TupleStructInfo) else None
            if not isinstance(s, TensorStructInfo) or s.static_shape is None or \
                    s.ndim > rank:
                return None
            value = Var(name_hint=f"{v.name_hint}_rank{s.ndim}", struct_info=s)
            shape = [1] * (rank - s.ndim) + list(s.static_shape)
            branches.append(SeqExpr(
                blocks=(BindingBlock(bindings=(MatchCast(var=value, value=v,
                                                         struct_info=s),)),),
                body=ops.reshape(value, shape)))
        result = self.bb.emit(If(cond=if_expr.cond, true_branch=branches[0],
                                 false_branch=branches[1]), f"{v.name_hint}_rank{rank}")
        if result.struct_info.shape is None:  # the branches' shapes differ
            dims = tuple(self.fresh_dim(f"{v.name_hint}_rank{rank}_d{j}")
                         for j in range(rank))
            result = self.bb.match_cast(result, TensorStructInfo(
                shape=dims, dtype=result.struct_info.dtype), f"{v.name_hint}_rank{rank}")
        return result

    def _fold(self, node: Node) -> bool:
        """Evaluate ``node`` now when all its inputs are known (module docstring)."""
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
            outs = _reference_run(self.onnx, node.proto, arrays, self.opset)
        except Exception:  # noqa: BLE001 - the reference lacks or rejects it: the converter decides
            return False
        limit = max(_FOLD_LIMIT, 2 * sum(a.size for a in arrays if a is not None))
        if any(not isinstance(o, np.ndarray) or o.size > limit or not _irc_array(o)
               for o in outs):
            return False
        for name, arr in zip(node.output_names, outs):
            if name:
                self.values[name] = Constant.from_numpy(np.asarray(arr))
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


def all_nodes(graph: Any) -> list[Any]:
    """The nodes of ``graph`` and, depth first, of the subgraphs in their attributes."""
    out = []
    for node in graph.node:
        out.append(node)
        for a in node.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                out.extend(all_nodes(g))
    return out


def free_names(graph: Any) -> list[str]:
    """The value names ``graph`` (and its subgraphs) read without defining them, in order
    of first use: what a subgraph captures from the enclosing scopes."""
    defined = {vi.name for vi in graph.input} | {t.name for t in graph.initializer}
    seen: dict[str, None] = {}
    for node in graph.node:
        reads = list(node.input)
        for a in node.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                reads.extend(free_names(g))
        for nm in reads:
            if nm and nm not in defined:
                seen.setdefault(nm, None)
        defined.update(o for o in node.output if o)
    return list(seen)


_ELEM_TYPES = {v: k for k, v in DTYPES.items()}
# Operators whose inputs broadcast against each other elementwise (unit dimensions in
# front of an input do not change the values of the result).
_BROADCASTING = frozenset({
    "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Equal", "Less", "LessOrEqual", "Greater",
    "GreaterOrEqual", "And", "Or", "Xor", "Where", "Sum", "Max", "Min", "Mean", "BitShift",
    "BitwiseAnd", "BitwiseOr", "BitwiseXor"})
# How deep function bodies may expand into further function bodies.
_MAX_FUNCTION_DEPTH = 8


def function_kind(onnx: Any, op_type: str, opset: int) -> str | None:
    """``"static"`` when ONNX defines a function body for ``op_type`` at ``opset``,
    ``"context"`` when the body depends on the input types, else None."""
    try:
        schema = onnx.defs.get_schema(op_type, opset, "")
    except Exception:  # noqa: BLE001 - SchemaError: no such operator at this opset
        return None
    if schema.has_function:
        return "static"
    if schema.has_context_dependent_function:
        return "context"
    return None


def function_body(onnx: Any, op_type: str, opset: int, node: Any = None,
                  input_types: Sequence[Any] = ()) -> Any:
    """The ``FunctionProto`` ONNX defines for ``op_type`` in a model importing ``opset``:
    the newest body version not newer than ``opset`` (else the oldest); for a
    context-dependent body, built for ``node`` and its ``input_types``."""
    schema = onnx.defs.get_schema(op_type, opset, "")
    if node is None:
        versions = sorted(schema.function_opset_versions)
        older = [v for v in versions if v <= opset]
        data = schema.get_function_with_opset_version(older[-1] if older else versions[0])
    else:
        versions = sorted(schema.context_dependent_function_opset_versions)
        older = [v for v in versions if v <= opset]
        data = schema.get_context_dependent_function_with_opset_version(
            older[-1] if older else versions[0], node.SerializeToString(),
            [t.SerializeToString() for t in input_types])
    if isinstance(data, onnx.FunctionProto):
        return data
    body = onnx.FunctionProto()
    body.ParseFromString(data)
    return body


def _function_opset(body: Any, default: int) -> int:
    for imp in body.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return int(imp.version)
    return default


def _function_renaming(node: Node, body: Any) -> dict[str, str]:
    """Body value names -> graph value names: formal inputs and outputs to the node's
    (absent optional ones to ""), every other value under a prefix unique to the node."""
    rename: dict[str, str] = {}
    for i, formal in enumerate(body.input):
        rename[formal] = node.input_names[i] if i < len(node.input_names) else ""
    for i, formal in enumerate(body.output):
        rename[formal] = node.output_names[i] if i < len(node.output_names) else ""
    prefix = f"{node.output_names[0] if node.output_names else node.op_type}/{node.op_type}/"
    for sub in body.node:
        for name in sub.output:
            if name and name not in rename:
                rename[name] = prefix + name
    return rename


def _instantiate(onnx: Any, sub: Any, rename: dict[str, str], node: Node, body: Any,
                 schema: Any) -> Any:
    """A copy of body node ``sub`` renamed into the graph, with its attribute references
    (``ref_attr_name``) replaced by the calling node's attributes, else the function's or
    the operator's defaults (an attribute with none of them is left out, as ONNX does)."""
    out = onnx.NodeProto()
    out.CopyFrom(sub)
    del out.input[:]
    out.input.extend(rename.get(n, n) if n else "" for n in sub.input)
    del out.output[:]
    out.output.extend(rename.get(n, n) if n else "" for n in sub.output)
    out.name = f"{node.name}/{sub.name or sub.op_type}"
    caller = {a.name: a for a in node.proto.attribute}
    defaults = {a.name: a for a in body.attribute_proto}
    del out.attribute[:]
    for a in sub.attribute:
        if not a.ref_attr_name:
            out.attribute.append(_renamed_subgraphs(onnx, a, rename))
            continue
        ref = a.ref_attr_name
        src = caller.get(ref) or defaults.get(ref)
        if src is None and ref in schema.attributes:
            default = schema.attributes[ref].default_value
            src = default if default.type != 0 else None
        if src is None:
            continue
        new = onnx.AttributeProto()
        new.CopyFrom(src)
        new.name = a.name
        out.attribute.append(new)
    return out


def _renamed_subgraphs(onnx: Any, attr: Any, rename: dict[str, str]) -> Any:
    """``attr`` with the values its subgraphs read from the enclosing function body
    renamed as the body's nodes are (a copy; ``attr`` itself when it holds no graph)."""
    if not attr.HasField("g") and not len(attr.graphs):
        return attr
    out = onnx.AttributeProto()
    out.CopyFrom(attr)
    for g in ([out.g] if out.HasField("g") else []) + list(out.graphs):
        _rename_free(g, rename)
    return out


def _rename_free(graph: Any, rename: dict[str, str]) -> None:
    """Rename in place the names ``graph`` (and its subgraphs) reads from outside it."""
    local = {vi.name for vi in graph.input} | {t.name for t in graph.initializer} | {
        o for n in graph.node for o in n.output}
    outer = {k: v for k, v in rename.items() if k not in local}
    for n in graph.node:
        for i, name in enumerate(n.input):
            if name in outer:
                n.input[i] = outer[name]
        for a in n.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                _rename_free(g, outer)
    for vi in graph.output:  # an output may pass an outer value through
        if vi.name in outer and vi.name not in local:
            vi.name = outer[vi.name]


def _reference_run(onnx: Any, node: Any, arrays: list[np.ndarray | None],
                   opset: int) -> list[np.ndarray]:
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


@with_fewer_gc_pauses
def from_onnx(model: Any, shape_dict: dict | None = None, dtype_dict: dict | None = None,
              opset: int | None = None, keep_params_in_input: bool = False) -> Any:
    """Import an ONNX model (``onnx.ModelProto``, a path, with external data files next to
    it, or the serialized bytes) as an IRModule whose ``main`` computes the graph.

    ``shape_dict`` fixes input shapes (``{"input": [1, 3, 224, 224]}``) or named
    dimensions (``{"batch": 1}``), and gives a sequence input (a tuple, passed as a list
    of arrays) its length (``{"seq": 3}``) or its elements' shapes (``{"seq": [[4], [2]]}``);
    ``dtype_dict`` overrides input dtypes; ``opset``
    overrides the model's default-domain opset. With ``keep_params_in_input`` the
    initializers become parameters after the inputs and the result is ``(mod, params)``
    with ``params`` the initializers' values by parameter name, in order (what
    ``irc.compile(mod, params=params)`` binds)."""
    onnx = onnx_module()
    proto = _load(model, onnx)
    _check_model(proto, model)
    _check_settings(proto, shape_dict, dtype_dict, opset)
    imp = GraphImporter(proto, shape_dict, dtype_dict, opset, keep_params_in_input)
    mod = imp.run()
    if keep_params_in_input:
        return mod, imp.params
    return mod

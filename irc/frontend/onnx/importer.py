"""``from_onnx``: an ONNX model to a graph-level IRModule with a ``main`` function.

The graph's inputs (those that are not initializers) become ``main``'s parameters, in
order; a ``dim_param`` dimension becomes an int64 shape variable of that name, the same
variable wherever the name appears, and a dimension with neither value nor name a fresh
variable (:mod:`~irc.frontend.onnx.inputs`). Initializers become constants, or
parameters after the inputs with ``keep_params_in_input`` (returned with their values).
Nodes are converted in graph order by the converter table
(:mod:`irc.frontend.onnx.registry`), each output bound to a variable named after the
ONNX value (made a valid identifier), so printed IR reads like the model. What a graph
reads by name is its :class:`~irc.frontend.onnx.scope.Scope`; a subgraph converted into
a function of its own is converted in a scope of its own
(:meth:`GraphImporter.in_scope`). An operator without a converter whose ONNX schema
defines a function body is converted through that body
(:mod:`~irc.frontend.onnx.functions`).

Import-time simplification: a node whose inputs are all known at import time is
evaluated then and there when it is shape arithmetic, data movement or elementwise
arithmetic (:mod:`~irc.frontend.onnx.folding`). Where a shape is symbolic, ``Shape``
gives a *symbolic shape value* (:class:`~irc.frontend.onnx.scope.SymShape`, its
dimensions as expressions) that ``Gather``, ``Slice``, ``Concat``, ``Unsqueeze``,
``Squeeze``, ``Cast`` and integer arithmetic carry along and ``Reshape``, ``Expand``,
``ConstantOfShape``, ``Range`` and ``Tile`` read; another operator reading one as data
reads a run-time int64 tensor computed from the shape variables
(:meth:`GraphImporter.shape_tensor`). ``Identity``, ``Dropout`` (inference) and
``Constant`` produce no computation.

Errors: every operator type without a converter for the model's opset is collected first
and reported together in one :class:`~irc.UnsupportedOperatorError`; anything else wrong
with a node (missing input, bad attribute, shapes that contradict) is an
:class:`IRCError` naming the node and its operator.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np

from ...core import dtype as dt
from ...core.diagnostics import IRCError, UnsupportedOperatorError
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
from ...ir.struct_info import ShapeStructInfo, TensorStructInfo, TupleStructInfo
from ...tir import expr as E
from .dataflow import if_out_of_dataflow
from .folding import fold
from .functions import convertible, expand
from .inputs import (
    check_model,
    check_settings,
    initializer_array,
    initializer_constant,
    input_sinfo,
    load_model,
)
from .protos import all_nodes, free_names, imported_opset, onnx_dtype, onnx_module, valid_name
from .registry import MIN_OPSET, lookup, refusal
from .scope import Scope, SymShape

# Operators whose inputs broadcast against each other elementwise (unit dimensions in
# front of an input do not change the values of the result).
_BROADCASTING = frozenset({
    "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Equal", "Less", "LessOrEqual", "Greater",
    "GreaterOrEqual", "And", "Or", "Xor", "Where", "Sum", "Max", "Min", "Mean", "BitShift",
    "BitwiseAnd", "BitwiseOr", "BitwiseXor"})


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
        s = self.graph.scope.syms.get(self.input_names[i])
        if s is not None:
            return s
        c = self.const(i)
        if c is not None and c.ndim <= 1 and np.issubdtype(c.dtype, np.integer):
            return SymShape(c.reshape(-1).tolist(), scalar=c.ndim == 0)
        return None

    def shape_value(self, i: int) -> SymShape | None:
        """Input ``i`` when it exists only as a symbolic shape value (not as a tensor)."""
        if not self.has_input(i):
            return None
        return self.graph.scope.shape_value(self.input_names[i])

    def input(self, i: int) -> Expr:
        """Input ``i`` as an irc expression (it must be given)."""
        if not self.has_input(i):
            raise self.error(f"input {i} is required")
        if i in self.replaced:
            return self.replaced[i]
        name = self.input_names[i]
        e = self.graph.scope.lookup(name)
        if e is None:
            raise self.error(f"input {name!r} is not defined")
        if not isinstance(e, SymShape):
            return e
        arr = e.array()
        return Constant.from_numpy(arr) if arr is not None else self.graph.shape_tensor(e, name)

    def optional(self, i: int) -> Expr | None:
        return self.input(i) if self.has_input(i) else None

    def const(self, i: int) -> np.ndarray | None:
        """Input ``i``'s value when it is known at import time, else None (bfloat16 as
        ml_dtypes' ``bfloat16``, not its bits)."""
        if not self.has_input(i):
            return None
        scope = self.graph.scope
        e = scope.values.get(self.input_names[i])
        if isinstance(e, Constant):
            data = np.asarray(e.data)
            if e.struct_info.dtype == "bfloat16":
                return data.view(dt.user_numpy("bfloat16"))
            return data
        s = scope.syms.get(self.input_names[i])
        return s.array() if s is not None else None

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


class GraphImporter:
    """Converts one ONNX graph (see the module docstring). What the nodes being
    converted read by name is the current :class:`~irc.frontend.onnx.scope.Scope`,
    ``scope``."""

    def __init__(self, proto: Any, shape_dict: dict | None, dtype_dict: dict | None,
                 opset: int | None, keep_params_in_input: bool):
        self.onnx = onnx_module()
        self.proto = proto
        default_opset = imported_opset(proto, "", "ai.onnx")
        self.opset = int(opset) if opset is not None else (
            1 if default_opset is None else default_opset)
        self.shape_dict = dict(shape_dict or {})
        self.dtype_dict = dict(dtype_dict or {})
        self.keep_params = keep_params_in_input
        self.scope = Scope(outputs=frozenset(vi.name for vi in proto.graph.output))
        self.dim_vars: dict[str, E.Var] = {}
        self.bb = BlockBuilder()
        self.params: dict[str, np.ndarray] = {}
        # The graph-level Ifs converters bound (Node.emit), and the variables bound to their
        # outputs with the output's index: what settle_branch_ranks reads.
        self.ifs: dict[Var, If] = {}
        self.if_outputs: dict[Var, tuple[If, int]] = {}
        self.padded: dict[tuple[Var, int], Expr] = {}

    @contextmanager
    def in_scope(self, scope: Scope) -> Iterator[Scope]:
        """Convert in ``scope`` for the duration of the ``with``; the enclosing scope is
        the current one again after it, also when the conversion fails."""
        outer, self.scope = self.scope, scope
        try:
            yield scope
        finally:
            self.scope = outer

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
        self.scope.values[name] = var  # next to the shape value, which the name keeps
        return var

    def fresh_dim(self, name: str) -> E.Var:
        """A new int64 shape variable named after ``name`` (made unique)."""
        base, k = name, 1
        while name in self.dim_vars:
            name = f"{base}_{k}"
            k += 1
        self.dim_vars[name] = E.Var(name=name, dtype="int64")
        return self.dim_vars[name]

    def named_dim(self, name: str) -> E.Var:
        """The int64 shape variable of the dimension called ``name`` (made a valid
        identifier): the same variable wherever the name appears."""
        vname = valid_name(name, "d")
        if vname not in self.dim_vars:
            self.dim_vars[vname] = E.Var(name=vname, dtype="int64")
        return self.dim_vars[vname]

    # -- conversion ------------------------------------------------------------------------
    def check_supported(self, graph: Any) -> None:
        """Raise one error listing every operator type that has neither a converter nor a
        function body irc can convert (:func:`~irc.frontend.onnx.functions.convertible`),
        with the reason where irc leaves it out deliberately
        (:func:`~irc.frontend.onnx.registry.refusal`)."""
        missing: dict[tuple[str, str], list[str]] = {}
        for node in all_nodes(graph):
            if not convertible(self, node.domain, node.op_type, self.opset):
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

    def domain_opset(self, domain: str) -> int | None:
        """The model's opset version of ``domain`` (None when it does not import it)."""
        return imported_opset(self.proto, domain)

    def run(self) -> IRModule:
        """The IRModule whose ``main`` computes the model's graph."""
        graph = self.proto.graph
        self.check_supported(graph)
        init_names = {t.name for t in graph.initializer}
        params: list[Var] = []
        for vi in graph.input:
            if vi.name in init_names:
                continue
            v = Var(name_hint=valid_name(vi.name, "x"), struct_info=input_sinfo(self, vi))
            params.append(v)
            self.scope.bind(vi.name, v)
        num_input = len(params)
        for t in graph.initializer:
            if not self.keep_params:
                self.scope.bind(t.name, initializer_constant(self.onnx, t))
                continue
            arr = initializer_array(self.onnx, t)
            v = Var(name_hint=valid_name(t.name, "p"),
                    struct_info=TensorStructInfo(
                        shape=tuple(E.IntImm(dtype="int64", value=int(n)) for n in arr.shape),
                        dtype=onnx_dtype(t.data_type, t.name)))
            params.append(v)
            self.params[v.name_hint] = arr
            self.scope.bind(t.name, v)
        attrs = {"num_input": num_input} if self.keep_params else None
        with self.bb.function("main", params, attrs=attrs):
            with self.bb.dataflow():
                for node in graph.node:
                    self.convert(node)
                outs = self._outputs(graph, "graph output", declared=False)
            result = outs[0] if len(outs) == 1 else Tuple(fields=tuple(outs))
            self.bb.emit_func_output(result)
        return if_out_of_dataflow(self.bb.get())

    def _outputs(self, graph: Any, what: str, declared: bool) -> list[Expr]:
        """The outputs of ``graph`` (converted) bound as outputs of the dataflow block,
        ``what`` naming them in errors; with ``declared``, an output whose declared shape
        is static where its converted value's is not gets that shape (checked)."""
        outs = []
        for vi in graph.output:
            e = self._produced(vi.name, what)
            if isinstance(e, SymShape):
                arr = e.array()
                if arr is None:
                    raise IRCError(f"from_onnx: graph output {vi.name!r} is a run-time "
                                   "shape with symbolic dimensions; irc cannot return it "
                                   "as a tensor yet")
                e = Constant.from_numpy(arr)
            static = self._declared_static(vi, e) if declared else None
            name = valid_name(vi.name, "out")
            if static is not None:
                # the subgraph declares a static shape its converted value has only
                # symbolically (run-time slices): checked and kept
                e = self.bb.emit_output(self.bb.match_cast(e, static, name), name)
            elif vi.name not in self.scope.emitted or isinstance(e, Constant):
                e = self.bb.emit_output(e, name)
            outs.append(e)
        return outs

    def _produced(self, name: str, what: str) -> Expr | SymShape:
        """What output ``name`` is bound to (an error naming it as ``what`` when no node
        produced it)."""
        value = self.scope.lookup(name)
        if value is None:
            raise IRCError(f"from_onnx: {what} {name!r} is produced by no node")
        return value

    # -- subgraphs (If, Loop) -------------------------------------------------------------
    def subgraph_function(self, graph: Any, name: str,
                          inputs: Sequence[TensorStructInfo]) -> tuple[Any, list[Expr]]:
        """Convert the ONNX subgraph ``graph`` into a module function, in a scope of its
        own: its parameters are the subgraph's formal inputs (``inputs`` their struct
        info), then the values of the enclosing scope it reads (constants and shape
        values are used directly). Returns the function's GlobalVar and the enclosing
        expressions to pass after the formal inputs; the function returns a tuple of the
        subgraph's outputs."""
        formal = [vi.name for vi in graph.input]
        if len(formal) != len(inputs):
            raise IRCError(f"from_onnx: subgraph {graph.name!r} has {len(formal)} inputs, "
                           f"expected {len(inputs)}")
        scope = Scope(outputs=frozenset(vi.name for vi in graph.output))
        params: list[Var] = []
        captured: list[Expr] = []
        for nm, sinfo in zip(formal, inputs):
            v = Var(name_hint=valid_name(nm, "x"), struct_info=sinfo)
            params.append(v)
            scope.bind(nm, v)
        inner = {t.name for t in graph.initializer} | set(formal)
        for nm in free_names(graph):
            if nm in inner:
                continue
            s = self.scope.shape_value(nm)
            if s is not None:
                scope.bind(nm, s)
                continue
            e = self.scope.values.get(nm)
            if e is None:
                raise IRCError(f"from_onnx: subgraph {graph.name!r} reads {nm!r}, which no "
                               "enclosing graph defines")
            if not isinstance(e, Constant):
                v = Var(name_hint=valid_name(nm, "x"), struct_info=e.struct_info)
                params.append(v)
                captured.append(e)
                e = v
            scope.bind(nm, e)
        for t in graph.initializer:
            scope.bind(t.name, initializer_constant(self.onnx, t))
        fname = self.bb.get().unique_name(valid_name(name, "subgraph"))
        with self.in_scope(scope), self.bb.function(fname, params, private=True):
            with self.bb.dataflow():
                for node in graph.node:
                    self.convert(node)
                outs = self._outputs(graph, "subgraph output", declared=True)
            gvar = self.bb.emit_func_output(Tuple(fields=tuple(outs)))
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

    def inline_subgraph(self, graph: Any, outputs: Sequence[str]) -> list[Expr | SymShape]:
        """Convert the nodes of ``graph`` (a subgraph whose inputs, if any, the caller
        bound) in the current scope and return what its outputs are bound to (an ``If``
        whose condition is known at import time, a step of an inlined body)."""
        for t in graph.initializer:
            self.scope.bind(t.name, initializer_constant(self.onnx, t))
        for node in graph.node:
            self.convert(node)
        return [self._produced(vi.name, "subgraph output") for vi in graph.output]

    def convert(self, proto: Any, opset: int | None = None, depth: int = 0) -> None:
        """Convert one node (of the graph, or of a function body being expanded, whose
        operators may import another ``opset``)."""
        opset = self.opset if opset is None else opset
        for name in proto.input:
            if name and not self.scope.defines(name):
                raise IRCError(f"ONNX node {proto.name or proto.op_type!r} ({proto.op_type}) "
                               f"reads {name!r}, which is neither a graph input, an "
                               "initializer nor the output of an earlier node")
        node = Node(self, proto, opset)
        if fold(node):
            return
        if proto.domain in ("", "ai.onnx"):
            conv = lookup(proto.op_type, opset)
        else:
            version = self.domain_opset(proto.domain)
            conv = lookup(proto.op_type, version, proto.domain) if version is not None \
                else None
        if conv is None:
            expand(node, depth)
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
                self.scope.bind(name, value)
                continue
            outputs, emitted = self.scope.outputs, self.scope.emitted
            if not isinstance(value, (Var, Constant)) or (
                    name in outputs and name not in emitted):
                emit = self.bb.emit
                if name in outputs:  # a graph output: visible after the block
                    emit = self.bb.emit_output
                    emitted.add(name)
                source = value
                try:
                    value = emit(value, valid_name(name))
                except IRCError as err:
                    raise node.error(err.message, hint=err.hint) from None
                if isinstance(source, TupleGetItem) and source.tuple_value in self.ifs:
                    self.if_outputs[value] = (self.ifs[source.tuple_value], source.index)
            self.scope.bind(name, value)
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
    proto = load_model(model, onnx)
    check_model(proto, model)
    check_settings(proto, shape_dict, dtype_dict, opset)
    imp = GraphImporter(proto, shape_dict, dtype_dict, opset, keep_params_in_input)
    mod = imp.run()
    if keep_params_in_input:
        return mod, imp.params
    return mod

"""A graph that grows one operator at a time, with the concrete value of everything in it.

Every value the graph holds (graph input, initializer, node output) keeps the array it
takes for the inputs drawn with the model: each node is evaluated by ONNX's reference
implementation (``onnx.reference``) as it is added. Builders use those arrays to choose
operands that suit an operator (a positive value for ``Log``, no near ties for
``ArgMax``), and the generator refuses a node whose results are not finite or exceed
the magnitude the comparison can judge. After each operator the partial model is checked
with ``onnx.checker`` and strict shape inference, whose types and static shapes must be
those of the arrays.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .references import reference_ops
from .spec import Reject
from .values import (
    MAGNITUDE,
    Domain,
    draw_array,
    draw_shape,
    dtype_name,
    is_float,
    np_dtype,
)

# The most elements one value may have (a large-reduction input may have more).
MAX_ELEMENTS = 20000


@dataclass
class Value:
    """A value of the graph: its name, its concrete array, whether it is drawn data
    (perturbed by the runner to measure how rounding moves the results) and whether
    ONNX's shape inference knows its whole shape."""

    name: str
    array: np.ndarray
    data: bool = True
    static: bool = True

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    @property
    def dtype(self) -> str:
        return dtype_name(self.array)

    @property
    def rank(self) -> int:
        return self.array.ndim

    @property
    def size(self) -> int:
        return int(self.array.size)


ABSENT = Value("", np.zeros(0, np.float32), data=False)


@dataclass
class Case:
    """A generated model with its inputs: ``perturb`` names the data tensors (inputs,
    initializers, Constant outputs) the runner may perturb; ``ops`` the operators drawn,
    in order; ``dtypes`` every dtype a value of the graph has."""

    model: Any
    inputs: dict[str, np.ndarray]
    seed: int = 0
    perturb: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()

    def op_types(self) -> tuple[str, ...]:
        """Every operator type of the model's nodes (helpers included), sorted."""
        return tuple(sorted({n.op_type for n in self.model.graph.node}))


@dataclass
class GraphBuilder:
    """The graph being generated (see the module docstring)."""

    rng: np.random.Generator
    opset: int
    float_dtype: str
    dtypes: tuple[str, ...]
    values: list[Value] = field(default_factory=list)
    nodes: list[Any] = field(default_factory=list)
    inputs: list[Value] = field(default_factory=list)
    initializers: list[Value] = field(default_factory=list)
    consumed: set[str] = field(default_factory=set)
    constant_data: list[str] = field(default_factory=list)
    ops_used: list[str] = field(default_factory=list)
    _count: int = 0

    # -- bookkeeping -----------------------------------------------------------------
    def new_name(self, prefix: str) -> str:
        self._count += 1
        return f"{prefix}{self._count}"

    def snapshot(self) -> tuple:
        """What :meth:`restore` needs to undo everything added after this call."""
        return (len(self.values), len(self.nodes), len(self.inputs),
                len(self.initializers), set(self.consumed), len(self.constant_data))

    def restore(self, snap: tuple) -> None:
        nv, nn, ni, nz, consumed, nc = snap
        del self.values[nv:], self.nodes[nn:], self.inputs[ni:], self.initializers[nz:]
        del self.constant_data[nc:]
        self.consumed = consumed

    def coin(self, p: float = 0.5) -> bool:
        return bool(self.rng.random() < p)

    def choice(self, options: Sequence[Any]) -> Any:
        return options[int(self.rng.integers(len(options)))]

    # -- values ----------------------------------------------------------------------
    def shape(self, min_rank: int = 0, max_rank: int = 4, max_elements: int = 4096
              ) -> tuple[int, ...]:
        return draw_shape(self.rng, min_rank, max_rank, max_elements)

    def place(self, arr: np.ndarray, data: bool = True, where: str = "") -> Value:
        """``arr`` in the graph as a graph input, an initializer or a Constant node
        (``where``, drawn when empty; parameters are never graph inputs)."""
        arr = np.asarray(arr)
        if not where:
            r = self.rng.random()
            where = "input" if (data and r < 0.55) else "initializer" if r < 0.85 \
                else "constant"
        if where == "input":
            v = Value(self.new_name("in"), arr, data=True)
            self.inputs.append(v)
        elif where == "initializer":
            v = Value(self.new_name("w"), arr, data=data)
            self.initializers.append(v)
        else:
            from onnx import helper, numpy_helper

            v = Value(self.new_name("k"), arr, data=data)
            self.nodes.append(helper.make_node(
                "Constant", [], [v.name], value=numpy_helper.from_array(arr, v.name)))
            if data:
                self.constant_data.append(v.name)
        self.values.append(v)
        return v

    def fresh(self, shape: tuple[int, ...], dtype: str | None = None,
              domain: Domain | None = None, low: int | None = None,
              high: int | None = None, data: bool = True, where: str = "") -> Value:
        """A new input or constant of ``shape`` with values drawn from ``domain`` (or
        integers in ``[low, high)``)."""
        arr = draw_array(self.rng, tuple(shape), dtype or self.float_dtype, domain, low,
                         high)
        return self.place(arr, data, where)

    def const(self, values: Any, dtype: str = "int64", where: str = "") -> Value:
        """A parameter constant (an initializer or a Constant node)."""
        arr = np.asarray(values).astype(np_dtype(dtype))
        return self.place(arr, data=False, where=where or
                          ("initializer" if self.coin(0.6) else "constant"))

    def candidates(self, accept: Callable[[Value], bool]) -> list[Value]:
        return [v for v in self.values if v.name and accept(v)]

    def pick(self, accept: Callable[[Value], bool],
             fresh: Callable[[], Value] | None = None, p_fresh: float = 0.2) -> Value:
        """A value of the graph that ``accept`` takes, recent and unused ones likelier;
        a fresh one from ``fresh`` now and then, or when none fits (Reject without
        ``fresh``)."""
        found = self.candidates(accept)
        if found and (fresh is None or not self.coin(p_fresh)):
            w = np.array([(i + 1.0) ** 2 * (1.0 if v.name in self.consumed else 3.0)
                          for i, v in enumerate(found)])
            return found[int(self.rng.choice(len(found), p=w / w.sum()))]
        if fresh is None:
            raise Reject("no operand fits")
        return fresh()

    def pick_float(self, min_rank: int = 0, max_rank: int = 6,
                   domain: Domain | None = None, static: bool = True,
                   accept: Callable[[Value], bool] | None = None,
                   dtype: str | None = None, max_elements: int = 4096) -> Value:
        """A float value of the model's dtype (or ``dtype``) of rank ``min_rank`` to
        ``max_rank`` whose values lie in ``domain``; fresh when none does."""
        dt = dtype or self.float_dtype

        def ok(v: Value) -> bool:
            return (v.dtype == dt and min_rank <= v.rank <= max_rank
                    and (v.static or not static) and 0 < v.size <= MAX_ELEMENTS
                    and (domain is None or domain.contains(v.array))
                    and (accept is None or accept(v)))

        def make() -> Value:
            for _ in range(20):
                shape = self.shape(min_rank, min(max_rank, 5), max_elements)
                arr = draw_array(self.rng, shape, dt, domain)
                if accept is None or accept(Value("", arr)):
                    return self.place(arr)
            raise Reject("no shape fits")

        return self.pick(ok, make)

    def pick_of(self, dtypes: Sequence[str], min_rank: int = 0, max_rank: int = 6,
                accept: Callable[[Value], bool] | None = None) -> Value:
        """A value of one of ``dtypes`` (fresh data of an allowed one when none fits)."""
        allowed = [d for d in dtypes if d in self.dtypes or d == "bool"]
        if not allowed:
            raise Reject("no allowed dtype")

        def ok(v: Value) -> bool:
            return (v.dtype in allowed and min_rank <= v.rank <= max_rank and v.static
                    and 0 < v.size <= MAX_ELEMENTS and (accept is None or accept(v)))

        def make() -> Value:
            dt = self.choice(allowed)
            for _ in range(20):
                arr = draw_array(self.rng, self.shape(min_rank, min(max_rank, 5)), dt)
                if accept is None or accept(Value("", arr)):
                    return self.place(arr)
            raise Reject("no shape fits")

        return self.pick(ok, make)

    # -- nodes -----------------------------------------------------------------------
    def node(self, op_type: str, inputs: Sequence[Value], n_out: int = 1,
             special: bool = False, scope: Sequence[Value] = (), **attrs: Any
             ) -> list[Value]:
        """Add a node reading ``inputs`` (``ABSENT`` for a missing optional input) and
        the values of ``scope`` from its subgraphs, and return its outputs, evaluated by
        the reference implementation (``references.reference_ops`` included). Results
        that are not finite (unless ``special``), beyond the dtype's magnitude or too
        large reject the operator."""
        from onnx import helper
        from onnx.reference import ReferenceEvaluator

        outs = [self.new_name("v") for _ in range(n_out)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        node = helper.make_node(op_type, [v.name for v in inputs], outs, **attrs)
        reads = {v.name: v for v in list(inputs) + list(scope) if v.name}
        feeds = {name: v.array for name, v in reads.items()}
        # A one-node model at the model's opset: the evaluator then implements the
        # operator's version of that opset (given a bare node, it takes the newest).
        proto = helper.make_model(helper.make_graph(
            [node], "node", [_value_info(v) for v in reads.values()],
            [helper.make_value_info(o, helper.TypeProto()) for o in outs]),
            opset_imports=[helper.make_opsetid("", self.opset)])
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                arrays = ReferenceEvaluator(proto, new_ops=reference_ops()).run(None, feeds)
        except Exception as err:  # noqa: BLE001 - any failure of the reference: not valid
            raise Reject(f"the reference cannot evaluate {op_type}: {err}") from None
        results = []
        for name, arr in zip(outs, arrays):
            arr = np.asarray(arr)
            if arr.size > MAX_ELEMENTS * 2:
                raise Reject("result too large")
            if is_float(dtype_name(arr)) and arr.size:
                x = np.asarray(arr, np.float64)
                if not special and not np.isfinite(x).all():
                    raise Reject("non-finite result")
                if np.abs(x[np.isfinite(x)]).max(initial=0.0) > \
                        MAGNITUDE.get(dtype_name(arr), 1e4):
                    raise Reject("result beyond the magnitude compared")
            results.append(Value(name, arr, data=False,
                                 static=all(v.static for v in list(inputs) + list(scope)
                                            if v.name)))
        self.nodes.append(node)
        self.consumed.update(v.name for v in list(inputs) + list(scope) if v.name)
        self.values.extend(results)
        return results

    def shape_input(self, dims: Sequence[int], like: Value | None = None) -> Value:
        """A 1-D int64 value holding ``dims``: a constant, or (like an exporter) dims of
        ``like`` read by ``Shape`` and ``Gather``/``Slice``, constants for the others,
        joined by ``Concat``."""
        dims = [int(d) for d in dims]
        if like is None or not like.static or like.rank == 0 or not dims \
                or self.opset < 13 or self.coin(0.5):
            return self.const(np.array(dims, np.int64))
        (shape,) = self.node("Shape", [like])
        parts = []
        for d in dims:
            where = [j for j, s in enumerate(like.shape) if s == d]
            if where and self.coin(0.8):
                j = self.choice(where)
                if self.coin(0.5):
                    idx = self.const(np.array(j, np.int64))
                    (g,) = self.node("Gather", [shape, idx], axis=0)
                    axes = self.const(np.array([0], np.int64))
                    (part,) = self.node("Unsqueeze", [g, axes])
                else:
                    part = self.node("Slice", [shape, self.const(np.array([j])),
                                               self.const(np.array([j + 1]))])[0]
            else:
                part = self.const(np.array([d], np.int64))
            parts.append(part)
        if len(parts) == 1:
            return parts[0]
        return self.node("Concat", parts, axis=0)[0]

    # -- the model -------------------------------------------------------------------
    def outputs(self) -> list[Value]:
        """The graph's outputs: node results nothing reads (the last result when every
        one is read)."""
        made = {n for node in self.nodes if node.op_type != "Constant" for n in node.output}
        outs = [v for v in self.values if v.name in made and v.name not in self.consumed]
        if not outs:
            last = [v for v in self.values if v.name in made]
            outs = last[-1:]
        return outs

    def model(self, outputs: Sequence[Value] | None = None) -> Any:
        """The ONNX model of the graph so far."""
        from onnx import helper, numpy_helper

        outs = list(outputs) if outputs is not None else self.outputs()
        graph = helper.make_graph(
            list(self.nodes), "fuzz",
            [_value_info(v) for v in self.inputs],
            [_value_info(v) for v in outs],
            [numpy_helper.from_array(v.array, v.name) for v in self.initializers])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                 producer_name="irc.testing.fuzz")

    def check(self) -> None:
        """Check the model so far (checker, strict shape inference with data
        propagation); a node output whose inferred type or static shape differs from its
        array rejects the operator, and a value whose shape inference cannot tell is
        marked not static."""
        import onnx

        made = [v for v in self.values if any(v.name in n.output for n in self.nodes)]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = self.model(outputs=made)
                inferred = onnx.shape_inference.infer_shapes(
                    model, check_type=True, strict_mode=True, data_prop=True)
                onnx.checker.check_model(inferred)
        except Exception as err:  # noqa: BLE001 - onnx reports an invalid model in many types
            raise Reject(f"invalid model: {err}") from None
        known = {vi.name: vi for vi in list(inferred.graph.value_info)
                 + list(inferred.graph.output)}
        for v in made:
            vi = known.get(v.name)
            if vi is None or not vi.type.HasField("tensor_type"):
                v.static = False
                continue
            tt = vi.type.tensor_type
            want = helper_dtype(v.dtype)
            if tt.elem_type != want:
                raise Reject(f"{v.name}: inferred type {tt.elem_type} != {want}")
            if not tt.HasField("shape"):
                v.static = False
                continue
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
            if len(dims) != v.rank or any(d is not None and d != s
                                          for d, s in zip(dims, v.shape)):
                raise Reject(f"{v.name}: inferred shape {dims} != {v.shape}")
            v.static = v.static and None not in dims

    def case(self, seed: int) -> Case:
        outs = self.outputs()
        model = self.model(outs)
        perturb = tuple(v.name for v in self.inputs + self.initializers
                        if v.data and is_float(v.dtype)) + tuple(
            n for n in self.constant_data
            if is_float(next(v.dtype for v in self.values if v.name == n)))
        dtypes = sorted({v.dtype for v in self.values if v.name})
        return Case(model, {v.name: v.array for v in self.inputs}, seed, perturb,
                    tuple(self.ops_used), tuple(dtypes))


def helper_dtype(name: str) -> int:
    """The ONNX element type of a dtype name."""
    from onnx import helper

    return helper.np_dtype_to_tensor_dtype(np_dtype(name))


def _value_info(v: Value) -> Any:
    from onnx import helper

    return helper.make_tensor_value_info(v.name, helper_dtype(v.dtype),
                                         list(v.shape) if v.static else None)


__all__ = ["ABSENT", "Case", "GraphBuilder", "MAX_ELEMENTS", "Value", "helper_dtype"]

"""Builders of the control-flow operators (see ``spec``): ``If`` on a data-dependent
condition, ``Loop`` with a trip count, a condition or both (loop-carried values and scan
outputs), and ``Scan`` over any axis in either direction. Their bodies are small graphs of
bounded operators (``Tanh``, ``Sigmoid``) that read values of the outer graph, as
exporters write them."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import spec
from .builder import ABSENT, GraphBuilder, Value, helper_dtype
from .spec import Reject
from .values import broadcast_partner, broadcast_shape, np_dtype


def _info(name: str, dtype: str, shape: Any) -> Any:
    from onnx import helper

    return helper.make_tensor_value_info(name, helper_dtype(dtype),
                                         None if shape is None else list(shape))


def _constant(g: GraphBuilder, value: Any, dtype: str) -> tuple[str, Any]:
    """A Constant node for a body graph: (its output name, the node)."""
    from onnx import helper, numpy_helper

    name = g.new_name("b")
    arr = np.asarray(value).astype(np_dtype(dtype))
    return name, helper.make_node("Constant", [], [name],
                                  value=numpy_helper.from_array(arr, name))


def _outer(g: GraphBuilder, x: Value) -> Value:
    """A value of the outer graph of ``x``'s dtype that broadcasts to ``x``'s shape."""

    def ok(v: Value) -> bool:
        return (v.dtype == x.dtype and v.static and v.name != x.name and v.size > 0
                and broadcast_shape(v.shape, x.shape) == x.shape
                and bool(np.isfinite(np.asarray(v.array, np.float64)).all())
                and float(np.abs(np.asarray(v.array, np.float64)).max(initial=0)) < 100)

    return g.pick(ok, lambda: g.fresh(broadcast_partner(g.rng, x.shape), x.dtype),
                  p_fresh=0.5)


@spec.register("If", "control", since=13)
def _if(g: GraphBuilder) -> None:
    from onnx import helper

    x = g.pick_float(min_rank=1)
    (s,) = g.node("ReduceSum", [x], keepdims=0)
    if abs(float(s.array)) < 0.1:
        raise Reject("a condition at its edge")
    (cond,) = g.node("Greater", [s, g.const(np.array(0), x.dtype)])
    out_then, out_else = g.new_name("t"), g.new_name("e")
    then_g = helper.make_graph([helper.make_node(g.choice(("Relu", "Neg", "Abs")), [x.name],
                                                 [out_then])], "then", [],
                               [_info(out_then, x.dtype, x.shape)])
    else_g = helper.make_graph([helper.make_node(g.choice(("Sigmoid", "Tanh", "Identity")),
                                                 [x.name], [out_else])], "else", [],
                               [_info(out_else, x.dtype, x.shape)])
    g.node("If", [cond], scope=[x], then_branch=then_g, else_branch=else_g)


@spec.register("Loop", "control", since=13)
def _loop(g: GraphBuilder) -> None:
    """``v <- tanh(v * a + outer)`` for a few iterations, with the per-iteration values
    (and the iteration number) as scan outputs now and then."""
    from onnx import helper

    x = g.pick_float(max_rank=3, accept=lambda v: v.size <= 256)
    outer = _outer(g, x)
    trips = int(g.rng.integers(1, 6))
    form = g.choice(("count", "count", "condition", "both"))
    stop = int(g.rng.integers(1, 6)) if form != "count" else None
    i, c, v = g.new_name("i"), g.new_name("c"), g.new_name("v")
    scale, scale_node = _constant(g, float(g.choice((0.5, -0.75, 1.25))), x.dtype)
    mul, add, v_out, c_out = (g.new_name("b") for _ in range(4))
    nodes = [scale_node, helper.make_node("Mul", [v, scale], [mul]),
             helper.make_node("Add", [mul, outer.name], [add]),
             helper.make_node("Tanh", [add], [v_out])]
    if stop is None:
        nodes.append(helper.make_node("Identity", [c], [c_out]))
    else:
        limit, limit_node = _constant(g, stop - 1, "int64")
        nodes += [limit_node, helper.make_node("Less", [i, limit], [c_out])]
    outputs = [_info(c_out, "bool", ()), _info(v_out, x.dtype, x.shape)]
    n_scan = int(g.rng.integers(0, 3))
    for k in range(n_scan):
        y = g.new_name("b")
        if k == 0:
            nodes.append(helper.make_node("Sigmoid", [v_out], [y]))
            outputs.append(_info(y, x.dtype, x.shape))
        else:
            nodes.append(helper.make_node("Identity", [i], [y]))
            outputs.append(_info(y, "int64", ()))
    body = helper.make_graph(nodes, g.new_name("loop_body"),
                             [_info(i, "int64", ()), _info(c, "bool", ()),
                              _info(v, x.dtype, x.shape)], outputs)
    count = g.const(np.array(trips, np.int64)) if form != "condition" else ABSENT
    cond = g.const(np.array(True), "bool") if form != "count" or g.coin() else ABSENT
    g.node("Loop", [count, cond, x], n_out=1 + n_scan, scope=[outer], body=body)


@spec.register("Scan", "control", since=11)
def _scan(g: GraphBuilder) -> None:
    """A recurrence ``s <- tanh(s * a + x_t)`` over one axis of ``x``, its states (or
    their sigmoid) as the scan output."""
    from onnx import helper

    x = g.pick_float(min_rank=1, max_rank=3,
                     accept=lambda v: min(v.shape) <= 6 and v.size <= 512)
    axes = [a for a in range(x.rank) if x.shape[a] <= 6]
    axis = int(g.choice(axes))
    step = tuple(s for a, s in enumerate(x.shape) if a != axis)
    state = g.fresh(step, x.dtype)
    s, xt = g.new_name("s"), g.new_name("x")
    scale, scale_node = _constant(g, float(g.choice((0.5, -0.75))), x.dtype)
    mul, add, s_out, y = (g.new_name("b") for _ in range(4))
    nodes = [scale_node, helper.make_node("Mul", [s, scale], [mul]),
             helper.make_node("Add", [mul, xt], [add]),
             helper.make_node("Tanh", [add], [s_out]),
             helper.make_node(g.choice(("Sigmoid", "Identity")), [s_out], [y])]
    body = helper.make_graph(nodes, g.new_name("scan_body"),
                             [_info(s, x.dtype, step), _info(xt, x.dtype, step)],
                             [_info(s_out, x.dtype, step), _info(y, x.dtype, step)])
    out_rank = len(step) + 1
    out_axis = int(g.rng.integers(-out_rank, out_rank)) if g.coin(0.4) else None
    g.node("Scan", [state, x], n_out=2, body=body, num_scan_inputs=1,
           scan_input_axes=[axis - x.rank if g.coin(0.3) else axis],
           scan_input_directions=[int(g.coin(0.3))],
           scan_output_directions=[int(g.coin(0.3))],
           scan_output_axes=None if out_axis is None else [out_axis])


__all__: list[str] = []

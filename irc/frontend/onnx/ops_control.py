"""Converters of ONNX control flow: ``If``, ``Loop`` and ``Scan``.

Each subgraph becomes a module function (``GraphImporter.subgraph_function``) whose
parameters are the subgraph's inputs and the enclosing values it reads.

``If`` with a condition known at import time inlines the branch taken. Otherwise it is a
graph-level ``If`` calling the two branch functions, which the VM executes.

``Loop`` becomes a recursive function:

    loop(i, cond, v..., acc..., captured...):
        if i < M and cond:
            cond', v'..., s... = body(i, cond, v..., captured...)
            return loop(i + 1, cond', v'..., concat(acc, s)..., captured...)
        else:
            return (v..., acc...)

The scan outputs ``s`` accumulate along a new leading axis. Each iteration is one VM call,
so deep loops cost a call frame each; the loop-carried values must keep their struct info
(dtype, rank and shape) from one iteration to the next.

``Scan`` (opset 9 on) has a static number of steps, the length of its scan axis: the body
is inlined once per step (at most ``MAX_SCAN_STEPS``), each step's scan-input slices and
state bound to the body's inputs, and the per-step scan outputs stacked along their axes
(reversed where asked). Opset 8's ``Scan`` has a leading batch axis on every input and
output: the body is inlined per batch entry and step, and the results stacked back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.diagnostics import UnsupportedOperatorError
from ...ir import ops
from ...ir.expr import (
    BindingBlock,
    Call,
    Constant,
    Expr,
    If,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ...ir.struct_info import FuncStructInfo, TensorStructInfo, TupleStructInfo
from ...tir import expr as E
from .importer import Node
from .protos import valid_name
from .registry import converter
from .scope import SymShape


def _scalar_bool(node: Node, e: Expr, what: str) -> Expr:
    s = node.graph.bb.normalize(e).struct_info
    if not isinstance(s, TensorStructInfo):
        raise node.error(f"{what} must be a tensor")
    if s.dtype != "bool":
        e = ops.not_equal(e, Constant.from_numpy(np.zeros((), s.dtype if s.dtype else "bool")))
    if s.ndim != 0:
        e = ops.reshape(e, [])
    return e


def _call(gvar: Any, args: list[Expr]) -> Expr:
    return Call(op=gvar, args=tuple(args))


@converter("If", since=1)
def _if(node: Node) -> Any:
    then_g = node.required_attr("then_branch")
    else_g = node.required_attr("else_branch")
    n_out = len(node.output_names)
    for g, which in ((then_g, "then_branch"), (else_g, "else_branch")):
        if len(g.output) != n_out:
            raise node.error(f"{which} has {len(g.output)} outputs for {n_out} node outputs")
    c = node.const(0)
    if c is not None:
        if c.size != 1:
            raise node.error(f"the condition must hold one value, got shape {c.shape}")
        return node.graph.inline_subgraph(then_g if bool(c.reshape(-1)[0]) else else_g,
                                          node.output_names)
    cond = node.emit(_scalar_bool(node, node.input(0), "the condition"), "cond")
    base = node.output_names[0] if node.output_names else "if"
    t_gv, t_args = node.graph.subgraph_function(then_g, f"{base}_then", [])
    f_gv, f_args = node.graph.subgraph_function(else_g, f"{base}_else", [])
    value = If(cond=cond, true_branch=SeqExpr(blocks=(), body=_call(t_gv, t_args)),
               false_branch=SeqExpr(blocks=(), body=_call(f_gv, f_args)))
    res = node.emit(value, f"{base}_if")
    return [TupleGetItem(tuple_value=res, index=i) for i in range(n_out)]


def _int64_scalar(value: int) -> Constant:
    return Constant.from_numpy(np.asarray(value, "int64"))


@converter("Loop", since=1)
def _loop(node: Node) -> Any:
    graph = node.graph
    bb = graph.bb
    body = node.required_attr("body")
    n_carried = node.num_inputs - 2
    n_scan = len(body.output) - 1 - n_carried
    if len(body.input) != n_carried + 2 or n_scan < 0:
        raise node.error(f"the body has {len(body.input)} inputs and {len(body.output)} "
                         f"outputs for {n_carried} loop-carried values")
    if node.has_input(0):
        trip = node.input(0)
        ts = bb.normalize(trip).struct_info
        if not isinstance(ts, TensorStructInfo) or ts.ndim not in (0, 1):
            raise node.error("the trip count M must be a scalar tensor")
        trip = ops.reshape(ops.astype(trip, "int64"), [])
    else:
        trip = _int64_scalar(np.iinfo(np.int64).max)
    cond0 = (_scalar_bool(node, node.input(1), "the condition") if node.has_input(1)
             else Constant.from_numpy(np.asarray(True)))
    carried = [node.input(2 + k) for k in range(n_carried)]
    carried_sinfo = [bb.normalize(v).struct_info for v in carried]
    if any(not isinstance(s, TensorStructInfo) for s in carried_sinfo):
        return _unrolled_loop(node, body, carried, n_scan)
    scalar_i = TensorStructInfo(shape=(), dtype="int64")
    scalar_b = TensorStructInfo(shape=(), dtype="bool")
    base = node.output_names[0] if node.output_names and node.output_names[0] else "loop"
    body_gv, captured = graph.subgraph_function(body, f"{base}_body",
                                                [scalar_i, scalar_b, *carried_sinfo])
    body_ret = bb.lookup(body_gv).ret_struct_info
    if not isinstance(body_ret, TupleStructInfo):
        raise node.error("the loop body does not return a tuple")
    outs = list(body_ret.fields)
    scan_sinfo = []
    for j in range(n_scan):
        s = outs[1 + n_carried + j]
        if not isinstance(s, TensorStructInfo) or s.shape is None:
            raise node.error(f"scan output {j} of the body needs a known shape")
        scan_sinfo.append(s)
    # The recursive function's parameters.
    p_i = Var(name_hint="iter", struct_info=scalar_i)
    p_c = Var(name_hint="cond", struct_info=scalar_b)
    p_trip = Var(name_hint="trip_count", struct_info=scalar_i)
    p_v = [Var(name_hint=valid_name(f"v{k}"), struct_info=s)
           for k, s in enumerate(carried_sinfo)]
    p_acc = []
    for j, s in enumerate(scan_sinfo):
        n = E.Var(name=f"scan{j}_len", dtype="int64")
        p_acc.append(Var(name_hint=f"scan{j}",
                         struct_info=TensorStructInfo(shape=(n, *s.shape), dtype=s.dtype)))
    p_cap = [Var(name_hint=valid_name(f"c{k}"), struct_info=bb.normalize(e).struct_info)
             for k, e in enumerate(captured)]
    params = [p_i, p_c, p_trip, *p_v, *p_acc, *p_cap]
    ret = TupleStructInfo(fields=tuple(
        [*carried_sinfo, *(TensorStructInfo(dtype=s.dtype, ndim=s.ndim + 1)
                           for s in scan_sinfo)]))
    name = bb.get().unique_name(valid_name(f"{base}_loop", "loop"))
    loop_gv = bb.declare_function(name, FuncStructInfo(
        params=tuple(p.struct_info for p in params), ret=ret))
    with bb.function(name, params, private=True):
        go = bb.emit(ops.logical_and(ops.less(p_i, p_trip), p_c), "go")
        call = bb.normalize(_call(body_gv, [p_i, p_c, *p_v, *p_cap]))
        r = Var(name_hint="step", struct_info=call.struct_info)
        nxt = [TupleGetItem(tuple_value=r, index=1 + k) for k in range(n_carried)]
        accs = []
        for j in range(n_scan):
            item = ops.expand_dims(TupleGetItem(tuple_value=r, index=1 + n_carried + j), 0)
            accs.append(ops.concat(Tuple(fields=(p_acc[j], item)), 0))
        again = _call(loop_gv, [ops.add(p_i, _int64_scalar(1)),
                                TupleGetItem(tuple_value=r, index=0), p_trip, *nxt, *accs,
                                *p_cap])
        # The body runs only when the loop goes on: both sit in the true branch.
        body_seq = SeqExpr(blocks=(BindingBlock(bindings=(VarBinding(var=r, value=call),)),),
                           body=again)
        stop = SeqExpr(blocks=(), body=Tuple(fields=tuple([*p_v, *p_acc])))
        out = bb.emit(If(cond=go, true_branch=body_seq, false_branch=stop), "result")
        bb.emit_func_output(out)
    acc0 = [Constant.from_numpy(np.zeros((0, *[int(d.value) for d in s.shape]),
                                         s.dtype)) if s.static_shape is not None else None
            for s in scan_sinfo]
    if any(a is None for a in acc0):
        raise node.error("scan outputs need a static per-iteration shape")
    res = node.emit(_call(loop_gv, [_int64_scalar(0), cond0, trip, *carried, *acc0,
                                    *captured]), f"{base}_loop")
    outs = [TupleGetItem(tuple_value=res, index=i) for i in range(n_carried + n_scan)]
    for j, s in enumerate(scan_sinfo):
        # the number of iterations is known once the loop has run: a symbolic length
        n = graph.fresh_dim(valid_name(f"{base}_iterations", "iterations"))
        outs[n_carried + j] = bb.match_cast(
            node.emit(outs[n_carried + j], f"{base}_scan"),
            TensorStructInfo(shape=(n, *s.shape), dtype=s.dtype), f"{base}_scan")
    return outs


def _unrolled_loop(node: Node, body: Any, carried: list[Expr], n_scan: int) -> list[Any]:
    """A Loop that carries a sequence (a tuple, whose length changes from step to step)
    inlined once per iteration: its trip count and every step's condition must be known
    at import time (the loops exporters and ONNX's function bodies write over a static
    sequence: ``SequenceMap``'s expansion), at most :data:`MAX_SCAN_STEPS` steps."""
    why = ("a Loop carrying a sequence is unrolled when the model is imported (irc "
           "represents a sequence as a tuple of fixed length)")
    trip = node.const(0) if node.has_input(0) else None
    if trip is None or trip.size != 1:
        raise UnsupportedOperatorError(f"ONNX node {node.name!r} (Loop): {why}; its trip "
                                       "count must be a constant")
    steps = int(trip.reshape(-1)[0])
    if steps > MAX_SCAN_STEPS:
        raise node.error(f"{steps} iterations; irc unrolls a Loop over at most "
                         f"{MAX_SCAN_STEPS}")
    go = node.const(1) if node.has_input(1) else np.asarray(True)
    if go is None:
        raise UnsupportedOperatorError(f"ONNX node {node.name!r} (Loop): {why}; its "
                                       "condition must be a constant")
    graph = node.graph
    formal = [vi.name for vi in body.input]
    state: list[Any] = list(carried)
    per_step: list[list[Expr]] = [[] for _ in range(n_scan)]
    for t in range(steps):
        if not bool(np.asarray(go).reshape(-1)[0]):
            break
        values = [_int64_scalar(t), Constant.from_numpy(np.asarray(True)), *state]
        for name, value in zip(formal, values):
            graph.scope.bind(name, value if isinstance(value, (Var, Constant, Tuple))
                             else node.emit(value, "loop_value"))
        res = graph.inline_subgraph(body, [vi.name for vi in body.output])
        res = [graph.shape_tensor(v, f"{node.name}_step{t}_{i}") if isinstance(v, SymShape)
               else v for i, v in enumerate(res)]
        cond = res[0]
        go = cond.data if isinstance(cond, Constant) else None
        if go is None:
            raise UnsupportedOperatorError(f"ONNX node {node.name!r} (Loop): {why}; the "
                                           "condition of each step must be known then")
        state = res[1:1 + len(carried)]
        for j, v in enumerate(res[1 + len(carried):]):
            per_step[j].append(v)
    if n_scan and not per_step[0]:
        raise node.error("a Loop carrying a sequence ran no iteration: its scan outputs "
                         "have no per-iteration shape")
    return state + [_stack(node, items, 0) for items in per_step]


__all__: list[str] = []


# Steps of a Scan inlined at most (each step copies the body into the graph).
MAX_SCAN_STEPS = 1024


def _normalized(node: Node, what: str, values: list[int], ranks: list[int]) -> list[int]:
    out = []
    for a, r in zip(values, ranks):
        if not -r <= a < r:
            raise node.error(f"{what} {a} is out of range for rank {r}")
        out.append(a % r)
    return out


def _run_steps(node: Node, body: Any, state: list[Any], xs: list[Expr], in_axes: list[int],
               in_dirs: list[int], steps: int) -> tuple[list[Any], list[list[Expr]]]:
    """The body inlined once per step: step ``t`` binds the state and the ``t``-th slice
    of each scan input (counted from the end where its direction is 1) to the body's
    inputs. Returns the final state and each scan output's per-step values."""
    graph = node.graph
    formal = [vi.name for vi in body.input]
    n_state = len(state)
    per_step: list[list[Expr]] = [[] for _ in range(len(body.output) - n_state)]
    for t in range(steps):
        slices = []
        for x, a, rev in zip(xs, in_axes, in_dirs):
            i = steps - 1 - t if rev else t
            slices.append(node.emit(ops.squeeze(ops.take(
                x, Constant.from_numpy(np.array([i], "int64")), axis=a), [a]), "scan_slice"))
        for name, value in zip(formal, state + slices):
            graph.scope.bind(name, value if isinstance(value, (Var, Constant))
                             else node.emit(value, "scan_value"))
        res = graph.inline_subgraph(body, [vi.name for vi in body.output])
        res = [graph.shape_tensor(v, f"{node.name}_step{t}_{i}") if isinstance(v, SymShape)
               else v for i, v in enumerate(res)]
        state = res[:n_state]
        for j, v in enumerate(res[n_state:]):
            per_step[j].append(v)
    return state, per_step


def _stack(node: Node, items: list[Expr], axis: int) -> Expr:
    """The per-step values stacked along a new ``axis`` (negative: from the end)."""
    r = node.graph.bb.normalize(items[0]).struct_info.ndim + 1
    (a,) = _normalized(node, "scan_output_axis", [axis], [r])
    stacked = [ops.expand_dims(v, a) for v in items]
    return stacked[0] if len(items) == 1 else ops.concat(Tuple(fields=tuple(stacked)), a)


def _steps(node: Node, lengths: set[int]) -> int:
    if len(lengths) != 1:
        raise node.error(f"the scan inputs differ in length: {sorted(lengths)}")
    steps = lengths.pop()
    if not 1 <= steps <= MAX_SCAN_STEPS:
        raise node.error(f"{steps} steps; irc unrolls Scan over 1 to {MAX_SCAN_STEPS} steps")
    return steps


def _scan_signature(node: Node, body: Any, n_inputs: int) -> tuple[int, int, int]:
    """(state values, scan inputs, scan outputs) of a Scan over ``n_inputs`` tensors."""
    m = int(node.required_attr("num_scan_inputs"))
    n_state = n_inputs - m
    k = len(body.output) - n_state
    if m < 1 or n_state < 0 or k < 0 or len(body.input) != n_state + m:
        raise node.error(f"the body has {len(body.input)} inputs and {len(body.output)} "
                         f"outputs for {n_state} state values and {m} scan inputs")
    return n_state, m, k


def _static_length(node: Node, i: int, axis: int, what: str) -> int:
    d = node.shape(i)[axis]
    if not isinstance(d, E.IntImm):
        raise node.error(f"{what} has a symbolic length along axis {axis}; irc unrolls Scan "
                         "over a static number of steps")
    return int(d.value)


@converter("Scan", since=8)
def _scan_batched(node: Node) -> Any:
    """Opset 8's Scan: every state and scan input has a leading batch axis (scan inputs
    ``[batch, length, ...]``), the body runs on one batch entry at a time, and the
    outputs are stacked back along the batch axis (scan outputs ``[batch, length,
    ...]``). ``sequence_lens``, when given, must be a constant equal to the length for
    every batch entry."""
    body = node.required_attr("body")
    n_state, m, k = _scan_signature(node, body, node.num_inputs - 1)
    first = 1  # input 0 is sequence_lens
    dirs = list(node.attr("directions", [0] * m))
    if len(dirs) != m:
        raise node.error(f"directions needs one entry per scan input ({m}), got {dirs}")
    for i in range(first, node.num_inputs):
        if node.ndim(i) < 1:
            raise node.error(f"input {i} needs a leading batch axis")
    batch = _static_length(node, first, 0, "the first input")
    steps = _steps(node, {_static_length(node, first + n_state + j, 1, f"scan input {j}")
                          for j in range(m)})
    if node.has_input(0):
        lens = node.const(0)
        if lens is None or lens.size != batch or np.any(lens.reshape(-1) != steps):
            raise node.error(f"sequence_lens must be a constant {steps} for each of the "
                             f"{batch} batch entries; irc does not scan shorter sequences")

    def entry(i: int, b: int) -> Expr:
        return node.emit(ops.squeeze(ops.take(node.input(i), Constant.from_numpy(
            np.array([b], "int64")), axis=0), [0]), "scan_batch")

    finals: list[list[Any]] = [[] for _ in range(n_state)]
    outs: list[list[Expr]] = [[] for _ in range(k)]
    for b in range(batch):
        state = [entry(first + i, b) for i in range(n_state)]
        xs = [entry(first + n_state + j, b) for j in range(m)]
        state, per_step = _run_steps(node, body, state, xs, [0] * m, dirs, steps)
        for i, v in enumerate(state):
            finals[i].append(v)
        for j, items in enumerate(per_step):
            outs[j].append(_stack(node, items, 0))
    return [_stack(node, vs, 0) for vs in finals] + [_stack(node, vs, 0) for vs in outs]


@converter("Scan", since=9)
def _scan(node: Node) -> Any:
    body = node.required_attr("body")
    n_state, m, k = _scan_signature(node, body, node.num_inputs)
    in_ranks = [node.ndim(n_state + j) for j in range(m)]
    in_axes = _normalized(node, "scan_input_axis",
                          list(node.attr("scan_input_axes", [0] * m)), in_ranks)
    in_dirs = list(node.attr("scan_input_directions", [0] * m))
    out_dirs = list(node.attr("scan_output_directions", [0] * k))
    out_axes = list(node.attr("scan_output_axes", [0] * k))
    if len(in_axes) != m or len(in_dirs) != m or len(out_dirs) != k or len(out_axes) != k:
        raise node.error("scan_input_axes, scan_input_directions, scan_output_axes and "
                         "scan_output_directions need one entry per scan input or output")
    steps = _steps(node, {_static_length(node, n_state + j, a, f"scan input {j}")
                          for j, a in enumerate(in_axes)})
    state = [node.input(i) for i in range(n_state)]
    xs = [node.input(n_state + j) for j in range(m)]
    state, per_step = _run_steps(node, body, state, xs, in_axes, in_dirs, steps)
    outs = [_stack(node, items[::-1] if out_dirs[j] else items, out_axes[j])
            for j, items in enumerate(per_step)]
    return state + outs

"""Shrinking a failing model to the few nodes that keep its failure: :func:`minimise`.

Delta debugging over the nodes of the graph. A candidate drops some nodes; a value a
dropped node made that a kept node (or the graph's outputs) still reads becomes a tensor
of its own holding the value it had — an initializer when it was computed from constants
only (so that irc still sees a constant where the model had one: a shape, an axis), a
graph input otherwise — so what the kept nodes compute does not change. Nodes nothing
reaches the outputs through are then dropped, and with them the inputs and initializers
no node reads. A candidate is kept when evaluating it (``check``, usually in a worker
process) gives the same failure (:attr:`.evaluate.Outcome.key`).

First the graph's outputs are cut down to one, then chunks of nodes are dropped, halving
the chunks until single nodes are tried (``ddmin``), within ``max_checks`` evaluations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .evaluate import Outcome
from .references import PeerRefused, run_reference
from .values import dtype_name, is_float

# Evaluations one minimisation may spend.
MAX_CHECKS = 120


@dataclass
class Reduced:
    """A model with its inputs and the data tensors to perturb: what a check runs."""

    model: Any
    inputs: dict[str, np.ndarray]
    perturb: tuple[str, ...]

    @property
    def size(self) -> int:
        """Nodes of the graph, Constant nodes left out."""
        return sum(n.op_type != "Constant" for n in self.model.graph.node)


def _reads(node: Any) -> set[str]:
    """The values ``node`` reads: its inputs and what its subgraphs read from outside."""
    out = {i for i in node.input if i}
    for attr in node.attribute:
        graphs = ([attr.g] if attr.HasField("g") else []) + list(attr.graphs)
        for g in graphs:
            made = {o for n in g.node for o in n.output} | {i.name for i in g.input} | \
                {t.name for t in g.initializer}
            for n in g.node:
                out |= _reads(n) - made
    return out


def _const_values(model: Any) -> set[str]:
    """The values computed from initializers and Constant nodes only."""
    const = {t.name for t in model.graph.initializer}
    for node in model.graph.node:
        if all(r in const for r in _reads(node)):
            const.update(node.output)
    return const


def _with_graph(model: Any, nodes: Sequence[Any], outputs: Sequence[str],
                values: dict[str, np.ndarray], const: set[str], old: Reduced) -> Reduced:
    """A copy of ``model`` with ``nodes`` (in order) and ``outputs``: values read but no
    longer made become initializers or inputs (see the module docstring); unread inputs
    and initializers are dropped."""
    from onnx import helper, numpy_helper

    graph = model.graph
    made = {o for n in nodes for o in n.output}
    inits = {t.name: t for t in graph.initializer}
    old_inputs = {i.name: i for i in graph.input}
    reads = set(outputs)
    for n in nodes:
        reads |= _reads(n)
    new_inputs, new_inits = [], []
    inputs = {}
    perturb = set(old.perturb)
    for name in sorted(reads - made, key=_order(graph)):
        if name in old_inputs:
            new_inputs.append(old_inputs[name])
            inputs[name] = old.inputs[name]
        elif name in inits:
            new_inits.append(inits[name])
        else:
            arr = values[name]
            if name in const:
                new_inits.append(numpy_helper.from_array(arr, name))
            else:
                new_inputs.append(helper.make_tensor_value_info(
                    name, helper.np_dtype_to_tensor_dtype(arr.dtype), list(arr.shape)))
                inputs[name] = arr
                if is_float(dtype_name(arr)):
                    perturb.add(name)
    out_info = {o.name: o for o in graph.output}
    vis = {v.name: v for v in graph.value_info}
    new_outputs = []
    for name in outputs:
        if name in out_info:
            new_outputs.append(out_info[name])
        elif name in vis:
            new_outputs.append(vis[name])
        else:
            arr = values[name]
            new_outputs.append(helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(arr.dtype), list(arr.shape)))
    g = helper.make_graph(list(nodes), graph.name, new_inputs, new_outputs, new_inits)
    m = helper.make_model(g, opset_imports=list(model.opset_import),
                          producer_name=model.producer_name)
    m.ir_version = model.ir_version
    keep = {i.name for i in new_inputs} | {t.name for t in new_inits} | made
    return Reduced(m, inputs, tuple(sorted(p for p in perturb if p in keep)))


def _order(graph: Any) -> Callable[[str], tuple[int, str]]:
    """A sort key keeping the original inputs first, then values in the order made."""
    rank = {i.name: k for k, i in enumerate(graph.input)}
    k = len(rank)
    for n in graph.node:
        for o in n.output:
            rank.setdefault(o, k)
            k += 1
    return lambda name: (rank.get(name, k), name)


def _live(nodes: Sequence[Any], outputs: Sequence[str]) -> list[Any]:
    """The nodes of ``nodes`` the outputs depend on, in order."""
    needed = set(outputs)
    keep = []
    for n in reversed(nodes):
        if any(o in needed for o in n.output):
            keep.append(n)
            needed |= _reads(n)
    return keep[::-1]


def minimise(case: Reduced, failure: Outcome, check: Callable[[Reduced], Outcome],
             max_checks: int = MAX_CHECKS) -> tuple[Reduced, int]:
    """The smallest model found that ``check`` says fails as ``failure`` (same
    :attr:`~.evaluate.Outcome.key`), and the number of checks made."""
    try:
        names = [o for n in case.model.graph.node for o in n.output]
        arrays = run_reference(case.model, case.inputs, names)
        values = dict(zip(names, arrays))
    except PeerRefused:
        values = {}
    values.update(case.inputs)
    const = _const_values(case.model)
    checks = 0
    best = case

    def attempt(nodes: Sequence[Any], outputs: Sequence[str]) -> Reduced | None:
        nonlocal checks
        live = _live(nodes, outputs)
        if not outputs or not any(n.op_type != "Constant" for n in live):
            return None
        try:
            cand = _with_graph(best.model, live, outputs, values, const, best)
        except KeyError:  # a value the reference did not compute: cannot cut there
            return None
        checks += 1
        return cand if check(cand).key == failure.key else None

    outputs = [o.name for o in best.model.graph.output]
    if len(outputs) > 1:
        for name in outputs:
            if checks >= max_checks:
                break
            got = attempt(list(best.model.graph.node), [name])
            if got is not None:
                best = got
                break
    chunks = 2
    while checks < max_checks:
        nodes = list(best.model.graph.node)
        outputs = [o.name for o in best.model.graph.output]
        if best.size <= 1:
            break
        size = max(1, -(-len(nodes) // chunks))
        progress = False
        for start in range(0, len(nodes), size):
            if checks >= max_checks:
                break
            dropped = set(range(start, min(start + size, len(nodes))))
            kept = [n for i, n in enumerate(nodes) if i not in dropped]
            outs = [o for o in outputs if any(o in n.output for n in kept)] or \
                _outputs_of(nodes, dropped, kept)
            got = attempt(kept, outs)
            if got is not None:
                best = got
                chunks = max(2, chunks - 1)
                progress = True
                break
        if not progress:
            if size == 1:
                break
            chunks = min(len(nodes), chunks * 2)
    return best, checks


def _outputs_of(nodes: Sequence[Any], dropped: set[int], kept: Sequence[Any]) -> list[str]:
    """When every output's maker is dropped: the results of the kept nodes that fed the
    dropped ones (the failure may sit just before)."""
    fed = set()
    for i in dropped:
        fed |= _reads(nodes[i])
    return [o for n in kept for o in n.output if o in fed]


__all__ = ["MAX_CHECKS", "Reduced", "minimise"]

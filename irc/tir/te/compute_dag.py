"""``ComputeDAG``: the graph of te operations a search task tunes.

It orders the operations topologically (inputs first, in the order auto-schedulers
print them), prints one line per stage in the classic tensor-expression notation
(``matmul(i, j) += (A[i, k]*B[k, j])``), counts floating-point operations (tuning
reports GFLOPS from it) and keys the workload by a structural hash of the PrimFunc that
:func:`create_prim_func` makes from it.
"""

from __future__ import annotations

import heapq
import json
from typing import Any, Sequence

from ...core import dtype as dt
from ...core.diagnostics import IRTypeError
from ...core.structural import structural_hash_hex
from ..expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    CmpOp,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Reduce,
    Select,
    StringImm,
    Sub,
    Var,
)
from .create_prim_func import create_prim_func
from .tensor import ComputeOp, Operation, PlaceholderOp, Tensor

# Lines longer than this are shortened in the middle when a DAG is printed.
MAX_LINE_WIDTH = 256

_INFIX = {Add: " + ", Sub: " - ", Mul: "*", Div: "/", Mod: " % ", EQ: " == ", NE: " != ",
          LT: " < ", LE: " <= ", GT: " > ", GE: " >= ", And: " && ", Or: " || "}
_PREFIX = {FloorDiv: "floordiv", FloorMod: "floormod", Min: "min", Max: "max"}
_REDUCE_SIGN = {"sum": "+=", "max": "max=", "min": "min=", "prod": "*="}


def _float_text(value: float) -> str:
    # C++ streams print doubles with 6 significant digits, like printf's %g.
    return "%g" % value


def expr_repr(e: Any) -> str:
    """``e`` in the compact tensor-expression notation of compute DAGs."""
    if isinstance(e, Var):
        return e.name
    if isinstance(e, IntImm):
        return str(e.value) if e.dtype == "int32" else f"({e.dtype}){e.value}"
    if isinstance(e, FloatImm):
        text = _float_text(e.value)
        bits = dt.bits(e.dtype)
        return text if bits == 64 else text + ("f" if bits == 32 else "h")
    if isinstance(e, StringImm):
        return '"' + e.value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(e, Cast):
        return f"{e.dtype}({expr_repr(e.value)})"
    sign = _INFIX.get(type(e))
    if sign is not None:
        return f"({expr_repr(e.a)}{sign}{expr_repr(e.b)})"
    name = _PREFIX.get(type(e))
    if name is not None:
        return f"{name}({expr_repr(e.a)}, {expr_repr(e.b)})"
    if isinstance(e, Not):
        return "!" + expr_repr(e.a)
    if isinstance(e, Select):
        return (f"select({expr_repr(e.condition)}, {expr_repr(e.true_value)}, "
                f"{expr_repr(e.false_value)})")
    if isinstance(e, Call):
        return f"tir.{e.op}(" + ", ".join(expr_repr(a) for a in e.args) + ")"
    if isinstance(e, BufferLoad):
        return f"{e.buffer.name}[" + ", ".join(expr_repr(i) for i in e.indices) + "]"
    if isinstance(e, Ramp):
        return f"ramp({expr_repr(e.base)}, {expr_repr(e.stride)}, {e.lanes})"
    if isinstance(e, Broadcast):
        return f"x{e.lanes}({expr_repr(e.value)})"
    if isinstance(e, Let):
        return f"(let {e.var.name} = {expr_repr(e.value)} in {expr_repr(e.body)})"
    if isinstance(e, Reduce):
        return f"reduce_{e.kind}({expr_repr(e.source)})"
    if isinstance(e, (tuple, list)):
        return "[" + ", ".join(expr_repr(x) for x in e) + "]"
    if isinstance(e, int):
        return str(e)
    return repr(e)


def topo_sort_ops(tensors: Sequence[Tensor]) -> list[Operation]:
    """Operations reachable from ``tensors``, producers before consumers; among ready
    operations the one reached latest by a depth-first walk goes first (the order
    auto-schedulers print stages in)."""
    stack = [t.op for t in tensors]  # popped from the end: last tensor first
    priority: dict[int, int] = {}
    degree: dict[int, int] = {}
    users: dict[int, list[Operation]] = {}
    by_id: dict[int, Operation] = {}
    count = 0
    while stack:
        op = stack.pop()
        if id(op) in priority:
            continue
        priority[id(op)] = count
        by_id[id(op)] = op
        count += 1
        inputs = op.input_tensors
        degree[id(op)] = len(inputs)
        for t in inputs:
            users.setdefault(id(t.op), []).append(op)
            stack.append(t.op)
    ready = [(-priority[k], k) for k, d in degree.items() if d == 0]
    heapq.heapify(ready)
    order: list[Operation] = []
    while ready:
        _, k = heapq.heappop(ready)
        order.append(by_id[k])
        for user in users.get(k, []):
            degree[id(user)] -= 1
            if degree[id(user)] == 0:
                heapq.heappush(ready, (-priority[id(user)], id(user)))
    return order


class _FlopCounter:
    """Floating-point operations per element: arithmetic nodes whose dtype kind matches
    the stage's output (a float stage counts float ops); loads, casts and intrinsic calls
    themselves are free; a reduction multiplies its body by its trip count."""

    def __init__(self) -> None:
        self.failed = False
        self.code = "float"

    def count(self, e: PrimExpr) -> float:
        if isinstance(e, Reduce):
            trips = 1
            for ax in e.axis:
                if isinstance(ax.dom.extent, IntImm):
                    trips *= ax.dom.extent.value
                else:
                    self.failed = True
            combiner = 1.0 if dt.parse(e.dtype).code == self.code else 0.0
            return trips * (combiner + self.count(e.source))
        if isinstance(e, (FloatImm, IntImm, BufferLoad, Var, StringImm)):
            return 0.0
        if isinstance(e, Cast):
            return self.count(e.value)
        if isinstance(e, Select):
            return self.count(e.condition) + max(self.count(e.true_value),
                                                 self.count(e.false_value))
        if isinstance(e, (BinaryOp, CmpOp, And, Or)):
            own = 1.0 if dt.parse(e.dtype).code == self.code else 0.0
            return own + self.count(e.a) + self.count(e.b)
        if isinstance(e, Not):
            own = 1.0 if dt.parse(e.dtype).code == self.code else 0.0
            return own + self.count(e.a)
        if isinstance(e, Call):
            return sum(self.count(a) for a in e.args)
        if isinstance(e, Let):
            return self.count(e.value) + self.count(e.body)
        self.failed = True
        return 0.0

    def total(self, ops: Sequence[Operation]) -> float:
        result = 0.0
        for op in ops:
            if not isinstance(op, ComputeOp):
                continue
            elements = 1
            for ax in op.axis:
                if not isinstance(ax.dom.extent, IntImm):
                    return -1.0
                elements *= ax.dom.extent.value
            self.code = dt.parse(op.output(0).dtype).code
            result += elements * self.count(op.body)
        return -1.0 if self.failed else result


class ComputeDAG:
    """The operations of a tensor-expression program, in topological order.

    ``ComputeDAG([A, B, C, out])`` takes the tensors that form the function's interface
    (inputs and outputs); ``str(dag)`` prints one line per stage.
    """

    def __init__(self, tensors: Sequence[Tensor]):
        tensors = list(tensors)
        for t in tensors:
            if not isinstance(t, Tensor):
                raise IRTypeError(f"ComputeDAG takes te tensors, got {type(t).__name__}")
        self.tensors = tensors
        self.ops: list[Operation] = topo_sort_ops(tensors)
        self._func = None

    def flop_count(self) -> float:
        """Floating-point operations of one run (-1.0 when a shape is symbolic)."""
        return _FlopCounter().total(self.ops)

    @property
    def flop_ct(self) -> float:
        """Alias of :meth:`flop_count` under the auto-scheduler's name."""
        return self.flop_count()

    def create_prim_func(self):
        """The block-form PrimFunc of these tensors (cached)."""
        if self._func is None:
            self._func = create_prim_func(self.tensors)
        return self._func

    def structural_hash(self) -> str:
        """A 32-hex-digit hash of the PrimFunc, equal for structurally equal programs."""
        return structural_hash_hex(self.create_prim_func())

    def workload_key(self) -> str:
        """A JSON key ``["<hash>", [shape of tensor 0], ...]`` naming this workload."""
        shapes = [[_dim(s) for s in t.shape] for t in self.tensors]
        return json.dumps([self.structural_hash(), *shapes])

    def _lines(self) -> list[str]:
        lines = []
        for op in self.ops:
            if isinstance(op, PlaceholderOp):
                shape = ", ".join(str(_dim(s)) for s in op.shape)
                lines.append(f"{op.name} = PLACEHOLDER [{shape}]")
            elif isinstance(op, ComputeOp):
                head = f"{op.name}(" + ", ".join(ax.var.name for ax in op.axis) + ")"
                body = op.body
                if isinstance(body, Reduce):
                    lines.append(f"{head} {_REDUCE_SIGN[body.kind]} {expr_repr(body.source)}")
                else:
                    lines.append(f"{head} = {expr_repr(body)}")
        return lines

    def __str__(self) -> str:
        out = []
        half = MAX_LINE_WIDTH // 2
        for line in self._lines():
            if len(line) > MAX_LINE_WIDTH:
                line = line[:half] + " ..(OMITTED).. " + line[-half:]
            out.append(line)
        return "\n".join(out) + "\n"

    def __repr__(self) -> str:
        return f"ComputeDAG({', '.join(t.name for t in self.tensors)})"


def _dim(s: PrimExpr) -> Any:
    return s.value if isinstance(s, IntImm) else expr_repr(s)

"""``te.create_prim_func``: tensor expressions to a block-form PrimFunc.

Every compute stage becomes one block inside a loop nest (``T.grid`` over its spatial
axes, then its reduction axes): block iteration variables ``v_<axis>`` bound to the loop
variables (``T.axis.remap("SSR", ...)``), exact read/write regions, and an ``init``
statement for reductions. Intermediate stages are allocated by the root block
(``alloc_buffers``); the given tensors become the parameters in list order. The result
has the shape TVM's ``te.create_prim_func`` produces for the same expressions.
"""

from __future__ import annotations

from typing import Any, Sequence

from ...core import dtype as dt
from ...core.diagnostics import IRTypeError
from ...core.functor import Mutator, Visitor
from ...core.module import unique_name
from ..analysis.var_use import same_expr
from ..buffer import Buffer, BufferRegion
from ..expr import (
    Add,
    BufferLoad,
    FloatImm,
    IntImm,
    IterVar,
    PrimExpr,
    Range,
    Reduce,
    Sub,
    Var,
    const,
    if_then_else,
    max_,
    min_,
)
from ..stmt import Block, BlockRealize, BufferStore, For, PrimFunc, Stmt, seq
from .index_dtype import normalize_index_dtype
from .tensor import ComputeOp, Operation, PlaceholderOp, Tensor

LAYOUT_FREE_KEYS = ("layout_free_placeholders", "layout_free_placeholers")
# Compute attributes that only steer te-level tools and never become block annotations.
_DROPPED_ATTRS = ("const_matrix", "auto_scheduler_simplify_const_tensor_indices", "workload")


class NameSupply:
    """Hands out unique names: ``x``, then ``x_1``, ``x_2``, ..."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def fresh(self, name: str) -> str:
        """``name`` if unused, else the first free ``name_1``, ``name_2``, ..."""
        out = unique_name(name, self.used, "_")
        self.used.add(out)
        return out


def post_dfs_ops(roots: Sequence[Tensor]) -> list[Operation]:
    """The operations reachable from ``roots``, producers before consumers (post order of
    a depth-first walk over ``roots`` in order)."""
    order: list[Operation] = []
    visited: set[int] = set()

    def visit(op: Operation) -> None:
        # Iterative walk: te graphs of deep networks would overflow Python's stack.
        stack: list[tuple[Operation, int]] = [(op, 0)]
        while stack:
            cur, i = stack.pop()
            if i == 0:
                if id(cur) in visited:
                    continue
                visited.add(id(cur))
            inputs = cur.input_tensors
            if i < len(inputs):
                stack.append((cur, i + 1))
                nxt = inputs[i].op
                if id(nxt) not in visited:
                    stack.append((nxt, 0))
            else:
                order.append(cur)

    for t in roots:
        visit(t.op)
    return order


class Substitute(Mutator):
    """Replace variables (by identity) with expressions and buffers with buffers."""

    def __init__(self, var_map: dict[int, PrimExpr], buffer_map: dict[int, Buffer]):
        super().__init__()
        self.var_map = var_map
        self.buffer_map = buffer_map

    def visit_Var(self, v: Var) -> PrimExpr:
        return self.var_map.get(id(v), v)

    def visit_Buffer(self, b: Buffer) -> Buffer:
        return self.buffer_map.get(id(b), b)


def reduction_identity(kind: str, dtype: str) -> PrimExpr:
    """The start value of a ``kind`` reduction in ``dtype``: for floats ``max`` starts at
    -inf and ``min`` at +inf (not the finite extremes: the maximum of a row of -inf, as a
    fully masked attention row has, must be -inf, and so must the maximum of nothing)."""
    if kind == "sum":
        return const(0, dtype)
    if kind == "prod":
        return const(1, dtype)
    if dt.is_float(dtype):
        return FloatImm(dtype=dtype, value=float("-inf") if kind == "max" else float("inf"))
    if kind == "max":
        return const(dt.min_value(dtype), dtype)
    return const(dt.max_value(dtype), dtype)


def combine(kind: str, lhs: PrimExpr, rhs: PrimExpr) -> PrimExpr:
    """The combiner of a ``kind`` reduction applied to the accumulator and a new value."""
    if kind == "sum":
        return lhs + rhs
    if kind == "prod":
        return lhs * rhs
    if kind == "max":
        return max_(lhs, rhs)
    return min_(lhs, rhs)


# ---------------------------------------------------------------------------------
# Access regions
# ---------------------------------------------------------------------------------


def _split_offset(e: PrimExpr) -> tuple[PrimExpr | None, int]:
    """``e`` as ``base + c`` with a constant ``c`` (base None for a constant)."""
    if isinstance(e, IntImm):
        return None, e.value
    if isinstance(e, Add):
        if isinstance(e.b, IntImm):
            base, c = _split_offset(e.a)
            return base, c + e.b.value
        if isinstance(e.a, IntImm):
            base, c = _split_offset(e.b)
            return base, c + e.a.value
    if isinstance(e, Sub) and isinstance(e.b, IntImm):
        base, c = _split_offset(e.a)
        return base, c - e.b.value
    return e, 0


class _FindLoad(Visitor):
    def __init__(self) -> None:
        self.found = False

    def visit_BufferLoad(self, n: BufferLoad) -> None:
        self.found = True


def _has_load(e: PrimExpr) -> bool:
    f = _FindLoad()
    f.visit(e)
    return f.found


def _dim_range(indices: list[PrimExpr], extent: PrimExpr) -> Range:
    first = indices[0]
    if any(_has_load(i) for i in indices):
        return Range(min=const(0, extent.dtype), extent=extent)
    if all(same_expr(first, i) for i in indices[1:]):
        return Range(min=first, extent=const(1, first.dtype))
    parts = [_split_offset(i) for i in indices]
    base = parts[0][0]
    if all((p[0] is None and base is None) or (p[0] is not None and base is not None
                                                  and same_expr(p[0], base)) for p in parts):
        lo = min(p[1] for p in parts)
        hi = max(p[1] for p in parts)
        dtype = first.dtype
        if base is None:
            start: PrimExpr = const(lo, dtype)
        elif lo == 0:
            start = base
        else:
            start = base + lo
        return Range(min=start, extent=const(hi - lo + 1, dtype))
    # Accesses that do not differ by a constant: cover the whole dimension (safe).
    return Range(min=const(0, extent.dtype), extent=extent)


class _AccessCollector(Visitor):
    def __init__(self) -> None:
        self.reads: dict[int, tuple[Buffer, list[tuple[PrimExpr, ...]]]] = {}
        self.writes: dict[int, tuple[Buffer, list[tuple[PrimExpr, ...]]]] = {}

    @staticmethod
    def _add(table: dict, buffer: Buffer, indices: tuple[PrimExpr, ...]) -> None:
        entry = table.setdefault(id(buffer), (buffer, []))
        entry[1].append(indices)

    def visit_BufferLoad(self, n: BufferLoad) -> None:
        self._add(self.reads, n.buffer, n.indices)
        self.visit(n.indices)

    def visit_BufferStore(self, n: BufferStore) -> None:
        self.visit(n.value)
        self.visit(n.indices)
        self._add(self.writes, n.buffer, n.indices)

    def visit_Block(self, n: Block) -> None:  # nested blocks report their own regions
        return None


def _regions(table: dict) -> tuple[BufferRegion, ...]:
    out = []
    for buffer, accesses in table.values():
        if buffer.ndim == 0:
            out.append(BufferRegion(buffer=buffer, region=()))
            continue
        region = tuple(_dim_range([acc[d] for acc in accesses], buffer.shape[d])
                       for d in range(buffer.ndim))
        out.append(BufferRegion(buffer=buffer, region=region))
    return tuple(out)


def block_access_regions(body: Stmt, init: Stmt | None = None
                         ) -> tuple[tuple[BufferRegion, ...], tuple[BufferRegion, ...]]:
    """Read and write regions of a block body, in order of first access. Buffers written
    by a reduction block (one with ``init``) are left out of its reads, as TVM does."""
    c = _AccessCollector()
    c.visit(body)
    if init is not None:
        c.visit(init)
        for key in list(c.reads):
            if key in c.writes:
                del c.reads[key]
    return _regions(c.reads), _regions(c.writes)


# ---------------------------------------------------------------------------------
# create_prim_func
# ---------------------------------------------------------------------------------


class _Builder:
    def __init__(self, args: Sequence[Any]):
        self.args = list(args)
        self.tensors: list[Tensor] = []
        for a in self.args:
            if isinstance(a, Tensor):
                if any(a is t for t in self.tensors):
                    raise IRTypeError(f"create_prim_func: tensor {a.name} is listed twice")
                self.tensors.append(a)
            elif not isinstance(a, Var):
                raise IRTypeError("create_prim_func takes te tensors (and scalar te.var "
                                  f"parameters), got {type(a).__name__}")
        self.buffer_names = NameSupply()
        self.block_names = NameSupply()
        self.buffers: dict[int, Buffer] = {}  # id(te tensor buffer) -> function buffer
        self.alloc: list[Buffer] = []
        self.layout_free: set[int] = set()

    def is_arg(self, t: Tensor) -> bool:
        return any(t is a for a in self.tensors)

    def declare(self, t: Tensor) -> Buffer:
        name = self.buffer_names.fresh(t.name)
        buf = Buffer(name=name, shape=t.buffer.shape, dtype=t.dtype,
                     data=Var(name=name, dtype="handle"))
        self.buffers[id(t.buffer)] = buf
        if not self.is_arg(t):
            self.alloc.append(buf)
        return buf

    def build(self) -> PrimFunc:
        ops = post_dfs_ops(self.tensors)
        stmts: list[Stmt] = []
        for op in ops:
            t = op.output(0)
            if isinstance(op, PlaceholderOp):
                if not self.is_arg(t):
                    raise IRTypeError(
                        f"create_prim_func: placeholder {op.name} is read but not passed as "
                        "an argument; add it to the tensor list")
                self.declare(t)
            elif isinstance(op, ComputeOp):
                stmts.append(self.stage(op))
            else:  # pragma: no cover - only two operation kinds exist
                raise IRTypeError(f"create_prim_func: unsupported operation {op!r}")
        params: list[Var] = []
        buffer_map: dict[Var, Buffer] = {}
        for a in self.args:
            if isinstance(a, Var):
                params.append(a)
                continue
            buf = self.buffers[id(a.buffer)]
            p = Var(name=buf.name, dtype="handle")
            params.append(p)
            buffer_map[p] = buf
        root = Block(name="root", iter_vars=(), reads=(), writes=(), body=seq(*stmts),
                     alloc_buffers=tuple(self.alloc))
        body = BlockRealize(iter_values=(), predicate=const(True), block=root)
        attrs: dict[str, Any] = {"global_symbol": "main", "tir.noalias": True}
        if self.layout_free:
            attrs["layout_free_buffers"] = sorted(self.layout_free)
        return PrimFunc(params=tuple(params), buffer_map=buffer_map, body=body, attrs=attrs)

    def annotations(self, op: ComputeOp) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in op.attrs.items():
            if key in _DROPPED_ATTRS:
                continue
            if key in LAYOUT_FREE_KEYS:
                rest = []
                for v in value if isinstance(value, (list, tuple)) else [value]:
                    if isinstance(v, Tensor) and self.is_arg(v):
                        self.layout_free.add(next(i for i, a in enumerate(self.args) if a is v))
                    elif isinstance(v, Tensor) and id(v.buffer) in self.buffers:
                        rest.append(self.buffers[id(v.buffer)])
                if rest:
                    out["layout_free_placeholders"] = rest
                continue
            out[key] = self._annotation_value(value)
        return out

    def _annotation_value(self, v: Any) -> Any:
        if isinstance(v, Tensor):
            return self.buffers.get(id(v.buffer), v.buffer)
        if isinstance(v, (list, tuple)):
            return [self._annotation_value(x) for x in v]
        return v

    def stage(self, op: ComputeOp) -> Stmt:
        # A reduction over an empty domain (a matmul whose inner dimension is 0) is its
        # start value at every output element: a block with no reduction loops. Kept as
        # a reduction, its ``init`` would sit inside a loop that never runs, leaving the
        # output unwritten.
        empty = isinstance(op.body, Reduce) and any(
            type(ax.dom.extent) is IntImm and ax.dom.extent.value == 0
            for ax in op.reduce_axis)
        axes = list(op.axis) + ([] if empty else list(op.reduce_axis))
        te_vars = {id(a.var) for a in axes}
        for ax in axes:
            for e in (ax.dom.min, ax.dom.extent):
                if _uses(e, te_vars):
                    raise IRTypeError(
                        f"te.compute {op.name!r}: the range of axis {ax.var.name} depends on "
                        "another axis; irc supports rectangular iteration domains only "
                        "(use a constant range with where= instead)")
        out_buf = self.declare(op.output(0))
        var_map: dict[int, PrimExpr] = {}
        loop_vars: list[Var] = []
        block_iters: list[IterVar] = []
        for ax in axes:
            dtype = ax.var.dtype
            loop_v = Var(name=ax.var.name, dtype=dtype)
            block_v = Var(name=f"v_{ax.var.name}", dtype=dtype)
            dom = Range(min=_as_dtype(ax.dom.min, dtype), extent=_as_dtype(ax.dom.extent, dtype))
            loop_vars.append(loop_v)
            block_iters.append(IterVar(var=block_v, dom=dom, iter_type=ax.iter_type))
            var_map[id(ax.var)] = block_v
        sub = Substitute(var_map, self.buffers)
        store_idx = tuple(bi.var for bi, ax in zip(block_iters, axes)
                          if ax.iter_type != "reduce")
        bindings: list[PrimExpr] = list(loop_vars)
        if not block_iters:
            # A 0-d stage still gets one (unit) block variable, as in TVM.
            block_iters.append(IterVar(var=Var(name="vi", dtype="int32"),
                                       dom=Range(min=const(0), extent=const(1))))
            bindings.append(const(0))
        init: Stmt | None = None
        body_expr = op.body
        if empty:
            start = (reduction_identity(body_expr.kind, body_expr.dtype)
                     if body_expr.init is None else sub.visit(body_expr.init))
            body: Stmt = BufferStore(buffer=out_buf, value=start, indices=store_idx)
        elif isinstance(body_expr, Reduce):
            source = sub.visit(body_expr.source)
            start = (reduction_identity(body_expr.kind, body_expr.dtype)
                     if body_expr.init is None else sub.visit(body_expr.init))
            if body_expr.condition is not None:
                cond = sub.visit(body_expr.condition)
                # Lazily: masked-out elements (e.g. past the end of a window) are not read.
                source = if_then_else(cond, source,
                                      reduction_identity(body_expr.kind, source.dtype))
            acc = BufferLoad(dtype=out_buf.dtype, buffer=out_buf, indices=store_idx)
            init = BufferStore(buffer=out_buf, value=start, indices=store_idx)
            body = BufferStore(buffer=out_buf, indices=store_idx,
                               value=combine(body_expr.kind, acc, source))
        else:
            body = BufferStore(buffer=out_buf, value=sub.visit(body_expr), indices=store_idx)
        reads, writes = block_access_regions(body, init)
        block = Block(name=self.block_names.fresh(op.name), iter_vars=tuple(block_iters),
                      reads=reads, writes=writes, body=body, init=init,
                      annotations=self.annotations(op))
        stmt: Stmt = BlockRealize(iter_values=tuple(bindings), predicate=const(True),
                                  block=block)
        for v, bi in reversed(list(zip(loop_vars, block_iters))):
            stmt = For(loop_var=v, min=bi.dom.min, extent=bi.dom.extent, kind="serial",
                       body=stmt)
        return stmt


class _FindVars(Visitor):
    def __init__(self, var_ids: set[int]) -> None:
        self.var_ids = var_ids
        self.hit = False

    def visit_Var(self, v: Var) -> None:
        if id(v) in self.var_ids:
            self.hit = True


def _uses(e: PrimExpr, var_ids: set[int]) -> bool:
    f = _FindVars(var_ids)
    f.visit(e)
    return f.hit


def _as_dtype(e: PrimExpr, dtype: str) -> PrimExpr:
    if e.dtype == dtype:
        return e
    if isinstance(e, IntImm):
        return const(e.value, dtype)
    return e.astype(dtype)


def create_prim_func(tensors: Sequence[Any], index_dtype_override: str | None = None
                     ) -> PrimFunc:
    """A block-form PrimFunc computing the given te tensors.

    ``tensors`` lists the parameters in order: placeholders and outputs (any tensor listed
    becomes a parameter; the others are allocated inside), plus optional scalar
    ``te.var`` parameters. ``index_dtype_override="int64"`` rewrites every index (loop
    variables, shapes, indices) to int64, as graph-level legalization needs.
    """
    func = _Builder(tensors).build()
    if index_dtype_override is not None:
        func = normalize_index_dtype(func, index_dtype_override)
    return func

"""Computations that read or write tensors at run-time indices, and scans.

Two kinds:

- te computations (``gather_elements``, ``gather_nd``, ``one_hot``, ``trilu``,
  ``eye_like``, ``reverse_sequence``): every output element is a function of the inputs,
  so they are ordinary stages that schedules and fusion handle;
- loop kernels (``scatter_elements``, ``scatter_nd``, ``topk``, ``scan``): results built
  by ordered updates, written as loop IR over buffers. Each takes its input and output
  :class:`~irc.tir.buffer.Buffer` objects and returns the body statement; ``loop_func``
  makes the PrimFunc (block form: one opaque root block), marked scheduled and opaque
  so default schedules and fusion leave the loops as written.

Index values are read at run time; a negative index counts from the end of its axis
(once: ``[-extent, extent)`` is the valid range, as ONNX and numpy define it). Scatters
check every index and fail the call naming the index and the extent; gathers read
through indices that :func:`check_indices` / :func:`check_index_tuples` have checked and
normalized (the legalization puts that kernel before them), and clamp as well, so a read
stays in bounds whatever reaches them.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ...core import dtype as dt
from ...core.diagnostics import IRTypeError
from ...core.functor import collect
from ..buffer import Buffer
from ..expr import (
    BufferLoad,
    IntImm,
    PrimExpr,
    Var,
    cast,
    const,
    floordiv,
    floormod,
    max_,
    min_,
    select,
)
from ..intrin import error_values
from ..stmt import (
    AssertStmt,
    Block,
    BlockRealize,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    Stmt,
    no_op,
    seq,
)
from ..te.tensor import Tensor, compute
from ..transform.launch_serial_loops import SERIAL_KERNEL_ATTR
from .utils import INJECTIVE, axis_names, normalize_axis

IDX = "int64"
# The graph-level pattern of loop kernels (irc.ir.op.OPAQUE): never fused.
_OPAQUE = 8


def _i64(e: Any) -> PrimExpr:
    if isinstance(e, int):
        return const(e, IDX)
    if isinstance(e, IntImm):
        return const(int(e.value), IDX)
    return e if e.dtype == IDX else cast(e, IDX)


def _wrap(i: PrimExpr, dim: PrimExpr) -> PrimExpr:
    """A run-time index with negative values counted from the end of an axis of ``dim``."""
    i, dim = _i64(i), _i64(dim)
    return select(i < const(0, IDX), i + dim, i)


def _clamped(i: PrimExpr, dim: PrimExpr) -> PrimExpr:
    """:func:`_wrap`, then clamped into ``[0, dim)`` so the read stays in bounds."""
    dim = _i64(dim)
    return min_(max_(_wrap(i, dim), const(0, IDX)), dim - const(1, IDX))


def _stage(shape: Sequence[Any], fn: Callable[..., PrimExpr], name: str) -> Tensor:
    return compute(tuple(_i64(s) for s in shape), fn, name=name, tag=INJECTIVE,
                   axis_names=axis_names(len(shape)))


# ---------------------------------------------------------------------------------
# te computations
# ---------------------------------------------------------------------------------


def gather_elements(data: Tensor, indices: Tensor, axis: int = 0) -> Tensor:
    """``out[i] = data[i with i[axis] = indices[i]]`` (ONNX GatherElements)."""
    ax = normalize_axis(axis, data.ndim)
    if indices.ndim != data.ndim:
        raise IRTypeError(f"topi.gather_elements: data has rank {data.ndim}, indices "
                          f"{indices.ndim}")

    def fn(*i: PrimExpr) -> PrimExpr:
        src = list(i)
        src[ax] = _clamped(indices[i], data.shape[ax])
        return data[tuple(src)]

    return _stage(indices.shape, fn, "T_gather_elements")


def gather_nd(data: Tensor, indices: Tensor, batch_dims: int = 0) -> Tensor:
    """Slices of ``data`` at the index tuples along the last axis of ``indices`` (ONNX
    GatherND): ``out[b, i, rest] = data[b, indices[b, i, :], rest]``."""
    b = int(batch_dims)
    last = indices.shape[-1]
    if not isinstance(last, IntImm):
        raise IRTypeError("topi.gather_nd: the last dimension of indices must be constant")
    m = int(last.value)
    q = indices.ndim
    shape = [*indices.shape[:-1], *data.shape[b + m:]]

    def fn(*o: PrimExpr) -> PrimExpr:
        head = o[:q - 1]
        src = list(o[:b])
        for j in range(m):
            src.append(_clamped(indices[(*head, const(j, IDX))], data.shape[b + j]))
        src.extend(o[q - 1:])
        return data[tuple(src)]

    return _stage(shape, fn, "T_gather_nd")


def one_hot(indices: Tensor, values: Tensor, depth: int, axis: int = -1) -> Tensor:
    """``values[1]`` where the position on the new axis ``axis`` equals the index
    (negative indices count from ``depth``; others match nothing), else ``values[0]``."""
    n = indices.ndim + 1
    ax = normalize_axis(axis, n)
    shape = [*indices.shape[:ax], depth, *indices.shape[ax:]]
    off, on = values[const(0, IDX)], values[const(1, IDX)]

    def fn(*o: PrimExpr) -> PrimExpr:
        raw = indices[tuple(o[:ax] + o[ax + 1:])]
        if dt.is_float(raw.dtype):
            raw = cast(raw, IDX)  # ONNX casts non-integer indices to integers
        return select(_wrap(raw, depth) == _i64(o[ax]), on, off)

    return _stage(shape, fn, "T_one_hot")


def trilu(x: Tensor, k: Tensor, upper: bool = True) -> Tensor:
    """``x`` on and above (``upper``) or on and below diagonal ``k[()]`` of its last two
    axes, zero elsewhere."""
    zero = const(0, x.dtype) if not dt.is_bool(x.dtype) else const(False, "bool")

    def fn(*i: PrimExpr) -> PrimExpr:
        diag = _i64(i[-1]) - _i64(i[-2])
        kk = _i64(k[()])
        keep = diag >= kk if upper else diag <= kk
        return select(keep, x[i], zero)

    return _stage(x.shape, fn, "T_trilu")


def eye_like(x: Tensor, dtype: str, k: int = 0) -> Tensor:
    """Ones on diagonal ``k`` of a 2-d tensor shaped like ``x``, zeros elsewhere."""
    one = const(True, "bool") if dt.is_bool(dtype) else const(1, dtype)
    zero = const(False, "bool") if dt.is_bool(dtype) else const(0, dtype)

    def fn(i: PrimExpr, j: PrimExpr) -> PrimExpr:
        return select(_i64(j) - _i64(i) == const(k, IDX), one, zero)

    return _stage(x.shape, fn, "T_eye_like")


def reverse_sequence(x: Tensor, seq_lengths: Tensor, batch_axis: int = 1,
                     time_axis: int = 0) -> Tensor:
    """Along ``time_axis``, the first ``seq_lengths[b]`` elements of each batch entry
    ``b`` reversed, the others kept."""
    ba, ta = normalize_axis(batch_axis, x.ndim), normalize_axis(time_axis, x.ndim)
    steps = _i64(x.shape[ta])

    def fn(*i: PrimExpr) -> PrimExpr:
        n = min_(max_(_i64(seq_lengths[i[ba]]), const(0, IDX)), steps)
        t = _i64(i[ta])
        src = list(i)
        src[ta] = select(t < n, n - const(1, IDX) - t, t)
        return x[tuple(src)]

    return _stage(x.shape, fn, "T_reverse_sequence")


# ---------------------------------------------------------------------------------
# loop kernels
# ---------------------------------------------------------------------------------


def loop_func(params: Sequence[Buffer], body: Stmt, scalars: Sequence[Var] = ()) -> PrimFunc:
    """A PrimFunc over ``params`` (inputs, then outputs) running ``body`` in an opaque
    root block, marked so default schedules and fusion keep it as written (and so a GPU
    build runs it in one thread: ``LaunchSerialLoops``). The ``local`` cells the body
    uses (:func:`cell`) are allocated in that block. ``scalars``, passed after the
    buffers, are shape variables no buffer's shape binds by itself (``n`` of a buffer of
    ``n * 3`` elements)."""
    handles = tuple(Var(name=b.name, dtype="handle") for b in params)
    cells: dict[int, Buffer] = {}
    for n in collect(body, lambda n: isinstance(n, (BufferLoad, BufferStore))):
        if n.buffer.scope == "local":
            cells.setdefault(id(n.buffer), n.buffer)
    root = Block(name="root", iter_vars=(), reads=(), writes=(), body=body,
                 alloc_buffers=tuple(cells.values()))
    return PrimFunc(params=handles + tuple(scalars), buffer_map=dict(zip(handles, params)),
                    body=BlockRealize(iter_values=(), predicate=const(True), block=root),
                    attrs={"tir.noalias": True, "tir.is_scheduled": True,
                           "op_pattern": _OPAQUE, SERIAL_KERNEL_ATTR: True})


def buffer(shape: Sequence[Any], dtype: str, name: str) -> Buffer:
    """A parameter buffer with int64 dimensions."""
    return Buffer(name=name, shape=tuple(_i64(s) for s in shape), dtype=dt.check(dtype),
                  data=Var(name=name, dtype="handle"))


def cell(name: str, dtype: str = IDX) -> Buffer:
    """A one-element ``local`` buffer: a mutable scalar of a loop kernel (counters,
    flags), allocated by :func:`loop_func`."""
    return Buffer(name=name, shape=(const(1, IDX),), dtype=dt.check(dtype),
                  data=Var(name=name, dtype="handle"), scope="local")


def let(name: str, value: PrimExpr, body: Callable[[Var], Stmt]) -> Stmt:
    """``name = value`` for ``body(name)``: a ``LetStmt`` (the value read once)."""
    v = Var(name=name, dtype=value.dtype)
    return LetStmt(var=v, value=value, body=body(v))


def store(buf: Buffer, value: PrimExpr, *index: PrimExpr) -> Stmt:
    """``buf[index] = value``; a :func:`cell` (or a 0-d buffer) without an index."""
    if not index and len(buf.shape) == 1:
        index = (const(0, IDX),)
    return BufferStore(buffer=buf, value=value, indices=tuple(index))


def serial_range(name: str, start: PrimExpr, stop: PrimExpr,
                 body: Callable[[PrimExpr], Stmt]) -> Stmt:
    """``for v in range(start, stop): body(v)``, serial; an empty range (``stop <=
    start``) runs nothing."""
    v = Var(name=name, dtype=IDX)
    return For(loop_var=v, min=const(0, IDX), extent=max_(_i64(stop) - _i64(start),
                                                           const(0, IDX)),
               kind="serial", body=body(v + _i64(start)))


def loop_nest(extents: Sequence[Any], body: Callable[[list[Var]], Stmt],
              prefix: str = "i", parallel: bool = False) -> Stmt:
    """Loops over ``extents`` (outermost first) around ``body(loop_vars)``; serial, or
    with the outermost one ``parallel`` (iterations that touch disjoint elements)."""
    vars_ = [Var(name=f"{prefix}{k}", dtype=IDX) for k in range(len(extents))]
    stmt = body(vars_)
    for d in range(len(vars_) - 1, -1, -1):
        kind = "parallel" if parallel and d == 0 else "serial"
        stmt = For(loop_var=vars_[d], min=const(0, IDX), extent=_i64(extents[d]), kind=kind,
                   body=stmt)
    return stmt


def _copy(src: Buffer, dst: Buffer) -> Stmt:
    return loop_nest(src.shape, lambda i: BufferStore(buffer=dst, value=src[tuple(i)],
                                                      indices=tuple(i)), "c", parallel=True)


def _combine(reduction: str, old: PrimExpr, new: PrimExpr) -> PrimExpr:
    if reduction == "none":
        return new
    if reduction == "add":
        return old + new if not dt.is_bool(old.dtype) else old | new
    if reduction == "mul":
        return old * new if not dt.is_bool(old.dtype) else old & new
    if reduction == "max":
        return max_(old, new)
    if reduction == "min":
        return min_(old, new)
    raise IRTypeError(f"unknown scatter reduction {reduction!r}")


def checked_index(raw: PrimExpr, dim: PrimExpr, what: str, axis: str,
                  body: Callable[[Var], Stmt]) -> Stmt:
    """Bind the wrapped index ``raw`` to a variable, fail the call naming ``what``, the
    index, ``axis`` and the extent when it is outside ``[-dim, dim)``, then run
    ``body(var)``. The failing branch records the index and the extent
    (``error_values``) for the message; the test costs one compare in the loop."""
    v = Var(name="pos", dtype=IDX)
    dim = _i64(dim)
    label = what.replace("{", "{{").replace("}", "}}")
    message = (f"{label}: index {{0}} is out of range for {axis} of extent {{1}} "
               f"(valid indices are -{{1}} to {{2}})")
    fail = seq(Evaluate(value=error_values(_i64(raw), dim, dim - const(1, IDX))),
               AssertStmt(condition=const(False), message=message, body=no_op()))
    bad = (v < const(0, IDX)) | (v >= dim)
    return LetStmt(var=v, value=_wrap(raw, dim),
                   body=seq(IfThenElse(condition=bad, then_case=fail), body(v)))


def check_in_range(values: Buffer, out: Buffer, lo: Any, hi: Any, what: str,
                   noun: str) -> Stmt:
    """``out`` (int64) = ``values``, failing the call at the first value outside
    ``[lo, hi]`` (expressions of the buffers' shapes), naming ``what``, ``noun`` (the
    kind of value: "sequence length", "batch index"), the value and the range."""
    lo, hi = _i64(lo), _i64(hi)
    label = what.replace("{", "{{").replace("}", "}}")
    message = f"{label}: {noun} {{0}} is out of range [{{1}}, {{2}}]"

    def step(i: list[Var]) -> Stmt:
        v = Var(name="value", dtype=IDX)
        fail = seq(Evaluate(value=error_values(v, lo, hi)),
                   AssertStmt(condition=const(False), message=message, body=no_op()))
        return LetStmt(var=v, value=_i64(values[tuple(i)]), body=seq(
            IfThenElse(condition=(v < lo) | (v > hi), then_case=fail),
            BufferStore(buffer=out, value=v, indices=tuple(i))))

    return loop_nest(values.shape, step)


def check_indices(data: Buffer, indices: Buffer, out: Buffer, axis: int | None,
                  what: str) -> Stmt:
    """``out`` (int64) = ``indices`` with negative entries counted from the end of
    ``data``'s axis ``axis`` (of the flattened ``data`` when None), failing the call at the
    first index outside ``[-extent, extent)``: the check before a gather."""
    if axis is None:
        extent: PrimExpr = const(1, IDX)
        for d in data.shape:
            extent = extent * _i64(d)
        where = "the flattened data"
    else:
        extent = _i64(data.shape[normalize_axis(axis, data.ndim)])
        where = f"axis {normalize_axis(axis, data.ndim)}"

    def step(i: list[Var]) -> Stmt:
        return checked_index(indices[tuple(i)], extent, what, where,
                             lambda v: BufferStore(buffer=out, value=v, indices=tuple(i)))

    return loop_nest(indices.shape, step)


def check_index_tuples(data: Buffer, indices: Buffer, out: Buffer, batch_dims: int,
                       what: str) -> Stmt:
    """:func:`check_indices` for GatherND's index tuples: entry ``j`` of the last axis of
    ``indices`` addresses axis ``batch_dims + j`` of ``data``."""
    last = indices.shape[-1]
    if not isinstance(last, IntImm):
        raise IRTypeError("topi.check_index_tuples: the last dimension of indices must be "
                          "constant")
    m = int(last.value)

    def step(head: list[Var]) -> Stmt:
        parts = []
        for j in range(m):
            at = (*head, const(j, IDX))
            parts.append(checked_index(
                indices[at], data.shape[batch_dims + j], what, f"axis {batch_dims + j}",
                lambda v, at=at: BufferStore(buffer=out, value=v, indices=at)))
        return seq(*parts)

    return loop_nest(indices.shape[:-1], step)


def scatter_elements(data: Buffer, indices: Buffer, updates: Buffer, out: Buffer,
                     axis: int = 0, reduction: str = "none",
                     what: str = "scatter_elements") -> Stmt:
    """``out`` = ``data``, then for every position ``i`` of ``indices`` in row-major order
    ``out[i with i[axis] = indices[i]]`` = ``updates[i]`` (combined by ``reduction``)."""
    ax = normalize_axis(axis, data.ndim)

    def update(i: list[Var]) -> Stmt:
        def store(pos: Var) -> Stmt:
            dst = list(i)
            dst[ax] = pos
            value = _combine(reduction, out[tuple(dst)], updates[tuple(i)])
            return BufferStore(buffer=out, value=value, indices=tuple(dst))
        return checked_index(indices[tuple(i)], data.shape[ax], what, f"axis {ax}", store)

    return seq(_copy(data, out), loop_nest(indices.shape, update))


def scatter_nd(data: Buffer, indices: Buffer, updates: Buffer, out: Buffer,
               reduction: str = "none", what: str = "scatter_nd") -> Stmt:
    """``out`` = ``data``, then for every index tuple (the last axis of ``indices``) in
    row-major order the slice it addresses = the matching slice of ``updates``
    (combined by ``reduction``)."""
    last = indices.shape[-1]
    if not isinstance(last, IntImm):
        raise IRTypeError("topi.scatter_nd: the last dimension of indices must be constant")
    m = int(last.value)
    heads = indices.shape[:-1]
    rest = data.shape[m:]

    def update(h: list[Var]) -> Stmt:
        def with_positions(done: list[Var]) -> Stmt:
            j = len(done)
            if j < m:
                raw = indices[(*h, const(j, IDX))]
                return checked_index(raw, data.shape[j], what, f"axis {j}",
                                     lambda p: with_positions([*done, p]))

            def store(r: list[Var]) -> Stmt:
                dst = (*done, *r)
                value = _combine(reduction, out[dst], updates[(*h, *r)])
                return BufferStore(buffer=out, value=value, indices=dst)
            return loop_nest(rest, store, "r")
        return with_positions([])

    return seq(_copy(data, out), loop_nest(heads, update))


def topk(x: Buffer, values: Buffer, indices: Buffer, axis: int = -1,
         largest: bool = True, what: str = "topk") -> Stmt:
    """The ``k`` largest (smallest) elements along ``axis`` and their int64 positions,
    best first, equal values in index order; ``k`` is the size of the outputs' ``axis``.

    Per row, an insertion into the sorted output: element ``i`` moves every kept entry it
    beats one place down (the last falls off) and takes the place of the first one. Each
    output position ``j`` decides from the old entries ``j - 1`` and ``j`` alone, so the
    positions are updated from the last to the first in place. O(n * k) per row."""
    ax = normalize_axis(axis, x.ndim)
    n = _i64(x.shape[ax])
    outer = [s for d, s in enumerate(x.shape) if d != ax]
    kk = _i64(values.shape[ax])
    # k is known only at run time in general: more than the axis holds would leave
    # output entries unwritten.
    too_many = seq(Evaluate(value=error_values(kk, n)), AssertStmt(
        condition=const(False), message=f"{what}: k {{0}} exceeds the size {{1}} of axis "
                                        f"{ax}", body=no_op()))
    check = IfThenElse(condition=kk > n, then_case=too_many)

    def row(o: list[Var]) -> Stmt:
        def at(buf: Buffer, pos: PrimExpr) -> tuple[PrimExpr, ...]:
            return (*o[:ax], pos, *o[ax:])

        def step(iv: list[Var]) -> Stmt:
            i, t = iv
            j = kk - const(1, IDX) - t
            v = x[at(x, i)]

            def beats(other: PrimExpr) -> PrimExpr:
                return v > other if largest else v < other

            prev = max_(j - const(1, IDX), const(0, IDX))
            shift = seq(BufferStore(buffer=values, value=values[at(values, prev)],
                                    indices=at(values, j)),
                        BufferStore(buffer=indices, value=indices[at(indices, prev)],
                                    indices=at(indices, j)))
            place = seq(BufferStore(buffer=values, value=v, indices=at(values, j)),
                        BufferStore(buffer=indices, value=i, indices=at(indices, j)))
            decide = IfThenElse(
                condition=(j > const(0, IDX)) & beats(values[at(values, prev)]),
                then_case=shift,
                else_case=IfThenElse(condition=(j == i) | beats(values[at(values, j)]),
                                     then_case=place))
            return IfThenElse(condition=j <= i, then_case=decide)

        return loop_nest([n, kk], step, "s")

    return seq(check, loop_nest(outer, row, "o", parallel=True))


def _scan_identity(kind: str, dtype: str) -> PrimExpr:
    if kind not in ("sum", "prod"):
        raise IRTypeError(f"topi.scan: kind must be 'sum' or 'prod', got {kind!r}")
    if dt.is_bool(dtype):
        return const(kind == "prod", "bool")
    return const(0 if kind == "sum" else 1, dtype)


def _scan_row(x: Buffer, out: Buffer, kind: str, n: PrimExpr, exclusive: bool,
              reverse: bool, at: Callable[[PrimExpr], tuple[PrimExpr, ...]]) -> Stmt:
    """One row of a scan: ``at(p)`` gives the indices of element ``p`` of the row. The
    running value is ``out``'s, of its dtype (each element of ``x`` read into it)."""
    identity = _scan_identity(kind, out.dtype)
    one = const(1, IDX)

    def step(jv: list[Var]) -> Stmt:
        (j,) = jv
        p = n - one - j if reverse else j
        q = p + one if reverse else p - one
        first = identity if exclusive else cast(x[at(p)], out.dtype)
        item = cast(x[at(q)] if exclusive else x[at(p)], out.dtype)
        rest = _combine("add" if kind == "sum" else "mul", out[at(q)], item)
        return IfThenElse(condition=j == const(0, IDX),
                          then_case=BufferStore(buffer=out, value=first, indices=at(p)),
                          else_case=BufferStore(buffer=out, value=rest, indices=at(p)))

    return loop_nest([n], step, "j")


def scan(x: Buffer, out: Buffer, kind: str, axis: int = 0, exclusive: bool = False,
         reverse: bool = False) -> Stmt:
    """Running sums (``kind="sum"``) or products (``"prod"``) along ``axis``; exclusive
    scans leave the element itself out, reverse ones run from the end. The running value
    has ``out``'s dtype, which may be wider than ``x``'s (an accumulator: the
    legalization scans floats narrower than 32 bits into float32, then rounds)."""
    ax = normalize_axis(axis, x.ndim)
    n = _i64(x.shape[ax])
    outer = [s for d, s in enumerate(x.shape) if d != ax]

    def row(o: list[Var]) -> Stmt:
        return _scan_row(x, out, kind, n, exclusive, reverse,
                         lambda p: (*o[:ax], p, *o[ax:]))

    return loop_nest(outer, row, "o", parallel=True)


def scan_runtime_axis(x: Buffer, axis: Buffer, out: Buffer, kind: str,
                      exclusive: bool = False, reverse: bool = False) -> Stmt:
    """:func:`scan` along the axis held by the 0-d tensor ``axis`` (read at run time;
    negative counts from the end; out of range fails the call). Rows are walked by flat
    position: ``rows = size / n`` rows of ``n`` elements ``stride`` apart."""
    r = x.ndim
    dims = [_i64(d) for d in x.shape]
    one, zero = const(1, IDX), const(0, IDX)
    a = Var(name="axis", dtype=IDX)
    n_var = Var(name="n", dtype=IDX)
    stride_var = Var(name="stride", dtype=IDX)
    n_expr: PrimExpr = dims[-1]
    stride_expr: PrimExpr = one
    inner: PrimExpr = one
    for d in range(r - 1, -1, -1):
        n_expr = select(a == const(d, IDX), dims[d], n_expr)
        stride_expr = select(a == const(d, IDX), inner, stride_expr)
        inner = inner * dims[d]
    size = inner

    def unravel(flat: PrimExpr) -> tuple[PrimExpr, ...]:
        out_idx: list[PrimExpr] = []
        rest = flat
        for d in range(r - 1, -1, -1):
            out_idx.append(floormod(rest, dims[d]) if d else rest)
            rest = floordiv(rest, dims[d])
        return tuple(reversed(out_idx))

    def row(ov: list[Var]) -> Stmt:
        (o,) = ov
        base = floordiv(o, stride_var) * (n_var * stride_var) + floormod(o, stride_var)
        return _scan_row(x, out, kind, n_var, exclusive, reverse,
                         lambda p: unravel(base + p * stride_var))

    rows = floordiv(size, max_(n_var, one))
    body = loop_nest([rows], row, "o", parallel=True)
    checked = AssertStmt(condition=(a >= zero) & (a < const(r, IDX)),
                         message="cumulative scan: axis is out of range", body=seq(
                             LetStmt(var=n_var, value=n_expr, body=LetStmt(
                                 var=stride_var, value=stride_expr, body=body))))
    raw = _i64(axis[tuple(const(0, IDX) for _ in axis.shape)])
    return LetStmt(var=a, value=select(raw < zero, raw + const(r, IDX), raw), body=checked)


__all__ = [
    "gather_elements", "gather_nd", "one_hot", "trilu", "eye_like", "reverse_sequence",
    "loop_func", "buffer", "cell", "let", "store", "serial_range", "loop_nest",
    "scatter_elements", "scatter_nd", "topk", "scan",
    "scan_runtime_axis",
]

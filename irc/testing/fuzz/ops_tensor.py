"""Builders of the shape, layout and indexing operators (see ``spec``): reshapes and
transposes, slices, concatenation and splits, padding in every mode, gathers and
scatters with indices within range, and the operators that make tensors from shapes."""

from __future__ import annotations

import numpy as np

from ...tir.schedule.sampling import prime_factors
from . import spec
from .builder import ABSENT, GraphBuilder, Value, helper_dtype
from .spec import Reject
from .values import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, np_dtype

ANY_DTYPE = ALL_DTYPES
INDEX = ("int64", "int32")


def _pick_any(g: GraphBuilder, min_rank: int = 0, max_rank: int = 6, accept=None) -> Value:
    return g.pick_of(ANY_DTYPE, min_rank, max_rank, accept)


def _factor(g: GraphBuilder, n: int, rank: int) -> list[int]:
    """``rank`` positive integers whose product is ``n``."""
    dims = [1] * rank
    for q in prime_factors(n):
        dims[int(g.rng.integers(rank))] *= q
    return dims


@spec.register("Reshape", "shape", since=5, dtypes=ANY_DTYPE)
def _reshape(g: GraphBuilder) -> None:
    x = _pick_any(g, accept=lambda v: v.size > 0)
    rank = int(g.rng.integers(0 if x.size == 1 else 1, 5))
    dims = _factor(g, x.size, rank) if rank else []
    target = list(dims)
    if target and g.coin(0.4):
        target[int(g.rng.integers(len(target)))] = -1
    for i in range(min(len(target), x.rank)):
        if target[i] == x.shape[i] and target[i] > 0 and g.coin(0.2):
            target[i] = 0  # copy the input's extent (allowzero=0)
    if not target:
        shape_in = g.const(np.zeros((0,), np.int64))
    elif any(s <= 0 for s in target):
        shape_in = g.const(np.array(target, np.int64))
    else:
        shape_in = g.shape_input(target, like=x)
    g.node("Reshape", [x, shape_in])


@spec.register("Flatten", "shape", dtypes=ANY_DTYPE)
def _flatten(g: GraphBuilder) -> None:
    x = _pick_any(g)
    g.node("Flatten", [x], axis=int(g.rng.integers(-x.rank, x.rank + 1)))


@spec.register("Transpose", "shape", dtypes=ANY_DTYPE)
def _transpose(g: GraphBuilder) -> None:
    x = _pick_any(g, min_rank=1)
    perm = g.rng.permutation(x.rank).tolist() if g.coin(0.8) else None
    g.node("Transpose", [x], perm=perm)


@spec.register("Squeeze", "shape", since=13, dtypes=ANY_DTYPE)
def _squeeze(g: GraphBuilder) -> None:
    x = _pick_any(g, min_rank=1, accept=lambda v: 1 in v.shape)
    ones = [i for i, s in enumerate(x.shape) if s == 1]
    if g.coin(0.25):
        g.node("Squeeze", [x])
        return
    axes = sorted(g.rng.choice(ones, size=int(g.rng.integers(1, len(ones) + 1)),
                               replace=False).tolist())
    axes = [a - x.rank if g.coin(0.4) else a for a in axes]
    g.node("Squeeze", [x, g.const(np.array(axes, np.int64))])


@spec.register("Unsqueeze", "shape", since=13, dtypes=ANY_DTYPE)
def _unsqueeze(g: GraphBuilder) -> None:
    x = _pick_any(g, max_rank=4)
    n = int(g.rng.integers(1, 3))
    out_rank = x.rank + n
    axes = sorted(g.rng.choice(out_rank, size=n, replace=False).tolist())
    axes = [a - out_rank if g.coin(0.4) else a for a in axes]
    g.node("Unsqueeze", [x, g.const(np.array(axes, np.int64))])


@spec.register("Expand", "shape", since=8, dtypes=ANY_DTYPE)
def _expand(g: GraphBuilder) -> None:
    x = _pick_any(g, max_rank=4, accept=lambda v: v.size <= 512)
    dims = [s if s != 1 or g.coin(0.4) else int(g.choice((2, 3, 5))) for s in x.shape]
    dims = [1 if (s > 1 and g.coin(0.2)) else d for s, d in zip(x.shape, dims)]
    lead = [int(g.choice((1, 2, 3))) for _ in range(int(g.rng.integers(0, 2)))]
    target = lead + dims
    g.node("Expand", [x, g.shape_input(target, like=x)])


@spec.register("Tile", "shape", dtypes=ANY_DTYPE)
def _tile(g: GraphBuilder) -> None:
    x = _pick_any(g, min_rank=1, accept=lambda v: v.size <= 512)
    reps = [int(g.choice((1, 1, 2, 3))) for _ in range(x.rank)]
    g.node("Tile", [x, g.const(np.array(reps, np.int64))])


@spec.register("Concat", "shape", since=4, dtypes=ANY_DTYPE)
def _concat(g: GraphBuilder) -> None:
    x = _pick_any(g, min_rank=1)
    axis = int(g.rng.integers(x.rank))
    parts = [x]
    for _ in range(int(g.rng.integers(1, 3))):
        def same(v: Value) -> bool:
            return (v.dtype == x.dtype and v.rank == x.rank and v.static
                    and all(a == b for i, (a, b) in enumerate(zip(v.shape, x.shape))
                            if i != axis))

        def make() -> Value:
            shape = list(x.shape)
            shape[axis] = int(g.choice((1, 2, 3, 5)))
            return g.fresh(tuple(shape), x.dtype)

        parts.append(g.pick(same, make, p_fresh=0.5))
    g.rng.shuffle(parts)
    g.node("Concat", parts, axis=axis - x.rank if g.coin(0.4) else axis)


@spec.register("Split", "shape", since=13, dtypes=ANY_DTYPE)
def _split(g: GraphBuilder) -> None:
    x = _pick_any(g, min_rank=1, accept=lambda v: max(v.shape) >= 2)
    axes = [i for i, s in enumerate(x.shape) if s >= 2]
    axis = int(g.choice(axes))
    n = x.shape[axis]
    form = g.choice(("sizes", "equal", "num_outputs") if g.opset >= 18 else
                    ("sizes", "equal"))
    ax = axis - x.rank if g.coin(0.4) else axis
    if form == "sizes":
        k = int(g.rng.integers(2, min(n, 4) + 1))
        cuts = sorted(g.rng.choice(np.arange(1, n), size=k - 1, replace=False).tolist())
        sizes = np.diff([0] + cuts + [n]).tolist()
        g.node("Split", [x, g.const(np.array(sizes, np.int64))], n_out=k, axis=ax)
    elif form == "equal":
        ks = [k for k in (2, 3, 4) if n % k == 0]
        if not ks:
            raise Reject("no equal split")
        k = int(g.choice(ks))
        if g.opset >= 18:
            g.node("Split", [x], n_out=k, axis=ax, num_outputs=k)
        else:
            g.node("Split", [x], n_out=k, axis=ax)
    else:
        k = int(g.rng.integers(2, min(n, 4) + 1))
        if -(-n // k) * (k - 1) >= n:
            raise Reject("num_outputs leaves an empty part")
        g.node("Split", [x], n_out=k, axis=ax, num_outputs=k)


@spec.register("Slice", "shape", since=10, dtypes=ANY_DTYPE)
def _slice(g: GraphBuilder) -> None:
    x = _pick_any(g, min_rank=1)
    naxes = int(g.rng.integers(1, x.rank + 1))
    axes = sorted(g.rng.choice(x.rank, size=naxes, replace=False).tolist())
    starts, ends, steps = [], [], []
    for a in axes:
        n = x.shape[a]
        step = int(g.choice((1, 1, 1, 2, 3, -1, -2)))
        if step > 0:
            s = int(g.rng.integers(0, n))
            e = int(g.rng.integers(s + 1, n + 1))
            e = e if not g.coin(0.15) else n + int(g.rng.integers(1, 10 ** 9))
        else:
            s = int(g.rng.integers(0, n))
            e = int(g.rng.integers(-1, s)) if s > 0 else -1
            if e == -1:
                e = -n - 1 - int(g.rng.integers(0, 3))  # before the start: to index 0
            s = s if not g.coin(0.15) else n + 5
        s = s - n if (g.coin(0.3) and 0 <= s < n) else s
        starts.append(s)
        ends.append(e)
        steps.append(step)
    args = [x, g.const(np.array(starts, np.int64)), g.const(np.array(ends, np.int64))]
    if axes != list(range(x.rank)) or g.coin(0.6) or any(st != 1 for st in steps):
        args.append(g.const(np.array([a - x.rank if g.coin(0.3) else a for a in axes],
                                     np.int64)))
        if any(st != 1 for st in steps) or g.coin(0.5):
            args.append(g.const(np.array(steps, np.int64)))
    (out,) = g.node("Slice", args)
    if out.size == 0:
        raise Reject("empty slice")


PAD_MODES = ("constant", "reflect", "edge", "wrap")


@spec.register("Pad", "shape", since=11, dtypes=FLOAT_DTYPES + INT_DTYPES)
def _pad(g: GraphBuilder) -> None:
    x = g.pick_of(FLOAT_DTYPES + INT_DTYPES, min_rank=1, max_rank=5)
    mode = g.choice(PAD_MODES if g.opset >= 19 else PAD_MODES[:3])
    axes = list(range(x.rank))
    if g.opset >= 18 and g.coin(0.3):
        axes = sorted(g.rng.choice(x.rank, size=int(g.rng.integers(1, x.rank + 1)),
                                   replace=False).tolist())
    begin, end = [], []
    for a in axes:
        n = x.shape[a]
        for side in (begin, end):
            hi = n - 1 if mode == "reflect" else (n if mode == "wrap" else 3)
            p = int(g.rng.integers(0, min(hi, 3) + 1))
            if g.coin(0.15) and n > 2:
                p = -1  # crop
            side.append(p)
        if n + begin[-1] + end[-1] < 1:
            raise Reject("nothing left")
    args = [x, g.const(np.array(begin + end, np.int64))]
    if mode == "constant" and g.coin(0.6):
        args.append(g.const(np.array(1.5 if x.dtype in FLOAT_DTYPES else 3), x.dtype))
    if axes != list(range(x.rank)):
        if len(args) == 2:
            args.append(ABSENT)
        args.append(g.const(np.array([a - x.rank if g.coin(0.3) else a for a in axes],
                                     np.int64)))
    g.node("Pad", args, mode=mode)


def _indices(g: GraphBuilder, shape: tuple[int, ...], extent: int,
             unique: bool = False) -> np.ndarray:
    """Indices in ``[-extent, extent)`` (negative ones count from the end)."""
    if unique:
        flat = g.rng.permutation(extent)[:int(np.prod(shape, dtype=np.int64))]
        idx = flat.reshape(shape)
    else:
        idx = g.rng.integers(0, extent, size=shape)
    neg = g.rng.random(shape) < 0.3
    return np.where(neg, idx - extent, idx)


@spec.register("Gather", "index", dtypes=ANY_DTYPE)
def _gather(g: GraphBuilder) -> None:
    x = _pick_any(g, min_rank=1)
    axis = int(g.rng.integers(-x.rank, x.rank))
    ishape = g.shape(0, 2, 64)
    idx = g.const(_indices(g, ishape, x.shape[axis]), g.choice(INDEX))
    g.node("Gather", [x, idx], axis=axis)


@spec.register("GatherElements", "index", since=11, dtypes=ANY_DTYPE)
def _gather_elements(g: GraphBuilder) -> None:
    x = _pick_any(g, min_rank=1)
    axis = int(g.rng.integers(-x.rank, x.rank))
    # (ONNX's reference evaluator takes indices of the data's extents off the axis.)
    ishape = list(x.shape)
    ishape[axis] = int(g.rng.integers(1, 5))
    idx = g.const(_indices(g, tuple(ishape), x.shape[axis]), g.choice(INDEX))
    g.node("GatherElements", [x, idx], axis=axis)


@spec.register("GatherND", "index", since=12, dtypes=ANY_DTYPE)
def _gather_nd(g: GraphBuilder) -> None:
    x = _pick_any(g, min_rank=1)
    b = int(g.rng.integers(0, x.rank)) if g.coin(0.3) else 0
    k = int(g.rng.integers(1, x.rank - b + 1))
    mid = [int(g.choice((1, 2, 3))) for _ in range(int(g.rng.integers(0, 2)))]
    shape = list(x.shape[:b]) + mid + [k]
    idx = np.stack([_indices(g, tuple(shape[:-1]), x.shape[b + j]) for j in range(k)], -1)
    g.node("GatherND", [x, g.const(idx, "int64")], batch_dims=b)


def _reduction_for(g: GraphBuilder, dtype: str) -> str:
    options = ["none", "add", "mul"] if g.opset >= 16 else ["none"]
    if g.opset >= 18:
        options += ["max", "min"]
    red = g.choice(options)
    return "none" if dtype == "bool" else red


@spec.register("ScatterElements", "index", since=11, dtypes=FLOAT_DTYPES + INT_DTYPES)
def _scatter_elements(g: GraphBuilder) -> None:
    _scatter(g, "ScatterElements")


@spec.register("Scatter", "index", since=9, until=10, dtypes=FLOAT_DTYPES + INT_DTYPES)
def _scatter_deprecated(g: GraphBuilder) -> None:
    _scatter(g, "Scatter")


def _scatter(g: GraphBuilder, op: str) -> None:
    """ScatterElements (or its deprecated form Scatter: no reduction, no negative
    indices) with distinct targets when nothing reduces them."""
    x = g.pick_of(FLOAT_DTYPES + INT_DTYPES, min_rank=1)
    axis = int(g.rng.integers(-x.rank, x.rank)) if op != "Scatter" else \
        int(g.rng.integers(0, x.rank))
    red = _reduction_for(g, x.dtype) if op != "Scatter" else "none"
    ishape = [int(g.rng.integers(1, s + 1)) for s in x.shape]
    n = x.shape[axis]
    ishape[axis] = int(g.rng.integers(1, n + 1))
    if red == "none":  # distinct targets along the axis for each position
        idx = np.stack([g.rng.permutation(n)[:ishape[axis]]
                        for _ in range(int(np.prod(ishape)) // ishape[axis])])
        moved = idx.reshape([s for i, s in enumerate(ishape) if i != axis % x.rank]
                            + [ishape[axis]])
        idx = np.moveaxis(moved, -1, axis)
        if op != "Scatter":
            idx = np.where(g.rng.random(idx.shape) < 0.3, idx - n, idx)
    else:
        idx = _indices(g, tuple(ishape), n)
    upd = g.fresh(tuple(ishape), x.dtype, data=True)
    reduction = red if op != "Scatter" and (red != "none" or g.coin()) else None
    g.node(op, [x, g.const(idx, "int64"), upd], axis=axis, reduction=reduction)


@spec.register("ScatterND", "index", since=11, dtypes=FLOAT_DTYPES + INT_DTYPES)
def _scatter_nd(g: GraphBuilder) -> None:
    x = g.pick_of(FLOAT_DTYPES + INT_DTYPES, min_rank=1)
    red = _reduction_for(g, x.dtype)
    k = int(g.rng.integers(1, x.rank + 1))
    total = int(np.prod(x.shape[:k]))
    m = int(g.rng.integers(1, min(total, 6) + 1))
    if red == "none":
        flat = g.rng.permutation(total)[:m]
    else:
        flat = g.rng.integers(0, total, m)
    idx = np.stack(np.unravel_index(flat, x.shape[:k]), -1)
    idx = np.where(g.rng.random(idx.shape) < 0.3, idx - np.array(x.shape[:k]), idx)
    upd = g.fresh((m,) + x.shape[k:], x.dtype)
    g.node("ScatterND", [x, g.const(idx, "int64"), upd],
           reduction=red if red != "none" or g.coin() else None)


@spec.register("DepthToSpace", "shape", since=13, dtypes=ANY_DTYPE)
def _depth_to_space(g: GraphBuilder) -> None:
    b = int(g.choice((2, 3)))
    x = g.pick_of(ANY_DTYPE, 4, 4, accept=lambda v: v.shape[1] % (b * b) == 0)
    g.node("DepthToSpace", [x], blocksize=b, mode=g.choice(("DCR", "CRD")))


@spec.register("SpaceToDepth", "shape", since=13, dtypes=ANY_DTYPE)
def _space_to_depth(g: GraphBuilder) -> None:
    b = int(g.choice((2, 3)))
    x = g.pick_of(ANY_DTYPE, 4, 4,
                  accept=lambda v: v.shape[2] % b == 0 and v.shape[3] % b == 0)
    g.node("SpaceToDepth", [x], blocksize=b)


@spec.register("Shape", "shape", since=15, dtypes=ANY_DTYPE)
def _shape(g: GraphBuilder) -> None:
    x = _pick_any(g)
    attrs = {}
    if g.coin(0.4) and x.rank:
        attrs["start"] = int(g.rng.integers(-x.rank, x.rank))
        if g.coin():
            attrs["end"] = int(g.rng.integers(-x.rank, x.rank + 1))
    (s,) = g.node("Shape", [x], **attrs)
    if g.coin(0.6) and s.size:  # use it as data, as exporters do
        (c,) = g.node("Cast", [s], to=helper_dtype(g.float_dtype))
        g.node("Mul", [c, g.fresh((), g.float_dtype)])


@spec.register("Size", "shape", dtypes=ANY_DTYPE)
def _size(g: GraphBuilder) -> None:
    g.node("Size", [_pick_any(g)])


@spec.register("ConstantOfShape", "shape", since=9, dtypes=FLOAT_DTYPES + INT_DTYPES)
def _constant_of_shape(g: GraphBuilder) -> None:
    from onnx import numpy_helper

    like = _pick_any(g, min_rank=1, accept=lambda v: v.size <= 1024)
    dims = list(like.shape) if g.coin(0.7) else [int(g.choice((1, 2, 3)))]
    dt = g.choice([d for d in FLOAT_DTYPES + INT_DTYPES if d in g.dtypes] or ["float32"])
    if dt == "bfloat16":
        dt = "float32"
    value = numpy_helper.from_array(np.array([2], np_dtype(dt)))
    g.node("ConstantOfShape", [g.shape_input(dims, like=like)],
           value=value if g.coin(0.8) else None)


@spec.register("EyeLike", "shape", since=9, dtypes=FLOAT_DTYPES + INT_DTYPES)
def _eye_like(g: GraphBuilder) -> None:
    x = g.pick_of(FLOAT_DTYPES + INT_DTYPES, 2, 2)
    k = int(g.rng.integers(-max(x.shape) + 1, max(x.shape)))
    dt = g.choice([d for d in ("float32", "int32", "int64", "float16") if d in g.dtypes]
                  or ["float32"])
    g.node("EyeLike", [x], k=k, dtype=helper_dtype(dt) if g.coin() else None)


@spec.register("Range", "shape", since=11, dtypes=("float32", "int32", "int64"))
def _range(g: GraphBuilder) -> None:
    dt = g.choice([d for d in ("float32", "int32", "int64") if d in g.dtypes] or ["int64"])
    start = int(g.rng.integers(-5, 5))
    delta = int(g.choice((1, 2, 3, -1, -2)))
    n = int(g.rng.integers(1, 20))
    limit = start + delta * n - (delta // abs(delta)) * int(g.rng.integers(0, abs(delta)))
    if dt == "float32":
        start, delta, limit = start + 0.25, delta * 0.5, limit * 0.5 + 0.3
        if abs(((limit - start) / delta) - round((limit - start) / delta)) < 0.05:
            raise Reject("a length at a rounding edge")
    g.node("Range", [g.const(np.array(start), dt), g.const(np.array(limit), dt),
                     g.const(np.array(delta), dt)])


@spec.register("OneHot", "index", since=11, dtypes=("int64", "int32", "float32"))
def _one_hot(g: GraphBuilder) -> None:
    depth = int(g.rng.integers(2, 9))
    ishape = g.shape(0, 3, 64)
    idx = g.const(_indices(g, ishape, depth), g.choice(("int64", "int32")))
    vals = g.const(np.array([0, 3]) if g.coin() else np.array([-1.5, 2.0]),
                   g.choice([d for d in ("float32", "int64", "int32", "float16")
                             if d in g.dtypes] or ["float32"]))
    rank = len(ishape) + 1
    g.node("OneHot", [idx, g.const(np.array(depth), g.choice(("int64", "float32"))), vals],
           axis=int(g.rng.integers(-rank, rank)))


@spec.register("Trilu", "shape", since=14, dtypes=FLOAT_DTYPES + INT_DTYPES)
def _trilu(g: GraphBuilder) -> None:
    x = g.pick_of(FLOAT_DTYPES + INT_DTYPES, 2, 4)
    args = [x]
    if g.coin(0.6):
        args.append(g.const(np.array(int(g.rng.integers(-3, 4))), "int64"))
    g.node("Trilu", args, upper=int(g.coin()))


@spec.register("ReverseSequence", "index", since=10, dtypes=ANY_DTYPE)
def _reverse_sequence(g: GraphBuilder) -> None:
    x = _pick_any(g, min_rank=2)
    batch_axis = int(g.coin())
    time_axis = 1 - batch_axis
    lens = g.rng.integers(1, x.shape[time_axis] + 1, size=x.shape[batch_axis])
    g.node("ReverseSequence", [x, g.const(lens, "int64")], batch_axis=batch_axis,
           time_axis=time_axis)


@spec.register("Compress", "index", since=11, dtypes=ANY_DTYPE)
def _compress(g: GraphBuilder) -> None:
    x = _pick_any(g, min_rank=1)
    axis = int(g.rng.integers(-x.rank, x.rank)) if g.coin(0.8) else None
    n = x.shape[axis] if axis is not None else x.size
    cond = g.rng.random(int(g.rng.integers(1, n + 1))) < 0.6
    c = g.place(cond, data=False, where=g.choice(("initializer", "input")))
    g.node("Compress", [x, c], axis=axis)


@spec.register("Unique", "index", since=11, dtypes=FLOAT_DTYPES + ("int64", "int32", "int8"))
def _unique(g: GraphBuilder) -> None:
    """Unique over a few distinct values (so that there are repeats): of all elements or
    of the slices along an axis, sorted or in the order first seen, with 1 to 4 of its
    outputs. Float values are exact in every dtype and not perturbed (a perturbation
    would part equal values)."""
    dt = g.choice([d for d in (g.float_dtype, "int64", "int32", "int8") if d in g.dtypes]
                  or [g.float_dtype])
    shape = g.shape(1, 3, 64)
    pool = np.array([-1.5, 0.0, 0.5, 2.25]) if dt in FLOAT_DTYPES else np.arange(-3, 4)
    arr = g.rng.choice(pool[:int(g.rng.integers(2, len(pool) + 1))], size=shape)
    x = g.place(np.asarray(arr).astype(np_dtype(dt)), data=False,
                where=g.choice(("initializer", "constant")) if dt in FLOAT_DTYPES else "")
    axis = int(g.rng.integers(-x.rank, x.rank)) if g.coin(0.4) else None
    g.node("Unique", [x], n_out=int(g.rng.integers(1, 5)), axis=axis,
           sorted=int(g.coin(0.7)) if g.coin(0.6) else None)


@spec.register("NonZero", "index", since=9, dtypes=FLOAT_DTYPES + INT_DTYPES + ("bool",))
def _nonzero(g: GraphBuilder) -> None:
    x = g.pick_of(INT_DTYPES + ("bool",), min_rank=1, max_rank=3)
    g.node("NonZero", [x])


__all__ = ["PAD_MODES"]

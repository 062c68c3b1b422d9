"""Shape manipulation and creation: reshape, transpose, expand_dims, squeeze, flatten,
concatenate, split, strided_slice, take, tile, repeat, full, arange.

All are injective stages (``T_<op>``) that read the input at computed positions;
positions that choose between inputs (concatenate) use ``if_then_else`` so that only
the chosen input is read.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from ...core import dtype as dt
from ...core.diagnostics import IRTypeError
from ..expr import IntImm, PrimExpr, cast, const, floordiv, floormod, if_then_else
from ..expr import max_ as _max
from ..expr import min_ as _min
from ..te.tensor import Tensor, compute
from .utils import (
    INJECTIVE,
    as_index,
    axis_names,
    const_int,
    index_dtype,
    normalize_axis,
    prod,
)


def _check(data: Any, what: str) -> Tensor:
    if not isinstance(data, Tensor):
        raise IRTypeError(f"topi.{what} takes a tensor, got {type(data).__name__}")
    return data


def _stage(shape: Sequence[PrimExpr], fn: Any, name: str) -> Tensor:
    return compute(tuple(shape), fn, name=name, tag=INJECTIVE, axis_names=axis_names(len(shape)))


def _unravel(flat: PrimExpr, shape: Sequence[PrimExpr]) -> list[PrimExpr]:
    """Row-major indices of element ``flat`` of a tensor of ``shape``."""
    out: list[PrimExpr] = []
    stride: PrimExpr = const(1, flat.dtype)
    for d in range(len(shape) - 1, -1, -1):
        s = as_index(shape[d], flat.dtype)
        q = flat if const_int(stride) == 1 else floordiv(flat, stride)
        out.append(q if d == 0 else floormod(q, s))
        stride = stride * s
    return out[::-1]


def _ravel(idx: Sequence[PrimExpr], shape: Sequence[PrimExpr], dtype: str) -> PrimExpr:
    flat: PrimExpr | None = None
    for i, s in zip(idx, shape):
        i = as_index(i, dtype)
        flat = i if flat is None else flat * as_index(s, dtype) + i
    return const(0, dtype) if flat is None else flat


def reshape(data: Tensor, newshape: Any) -> Tensor:
    """``data`` with shape ``newshape`` (one entry may be -1), same elements in row-major
    order."""
    data = _check(data, "reshape")
    idt = index_dtype(data)
    dims = list(newshape) if isinstance(newshape, (list, tuple)) else [newshape]
    total = prod(data.shape, idt)
    known = [d for d in dims if const_int(d) != -1]
    if len(known) < len(dims) - 1:
        raise IRTypeError("topi.reshape: at most one dimension may be -1")
    if len(known) != len(dims):
        rest = prod(known, idt)
        if const_int(total) is not None and const_int(rest) is not None:
            if const_int(rest) == 0 or const_int(total) % const_int(rest):
                raise IRTypeError(f"topi.reshape: cannot infer -1 for {const_int(total)} "
                                  f"elements into {dims}")
        inferred = floordiv(total, rest)
        dims = [inferred if const_int(d) == -1 else d for d in dims]
    shape = tuple(as_index(d, idt) for d in dims)
    new_total = prod(shape, idt)
    if const_int(total) is not None and const_int(new_total) is not None \
            and const_int(total) != const_int(new_total):
        raise IRTypeError(f"topi.reshape: cannot reshape {const_int(total)} elements into "
                          f"shape {[const_int(s) for s in shape]}")

    def fn(*idx: PrimExpr) -> PrimExpr:
        flat = _ravel(idx, shape, idt)
        return data[tuple(_unravel(flat, data.shape))]

    return _stage(shape, fn, "T_reshape")


def transpose(data: Tensor, axes: Sequence[int] | None = None) -> Tensor:
    """``data`` with its axes permuted (reversed when ``axes`` is None)."""
    data = _check(data, "transpose")
    n = data.ndim
    perm = list(range(n))[::-1] if axes is None else [normalize_axis(a, n) for a in axes]
    if sorted(perm) != list(range(n)):
        raise IRTypeError(f"topi.transpose: {list(axes or [])} is not a permutation of "
                          f"{n} axes")
    shape = [data.shape[p] for p in perm]

    def fn(*idx: PrimExpr) -> PrimExpr:
        src: list[PrimExpr] = [const(0)] * n
        for out_d, in_d in enumerate(perm):
            src[in_d] = idx[out_d]
        return data[tuple(src)]

    return _stage(shape, fn, "T_transpose")


def expand_dims(data: Tensor, axis: int, num_newaxis: int = 1) -> Tensor:
    """``data`` with ``num_newaxis`` size-1 axes inserted at ``axis``."""
    data = _check(data, "expand_dims")
    n = data.ndim
    ax = axis + n + 1 if axis < 0 else axis
    if not 0 <= ax <= n:
        raise IRTypeError(f"topi.expand_dims: axis {axis} is out of range for rank {n}")
    idt = index_dtype(data)
    shape = list(data.shape[:ax]) + [const(1, idt)] * num_newaxis + list(data.shape[ax:])

    def fn(*idx: PrimExpr) -> PrimExpr:
        return data[tuple(list(idx[:ax]) + list(idx[ax + num_newaxis:]))]

    return _stage(shape, fn, "T_expand_dims")


def squeeze(data: Tensor, axis: Any = None) -> Tensor:
    """``data`` without its size-1 axes (only those in ``axis`` when given)."""
    data = _check(data, "squeeze")
    n = data.ndim
    if axis is None:
        drop = [d for d in range(n) if const_int(data.shape[d]) == 1]
    else:
        drop = sorted({normalize_axis(a, n) for a in
                       (axis if isinstance(axis, (list, tuple)) else [axis])})
        for d in drop:
            if const_int(data.shape[d]) not in (1, None):
                raise IRTypeError(f"topi.squeeze: axis {d} has size "
                                  f"{const_int(data.shape[d])}, not 1")
    keep = [d for d in range(n) if d not in drop]
    shape = [data.shape[d] for d in keep]

    def fn(*idx: PrimExpr) -> PrimExpr:
        src = [const(0, data.shape[d].dtype) for d in range(n)]
        for pos, d in enumerate(keep):
            src[d] = idx[pos]
        return data[tuple(src)]

    return _stage(shape, fn, "T_squeeze")


def flatten(data: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """``data`` with axes ``start_dim..end_dim`` merged into one."""
    data = _check(data, "flatten")
    n = data.ndim
    if n == 0:
        return reshape(data, (1,))
    s, e = normalize_axis(start_dim, n), normalize_axis(end_dim, n)
    idt = index_dtype(data)
    shape = list(data.shape[:s]) + [prod(data.shape[s:e + 1], idt)] + list(data.shape[e + 1:])
    return reshape(data, shape)


def concatenate(tensors: Sequence[Tensor], axis: int = 0) -> Tensor:
    """The tensors joined along ``axis`` (all other dimensions equal)."""
    tensors = [_check(t, "concatenate") for t in tensors]
    if not tensors:
        raise IRTypeError("topi.concatenate needs at least one tensor")
    n = tensors[0].ndim
    ax = normalize_axis(axis, n)
    for t in tensors[1:]:
        if t.ndim != n:
            raise IRTypeError("topi.concatenate: tensors differ in rank")
    idt = index_dtype(*tensors)
    offsets: list[PrimExpr] = [const(0, idt)]
    for t in tensors:
        offsets.append(offsets[-1] + as_index(t.shape[ax], idt))
    shape = list(tensors[0].shape)
    shape[ax] = offsets[-1]

    def fn(*idx: PrimExpr) -> PrimExpr:
        def read(k: int) -> PrimExpr:
            src = list(idx)
            if k:
                src[ax] = idx[ax] - offsets[k]
            return tensors[k][tuple(src)]
        out = read(len(tensors) - 1)
        for k in range(len(tensors) - 2, -1, -1):
            out = if_then_else(idx[ax] < offsets[k + 1], read(k), out)
        return out

    return _stage(shape, fn, "T_concat")


def split(data: Tensor, indices_or_sections: Any, axis: int = 0) -> list[Tensor]:
    """``data`` cut along ``axis`` into ``n`` sections (an int: each ceil(size / n) long,
    the last the remainder, as ``R.split`` infers) or at the given indices."""
    data = _check(data, "split")
    ax = normalize_axis(axis, data.ndim)
    idt = index_dtype(data)
    dim = data.shape[ax]
    if isinstance(indices_or_sections, (int, IntImm)):
        sections = int(indices_or_sections)
        size = const_int(dim)
        if size is not None and sections > 1 and size <= (size + sections - 1) // sections \
                * (sections - 1):
            raise IRTypeError(f"topi.split: an axis of size {size} cannot be cut into "
                              f"{sections} non-empty sections")
        step = floordiv(as_index(dim, idt) + (sections - 1), sections)
        bounds = [step * k for k in range(sections)] + [as_index(dim, idt)]
        name = "T_split_sections"
    else:
        bounds = [const(0, idt)] + [as_index(i, idt) for i in indices_or_sections] + \
                 [as_index(dim, idt)]
        name = "T_split"
    outs = []
    for k in range(len(bounds) - 1):
        begin = bounds[k]
        shape = list(data.shape)
        shape[ax] = bounds[k + 1] - begin

        def fn(*idx: PrimExpr, begin: PrimExpr = begin) -> PrimExpr:
            src = list(idx)
            if const_int(begin) != 0:
                src[ax] = idx[ax] + begin
            return data[tuple(src)]

        outs.append(_stage(shape, fn, name))
    return outs


def _canonical_slice(begin: Any, end: Any, stride: int, dim: PrimExpr
                     ) -> tuple[PrimExpr, PrimExpr]:
    """Numpy slice semantics: the start and length of ``begin:end:stride`` on ``dim``."""
    size = const_int(dim)
    if size is None:
        b = 0 if begin is None else int(begin)
        if stride != 1 or b < 0 or (end is not None and int(end) < 0):
            raise IRTypeError("topi.strided_slice on a symbolic dimension supports only "
                              "non-negative begin/end with stride 1")
        stop: PrimExpr = dim if end is None or int(end) >= 2**31 - 1 else \
            _min(as_index(end, dim.dtype), dim)
        start = as_index(b, dim.dtype)
        if end is not None and int(end) <= b:  # empty whatever the size (as R.strided_slice infers)
            return start, const(0, dim.dtype)
        return start, _max(stop - start, const(0, dim.dtype))
    lo, hi = (0, size) if stride > 0 else (-1, size - 1)
    def clamp(v: Any, default: int) -> int:
        if v is None:
            return default
        v = int(v)
        if v < 0:
            v += size
        return max(lo, min(hi, v))
    b = clamp(begin, 0 if stride > 0 else size - 1)
    e = clamp(end, size if stride > 0 else -1)
    length = max(0, math.ceil((e - b) / stride))
    return const(b, dim.dtype), const(length, dim.dtype)


def strided_slice(data: Tensor, begin: Sequence[Any], end: Sequence[Any],
                  strides: Sequence[int] | None = None, axes: Sequence[int] | None = None
                  ) -> Tensor:
    """``data[begin:end:strides]`` per axis with numpy semantics (negative positions count
    from the end, out-of-range ones are clamped); ``axes`` names the sliced axes."""
    data = _check(data, "strided_slice")
    n = data.ndim
    axes_l = list(range(len(begin))) if axes is None else [normalize_axis(a, n) for a in axes]
    strides_l = [1] * len(axes_l) if strides is None else [int(s) for s in strides]
    if len(strides_l) == 1 and len(axes_l) > 1:
        strides_l = strides_l * len(axes_l)
    if not (len(begin) == len(end) == len(axes_l) == len(strides_l)):
        raise IRTypeError("topi.strided_slice: begin, end, strides and axes differ in length")
    starts = [const(0, s.dtype) for s in data.shape]
    steps = [1] * n
    shape = list(data.shape)
    for a, b, e, st in zip(axes_l, begin, end, strides_l):
        if st == 0:
            raise IRTypeError("topi.strided_slice: a stride is 0")
        b_v = None if b is None else const_int(b)
        e_v = None if e is None else const_int(e)
        starts[a], shape[a] = _canonical_slice(b_v, e_v, st, data.shape[a])
        steps[a] = st

    def fn(*idx: PrimExpr) -> PrimExpr:
        src = []
        for d in range(n):
            i = idx[d]
            if steps[d] != 1:
                i = i * steps[d]
            if const_int(starts[d]) != 0:
                i = starts[d] + i
            src.append(i)
        return data[tuple(src)]

    return _stage(shape, fn, "T_strided_slice")


def take(data: Tensor, indices: Any, axis: int | None = None, mode: str = "clip") -> Tensor:
    """Elements of ``data`` at ``indices`` along ``axis`` (of the flattened tensor when
    None). ``mode``: "clip" clamps out-of-range indices, "wrap" wraps them (negative
    indices count from the end), "fast" assumes they are in range."""
    data = _check(data, "take")
    if mode not in ("clip", "wrap", "fast"):
        raise IRTypeError(f"topi.take: mode must be clip, wrap or fast, got {mode!r}")
    if axis is None:
        data = reshape(data, (prod(data.shape, index_dtype(data)),))
        axis = 0
    ax = normalize_axis(axis, data.ndim)
    dim = data.shape[ax]
    idx_shape = list(indices.shape) if isinstance(indices, Tensor) else []
    if isinstance(indices, Tensor) and not dt.is_integer(indices.dtype):
        raise IRTypeError(f"topi.take: indices must be integers, got {indices.dtype}")
    shape = list(data.shape[:ax]) + idx_shape + list(data.shape[ax + 1:])
    k = len(idx_shape)

    def fn(*idx: PrimExpr) -> PrimExpr:
        pos = indices[tuple(idx[ax:ax + k])] if isinstance(indices, Tensor) else \
            const(int(indices), dim.dtype)
        pos = pos if pos.dtype == dim.dtype else cast(pos, dim.dtype)
        if mode == "clip":
            pos = _min(_max(pos, const(0, dim.dtype)), dim - 1)
        elif mode == "wrap":
            pos = floormod(pos, dim)
        src = list(idx[:ax]) + [pos] + list(idx[ax + k:])
        return data[tuple(src)]

    return _stage(shape, fn, "T_take")


def tile(data: Tensor, reps: Sequence[int]) -> Tensor:
    """``data`` repeated ``reps[d]`` times along each axis (numpy.tile)."""
    data = _check(data, "tile")
    reps = [int(r) for r in reps]
    n = max(data.ndim, len(reps))
    reps = [1] * (n - len(reps)) + reps
    idt = index_dtype(data)
    in_shape = [const(1, idt)] * (n - data.ndim) + list(data.shape)
    shape = [as_index(s, idt) * r for s, r in zip(in_shape, reps)]
    lead = n - data.ndim

    def fn(*idx: PrimExpr) -> PrimExpr:
        src = []
        for d in range(lead, n):
            s = in_shape[d]
            src.append(idx[d] if reps[d] == 1 else floormod(idx[d], s))
        return data[tuple(src)]

    return _stage(shape, fn, "T_tile")


def repeat(data: Tensor, repeats: int, axis: int | None = None) -> Tensor:
    """Each element of ``data`` repeated ``repeats`` times along ``axis`` (numpy.repeat;
    the flattened tensor when ``axis`` is None)."""
    data = _check(data, "repeat")
    if axis is None:
        data = flatten(data)
        axis = 0
    ax = normalize_axis(axis, data.ndim)
    shape = list(data.shape)
    shape[ax] = data.shape[ax] * int(repeats)

    def fn(*idx: PrimExpr) -> PrimExpr:
        src = list(idx)
        src[ax] = floordiv(idx[ax], int(repeats))
        return data[tuple(src)]

    return _stage(shape, fn, "T_repeat")


def full(shape: Sequence[Any], dtype: str, fill_value: Any) -> Tensor:
    """A tensor of ``shape`` filled with ``fill_value``."""
    dt.check(dtype)
    dims = [as_index(s, "int64" if any(isinstance(s, PrimExpr) and s.dtype == "int64"
                                         for s in shape) else "int32") for s in shape]
    value = fill_value if isinstance(fill_value, PrimExpr) else const(
        fill_value if not dt.is_float(dtype) else float(fill_value), dtype)
    value = value if value.dtype == dtype else cast(value, dtype)
    return _stage(dims, lambda *idx: value, "T_full")


def full_like(data: Tensor, fill_value: Any, dtype: str | None = None) -> Tensor:
    """A tensor shaped like ``data`` filled with ``fill_value``."""
    data = _check(data, "full_like")
    return full(data.shape, dtype or data.dtype, fill_value)


def zeros(shape: Sequence[Any], dtype: str = "float32") -> Tensor:
    """A tensor of zeros."""
    return full(shape, dtype, 0)


def ones(shape: Sequence[Any], dtype: str = "float32") -> Tensor:
    """A tensor of ones."""
    return full(shape, dtype, 1)


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: str = "float32") -> Tensor:
    """Evenly spaced values ``start, start + step, ...`` below ``stop`` (numpy.arange)."""
    if stop is None:
        start, stop = 0, start
    if not all(isinstance(v, (int, float)) for v in (start, stop, step)):
        raise IRTypeError("topi.arange needs constant start, stop and step")
    if step == 0:
        raise IRTypeError("topi.arange: step is 0")
    length = max(0, math.ceil((stop - start) / step))

    def fn(i: PrimExpr) -> PrimExpr:
        if dt.is_float(dtype):
            return const(float(start), dtype) + cast(i, dtype) * const(float(step), dtype)
        return const(int(start), dtype) + cast(i, dtype) * const(int(step), dtype)

    return compute((length,), fn, name="T_arange", tag=INJECTIVE, axis_names=["ax0"])

"""Whole-array evaluation of loop functions that only move data, for compile-time folding.

Transposes, reshapes, ``expand_dims``, layout transforms, padding and slices of
constant weights are most of what :class:`irc.passes.FoldConstant` evaluates (ResNet-50:
200 of them). Each is one spatial block whose stored value is a load of an input, or a
guarded choice between loads and constants; running them element by element (the
reference interpreter) or compiling each with LLVM costs milliseconds apiece.
:func:`run_data_movement` evaluates such a function in a few numpy operations instead:
the loop variables become broadcast index arrays, the block's bindings and the
indices are evaluated on them (integer arithmetic only), and the store is one
gathered copy.

The result is exactly the compiled function's, because nothing is computed on the
values: they are copied, or chosen by integer conditions, or set from constants.
Functions of any other form — float arithmetic, reductions, several blocks, symbolic
shapes, narrow float dtypes, an index that leaves its buffer — are declined (the
function returns False and writes nothing), and the caller runs them as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core import dtype as dt
from .. import expr as E
from .. import stmt as S

_INDEX_DTYPES = ("int32", "int64")
_INT32 = (np.iinfo(np.int32).min, np.iinfo(np.int32).max)


class _Declined(Exception):
    """The function is not a data movement this evaluator handles."""


def run_data_movement(func: S.PrimFunc, args: list[np.ndarray]) -> bool:
    """Run ``func`` on ``args`` (numpy arrays, one per parameter, outputs written in
    place) when it is a pure data movement (see the module docstring); False, with
    nothing written, when it is not."""
    try:
        plan = _plan(func, args)
    except _Declined:
        return False
    out, indices, value = plan
    out[indices] = value
    return True


def _plan(func: S.PrimFunc, args: list[np.ndarray]) -> tuple[np.ndarray, tuple, Any]:
    if len(func.params) != len(args):
        raise _Declined
    arrays: dict[int, np.ndarray] = {}
    for p, a in zip(func.params, args):
        buf = func.buffer_map.get(p)
        if buf is None or buf.strides or buf.axis_separators or dt.is_narrow(buf.dtype):
            raise _Declined
        if buf.elem_offset is not None and E.as_int(buf.elem_offset) != 0:
            raise _Declined
        shape = tuple(E.as_int(s) for s in buf.shape)
        if (not isinstance(a, np.ndarray) or a.shape != shape
                or a.dtype != dt.to_numpy(buf.dtype) or not a.flags.c_contiguous):
            raise _Declined
        arrays[id(buf)] = a
    loops, realize = _loop_nest(func.body)
    env: dict[int, Any] = {}
    for axis, (var, start, extent) in enumerate(loops):
        shape = [1] * len(loops)
        shape[axis] = extent
        env[id(var)] = np.arange(start, start + extent, dtype=np.int64).reshape(shape)
    grid = tuple(extent for _, _, extent in loops)
    block = realize.block
    if (block.init is not None or block.alloc_buffers or block.match_buffers
            or not _is_true(realize.predicate)
            or any(iv.iter_type != "spatial" for iv in block.iter_vars)):
        raise _Declined
    store = block.body
    if not isinstance(store, S.BufferStore) or id(store.buffer) not in arrays:
        raise _Declined
    if 0 in grid:  # no iteration runs: nothing is written
        nothing = np.zeros(0)
        return nothing, (), nothing
    for iv, value in zip(block.iter_vars, realize.iter_values):
        env[id(iv.var)] = _Eval(env, arrays, grid).index(value)
    # Injective by construction: each stored index is a different block variable bound
    # to a different loop variable, so every iteration writes its own element.
    # Every loop that runs more than once is among them.
    bound = [realize.iter_values[_position(block, i)] for i in store.indices]
    bound_ids = {id(v) for v in bound}
    loop_ids = {id(lv) for lv, _, _ in loops}
    if (len(bound_ids) != len(bound) or not all(isinstance(v, E.Var) for v in bound)
            or not bound_ids <= loop_ids
            or any(id(lv) not in bound_ids for lv, _, extent in loops if extent > 1)):
        raise _Declined
    out = arrays[id(store.buffer)]
    if store.value.dtype != store.buffer.dtype:
        raise _Declined
    strided = _strided_copy(loops, realize, store, arrays)
    if strided is not None:
        return strided
    ev = _Eval(env, arrays, grid)
    indices = tuple(np.asarray(ev.index(i)) for i in store.indices)
    for idx, size in zip(indices, out.shape):
        if idx.size and (idx.min() < 0 or idx.max() >= size):
            raise _Declined
    value = np.broadcast_to(ev.value(store.value, None), grid)
    return out, indices, value


def _strided_copy(loops: list[tuple[E.Var, int, int]], realize: S.BlockRealize,
                  store: S.BufferStore, arrays: dict[int, np.ndarray]) -> tuple | None:
    """The copy as two strided views of the same shape — ``(destination, (), source)``
    for ``run_data_movement``'s ``out[indices] = value`` — when the stored value is one
    load and every index on both sides is affine in the loop variables (transposes,
    ``expand_dims``, slices); None otherwise."""
    if not isinstance(store.value, E.BufferLoad):
        return None
    src = arrays.get(id(store.value.buffer))
    if src is None or store.value.dtype != store.value.buffer.dtype:
        return None
    forms: dict[int, tuple[dict[int, int], int]] = {
        id(var): ({axis: 1}, 0) for axis, (var, _, _) in enumerate(loops)}
    for iv, value in zip(realize.block.iter_vars, realize.iter_values):
        form = _affine(value, forms, loops)
        if form is None:
            return None
        forms[id(iv.var)] = form
    grid = tuple(extent for _, _, extent in loops)
    views = []
    for arr, indices in ((arrays[id(store.buffer)], store.indices),
                         (src, store.value.indices)):
        if len(indices) != arr.ndim:
            raise _Declined
        offset, strides = 0, [0] * len(loops)
        for idx, size, step in zip(indices, arr.shape, _element_strides(arr.shape)):
            form = _affine(idx, forms, loops)
            if form is None:
                return None
            coeffs, const = form
            const += sum(c * loops[axis][1] for axis, c in coeffs.items())
            lo = const + sum(min(0, c * (grid[axis] - 1)) for axis, c in coeffs.items())
            hi = const + sum(max(0, c * (grid[axis] - 1)) for axis, c in coeffs.items())
            if lo < 0 or hi >= size:
                raise _Declined  # an access out of bounds: the caller reports it
            offset += const * step
            for axis, c in coeffs.items():
                strides[axis] += c * step
        flat = arr.reshape(-1)
        views.append(np.lib.stride_tricks.as_strided(
            flat[offset:] if flat.size else flat, shape=grid,
            strides=[st * arr.itemsize for st in strides]))
    return views[0], (), views[1]


def _element_strides(shape: tuple[int, ...]) -> list[int]:
    out, step = [], 1
    for size in reversed(shape):
        out.append(step)
        step *= size
    return out[::-1]


def _affine(e: E.PrimExpr, forms: dict[int, tuple[dict[int, int], int]],
            loops: list[tuple[E.Var, int, int]]) -> tuple[dict[int, int], int] | None:
    """``e`` as ``({loop axis: coefficient}, constant)`` (its value is the sum of each
    coefficient times its loop variable, plus the constant), or None when it is not
    affine in the loop variables (as far as this simple reading goes) or an int32
    value in it could wrap around."""
    form = _affine_form(e, forms, loops)
    if form is not None and e.dtype == "int32":
        coeffs, const = form
        ends = [(c * start, c * (start + extent - 1))
                for (_, start, extent), c in ((loops[ax], c) for ax, c in coeffs.items())]
        lo = const + sum(min(a, b) for a, b in ends)
        hi = const + sum(max(a, b) for a, b in ends)
        if lo < _INT32[0] or hi > _INT32[1]:
            return None
    return form


def _affine_form(e: E.PrimExpr, forms: dict[int, tuple[dict[int, int], int]],
                 loops: list[tuple[E.Var, int, int]]) -> tuple[dict[int, int], int] | None:
    if isinstance(e, E.IntImm):
        return {}, e.value
    if isinstance(e, E.Var):
        return forms.get(id(e))
    if e.dtype not in _INDEX_DTYPES:
        return None
    if isinstance(e, E.Cast):
        return _affine(e.value, forms, loops) if e.value.dtype in _INDEX_DTYPES else None
    if not isinstance(e, (E.Add, E.Sub, E.Mul, E.FloorDiv, E.FloorMod, E.Div, E.Mod)):
        return None
    a, b = _affine(e.a, forms, loops), _affine(e.b, forms, loops)
    if a is None or b is None:
        return None
    if isinstance(e, (E.Add, E.Sub)):
        sign = 1 if isinstance(e, E.Add) else -1
        coeffs = dict(a[0])
        for axis, c in b[0].items():
            coeffs[axis] = coeffs.get(axis, 0) + sign * c
        return {k: c for k, c in coeffs.items() if c}, a[1] + sign * b[1]
    if isinstance(e, E.Mul):
        if a[0] and b[0]:
            return None
        (coeffs, const), k = (a, b[1]) if not b[0] else (b, a[1])
        return {ax: c * k for ax, c in coeffs.items() if c * k}, const * k
    if b[0] or b[1] != 1:
        return None  # a division or remainder that is not by one
    return (a if isinstance(e, (E.FloorDiv, E.Div)) else ({}, 0))


def _loop_nest(body: S.Stmt) -> tuple[list[tuple[E.Var, int, int]], S.BlockRealize]:
    """The loops (variable, start, extent) around the single block, outermost first."""
    loops: list[tuple[E.Var, int, int]] = []
    node = body
    while True:
        if isinstance(node, S.BlockRealize) and not node.block.iter_vars:
            root = node.block  # the root block: nothing but its body
            if (root.init is not None or root.alloc_buffers or root.match_buffers
                    or not _is_true(node.predicate)):
                raise _Declined
            node = root.body
        elif isinstance(node, S.For):
            start, extent = E.as_int(node.min), E.as_int(node.extent)
            if start is None or extent is None or node.kind not in (
                    "serial", "parallel", "vectorized", "unrolled") or node.thread_tag:
                raise _Declined
            loops.append((node.loop_var, start, extent))
            node = node.body
        elif isinstance(node, S.BlockRealize):
            return loops, node
        else:
            raise _Declined


def _position(block: S.Block, index: E.PrimExpr) -> int:
    for k, iv in enumerate(block.iter_vars):
        if index is iv.var:
            return k
    raise _Declined


def _is_true(pred: E.PrimExpr | None) -> bool:
    return pred is None or (isinstance(pred, E.IntImm) and pred.value != 0)


_INT_OPS = {
    E.Add: np.add, E.Sub: np.subtract, E.Mul: np.multiply,
    E.Min: np.minimum, E.Max: np.maximum,
}
_CMP_OPS = {
    E.EQ: np.equal, E.NE: np.not_equal, E.LT: np.less, E.LE: np.less_equal,
    E.GT: np.greater, E.GE: np.greater_equal,
}


class _Eval:
    """Evaluates index expressions (integers, on broadcast arrays) and stored values
    (loads, constants and choices between them) over the iteration grid."""

    def __init__(self, env: dict[int, Any], arrays: dict[int, np.ndarray],
                 grid: tuple[int, ...]):
        self.env = env
        self.arrays = arrays
        self.grid = grid

    def index(self, e: E.PrimExpr) -> Any:
        """An integer or bool expression of the loop variables."""
        if isinstance(e, E.IntImm):
            return np.int64(e.value) if e.dtype != "bool" else np.bool_(e.value)
        if isinstance(e, E.Var):
            if id(e) not in self.env:
                raise _Declined  # a scalar parameter or a variable we do not bind
            return self.env[id(e)]
        if e.dtype not in _INDEX_DTYPES and e.dtype != "bool":
            raise _Declined
        if isinstance(e, E.BinaryOp):
            a, b = self.index(e.a), self.index(e.b)
            op = _INT_OPS.get(type(e))
            if op is not None:
                return self._fits(op(a, b), e.dtype)
            if np.any(np.asarray(b) == 0):
                raise _Declined  # division by zero: the caller reports it
            if isinstance(e, E.FloorDiv):
                return np.floor_divide(a, b)
            if isinstance(e, E.FloorMod):
                return np.mod(a, b)
            if isinstance(e, E.Div):  # truncating, as in C
                q = np.abs(a) // np.abs(b)
                return np.where((np.asarray(a) < 0) != (np.asarray(b) < 0), -q, q)
            if isinstance(e, E.Mod):
                return np.fmod(a, b)
            raise _Declined
        if type(e) in _CMP_OPS:
            return _CMP_OPS[type(e)](self.index(e.a), self.index(e.b))
        if isinstance(e, E.And):
            return np.logical_and(self.index(e.a), self.index(e.b))
        if isinstance(e, E.Or):
            return np.logical_or(self.index(e.a), self.index(e.b))
        if isinstance(e, E.Not):
            return np.logical_not(self.index(e.a))
        if isinstance(e, E.Cast) and e.value.dtype in _INDEX_DTYPES:
            return self._fits(self.index(e.value), e.dtype)
        if isinstance(e, E.Select):
            return np.where(self.index(e.condition), self.index(e.true_value),
                            self.index(e.false_value))
        raise _Declined

    @staticmethod
    def _fits(v: Any, dtype: str) -> Any:
        if dtype == "int32" and np.size(v) and (np.min(v) < _INT32[0] or np.max(v) > _INT32[1]):
            raise _Declined  # it would wrap around in the compiled code
        return v

    def value(self, e: E.PrimExpr, mask: Any) -> Any:
        """A stored value, where ``mask`` (None: everywhere) says which points are
        evaluated (the other points' values are never used)."""
        if isinstance(e, E.BufferLoad):
            return self.load(e, mask)
        if isinstance(e, (E.IntImm, E.FloatImm)):
            return dt.storage(e.value, e.dtype)
        if isinstance(e, E.Select):
            cond = self.index(e.condition)
            return np.where(cond, self.value(e.true_value, mask),
                            self.value(e.false_value, mask))
        if isinstance(e, E.Call) and e.op == "if_then_else" and len(e.args) == 3:
            cond = np.broadcast_to(self.index(e.args[0]), self.grid)
            here = cond if mask is None else mask & cond
            return np.where(cond, self.value(e.args[1], here),
                            self.value(e.args[2], (~cond) if mask is None else mask & ~cond))
        raise _Declined  # arithmetic on values: not a data movement

    def load(self, e: E.BufferLoad, mask: Any) -> Any:
        arr = self.arrays.get(id(e.buffer))
        if arr is None or e.dtype != e.buffer.dtype or len(e.indices) != arr.ndim:
            raise _Declined
        if arr.size == 0:
            # An empty buffer (the source of a padded zero-size tensor) has no element
            # to gather, not even the stand-in index 0 below: no evaluated point may
            # load it, and the value returned for the others is never used.
            if mask is None or np.any(mask):
                raise _Declined  # an access out of bounds: the caller reports it
            return np.zeros((), dtype=arr.dtype)
        indices = []
        for idx, size in zip(e.indices, arr.shape):
            i = np.asarray(self.index(idx))
            outside = (i < 0) | (i >= size)
            if np.any(outside):
                if mask is None or np.any(outside & mask):
                    raise _Declined  # an access out of bounds: the caller reports it
                i = np.where(outside, 0, i)  # at points whose value is not used
            indices.append(i)
        return arr[tuple(indices)] if indices else arr[()]

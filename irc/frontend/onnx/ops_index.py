"""Converters of ONNX operators that read or write at run-time indices, and scans:
``GatherElements``, ``GatherND``, ``ScatterElements``, ``ScatterND``, ``Scatter``,
``OneHot``, ``Trilu``, ``TopK``, ``CumSum``, ``CumProd``, ``EyeLike``,
``ReverseSequence``, ``Hardmax``, ``TensorScatter``.

Index tensors stay run-time data (the kernels read them). Inputs that fix an output's
shape (TopK's ``k``, OneHot's ``depth``) may be run-time values too: the VM reads them
before allocating the outputs (see ``_runtime_size``); a scan's ``axis`` is read by its
kernel."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core import dtype as dt
from ...ir import ops
from ...ir.expr import Constant, Expr, Tuple
from ...ir.ops import index as ix
from ...ir.ops import integer
from ...tir import expr as E
from .importer import Node
from .protos import onnx_dtype
from .registry import converter

_REDUCTIONS = {"none": 11, "add": 16, "mul": 16, "max": 18, "min": 18}


def _axis(node: Node, axis: int, ndim: int, what: str = "axis") -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise node.error(f"{what} {axis} is out of range for rank {ndim}")
    return axis % ndim if ndim else 0


def _int_indices(node: Node, i: int, what: str = "indices") -> Expr:
    if not dt.is_integer(node.dtype(i)):
        raise node.error(f"{what} (input {i}) must be an integer tensor, got {node.dtype(i)}")
    return node.input(i)


def _reduction(node: Node) -> str:
    red = node.attr("reduction", "none")
    since = _REDUCTIONS.get(red)
    if since is None or node.opset < since:
        allowed = [r for r, v in _REDUCTIONS.items() if v <= node.opset]
        raise node.error(f"reduction {red!r} is not one of {', '.join(allowed)} "
                         f"(opset {node.opset})")
    return red


def _runtime_size(node: Node, i: int, what: str) -> E.Var:
    """Input ``i``, one integer (or, for OneHot's depth, number) known only at run time,
    as a new int64 shape variable bound when the program runs (``Node.runtime_dims``), so
    outputs sized by it are allocated then."""
    x = node.input(i)
    shape = node.static_shape(i)
    if shape is None or int(np.prod(shape, dtype=np.int64)) != 1:
        raise node.error(f"{what} (input {i}) must hold one value, got shape {node.shape(i)}")
    if node.dtype(i) != "int64":
        x = ops.astype(x, "int64")
    if len(shape) != 1:
        x = ops.reshape(x, [1])
    (var,) = node.runtime_dims(node.emit(x, f"{what}_value"), what)
    return var


def _scalar_int(node: Node, i: int, what: str) -> int:
    c = node.const(i)
    if c is None:
        raise node.error(f"{what} (input {i}) must be known at import time; irc does not "
                         "take it as a run-time tensor")
    if c.size != 1:
        raise node.error(f"{what} (input {i}) must hold one value, got shape {c.shape}")
    return int(c.reshape(-1)[0])


@converter("GatherElements", since=11)
def _gather_elements(node: Node) -> Expr:
    n = node.ndim(0)
    if node.ndim(1) != n:
        raise node.error(f"data has rank {n} but indices rank {node.ndim(1)}")
    axis = _axis(node, int(node.attr("axis", 0)), n)
    return ix.gather_elements(node.input(0), _int_indices(node, 1), axis)


@converter("GatherND", since=11)
def _gather_nd(node: Node) -> Expr:
    b = int(node.attr("batch_dims", 0))
    idx_shape = node.shape(1)
    if not idx_shape or not isinstance(idx_shape[-1], E.IntImm):
        raise node.error("the last dimension of indices must be static")
    if b < 0 or b >= min(node.ndim(0), len(idx_shape)):
        raise node.error(f"batch_dims {b} must be less than the ranks of data and indices")
    if int(idx_shape[-1].value) + b > node.ndim(0):
        raise node.error(f"index tuples of {int(idx_shape[-1].value)} after {b} batch "
                         f"dimensions exceed the rank {node.ndim(0)} of data")
    return ix.gather_nd(node.input(0), _int_indices(node, 1), b)


def _scatter_elements(node: Node, reduction: str) -> Expr:
    n = node.ndim(0)
    if node.ndim(1) != n or node.ndim(2) != n:
        raise node.error(f"data, indices and updates must have the same rank, got {n}, "
                         f"{node.ndim(1)} and {node.ndim(2)}")
    axis = _axis(node, int(node.attr("axis", 0)), n)
    return ix.scatter_elements(node.input(0), _int_indices(node, 1), node.input(2), axis,
                               reduction)


@converter("ScatterElements", since=11)
def _scatter_elements_conv(node: Node) -> Expr:
    return _scatter_elements(node, _reduction(node))


@converter("Scatter", since=9)
def _scatter(node: Node) -> Expr:
    return _scatter_elements(node, "none")


@converter("ScatterND", since=11)
def _scatter_nd(node: Node) -> Expr:
    idx_shape = node.shape(1)
    if not idx_shape or not isinstance(idx_shape[-1], E.IntImm):
        raise node.error("the last dimension of indices must be static")
    if int(idx_shape[-1].value) > node.ndim(0):
        raise node.error(f"index tuples of {int(idx_shape[-1].value)} exceed the rank "
                         f"{node.ndim(0)} of data")
    return ix.scatter_nd(node.input(0), _int_indices(node, 1), node.input(2),
                         _reduction(node))


@converter("OneHot", since=9)
def _one_hot(node: Node) -> Expr:
    c = node.const(1)
    depth: Any
    if c is None:
        depth = _runtime_size(node, 1, "depth")
    else:
        if c.size != 1:
            raise node.error(f"depth must hold one value, got shape {c.shape}")
        depth = int(c.reshape(-1)[0])
        if depth < 1:
            raise node.error(f"depth must be positive, got {depth}")
    values = node.input(2)
    vshape = node.static_shape(2)
    if vshape is None or int(np.prod(vshape)) != 2:
        raise node.error(f"values must hold two elements (off, on), got shape "
                         f"{node.shape(2)}")
    if len(vshape) != 1:
        values = ops.reshape(values, [2])
    axis = _axis(node, int(node.attr("axis", -1)), node.ndim(0) + 1)
    dtype = node.dtype(0)
    if not (dt.is_integer(dtype) or dt.is_float(dtype)):
        raise node.error(f"indices must be numeric, got {dtype}")
    return ix.one_hot(node.input(0), values, depth, axis)


@converter("Trilu", since=14)
def _trilu(node: Node) -> Expr:
    if node.ndim(0) < 2:
        raise node.error(f"the input must have rank 2 or more, got {node.ndim(0)}")
    if node.has_input(1):
        k = node.input(1)
        if not dt.is_integer(node.dtype(1)) or node.ndim(1) > 1:
            raise node.error("k (input 1) must be an integer scalar")
        if node.ndim(1) == 1:
            k = ops.reshape(k, [])
    else:
        k = Constant.from_numpy(np.asarray(0, "int64"))
    return ix.trilu(node.input(0), k, bool(node.attr("upper", 1)))


@converter("TopK", since=1)
def _topk(node: Node) -> Expr:
    n = node.ndim(0)
    axis = _axis(node, int(node.attr("axis", -1)), n)
    dim = node.shape(0)[axis]
    k: Any
    if node.opset >= 10 and node.const(1) is None:
        if not dt.is_integer(node.dtype(1)):
            raise node.error(f"k (input 1) must be an integer tensor, got {node.dtype(1)}")
        k = _runtime_size(node, 1, "k")
    else:
        k = _scalar_int(node, 1, "k") if node.opset >= 10 else int(node.required_attr("k"))
        if k < 0 or (isinstance(dim, E.IntImm) and k > int(dim.value)):
            raise node.error(f"k {k} is not in [0, {dim}] (the size of axis {axis})")
    if node.dtype(0) == "bool":
        raise node.error("bool inputs are not supported")
    largest = bool(node.attr("largest", 1)) if node.opset >= 11 else True
    return ix.topk(node.input(0), k, axis, largest)


converter("TopK", since=10)(_topk)


def _scan(node: Node, build: Any) -> Expr:
    n = node.ndim(0)
    if n == 0:
        raise node.error("the input must have rank 1 or more")
    if node.dtype(0) == "bool":
        raise node.error("bool inputs are not supported")
    if node.const(1) is not None:
        axis: Any = _axis(node, _scalar_int(node, 1, "axis"), n)
    else:  # read at run time
        if not dt.is_integer(node.dtype(1)) or node.ndim(1) > 1:
            raise node.error("axis (input 1) must be an integer scalar")
        axis = node.input(1)
        if node.ndim(1) == 1:
            axis = ops.reshape(axis, [])
    return build(node.input(0), axis, bool(node.attr("exclusive", 0)),
                 bool(node.attr("reverse", 0)))


@converter("CumSum", since=11)
def _cumsum(node: Node) -> Expr:
    return _scan(node, ix.cumsum)


@converter("CumProd", since=26)
def _cumprod(node: Node) -> Expr:
    return _scan(node, ix.cumprod)


@converter("EyeLike", since=9)
def _eye_like(node: Node) -> Expr:
    if node.ndim(0) != 2:
        raise node.error(f"the input must be 2-d, got rank {node.ndim(0)}")
    code = node.attr("dtype")
    dtype = node.dtype(0) if code is None else onnx_dtype(int(code), f"ONNX node "
                                                          f"{node.name!r}: dtype")
    return ix.eye_like(node.input(0), dtype, int(node.attr("k", 0)))


@converter("ReverseSequence", since=10)
def _reverse_sequence(node: Node) -> Expr:
    n = node.ndim(0)
    if n < 2:
        raise node.error(f"the input must have rank 2 or more, got {n}")
    b = int(node.attr("batch_axis", 1))
    t = int(node.attr("time_axis", 0))
    if b not in (0, 1) or t not in (0, 1) or b == t:
        raise node.error(f"batch_axis {b} and time_axis {t} must be 0 and 1 in some order")
    if node.ndim(1) != 1:
        raise node.error("sequence_lens (input 1) must be 1-d")
    return ix.reverse_sequence(node.input(0), _int_indices(node, 1, "sequence_lens"), b, t)


def _hardmax_along(node: Node, x: Expr, axis: int, dim: Any, dtype: str) -> Expr:
    if not isinstance(dim, E.IntImm):
        raise node.error(f"the size of axis {axis} must be static (it is {dim})")
    arg = ops.argmax(x, axis, keepdims=False)
    values = Constant.from_numpy(np.asarray([0, 1]), dtype)
    return ix.one_hot(arg, values, int(dim.value), axis)


@converter("Hardmax", since=1)
def _hardmax(node: Node) -> Expr:
    shape = node.shape(0)
    n = len(shape)
    dtype = node.dtype(0)
    if node.opset >= 13:
        axis = _axis(node, int(node.attr("axis", -1)), n)
        return _hardmax_along(node, node.input(0), axis, shape[axis], dtype)
    # Before opset 13: the input as a 2-d matrix split at ``axis``.
    axis = int(node.attr("axis", 1))
    if not -n <= axis <= n:
        raise node.error(f"axis {axis} is out of range for rank {n}")
    axis = axis + n if axis < 0 else axis
    static = node.static_shape(0)
    if static is None:
        raise node.error("needs a static input shape before opset 13")
    outer = int(np.prod(static[:axis], dtype=np.int64))
    inner = int(np.prod(static[axis:], dtype=np.int64))
    flat = ops.reshape(node.input(0), [outer, inner])
    out = _hardmax_along(node, flat, 1, E.IntImm(dtype="int64", value=inner), dtype)
    return ops.reshape(out, static)


converter("Hardmax", since=13)(_hardmax)


# -- data-dependent lengths: Compress, NonZero -------------------------------------------------


def _true_positions(node: Node, mask: Expr, n: int) -> Expr:
    """The positions of the true entries of the bool vector ``mask`` (``n`` long), in order,
    as an int64 vector whose length is a shape variable bound at run time: each true entry
    is scattered to its rank among them (false ones to a spare slot past the end)."""
    ones = ops.astype(mask, "int64")
    rank = ops.subtract(ix.cumsum(ones, axis=0), _i64_const(1))
    target = ops.where(mask, rank, _i64_const(n))
    slots = ix.scatter_elements(Constant.from_numpy(np.zeros(n + 1, "int64")), target,
                                Constant.from_numpy(np.arange(n, dtype="int64")), axis=0)
    (count,) = node.runtime_dims(ops.sum(ones, keepdims=True), "count")
    return node.emit(ops.take(slots, ops.arange(0, count, 1, "int64"), axis=0), "positions")


def _i64_const(v: int) -> Constant:
    return Constant.from_numpy(np.asarray(v, "int64"))


def _static_shape(node: Node, i: int) -> list[int]:
    shape = node.static_shape(i)
    if shape is None:
        raise node.error(f"input {i} needs a static shape (its output's length is known "
                         "only at run time already)")
    return shape


@converter("Compress", since=9)
def _compress(node: Node) -> Expr:
    shape = _static_shape(node, 0)
    cond_shape = _static_shape(node, 1)
    if len(cond_shape) != 1:
        raise node.error(f"the condition must be 1-D, got shape {cond_shape}")
    x = node.input(0)
    axis = node.attr("axis")
    if axis is None:
        x = ops.reshape(x, [-1])
        shape, axis = [int(np.prod(shape, dtype="int64"))], 0
    axis = int(axis)
    if not -len(shape) <= axis < len(shape):
        raise node.error(f"axis {axis} is out of range for rank {len(shape)}")
    axis %= len(shape)
    n = min(cond_shape[0], shape[axis])  # entries past the axis' length are ignored
    cond = node.input(1)
    if node.dtype(1) != "bool":
        cond = ops.not_equal(cond, Constant.from_numpy(np.zeros(()), node.dtype(1)))
    if n != cond_shape[0]:
        cond = ops.take(cond, Constant.from_numpy(np.arange(n, dtype="int64")), axis=0)
    return ops.take(x, _true_positions(node, cond, n), axis=axis)


@converter("NonZero", since=9)
def _non_zero(node: Node) -> Expr:
    shape = _static_shape(node, 0)
    if not shape:
        raise node.error("the input must have at least one dimension")
    n = int(np.prod(shape, dtype="int64"))
    flat = ops.reshape(node.input(0), [n])
    mask = flat if node.dtype(0) == "bool" else ops.not_equal(
        flat, Constant.from_numpy(np.zeros(()), node.dtype(0)))
    pos = _true_positions(node, mask, n)
    strides = np.cumprod([1] + shape[::-1][:-1])[::-1]
    rows = [ops.expand_dims(integer.floor_mod(ops.floor_divide(pos, _i64_const(int(st))),
                                          _i64_const(int(d))), 0)
            for st, d in zip(strides, shape)]
    return rows[0] if len(rows) == 1 else ops.concat(Tuple(fields=tuple(rows)), 0)


@converter("MaxUnpool", since=9)
def _max_unpool(node: Node) -> Expr:
    """Each value of X written at its index (into the whole unpooled tensor, flattened, as
    MaxPool returns them), zeros elsewhere; the unpooled shape follows from the kernel,
    strides and pads, and ``output_shape`` (read at run time when it is not a constant)
    pads it with zeros at the end of each spatial axis, or crops it."""
    shape = node.static_shape(0)
    if shape is None:
        raise node.error("the input's shape must be static")
    k = len(shape) - 2
    kernel = [int(v) for v in node.required_attr("kernel_shape")]
    strides = [int(v) for v in node.attr("strides", [1] * k)]
    pads = [int(v) for v in node.attr("pads", [0] * (2 * k))]
    if k < 1 or len(kernel) != k or len(strides) != k or len(pads) != 2 * k:
        raise node.error(f"kernel_shape, strides and pads do not fit a rank-{len(shape)} "
                         "input")
    inferred = shape[:2] + [(shape[2 + i] - 1) * strides[i] - pads[i] - pads[k + i] +
                            kernel[i] for i in range(k)]
    if min(inferred) < 1:
        raise node.error(f"the unpooled shape {inferred} is empty")
    total = int(np.prod(inferred, dtype="int64"))
    # MaxUnpool's indices are flat positions in [0, total): a negative one is moved below
    # -total, where the scatter's run-time check (which counts [-total, 0) from the end)
    # fails the call.
    idx = ops.reshape(ops.astype(node.input(1), "int64"), [-1])
    idx = ops.where(ops.less(idx, _i64_const(0)), ops.subtract(idx, _i64_const(total)), idx)
    flat = ix.scatter_elements(Constant.from_numpy(np.zeros(total), node.dtype(0)),
                               idx, ops.reshape(node.input(0), [-1]), axis=0)
    y = ops.reshape(flat, inferred)
    if not node.has_input(2):
        return y
    if node.static_shape(2) != [len(shape)]:
        raise node.error(f"output_shape must list {len(shape)} dimensions")
    const = node.const(2)
    dims: list[Any] = [int(v) for v in const] if const is not None else \
        node.runtime_dims(ops.astype(node.input(2), "int64"), "dim")
    for a in range(2, len(shape)):
        # One zero slice appended; positions past the unpooled length read it.
        zero_shape = list(inferred)
        zero_shape[a] = 1
        zero = ops.zeros(zero_shape, node.dtype(0))
        y = ops.concat(Tuple(fields=(y, zero)), a)
        pos = ops.arange(0, dims[a], 1, "int64")
        y = node.emit(ops.take(y, ops.minimum(pos, _i64_const(inferred[a])), axis=a),
                      "unpooled")
        inferred[a] = dims[a]
    return y


@converter("TensorScatter", since=24)
def _tensor_scatter(node: Node) -> Expr:
    """``past_cache`` with ``update`` written along ``axis`` from each batch entry's write
    index (``write_indices``, 0 when absent; modulo the cache length in ``circular``
    mode): every output element reads the update element that lands on it, or the cache.
    A linear write past either end of the cache fails at run time."""
    past, update = node.input(0), node.input(1)
    shape, upd = node.static_shape(0), node.static_shape(1)
    if shape is None or upd is None:
        raise node.error("past_cache and update need static shapes")
    if node.dtype(0) != node.dtype(1):
        raise node.error(f"past_cache ({node.dtype(0)}) and update ({node.dtype(1)}) must "
                         "share a dtype")
    mode = node.attr("mode", "linear")
    if mode not in ("linear", "circular"):
        raise node.error(f"mode {mode!r} is not 'linear' or 'circular'")
    rank = len(shape)
    axis = _axis(node, int(node.attr("axis", -2)), rank)
    if axis == 0:
        raise node.error("axis must not be the batch axis (0)")
    if len(upd) != rank or any(a != b for d, (a, b) in enumerate(zip(shape, upd))
                               if d != axis) or upd[axis] > shape[axis]:
        raise node.error(f"update {upd} must match past_cache {shape} except along axis "
                         f"{axis}, where it may be shorter")
    cache_len, length = shape[axis], upd[axis]
    if node.has_input(2):
        starts = ops.reshape(ops.astype(_int_indices(node, 2, "write_indices"), "int64"),
                             [shape[0]])
    else:
        starts = Constant.from_numpy(np.zeros(shape[0], "int64"))
    # j[b, s]: the position in the update that lands on cache position s of batch b.
    pos = Constant.from_numpy(np.arange(cache_len, dtype="int64")[None, :])
    offset = ops.subtract(pos, ops.expand_dims(starts, 1))
    if mode == "circular":
        j = integer.floor_mod(offset, _i64_const(cache_len))
    else:
        bad = ops.logical_or(ops.less(starts, _i64_const(0)),
                             ops.greater(ops.add(starts, _i64_const(length)),
                                         _i64_const(cache_len)))
        node.runtime_check(ops.sum(ops.astype(bad, "int64")),
                           "write_indices_out_of_range")
        j = offset
    lands = ops.logical_and(ops.greater_equal(j, _i64_const(0)),
                            ops.less(j, _i64_const(length)))
    j = ops.minimum(ops.maximum(j, _i64_const(0)), _i64_const(max(length - 1, 0)))
    # Broadcast [batch, cache_len] to the cache's shape: batch at 0, positions at axis.
    view = [shape[0]] + [1] * (rank - 1)
    view[axis] = cache_len
    if length == 0:
        return past
    lands = ops.broadcast_to(ops.reshape(lands, view), shape)
    gathered = ix.gather_elements(update, ops.broadcast_to(ops.reshape(j, view), shape),
                                  axis=axis)
    return ops.where(lands, gathered, past)

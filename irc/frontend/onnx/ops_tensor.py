"""Converters of ONNX operators that move, select or create data: ``Reshape``,
``Transpose``, ``Flatten``, ``Squeeze``, ``Unsqueeze``, ``Concat``, ``Split``, ``Slice``,
``Gather``, ``Expand``, ``Tile``, ``Shape``, ``Size``, ``Identity``, ``Dropout``,
``Constant``, ``ConstantOfShape``, ``Range``, ``Pad``.

Shape-like inputs (a target shape, slice bounds, axes, repeats, pads) must be known at
import time: constants, or symbolic shape values (``scope.SymShape``) where noted."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core import dtype as dt
from ...core.diagnostics import UnsupportedOperatorError
from ...ir import ops
from ...ir.expr import Constant, Expr, PrimValue, ShapeExpr, Tuple
from ...ir.struct_info import TensorStructInfo
from ...ir.struct_info_analysis import simplify
from ...tir import expr as E
from .importer import Node
from .ops_elementwise import scalar
from .protos import valid_name
from .registry import DROPOUT_TRAINING, converter
from .scope import SymShape

_INT64_MAX = (1 << 63) - 1


def _axis(node: Node, axis: int, ndim: int, what: str = "axis") -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise node.error(f"{what} {axis} is out of range for rank {ndim}")
    return axis % ndim if ndim else 0


def _shape_expr(dims: Any) -> ShapeExpr:
    return ShapeExpr(values=tuple(E.IntImm(dtype="int64", value=int(d))
                                  if isinstance(d, (int, np.integer)) else d for d in dims))


@converter("Identity", since=1)
def _identity(node: Node) -> Any:
    s = node.shape_value(0)
    return s if s is not None else node.input(0)


@converter("Dropout", since=7)
def _dropout(node: Node) -> Any:
    """Inference: the input unchanged, and a mask of ones when asked for. Training mode
    with a ratio above 0 draws a random mask, which irc refuses
    (``registry.DROPOUT_TRAINING``): at import when the mode and the ratio are constants,
    else by a run-time check."""
    if node.has_input(2):
        mode = node.const(2)
        ratio = node.const(1) if node.has_input(1) else np.float32(0.5)
        if mode is not None and ratio is not None:
            if bool(mode) and float(ratio) != 0:
                raise UnsupportedOperatorError(
                    f"ONNX node {node.name!r} (Dropout): {DROPOUT_TRAINING}")
        elif mode is None or bool(mode):
            t = ops.astype(node.input(2), "bool")
            r = node.input(1) if node.has_input(1) else scalar(0.5, "float32")
            nonzero = ops.not_equal(r, ops.zeros_like(r))
            node.runtime_check(ops.astype(ops.logical_and(t, nonzero), "int64"),
                               "training_mode_is_not_supported")
    x = node.input(0)
    if len(node.output_names) > 1 and node.output_names[1]:
        return [x, ops.ones_like(x, "bool")]
    return x


@converter("Constant", since=1)
def _constant(node: Node) -> Expr:
    # Reached only when import-time evaluation could not run it (reference missing).
    for key in ("value_float", "value_int"):
        if key in node.attrs:
            return Constant.from_numpy(np.asarray(node.attrs[key],
                                                  "float32" if "float" in key else "int64"))
    for key in ("value_floats", "value_ints"):
        if key in node.attrs:
            return Constant.from_numpy(np.asarray(node.attrs[key],
                                                  "float32" if "float" in key else "int64"))
    if "value" in node.attrs:
        return Constant.from_numpy(node.graph.onnx.numpy_helper.to_array(node.attrs["value"]))
    raise node.error("has no value irc can read (sparse and string constants are not "
                     "supported)")


@converter("Shape", since=1)
def _shape(node: Node) -> SymShape:
    dims = list(node.shape(0))
    n = len(dims)
    start = int(node.attr("start", 0)) if node.opset >= 15 else 0
    end = node.attr("end") if node.opset >= 15 else None
    start = min(max(start + n if start < 0 else start, 0), n)
    stop = n if end is None else min(max(int(end) + n if int(end) < 0 else int(end), 0), n)
    return SymShape(dims[start:stop])


@converter("Size", since=1)
def _size(node: Node) -> SymShape:
    total: Any = 1
    for d in node.shape(0):
        total = total * d
    return SymShape([total], scalar=True)


def _target_shape(node: Node, i: int, allow_zero: bool) -> list[Any]:
    s = node.sym(i)
    if s is None:
        raise node.error(f"the target shape (input {i}) must be known at import time "
                         "(a constant or shape arithmetic on static or symbolic shapes)")
    dims = list(s.dims)
    out = []
    for j, d in enumerate(dims):
        if isinstance(d, E.IntImm) and int(d.value) == 0 and not allow_zero:
            # Input 0 is read only here: for ConstantOfShape it is the shape itself.
            in_shape = node.shape(0) if node.has_input(0) else ()
            if j >= len(in_shape):
                raise node.error(f"shape entry {j} is 0 (copy the input's dimension), but "
                                 f"the input has rank {len(in_shape)}")
            out.append(in_shape[j])
        elif isinstance(d, E.IntImm):
            out.append(int(d.value))
        else:
            out.append(d)
    return out


@converter("Reshape", since=5)
def _reshape(node: Node) -> Expr:
    allow_zero = bool(node.attr("allowzero", 0)) if node.opset >= 14 else False
    if node.sym(1) is None:
        return _reshape_runtime(node, allow_zero)
    dims = _target_shape(node, 1, allow_zero)
    if sum(1 for d in dims if isinstance(d, int) and d == -1) > 1:
        raise node.error("the target shape has more than one -1")
    return ops.reshape(node.input(0), _shape_expr(dims) if any(
        not isinstance(d, int) for d in dims) else dims)


@converter("Transpose", since=1)
def _transpose(node: Node) -> Expr:
    perm = node.attr("perm")
    n = node.ndim(0)
    if perm is None:
        perm = list(range(n))[::-1]
    if sorted(int(p) % max(n, 1) for p in perm) != list(range(n)):
        raise node.error(f"perm {list(perm)} is not a permutation of the {n} axes")
    return ops.permute_dims(node.input(0), [int(p) for p in perm])


@converter("Flatten", since=1)
def _flatten(node: Node) -> Expr:
    shape = node.shape(0)
    n = len(shape)
    axis = int(node.attr("axis", 1))
    if not -n <= axis <= n:
        raise node.error(f"axis {axis} is out of range for rank {n}")
    axis = axis + n if axis < 0 else axis
    outer: Any = 1
    for d in shape[:axis]:
        outer = outer * d
    inner: Any = 1
    for d in shape[axis:]:
        inner = inner * d
    dims = [outer, inner]
    static = all(isinstance(d, (int, E.IntImm)) for d in dims)
    if static:
        return ops.reshape(node.input(0), [int(d.value) if isinstance(d, E.IntImm) else int(d)
                                           for d in dims])
    return ops.reshape(node.input(0), _shape_expr(dims))


def _axes(node: Node, attr_since: int | None = None) -> list[int] | None:
    """The axes: input 1 from ``attr_since`` on, else the attribute."""
    if attr_since is not None and node.opset >= attr_since:
        return node.ints(1, "axes") if node.has_input(1) else None
    a = node.attr("axes")
    return None if a is None else [int(v) for v in a]


@converter("Squeeze", since=1)
def _squeeze(node: Node) -> Any:
    if node.opset >= 13 and node.has_input(1) and node.const(1) is None:
        return _squeeze_runtime(node)
    axes = _axes(node, 13)
    s = node.shape_value(0)
    if s is not None and len(s.dims) == 1 and not s.scalar:
        return SymShape(s.dims, scalar=True)
    n = node.ndim(0)
    if axes is None:
        dims = node.shape(0)
        axes = [i for i, d in enumerate(dims) if isinstance(d, E.IntImm) and d.value == 1]
        symbolic = [i for i, d in enumerate(dims) if not isinstance(d, E.IntImm)]
        if symbolic:
            # The result's rank must be known now: a symbolic dimension is taken to be
            # other than 1, which is checked when the model runs.
            shape = node.graph.shape_tensor(SymShape([dims[i] for i in symbolic]),
                                            f"{node.name}_dims")
            node.runtime_check(ops.sum(ops.astype(ops.equal(shape, scalar(1, "int64")),
                                                  "int64")),
                               "symbolic_unit_dim")
    return ops.squeeze(node.input(0), [_axis(node, a, n) for a in axes])


@converter("Unsqueeze", since=1)
def _unsqueeze(node: Node) -> Any:
    if node.opset >= 13 and node.has_input(1) and node.const(1) is None:
        return _unsqueeze_runtime(node)
    axes = _axes(node, 13)
    if axes is None:
        raise node.error("needs axes")
    s = node.shape_value(0)
    if s is not None and s.scalar and len(axes) == 1:
        return SymShape(s.dims)
    n = node.ndim(0) + len(axes)
    norm = sorted(_axis(node, a, n) for a in axes)
    if len(set(norm)) != len(norm):
        raise node.error(f"axes {axes} repeat an axis")
    out = node.input(0)
    for a in norm:
        out = ops.expand_dims(out, a)
    return out


@converter("Concat", since=4)
def _concat(node: Node) -> Any:
    present = [i for i in range(node.num_inputs) if node.has_input(i)]
    syms = [node.sym(i) for i in present]
    if all(s is not None and not s.scalar for s in syms) and \
            any(node.shape_value(i) is not None for i in present):
        return SymShape([d for s in syms for d in s.dims])
    items = [node.input(i) for i in present]
    n = node.ndim(present[0])
    axis = _axis(node, int(node.required_attr("axis")), n)
    if len(items) == 1:
        return items[0]
    return ops.concat(Tuple(fields=tuple(items)), axis)


@converter("Split", since=2)
def _split(node: Node) -> Any:
    shape = node.shape(0)
    n = len(shape)
    axis = _axis(node, int(node.attr("axis", 0)), n)
    outputs = len(node.output_names)
    if node.opset >= 13:
        if node.has_input(1) and node.const(1) is None:
            return split_runtime(node, axis, outputs)
        sizes = node.ints(1, "split") if node.has_input(1) else None
    else:
        sizes = node.attr("split")
    if sizes is None and node.opset >= 18 and "num_outputs" in node.attrs:
        outputs = int(node.attrs["num_outputs"])
    dim = shape[axis]
    if sizes is None:
        if not isinstance(dim, E.IntImm):
            return ops.split(node.input(0), outputs, axis)
        total = int(dim.value)
        chunk = -(-total // outputs)
        sizes = [chunk] * (total // chunk) + ([total % chunk] if total % chunk else [])
        if len(sizes) != outputs:
            raise node.error(f"cannot split {total} into {outputs} parts")
    if len(sizes) == 1:
        return [node.input(0)]
    cuts, acc = [], 0
    for sz in sizes[:-1]:
        acc += int(sz)
        cuts.append(acc)
    return ops.split(node.input(0), cuts, axis)


@converter("Slice", since=10)
def _slice(node: Node) -> Any:
    if any(node.has_input(i) and node.const(i) is None for i in (1, 2, 4)):
        return _slice_runtime(node)
    starts = node.ints(1, "starts")
    ends = node.ints(2, "ends")
    n_in = node.shape_value(0)
    axes = node.ints(3, "axes") if node.has_input(3) else list(range(len(starts)))
    steps = node.ints(4, "steps") if node.has_input(4) else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise node.error("starts, ends, axes and steps differ in length")
    if any(s == 0 for s in steps):
        raise node.error("a step is 0")
    if n_in is not None:
        if axes not in ([0], [-1]):
            raise node.error("slices a 1-d shape value along an axis it does not have")
        return SymShape(list(n_in.dims)[slice(_clamp(starts[0]), _clamp(ends[0]), steps[0])])
    nd = node.ndim(0)
    axes = [_axis(node, a, nd) for a in axes]
    return ops.strided_slice(node.input(0), axes, [_clamp(s) for s in starts],
                             [_clamp(e) for e in ends], steps)


def _clamp(v: int) -> int:
    # ONNX uses INT64_MIN/MAX for "to the end"; keep them in range for irc's attributes.
    return max(min(v, _INT64_MAX >> 1), -(_INT64_MAX >> 1))


@converter("Gather", since=1)
def _gather(node: Node) -> Any:
    axis = int(node.attr("axis", 0))
    s = node.shape_value(0)
    idx = node.const(1)
    if s is not None and idx is not None:
        picked = [s.dims[int(i)] for i in idx.reshape(-1)]
        return SymShape(picked, scalar=idx.ndim == 0)
    n = node.ndim(0)
    axis = _axis(node, axis, n)
    data = node.input(0)
    if idx is not None:
        dim = node.shape(0)[axis]
        if isinstance(dim, E.IntImm):
            size = int(dim.value)
            if ((idx < -size) | (idx >= size)).any():
                raise node.error(f"an index is out of range for axis {axis} of size {size}")
            idx = np.where(idx < 0, idx + size, idx)
            return ops.take(data, Constant.from_numpy(idx.astype("int64")), axis)
    return ops.take(data, node.input(1), axis, mode="raise")


@converter("Expand", since=8)
def _expand(node: Node) -> Expr:
    if node.sym(1) is None:
        return _expand_runtime(node)
    target = _target_shape(node, 1, allow_zero=True)
    in_shape = list(node.shape(0))
    n = max(len(target), len(in_shape))
    target = [1] * (n - len(target)) + target
    padded = [1] * (n - len(in_shape)) + in_shape
    out = []
    for t, d in zip(target, padded):
        # Expand broadcasts both ways: a 1 in the target keeps the input's dimension.
        out.append(d if isinstance(t, int) and t == 1 else t)
    x = node.input(0)
    if any(not isinstance(d, int) for d in out):
        return ops.broadcast_to(x, _shape_expr(out))
    return ops.broadcast_to(x, out)


@converter("Tile", since=6)
def _tile(node: Node) -> Expr:
    if node.const(1) is None:
        return _tile_runtime(node)
    reps = node.ints(1, "repeats")
    if len(reps) != node.ndim(0):
        raise node.error(f"repeats has {len(reps)} entries for an input of rank "
                         f"{node.ndim(0)}")
    return ops.tile(node.input(0), reps)


@converter("ConstantOfShape", since=9)
def _constant_of_shape(node: Node) -> Expr:
    if node.sym(0) is None:
        vec = _int_vector(node, 0, "the target shape")
        node.runtime_check(ops.max(ops.astype(ops.less(vec, _i64(0)), "int64")),
                           "negative_dim")
        dims: list[Any] = list(node.runtime_dims(vec, "dim"))
    else:
        dims = _target_shape(node, 0, allow_zero=True)
    value = node.attr("value")
    if value is None:
        arr = np.zeros(1, "float32")
    else:
        arr = node.graph.onnx.numpy_helper.to_array(value).reshape(-1)
    dtype = dt.from_numpy(arr.dtype)
    shape = _shape_expr(dims) if any(not isinstance(d, int) for d in dims) else dims
    return ops.full(shape, Constant.from_numpy(arr.reshape(()).astype(arr.dtype)), dtype)


@converter("Range", since=11)
def _range(node: Node) -> Expr:
    # Each bound is a constant or, for integer ranges, a scalar symbolic shape value
    # (``arange(x.shape[1])`` as exporters write position ids and causal masks).
    bounds: list[Any] = []
    dtype = "int64"  # a symbolic shape value is int64
    for i in range(3):
        c = node.const(i)
        s = node.shape_value(i)
        if c is not None:
            bounds.append(c.reshape(()).item())
            dtype = str(c.dtype)
        elif s is not None and s.scalar:
            bounds.append(s.dims[0])
        else:  # a run-time tensor
            return _range_runtime(node, node.dtype(0))
    start, limit, delta = bounds
    if isinstance(delta, (int, float)) and delta == 0:
        raise node.error("delta is 0")
    out = ops.arange(start, limit, delta, dtype)
    if isinstance(delta, int) and delta > 0 and not all(isinstance(b, int) for b in bounds):
        # Bounds read from shapes count a non-negative number of elements; saying so gives
        # the result the length the rest of the graph expects (``seq``, where arange's
        # own inference must write ``max(0, seq)``). The VM checks it when the model runs.
        length = simplify((E.convert(limit, "int64") - start + (delta - 1)) // delta)
        return node.graph.bb.match_cast(out, TensorStructInfo(shape=(length,), dtype=dtype),
                                        valid_name(node.output_names[0]))
    return out


@converter("Pad", since=11)
def _pad(node: Node) -> Expr:
    n = node.ndim(0)
    if node.const(1) is None or (node.has_input(2) and node.const(2) is None) or \
            (node.has_input(3) and node.const(3) is None):
        return _pad_runtime(node)
    pads = node.ints(1, "pads")
    axes = node.ints(3, "axes") if node.has_input(3) else list(range(n))
    if len(pads) != 2 * len(axes):
        raise node.error(f"pads has {len(pads)} entries for {len(axes)} axes")
    width = [0] * (2 * n)
    for j, a in enumerate(axes):
        a = _axis(node, a, n)
        width[2 * a], width[2 * a + 1] = pads[j], pads[len(axes) + j]
    mode = node.attr("mode", "constant")
    modes = {"constant": "constant", "reflect": "reflect", "edge": "replicate",
             "wrap": "circular"}
    if mode not in modes:
        raise node.error(f"mode {mode!r} is not one of {', '.join(modes)}")
    value = 0.0
    if node.has_input(2):
        c = node.const(2)
        value = float(c.reshape(-1)[0]) if c.size else 0.0
    if mode != "constant":
        _check_padded_lengths(node, width, mode)
    return ops.nn.pad(node.input(0), width, modes[mode], value)


def _check_padded_lengths(node: Node, width: list[int], mode: str) -> None:
    """Check that each padded axis has what ``mode`` needs after cropping: more elements
    than the reflect pad, at least one to replicate or wrap. Axes of known length are
    checked now (an import error naming the node, as ONNX Runtime refuses such a node),
    the others when the model runs."""
    dims, needs = [], []
    for a, d in enumerate(node.shape(0)):
        before, after = width[2 * a], width[2 * a + 1]
        most = max(before, after)
        if most <= 0:
            continue
        crop = max(0, -before) + max(0, -after)
        need = (most + 1 if mode == "reflect" else 1) + crop
        if not isinstance(d, E.IntImm):
            dims.append(d)
            needs.append(need)
            continue
        left = int(d.value) - crop
        if mode == "reflect" and most > left - 1:
            raise node.error(f"reflect padding of axis {a} by {most} needs more than {most} "
                             f"elements, the axis has {left}"
                             + (" after cropping" if crop else ""),
                             hint="ONNX Runtime refuses it too; use mode 'edge' or smaller "
                                  "pads")
        if left < 1:
            raise node.error(f"{mode} padding of axis {a}, which is empty"
                             + (" after cropping" if crop else ""))
    if dims:
        lengths = ops.concat(Tuple(fields=tuple(ops.full([1], PrimValue(value=d), "int64")
                                                for d in dims)), 0)
        node.runtime_check(_any(ops.less(lengths, _i64(needs))), f"{mode}_pad_too_large")


# -- shape-like inputs known only at run time ----------------------------------------------
#
# The values are read by the compiled program: small int64 computations give the result's
# dimensions, ``Node.runtime_dims`` binds them to shape variables, and the data moves by
# ``take`` along index vectors (slices, pads, tiles), so every case stays compiled code.


def _i64(values: Any) -> Constant:
    return Constant.from_numpy(np.asarray(values, "int64"))


def _int_vector(node: Node, i: int, what: str) -> Expr:
    """Input ``i``, a 1-D integer tensor of known length, as int64."""
    x = node.input(i)
    sinfo = node.sinfo(i)
    if sinfo.ndim == 0:
        x = ops.reshape(x, [1])
    elif sinfo.ndim != 1 or node.static_shape(i) is None:
        raise node.error(f"{what} (input {i}) must be a 1-D tensor of known length")
    if not str(sinfo.dtype).startswith(("int", "uint")):
        raise node.error(f"{what} (input {i}) must be an integer tensor, got {sinfo.dtype}")
    return node.emit(ops.astype(x, "int64") if str(sinfo.dtype) != "int64" else x,
                     what.replace(" ", "_"))


def _static_input_shape(node: Node, why: str) -> list[int]:
    shape = node.static_shape(0)
    if shape is None:
        raise node.error(f"{why} needs the input's shape to be static; fix its dimensions "
                         "with from_onnx(..., shape_dict={...})")
    return shape


def _any(cond: Expr) -> Expr:
    return ops.max(ops.astype(cond, "int64"))


def _reshape_runtime(node: Node, allow_zero: bool) -> Expr:
    s = _int_vector(node, 1, "the target shape")
    k = int(node.static_shape(1)[0]) if node.ndim(1) == 1 else 1
    in_shape = node.static_shape(0)
    if in_shape is not None:
        total: Expr = _i64(int(np.prod(in_shape, dtype="int64")))
        copy: Expr = _i64([in_shape[j] if j < len(in_shape) else 0 for j in range(k)])
    else:  # the input's dimensions are read when the model runs too
        dims = list(node.shape(0))
        in_t = node.graph.shape_tensor(SymShape(dims), f"{node.name}_input_shape")
        total = ops.prod(in_t) if dims else _i64(1)
        r = len(dims)
        if r >= k:
            copy = ops.take(in_t, _i64(np.arange(k)), 0) if k else _i64([])
        else:
            copy = ops.concat(Tuple(fields=(in_t, _i64([0] * (k - r)))), 0) if r else \
                _i64([0] * k)
    if not allow_zero:
        s = ops.where(ops.equal(s, _i64(0)), copy, s)
    minus = ops.equal(s, _i64(-1))
    known = ops.prod(ops.where(minus, _i64(1), s))
    s = node.emit(ops.where(minus, ops.floor_divide(total, ops.maximum(known, _i64(1))),
                            s), "target_shape")
    node.runtime_check(ops.not_equal(ops.prod(s), total), "element_count")
    return ops.reshape(node.input(0), _shape_expr(node.runtime_dims(s, "dim")))


def _expand_runtime(node: Node) -> Expr:
    """Expand to a target shape computed when the model runs. The input's dimensions may
    be symbolic too: they are read at run time then, and each output dimension is the
    target's where the input has 1, the input's elsewhere (a mismatch fails the run)."""
    # Known dimensions as ints, symbolic ones as expressions.
    in_shape = [d.value if isinstance(d, E.IntImm) else d for d in node.shape(0)]
    s = _int_vector(node, 1, "the target shape")
    k = int(node.static_shape(1)[0]) if node.ndim(1) == 1 else 1
    n = max(k, len(in_shape))
    if k < n:
        s = ops.concat(Tuple(fields=(_i64([1] * (n - k)), s)), 0)
    padded = [1] * (n - len(in_shape)) + in_shape
    if all(isinstance(d, int) for d in padded):
        have: Expr = _i64(padded)
    else:  # the input's dimensions as a tensor, read when the model runs
        have = node.graph.shape_tensor(SymShape(padded), f"{node.name}_input_shape")
    out = node.emit(ops.where(ops.equal(s, _i64(1)), have, s), "expanded_shape")
    node.runtime_check(_any(ops.logical_and(ops.not_equal(out, have),
                                            ops.not_equal(have, _i64(1)))),
                       "broadcast")
    dims = node.runtime_dims(out, "dim")
    # A static input dimension other than 1 is the output's; the others were read.
    final = [p if isinstance(p, int) and p != 1 else d for d, p in zip(dims, padded)]
    return ops.broadcast_to(node.input(0), _shape_expr(final))


def _floor_mod(x: Expr, d: int) -> Expr:
    return ops.subtract(x, ops.multiply(ops.floor_divide(x, _i64(d)), _i64(d)))


def _element(vec: Expr, j: int) -> Expr:
    """Element ``j`` of a 1-D tensor, as a 1-element tensor."""
    return ops.take(vec, _i64([j]), 0)


def _gather_axis(node: Node, x: Expr, idx: Expr, axis: int) -> Expr:
    return node.emit(ops.take(x, idx, axis), "gathered")


def _tile_runtime(node: Node) -> Expr:
    in_shape = _static_input_shape(node, "repeats known only at run time")
    reps = _int_vector(node, 1, "repeats")
    if int(node.static_shape(1)[0]) != len(in_shape):
        raise node.error(f"repeats has {node.static_shape(1)[0]} entries for an input of "
                         f"rank {len(in_shape)}")
    node.runtime_check(_any(ops.less(reps, _i64(0))), "negative_repeat")
    dims = node.runtime_dims(ops.multiply(reps, _i64(in_shape)), "dim")
    x = node.input(0)
    for a, (d, o) in enumerate(zip(in_shape, dims)):
        idx = _floor_mod(ops.arange(0, o, 1, "int64"), max(d, 1))
        x = _gather_axis(node, x, idx, a)
    return x


def _range_runtime(node: Node, dtype: str) -> Expr:
    start, limit, delta = (node.input(i) for i in range(3))
    node.runtime_check(ops.equal(delta, scalar(0, dtype)), "zero_delta")
    span = ops.divide(ops.astype(ops.subtract(limit, start), "float64"),
                      ops.astype(delta, "float64"))
    count = ops.astype(ops.maximum(ops.ceil(span), scalar(0, "float64")), "int64")
    (n,) = node.runtime_dims(ops.reshape(count, [1]), "len")
    steps = ops.astype(ops.arange(0, n, 1, "int64"), dtype)
    return ops.add(start, ops.multiply(steps, delta))


def _axis_hits(node: Node, i: int, k: int, n: int) -> tuple[Expr, Expr]:
    """For ``k`` axes of a rank-``n`` value given at run time by input ``i``: ``eq`` (n x k,
    axis j is entry m) and ``hit`` (n, int64: 1 where axis j is listed), checking at run
    time that every axis is in range and none repeats."""
    a = _int_vector(node, i, "axes")
    a = ops.where(ops.less(a, _i64(0)), ops.add(a, _i64(n)), a)
    node.runtime_check(_any(ops.logical_or(ops.less(a, _i64(0)),
                                           ops.greater_equal(a, _i64(n)))), "axis_range")
    eq = node.emit(ops.equal(_i64(np.arange(n).reshape(n, 1)), ops.reshape(a, [1, k])),
                   "axis_hits")
    hit = node.emit(ops.max(ops.astype(eq, "int64"), axis=1), "axis_listed")
    node.runtime_check(ops.not_equal(ops.sum(hit), _i64(k)), "repeated_axis")
    return eq, hit


def _kept_positions(hit: Expr, n: int, m: int) -> Expr:
    """(m x n, bool): entry (q, p) when axis p is the q-th axis not in ``hit``."""
    kept = ops.subtract(_i64(1), hit)
    lower = Constant.from_numpy(np.tril(np.ones((n, n), bool)))
    cum = ops.sum(ops.where(lower, ops.reshape(kept, [1, n]), _i64(0)), axis=1)  # kept <= p
    q = _i64(np.arange(m).reshape(m, 1))
    return ops.logical_and(ops.greater(ops.reshape(kept, [1, n]), _i64(0)),
                           ops.equal(ops.reshape(ops.subtract(cum, _i64(1)), [1, n]), q))


def _unsqueeze_runtime(node: Node) -> Expr:
    """Unsqueeze with axes known only at run time: the output's rank is known (the input's
    plus the number of axes); its dimensions are computed at run time."""
    k = int(node.static_shape(1)[0]) if node.ndim(1) == 1 else 1
    r = node.ndim(0)
    n = r + k
    if r == 0:
        return ops.reshape(node.input(0), [1] * n)
    _eq, hit = _axis_hits(node, 1, k, n)
    # Output axis p reads input axis q where p is the q-th axis not inserted.
    pick = _kept_positions(hit, n, r)  # r x n
    src = ops.sum(ops.where(pick, _i64(np.arange(r).reshape(r, 1)), _i64(0)), axis=0)
    dims = ops.where(ops.greater(hit, _i64(0)), _i64(1),
                     ops.take(_input_shape_tensor(node), src, axis=0))
    return ops.reshape(node.input(0), node.runtime_dims(dims, "dim"))


def _squeeze_runtime(node: Node) -> Expr:
    """Squeeze with axes known only at run time: each listed axis must be 1 (checked at
    run time); the kept dimensions are read in order."""
    k = int(node.static_shape(1)[0]) if node.ndim(1) == 1 else 1
    n = node.ndim(0)
    m = n - k
    if m < 0:
        raise node.error(f"{k} axes to squeeze from a rank-{n} input")
    _eq, hit = _axis_hits(node, 1, k, n)
    shape = _input_shape_tensor(node)
    node.runtime_check(_any(ops.logical_and(ops.greater(hit, _i64(0)),
                                            ops.not_equal(shape, _i64(1)))), "axis_not_1")
    if m == 0:
        return ops.reshape(node.input(0), [])
    pick = _kept_positions(hit, n, m)  # m x n
    dims = ops.sum(ops.where(pick, ops.reshape(shape, [1, n]), _i64(0)), axis=1)
    return ops.reshape(node.input(0), node.runtime_dims(dims, "dim"))


def split_runtime(node: Node, axis: int, outputs: int) -> list[Expr]:
    """Split with sizes known only at run time: each output's length along ``axis`` is a
    shape variable bound from the sizes; they must add up to the axis (checked)."""
    sizes = _int_vector(node, 1, "split")
    if node.static_shape(1) != [outputs]:
        raise node.error(f"split has {node.static_shape(1)[0]} entries for {outputs} outputs")
    total = ops.take(_input_shape_tensor(node), _i64([axis]), axis=0)
    node.runtime_check(_any(ops.less(sizes, _i64(0))), "negative_size")
    node.runtime_check(ops.reshape(ops.not_equal(ops.sum(sizes, keepdims=True), total), []),
                       "sizes_do_not_add_up")
    dims = node.runtime_dims(sizes, "part")
    x = node.input(0)
    out: list[Expr] = []
    start: Any = None
    for d in dims:
        idx = ops.arange(0, d, 1, "int64")
        if start is not None:
            idx = ops.add(idx, ops.full([], PrimValue(value=start), "int64"))
        out.append(_gather_axis(node, x, idx, axis))
        start = d if start is None else start + d
    return out


def _spread(node: Node, k: int, n: int) -> Any:
    """For axes given at run time (input 3, ``k`` of them, of a rank-``n`` input): a
    function spreading a ``k``-vector over all ``n`` axes, a default where an axis is not
    listed."""
    eq, hit = _axis_hits(node, 3, k, n)

    def spread(vec: Expr, default: Any) -> Expr:
        picked = ops.sum(ops.where(eq, ops.reshape(vec, [1, k]), _i64(0)), axis=1)
        fallback = default if isinstance(default, Expr) else _i64(default)
        return node.emit(ops.where(ops.greater(hit, _i64(0)), picked, fallback))

    return spread


def _input_shape_tensor(node: Node) -> Expr:
    """The shape of input 0 as an int64 vector: a constant when static, else computed at
    run time from its shape variables."""
    static = node.static_shape(0)
    if static is not None:
        return _i64(static)
    return node.graph.shape_tensor(SymShape(node.shape(0)),
                                   f"{node.output_names[0]}_input_shape")


def _slice_runtime(node: Node) -> Expr:
    in_shape = _input_shape_tensor(node)
    starts = _int_vector(node, 1, "starts")
    ends = _int_vector(node, 2, "ends")
    k = int(node.static_shape(1)[0])
    if node.static_shape(2) != [k]:
        raise node.error("starts and ends differ in length")
    nd = node.ndim(0)
    steps = _int_vector(node, 4, "steps") if node.has_input(4) else _i64([1] * k)
    if node.has_input(3) and node.const(3) is None:
        spread = _spread(node, k, nd)
        starts, ends = spread(starts, [0] * nd), spread(ends, in_shape)
        steps = spread(steps, [1] * nd)
        axes, k = list(range(nd)), nd
    else:
        axes = node.ints(3, "axes") if node.has_input(3) else list(range(k))
        if len(axes) != k:
            raise node.error("starts and axes differ in length")
        axes = [_axis(node, a, nd) for a in axes]
        if len(set(axes)) != k:
            raise node.error(f"axes {axes} repeat an axis")
    node.runtime_check(_any(ops.equal(steps, _i64(0))), "zero_step")
    dim = node.emit(ops.take(in_shape, _i64(axes), axis=0), "dims")
    pos = ops.greater(steps, _i64(0))

    def norm(v: Expr, lo_neg: int) -> Expr:
        # Negative values count from the end; clamp to [0, d] going forward, [-1, d-1]
        # going backward (ONNX's rules).
        v = ops.where(ops.less(v, _i64(0)), ops.add(v, dim), v)
        lo = ops.where(pos, _i64(0), _i64(lo_neg))
        hi = ops.where(pos, dim, ops.subtract(dim, _i64(1)))
        return ops.minimum(ops.maximum(v, lo), hi)

    b = node.emit(norm(starts, 0), "begin")
    e = norm(ends, -1)
    sign = ops.where(pos, _i64(1), _i64(-1))
    count = ops.floor_divide(ops.add(ops.subtract(e, b), ops.subtract(steps, sign)), steps)
    dims = node.runtime_dims(ops.maximum(count, _i64(0)), "dim")
    x = node.input(0)
    for j, a in enumerate(axes):
        idx = ops.add(_element(b, j), ops.multiply(ops.arange(0, dims[j], 1, "int64"),
                                                   _element(steps, j)))
        x = _gather_axis(node, x, idx, a)
    return x


def _pad_runtime(node: Node) -> Expr:
    in_shape = _static_input_shape(node, "pads known only at run time")
    n = len(in_shape)
    pads = _int_vector(node, 1, "pads")
    runtime_axes = node.has_input(3) and node.const(3) is None
    if runtime_axes:
        k = int(node.static_shape(3)[0]) if node.ndim(3) == 1 else 1
    else:
        axes = node.ints(3, "axes") if node.has_input(3) else list(range(n))
        axes = [_axis(node, a, n) for a in axes]
        k = len(axes)
    if node.static_shape(1) != [2 * k]:
        raise node.error(f"pads has {node.static_shape(1)[0]} entries for {k} axes")
    mode = node.attr("mode", "constant")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise node.error(f"mode {mode!r} is not one of constant, reflect, edge, wrap")
    before = node.emit(ops.strided_slice(pads, [0], [0], [k]), "pads_before")
    after = ops.strided_slice(pads, [0], [k], [2 * k])
    if runtime_axes:
        spread = _spread(node, k, n)
        before, after = spread(before, [0] * n), spread(after, [0] * n)
        axes, k = list(range(n)), n
    dim = _i64([in_shape[a] for a in axes])
    sizes = node.emit(ops.add(ops.add(dim, before), after), "padded_shape")
    node.runtime_check(_any(ops.less(sizes, _i64(0))), "negative_size")
    dims = node.runtime_dims(sizes, "dim")
    x = node.input(0)
    mask: Expr | None = None
    zero = _i64(0)
    for j, a in enumerate(axes):
        d = in_shape[a]
        # Negative pads crop first; the padding applies to the ``length`` elements left
        # (``pos`` indexes them), as in ONNX Runtime.
        b, e = _element(before, j), _element(after, j)
        lo = ops.maximum(ops.negative(b), zero)
        length = ops.subtract(ops.subtract(_i64(d), lo), ops.maximum(ops.negative(e), zero))
        pos = ops.subtract(ops.arange(0, dims[j], 1, "int64"), ops.maximum(b, zero))
        if mode == "constant":
            inside = ops.logical_and(ops.greater_equal(pos, zero), ops.less(pos, length))
            shape = [1] * n
            shape[a] = -1
            m = ops.reshape(inside, shape)
            mask = m if mask is None else ops.logical_and(mask, m)
            kept = pos
        else:
            # What the mode needs of the axis once padded: ONNX Runtime's conditions.
            pads = ops.maximum(ops.maximum(b, e), zero)
            some = ops.minimum(pads, _i64(1))  # 1 where the axis is padded
            need = ops.add(pads, some) if mode == "reflect" else some
            node.runtime_check(_any(ops.less(length, need)), f"{mode}_pad_too_large")
            last = ops.subtract(length, _i64(1))
            if mode == "edge":
                kept = ops.minimum(ops.maximum(pos, zero), last)
            elif mode == "wrap":
                period = ops.maximum(length, _i64(1))
                kept = ops.subtract(pos, ops.multiply(ops.floor_divide(pos, period), period))
            else:
                mag = ops.abs(pos)
                kept = ops.minimum(mag, ops.subtract(ops.add(last, last), mag))
        idx = ops.minimum(ops.maximum(ops.add(kept, lo), zero), _i64(max(d - 1, 0)))
        x = _gather_axis(node, x, idx, a)
    if mask is None:
        return x
    dtype = node.dtype(0)
    value = node.input(2) if node.has_input(2) else scalar(0, dtype)
    if node.has_input(2):
        value = ops.reshape(value, [])
    return ops.where(mask, x, value)


__all__ = ["scalar", "split_runtime"]

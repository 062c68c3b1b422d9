"""Converters of ONNX's image operators: ``Resize`` (opsets 10, 11, 13, 18, 19) and
``Upsample`` (7, 9) to ``R.image.resize``; ``DepthToSpace`` and ``SpaceToDepth`` as
reshapes and transpositions; ``GridSample`` (16, 20) to ``R.image.grid_sample``;
``AffineGrid`` as a product with the constant grid of pixel positions; ``Col2Im`` to
``R.image.col2im``; ``RoiAlign`` (10, 16) to ``R.image.roi_align``.

Scales, sizes and the region of interest known at import time become attributes, the
output shape computed as ONNX's reference computes it. When they are known only at run
time, the compiled kernel reads the scales (and the region of interest) from tensors,
computed in the graph from the inputs (from ``sizes``: ``size / input size``, with the
``keep_aspect_ratio_policy`` applied), and the output shape is the one the model declares
for the node's output (a graph output or a ``value_info``): irc's tensors have shapes
known before the values. The compiled graph checks at run time that the scales or sizes
give that shape, and fails naming the node when they do not.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from ...ir import ops
from ...ir.expr import Constant, Expr
from ...tir import expr as E
from .importer import Node
from .registry import converter

_COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                     "align_corners", "asymmetric", "tf_crop_and_resize")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def declared_shape(node: Node, i: int = 0) -> list[int | None] | None:
    """The shape the model declares for output ``i`` of ``node`` (None for a dimension
    without a value), or None when it declares none."""
    name = node.output_names[i]
    graph = node.graph.proto.graph
    for vi in list(graph.output) + list(graph.value_info):
        if vi.name != name:
            continue
        t = vi.type
        if t.WhichOneof("value") != "tensor_type" or not t.tensor_type.HasField("shape"):
            return None
        return [int(d.dim_value) if d.HasField("dim_value") else None
                for d in t.tensor_type.shape.dim]
    return None


def _static_dim(d: Any) -> int | None:
    return int(d.value) if isinstance(d, E.IntImm) else None


def _f64(values: Any) -> Constant:
    return Constant.from_numpy(np.asarray(values, "float64"))


def _i64(values: Any) -> Constant:
    return Constant.from_numpy(np.asarray(values, "int64"))


def _vector_length(node: Node, i: int) -> int | None:
    """The length of 1-D input ``i`` (0 when absent), None when unknown."""
    if not node.has_input(i):
        return 0
    c = node.const(i)
    if c is not None:
        return int(c.size)
    shape = node.static_shape(i)
    if shape is None or len(shape) != 1:
        return None
    return shape[0]


class _Resize:
    """What one Resize / Upsample node asks for, resolved to ``R.image.resize``."""

    def __init__(self, node: Node):
        self.node = node
        self.rank = node.ndim(0)
        self.in_shape = list(node.shape(0))

    def axes(self) -> list[int]:
        node, r = self.node, self.rank
        axes = node.attr("axes") if node.opset >= 18 else None
        if axes is None:
            return list(range(r))
        out = []
        for a in axes:
            a = int(a)
            if not -r <= a < r:
                raise node.error(f"axis {a} is out of range for an input of rank {r}")
            out.append(a % r)
        if len(set(out)) != len(out):
            raise node.error(f"axes {list(axes)} repeats an axis")
        return out

    def in_dim(self, axis: int, why: str) -> int:
        d = _static_dim(self.in_shape[axis])
        if d is None:
            raise self.node.error(f"axis {axis} has a symbolic size; {why} needs it static",
                                  hint="fix it with from_onnx(..., shape_dict={...})")
        return d

    # -- import-time scales / sizes --------------------------------------------------------
    def static_plan(self, axes: list[int], scales: np.ndarray | None,
                    sizes: np.ndarray | None, policy: str) -> tuple[list[Fraction], list[Any]]:
        """(scale, output size) of every axis, as ONNX's reference computes them but in
        exact arithmetic: a scale from ``scales`` is its binary float, one from ``sizes``
        the ratio ``size / input size``."""
        node, r = self.node, self.rank
        full_scale = [Fraction(1)] * r
        out: list[Any] = list(self.in_shape)
        if scales is not None:
            if len(scales) != len(axes):
                raise node.error(f"scales has {len(scales)} values for {len(axes)} axes")
            for a, s in zip(axes, scales.tolist()):
                if not s > 0 or not math.isfinite(s):
                    raise node.error(f"scales must be positive and finite, got "
                                     f"{scales.tolist()}")
                full_scale[a] = Fraction(s)
            for a in range(r):
                if full_scale[a] != 1:
                    out[a] = math.floor(full_scale[a] * self.in_dim(a, "scaling"))
            return full_scale, out
        assert sizes is not None
        if len(sizes) != len(axes):
            raise node.error(f"sizes has {len(sizes)} values for {len(axes)} axes")
        if any(int(s) < 0 for s in sizes):
            raise node.error(f"sizes must be non-negative, got {sizes.tolist()}")
        ratio = {}
        for a, s in zip(axes, sizes.tolist()):
            d = _static_dim(self.in_shape[a])
            if d is not None:
                ratio[a] = Fraction(int(s), d) if d else Fraction(1)
            elif policy != "stretch":
                ratio[a] = Fraction(int(s), self.in_dim(a, "keep_aspect_ratio_policy"))
            out[a] = int(s)
        if policy == "stretch":
            for a in axes:
                if a in ratio:
                    full_scale[a] = ratio[a]
            return full_scale, out
        scale = min(ratio.values()) if policy == "not_larger" else max(ratio.values())
        for a in axes:
            full_scale[a] = scale
            # ONNX's round_int: the nearest integer, halfway cases up
            out[a] = math.floor(scale * self.in_dim(a, "keep_aspect_ratio_policy") +
                                Fraction(1, 2))
        return full_scale, out

    # -- the node --------------------------------------------------------------------------
    def convert(self, scales_i: int | None, sizes_i: int | None, roi_i: int | None,
                legacy: bool) -> Expr:
        node, r = self.node, self.rank
        mode = node.attr("mode", "nearest")
        if mode not in ("nearest", "linear", "cubic") or (legacy and mode == "cubic"):
            raise node.error(f"mode {mode!r} is not supported (nearest, linear"
                             f"{'' if legacy else ', cubic'})")
        coord = "asymmetric" if legacy else node.attr("coordinate_transformation_mode",
                                                      "half_pixel")
        if coord not in _COORDINATE_MODES or (coord == "half_pixel_symmetric" and
                                              node.opset < 19):
            raise node.error(f"coordinate_transformation_mode {coord!r} is not supported")
        nearest = "floor" if legacy else node.attr("nearest_mode", "round_prefer_floor")
        if nearest not in _NEAREST_MODES:
            raise node.error(f"nearest_mode {nearest!r} is not supported")
        antialias = bool(node.attr("antialias", 0)) and node.opset >= 18
        if antialias and mode == "nearest":
            antialias = False  # ONNX: antialiasing applies to linear and cubic only
        policy = node.attr("keep_aspect_ratio_policy", "stretch") if node.opset >= 18 else \
            "stretch"
        if policy not in ("stretch", "not_larger", "not_smaller"):
            raise node.error(f"keep_aspect_ratio_policy {policy!r} is not supported")
        axes = self.axes()
        n_scales = _vector_length(node, scales_i) if scales_i is not None else 0
        n_sizes = _vector_length(node, sizes_i) if sizes_i is not None else 0
        if n_scales is None or n_sizes is None:
            raise node.error("scales and sizes must be 1-D tensors of known length")
        if n_scales and n_sizes:
            raise node.error("only one of scales and sizes may be given")
        if not n_scales and not n_sizes:
            raise node.error("one of scales and sizes must be given")
        use_scales = n_scales > 0
        vec_i = scales_i if use_scales else sizes_i
        crop = coord == "tf_crop_and_resize"
        roi_len = _vector_length(node, roi_i) if roi_i is not None and crop else 0
        if crop and not roi_len:
            raise node.error("tf_crop_and_resize needs the roi input")
        if crop and roi_len not in (2 * r, 2 * len(axes)):
            raise node.error(f"roi has {roi_len} values; expected {2 * len(axes)}")
        attrs = dict(method=mode, coordinate_transformation_mode=coord,
                     nearest_mode=nearest,
                     cubic_coeff_a=float(node.attr("cubic_coeff_a", -0.75)),
                     exclude_outside=bool(node.attr("exclude_outside", 0)),
                     extrapolation_value=float(node.attr("extrapolation_value", 0.0)),
                     antialias=antialias)
        vec = node.const(vec_i)
        roi_c = node.const(roi_i) if crop else None
        if vec is not None and (roi_c is not None or not crop):
            return self._static(axes, vec, use_scales, policy, roi_c, legacy, attrs)
        return self._runtime(axes, vec_i, use_scales, policy, roi_i if crop else None,
                             legacy, attrs)

    def _full_roi(self, axes: list[int], roi: np.ndarray) -> list[tuple[float, float]]:
        r = self.rank
        flat = [float(v) for v in roi.reshape(-1)]
        full = [(0.0, 1.0)] * r
        if len(flat) == 2 * r:
            full = [(flat[a], flat[r + a]) for a in range(r)]
        else:
            k = len(axes)
            for i, a in enumerate(axes):
                full[a] = (flat[i], flat[k + i])
        return full

    def _legacy_nearest(self, attrs: dict, grows: list[bool]) -> None:
        """Upsample and Resize-10 round down when enlarging and up when shrinking."""
        if attrs["method"] != "nearest" or not grows:
            return
        if all(grows):
            attrs["nearest_mode"] = "floor"
        elif not any(grows):
            attrs["nearest_mode"] = "ceil"
        else:
            raise self.node.error("nearest resizing that enlarges some axes and shrinks "
                                  "others is not supported before opset 11")

    def _static(self, axes: list[int], vec: np.ndarray, use_scales: bool, policy: str,
                roi: np.ndarray | None, legacy: bool, attrs: dict) -> Expr:
        node = self.node
        vec = vec.reshape(-1)
        if use_scales:
            scale, out = self.static_plan(axes, vec.astype("float64"), None, policy)
        else:
            scale, out = self.static_plan(axes, None, vec.astype("int64"), policy)
        full_roi = self._full_roi(axes, roi) if roi is not None else None
        chosen = []
        for a in range(self.rank):
            trivial_roi = full_roi is None or (math.isclose(full_roi[a][0], 0.0) and
                                               math.isclose(full_roi[a][1], 1.0))
            same = isinstance(out[a], int) and out[a] == _static_dim(self.in_shape[a])
            if not (scale[a] == 1 and (same or out[a] is self.in_shape[a]) and trivial_roi):
                chosen.append(a)
        if not chosen:
            return node.input(0)
        for a in chosen:
            self.in_dim(a, "resizing an axis")
        if legacy:
            self._legacy_nearest(attrs, [scale[a] >= 1.0 for a in chosen])
        roi_attr: list[float] = []
        if full_roi is not None:
            roi_attr = [full_roi[a][0] for a in chosen] + [full_roi[a][1] for a in chosen]
        exact = [scale[a] for a in chosen]
        ratios = [] if all(f == Fraction(float(f)) for f in exact) else \
            [f.numerator for f in exact] + [f.denominator for f in exact]
        return ops.image.resize(node.input(0), chosen, [out[a] for a in chosen],
                                [float(f) for f in exact], roi_attr, scale_ratios=ratios,
                                **attrs)

    def _runtime(self, axes: list[int], vec_i: int, use_scales: bool, policy: str,
                 roi_i: int | None, legacy: bool, attrs: dict) -> Expr:
        node = self.node
        declared = declared_shape(node)
        if declared is None or len(declared) != self.rank or any(
                declared[a] is None for a in axes):
            raise node.error(
                f"the {'scales' if use_scales else 'sizes'} are known only at run time and "
                "the model declares no static output shape for the node; irc needs the "
                "output shape before run time", hint="make the scales or sizes constants "
                "(initializers), or declare the output's shape (onnx.shape_inference)")
        out = [int(declared[a]) for a in axes]  # type: ignore[arg-type]
        ins = [self.in_dim(a, "resizing an axis") for a in axes]
        k = len(axes)
        pos = _i64(list(range(k)))
        raw = node.input(vec_i)
        if use_scales:
            scales = ops.astype(ops.take(raw, pos, axis=0), "float64")
            # floor(scale * in) = out, so scale >= out / in.
            min_scales = [o / i if i else 1.0 for o, i in zip(out, ins)]
            actual = ops.floor(ops.multiply(scales, _f64(ins)))
        else:
            sizes = ops.astype(ops.take(raw, pos, axis=0), "float64")
            ratio = ops.divide(sizes, _f64(ins))
            if policy == "stretch":
                scales = ratio
                min_scales = [o / i if i else 1.0 for o, i in zip(out, ins)]
                actual = sizes
            else:
                pick = ops.min if policy == "not_larger" else ops.max
                scales = ops.broadcast_to(ops.reshape(pick(ratio, [0], keepdims=False), [1]),
                                          [k])
                # out = round(scale * in), so scale >= (out - 0.5) / in.
                min_scales = [max(o - 0.5, 0.5) / i if i else 1.0 for o, i in zip(out, ins)]
                actual = ops.floor(ops.add(ops.multiply(scales, _f64(ins)), _f64(0.5)))
        # The kernel writes the declared shape: values that give another one fail at run
        # time instead of resizing to the wrong size.
        node.runtime_check(ops.sum(ops.astype(ops.not_equal(actual, _f64(out)), "int64")),
                           "output_shape_differs_from_the_declared_one")
        if legacy:
            self._legacy_nearest(attrs, [o >= i for o, i in zip(out, ins)])
        roi: Any = ()
        if roi_i is not None:
            roi_vec = node.input(roi_i)
            n = _vector_length(node, roi_i)
            r = self.rank
            if n == 2 * r:
                idx = axes + [r + a for a in axes]
            else:
                idx = list(range(2 * k))
            roi = ops.astype(ops.take(roi_vec, _i64(idx), axis=0), "float64")
            if node.const(roi_i) is not None:
                roi = _f64(node.const(roi_i).reshape(-1)[idx])
        return ops.image.resize(node.input(0), axes, out, scales, roi,
                                min_scales=min_scales if attrs["antialias"] else (), **attrs)


# -- depth <-> space ------------------------------------------------------------------------


def _block_dims(node: Node) -> tuple[int, Any, Any, Any, Any]:
    """(block size, N, C, H, W) of a 4-D input; C, H and W must be static."""
    b = int(node.required_attr("blocksize"))
    if b < 1:
        raise node.error(f"blocksize must be positive, got {b}")
    if node.ndim(0) != 4:
        raise node.error(f"the input must be 4-D (N, C, H, W), got rank {node.ndim(0)}")
    n, c, h, w = node.shape(0)
    dims = [_static_dim(d) for d in (c, h, w)]
    if any(d is None for d in dims):
        raise node.error("the channel and spatial sizes must be static")
    return (b, n, *dims)


@converter("DepthToSpace", since=1)
def _depth_to_space(node: Node) -> Expr:
    b, n, c, h, w = _block_dims(node)
    if c % (b * b):
        raise node.error(f"channels {c} are not divisible by blocksize^2 = {b * b}")
    mode = node.attr("mode", "DCR") if node.opset >= 11 else "DCR"
    x = node.input(0)
    if mode == "DCR":
        x = ops.reshape(x, [n, b, b, c // (b * b), h, w])
        x = ops.permute_dims(x, [0, 3, 4, 1, 5, 2])
    elif mode == "CRD":
        x = ops.reshape(x, [n, c // (b * b), b, b, h, w])
        x = ops.permute_dims(x, [0, 1, 4, 2, 5, 3])
    else:
        raise node.error(f"mode {mode!r} is not DCR or CRD")
    return ops.reshape(x, [n, c // (b * b), h * b, w * b])


@converter("SpaceToDepth", since=1)
def _space_to_depth(node: Node) -> Expr:
    b, n, c, h, w = _block_dims(node)
    if h % b or w % b:
        raise node.error(f"the spatial sizes {h}x{w} are not divisible by blocksize {b}")
    mode = node.attr("mode", "DCR") if node.opset >= 28 else "DCR"
    if mode not in ("DCR", "CRD"):
        raise node.error(f"mode {mode!r} is not DCR or CRD")
    x = ops.reshape(node.input(0), [n, c, h // b, b, w // b, b])
    # DCR: channel (by * b + bx) * C + c; CRD: channel c * b * b + by * b + bx.
    x = ops.permute_dims(x, [0, 3, 5, 1, 2, 4] if mode == "DCR" else [0, 1, 3, 5, 2, 4])
    return ops.reshape(x, [n, c * b * b, h // b, w // b])


# -- grid sampling ------------------------------------------------------------------------

_GRID_MODES = {"bilinear": "linear", "bicubic": "cubic", "nearest": "nearest",
               "linear": "linear", "cubic": "cubic"}


@converter("GridSample", since=16)
def _grid_sample(node: Node) -> Expr:
    mode = node.attr("mode", "bilinear" if node.opset < 20 else "linear")
    names = ("bilinear", "bicubic", "nearest") if node.opset < 20 else \
        ("linear", "cubic", "nearest")
    if mode not in names:
        raise node.error(f"mode {mode!r} is not one of {', '.join(names)}")
    padding = node.attr("padding_mode", "zeros")
    if padding not in ("zeros", "border", "reflection"):
        raise node.error(f"padding_mode {padding!r} is not zeros, border or reflection")
    nd = node.ndim(0)
    if node.opset < 20 and nd != 4:
        raise node.error(f"GridSample before opset 20 takes 4-D input, got rank {nd}")
    if nd < 3 or node.ndim(1) != nd:
        raise node.error(f"X (rank {nd}) and grid (rank {node.ndim(1)}) must have the same "
                         "rank, 3 or more")
    if node.dtype(0) != node.dtype(1) and not node.dtype(1).startswith("float"):
        raise node.error(f"the grid must be floating-point, got {node.dtype(1)}")
    return ops.image.grid_sample(node.input(0), node.input(1), _GRID_MODES[mode], padding,
                                 bool(node.attr("align_corners", 0)))


def _spatial_sizes(node: Node, i: int, k: int, what: str, out_axes: slice) -> list[int]:
    """The ``k`` spatial sizes given by input ``i`` (the whole shape, N and C first):
    its values when known at import time, else the model's declared output shape
    (dimensions ``out_axes``)."""
    c = node.const(i)
    if c is not None:
        vals = [int(v) for v in c.reshape(-1)]
        if len(vals) != k + 2:
            raise node.error(f"{what} has {len(vals)} values, expected {k + 2}")
        return vals[2:]
    declared = declared_shape(node)
    dims = declared[out_axes] if declared is not None else None
    if dims is None or len(dims) != k or any(d is None for d in dims):
        raise node.error(f"{what} is known only at run time and the model declares no "
                         "static output shape for the node; irc needs the output shape "
                         "before run time", hint=f"make {what} a constant (initializer)")
    return [int(d) for d in dims]  # type: ignore[arg-type]


def _normalized_positions(n: int, align_corners: bool) -> np.ndarray:
    """The normalized coordinates (-1 to 1) of ``n`` pixel centers (corners with
    align_corners), as AffineGrid lays them out."""
    if align_corners:
        return np.linspace(-1.0, 1.0, n) if n > 1 else np.full(1, -1.0)
    return (2.0 * np.arange(n) + 1.0) / n - 1.0


@converter("AffineGrid", since=20)
def _affine_grid(node: Node) -> Expr:
    theta = node.shape(0)
    if node.ndim(0) != 3 or _static_dim(theta[1]) not in (2, 3) or \
            _static_dim(theta[2]) != _static_dim(theta[1]) + 1:
        raise node.error("theta must be (N, 2, 3) for 2-D or (N, 3, 4) for 3-D grids, got "
                         f"{[str(d) for d in theta]}")
    k = _static_dim(theta[1])
    sizes = _spatial_sizes(node, 1, k, "size", slice(1, -1))
    align = bool(node.attr("align_corners", 0))
    axes = [_normalized_positions(n, align) for n in sizes]
    mesh = np.meshgrid(*axes, indexing="ij")  # D, H, W order
    # Homogeneous points (x, y[, z], 1): the innermost axis first.
    points = np.stack([*reversed(mesh), np.ones(sizes)], axis=-1).reshape(-1, k + 1)
    base = Constant.from_numpy(points.astype(node.dtype(0)))
    grid = ops.matmul(base, ops.permute_dims(node.input(0), [0, 2, 1]))
    return ops.reshape(grid, [theta[0], *sizes, k])


@converter("Col2Im", since=18)
def _col2im(node: Node) -> Expr:
    if node.ndim(0) != 3:
        raise node.error(f"the input must be 3-D (N, C * prod(block_shape), L), got rank "
                         f"{node.ndim(0)}")
    k = _vector_length(node, 1)
    if not k or _vector_length(node, 2) != k:
        raise node.error("image_shape and block_shape must be 1-D tensors of the same, "
                         "known length")
    ck = _static_dim(node.shape(0)[1])
    if ck is None:
        raise node.error("dimension 1 of the input must be static")
    image = node.const(1)
    if image is not None:
        image_shape = [int(v) for v in image.reshape(-1)]
    else:
        declared = declared_shape(node)
        if declared is None or len(declared) != k + 2 or any(d is None for d in declared[1:]):
            raise node.error("image_shape is known only at run time and the model declares "
                             "no static output shape for the node; irc needs the output "
                             "shape before run time",
                             hint="make image_shape a constant (initializer)")
        image_shape = [int(d) for d in declared[2:]]  # type: ignore[arg-type]
    blocks = node.const(2)
    if blocks is not None:
        block_shape: Any = [int(v) for v in blocks.reshape(-1)]
        kprod = int(np.prod(block_shape))
        if kprod < 1 or ck % kprod:
            raise node.error(f"dimension 1 of the input ({ck}) is not a multiple of "
                             f"prod(block_shape) = {kprod}")
        channels = ck // kprod
    else:
        declared = declared_shape(node)
        if declared is None or len(declared) != k + 2 or declared[1] is None:
            raise node.error("block_shape is known only at run time and the model declares "
                             "no static channel count for the output",
                             hint="make block_shape a constant (initializer)")
        channels = int(declared[1])
        block_shape = ops.astype(node.input(2), "int64")
    strides = [int(v) for v in node.attr("strides", [1] * k)]
    dilations = [int(v) for v in node.attr("dilations", [1] * k)]
    pads = [int(v) for v in node.attr("pads", [0] * (2 * k))]
    if len(strides) != k or len(dilations) != k or len(pads) != 2 * k:
        raise node.error(f"strides, dilations and pads need {k}, {k} and {2 * k} values")
    return ops.image.col2im(node.input(0), image_shape, channels, block_shape, strides, pads,
                            dilations)


@converter("RoiAlign", since=10)
def _roi_align(node: Node) -> Expr:
    mode = node.attr("mode", "avg")
    if mode not in ("avg", "max"):
        raise node.error(f"mode {mode!r} is not avg or max")
    coord = node.attr("coordinate_transformation_mode",
                      "half_pixel" if node.opset >= 16 else "output_half_pixel")
    if coord not in ("half_pixel", "output_half_pixel"):
        raise node.error(f"coordinate_transformation_mode {coord!r} is not half_pixel or "
                         "output_half_pixel")
    ratio = int(node.attr("sampling_ratio", 0))
    if ratio <= 0:
        raise node.error("sampling_ratio 0 (a sample count adapted to each region's size, "
                         "known only at run time) is not supported; give a positive "
                         "sampling_ratio")
    if node.ndim(0) != 4:
        raise node.error(f"X must be 4-D (N, C, H, W), got rank {node.ndim(0)}")
    out = [int(node.attr("output_height", 1)), int(node.attr("output_width", 1))]
    return ops.image.roi_align(node.input(0), node.input(1), node.input(2), out,
                               float(node.attr("spatial_scale", 1.0)), ratio, mode,
                               coord == "half_pixel")


# -- resize -------------------------------------------------------------------------------


@converter("Resize", since=10)
def _resize10(node: Node) -> Expr:
    return _Resize(node).convert(1, None, None, legacy=True)


@converter("Resize", since=11)
def _resize(node: Node) -> Expr:
    return _Resize(node).convert(2, 3, 1, legacy=False)


@converter("Upsample", since=7)
def _upsample7(node: Node) -> Expr:
    scales = node.attr("scales")
    if scales is None:
        raise node.error("the attribute 'scales' is required")
    mode = node.attr("mode", "nearest")
    if mode == "bilinear":
        mode = "linear"
    res = _Resize(node)
    attrs = dict(method=mode, coordinate_transformation_mode="asymmetric",
                 nearest_mode="floor", cubic_coeff_a=-0.75, exclude_outside=False,
                 extrapolation_value=0.0, antialias=False)
    if mode not in ("nearest", "linear"):
        raise node.error(f"mode {mode!r} is not supported (nearest, linear)")
    return res._static(list(range(res.rank)), np.asarray(scales, "float32"), True,
                       "stretch", None, True, attrs)


@converter("Upsample", since=9)
def _upsample9(node: Node) -> Expr:
    return _Resize(node).convert(1, None, None, legacy=True)


__all__: list[str] = []

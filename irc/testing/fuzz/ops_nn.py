"""Builders of the network operators (see ``spec``): products (MatMul, Gemm, Einsum),
convolutions and pooling with every padding form, normalizations, Resize and the other
image operators, recurrent layers and spectral transforms."""

from __future__ import annotations

import numpy as np

from . import spec
from .builder import ABSENT, GraphBuilder, Value
from .spec import Reject
from .values import Domain, broadcast_partner, distinct

WEIGHT = Domain(-1.0, 1.0)


def _weight(g: GraphBuilder, shape: tuple[int, ...], dtype: str) -> Value:
    """A weight: usually a constant (irc packs constant weights), sometimes an input."""
    where = "input" if g.coin(0.2) else ("initializer" if g.coin(0.8) else "constant")
    return g.fresh(shape, dtype, WEIGHT, where=where)


# -- products ------------------------------------------------------------------------------

@spec.register("MatMul", "matmul")
def _matmul(g: GraphBuilder) -> None:
    a = g.pick_float(min_rank=1, max_rank=4)
    k = a.shape[-1]
    n = int(g.choice((1, 2, 3, 4, 7, 8, 16, 17)))
    if a.rank == 1 or g.coin(0.6):
        bshape: tuple[int, ...] = (k, n) if g.coin(0.85) else (k,)
    else:
        batch = broadcast_partner(g.rng, a.shape[:-2])
        bshape = tuple(batch) + (k, n)
    b = _weight(g, bshape, a.dtype)
    args = [a, b]
    if a.rank >= 2 and g.coin(0.25):  # the weight on the left
        lshape = (int(g.choice((1, 3, 5))), a.shape[-2])
        args = [_weight(g, lshape, a.dtype), a]
    g.node("MatMul", args)


@spec.register("Gemm", "matmul")
def _gemm(g: GraphBuilder) -> None:
    trans_a, trans_b = int(g.coin(0.3)), int(g.coin(0.5))
    a = g.pick_float(2, 2)
    m, k = a.shape[::-1] if trans_a else a.shape
    n = int(g.choice((1, 3, 4, 8, 10)))
    b = _weight(g, (n, k) if trans_b else (k, n), a.dtype)
    args = [a, b]
    if g.coin(0.7):
        cshape = g.choice(((m, n), (n,), (1, n), (m, 1), ()))
        args.append(g.fresh(cshape, a.dtype, WEIGHT, data=False))
    g.node("Gemm", args, transA=trans_a, transB=trans_b,
           alpha=float(g.choice((1.0, 0.5, 2.0))), beta=float(g.choice((1.0, 0.5))))


LETTERS = "abcdefghij"


@spec.register("Einsum", "matmul", since=12)
def _einsum(g: GraphBuilder) -> None:
    a = g.pick_float(min_rank=1, max_rank=4)
    sizes: dict[str, int] = {}
    terms = []
    letters = []
    for s in a.shape:  # a repeated letter takes a diagonal
        same = [c for c in letters if sizes[c] == s]
        if same and g.coin(0.1):
            letters.append(g.choice(same))
        else:
            c = LETTERS[len(sizes)]
            sizes[c] = s
            letters.append(c)
    terms.append("".join(letters))
    if g.coin(0.75):
        shared = [c for c in sizes if g.coin(0.6)]
        new = [LETTERS[len(sizes) + i] for i in range(int(g.rng.integers(0, 3)))]
        for c in new:
            sizes[c] = int(g.choice((1, 2, 3, 5)))
        b_letters = shared + new
        g.rng.shuffle(b_letters)
        if not b_letters:
            raise Reject("empty operand")
        b = _weight(g, tuple(sizes[c] for c in b_letters), a.dtype)
        terms.append("".join(b_letters))
        operands = [a, b]
    else:
        operands = [a]
    pool = sorted(set("".join(terms)))
    out = [c for c in pool if g.coin(0.6)]
    g.rng.shuffle(out)
    eq = ",".join(terms) + "->" + "".join(out)
    g.node("Einsum", operands, equation=eq)


@spec.register("Det", "matmul", since=11)
def _det(g: GraphBuilder) -> None:
    def square(v: Value) -> bool:
        return v.shape[-1] == v.shape[-2] <= 6

    if g.coin(0.3):
        x = g.pick_float(min_rank=2, max_rank=4, domain=Domain(-1.5, 1.5), accept=square)
    else:
        n = int(g.choice((1, 2, 3, 4, 5)))
        batch = g.shape(0, 2, 16) if g.coin(0.5) else ()
        x = g.fresh(tuple(batch) + (n, n), g.float_dtype, Domain(-1.5, 1.5))
    g.node("Det", [x])


# -- convolution and pooling -------------------------------------------------------------

def _image(g: GraphBuilder, spatial: int | None = None, min_side: int = 1,
           max_channels: int = 16) -> Value:
    """An input of layout (N, C, spatial...) with 1-3 spatial axes."""
    nd = spatial or int(g.choice((1, 2, 2, 2, 3)))

    def ok(v: Value) -> bool:
        return (v.rank == nd + 2 and v.shape[1] <= max_channels
                and min(v.shape[2:]) >= min_side and v.size <= 4096)

    def make() -> Value:
        side = (int(g.choice((3, 5, 7, 8, 9, 11, 16))) if nd < 3
                else int(g.choice((3, 4, 5))))
        shape = (int(g.choice((1, 1, 2))), int(g.choice((1, 2, 3, 4, 8))))
        shape += tuple(max(min_side, side + int(g.rng.integers(-1, 2))) for _ in range(nd))
        return g.fresh(shape, g.float_dtype)

    return g.pick(lambda v: v.dtype == g.float_dtype and v.static and ok(v), make,
                  p_fresh=0.35)


def _window(g: GraphBuilder, x: Value, transpose: bool = False, pool: bool = False
            ) -> dict:
    """Kernel, strides, dilations and padding (explicit or auto_pad) for ``x``."""
    nd = x.rank - 2
    kernel = [int(g.choice((1, 2, 3, 3, 5))) for _ in range(nd)]
    strides = [int(g.choice((1, 1, 2, 3))) for _ in range(nd)]
    dil = [int(g.choice((1, 1, 1, 2))) for _ in range(nd)]
    attrs: dict = {"kernel_shape": kernel}
    if g.coin(0.6):
        attrs["strides"] = strides
    if g.coin(0.4):
        attrs["dilations"] = dil
    eff = [(k - 1) * attrs.get("dilations", [1] * nd)[i] + 1 for i, k in enumerate(kernel)]
    mode = g.choice(("NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"))
    if mode == "NOTSET":
        if g.coin(0.7):
            pads = [int(g.rng.integers(0, k)) for k in eff] + \
                   [int(g.rng.integers(0, k)) for k in eff]
            if pool:
                pads = [min(p, k // 2) for p, k in zip(pads, kernel * 2)]
            attrs["pads"] = pads
    else:
        attrs["auto_pad"] = mode
        if pool and mode != "VALID" and any(d > 1 for d in attrs.get("dilations", ())):
            # ONNX Runtime and ONNX's reference evaluator size a pool's SAME padding from
            # the undilated kernel, against the operator's definition (output size
            # ceil(input / stride)), which irc follows: such pools have no agreed answer.
            del attrs["dilations"]
            eff = kernel
    if not transpose:
        side = x.shape[2:]
        pads = attrs.get("pads", [0] * 2 * nd)
        for i in range(nd):
            if mode == "NOTSET" and side[i] + pads[i] + pads[i + nd] < eff[i]:
                raise Reject("window larger than the input")
            if mode == "VALID" and side[i] < eff[i]:
                raise Reject("window larger than the input")
    return attrs


@spec.register("Conv", "conv")
def _conv(g: GraphBuilder) -> None:
    x = _image(g)
    c = x.shape[1]
    groups = int(g.choice([d for d in (1, 1, 2, 3, c) if c % d == 0]))
    m = groups * int(g.choice((1, 2, 3, 4)))
    attrs = _window(g, x)
    w = _weight(g, (m, c // groups) + tuple(attrs["kernel_shape"]), x.dtype)
    if g.coin(0.3):
        del attrs["kernel_shape"]  # taken from the weight
    args = [x, w]
    if g.coin(0.6):
        args.append(g.fresh((m,), x.dtype, WEIGHT, data=False))
    g.node("Conv", args, group=groups if groups > 1 or g.coin(0.2) else None, **attrs)


@spec.register("ConvTranspose", "conv")
def _conv_transpose(g: GraphBuilder) -> None:
    x = _image(g, max_channels=8)
    c = x.shape[1]
    groups = int(g.choice([d for d in (1, 1, 2, c) if c % d == 0]))
    m = groups * int(g.choice((1, 2, 3)))
    attrs = _window(g, x, transpose=True)
    nd = x.rank - 2
    strides = attrs.get("strides", [1] * nd)
    dil = attrs.get("dilations", [1] * nd)
    if g.coin(0.3):
        attrs["output_padding"] = [int(g.rng.integers(0, max(s, d)))
                                   for s, d in zip(strides, dil)]
    if g.coin(0.15) and "auto_pad" not in attrs and "pads" not in attrs:
        attrs["output_shape"] = [s * strides[i] for i, s in enumerate(x.shape[2:])]
        attrs.pop("output_padding", None)
    w = _weight(g, (c, m // groups) + tuple(attrs["kernel_shape"]), x.dtype)
    args = [x, w]
    if g.coin(0.5):
        args.append(g.fresh((m,), x.dtype, WEIGHT, data=False))
    g.node("ConvTranspose", args, group=groups if groups > 1 else None, **attrs)


@spec.register("AveragePool", "pool")
def _average_pool(g: GraphBuilder) -> None:
    x = _image(g)
    attrs = _window(g, x, pool=True)
    if g.opset < 19:
        attrs.pop("dilations", None)
    g.node("AveragePool", [x], count_include_pad=int(g.coin(0.4)),
           ceil_mode=int(g.coin(0.3)) if g.opset >= 10 else None, **attrs)


@spec.register("MaxPool", "pool")
def _max_pool(g: GraphBuilder) -> None:
    x = _image(g)
    attrs = _window(g, x, pool=True)
    n_out = 2 if g.coin(0.3) else 1
    if n_out == 2:
        attrs.pop("dilations", None)
    g.node("MaxPool", [x], n_out=n_out, ceil_mode=int(g.coin(0.3)) if g.opset >= 10 else None,
           **attrs)


@spec.register("LpPool", "pool", since=18)
def _lp_pool(g: GraphBuilder) -> None:
    x = _image(g)
    attrs = _window(g, x, pool=True)
    g.node("LpPool", [x], p=int(g.choice((1, 2, 3))), ceil_mode=int(g.coin(0.3)), **attrs)


@spec.register("MaxUnpool", "pool", since=11)
def _max_unpool(g: GraphBuilder) -> None:
    x = _image(g, spatial=2, min_side=2)
    k = int(g.choice((2, 3)))
    s = int(g.choice((1, 2)))
    if min(x.shape[2:]) < k:
        raise Reject("too small")
    y, idx = g.node("MaxPool", [x], n_out=2, kernel_shape=[k, k], strides=[s, s])
    args = [y, idx]
    if g.coin(0.4):
        args.append(g.const(np.array(x.shape, np.int64)))
    g.node("MaxUnpool", args, kernel_shape=[k, k], strides=[s, s])


def _global(op: str):
    def build(g: GraphBuilder) -> None:
        x = _image(g)
        g.node(op, [x], **({"p": int(g.choice((1, 2, 3)))} if op == "GlobalLpPool" else {}))

    return build


for _op in ("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"):
    spec.register(_op, "pool")(_global(_op))


@spec.register("LRN", "norm")
def _lrn(g: GraphBuilder) -> None:
    x = _image(g, spatial=2)
    g.node("LRN", [x], size=int(g.choice((1, 3, 5))), alpha=float(g.choice((1e-4, 0.01))),
           beta=float(g.choice((0.75, 0.5))), bias=float(g.choice((1.0, 2.0))))


@spec.register("DeformConv", "conv", since=19)
def _deform_conv(g: GraphBuilder) -> None:
    x = _image(g, spatial=2, min_side=3, max_channels=4)
    n, c, h, w = x.shape
    k = int(g.choice((1, 2, 3)))
    m = int(g.choice((1, 2, 4)))
    oh, ow = h - k + 1, w - k + 1
    if oh < 1 or ow < 1:
        raise Reject("too small")
    wt = _weight(g, (m, c, k, k), x.dtype)
    off = g.fresh((n, 2 * k * k, oh, ow), x.dtype, Domain(-1.3, 1.3, "int", 0.05))
    args = [x, wt, off]
    if g.coin(0.5):
        args.append(g.fresh((m,), x.dtype, WEIGHT, data=False))
        if g.coin(0.5):
            args.append(g.fresh((n, k * k, oh, ow), x.dtype, Domain(0, 1)))
    g.node("DeformConv", args, kernel_shape=[k, k])


@spec.register("Col2Im", "conv", since=18)
def _col2im(g: GraphBuilder) -> None:
    bh, bw = int(g.choice((1, 2, 3))), int(g.choice((1, 2)))
    ih, iw = int(g.choice((3, 4, 5))), int(g.choice((3, 4, 6)))
    c = int(g.choice((1, 2)))
    lh, lw = ih - bh + 1, iw - bw + 1
    x = g.fresh((1, c * bh * bw, lh * lw), g.float_dtype)
    g.node("Col2Im", [x, g.const(np.array([ih, iw], np.int64)),
                      g.const(np.array([bh, bw], np.int64))])


# -- normalizations ----------------------------------------------------------------------------

def _spread(arr: np.ndarray, axes: tuple[int, ...]) -> bool:
    """Whether the values vary along ``axes`` (variance well above zero everywhere)."""
    var = np.var(np.asarray(arr, np.float64), axis=axes)
    return bool((var > 0.05).all())


@spec.register("BatchNormalization", "norm", since=15)
def _batch_norm(g: GraphBuilder) -> None:
    x = g.pick_float(min_rank=2, max_rank=5)
    c = x.shape[1]
    dt = x.dtype
    args = [x, g.fresh((c,), dt, Domain(0.5, 1.5), data=False),
            g.fresh((c,), dt, WEIGHT, data=False), g.fresh((c,), dt, WEIGHT, data=False),
            g.fresh((c,), dt, Domain(0.5, 2.0), data=False)]
    g.node("BatchNormalization", args, epsilon=float(g.choice((1e-5, 1e-3))))


@spec.register("InstanceNormalization", "norm", since=6)
def _instance_norm(g: GraphBuilder) -> None:
    x = g.pick_float(min_rank=3, max_rank=5,
                     accept=lambda v: int(np.prod(v.shape[2:])) >= 4
                     and _spread(v.array, tuple(range(2, v.rank))))
    c = x.shape[1]
    g.node("InstanceNormalization", [x, g.fresh((c,), x.dtype, Domain(0.5, 1.5), data=False),
                                     g.fresh((c,), x.dtype, WEIGHT, data=False)],
           epsilon=float(g.choice((1e-5, 1e-3))))


@spec.register("LayerNormalization", "norm", since=17)
def _layer_norm(g: GraphBuilder) -> None:
    x = g.pick_float(min_rank=1, max_rank=4)
    axis = int(g.rng.integers(-x.rank, x.rank))
    axes = tuple(range(axis % x.rank, x.rank))
    if int(np.prod([x.shape[a] for a in axes])) < 4 or not _spread(x.array, axes):
        raise Reject("no spread to normalize")
    norm_shape = x.shape[axis % x.rank:]
    args = [x, g.fresh(norm_shape, x.dtype, Domain(0.5, 1.5), data=False)]
    if g.coin(0.7):
        args.append(g.fresh(norm_shape, x.dtype, WEIGHT, data=False))
    g.node("LayerNormalization", args, axis=axis, epsilon=float(g.choice((1e-5, 1e-3))))


@spec.register("MeanVarianceNormalization", "norm", since=9)
def _mean_variance_normalization(g: GraphBuilder) -> None:
    axes = g.choice(([0, 2, 3], [2, 3], [1], [0, 1, 2, 3], [3], None))
    x = g.pick_float(4, 4, accept=lambda v: _spread(v.array, tuple(axes or (0, 2, 3)))
                     and int(np.prod([v.shape[a] for a in axes or (0, 2, 3)])) >= 4)
    g.node("MeanVarianceNormalization", [x], axes=axes)


# -- image operators -------------------------------------------------------------------------

RESIZE_MODES = ("nearest", "linear", "cubic")
COORDINATES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
               "tf_crop_and_resize", "half_pixel_symmetric")
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@spec.register("Resize", "resize", since=13)
def _resize(g: GraphBuilder) -> None:
    x = g.pick_float(min_rank=3, max_rank=4, accept=lambda v: v.size <= 2048)
    mode = g.choice(RESIZE_MODES)
    coords = [c for c in COORDINATES if g.opset >= 19 or c != "half_pixel_symmetric"]
    attrs: dict = {"mode": mode,
                   "coordinate_transformation_mode": g.choice(coords)}
    if mode == "nearest":
        attrs["nearest_mode"] = g.choice(NEAREST)
    if mode == "cubic":
        attrs["cubic_coeff_a"] = float(g.choice((-0.75, -0.5)))
        attrs["exclude_outside"] = int(g.coin(0.3))
    spatial = list(range(2, x.rank))
    if g.opset >= 18 and mode != "nearest" and g.coin(0.3):
        attrs["antialias"] = 1
    axes = None
    if g.opset >= 18 and g.coin(0.25):
        axes = spatial if g.coin() else [a - x.rank for a in spatial]
        attrs["axes"] = axes
    n_ax = len(axes) if axes else x.rank
    roi = ABSENT
    if attrs["coordinate_transformation_mode"] == "tf_crop_and_resize":
        lo = [0.0] * n_ax
        hi = [1.0] * n_ax
        # Dyadic fractions: 0.1 in float32 is 0.1000000015, and ``nearest`` rounding of a
        # coordinate such as 0.1 * 10 (1 in float32 arithmetic, above 1 exactly) has no
        # agreed answer; coordinates of dyadic crops are exact in every precision.
        for i in range(n_ax - len(spatial), n_ax):
            lo[i] = float(g.choice((0.0, 0.125, 0.25)))
            hi[i] = float(g.choice((1.0, 0.875, 0.75)))
        roi = g.const(np.array(lo + hi, np.float32), "float32")
        attrs["extrapolation_value"] = float(g.choice((0.0, -1.0)))
    sides = [x.shape[a] for a in spatial]
    if g.coin(0.5):  # scales
        scales = [float(g.choice((0.5, 0.6, 1.5, 2.0, 3.0, 1.0))) for _ in spatial]
        full = ([1.0] * 2 if not axes else []) + scales
        if any(int(np.floor(s * f)) < 1 for s, f in zip(sides, scales)):
            raise Reject("an empty output")
        g.node("Resize", [x, roi, g.const(np.array(full, np.float32), "float32")], **attrs)
        return
    sizes = [max(1, int(s * float(g.choice((0.5, 0.7, 1.5, 2.0, 3.0))))) for s in sides]
    full_sizes = ([] if axes else list(x.shape[:2])) + sizes
    if g.opset >= 18 and g.coin(0.3):
        attrs["keep_aspect_ratio_policy"] = g.choice(("stretch", "not_larger",
                                                      "not_smaller"))
    # sizes as exporters write them: the batch and channels read off the input
    sizes_in = g.shape_input(full_sizes, like=x)
    g.node("Resize", [x, roi, ABSENT, sizes_in], **attrs)


@spec.register("Upsample", "resize", since=9, until=9)
def _upsample(g: GraphBuilder) -> None:
    x = g.pick_float(min_rank=3, max_rank=4, accept=lambda v: v.size <= 1024)
    scales = [1.0, 1.0] + [float(g.choice((1.0, 1.5, 2.0, 3.0))) for _ in x.shape[2:]]
    g.node("Upsample", [x, g.const(np.array(scales, np.float32), "float32")],
           mode=g.choice(("nearest", "linear")))


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    """Intersection over union of two boxes given as corners (y1, x1, y2, x2), either
    corner first."""
    ay1, ay2 = sorted((a[0], a[2]))
    ax1, ax2 = sorted((a[1], a[3]))
    by1, by2 = sorted((b[0], b[2]))
    bx1, bx2 = sorted((b[1], b[3]))
    inter = max(0.0, min(ay2, by2) - max(ay1, by1)) * max(0.0, min(ax2, bx2) - max(ax1, bx1))
    union = (ay2 - ay1) * (ax2 - ax1) + (by2 - by1) * (bx2 - bx1) - inter
    return float(inter / union) if union > 0 else 0.0


@spec.register("NonMaxSuppression", "resize", since=11, dtypes=("float32",))
def _non_max_suppression(g: GraphBuilder) -> None:
    """Boxes and scores away from the thresholds and from ties, so that which boxes are
    kept does not hang on rounding."""
    b, c, n = int(g.choice((1, 2))), int(g.choice((1, 2, 3))), int(g.rng.integers(1, 9))
    corners = g.rng.uniform(0, 10, (b, n, 4))
    center = int(g.coin(0.3))
    boxes = corners
    if center:  # (x, y, w, h) of boxes whose corners are (y1, x1, y2, x2)
        y1, x1, y2, x2 = (corners[..., k] for k in range(4))
        boxes = np.stack([(x1 + x2) / 2, (y1 + y2) / 2, np.abs(x2 - x1), np.abs(y2 - y1)], -1)
        corners = np.stack([np.minimum(y1, y2), np.minimum(x1, x2), np.maximum(y1, y2),
                            np.maximum(x1, x2)], -1)
    n_args = int(g.choice((2, 3, 4, 4, 5)))
    iou_threshold = float(g.choice((0.0, 0.3, 0.5, 0.7))) if n_args >= 4 else 0.0
    for k in range(b):
        for i in range(n):
            for j in range(i):
                iou = _iou(corners[k, i], corners[k, j])
                if abs(iou - iou_threshold) < 0.02 or (iou_threshold == 0.0 and iou < 0.02):
                    raise Reject("a box pair at the IoU threshold")
    scores = g.rng.uniform(0, 1, (b, c, n))
    if not all(distinct(scores[k, m], None, 1e-3) for k in range(b) for m in range(c)):
        raise Reject("tied scores")
    args = [g.place(boxes.astype(np.float32)), g.place(scores.astype(np.float32))]
    if n_args >= 3:
        args.append(g.const(np.array([int(g.rng.integers(0, n + 2))]), "int64"))
    if n_args >= 4:
        args.append(g.const(np.array([iou_threshold]), "float32"))
    if n_args == 5:
        threshold = float(g.choice((0.2, 0.5)))
        if (np.abs(scores - threshold) < 0.02).any():
            raise Reject("a score at the threshold")
        args.append(g.const(np.array([threshold]), "float32"))
    g.node("NonMaxSuppression", args, center_point_box=center if center or g.coin() else None)


@spec.register("GridSample", "resize", since=16)
def _grid_sample(g: GraphBuilder) -> None:
    x = _image(g, spatial=2, min_side=2)
    n = x.shape[0]
    oh, ow = int(g.choice((1, 2, 3, 5))), int(g.choice((2, 3, 4)))
    grid = g.fresh((n, oh, ow, 2), x.dtype, Domain(-1.1, 1.1))
    modes = ("bilinear", "nearest", "bicubic") if g.opset < 20 else \
        ("linear", "nearest", "cubic")
    g.node("GridSample", [x, grid], mode=g.choice(modes),
           padding_mode=g.choice(("zeros", "border", "reflection")),
           align_corners=int(g.coin()))


@spec.register("AffineGrid", "resize", since=20)
def _affine_grid(g: GraphBuilder) -> None:
    n = int(g.choice((1, 2)))
    theta = g.fresh((n, 2, 3), g.float_dtype, WEIGHT)
    size = [n, int(g.choice((1, 3))), int(g.choice((2, 3, 5))), int(g.choice((2, 4)))]
    g.node("AffineGrid", [theta, g.const(np.array(size, np.int64))],
           align_corners=int(g.coin()))


@spec.register("RoiAlign", "resize", since=16)
def _roi_align(g: GraphBuilder) -> None:
    x = _image(g, spatial=2, min_side=4)
    n, _, h, w = x.shape
    r = int(g.choice((1, 2, 3)))
    x1 = g.rng.uniform(0, w * 0.5, r)
    y1 = g.rng.uniform(0, h * 0.5, r)
    rois = np.stack([x1, y1, x1 + g.rng.uniform(1, w * 0.5, r),
                     y1 + g.rng.uniform(1, h * 0.5, r)], -1)
    g.node("RoiAlign", [x, g.const(rois, x.dtype), g.const(g.rng.integers(0, n, r), "int64")],
           mode=g.choice(("avg", "max")), output_height=int(g.choice((1, 2, 3))),
           output_width=int(g.choice((1, 2, 4))), sampling_ratio=int(g.choice((0, 1, 2))),
           spatial_scale=float(g.choice((1.0, 0.5))),
           coordinate_transformation_mode=g.choice(("half_pixel", "output_half_pixel")))


# -- recurrent, spectral ---------------------------------------------------------------------

@spec.register("LSTM", "rnn", since=14)
def _lstm(g: GraphBuilder) -> None:
    _recurrent(g, "LSTM", 4)


@spec.register("GRU", "rnn", since=14)
def _gru(g: GraphBuilder) -> None:
    _recurrent(g, "GRU", 3)


@spec.register("RNN", "rnn", since=14)
def _rnn(g: GraphBuilder) -> None:
    _recurrent(g, "RNN", 1)


def _recurrent(g: GraphBuilder, op: str, gates: int) -> None:
    x = g.pick_float(3, 3, domain=Domain(-4, 4),
                     accept=lambda v: v.shape[0] <= 8 and v.shape[2] <= 16)
    layout = int(g.coin(0.3))
    seq, batch, inp = (x.shape[1], x.shape[0], x.shape[2]) if layout else x.shape
    hidden = int(g.choice((1, 3, 4, 8)))
    direction = g.choice(("forward", "reverse", "bidirectional"))
    d = 2 if direction == "bidirectional" else 1
    dt = x.dtype
    args = [x, _weight(g, (d, gates * hidden, inp), dt),
            _weight(g, (d, gates * hidden, hidden), dt)]
    if g.coin(0.7):
        args.append(g.fresh((d, 2 * gates * hidden), dt, WEIGHT, data=False))
        if g.coin(0.4):
            args.append(ABSENT)
            hshape = (batch, d, hidden) if layout else (d, batch, hidden)
            args.append(g.fresh(hshape, dt, WEIGHT))
    attrs: dict = {"hidden_size": hidden, "direction": direction, "layout": layout}
    if op == "GRU":
        attrs["linear_before_reset"] = int(g.coin())
    g.node(op, args, n_out=2, **attrs)


@spec.register("DFT", "signal", since=20)
def _dft(g: GraphBuilder) -> None:
    x = g.pick_float(3, 3, accept=lambda v: v.shape[-1] in (1, 2) and v.shape[1] >= 2)
    complex_in = x.shape[-1] == 2
    inverse = int(g.coin(0.3))
    onesided = int(g.coin(0.3)) if not complex_in and not inverse else 0
    args = [x, ABSENT, g.const(np.array(1), "int64")]
    if g.coin(0.3):
        args[1] = g.const(np.array(int(g.rng.integers(1, x.shape[1] + 3))), "int64")
    g.node("DFT", args, inverse=inverse, onesided=onesided)


@spec.register("STFT", "signal", since=17)
def _stft(g: GraphBuilder) -> None:
    length = int(g.choice((16, 20, 32)))
    x = g.fresh((1, length, 1), g.float_dtype)
    frame = int(g.choice((4, 8)))
    step = int(g.choice((2, 4)))
    args = [x, g.const(np.array(step), "int64")]
    if g.coin(0.6):
        args.append(g.const(np.hanning(frame), g.float_dtype))
    else:
        args.append(ABSENT)
        args.append(g.const(np.array(frame), "int64"))
    if len(args) == 3 and g.coin(0.5):
        args.append(g.const(np.array(frame), "int64"))
    g.node("STFT", args, onesided=int(g.coin(0.7)))


__all__ = ["COORDINATES", "NEAREST", "RESIZE_MODES"]

"""ONNX ``Resize`` over its option space: every coordinate_transformation_mode, every
mode (nearest with each nearest_mode, linear, cubic with cubic_coeff_a and
exclude_outside), antialias, scales and sizes (with keep_aspect_ratio_policy), axes,
ranks 3 to 5, up- and downscaling by non-integer factors, tf_crop_and_resize's roi and
extrapolation_value.

The oracle, :func:`spec_resize`, is ONNX's reference implementation
(``onnx.reference``'s Resize: separable, ``align_corners``, ``pytorch_half_pixel`` and
``tf_crop_and_resize`` using the unrounded output width ``scale * input size``) with the
source coordinates in exact rational arithmetic and the weights in float64.

Who is compared with it, and why:

- irc, on every case, within float32 rounding.
- ``onnx.reference.ReferenceEvaluator``, to show that the oracle is ONNX's reference. It
  evaluates the coordinates in float64, so a coordinate that is exactly an integer or a
  half-integer can land one ulp beside it and ``nearest`` picks the neighbouring pixel
  (such cases, where the oracle reports a tie, are left out of this comparison); and
  under NumPy 2 it computes cubic weights in float32 (``cubic_coeff_a`` is a float32
  attribute), hence its looser tolerance for cubic.
- onnxruntime, where it follows the same definitions. It computes coordinates and output
  sizes in float32 (a coordinate near a tie rounds either way; ``10 * 0.7f`` is 7; a
  16384 -> 24 cubic downscale is off by 7e-4, see
  :func:`test_extreme_cubic_downscale_is_exact`), uses the rounded output length in
  ``align_corners``, ``pytorch_half_pixel`` and ``tf_crop_and_resize``, returns the input
  unchanged when the output shape equals it whatever the scales, ignores the roi of axes
  whose scale is 1, and takes cubic only on 2-D and 4-D inputs: those cases are left out.
- ``torch.nn.functional.interpolate`` on the modes it has (a few fixed cases).

The sweep compiles under a plain ``PassContext`` (hundreds of models; the round trip of
every pass is checked by the other Resize tests, and by :func:`test_exact_ties` here).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import irc
from irc.passes import PassContext

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from irc.frontend.onnx import from_onnx  # noqa: E402

COORDS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
          "asymmetric", "tf_crop_and_resize")
METHODS = (
    *(dict(mode="nearest", nearest_mode=m)
      for m in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")),
    dict(mode="linear"), dict(mode="linear", antialias=1),
    dict(mode="cubic"), dict(mode="cubic", cubic_coeff_a=-0.5, antialias=1),
    dict(mode="cubic", exclude_outside=1), dict(mode="cubic", exclude_outside=1, antialias=1),
)
SCALES = (0.25, 0.33, 0.4, 0.6, 0.7, 0.75, 1.3, 1.5, 1.7, 2.0, 2.5, 3.0)
HALF = Fraction(1, 2)


# -- the oracle ----------------------------------------------------------------------------

def _cubic(a: float):
    """Keys' cubic convolution kernel with coefficient ``a``."""
    def k(t: float) -> float:
        t = abs(t)
        if t <= 1:
            return (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1
        if t < 2:
            return a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a
        return 0.0
    return k


def _source(o, mode, n_in, n_out, s, roi, num=Fraction):
    """The input coordinate of output index ``o``, in ``num`` arithmetic (Fraction: exact;
    float: as onnx.reference evaluates the same expressions)."""
    s = num(s)
    half = num(1) / 2
    width = s * n_in
    if mode == "asymmetric":
        return o / s
    if mode == "half_pixel" or (mode == "pytorch_half_pixel" and width != 1):
        return (o + half) / s - half
    if mode == "pytorch_half_pixel":
        return -half
    if mode == "half_pixel_symmetric":
        return num(n_in) / 2 * (1 - n_out / width) + (o + half) / s - half
    if mode == "align_corners":
        return num(0) if width == 1 else o * num(n_in - 1) / (width - 1)
    r0, r1 = (num(v) for v in roi)
    x = (r1 - r0) * (n_in - 1) / 2 if width == 1 else o * (r1 - r0) * (n_in - 1) / (width - 1)
    return x + r0 * (n_in - 1)


def plan(shape, attrs, scales=None, sizes=None):
    """(axes, {axis: exact scale}, {axis: output size}) as the specification defines them:
    a scale from ``scales`` is its float32 value, one from ``sizes`` a ratio."""
    r = len(shape)
    axes = [a % r for a in attrs.get("axes", range(r))]
    policy = attrs.get("keep_aspect_ratio_policy", "stretch")
    if scales is not None:
        scale = {a: Fraction(float(np.float32(v))) for a, v in zip(axes, scales)}
        return axes, scale, {a: math.floor(scale[a] * shape[a]) for a in axes}
    scale = {a: Fraction(int(v), shape[a]) for a, v in zip(axes, sizes)}
    out = {a: int(v) for a, v in zip(axes, sizes)}
    if policy != "stretch":
        s = (min if policy == "not_larger" else max)(scale.values())
        scale = dict.fromkeys(axes, s)
        out = {a: math.floor(s * shape[a] + HALF) for a in axes}
    return axes, scale, out


class Oracle:
    """Resize of one model, exactly as specified. ``margin`` is the least distance of a
    source coordinate to a point where the result jumps (an integer or half-integer for
    nearest, tf_crop_and_resize's input bounds); ``float64_off`` whether a coordinate is
    exactly such a point and its float64 evaluation is not (where onnx.reference may pick
    another pixel)."""

    def __init__(self):
        self.margin = Fraction(1)
        self.float64_off = False

    def _near(self, d: Fraction) -> None:
        self.margin = min(self.margin, abs(d))

    def axis(self, x, axis, n_out, s, mode, attrs, roi):
        """``x`` resized along ``axis`` to ``n_out`` by the exact scale ``s``."""
        n_in = x.shape[axis]
        method = attrs.get("mode", "nearest")
        nearest = attrs.get("nearest_mode", "round_prefer_floor")
        rows = []
        for o in range(n_out):
            c = _source(o, mode, n_in, n_out, s, roi)
            jumps = c in (0, n_in - 1) if mode == "tf_crop_and_resize" else False
            if mode == "tf_crop_and_resize":
                self._near(c)
                self._near(c - (n_in - 1))
            if method == "nearest":
                f = c - math.floor(c)
                self._near(min(f, 1 - f))
                if nearest.startswith("round"):
                    self._near(f - HALF)
                jumps = jumps or (2 * c).denominator == 1
            if jumps and _source(o, mode, n_in, n_out, s, roi, float) != c:
                self.float64_off = True
            if mode == "tf_crop_and_resize" and (c < 0 or c > n_in - 1):
                rows.append(None)
                continue
            if method == "nearest":
                fl = math.floor(c)
                f = c - fl
                up = {"round_prefer_floor": f > HALF, "round_prefer_ceil": f >= HALF,
                      "floor": False, "ceil": f > 0}[nearest]
                rows.append(([min(max(fl + up, 0), n_in - 1)], [1.0]))
                continue
            support, kernel = (1, lambda t: max(0.0, 1.0 - abs(t))) if method == "linear" \
                else (2, _cubic(float(np.float32(attrs.get("cubic_coeff_a", -0.75)))))
            stretch = min(s, 1) if attrs.get("antialias") else Fraction(1)
            reach = support / stretch
            taps = range(math.floor(c - reach), math.ceil(c + reach) + 1)
            w = [kernel(float((j - c) * stretch)) for j in taps]
            if attrs.get("exclude_outside"):
                w = [wi if 0 <= j < n_in else 0.0 for wi, j in zip(w, taps)]
            if attrs.get("antialias") or attrs.get("exclude_outside"):
                total = sum(w)
                w = [wi / total for wi in w] if total else w
            rows.append(([min(max(j, 0), n_in - 1) for j in taps], w))
        xm = np.moveaxis(x, axis, 0)
        out = np.empty((n_out, *xm.shape[1:]))
        for o, row in enumerate(rows):
            if row is None:
                out[o] = attrs.get("extrapolation_value", 0.0)
            else:
                out[o] = np.tensordot(np.asarray(row[1]), xm[row[0]], axes=1)
        return np.moveaxis(out, 0, axis)

    def __call__(self, x, attrs, scales=None, sizes=None, roi=None):
        axes, scale, out = plan(x.shape, attrs, scales, sizes)
        rois = {}
        if roi is not None:
            k = len(roi) // 2
            rois = {a: (Fraction(float(np.float32(roi[i]))), Fraction(float(np.float32(
                roi[k + i])))) for i, a in enumerate(axes)}
        y = x.astype(np.float64)
        for a in axes:
            if scale[a] == 1 and out[a] == x.shape[a] and rois.get(a, (0, 1)) == (0, 1):
                continue
            y = self.axis(y, a, out[a], scale[a],
                          attrs.get("coordinate_transformation_mode", "half_pixel"), attrs,
                          rois.get(a))
        return y


def spec_resize(x, attrs, scales=None, sizes=None, roi=None):
    """The resized ``x`` in float64, and its :class:`Oracle` (``margin``,
    ``float64_off``)."""
    o = Oracle()
    y = o(x, attrs, scales, sizes, roi)
    return y, o


# -- models and runners --------------------------------------------------------------------

def resize_model(shape, attrs, scales=None, sizes=None, roi=None, opset=19,
                 elem=TensorProto.FLOAT):
    inits, inputs = [], ["X", "", ""]
    if roi is not None:
        inits.append(numpy_helper.from_array(np.array(roi, "float32"), "roi"))
        inputs[1] = "roi"
    if scales is not None:
        inits.append(numpy_helper.from_array(np.array(scales, "float32"), "scales"))
        inputs[2] = "scales"
    else:
        inits.append(numpy_helper.from_array(np.array(sizes, "int64"), "sizes"))
        inputs.append("sizes")
    graph = helper.make_graph(
        [helper.make_node("Resize", inputs, ["Y"], **attrs)], "resize",
        [helper.make_tensor_value_info("X", elem, list(shape))],
        [helper.make_tensor_value_info("Y", elem, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def run_irc(model, x):
    with PassContext():
        ex = irc.compile(from_onnx(model), "llvm")
    return irc.vm.VirtualMachine(ex)["main"](irc.tensor(x)).numpy()


def run_ort(model, x):
    """onnxruntime's output, or None where it rejects the model (or is not installed)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    ort.set_default_logger_severity(4)  # its rejections are expected: not logged
    try:
        sess = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        return sess.run(None, {"X": x})[0]
    except Exception:  # noqa: BLE001 - a configuration onnxruntime does not implement
        return None


def ort_follows_the_reference(shape, attrs, kw, margin) -> bool:
    """Whether onnxruntime computes what ONNX's reference computes here (see the module
    docstring)."""
    if margin < 1e-4:  # within float32 reach of a tie
        return False
    if any(a < 0 for a in attrs.get("axes", ())):
        return False  # negative axes taken as no axes
    axes, scale, out = plan(shape, attrs, kw.get("scales"), kw.get("sizes"))
    if [out.get(a, d) for a, d in enumerate(shape)] == list(shape):
        return False  # returned unchanged
    mode = attrs.get("coordinate_transformation_mode", "half_pixel")
    for a in axes:
        if "scales" in kw and int(np.float32(scale[a]) * np.float32(shape[a])) != out[a]:
            return False  # a float32 product rounds to another size
        width = scale[a] * shape[a]
        if mode in ("align_corners", "pytorch_half_pixel", "tf_crop_and_resize",
                    "half_pixel_symmetric") and width != out[a]:
            return False  # the rounded output length in the formula
        if mode == "tf_crop_and_resize" and scale[a] == 1:
            return False  # the roi of this axis ignored
    return True


# -- the cases -----------------------------------------------------------------------------

def make_case(index: int, coord: str, method: dict, vector: str):
    """One case of the sweep: shape, axes, factors, policy and roi drawn from a generator
    seeded by ``index``."""
    rng = np.random.default_rng(1000 + index)
    rank = int(rng.integers(3, 6))
    shape = [int(v) for v in rng.integers(1, 4, rank)]
    axes = sorted(int(a) for a in rng.choice(rank, int(rng.integers(1, min(3, rank) + 1)),
                                             replace=False))
    for a in axes:
        shape[a] = int(rng.integers(2, 12))
    attrs = dict(method, coordinate_transformation_mode=coord)
    named_axes = bool(rng.integers(0, 2))
    kw = {}
    if vector == "scales":
        values = [float(rng.choice(SCALES)) for _ in axes]
    else:
        values = [int(rng.integers(1, 16)) for _ in axes]
        policy = ("stretch", "not_larger", "not_smaller")[int(rng.integers(0, 3))]
        if policy != "stretch":
            attrs["keep_aspect_ratio_policy"] = policy
            named_axes = True  # the policy keeps the ratio among the named axes only
    if named_axes:
        attrs["axes"] = axes if rng.integers(0, 2) else [a - rank for a in axes]
        full = values
    else:
        full = [1.0] * rank if vector == "scales" else list(shape)
        for a, v in zip(axes, values):
            full[a] = v
    kw[vector] = full
    if coord == "tf_crop_and_resize":
        lo = rng.uniform(-0.3, 0.6, len(full)).round(3)
        hi = (lo + rng.uniform(0.2, 1.0, len(full))).round(3)
        kw["roi"] = [float(v) for v in (*lo, *hi)]
        attrs["extrapolation_value"] = float(rng.choice([0.0, -1.5, 7.0]))
    return shape, attrs, kw


def all_cases():
    """The cross product of coordinate modes, methods and scales/sizes."""
    out = []
    for i, (coord, method, vector) in enumerate(
            (c, m, v) for c in COORDS for m in METHODS for v in ("scales", "sizes")):
        out.append((f"{i}-{coord}-{'-'.join(f'{k}={v}' for k, v in method.items())}-{vector}",
                    make_case(i, coord, method, vector)))
    return out


ALL = all_cases()
# Every coordinate mode with every method, scales and sizes alternating.
SAMPLE = [c for i, c in enumerate(ALL) if i % 4 in (0, 3)]


def check_case(shape, attrs, kw, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype("float32")
    model = resize_model(shape, attrs, **kw)
    want, oracle = spec_resize(x, attrs, **kw)
    got = run_irc(model, x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    if not oracle.float64_off:
        # the reference evaluator takes non-negative axes only
        plain = dict(attrs, axes=[a % len(shape) for a in attrs["axes"]]) \
            if "axes" in attrs else attrs
        ref = ReferenceEvaluator(resize_model(shape, plain, **kw)).run(None, {"X": x})[0]
        tol = 1e-4 if attrs["mode"] == "cubic" else 1e-5
        np.testing.assert_allclose(ref, want, rtol=tol, atol=tol)
    if ort_follows_the_reference(shape, attrs, kw, oracle.margin):
        ort_out = run_ort(model, x)
        if ort_out is not None:
            np.testing.assert_allclose(got, ort_out, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", [c for _, c in SAMPLE], ids=[n for n, _ in SAMPLE])
def test_resize_matches_the_specification(case):
    check_case(*case)


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for _, c in ALL], ids=[n for n, _ in ALL])
def test_resize_matches_the_specification_everywhere(case):
    check_case(*case, seed=1)


# -- exactness -----------------------------------------------------------------------------

@pytest.mark.parametrize("shape, attrs, kw", [
    # scale 13/3: output row 32 maps to 32.5 * 3/13 - 0.5 = 7 exactly; float64 gives
    # 7.000000000000001, whose ceiling is 8
    ([1, 11, 1, 3, 1], dict(mode="nearest", nearest_mode="ceil", axes=[1, 3],
                            keep_aspect_ratio_policy="not_smaller"), dict(sizes=[13, 13])),
    # 4.5 - 13 / 3 + 1 / 3 - 0.5 = 0 exactly, above 0 in float64
    ([1, 9, 2], dict(mode="nearest", nearest_mode="ceil",
                     coordinate_transformation_mode="half_pixel_symmetric"),
     dict(scales=[1.0, 1.5, 1.0])),
    # scale 1/7 on every axis: the coordinates 3, 4 and 2 are exact, below them in float64
    ([2, 7, 9, 5, 1], dict(mode="nearest", nearest_mode="floor", axes=[1, 2, 3],
                           coordinate_transformation_mode="half_pixel_symmetric",
                           keep_aspect_ratio_policy="not_larger"), dict(sizes=[1, 2, 12])),
])
def test_exact_ties(shape, attrs, kw):
    """Coordinates that are exactly integers pick the pixel exact arithmetic picks (under
    the round-trip instrument: the exact scales print and parse back)."""
    x = np.arange(np.prod(shape), dtype="float32").reshape(shape)
    model = resize_model(shape, attrs, **kw)
    want, oracle = spec_resize(x, attrs, **kw)
    assert oracle.float64_off
    ex = irc.compile(from_onnx(model), "llvm")
    got = irc.vm.VirtualMachine(ex)["main"](irc.tensor(x)).numpy()
    np.testing.assert_array_equal(got, want)


def test_exact_scales_are_in_the_ir():
    model = resize_model([1, 1, 3, 4], dict(mode="nearest"), sizes=[1, 1, 7, 4])
    text = from_onnx(model).script()
    assert "scales=[2.3333333333333335], scale_ratios=[7, 3]" in text


def test_extreme_cubic_downscale_is_exact():
    """16384 -> 24 with cubic weights: irc is the specification computed exactly (within
    float32 rounding); onnx.reference is within its float32 weights. onnxruntime and
    PyTorch each differ by ~1e-3 because they compute the source coordinate in float32:
    each equals that float32 evaluation of its own formula."""
    x = np.random.default_rng(0).standard_normal((1, 1, 1, 16384)).astype("float32")
    results = {}
    for coord in ("half_pixel", "align_corners", "asymmetric"):
        attrs = dict(mode="cubic", coordinate_transformation_mode=coord)
        model = resize_model(x.shape, attrs, sizes=[1, 1, 1, 24])
        want = spec_resize(x, attrs, sizes=[1, 1, 1, 24])[0]
        got = run_irc(model, x)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
        ref = ReferenceEvaluator(model).run(None, {"X": x})[0]
        np.testing.assert_allclose(ref, want, rtol=0, atol=1e-5)
        results[coord] = model, want
    model, want = results["half_pixel"]
    ort_out = run_ort(model, x)
    if ort_out is not None:
        float32 = _float32_half_pixel_cubic(x, 24, ort=True)
        np.testing.assert_allclose(ort_out.reshape(-1), float32, rtol=0, atol=1e-5)
        assert np.abs(ort_out.reshape(-1) - want.reshape(-1)).max() > 1e-4
    torch = pytest.importorskip("torch")
    t = torch.nn.functional.interpolate(torch.from_numpy(x), size=(1, 24), mode="bicubic")
    np.testing.assert_allclose(t.numpy().reshape(-1), _float32_half_pixel_cubic(x, 24),
                               rtol=0, atol=1e-5)


def _float32_half_pixel_cubic(x, n_out, ort=False):
    """The half-pixel cubic resize of ``x``'s last axis with the source coordinate in float32
    arithmetic: onnxruntime's ``(o + 0.5) / (out / in) - 0.5``, or PyTorch's
    ``(in / out) * (o + 0.5) - 0.5``."""
    n_in = x.shape[-1]
    f32 = np.float32
    kernel = _cubic(-0.75)
    out = np.zeros(n_out)
    for o in range(n_out):
        if ort:
            c = (f32(o) + f32(0.5)) / (f32(n_out) / f32(n_in)) - f32(0.5)
        else:
            c = (f32(n_in) / f32(n_out)) * (f32(o) + f32(0.5)) - f32(0.5)
        fl = math.floor(c)
        for k in range(-1, 3):
            out[o] += kernel(k - (float(c) - fl)) * float(x.reshape(-1)[min(max(fl + k, 0),
                                                                            n_in - 1)])
    return out


# -- PyTorch as a third opinion ------------------------------------------------------------

@pytest.mark.parametrize("shape, size, torch_kw, attrs", [
    ((1, 2, 5, 7), (8, 3), dict(mode="bilinear", align_corners=False),
     dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel")),
    ((1, 2, 5, 7), (9, 4), dict(mode="bilinear", align_corners=True),
     dict(mode="linear", coordinate_transformation_mode="align_corners")),
    ((1, 2, 6, 5), (4, 11), dict(mode="bicubic", align_corners=False),
     dict(mode="cubic", coordinate_transformation_mode="pytorch_half_pixel")),
    ((1, 2, 6, 5), (4, 11), dict(mode="bicubic", align_corners=True),
     dict(mode="cubic", coordinate_transformation_mode="align_corners")),
    ((1, 2, 5, 7), (11, 3), dict(mode="nearest"),
     dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")),
    ((1, 2, 5, 7), (11, 3), dict(mode="nearest-exact"),
     dict(mode="nearest", coordinate_transformation_mode="half_pixel",
          nearest_mode="round_prefer_ceil")),
    # PyTorch's antialiasing leaves out the taps outside the input (exclude_outside)
    ((1, 2, 13, 17), (4, 5), dict(mode="bilinear", antialias=True, align_corners=False),
     dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel", antialias=1,
          exclude_outside=1)),
    ((1, 2, 13, 17), (4, 5), dict(mode="bicubic", antialias=True, align_corners=False),
     dict(mode="cubic", coordinate_transformation_mode="pytorch_half_pixel", antialias=1,
          cubic_coeff_a=-0.5, exclude_outside=1)),
    ((1, 2, 3, 4, 5), (5, 2, 7), dict(mode="trilinear", align_corners=False),
     dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel")),
    ((2, 3, 9), (4,), dict(mode="linear", align_corners=False),
     dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel")),
])
def test_resize_matches_pytorch(shape, size, torch_kw, attrs):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    sizes = [*shape[:2], *size]
    want = torch.nn.functional.interpolate(torch.from_numpy(x), size=size, **torch_kw).numpy()
    model = resize_model(shape, attrs, sizes=sizes)
    np.testing.assert_allclose(run_irc(model, x), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(spec_resize(x, attrs, sizes=sizes)[0], want, rtol=1e-4,
                               atol=1e-5)


def test_integer_data_rounds_half_to_even_and_saturates():
    x = np.array([[[[0, 255, 3, 4, 250, 1]]]], "uint8")
    attrs = dict(mode="cubic", coordinate_transformation_mode="asymmetric")
    model = resize_model(x.shape, attrs, scales=[1, 1, 1, 1.7], elem=TensorProto.UINT8)
    want = ReferenceEvaluator(model).run(None, {"X": x})[0]
    np.testing.assert_array_equal(run_irc(model, x), want)

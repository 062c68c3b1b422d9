"""Constant folding of casts to and between the narrow float formats: the simplifier
folds them as compiled code converts (``dtype.round_to_format``, checked against
ml_dtypes and ONNX's float8_e8m0 converter), and removes a round trip through another
float dtype only when that dtype holds every value (``dtype.holds_every_value``)."""

import math

import numpy as np
import pytest

from irc.core import dtype as dt
from irc.tir import expr as E
from irc.tir.arith import Analyzer

ml_dtypes = pytest.importorskip("ml_dtypes")

FORMATS = list(dt.FLOAT_FORMATS)


def _reference(value: float, name: str) -> float:
    if name == "float8_e8m0fnu":
        onnx = pytest.importorskip("onnx")
        return float(onnx.numpy_helper.to_float8e8m0(np.array([value], np.float32))[0])
    with np.errstate(over="ignore"):
        return float(np.array([value]).astype(getattr(ml_dtypes, name))[0])


def _values(name: str) -> list[float]:
    codes = np.arange(256 if name.startswith("float8") else 16, dtype=np.uint8)
    vals = codes.view(getattr(ml_dtypes, name)).astype(np.float64)
    fin = np.unique(vals[np.isfinite(vals)])
    mids = (fin[1:] + fin[:-1]) / 2
    top = float(fin.max())
    rng = np.random.default_rng(0)
    return [*fin, *mids, *np.nextafter(mids.astype(np.float32), np.float32(np.inf)),
            *np.nextafter(mids.astype(np.float32), np.float32(-np.inf)), top * 1.07,
            -top * 1.2, 1e39, -1e39, 1e-40, math.inf, -math.inf, math.nan,
            *(rng.standard_normal(200) * top / 3)]


def _same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


@pytest.mark.parametrize("name", FORMATS)
def test_round_to_format_rounds_as_ml_dtypes(name):
    bad = [(v, dt.round_to_format(float(v), name), _reference(float(v), name))
           for v in _values(name)
           if not _same(dt.round_to_format(float(v), name), _reference(float(v), name))]
    assert not bad, bad[:5]


@pytest.mark.parametrize("name", FORMATS)
def test_the_simplifier_folds_casts_to_narrow_formats_as_compiled_code(name):
    an = Analyzer()
    for v in [3.3, -3.3, 1000.0, -1e6, 1e-6, 0.7, -0.0, math.inf, math.nan]:
        inner = E.Cast(dtype=name, value=E.FloatImm(dtype="float32", value=v))
        folded = an.simplify(E.Cast(dtype="float32", value=inner))
        assert isinstance(folded, E.FloatImm), folded
        assert _same(folded.value, _reference(v, name)), (v, folded.value)


def test_casts_to_integers_fold_only_when_defined():
    an = Analyzer()
    nan8 = E.Cast(dtype="float8_e4m3fn", value=E.FloatImm(dtype="float32", value=1000.0))
    assert not isinstance(an.simplify(E.Cast(dtype="int32", value=nan8)), E.IntImm)
    ok8 = E.Cast(dtype="float8_e4m3fn", value=E.FloatImm(dtype="float32", value=-7.4))
    assert an.simplify(E.Cast(dtype="int32", value=ok8)).value == -7  # -7.5, truncated
    written = E.FloatImm(dtype="float8_e5m2", value=3.3)  # an immediate written unrounded
    assert an.simplify(E.Cast(dtype="float32", value=written)).value == 3.5


@pytest.mark.parametrize("wide,narrow,holds", [
    ("float32", "bfloat16", True), ("float32", "float16", True),
    ("float16", "float8_e5m2", True), ("float16", "float8_e4m3fn", True),
    ("bfloat16", "float8_e8m0fnu", True), ("float8_e4m3fn", "float4_e2m1fn", True),
    ("bfloat16", "float16", False), ("float16", "bfloat16", False),
    ("float8_e4m3fn", "float8_e5m2", False), ("float8_e5m2", "float8_e4m3fn", False),
    ("float16", "float8_e8m0fnu", False), ("float8_e4m3fnuz", "float4_e2m1fn", False),
    ("float8_e5m2fnuz", "float8_e5m2", False), ("float8_e4m3fn", "float8_e4m3fnuz", False),
])
def test_holds_every_value(wide, narrow, holds):
    assert dt.holds_every_value(wide, narrow) is holds
    codes = np.arange(256 if narrow.startswith("float8") else 16, dtype=np.uint8)
    if narrow in dt.FLOAT_FORMATS and wide in dt.FLOAT_FORMATS:  # check it on every value
        vals = codes.view(getattr(ml_dtypes, narrow))
        back = vals.astype(getattr(ml_dtypes, wide)).astype(vals.dtype)
        same = (back.view(np.uint8) == vals.view(np.uint8)) | (
            np.isnan(back.astype(np.float32)) & np.isnan(vals.astype(np.float32)))
        assert bool(same.all()) is holds


@pytest.mark.parametrize("src,inner,removed", [
    ("float16", "float32", True), ("float8_e4m3fn", "float16", True),
    ("bfloat16", "float16", False), ("float16", "bfloat16", False),
    ("float8_e5m2", "float8_e4m3fn", False), ("float32", "float16", False),
])
def test_a_cast_round_trip_is_removed_only_when_lossless(src, inner, removed):
    x = E.Var(name="x", dtype=src)
    out = Analyzer().simplify(E.Cast(dtype=src, value=E.Cast(dtype=inner, value=x)))
    assert (out is x) is removed, out


def test_the_smallest_float8_e8m0_immediate_keeps_its_value():
    # 2**-127 is the format's code 0, while converting the float32 2**-127 (a subnormal)
    # rounds up to 2**-126: an immediate of the format is its value, not a conversion.
    import irc
    from irc import te

    tiny = math.ldexp(1.0, -127)
    assert dt.format_value(tiny, "float8_e8m0fnu") == tiny
    assert dt.round_to_format(tiny, "float8_e8m0fnu") == 2 * tiny
    A = te.placeholder((4,), "float32", name="A")
    B = te.compute((4,), lambda i: E.const(tiny, "float8_e8m0fnu"), name="B")
    C = te.compute((4,), lambda i: E.const(tiny, "float8_e8m0fnu").astype("float32") + A[i],
                   name="C")
    f = irc.build(te.create_prim_func([A, B, C]), target="llvm")
    b = np.full(4, 7, np.uint8).view(ml_dtypes.float8_e8m0fnu)
    c = np.zeros(4, np.float32)
    f(np.zeros(4, np.float32), b, c)
    assert (b.view(np.uint8) == 0).all()
    assert (c == np.float32(tiny)).all()
    folded = Analyzer().simplify(E.Cast(dtype="float32",
                                        value=E.FloatImm(dtype="float8_e8m0fnu", value=tiny)))
    assert folded.value == tiny

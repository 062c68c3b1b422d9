"""ONNX ``Cast`` / ``CastLike`` to and from the float8 formats (saturating and not),
float8_e8m0fnu and float4_e2m1fn, bit for bit against ONNX's reference evaluator, on every
value that needs a rule (zeros, the largest values and just above, ties, subnormals,
infinities, NaN) and on random values, from float16, bfloat16, float32 and float64; and
from each format back to float16, bfloat16, float32, float64 and integers.

Three paths compute the same casts: compiled code (the values are a model input), constant
folding (the values are an initializer bound with ``params``: ``FoldConstant`` evaluates
the casts) and the importer (a ``Constant`` node: evaluated at import time)."""

import numpy as np
import pytest

import irc
from irc.core import dtype as dt
from irc.frontend.onnx import from_onnx
from irc.vm.vm import VirtualMachine

ml_dtypes = pytest.importorskip("ml_dtypes")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

SATURATING = {"float8_e4m3fn": TensorProto.FLOAT8E4M3FN,
              "float8_e4m3fnuz": TensorProto.FLOAT8E4M3FNUZ,
              "float8_e5m2": TensorProto.FLOAT8E5M2,
              "float8_e5m2fnuz": TensorProto.FLOAT8E5M2FNUZ}
OTHER = {"float8_e8m0fnu": TensorProto.FLOAT8E8M0, "float4_e2m1fn": TensorProto.FLOAT4E2M1}
SOURCES = {"float16": TensorProto.FLOAT16, "bfloat16": TensorProto.BFLOAT16,
           "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE}
NUMPY = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16),
         "float32": np.dtype(np.float32), "float64": np.dtype(np.float64)}
OPSET = 23


def _format_values(name: str) -> np.ndarray:
    """The values whose conversion to format ``name`` needs a rule: every finite value of
    the format, the midpoints between neighbours (ties) and the float32 numbers next to
    them, the largest value, just above it and halfway to the next binade, values far out
    of range, tiny values, infinities and NaN; and random values."""
    codes = np.arange(256 if name.startswith("float8") else 16, dtype=np.uint8)
    vals = codes.view(getattr(ml_dtypes, name)).astype(np.float64)
    fin = np.unique(vals[np.isfinite(vals)])
    mids = ((fin[1:] + fin[:-1]) / 2).astype(np.float32)
    top = float(fin.max())
    rng = np.random.default_rng(len(name))
    return np.concatenate([
        fin, mids, np.nextafter(mids, np.float32(np.inf)),
        np.nextafter(mids, np.float32(-np.inf)),
        [0.0, -0.0, top, -top, top * 1.01, -top * 1.01, top * 1.0625, top * 1.07,
         -top * 1.07, top * 1.2, top * 2, 65504.0, 1e5, -1e5, 1e30, -1e30, 1e-30, -1e-30,
         np.inf, -np.inf, np.nan, -np.nan],
        rng.standard_normal(100) * top / 4, rng.standard_normal(100)])


FORMATS = {**SATURATING, **OTHER}
VALUES = {name: _format_values(name) for name in FORMATS}


def _cast_model(src: str, x_as: str) -> tuple[onnx.ModelProto, list[tuple[str, str]], dict]:
    """A model casting ``x_<format>`` (of ``src``) to each format, with Cast (and for
    float8_e4m3fn with CastLike too) with and without saturation; its (output, input)
    names and the values by input name. ``x_as``: ``"input"``, ``"initializer"`` or
    ``"constant"`` (a Constant node)."""
    nodes, outputs, inits, inputs, feeds, pairs = [], [], [], [], {}, []
    for name, code in FORMATS.items():
        x = VALUES[name].astype(NUMPY[src])
        xn = f"x_{name}"
        feeds[xn] = x
        if x_as == "constant":
            nodes.append(helper.make_node("Constant", [], [xn],
                                          value=numpy_helper.from_array(x)))
        elif x_as == "initializer":
            inits.append(numpy_helper.from_array(x, xn))
        else:
            inputs.append(helper.make_tensor_value_info(xn, SOURCES[src], [len(x)]))
        for sat in ((1, 0) if name in SATURATING else (None,)):
            out = name if sat is None else f"{name}_s{sat}"
            attrs = {"to": code} if sat is None else {"to": code, "saturate": sat}
            nodes.append(helper.make_node("Cast", [xn], [out], **attrs))
            outputs.append(helper.make_tensor_value_info(out, code, [len(x)]))
            pairs.append((out, xn))
            if name == "float8_e4m3fn":
                like = numpy_helper.from_array(np.zeros(1, getattr(ml_dtypes, name)),
                                               f"like_s{sat}")
                inits.append(like)
                nodes.append(helper.make_node("CastLike", [xn, like.name], [f"like_s{sat}_out"],
                                              saturate=sat))
                outputs.append(helper.make_tensor_value_info(f"like_s{sat}_out", code,
                                                             [len(x)]))
                pairs.append((f"like_s{sat}_out", xn))
    graph = helper.make_graph(nodes, "casts", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    return model, pairs, feeds


def _run_irc(model: onnx.ModelProto, x_as: str, args: list[np.ndarray]) -> list[np.ndarray]:
    if x_as == "initializer":
        mod, params = from_onnx(model, keep_params_in_input=True)
        ex = irc.compile(mod, "llvm", params=params)
        args = []
    else:
        ex = irc.compile(from_onnx(model), "llvm")
        args = args if x_as == "input" else []
    res = VirtualMachine(ex, irc.cpu())["main"](*args)
    return [r.numpy() for r in (res if isinstance(res, (tuple, list)) else [res])]


def _bit_exact(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Where ``got`` and ``want`` (narrow float arrays) hold the same byte, or both NaN."""
    return (got.view(np.uint8) == want.view(np.uint8)) | (np.isnan(got) & np.isnan(want))


@pytest.mark.parametrize("x_as", ["input", "initializer", "constant"])
@pytest.mark.parametrize("src", list(SOURCES))
def test_casts_to_the_narrow_formats_match_the_reference_bit_for_bit(src, x_as):
    model, pairs, feeds = _cast_model(src, x_as)
    want = ReferenceEvaluator(model).run(None, feeds if x_as == "input" else {})
    got = _run_irc(model, x_as, list(feeds.values()))
    for (name, xn), g, w in zip(pairs, got, want):
        assert g.dtype == w.dtype, (name, g.dtype, w.dtype)
        x = feeds[xn]
        ok = _bit_exact(g, w)
        bad = np.flatnonzero(~ok)
        assert ok.all(), (name, [(float(x[i]), float(g[i]), float(w[i])) for i in bad[:5]])


DESTS = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16,
         "bfloat16": TensorProto.BFLOAT16, "float64": TensorProto.DOUBLE,
         "int32": TensorProto.INT32, "int64": TensorProto.INT64}


@pytest.mark.parametrize("x_as", ["input", "initializer"])
@pytest.mark.parametrize("name", list(FORMATS))
def test_casts_from_the_narrow_formats_match_the_reference(name, x_as):
    codes = np.arange(256 if name.startswith("float8") else 16, dtype=np.uint8)
    x = codes.view(getattr(ml_dtypes, name))
    # to integers: the values in int32's range only (NaN, inf and the larger powers of
    # float8_e8m0fnu have no integer)
    in_range = np.abs(np.nan_to_num(x.astype(np.float64), nan=np.inf)) < 2.0 ** 31
    code = FORMATS[name]
    nodes, outputs = [], []
    for dest, dcode in DESTS.items():
        src = "x" if dt.is_float(dest) else "xf"
        nodes.append(helper.make_node("Cast", [src], [dest], to=dcode))
        outputs.append(helper.make_tensor_value_info(dest, dcode, None))
    xf = x[in_range]
    inits = [numpy_helper.from_array(xf, "xf")]
    inputs = []
    if x_as == "input":
        inputs.append(helper.make_tensor_value_info("x", code, [len(x)]))
    else:
        inits.append(numpy_helper.from_array(x, "x"))
    model = helper.make_model(helper.make_graph(nodes, "from", inputs, outputs, inits),
                              opset_imports=[helper.make_opsetid("", OPSET)])
    want = ReferenceEvaluator(model).run(None, {"x": x} if x_as == "input" else {})
    got = _run_irc(model, x_as, [x])
    for dest, g, w in zip(DESTS, got, want):
        assert g.dtype == w.dtype, (dest, g.dtype, w.dtype)
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        same = (g64 == w64) & (np.signbit(g64) == np.signbit(w64)) | (np.isnan(g64) &
                                                                      np.isnan(w64))
        assert same.all(), (dest, [(float(a), g[i], w[i]) for i, a in
                                   enumerate(x if len(g) == len(x) else xf) if not same[i]][:5])


# -- the node-test harness compares dtypes exactly and the narrow formats bit for bit ------

def test_the_node_harness_is_strict_about_dtypes_and_bits():
    from irc.testing.onnx_node_cases import _compare

    bf = np.array([1.0, 2.5, np.nan], ml_dtypes.bfloat16)
    assert _compare(bf.copy(), bf, 1e-5) is None  # NaN equals NaN
    assert "dtype uint16 != expected bfloat16" in _compare(bf.view(np.uint16), bf, 1e-5)
    f8 = np.array([448, -0.0, np.nan, 1e-3], ml_dtypes.float8_e4m3fn)
    assert _compare(f8.copy(), f8, 1e-5) is None
    near = f8.copy()
    near.view(np.uint8)[0] -= 1  # 416: within any relative tolerance a format this coarse has
    assert "1 of 4 values differ" in _compare(near, f8, 1e-5)
    zero = f8.copy()
    zero[1] = 0.0  # +0 for -0: equal as numbers, not as bits
    assert "1 of 4 values differ" in _compare(zero, f8, 1e-5)
    assert "dtype float32" in _compare(f8.astype(np.float32), f8, 1e-5)


@pytest.mark.parametrize("case_name", [
    "test_cast_FLOAT_to_BFLOAT16", "test_castlike_FLOAT_to_BFLOAT16",
    "test_cast_BFLOAT16_to_FLOAT", "test_cast_no_saturate_FLOAT16_to_FLOAT8E4M3FN",
    "test_cast_FLOAT_to_FLOAT8E5M2FNUZ", "test_castlike_no_saturate_FLOAT_to_FLOAT8E4M3FNUZ"])
def test_node_cases_of_bfloat16_and_float8_casts_pass(case_name):
    from irc.testing.onnx_node_cases import collect_cases, run_case

    (case,) = [c for c in collect_cases() if c.name == case_name]
    result = run_case(case)
    assert result.outcome == "pass", result.message

"""Reductions of float16 and bfloat16 tensors through ONNX models: every operator that sums
or multiplies many values (reductions, softmax, the normalizations, pooling, LRN,
cumulative sums and products, einsum, matrix products, convolutions, col2im, attention)
accumulates in float32 and rounds once, as PyTorch and ONNX Runtime do.

Each case is a one-node model whose reductions are long and whose values span magnitudes,
where sums kept in 16 bits drift by tens of units in the last place (bfloat16 sums of
a thousand values stop growing altogether). The reference is ONNX's reference evaluator
running the same model in float64 on the same (rounded) inputs (or, where it cannot, the
operator's definition in numpy, in float64), its result rounded once to the 16-bit dtype;
irc's answer must be within 2 units in the last place of it.
"""

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ml_dtypes = pytest.importorskip("ml_dtypes")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import irc  # noqa: E402
from irc.frontend.onnx import from_onnx  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)
NUMPY = {"float16": np.dtype("float16"), "bfloat16": BF16}
ELEM = {"float16": TensorProto.FLOAT16, "bfloat16": TensorProto.BFLOAT16,
        "float64": TensorProto.DOUBLE}
# Explicit significand bits and the smallest normal exponent of each dtype.
FORMAT = {"float16": (10, -14), "bfloat16": (7, -126)}
TOLERANCE_ULPS = 2.0


@dataclass
class Case:
    """A one-node model: ``inputs`` name -> (shape, sampler), the node's attributes, the
    shapes of its outputs; ``floor``: values below it are compared in units of the last
    place at ``floor`` (outputs that cancel to near zero, as normalized ones);
    ``reference``: the float64 result computed from the float64 inputs, for operators
    ONNX's reference evaluator cannot run in float64; ``dtypes``: the 16-bit dtypes the
    case runs in."""

    op: str
    inputs: dict[str, tuple[tuple[int, ...], Callable[[np.random.Generator, tuple], Any]]]
    outputs: dict[str, tuple[int, ...]]
    attrs: dict[str, Any] = field(default_factory=dict)
    opset: int = 18
    floor: float = 0.0
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    reference: Callable[..., list[np.ndarray]] | None = None
    dtypes: tuple[str, ...] = ("float16", "bfloat16")


def positive(lo: float = -3.0, hi: float = 3.0):
    """Positive values of mixed magnitude: ``exp(uniform(lo, hi))``."""
    return lambda rng, shape: np.exp(rng.uniform(lo, hi, shape))


def uniform(lo: float, hi: float):
    return lambda rng, shape: rng.uniform(lo, hi, shape)


def normal(mean: float = 0.0, std: float = 1.0):
    return lambda rng, shape: rng.normal(mean, std, shape)


def _axes(*values: int) -> dict[str, np.ndarray]:
    return {"axes": np.array(values, "int64")}


def _mean_variance_normalization(x: np.ndarray) -> list[np.ndarray]:
    """ONNX's definition (over axes 0, 2, 3): ``(x - E[x]) / (sqrt(E[x^2] - E[x]^2) +
    1e-9)`` (the reference evaluator's function body adds a float32 constant, which
    float64 values refuse)."""
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    var = (x * x).mean(axis=(0, 2, 3), keepdims=True) - mean * mean
    return [(x - mean) / (np.sqrt(var) + 1e-9)]


def _global_lp_pool(x: np.ndarray) -> list[np.ndarray]:
    """``p = 2`` over the spatial axes (the reference evaluator has no GlobalLpPool)."""
    return [np.sqrt((x * x).sum(axis=(2, 3), keepdims=True))]


def _lrn(x: np.ndarray, size: int, alpha: float, beta: float, bias: float
         ) -> list[np.ndarray]:
    """ONNX's definition (the reference evaluator's loops over the batch, not the
    channels): each channel's sum of squares over ``size`` channels around it."""
    before, after = (size - 1) // 2, size // 2 + 1
    squares = np.zeros_like(x)
    for c in range(x.shape[1]):
        squares[:, c] = (x[:, max(0, c - before):c + after] ** 2).sum(axis=1)
    return [x / (bias + alpha / size * squares) ** beta]


def _grouped_conv_transpose(x: np.ndarray, w: np.ndarray, **attrs: Any) -> list[np.ndarray]:
    """A grouped ``ConvTranspose`` as one ungrouped one per group (the reference
    evaluator fails on groups), the results concatenated on channels."""
    groups = attrs.pop("group")
    per_in = x.shape[1] // groups
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, TensorProto.DOUBLE, None)
                      for n in ("x", "w")],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    ev = ReferenceEvaluator(model)
    parts = [ev.run(None, {"x": x[:, g * per_in:(g + 1) * per_in],
                           "w": w[g * per_in:(g + 1) * per_in]})[0] for g in range(groups)]
    return [np.concatenate(parts, axis=1)]


REDUCE = {"x": ((4, 1024), positive())}
CASES = {
    "ReduceSum": Case("ReduceSum", REDUCE, {"y": (4,)}, {"keepdims": 0}, constants=_axes(1)),
    "ReduceMean": Case("ReduceMean", REDUCE, {"y": (4,)}, {"keepdims": 0},
                       constants=_axes(1)),
    "ReduceProd": Case("ReduceProd", {"x": ((4, 512), uniform(0.9, 1.1))}, {"y": (4,)},
                       {"keepdims": 0}, constants=_axes(1)),
    "ReduceL1": Case("ReduceL1", {"x": ((4, 1024), normal(0, 3))}, {"y": (4, 1)},
                     constants=_axes(1)),
    "ReduceL2": Case("ReduceL2", {"x": ((4, 1024), normal(0, 3))}, {"y": (4, 1)},
                     constants=_axes(1)),
    "ReduceSumSquare": Case("ReduceSumSquare", {"x": ((4, 1024), normal(0, 1))},
                            {"y": (4, 1)}, constants=_axes(1)),
    "ReduceLogSum": Case("ReduceLogSum", REDUCE, {"y": (4, 1)}, constants=_axes(1)),
    "ReduceLogSumExp": Case("ReduceLogSumExp", {"x": ((4, 1024), normal(0, 2))},
                            {"y": (4, 1)}, constants=_axes(1)),
    "Softmax": Case("Softmax", {"x": ((4, 1000), normal(0, 3))}, {"y": (4, 1000)}),
    "LogSoftmax": Case("LogSoftmax", {"x": ((4, 1000), normal(0, 3))}, {"y": (4, 1000)}),
    "LayerNormalization": Case(
        "LayerNormalization", {"x": ((4, 1024), normal(4, 1)),
                               "scale": ((1024,), uniform(0.5, 1.5)),
                               "bias": ((1024,), uniform(-0.5, 0.5))},
        {"y": (4, 1024)}, opset=17, floor=2 ** -6),
    # Statistics kept in float16 (stash_type 10): irc's fused layer norm, which sums and
    # normalizes in float32 all the same, as ONNX Runtime's kernel does.
    "LayerNormalization_stash_float16": Case(
        "LayerNormalization", {"x": ((4, 1024), normal(4, 1)),
                               "scale": ((1024,), uniform(0.5, 1.5))},
        {"y": (4, 1024)}, {"stash_type": 10}, opset=17, floor=2 ** -6,
        dtypes=("float16",)),
    # Expanded through ONNX's function body, which rounds the normalized values to the
    # input's dtype before the scale and the bias: a zero bias keeps that rounding from
    # cancelling against it.
    "GroupNormalization": Case(
        "GroupNormalization", {"x": ((2, 8, 16, 16), normal(4, 1)),
                               "scale": ((8,), uniform(0.5, 1.5)),
                               "bias": ((8,), uniform(0, 0))},
        {"y": (2, 8, 16, 16)}, {"num_groups": 2}, opset=21, floor=2 ** -6),
    "InstanceNormalization": Case(
        "InstanceNormalization", {"x": ((2, 4, 32, 32), normal(4, 1)),
                                  "scale": ((4,), uniform(0.5, 1.5)),
                                  "bias": ((4,), uniform(-0.5, 0.5))},
        {"y": (2, 4, 32, 32)}, floor=2 ** -6),
    "RMSNormalization": Case(
        "RMSNormalization", {"x": ((4, 1024), normal(2, 1)),
                             "scale": ((1024,), uniform(0.5, 1.5))},
        {"y": (4, 1024)}, opset=23, floor=2 ** -6),
    "LpNormalization": Case("LpNormalization", {"x": ((4, 1024), positive())},
                            {"y": (4, 1024)}, {"axis": 1, "p": 2}),
    "LpNormalization_p1": Case("LpNormalization", {"x": ((4, 1024), positive())},
                               {"y": (4, 1024)}, {"axis": 1, "p": 1}),
    "MeanVarianceNormalization": Case(
        "MeanVarianceNormalization", {"x": ((2, 3, 32, 32), normal(4, 1))},
        {"y": (2, 3, 32, 32)}, floor=2 ** -6, reference=_mean_variance_normalization),
    "AveragePool": Case("AveragePool", {"x": ((1, 2, 32, 32), positive())},
                        {"y": (1, 2, 2, 2)}, {"kernel_shape": [16, 16], "strides": [16, 16]}),
    "AveragePool_pads": Case("AveragePool", {"x": ((1, 2, 30, 30), positive())},
                             {"y": (1, 2, 2, 2)},
                             {"kernel_shape": [16, 16], "strides": [16, 16],
                              "pads": [1, 1, 1, 1], "count_include_pad": 0}),
    "AveragePool_3d": Case("AveragePool", {"x": ((1, 2, 8, 8, 8), positive())},
                           {"y": (1, 2, 1, 1, 1)}, {"kernel_shape": [8, 8, 8]}),
    "LpPool": Case("LpPool", {"x": ((1, 2, 32, 32), normal(0, 2))}, {"y": (1, 2, 2, 2)},
                   {"kernel_shape": [16, 16], "strides": [16, 16], "p": 2}),
    "GlobalAveragePool": Case("GlobalAveragePool", {"x": ((1, 4, 32, 32), positive())},
                              {"y": (1, 4, 1, 1)}),
    "GlobalLpPool": Case("GlobalLpPool", {"x": ((1, 4, 32, 32), normal(0, 2))},
                         {"y": (1, 4, 1, 1)}, {"p": 2}, reference=_global_lp_pool),
    "LRN": Case("LRN", {"x": ((1, 128, 4, 4), normal(0, 1))}, {"y": (1, 128, 4, 4)},
                {"size": 127, "alpha": 127.0, "beta": 0.75, "bias": 1.0},
                reference=lambda x: _lrn(x, 127, 127.0, 0.75, 1.0)),
    "CumSum": Case("CumSum", {"x": ((4, 1024), positive())}, {"y": (4, 1024)},
                   constants={"axis": np.array(1, "int64")}),
    "CumProd": Case("CumProd", {"x": ((4, 512), uniform(0.9, 1.1))}, {"y": (4, 512)},
                    opset=26, constants={"axis": np.array(1, "int64")}),
    "Einsum_matmul": Case("Einsum", {"a": ((2, 8, 512), positive(-2, 0)),
                                     "b": ((2, 512, 8), positive(-2, 0))},
                          {"y": (2, 8, 8)}, {"equation": "bik,bkj->bij"}),
    "Einsum_sum": Case("Einsum", {"a": ((8, 1024), positive())}, {"y": (8,)},
                       {"equation": "ij->i"}),
    "MatMul": Case("MatMul", {"a": ((8, 1024), positive(-2, 0)),
                              "b": ((1024, 8), positive(-2, 0))}, {"y": (8, 8)}),
    "MatMul_batched": Case("MatMul", {"a": ((2, 3, 4, 512), positive(-2, 0)),
                                      "b": ((3, 512, 5), positive(-2, 0))},
                           {"y": (2, 3, 4, 5)}),
    "Gemm": Case("Gemm", {"a": ((8, 1024), positive(-2, 0)),
                          "b": ((8, 1024), positive(-2, 0)), "c": ((8,), positive())},
                 {"y": (8, 8)}, {"transB": 1}),
    "Conv": Case("Conv", {"x": ((1, 64, 8, 8), positive(-2, 0)),
                          "w": ((8, 64, 3, 3), positive(-2, 0)), "b": ((8,), positive())},
                 {"y": (1, 8, 8, 8)}, {"pads": [1, 1, 1, 1]}),
    "Conv_1d": Case("Conv", {"x": ((1, 128, 16), positive(-2, 0)),
                             "w": ((4, 128, 5), positive(-2, 0))}, {"y": (1, 4, 12)}),
    "Conv_3d": Case("Conv", {"x": ((1, 16, 6, 6, 6), positive(-2, 0)),
                             "w": ((4, 16, 3, 3, 3), positive(-2, 0))}, {"y": (1, 4, 4, 4, 4)}),
    "Conv_grouped": Case("Conv", {"x": ((1, 64, 8, 8), positive(-2, 0)),
                                  "w": ((8, 32, 3, 3), positive(-2, 0))},
                         {"y": (1, 8, 6, 6)}, {"group": 2}),
    "Conv_depthwise": Case("Conv", {"x": ((1, 4, 24, 24), positive(-2, 0)),
                                    "w": ((4, 1, 15, 15), positive(-2, 0))},
                           {"y": (1, 4, 10, 10)}, {"group": 4}),
    "ConvTranspose": Case("ConvTranspose", {"x": ((1, 128, 6, 6), positive(-2, 0)),
                                            "w": ((128, 4, 3, 3), positive(-2, 0))},
                          {"y": (1, 4, 8, 8)}),
    "ConvTranspose_grouped": Case(
        "ConvTranspose", {"x": ((1, 128, 6, 6), positive(-2, 0)),
                          "w": ((128, 2, 3, 3), positive(-2, 0))},
        {"y": (1, 4, 13, 13)}, {"group": 2, "strides": [2, 2]},
        reference=lambda x, w: _grouped_conv_transpose(x, w, group=2, strides=[2, 2])),
    "ConvTranspose_3d": Case("ConvTranspose", {"x": ((1, 64, 3, 3, 3), positive(-2, 0)),
                                               "w": ((64, 2, 3, 3, 3), positive(-2, 0))},
                             {"y": (1, 2, 5, 5, 5)}),
    "DeformConv": Case("DeformConv", {"x": ((1, 64, 6, 6), positive(-2, 0)),
                                      "w": ((4, 64, 3, 3), positive(-2, 0)),
                                      "offset": ((1, 18, 4, 4), uniform(-0.5, 0.5))},
                       {"y": (1, 4, 4, 4)}, opset=19),
    "Col2Im": Case("Col2Im", {"x": ((1, 2 * 32 * 32, 81), positive(-1, 1))},
                   {"y": (1, 2, 40, 40)},
                   constants={"image_shape": np.array([40, 40], "int64"),
                              "block_shape": np.array([32, 32], "int64")}),
    "Attention": Case("Attention", {"q": ((1, 2, 16, 64), normal(0, 0.1)),
                                    "k": ((1, 2, 512, 64), normal(0, 0.1)),
                                    "v": ((1, 2, 512, 64), positive())},
                      {"y": (1, 2, 16, 64)}, opset=23),
}


def _model(case: Case, dtype: str) -> Any:
    elem = ELEM[dtype]
    inputs = [helper.make_tensor_value_info(n, elem, s) for n, (s, _) in case.inputs.items()]
    outputs = [helper.make_tensor_value_info(n, elem, s) for n, s in case.outputs.items()]
    inits = [onnx.numpy_helper.from_array(v, n) for n, v in case.constants.items()]
    attrs = dict(case.attrs)
    if dtype == "float64":
        # The reference evaluator computes in its inputs' dtype (float64) and takes only
        # the default stash type.
        attrs.pop("stash_type", None)
    node = helper.make_node(case.op, list(case.inputs) + list(case.constants),
                            list(case.outputs), **attrs)
    graph = helper.make_graph([node], case.op, inputs, outputs, initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", case.opset)])


def _as_float64(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype == np.uint16:  # bfloat16 as its bits
        a = a.view(BF16)
    return a.astype(np.float64)


def ulp_errors(got: np.ndarray, ref: np.ndarray, dtype: str, floor: float = 0.0
               ) -> np.ndarray:
    """``|got - ref|`` in units of the last place of ``dtype`` at ``max(|ref|, floor)``."""
    bits, min_exp = FORMAT[dtype]
    mag = np.maximum(np.abs(ref), max(floor, 2.0 ** min_exp))
    ulp = 2.0 ** (np.floor(np.log2(mag)) - bits)
    return np.abs(_as_float64(got) - ref) / ulp


def check(case: Case, dtype: str, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    feeds = {n: np.asarray(sample(rng, s)).astype(NUMPY[dtype])
             for n, (s, sample) in case.inputs.items()}
    wide = {n: v.astype(np.float64) for n, v in feeds.items()}
    if case.reference is not None:
        ref = case.reference(*wide.values())
    else:
        ref = ReferenceEvaluator(_model(case, "float64")).run(None, wide)
    ex = irc.compile(from_onnx(_model(case, dtype)), target="llvm")
    got = irc.vm.VirtualMachine(ex, irc.cpu())["main"](*[irc.tensor(v) for v in feeds.values()])
    got = got if isinstance(got, (list, tuple)) else [got]
    for name, g, r in zip(case.outputs, got, ref):
        rounded = np.asarray(r).astype(NUMPY[dtype]).astype(np.float64)
        err = ulp_errors(g.numpy(), rounded, dtype, case.floor)
        worst = np.unravel_index(np.argmax(err), err.shape)
        assert err.max() <= TOLERANCE_ULPS, (
            f"{case.op} {dtype} output {name}: {err.max():.1f} units in the last place off "
            f"at {worst} ({_as_float64(g.numpy())[worst]!r} vs {rounded[worst]!r}); "
            f"{int((err > TOLERANCE_ULPS).sum())} of {err.size} values beyond "
            f"{TOLERANCE_ULPS}")


# One operator of each family runs by default (in bfloat16, whose 8-bit significand shows
# a 16-bit accumulator at once, and the softmaxes in float16 too); the rest are slow.
QUICK = {"ReduceSum", "ReduceMean", "Softmax", "LogSoftmax", "LayerNormalization",
         "GroupNormalization", "AveragePool", "CumSum", "MatMul", "Conv", "ConvTranspose"}


def _params():
    out = []
    for n, c in CASES.items():
        for d in c.dtypes:
            quick = n in QUICK and (d == "bfloat16" or "Softmax" in n)
            out.append(pytest.param(n, d, marks=() if quick else pytest.mark.slow))
    return out


@pytest.mark.parametrize("name, dtype", _params())
def test_reduction_accumulates_in_float32(name, dtype):
    check(CASES[name], dtype)

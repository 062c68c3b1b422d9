"""Degenerate shapes through the default CPU build, against ONNX Runtime: constant
weights of one element (``[1]``, ``[1, 1]``, 0-d), size-1 dimensions, extents smaller
than a micro-kernel's tile and zero-size dimensions, in matrix products, convolutions,
reductions, normalizations and softmax; and static shapes computed by the exporter's
shape arithmetic (``Shape -> Slice/Gather -> Concat``), which must fold.

Each case is a small model whose constants reach a multiply-accumulate or a reduction
kernel, where the CPU rules repack a constant weight into the layout the tiled loops
read it (:mod:`irc.dlight.weights`) or lay out a strided one along the vector loop.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import pytest

import irc
from irc.passes import PassContext

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from irc.frontend.onnx import from_onnx  # noqa: E402


@dataclass
class Case:
    """A model: ``nodes`` (its output is ``y``), float32 ``inputs`` (name -> shape) and
    ``consts`` (initializers) at ``opset``; ``round_trip``: build it under the suite's
    print -> parse check (see :func:`_check`)."""

    nodes: list
    inputs: dict[str, tuple[int, ...]]
    consts: dict[str, np.ndarray] = field(default_factory=dict)
    opset: int = 18
    round_trip: bool = True


def _f32(shape: tuple[int, ...], seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def _i64(*values: int) -> np.ndarray:
    return np.array(values, "int64")


def _node(op: str, inputs: list[str], output: str = "y", **attrs) -> object:
    return helper.make_node(op, inputs, [output], **attrs)


def _model(case: Case) -> onnx.ModelProto:
    graph = helper.make_graph(
        case.nodes, "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s))
         for n, s in case.inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in case.consts.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", case.opset)])


class _Records(logging.Handler):
    """Collects the records of warnings and errors logged while it is attached."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _check(case: Case) -> None:
    """irc's default CPU build of ``case`` gives ONNX Runtime's output (shape and
    values), and no default schedule rule fails half way on its kernels (a failure is
    logged as a warning and the next rule takes the kernel). Without ``case.round_trip``
    the build runs without the suite's print -> parse check after every pass (it makes
    these small builds five to six times slower): it stays on for every shape that
    makes IR of its own (one-element, unit and zero-size buffers) and is left out of
    the cases that differ from one of those only in the operator or the sizes."""
    model = _model(case)
    feeds = {n: _f32(s, seed=k + 2) for k, (n, s) in enumerate(case.inputs.items())}
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    mod = from_onnx(model)
    records = _Records()
    dlight_log = logging.getLogger("irc.dlight")
    dlight_log.addHandler(records)
    try:
        if case.round_trip:
            ex = irc.compile(mod, target="llvm")
        else:
            with PassContext():
                ex = irc.compile(mod, target="llvm")
    finally:
        dlight_log.removeHandler(records)
    assert not records.records, [r.getMessage() for r in records.records]
    got = irc.vm.VirtualMachine(ex)["main"](*[irc.tensor(a) for a in feeds.values()]).numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _matmul(x: tuple[int, ...], w: tuple[int, ...], weight_first: bool = False) -> Case:
    """``x @ W`` (or ``W @ x``) with a constant ``W`` of shape ``w``."""
    order = ["w", "x"] if weight_first else ["x", "w"]
    return Case([_node("MatMul", order)], {"x": x}, {"w": _f32(w)})


# -- matrix products ---------------------------------------------------------------------

MATMULS = {
    "x41_w11": _matmul((4, 1), (1, 1)),
    "w11_x14": _matmul((1, 4), (1, 1), weight_first=True),
    "x41_w1": _matmul((4, 1), (1,)),
    "w1_x14": _matmul((1, 4), (1,), weight_first=True),
    "x1_w11": _matmul((1,), (1, 1)),
    "x1_w17": _matmul((1,), (1, 7)),
    "x11_w17": _matmul((1, 1), (1, 7)),
    "x31_w1k": _matmul((3, 1), (1, 9)),
    "x37_wk1": _matmul((3, 7), (7, 1)),
    "w1k_xk3": _matmul((7, 3), (1, 7), weight_first=True),
    "wk1_x13": _matmul((1, 3), (7, 1), weight_first=True),
    "x7_wk1": _matmul((7,), (7, 1)),
    "x35_w52_small_tile": _matmul((3, 5), (5, 2)),
    "batch1_x135_w52": _matmul((1, 3, 5), (5, 2)),
    "batch1_x115_w152": _matmul((1, 1, 5), (1, 5, 2)),
    "batch1_w135_x152": _matmul((1, 5, 2), (1, 3, 5), weight_first=True),
    "batch2_x211_w11": _matmul((2, 1, 1), (1, 1)),
    "batch_broadcast_x2311_w111": _matmul((2, 3, 1, 1), (1, 1, 1)),
    "zero_rows_x05_w52": _matmul((0, 5), (5, 2)),
    "zero_inner_x30_w02": _matmul((3, 0), (0, 2)),
    "zero_cols_x35_w50": _matmul((3, 5), (5, 0)),
    "zero_batch_x035_w52": _matmul((0, 3, 5), (5, 2)),
}


@pytest.mark.parametrize("name", sorted(MATMULS))
def test_matmul_with_degenerate_constant_matches_onnxruntime(name):
    _check(MATMULS[name])


GEMMS = {
    "w11_bias1": Case([_node("Gemm", ["x", "w", "b"])], {"x": (4, 1)},
                      {"w": _f32((1, 1)), "b": _f32((1,), 3)}),
    "w11_transb_scalar_bias": Case([_node("Gemm", ["x", "w", "b"], transB=1, alpha=0.5,
                                          beta=2.0)],
                                   {"x": (4, 1)}, {"w": _f32((1, 1)), "b": _f32((), 3)}),
    "x11_w17": Case([_node("Gemm", ["x", "w", "b"])], {"x": (1, 1)},
                    {"w": _f32((1, 7)), "b": _f32((7,), 3)}),
    "transb_wk1": Case([_node("Gemm", ["x", "w"], transB=1)], {"x": (3, 6)},
                       {"w": _f32((1, 6))}),
    "transa_x1m": Case([_node("Gemm", ["x", "w", "b"], transA=1)], {"x": (1, 5)},
                       {"w": _f32((1, 3)), "b": _f32((1, 1), 3)}),
    "zero_rows": Case([_node("Gemm", ["x", "w", "b"])], {"x": (0, 4)},
                      {"w": _f32((4, 3)), "b": _f32((3,), 3)}),
    "zero_inner": Case([_node("Gemm", ["x", "w", "b"])], {"x": (2, 0)},
                       {"w": _f32((0, 3)), "b": _f32((3,), 3)}),
}


@pytest.mark.parametrize("name", sorted(GEMMS))
def test_gemm_with_degenerate_constant_matches_onnxruntime(name):
    _check(GEMMS[name])


# -- convolutions, pooling and normalizations of images -------------------------------

def _conv(x: tuple[int, ...], w: tuple[int, ...], bias: bool = True, op: str = "Conv",
          round_trip: bool = True, **attrs) -> Case:
    inputs = ["x", "w", "b"] if bias else ["x", "w"]
    consts = {"w": _f32(w)}
    if bias:
        channels = w[0] if op == "Conv" else w[1] * attrs.get("group", 1)
        consts["b"] = _f32((channels,), 3)
    return Case([_node(op, inputs, **attrs)], {"x": x}, consts, round_trip=round_trip)


def _channel_params(c: int) -> dict[str, np.ndarray]:
    return {"scale": _f32((c,), 5), "bias": _f32((c,), 6), "mean": _f32((c,), 7),
            "var": np.full((c,), 0.5, "float32")}


CONVS = {
    "image_1x1": _conv((1, 3, 1, 1), (4, 3, 1, 1)),
    "image_1x1_kernel3_pad1": _conv((1, 2, 1, 1), (3, 2, 3, 3), pads=[1, 1, 1, 1]),
    "image_1x1_wide_kernel3_pad1": _conv((1, 16, 1, 1), (16, 16, 3, 3), pads=[1, 1, 1, 1],
                                         round_trip=False),
    "one_channel_in_out": _conv((1, 1, 5, 5), (1, 1, 3, 3), pads=[1, 1, 1, 1]),
    "one_element_weight": _conv((1, 1, 4, 6), (1, 1, 1, 1)),
    "one_element_weight_no_bias": _conv((2, 1, 3, 3), (1, 1, 1, 1), bias=False),
    "one_in_channel_many_out": _conv((1, 1, 6, 6), (8, 1, 3, 3), pads=[1, 1, 1, 1],
                                     round_trip=False),
    "one_channel_stride2": _conv((1, 1, 5, 5), (1, 1, 3, 3), strides=[2, 2], round_trip=False),
    "depthwise_image_1x1": _conv((1, 8, 1, 1), (8, 1, 3, 3), group=8, pads=[1, 1, 1, 1]),
    "kernel_as_large_as_image": _conv((1, 2, 3, 3), (5, 2, 3, 3), round_trip=False),
    "conv1d_one_element": _conv((1, 1, 7), (1, 1, 1)),
    "image_1x7_kernel_1x3": _conv((1, 4, 1, 7), (6, 4, 1, 3), pads=[0, 1, 0, 1],
                                  round_trip=False),
    "zero_batch": _conv((0, 3, 4, 4), (2, 3, 3, 3)),
    "transpose_one_element": _conv((1, 1, 3, 4), (1, 1, 1, 1), op="ConvTranspose"),
    "transpose_image_1x1": _conv((1, 3, 1, 1), (3, 2, 2, 2), op="ConvTranspose",
                                 strides=[2, 2]),
    "max_pool_image_1x1": Case([_node("MaxPool", ["x"], kernel_shape=[1, 1])],
                               {"x": (1, 3, 1, 1)}, round_trip=False),
    "average_pool_padded_1x1": Case([_node("AveragePool", ["x"], kernel_shape=[3, 3],
                                           pads=[1, 1, 1, 1], count_include_pad=0)],
                                    {"x": (1, 2, 1, 1)}, round_trip=False),
    "global_average_pool_1x1": Case([_node("GlobalAveragePool", ["x"])],
                                    {"x": (2, 3, 1, 1)}, round_trip=False),
    "batch_norm_one_channel_then_mean": Case(
        [_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], "n"),
         _node("ReduceMean", ["n", "axes"], keepdims=0)],
        {"x": (2, 1, 3, 4)}, {**_channel_params(1), "axes": _i64(2, 3)}, round_trip=False),
    "instance_norm_image_1x1": Case(
        [_node("InstanceNormalization", ["x", "scale", "bias"])], {"x": (2, 3, 1, 1)},
        {"scale": _f32((3,), 5), "bias": _f32((3,), 6)}, round_trip=False),
}


@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv_and_pool_with_degenerate_shapes_match_onnxruntime(name):
    _check(CONVS[name])


# -- reductions after elementwise operators with one-element constants ------------------

REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceProd"]
# (id, input shape, constant shape, elementwise op, reduction axes or None for all)
REDUCE_INPUTS = [
    ("mul_1_over_size1_axis", (2, 1, 3), (1,), "Mul", (1,)),
    ("add_0d_over_all", (2, 3, 4), (), "Add", None),
    ("mul_0d_over_middle", (2, 3, 4, 5), (), "Mul", (1,)),
    ("mul_11_over_last", (3, 5), (1, 1), "Mul", (-1,)),
    ("mul_1_all_size1", (1, 1), (1,), "Mul", (0, 1)),
    ("sub_1_over_middle", (2, 3, 4, 5), (1,), "Sub", (1,)),
    ("mul_1_over_spatial", (2, 3, 4, 5), (1,), "Mul", (2, 3)),
    ("mul_1111_over_channels", (1, 8, 2, 16), (1, 1, 1, 1), "Mul", (1,)),
    ("zero_size_kept_axis", (2, 0, 3), (1,), "Mul", (0,)),
    ("zero_size_reduced_axis", (2, 0, 3), (1,), "Mul", (1,)),
    ("zero_size_middle_of_output", (2, 3, 0, 4), (1,), "Mul", (1,)),
]


def _reduction(op: str, shape, const_shape, elementwise: str, axes, keepdims: int) -> Case:
    consts = {"c": np.full(const_shape, 0.75, "float32") if elementwise == "Mul"
              else _f32(const_shape, 4)}
    inputs = ["e"]
    if axes is not None:
        consts["axes"] = _i64(*axes)
        inputs.append("axes")
    return Case([_node(elementwise, ["x", "c"], "e"),
                 _node(op, inputs, keepdims=keepdims)], {"x": shape}, consts,
                round_trip=op == "ReduceSum")


@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("case", REDUCE_INPUTS, ids=[c[0] for c in REDUCE_INPUTS])
def test_reduction_after_one_element_constant_matches_onnxruntime(case, op, keepdims):
    name, shape, const_shape, elementwise, axes = case
    if name == "zero_size_reduced_axis" and op == "ReduceMean":
        pytest.skip("ONNX leaves the mean of no values undefined (ONNX Runtime gives 0, "
                    "irc NaN as numpy)")
    _check(_reduction(op, shape, const_shape, elementwise, axes, keepdims))


PRELU = {
    "nchw_slope1_mean_hw": Case([_node("PRelu", ["x", "s"], "p"),
                                 _node("ReduceMean", ["p", "axes"], keepdims=1)],
                                {"x": (2, 3, 4, 5)}, {"s": np.array([0.25], "float32"),
                                                      "axes": _i64(2, 3)}),
    "nchw_slope1_mean_all": Case([_node("PRelu", ["x", "s"], "p"),
                                  _node("ReduceMean", ["p"], keepdims=0)],
                                 {"x": (2, 3, 4, 5)}, {"s": np.array([0.25], "float32")}),
    "nchw_slope1_mean_channels": Case([_node("PRelu", ["x", "s"], "p"),
                                       _node("ReduceMean", ["p", "axes"], keepdims=0)],
                                      {"x": (2, 8, 3, 16)},
                                      {"s": np.array([0.25], "float32"), "axes": _i64(1)}),
    "nchw_slope0d_mean_hw": Case([_node("PRelu", ["x", "s"], "p"),
                                  _node("ReduceMean", ["p", "axes"], keepdims=0)],
                                 {"x": (2, 3, 4, 5)}, {"s": np.array(0.25, "float32"),
                                                       "axes": _i64(2, 3)}),
    "nc_slope1_mean_last": Case([_node("PRelu", ["x", "s"], "p"),
                                 _node("ReduceMean", ["p", "axes"], keepdims=0)],
                                {"x": (4, 7)}, {"s": np.array([0.25], "float32"),
                                                "axes": _i64(-1)}),
    "slope111_mean_channels": Case([_node("PRelu", ["x", "s"], "p"),
                                    _node("ReduceMean", ["p", "axes"], keepdims=1)],
                                   {"x": (1, 6, 3, 3)},
                                   {"s": np.full((1, 1, 1), 0.25, "float32"),
                                    "axes": _i64(1)}),
    # PyTorch's conv -> nn.PReLU() -> global mean: the mean runs in NHWC, after the
    # convolution's layout.
    "conv_slope1_mean_hw": Case([_node("Conv", ["x", "w"], "c"),
                                 _node("PRelu", ["c", "s"], "p"),
                                 _node("ReduceMean", ["p", "axes"], keepdims=0)],
                                {"x": (1, 3, 6, 6)},
                                {"w": _f32((16, 3, 3, 3)), "s": np.array([0.25], "float32"),
                                 "axes": _i64(2, 3)}, round_trip=False),
}


@pytest.mark.parametrize("name", sorted(PRELU))
def test_prelu_with_one_slope_then_reduce_mean_matches_onnxruntime(name):
    _check(PRELU[name])


NORMALIZATIONS = {
    "layer_norm_last_axis_size1": Case(
        [_node("LayerNormalization", ["x", "s", "b"], axis=-1)], {"x": (4, 1)},
        {"s": _f32((1,), 5), "b": _f32((1,), 6)}, opset=17),
    "layer_norm_3d_last_axis_size1": Case(
        [_node("LayerNormalization", ["x", "s", "b"], axis=-1)], {"x": (2, 3, 1)},
        {"s": _f32((1,), 5), "b": _f32((1,), 6)}, opset=17),
    "layer_norm_trailing_axes_of_size1": Case(
        [_node("LayerNormalization", ["x", "s"], axis=1)], {"x": (3, 1, 1)},
        {"s": _f32((1, 1), 5)}, opset=17),
    "softmax_size1_axis": Case([_node("Softmax", ["x"], axis=-1)], {"x": (4, 1)}),
    "softmax_size1_middle_axis": Case([_node("Softmax", ["x"], axis=1)], {"x": (2, 1, 3)}),
    "log_softmax_size1_axis": Case([_node("LogSoftmax", ["x"], axis=-1)], {"x": (3, 1)}),
    "softmax_after_one_element_scale": Case(
        [_node("Mul", ["x", "c"], "m"), _node("Softmax", ["m"], axis=-1)], {"x": (3, 1)},
        {"c": np.array([2.0], "float32")}),
}


@pytest.mark.parametrize("name", sorted(NORMALIZATIONS))
def test_normalization_over_size1_axis_matches_onnxruntime(name):
    _check(NORMALIZATIONS[name])


# -- static shapes behind shape arithmetic ----------------------------------------------

def _const(name: str, value: np.ndarray) -> object:
    """A ``Constant`` node, as the PyTorch exporter writes its literals."""
    return helper.make_node("Constant", [], [name],
                            value=numpy_helper.from_array(value, name))


def _shape_slice(out: str, start: int, end: int) -> list:
    """``out = Shape(x)[start:end]``."""
    return [_node("Shape", ["x"], f"{out}_shape"),
            _const(f"{out}_start", _i64(start)), _const(f"{out}_end", _i64(end)),
            _const(f"{out}_axes", _i64(0)),
            _node("Slice", [f"{out}_shape", f"{out}_start", f"{out}_end", f"{out}_axes"], out)]


def _shape_item(out: str, index: int) -> list:
    """``out = [Shape(x)[index]]`` (Gather of a 0-d index, then Unsqueeze)."""
    return [_node("Shape", ["x"], f"{out}_shape"),
            _const(f"{out}_index", np.array(index, "int64")),
            _node("Gather", [f"{out}_shape", f"{out}_index"], f"{out}_item", axis=0),
            _const(f"{out}_axes", _i64(0)),
            _node("Unsqueeze", [f"{out}_item", f"{out}_axes"], out)]


def _resize(sizes_nodes: list, mode: str, opset: int, **attrs) -> Case:
    empty = np.zeros((0,), "float32")
    return Case(sizes_nodes + [_const("roi", empty), _const("scales", empty),
                               _node("Resize", ["x", "roi", "scales", "sizes"], mode=mode,
                                     **attrs)],
                {"x": (1, 3, 4, 5)}, opset=opset)


SHAPE_CHAINS = {
    # F.interpolate(x, size=(8, 10)): the batch and channels from Shape -> Slice.
    "interpolate_size": _resize(
        _shape_slice("nc", 0, 2) + [_const("hw", _i64(8, 10)),
                                    _node("Concat", ["nc", "hw"], "sizes", axis=0)],
        "linear", 13),
    # F.interpolate(x, scale_factor=2): the spatial sizes computed from the shape too.
    "interpolate_scale_factor": _resize(
        _shape_slice("nc", 0, 2) + _shape_slice("hw", 2, 4) + [
            _node("Cast", ["hw"], "hw_float", to=TensorProto.FLOAT),
            _const("factor", np.array([2.0, 2.0], "float32")),
            _node("Mul", ["hw_float", "factor"], "hw_scaled"),
            _node("Floor", ["hw_scaled"], "hw_floor"),
            _node("Cast", ["hw_floor"], "hw_int", to=TensorProto.INT64),
            _node("Concat", ["nc", "hw_int"], "sizes", axis=0)],
        "nearest", 11, coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    "interpolate_size_opset18": _resize(
        _shape_slice("nc", 0, 2) + [_const("hw", _i64(3, 7)),
                                    _node("Concat", ["nc", "hw"], "sizes", axis=0)],
        "nearest", 18),
    # PyTorch's view of a batch as rows: the batch size from Shape -> Gather.
    "view_size0_minus1": Case(
        _shape_item("batch", 0) + [_const("rest", _i64(-1)),
                                   _node("Concat", ["batch", "rest"], "shape", axis=0),
                                   _node("Reshape", ["x", "shape"])],
        {"x": (2, 3, 4, 5)}, opset=13),
    # PyTorch's flatten from axis 1: the batch size from Shape -> Slice.
    "flatten_from_axis1": Case(
        _shape_slice("batch", 0, 1) + [_const("rest", _i64(-1)),
                                       _node("Concat", ["batch", "rest"], "shape", axis=0),
                                       _node("Reshape", ["x", "shape"])],
        {"x": (2, 3, 4, 5)}, opset=13),
    # A view merging the spatial axes: their sizes gathered and multiplied.
    "view_product_of_dims": Case(
        _shape_item("b", 0) + _shape_item("c", 1) + _shape_item("h", 2)
        + _shape_item("w", 3) + [_node("Mul", ["h", "w"], "hw"),
                                 _node("Concat", ["b", "c", "hw"], "shape", axis=0),
                                 _node("Reshape", ["x", "shape"])],
        {"x": (2, 3, 4, 5)}, opset=13),
}


@pytest.mark.parametrize("name", sorted(SHAPE_CHAINS))
def test_shape_arithmetic_on_static_shapes_folds(name):
    """The exporter's shape computations fold at import when the input shapes are
    static: the graph is left with the one data operator, whose output shape is
    static, and the result is ONNX Runtime's."""
    case = SHAPE_CHAINS[name]
    mod = from_onnx(_model(case))
    text = mod["main"].script()
    assert "shape_of" not in text and "concat" not in text, text
    assert mod["main"].ret_struct_info.static_shape is not None, text
    _check(case)

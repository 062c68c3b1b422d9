"""ONNX's image operators (``irc/frontend/onnx/ops_image.py``): Resize, Upsample,
DepthToSpace, SpaceToDepth, GridSample, AffineGrid, Col2Im, RoiAlign. Node cases (a sample by
default, all of them in the slow run), import-time constants against onnx's reference,
and the errors of what irc does not take."""

import numpy as np
import pytest

import irc
from irc.core.diagnostics import IRCError

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from irc.frontend.onnx import from_onnx  # noqa: E402
from irc.testing.onnx_node_cases import cases_using, failures, run_case  # noqa: E402

OPS = {"Resize", "Upsample", "DepthToSpace", "SpaceToDepth", "GridSample", "AffineGrid",
       "Col2Im", "RoiAlign"}
# Cheap to compile under the round-trip instrument of the test suite (cubic, antialiased
# and reflected sampling take 15 to 30 s there: they are in the slow run).
SAMPLE = ["test_resize_upsample_scales_nearest", "test_resize_tf_crop_and_resize_axes_3_2",
          "test_depthtospace_crd_mode_example", "test_gridsample_nearest",
          "test_affine_grid_2d", "test_col2im_strides"]


@pytest.fixture(scope="module")
def cases():
    return cases_using(OPS)


@pytest.mark.parametrize("name", SAMPLE)
def test_a_sample_of_node_cases_passes(cases, name):
    r = run_case(cases[name])
    assert r.outcome == "pass", r.message


@pytest.mark.slow
def test_every_node_case_of_the_image_operators_passes(cases):
    assert len(cases) == 76
    assert failures(cases.values()) == []


def _model(node, inputs, inits=(), opset=19, out_shape=None):
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, out_shape)],
                              initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _run(model, *args):
    ex = irc.compile(from_onnx(model), "llvm")
    return irc.vm.VirtualMachine(ex)["main"](*[irc.tensor(a) for a in args]).numpy()


def _x(shape):
    return np.random.default_rng(0).standard_normal(shape).astype("float32")


def test_constant_scales_make_a_static_resize_of_the_resized_axes_only():
    x = _x((1, 3, 4, 5))
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], "float32"), "s")
    node = helper.make_node("Resize", ["X", "", "s"], ["Y"], mode="nearest")
    model = _model(node, [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["n", 3, 4, 5])],
                   [scales])
    text = from_onnx(model).script()
    assert "R.image.resize(X, axes=[2, 3], sizes=[8, 10]" in text and '"n", 3, 4, 5' in text
    want = x.repeat(2, axis=2).repeat(2, axis=3)  # the YOLO upsample
    np.testing.assert_array_equal(_run(model, x), want)


@pytest.mark.parametrize("attrs", [
    dict(mode="linear", coordinate_transformation_mode="align_corners"),
    dict(mode="cubic", coordinate_transformation_mode="pytorch_half_pixel", antialias=1),
    dict(mode="nearest", coordinate_transformation_mode="tf_crop_and_resize",
         nearest_mode="ceil", extrapolation_value=-1.0),
])
def test_constant_scales_sizes_and_roi_match_the_reference(attrs):
    x = _x((1, 2, 5, 6))
    inits = [numpy_helper.from_array(np.array([0.1, -0.2, 0.9, 1.1], "float32"), "roi"),
             numpy_helper.from_array(np.array([3, 8], "int64"), "sizes")]
    node = helper.make_node("Resize", ["X", "roi", "", "sizes"], ["Y"], axes=[2, 3], **attrs)
    model = _model(node, [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 2, 5, 6])],
                   inits)
    want = ReferenceEvaluator(model).run(None, {"X": x})[0]
    np.testing.assert_allclose(_run(model, x), want, rtol=1e-4, atol=1e-5)


def test_run_time_scales_without_a_declared_output_shape_are_a_clear_error():
    node = helper.make_node("Resize", ["X", "", "s"], ["Y"], mode="nearest")
    model = _model(node, [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 1, 2, 2]),
                          helper.make_tensor_value_info("s", TensorProto.FLOAT, [4])])
    with pytest.raises(IRCError, match="declares no static output shape"):
        from_onnx(model)


@pytest.mark.parametrize("vector, value, good, bad", [
    ("s", "scales", [1, 1, 2, 1.5], [1, 1, 3, 1.5]),
    ("sizes", "sizes", [1, 1, 4, 3], [1, 1, 4, 4]),
])
def test_run_time_scales_or_sizes_must_give_the_declared_shape(vector, value, good, bad):
    dtype = TensorProto.FLOAT if value == "scales" else TensorProto.INT64
    inputs = ["X", "", vector] if value == "scales" else ["X", "", "", vector]
    node = helper.make_node("Resize", inputs, ["Y"], mode="nearest")
    model = _model(node, [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 1, 2, 2]),
                          helper.make_tensor_value_info(vector, dtype, [4])],
                   out_shape=[1, 1, 4, 3])
    x = _x((1, 1, 2, 2))
    np_dtype = "float32" if value == "scales" else "int64"
    want = ReferenceEvaluator(model).run(None, {"X": x, vector: np.array(good, np_dtype)})[0]
    np.testing.assert_allclose(_run(model, x, np.array(good, np_dtype)), want)
    with pytest.raises(IRCError, match="output_shape_differs"):
        _run(model, x, np.array(bad, np_dtype))


@pytest.mark.parametrize("op, attrs, opset, match", [
    ("Resize", dict(mode="cubic"), 10, "mode 'cubic' is not supported"),
    ("Resize", dict(mode="area"), 19, "mode 'area' is not supported"),
    ("Resize", dict(coordinate_transformation_mode="half_pixel_symmetric"), 18,
     "half_pixel_symmetric"),
    ("GridSample", dict(mode="linear"), 16, "mode 'linear' is not one of bilinear"),
    ("GridSample", dict(padding_mode="wrap"), 20, "padding_mode 'wrap'"),
])
def test_unsupported_attributes_are_named(op, attrs, opset, match):
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 1, 4, 4])
    if op == "Resize":
        inits = [numpy_helper.from_array(np.array([1, 1, 2, 2], "float32"), "s")]
        node = helper.make_node(op, ["X", "s"] if opset == 10 else ["X", "", "s"], ["Y"],
                                **attrs)
        model = _model(node, [x], inits, opset=opset)
    else:
        g = helper.make_tensor_value_info("G", TensorProto.FLOAT, [1, 3, 3, 2])
        model = _model(helper.make_node(op, ["X", "G"], ["Y"], **attrs), [x, g], opset=opset)
    with pytest.raises(IRCError, match=match):
        from_onnx(model)

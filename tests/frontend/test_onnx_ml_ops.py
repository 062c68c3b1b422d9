"""The ``ai.onnx.ml`` operators irc converts (``ops_ml.py``: Binarizer,
ArrayFeatureExtractor) against ONNX Runtime (ONNX's reference evaluator where ONNX Runtime
lacks the dtype), their node-test cases, run-time index
checks, and the clean refusal of the domain's other operators."""

import numpy as np
import pytest

import irc

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from irc.frontend.onnx import from_onnx  # noqa: E402
from irc.testing.onnx_node_cases import collect_cases, run_case  # noqa: E402

ML = "ai.onnx.ml"


def _model(node, inputs, outputs):
    graph = helper.make_graph([node], "ml", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                   helper.make_opsetid(ML, 3)])


def _run_both(model, feeds, reference=False):
    """irc's result and ONNX Runtime's (ONNX's reference evaluator's with ``reference``:
    ONNX Runtime runs Binarizer on float32 only)."""
    vm = irc.vm.VirtualMachine(irc.compile(from_onnx(model), "llvm"))
    got = vm["main"](*[irc.tensor(v) for v in feeds.values()]).numpy()
    if reference:
        (want,) = ReferenceEvaluator(model).run(None, feeds)
    else:
        sess = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        (want,) = sess.run(None, feeds)
    return got, want


@pytest.mark.parametrize("name", ["test_ai_onnx_ml_binarizer",
                                  "test_ai_onnx_ml_array_feature_extractor"])
def test_node_case_passes(name):
    (case,) = [c for c in collect_cases() if c.name == name]
    result = run_case(case)
    assert result.outcome == "pass", result.message


@pytest.mark.parametrize("dtype, threshold", [
    (np.float32, 0.25), (np.float64, -1.5), (np.int64, -0.5), (np.int32, 2.5),
    (np.int64, 3.0)])
def test_binarizer_matches_onnxruntime(dtype, threshold):
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    x = np.random.default_rng(0).uniform(-4, 4, (3, 7)).round(1).astype(dtype)
    x.flat[:3] = [threshold, np.floor(threshold), np.ceil(threshold)]
    model = _model(helper.make_node("Binarizer", ["x"], ["y"], domain=ML,
                                    threshold=threshold),
                   [helper.make_tensor_value_info("x", elem, [3, 7])],
                   [helper.make_tensor_value_info("y", elem, [3, 7])])
    got, want = _run_both(model, {"x": x}, reference=dtype != np.float32)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("x_shape, idx", [
    ((5,), [4, 0, 0]), ((3, 6), [[1, 5, 2]]), ((2, 3, 4), [3, -1 + 4, 0]), ((2, 4), [2])])
def test_array_feature_extractor_matches_onnxruntime(x_shape, idx):
    x = np.arange(np.prod(x_shape), dtype=np.float32).reshape(x_shape)
    idx = np.asarray(idx, np.int64)
    model = _model(helper.make_node("ArrayFeatureExtractor", ["x", "i"], ["y"], domain=ML),
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape)),
                    helper.make_tensor_value_info("i", TensorProto.INT64, list(idx.shape))],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    got, want = _run_both(model, {"x": x, "i": idx})
    np.testing.assert_array_equal(got, want)


def test_array_feature_extractor_checks_its_indices_at_run_time():
    model = _model(helper.make_node("ArrayFeatureExtractor", ["x", "i"], ["y"], domain=ML),
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                    helper.make_tensor_value_info("i", TensorProto.INT64, [2])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    vm = irc.vm.VirtualMachine(irc.compile(from_onnx(model), "llvm"))
    with pytest.raises(irc.IRCError, match="out of range"):
        vm["main"](irc.tensor(np.ones((2, 3), np.float32)),
                   irc.tensor(np.array([0, 3], np.int64)))


def test_the_domains_models_are_refused_with_the_reason():
    node = helper.make_node("Normalizer", ["x"], ["y"], domain=ML, norm="MAX")
    model = _model(node, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    with pytest.raises(irc.UnsupportedOperatorError, match="classical machine-learning"):
        from_onnx(model)

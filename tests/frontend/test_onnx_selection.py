"""ONNX Unique and NonMaxSuppression (``irc/frontend/onnx/ops_selection.py``, the graph
operators ``R.unique`` / ``R.non_max_suppression`` and their loop kernels in
``irc.tir.topi.selection``): every node-test case passes, and edge cases match ONNX's
reference evaluator (and ONNX Runtime for NonMaxSuppression)."""

import numpy as np
import pytest

import irc
from irc.core.diagnostics import IRCError

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from irc.frontend.onnx import from_onnx  # noqa: E402
from irc.ir import BlockBuilder, Var  # noqa: E402
from irc.ir.ops import selection  # noqa: E402
from irc.ir.struct_info import TensorStructInfo  # noqa: E402
from irc.testing.onnx_node_cases import cases_using, failures  # noqa: E402

RNG = np.random.default_rng(7)


def _output_types(node, inputs):
    """The element types of the node's outputs (ONNX Runtime wants them declared)."""
    if node.op_type == "Unique":
        first = helper.np_dtype_to_tensor_dtype(next(iter(inputs.values())).dtype)
        return [first] + [TensorProto.INT64] * 3
    return [TensorProto.INT64]


def _model(node, inputs, n_outputs, opset=21):
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, t, None)
         for n, t in zip(node.output[:n_outputs], _output_types(node, inputs))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _irc(model, inputs):
    vm = irc.vm.VirtualMachine(irc.compile(from_onnx(model), "llvm"))
    out = vm["main"](*[irc.tensor(a) for a in inputs.values()])
    return [o.numpy() for o in out] if isinstance(out, (list, tuple)) else [out.numpy()]


def _onnxruntime(model, inputs):
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)


def _check(node, inputs, n_outputs=None, with_onnxruntime=False):
    """irc's outputs, checked against ONNX's reference evaluator (or ONNX Runtime)."""
    n_outputs = n_outputs or len(node.output)
    model = _model(node, inputs, n_outputs)
    want = (_onnxruntime if with_onnxruntime else
            lambda m, i: ReferenceEvaluator(m).run(None, i))(model, inputs)
    got = _irc(model, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g, w)
        np.testing.assert_array_equal(g, w)
    return got


@pytest.mark.parametrize("op", ["Unique", "NonMaxSuppression"])
def test_every_node_case_passes(op):
    cases = list(cases_using({op}).values())
    assert cases
    assert failures(cases) == []


# -- Unique -------------------------------------------------------------------------------


def _unique(x, with_onnxruntime=False, **attrs):
    node = helper.make_node("Unique", ["x"], ["y", "indices", "inverse", "counts"], **attrs)
    return _check(node, {"x": x}, with_onnxruntime=with_onnxruntime)


@pytest.mark.parametrize("sorted_", [0, 1])
def test_unique_without_axis_flattens(sorted_):
    # ONNX's reference takes unsorted values of a flattened input along axis 0 of the
    # input itself; ONNX Runtime follows the specification.
    x = RNG.integers(-3, 4, (4, 5)).astype("int64")
    y, first, inverse, counts = _unique(x, with_onnxruntime=True, sorted=sorted_)
    np.testing.assert_array_equal(y[inverse], x.reshape(-1))
    assert counts.sum() == x.size
    if not sorted_:  # in order of first occurrence
        assert (np.diff(first) > 0).all()


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("sorted_", [0, 1])
def test_unique_slices_along_an_axis(axis, sorted_):
    x = RNG.integers(0, 2, (5, 4, 3)).astype("float32")
    x = np.concatenate([x, x[:2]], axis=0)  # repeated slices along axis 0 as well
    # ONNX's reference takes unsorted slices along axis 0 whatever the axis.
    _unique(x, with_onnxruntime=not sorted_, axis=axis, sorted=sorted_)


def test_unique_of_one_element_and_of_all_equal_elements():
    _unique(np.array([5.0], "float32"))
    _unique(np.full((3, 2), 7, "int32"), axis=0)


def test_unique_of_an_empty_input():
    y, first, inverse, counts = _unique(np.zeros((0,), "float32"))
    assert y.shape == first.shape == inverse.shape == counts.shape == (0,)


def test_unique_counts_nan_as_one_value_sorted_last():
    x = np.array([2.0, np.nan, 1.0, np.nan, 2.0], "float32")
    y, first, inverse, counts = _irc(_model(helper.make_node(
        "Unique", ["x"], ["y", "i", "v", "c"]), {"x": x}, 4), {"x": x})
    np.testing.assert_array_equal(y, [1.0, 2.0, np.nan])
    np.testing.assert_array_equal(first, [2, 0, 1])
    np.testing.assert_array_equal(inverse, [1, 2, 0, 2, 1])
    np.testing.assert_array_equal(counts, [1, 2, 2])


def test_unique_with_only_the_values_output():
    x = RNG.integers(0, 5, 30).astype("int64")
    got = _irc(_model(helper.make_node("Unique", ["x"], ["y"], sorted=1), {"x": x}, 1),
               {"x": x})
    np.testing.assert_array_equal(got[0], np.unique(x))


# -- NonMaxSuppression -------------------------------------------------------------------


def _boxes(batch, n, center=False):
    lo = RNG.uniform(0, 10, (batch, n, 2)).astype("float32")
    size = RNG.uniform(0.5, 4, (batch, n, 2)).astype("float32")
    if center:
        return np.concatenate([lo, size], axis=2)
    flip = RNG.random((batch, n, 1)) < 0.3  # some boxes give their corners swapped
    a, b = lo, lo + size
    return np.where(flip, np.concatenate([b, a], 2), np.concatenate([a, b], 2)) \
        .astype("float32")


def _nms(boxes, scores, limit, iou=None, threshold=None, ort=True, **attrs):
    inputs = {"boxes": boxes, "scores": scores}
    names = ["boxes", "scores"]
    for name, v, dtype in (("limit", limit, "int64"), ("iou", iou, "float32"),
                           ("threshold", threshold, "float32")):
        if v is not None:
            inputs[name] = np.array([v], dtype)
            names.append(name)
        elif name != "threshold":
            names.append("")
    while names and names[-1] == "":
        names.pop()
    node = helper.make_node("NonMaxSuppression", names, ["selected"], **attrs)
    (got,) = _check(node, inputs)
    if ort:
        np.testing.assert_array_equal(got, _onnxruntime(_model(node, inputs, 1), inputs)[0])
    return got


@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("threshold", [None, 0.4])
def test_nms_matches_the_reference_and_onnxruntime(center, threshold):
    boxes = _boxes(2, 40, center=bool(center))
    scores = RNG.random((2, 3, 40)).astype("float32")
    scores[0, 0, 5] = scores[0, 0, 6]  # a tie: the lower box index first
    got = _nms(boxes, scores, 7, 0.3, threshold, center_point_box=center)
    assert got.shape[1] == 3 and 0 < got.shape[0] <= 2 * 3 * 7


def test_nms_with_a_limit_of_zero_or_no_limit_selects_nothing():
    boxes, scores = _boxes(1, 6), RNG.random((1, 2, 6)).astype("float32")
    assert _nms(boxes, scores, 0, 0.5).shape == (0, 3)
    node = helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["selected"])
    inputs = {"boxes": boxes, "scores": scores}
    model = _model(node, inputs, 1)
    (got,) = _irc(model, inputs)
    assert got.shape == (0, 3) and got.dtype == "int64"
    np.testing.assert_array_equal(got, _onnxruntime(model, inputs)[0])


def test_nms_of_zero_boxes_selects_nothing():
    got = _nms(np.zeros((1, 0, 4), "float32"), np.zeros((1, 2, 0), "float32"), 3, 0.5,
               ort=False)
    assert got.shape == (0, 3)


def test_nms_score_threshold_above_every_score_selects_nothing():
    boxes, scores = _boxes(1, 8), RNG.random((1, 1, 8)).astype("float32")
    assert _nms(boxes, scores, 8, 0.5, 1.5).shape == (0, 3)


def test_nms_identical_boxes_keep_the_best_one_per_class():
    boxes = np.tile(np.array([[[0, 0, 1, 1]]], "float32"), (1, 5, 1))
    scores = np.array([[[0.1, 0.9, 0.3, 0.9, 0.2], [0.5, 0.1, 0.1, 0.1, 0.6]]], "float32")
    got = _nms(boxes, scores, 5, 0.5)
    np.testing.assert_array_equal(got, [[0, 0, 1], [0, 1, 4]])


def test_nms_iou_threshold_outside_0_1_fails_the_call():
    boxes, scores = _boxes(1, 4), RNG.random((1, 1, 4)).astype("float32")
    node = helper.make_node("NonMaxSuppression", ["b", "s", "m", "i"], ["y"])
    inputs = {"b": boxes, "s": scores, "m": np.array([2], "int64"),
              "i": np.array([1.5], "float32")}
    with pytest.raises(IRCError, match="iou_threshold must be in"):
        _irc(_model(node, inputs, 1), inputs)


def test_nms_of_integer_boxes_is_an_import_error():
    node = helper.make_node("NonMaxSuppression", ["b", "s"], ["y"])
    inputs = {"b": np.zeros((1, 2, 4), "int32"), "s": np.zeros((1, 1, 2), "float32")}
    with pytest.raises(IRCError, match="boxes must be a float tensor"):
        from_onnx(_model(node, inputs, 1))


# -- GPU builds ----------------------------------------------------------------------------


def _graph(build, *sinfos):
    bb = BlockBuilder()
    params = [Var(name_hint=f"x{i}", struct_info=s) for i, s in enumerate(sinfos)]
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(build(*params))
        bb.emit_func_output(out)
    return bb.get()


def test_the_selection_kernels_build_for_cuda_as_one_thread_launches():
    t = TensorStructInfo
    unique = _graph(lambda x: selection.unique(x, sorted=False), t(shape=(6, 2), dtype="int32"))
    nms = _graph(lambda b, s, m, i, th: selection.non_max_suppression(b, s, m, i, th),
                 t(shape=(2, 5, 4), dtype="float32"), t(shape=(2, 3, 5), dtype="float32"),
                 t(shape=(), dtype="int64"), t(shape=(), dtype="float32"),
                 t(shape=(), dtype="float32"))
    for mod in (unique, nms):
        ex = irc.compile(mod, target="cuda")
        assert "kernels" in repr(ex)


def test_unique_of_a_matrix_as_a_graph_operator():
    x = np.array([[1, 2], [0, 5], [1, 2], [0, 5], [3, 3]], "int32")
    mod = _graph(lambda v: selection.unique(v, sorted=True), TensorStructInfo(
        shape=x.shape, dtype="int32"))
    first, inverse, counts, count = irc.vm.VirtualMachine(irc.compile(mod, "llvm"))["main"](
        irc.tensor(x))
    k = int(count.numpy()[0])
    assert k == 3
    np.testing.assert_array_equal(first.numpy()[:k], [1, 0, 4])
    np.testing.assert_array_equal(counts.numpy()[:k], [2, 2, 1])
    np.testing.assert_array_equal(inverse.numpy(), [1, 0, 1, 0, 2])


def test_unique_and_nms_of_inputs_with_a_symbolic_length():
    x = np.array([[1, 2, 3], [3, 2, 1], [1, 2, 3], [0, 0, 0]], "float32")
    node = helper.make_node("Unique", ["x"], ["y", "i", "v", "c"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, ["n", 3])], [helper.make_tensor_value_info(
            o, TensorProto.UNDEFINED, None) for o in node.output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    want = ReferenceEvaluator(model).run(None, {"x": x})
    for g, w in zip(_irc(model, {"x": x}), want):
        np.testing.assert_array_equal(g, w)

    node = helper.make_node("NonMaxSuppression", ["b", "s", "m"], ["y"])
    graph = helper.make_graph([node], "g", [
        helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, "n", 4]),
        helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 1, "n"]),
        helper.make_tensor_value_info("m", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    inputs = {"b": np.array([[[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3]]], "float32"),
              "s": np.array([[[0.5, 0.9, 0.1]]], "float32"), "m": np.array(5, "int64")}
    np.testing.assert_array_equal(_irc(model, inputs)[0], [[0, 0, 1], [0, 0, 2]])

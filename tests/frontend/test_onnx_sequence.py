"""ONNX sequences and optionals (``ops_sequence.py``, ``ops_optional.py``): a sequence is a
tuple of import-time length. ONNX's node-test cases of them pass (run here, since a
sequence output or input is a tuple of tensors: sequence inputs get their lengths from
``shape_dict``), exporter-like models match onnxruntime, and what would make a length or
an optional's presence depend on run-time data is refused cleanly."""

import numpy as np
import pytest

import irc
from irc.core.diagnostics import IRCError

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from irc.frontend.onnx import from_onnx  # noqa: E402
from irc.testing.onnx_node_cases import _arrays, collect_cases, run_case  # noqa: E402

RNG = np.random.default_rng(5)

PASSING = [
    "test_split_to_sequence_2", "test_split_to_sequence_nokeepdims", "test_if_seq",
    "test_identity_sequence", "test_identity_opt", "test_optional_get_element_optional_tensor",
    "test_optional_get_element_optional_sequence", "test_optional_get_element_sequence",
    "test_optional_has_element_tensor_input", "test_optional_has_element_optional_input",
    "test_sequence_insert_at_back", "test_sequence_map_identity_1_sequence",
    "test_sequence_map_identity_2_sequences", "test_sequence_map_identity_1_sequence_1_tensor",
    "test_sequence_map_add_2_sequences", "test_sequence_map_add_1_sequence_1_tensor",
    "test_sequence_map_extract_shapes",
    # SequenceMap's function body: a Loop carrying a sequence, unrolled at import
    *(f"test_sequence_map_{m}_expanded" for m in (
        "identity_1_sequence", "identity_2_sequences", "identity_1_sequence_1_tensor",
        "add_2_sequences", "add_1_sequence_1_tensor", "extract_shapes")),
]
# Cases whose sequence length, position or optional presence is run-time data.
REFUSED = {
    "test_split_to_sequence_1": "number of pieces",
    "test_sequence_insert_at_front": "position",
    "test_if_opt": "empty optional",
    "test_loop13_seq": "trip count must be a constant",
}


@pytest.fixture(scope="module")
def cases():
    return {c.name: c for c in collect_cases()}


def _vm(mod):
    return irc.vm.VirtualMachine(irc.compile(mod, "llvm"))


def _arg(value):
    if isinstance(value, list):
        return [irc.tensor(np.asarray(v)) for v in value]
    return irc.tensor(np.asarray(value))


def _sequence_shapes(case):
    """shape_dict giving each sequence input the shapes of its first data set's elements."""
    first = _arrays(case.data_sets[0][0])
    return {vi.name: [list(np.shape(a)) for a in value]
            for vi, value in zip(case.model.graph.input, first) if isinstance(value, list)}


@pytest.mark.parametrize("name", PASSING)
def test_node_case_passes(cases, name):
    result = run_case(cases[name])
    assert result.outcome == "pass", result.message


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_node_case_with_a_run_time_length_is_refused(cases, name):
    with pytest.raises(irc.UnsupportedOperatorError, match=REFUSED[name]):
        from_onnx(cases[name].model, shape_dict=_sequence_shapes(cases[name]))


# -- exporter-like models against onnxruntime ---------------------------------------------


def _model(nodes, inputs, outputs, opset=18):
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in inputs.items()],
        [helper.make_empty_tensor_value_info(n) for n in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _const(name, value):
    return helper.make_node("Constant", [], [name],
                            value=onnx.numpy_helper.from_array(np.asarray(value), name))


def _check(model, inputs):
    ort = pytest.importorskip("onnxruntime")
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, inputs)
    res = _vm(from_onnx(model))["main"](*[irc.tensor(a) for a in inputs.values()])
    got = list(res) if len(want) > 1 else [res]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-6)


def test_split_then_concat_of_the_list_matches_onnxruntime():
    """What torch.cat of torch.split's pieces, reversed, exports to."""
    x = RNG.normal(size=(2, 6, 3)).astype("float32")
    nodes = [_const("sizes", np.array([1, 3, 2], "int64")),
             helper.make_node("Split", ["x", "sizes"], ["a", "b", "c"], axis=1),
             helper.make_node("SequenceConstruct", ["c", "b", "a"], ["s"]),
             helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=1)]
    _check(_model(nodes, {"x": x}, ["y"]), {"x": x})


@pytest.mark.parametrize("position", [0, 2, -1, -3])
def test_unbind_then_sequence_at_matches_onnxruntime(position):
    """What indexing the list tensor.unbind(1) gives exports to."""
    x = RNG.normal(size=(2, 3, 4)).astype("float32")
    nodes = [helper.make_node("SplitToSequence", ["x"], ["s"], axis=1, keepdims=0),
             _const("p", np.array(position, "int64")),
             helper.make_node("SequenceAt", ["s", "p"], ["y"]),
             helper.make_node("SequenceLength", ["s"], ["n"])]
    _check(_model(nodes, {"x": x}, ["y", "n"]), {"x": x})


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_stack_with_new_axis_matches_onnxruntime(axis):
    """What torch.stack of torch.chunk's pieces exports to."""
    x = RNG.normal(size=(2, 9)).astype("float32")
    nodes = [_const("chunk", np.array(3, "int64")),
             helper.make_node("SplitToSequence", ["x", "chunk"], ["s"], axis=-1),
             helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=axis, new_axis=1)]
    _check(_model(nodes, {"x": x}, ["y"]), {"x": x})


def test_uneven_chunks_insert_erase_match_onnxruntime():
    x = RNG.normal(size=(7, 2)).astype("float32")
    z = RNG.normal(size=(2, 2)).astype("float32")
    nodes = [_const("chunk", np.array(3, "int64")),  # pieces of 3, 3 and 1 rows
             helper.make_node("SplitToSequence", ["x", "chunk"], ["s"]),
             _const("front", np.array(-3, "int64")),
             helper.make_node("SequenceInsert", ["s", "z", "front"], ["s1"]),
             helper.make_node("SequenceErase", ["s1"], ["s2"]),  # the last piece
             _const("second", np.array(1, "int32")),
             helper.make_node("SequenceErase", ["s2", "second"], ["s3"]),
             helper.make_node("SequenceEmpty", [], ["e"], dtype=TensorProto.FLOAT),
             helper.make_node("SequenceInsert", ["e", "z"], ["e1"]),
             helper.make_node("ConcatFromSequence", ["s3"], ["y"], axis=0),
             helper.make_node("ConcatFromSequence", ["e1"], ["w"], axis=0),
             helper.make_node("SequenceLength", ["s3"], ["n"])]
    _check(_model(nodes, {"x": x, "z": z}, ["y", "w", "n"]), {"x": x, "z": z})


def test_sequence_input_with_only_its_length_given():
    seq = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, ["N", 2])
    nodes = [helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)]
    graph = helper.make_graph(nodes, "g", [seq], [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    parts = [RNG.normal(size=(n, 2)).astype("float32") for n in (3, 1)]
    y = _vm(from_onnx(model, shape_dict={"s": 2}))["main"](parts)
    np.testing.assert_array_equal(y.numpy(), np.concatenate(parts))


# -- clean refusals -----------------------------------------------------------------------


def test_a_sequence_input_without_a_length_says_what_to_give(cases):
    with pytest.raises(IRCError, match="needs its length") as err:
        from_onnx(cases["test_identity_sequence"].model)
    assert "shape_dict" in err.value.hint


def test_a_malformed_sequence_length_is_refused(cases):
    with pytest.raises(IRCError, match="its length"):
        from_onnx(cases["test_identity_sequence"].model, shape_dict={"x": "three"})


def test_a_run_time_position_is_refused():
    x = RNG.normal(size=(4, 2)).astype("float32")
    p = np.array(1, "int64")
    nodes = [helper.make_node("SplitToSequence", ["x"], ["s"]),
             helper.make_node("SequenceAt", ["s", "p"], ["y"])]
    with pytest.raises(irc.UnsupportedOperatorError, match="known at import time"):
        from_onnx(_model(nodes, {"x": x, "p": p}, ["y"]))


def test_splitting_a_run_time_axis_into_pieces_is_refused():
    graph = helper.make_graph(
        [helper.make_node("SplitToSequence", ["x"], ["s"]),
         helper.make_node("SequenceLength", ["s"], ["n"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 2])],
        [helper.make_tensor_value_info("n", TensorProto.INT64, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    with pytest.raises(irc.UnsupportedOperatorError, match="split axis 0"):
        from_onnx(model)


def test_an_out_of_range_position_is_an_error():
    x = RNG.normal(size=(3, 2)).astype("float32")
    nodes = [helper.make_node("SplitToSequence", ["x"], ["s"]),
             _const("p", np.array(3, "int64")),
             helper.make_node("SequenceAt", ["s", "p"], ["y"])]
    with pytest.raises(IRCError, match="position 3 is out of range"):
        from_onnx(_model(nodes, {"x": x}, ["y"]))

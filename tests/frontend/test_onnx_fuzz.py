"""Fuzzing the ONNX importer with mutated models: whatever is wrong with a model (nodes
dropped or duplicated, shapes and attributes corrupted, bytes truncated), importing and
compiling it either works or raises an irc error; never another exception."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import irc  # noqa: E402
from irc.frontend.onnx import from_onnx  # noqa: E402

# The default suite's examples compile a model each: shrinking a failure would rerun them
# for minutes, so they report it as generated (with the blob that replays it), as
# tests/fuzz/fuzz_settings.py's QUICK does; the slow campaign shrinks.
QUICK = settings(deadline=None, suppress_health_check=list(HealthCheck), print_blob=True,
                 phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target])


def _model() -> "onnx.ModelProto":
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype("float32"), "w")
    b = numpy_helper.from_array(rng.standard_normal(4).astype("float32"), "b")
    shape = numpy_helper.from_array(np.array([1, -1], "int64"), "shape")
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2],
                         name="pool"),
        helper.make_node("Reshape", ["p", "shape"], ["f"], name="flatten"),
        helper.make_node("Softmax", ["f"], ["y"], axis=1, name="softmax"),
    ]
    graph = helper.make_graph(
        nodes, "fuzz", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])], [w, b, shape])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _import_and_compile(model) -> None:
    try:
        mod = from_onnx(model)
        irc.compile(mod, "llvm")
    except irc.IRCError:
        pass


MUTATIONS = ["drop", "duplicate", "swap", "dim", "attr", "input", "dtype"]


def _mutate(m, kind: str, i: int, value: int) -> None:
    """One mutation of model ``m`` in place."""
    g = m.graph
    if not g.node:
        return
    i = i % len(g.node)
    node = g.node[i]
    if kind == "drop":
        del g.node[i]
    elif kind == "duplicate":
        g.node.insert(i, node)
    elif kind == "swap":
        j = (i + 1) % len(g.node)
        a, b = onnx.NodeProto(), onnx.NodeProto()
        a.CopyFrom(g.node[i])
        b.CopyFrom(g.node[j])
        g.node[i].CopyFrom(b)
        g.node[j].CopyFrom(a)
    elif kind == "dim":
        g.input[0].type.tensor_type.shape.dim[value % 4].dim_value = max(value, 0)
    elif kind == "attr":
        for a in node.attribute:
            if a.type == onnx.AttributeProto.INTS:
                a.ints[:] = [value] * max(len(a.ints) + value % 2, 0)
            elif a.type == onnx.AttributeProto.INT:
                a.i = value
    elif kind == "input":
        if node.input:
            node.input[value % len(node.input)] = ["", "nothing", "y", "x"][value % 4]
    elif kind == "dtype":
        g.input[0].type.tensor_type.elem_type = value % 17


@settings(QUICK, max_examples=10)
@given(kind=st.sampled_from(MUTATIONS), i=st.integers(0, 4), value=st.integers(-3, 9))
def test_a_mutated_model_gives_an_irc_error_or_works(kind, i, value):
    m = _model()
    _mutate(m, kind, i, value)
    _import_and_compile(m)


@pytest.mark.slow
@settings(max_examples=800, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.sampled_from(MUTATIONS), st.integers(0, 4),
                          st.integers(-3, 9)), min_size=1, max_size=4))
def test_mutated_models_long(steps):
    m = _model()
    for kind, i, value in steps:
        _mutate(m, kind, i, value)
    _import_and_compile(m)


@settings(QUICK, max_examples=25)
@given(cut=st.floats(0.0, 1.0), flip=st.integers(0, 10_000))
def test_truncated_or_corrupted_bytes_give_an_irc_error(cut, flip):
    data = bytearray(_model().SerializeToString())
    data = data[: int(len(data) * cut)]
    if data:
        data[flip % len(data)] ^= 0x5A
    _import_and_compile(bytes(data))


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(cut=st.floats(0.0, 1.0), flips=st.lists(st.integers(0, 10_000), max_size=4))
def test_truncated_or_corrupted_bytes_long(cut, flips):
    data = bytearray(_model().SerializeToString())
    data = data[: int(len(data) * cut)]
    for flip in flips:
        if data:
            data[flip % len(data)] ^= 0x5A
    _import_and_compile(bytes(data))

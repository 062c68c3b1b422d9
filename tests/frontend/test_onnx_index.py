"""ONNX operators that index at run time, and scans (``irc/frontend/onnx/ops_index.py``):
every node-test case of each passes, larger inputs match numpy (ties, duplicates,
negative indices, run-time k / depth / axis), and what irc does not take is a clear
error."""

import numpy as np
import pytest

import irc
from irc.core.diagnostics import IRCError

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from irc.frontend.onnx import from_onnx  # noqa: E402
from irc.testing.onnx_node_cases import case_ops, cases_using, failures  # noqa: E402

OPS = ["GatherElements", "GatherND", "ScatterElements", "ScatterND", "Scatter", "OneHot",
       "Trilu", "TopK", "CumSum", "CumProd", "EyeLike", "ReverseSequence", "Hardmax"]


@pytest.fixture(scope="module")
def cases():
    return list(cases_using(set(OPS)).values())


@pytest.mark.parametrize("op", OPS)
def test_every_case_of_the_operator_alone_passes(cases, op):
    mine = [c for c in cases if case_ops(c) == (op,)]
    assert mine
    assert failures(mine) == []


@pytest.mark.slow
def test_every_case_using_the_operators_passes(cases):
    """The expanded NLL-loss graphs (GatherElements with other operators) too."""
    assert failures(cases) == []


# -- larger inputs against numpy -------------------------------------------------------------


def _run(node, inputs, outputs, opset=18, consts=()):
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in outputs],
        initializer=[numpy_helper.from_array(a, n) for n, a in consts])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    ex = irc.compile(from_onnx(model), "llvm")
    out = irc.vm.VirtualMachine(ex)["main"](*[irc.tensor(a) for a in inputs.values()])
    return [o.numpy() for o in out] if isinstance(out, (list, tuple)) else [out.numpy()]


def _topk_reference(x, k, axis, largest):
    # Stable: equal values keep index order.
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis=axis), idx


@pytest.mark.parametrize("largest", [1, 0])
def test_topk_with_ties_and_a_run_time_k_matches_a_stable_sort(largest):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 5, (3, 40, 2)).astype("float32")  # many ties
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=largest)
    for k in (1, 7, 40):
        v, i = _run(node, {"x": x, "k": np.array([k], "int64")}, ["v", "i"])
        rv, ri = _topk_reference(x, k, 1, largest)
        np.testing.assert_array_equal(v, rv)
        np.testing.assert_array_equal(i, ri)


def test_cumsum_reads_its_axis_at_run_time():
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype("float32")
    node = helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=1, reverse=1)
    for axis in (0, 1, -1):
        (y,) = _run(node, {"x": x, "axis": np.array(axis, "int64")}, ["y"])
        rev = np.flip(x, axis)
        want = np.flip(np.cumsum(rev, axis) - rev, axis)
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


def test_scatter_nd_adds_duplicate_indices_in_order():
    data = np.zeros((4, 3), "float32")
    idx = np.array([[1], [-1], [1], [0]], "int64")  # -1 is row 3
    upd = np.arange(12, dtype="float32").reshape(4, 3)
    node = helper.make_node("ScatterND", ["d", "i", "u"], ["y"], reduction="add")
    (y,) = _run(node, {"d": data, "i": idx, "u": upd}, ["y"])
    want = data.copy()
    np.add.at(want, np.where(idx[:, 0] < 0, idx[:, 0] + 4, idx[:, 0]), upd)
    np.testing.assert_array_equal(y, want)


def test_scatter_elements_index_out_of_range_fails_the_call():
    node = helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=1)
    with pytest.raises(IRCError, match="out of range"):
        _run(node, {"d": np.zeros((2, 3), "float32"), "i": np.array([[0], [3]], "int64"),
                    "u": np.ones((2, 1), "float32")}, ["y"])


def test_gather_elements_and_one_hot_take_negative_indices():
    x = np.arange(12, dtype="float32").reshape(3, 4)
    idx = np.array([[-1, 0], [2, -4], [1, 1]], "int64")
    node = helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)
    (y,) = _run(node, {"x": x, "i": idx}, ["y"])
    np.testing.assert_array_equal(y, np.take_along_axis(x, idx % 4, axis=1))
    node = helper.make_node("OneHot", ["i", "depth", "values"], ["y"], axis=0)
    (y,) = _run(node, {"i": idx}, ["y"], consts=[("depth", np.array(4, "int64")),
                                                 ("values", np.array([2, 5], "float32"))])
    want = np.where(np.arange(4)[:, None, None] == idx % 4, 5, 2).astype("float32")
    np.testing.assert_array_equal(y, want)


# -- errors ---------------------------------------------------------------------------------


def _import(node, inputs, opset):
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in node.output])
    return from_onnx(helper.make_model(graph,
                                       opset_imports=[helper.make_opsetid("", opset)]))


def test_a_reduction_newer_than_the_model_is_an_error():
    node = helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], reduction="max")
    inputs = [("d", TensorProto.FLOAT, [2, 2]), ("i", TensorProto.INT64, [2, 2]),
              ("u", TensorProto.FLOAT, [2, 2])]
    with pytest.raises(IRCError, match="reduction 'max' is not one of none, add, mul"):
        _import(node, inputs, 16)


def test_float_indices_and_a_symbolic_hardmax_axis_are_errors():
    node = helper.make_node("GatherElements", ["x", "i"], ["y"])
    with pytest.raises(IRCError, match="must be an integer tensor"):
        _import(node, [("x", TensorProto.FLOAT, [2]), ("i", TensorProto.FLOAT, [2])], 13)
    node = helper.make_node("Hardmax", ["x"], ["y"])
    with pytest.raises(IRCError, match="must be static"):
        _import(node, [("x", TensorProto.FLOAT, [2, "n"])], 13)


def test_tensor_to_shape_reads_sizes_and_rejects_negative_ones():
    from irc.vm.builtins import tensor_to_shape

    assert tensor_to_shape(np.array([3, 0], "int64")) == (3, 0)
    with pytest.raises(IRCError, match="negative"):
        tensor_to_shape(np.array([-1], "int64"))

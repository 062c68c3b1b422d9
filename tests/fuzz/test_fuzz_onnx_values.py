"""Fuzzing compiled ONNX graphs with random values where they matter: indices anywhere in
and around their valid range (negative, at the edges, far out) into every indexing
operator, and data full of NaN and infinities through operators with max/min semantics.
Each graph is compiled once and run on many inputs; every run must either match ONNX
Runtime (NaN where it has NaN) or, where ONNX Runtime refuses an index, fail with an irc
error that names the operator and the index. The ``slow`` versions are the long runs of
the fuzz campaign (``python -m pytest -m slow tests/fuzz``)."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from fuzz_settings import LONG, QUICK
from hypothesis import given, settings
from hypothesis import strategies as st

import irc

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

from irc.frontend.onnx import from_onnx  # noqa: E402

DATA_SHAPE = (4, 3)

# name -> (nodes, index input shape); "x" is DATA_SHAPE float32, "i" int64 indices, the
# activation after the indexing operator reads "g" and writes "y".
INDEXING = {
    "Gather0": ([helper.make_node("Gather", ["x", "i"], ["g"], axis=0)], (5,)),
    "Gather1": ([helper.make_node("Gather", ["x", "i"], ["g"], axis=1)], (2, 2)),
    "GatherElements": ([helper.make_node("GatherElements", ["x", "i"], ["g"], axis=0)],
                       DATA_SHAPE),
    "GatherND": ([helper.make_node("GatherND", ["x", "i"], ["g"])], (3, 2)),
    "ScatterElements": ([helper.make_node("ScatterElements", ["x", "i", "x"], ["g"],
                                          axis=1)], DATA_SHAPE),
    "ScatterND": ([helper.make_node("ScatterND", ["x", "i", "u"], ["g"])], (2, 1)),
}
ACTIVATIONS = {
    "Relu": [helper.make_node("Relu", ["g"], ["y"])],
    "Clip": [helper.make_node("Clip", ["g", "lo", "hi"], ["y"])],
    "Max": [helper.make_node("Neg", ["g"], ["g2"]),
            helper.make_node("Max", ["g", "g2"], ["y"])],
    "Min": [helper.make_node("Neg", ["g"], ["g2"]),
            helper.make_node("Min", ["g2", "g"], ["y"])],
    "HardSigmoid": [helper.make_node("HardSigmoid", ["g"], ["y"])],
    "Softmax": [helper.make_node("Softmax", ["g"], ["y"])],
}
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.5, 1e30], "float32")


def _inputs(name):
    nodes, idx_shape = INDEXING[name]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, DATA_SHAPE),
           helper.make_tensor_value_info("i", TensorProto.INT64, idx_shape)]
    if name == "ScatterND":
        ins.append(helper.make_tensor_value_info("u", TensorProto.FLOAT, (2, 3)))
    return nodes, ins


@functools.lru_cache(maxsize=None)
def _compiled(index_op: str, act: str):
    nodes, ins = _inputs(index_op)
    consts = [helper.make_tensor("lo", TensorProto.FLOAT, [], [0.0]),
              helper.make_tensor("hi", TensorProto.FLOAT, [], [6.0])]
    graph = helper.make_graph(nodes + ACTIVATIONS[act], "g", ins,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=consts if act == "Clip" else [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sess = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
    vm = irc.vm.VirtualMachine(irc.compile(from_onnx(model), "llvm"))
    return sess, vm, [i.name for i in ins]


def _check(index_op, act, index_values, data_values):
    sess, vm, names = _compiled(index_op, act)
    idx_shape = INDEXING[index_op][1]
    feeds = {"x": np.resize(np.array(data_values, "float32"), DATA_SHAPE),
             "i": np.resize(np.array(index_values, "int64"), idx_shape),
             "u": np.resize(np.array(data_values[::-1], "float32"), (2, 3))}
    feeds = {n: feeds[n] for n in names}
    try:
        want = sess.run(None, feeds)[0]
    except Exception:  # noqa: BLE001 - ONNX Runtime refuses out-of-range indices
        want = None
    try:
        got = vm["main"](*[irc.tensor(feeds[n]) for n in names]).numpy()
    except irc.IRCError as err:
        text = str(err)
        assert want is None, f"irc refused what ONNX Runtime computes: {text}"
        assert "out of range" in text and "index" in text, text
        return
    if want is None:
        # ONNX Runtime accepts a ScatterND whose duplicate indices it writes in an
        # unspecified order; any other refusal irc must share.
        raise AssertionError(f"irc computed {got} where ONNX Runtime refused {feeds}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        same = np.allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
    assert same, f"{index_op} + {act} on {feeds}:\nirc {got}\nort {want}"


def _is_duplicate_scatter(index_op, index_values) -> bool:
    # Scatters with repeated indices write in an order ONNX leaves unspecified.
    if not index_op.startswith("Scatter"):
        return False
    idx = np.resize(np.array(index_values, "int64"), INDEXING[index_op][1])
    if index_op == "ScatterND":
        rows = (idx % DATA_SHAPE[0]).ravel()
        return len(set(rows.tolist())) < rows.size
    wrapped = idx % DATA_SHAPE[1]
    return any(len(set(r.tolist())) < r.size for r in wrapped)


INDEX = st.one_of(st.integers(-6, 6), st.sampled_from([-2 ** 62, 2 ** 40, 1000000, -1000]))
VALUE = st.one_of(st.sampled_from(SPECIAL.tolist()),
                  st.floats(-10, 10, allow_nan=False, width=32))


def _run(index_op, act, index_values, data_values):
    if _is_duplicate_scatter(index_op, index_values):
        return
    _check(index_op, act, index_values, data_values)


@settings(QUICK, max_examples=60)
@given(index_op=st.sampled_from(sorted(INDEXING)), act=st.sampled_from(["Relu", "Max"]),
       index_values=st.lists(INDEX, min_size=1, max_size=12),
       data_values=st.lists(VALUE, min_size=1, max_size=12))
def test_random_indices_and_nans_match_onnx_runtime_or_fail_clearly(index_op, act,
                                                                    index_values,
                                                                    data_values):
    _run(index_op, act, index_values, data_values)


@pytest.mark.slow
@settings(LONG, max_examples=3000)
@given(index_op=st.sampled_from(sorted(INDEXING)), act=st.sampled_from(sorted(ACTIVATIONS)),
       index_values=st.lists(INDEX, min_size=1, max_size=12),
       data_values=st.lists(VALUE, min_size=1, max_size=12))
def test_random_indices_and_nans_long(index_op, act, index_values, data_values):
    _run(index_op, act, index_values, data_values)

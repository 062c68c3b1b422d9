"""The failures the differential fuzzer (``irc fuzz``) found, each as the minimised model
it reduced to, written with ``onnx.helper``, and checked against ONNX Runtime (or ONNX's
reference evaluator where ONNX Runtime does not run the model).

A failure still open is marked ``xfail(strict=True)`` with the seed that found it: once
irc is fixed the test passes, strictness turns that into a failure, and the mark comes
off so that the test guards the fix; a fixed one names its seed in a comment. Several
concern nodes whose inputs are all constants: the ONNX importer evaluates only shape
arithmetic, data movement and elementwise arithmetic at import time with ONNX's reference
evaluator (``importer._FOLDED``), whose results for windows, normalizations, control flow
and float reductions are wrong in places (the fuzzer's own references replace those
operators, ``irc.testing.fuzz.references.reference_ops``); each such test has its twin
with the input given at run time.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("ml_dtypes")

from onnx import TensorProto, helper, numpy_helper

from irc.testing.fuzz.evaluate import OK, evaluate


def _model(nodes, inputs, outputs, inits=(), opset=21):
    graph = helper.make_graph(nodes, "regression", inputs, outputs,
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _tensor(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _check(model, inputs):
    outcome = evaluate(model, inputs, tuple(inputs))
    assert outcome.kind == OK, outcome.line()


def _loop_body(elem=TensorProto.FLOAT, shape=(5, 1)):
    """``v <- tanh(v * -0.75 + x)``, the condition passed through."""
    return helper.make_graph([
        helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(
            np.array(-0.75, np.float32), "k")),
        helper.make_node("Mul", ["v", "k"], ["m"]),
        helper.make_node("Add", ["m", "x"], ["a"]),
        helper.make_node("Tanh", ["a"], ["v_out"]),
        helper.make_node("Identity", ["c"], ["c_out"])], "body",
        [_tensor("i", TensorProto.INT64, []), _tensor("c", TensorProto.BOOL, []),
         _tensor("v", elem, list(shape))],
        [_tensor("c_out", TensorProto.BOOL, []), _tensor("v_out", elem, list(shape))])


# Found by irc fuzz, seed 1048: a Loop without a condition input over constants: ONNX's
# reference evaluator takes the absent condition for false and returns the start value.
# The importer leaves such nodes to irc's own kernels.
def test_loop_without_a_condition_over_a_constant_start_runs_its_body():
    model = _model([helper.make_node("Loop", ["M", "", "v0"], ["y"], body=_loop_body())],
                   [_tensor("x", TensorProto.FLOAT, [1, 1])],
                   [_tensor("y", TensorProto.FLOAT, [5, 1])],
                   [("M", np.array(3, np.int64)),
                    ("v0", np.full((5, 1), 1.6, np.float32))])
    _check(model, {"x": np.array([[-0.86]], np.float32)})


@pytest.mark.parametrize("cond, start_is_input", [(True, False), (False, True), (True, True)])
def test_loop_forms_next_to_the_failing_one(cond, start_is_input):
    """The same Loop with a condition input, or with the start value a graph input,
    is right."""
    inits = [("M", np.array(3, np.int64))]
    inputs = [_tensor("x", TensorProto.FLOAT, [1, 1])]
    feeds = {"x": np.array([[-0.86]], np.float32)}
    if start_is_input:
        inputs.append(_tensor("v0", TensorProto.FLOAT, [5, 1]))
        feeds["v0"] = np.full((5, 1), 1.6, np.float32)
    else:
        inits.append(("v0", np.full((5, 1), 1.6, np.float32)))
    if cond:
        inits.append(("c0", np.array(True)))
    model = _model([helper.make_node("Loop", ["M", "c0" if cond else "", "v0"], ["y"],
                                     body=_loop_body())],
                   inputs, [_tensor("y", TensorProto.FLOAT, [5, 1])], inits)
    _check(model, feeds)


# Found by irc fuzz, seed 5012: rounding a 0-d constant to bfloat16 gave it shape (1,)
# (``np.ascontiguousarray`` makes 0-d arrays 1-d).
def test_reciprocal_of_a_0d_bfloat16_tensor_keeps_its_shape():
    import ml_dtypes

    model = _model([helper.make_node("Reciprocal", ["x"], ["y"])],
                   [_tensor("x", TensorProto.BFLOAT16, [])],
                   [_tensor("y", TensorProto.BFLOAT16, [])])
    _check(model, {"x": np.array(-1.2, ml_dtypes.bfloat16)})


@pytest.mark.parametrize("elem", [TensorProto.FLOAT16, TensorProto.FLOAT])
def test_reciprocal_of_a_0d_tensor_keeps_its_shape(elem):
    model = _model([helper.make_node("Reciprocal", ["x"], ["y"])], [_tensor("x", elem, [])],
                   [_tensor("y", elem, [])])
    _check(model, {"x": np.array(-1.2, helper.tensor_dtype_to_np_dtype(elem))})


def _lrn(constant: bool):
    x = np.random.default_rng(0).uniform(-4, 4, (1, 4, 2, 3)).astype(np.float32)
    model = _model([helper.make_node("LRN", ["x"], ["y"], alpha=0.01, beta=0.75, bias=1.0,
                                     size=3)],
                   [] if constant else [_tensor("x", TensorProto.FLOAT, [1, 4, 2, 3])],
                   [_tensor("y", TensorProto.FLOAT, [1, 4, 2, 3])],
                   [("x", x)] if constant else (), opset=17)
    return model, {} if constant else {"x": x}


# Found by irc fuzz, seed 1024: LRN of a constant is wrong from channel 1 on; ONNX's
# reference evaluator gets it wrong (its window runs over the batch axis's extent). The
# importer leaves such nodes to irc's own kernels.
def test_lrn_of_a_constant():
    _check(*_lrn(constant=True))


def test_lrn_of_an_input():
    _check(*_lrn(constant=False))


def _max_pool_with_indices(constant: bool):
    x = np.random.default_rng(0).uniform(-4, 4, (1, 2, 6, 5)).astype(np.float32)
    model = _model([helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[3, 3])],
                   [] if constant else [_tensor("x", TensorProto.FLOAT, [1, 2, 6, 5])],
                   [_tensor("y", TensorProto.FLOAT, [1, 2, 4, 3]),
                    _tensor("i", TensorProto.INT64, [1, 2, 4, 3])],
                   [("x", x)] if constant else (), opset=18)
    return model, {} if constant else {"x": x}


# Found by irc fuzz, seed 9080: the Indices output of MaxPool over a constant is wrong;
# ONNX's reference evaluator gets it wrong (its indices are not where the maxima are).
# The importer leaves such nodes to irc's own kernels.
def test_max_pool_indices_of_a_constant():
    _check(*_max_pool_with_indices(constant=True))


def test_max_pool_indices_of_an_input():
    _check(*_max_pool_with_indices(constant=False))


def _lp_normalization(constant: bool, p: int):
    x = np.array([[-94.735016], [35.97878], [-87.330154]], np.float32)
    model = _model([helper.make_node("LpNormalization", ["x"], ["y"], axis=-2, p=p)],
                   [] if constant else [_tensor("x", TensorProto.FLOAT, [3, 1])],
                   [_tensor("y", TensorProto.FLOAT, [3, 1])],
                   [("x", x)] if constant else ())
    return model, {} if constant else {"x": x}


# Found by irc fuzz, seed 9078: LpNormalization with p=1 of a constant is wrong; ONNX's
# reference evaluator gets it wrong (it does not divide by the 1-norm). The importer
# leaves such nodes to irc's own kernels.
def test_lp_normalization_p1_of_a_constant():
    _check(*_lp_normalization(constant=True, p=1))


@pytest.mark.parametrize("constant, p", [(False, 1), (False, 2), (True, 2)])
def test_lp_normalization(constant, p):
    _check(*_lp_normalization(constant, p))


# Found by irc fuzz, seed 5147, with a constant input: a bfloat16 ReduceSum of a
# constant sums in bfloat16 (3000 ones give 256); so does ONNX's reference evaluator. The
# importer leaves such nodes to irc's own kernels.
def test_bfloat16_sum_of_a_constant_accumulates_in_float32():
    import ml_dtypes

    from irc.testing.fuzz import builds

    model = _model([helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)], [],
                   [_tensor("y", TensorProto.BFLOAT16, [])],
                   [("x", np.ones(3000, ml_dtypes.bfloat16))], opset=18)
    (got,) = builds.run(builds.build(model, "default"), model, {})
    assert abs(float(got) - 3000) <= 3000 * 2 ** -7, float(got)

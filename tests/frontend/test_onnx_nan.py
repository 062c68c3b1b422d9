"""NaN through every operator with max/min semantics: Relu, Clip, Max/Min, the clamped
activations, Sign, pooling and reductions, alone and fused into a product's epilogue.
A NaN input gives NaN, as numpy's ``maximum``/``minimum`` and ONNX define it."""

import warnings

import numpy as np
import pytest

import irc
from irc import tir
from irc.tir import te

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from irc.frontend.onnx import from_onnx  # noqa: E402

X = np.array([[np.nan, -1.5, 0.0, 2.5], [3.0, np.nan, -7.0, np.inf],
              [-np.inf, 1.0, np.nan, -0.5]], "float32")
Z = np.array([[0.5, np.nan, 1.0, -2.0], [np.nan, 2.0, 3.0, 1.0],
              [0.0, np.nan, 4.0, np.nan]], "float32")


def _model(nodes, inputs, consts=(), opset=17, shape=(3, 4)):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)
                     for n in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(a, n) for n, a in consts])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _irc(model, feeds, **compile_args):
    vm = irc.vm.VirtualMachine(irc.compile(from_onnx(model), target="llvm", **compile_args))
    return vm["main"](*[irc.tensor(a) for a in feeds.values()]).numpy()


def _ort(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def _same(a, b):
    return np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)


ELEMENTWISE = {
    "Relu": ([helper.make_node("Relu", ["x"], ["y"])], ["x"], ()),
    "Clip": ([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], ["x"],
             (("lo", np.array(0, "float32")), ("hi", np.array(6, "float32")))),
    "Max": ([helper.make_node("Max", ["x", "z"], ["y"])], ["x", "z"], ()),
    "Min": ([helper.make_node("Min", ["x", "z"], ["y"])], ["x", "z"], ()),
    "Max3": ([helper.make_node("Max", ["x", "z", "x"], ["y"])], ["x", "z"], ()),
    "HardSigmoid": ([helper.make_node("HardSigmoid", ["x"], ["y"])], ["x"], ()),
    "HardSwish": ([helper.make_node("HardSwish", ["x"], ["y"])], ["x"], ()),
    "LeakyRelu": ([helper.make_node("LeakyRelu", ["x"], ["y"])], ["x"], ()),
    "Elu": ([helper.make_node("Elu", ["x"], ["y"])], ["x"], ()),
    "Selu": ([helper.make_node("Selu", ["x"], ["y"])], ["x"], ()),
    "Celu": ([helper.make_node("Celu", ["x"], ["y"])], ["x"], ()),
    "PRelu": ([helper.make_node("PRelu", ["x", "z"], ["y"])], ["x", "z"], ()),
    "Sign": ([helper.make_node("Sign", ["x"], ["y"])], ["x"], ()),
    "Softmax": ([helper.make_node("Softmax", ["x"], ["y"])], ["x"], ()),
}


@pytest.mark.parametrize("op", sorted(ELEMENTWISE))
def test_elementwise_operator_keeps_nan_as_onnx_runtime(op):
    nodes, inputs, consts = ELEMENTWISE[op]
    feeds = {n: {"x": X, "z": Z}[n] for n in inputs}
    model = _model(nodes, inputs, consts)
    got, want = _irc(model, feeds), _ort(model, feeds)
    assert np.isnan(got).any()
    assert _same(got, want), f"{op}:\nirc {got}\nort {want}"


@pytest.mark.parametrize("op, ref", [("ReduceMax", np.max), ("ReduceMin", np.min)])
def test_reductions_propagate_nan_as_numpy(op, ref):
    # ONNX Runtime's Eigen reductions return 3.0 for max([3, nan, -7, inf]); numpy and
    # ONNX's reference implementation return NaN.
    x = X.copy()
    x[1, 1] = 5.0  # one row without NaN
    model = _model([helper.make_node(op, ["x"], ["y"], axes=[1], keepdims=0)], ["x"],
                   opset=13)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = ref(x, axis=1)
    assert _same(_irc(model, {"x": x}), want)


def test_max_pool_propagates_nan():
    x = np.arange(2 * 3 * 6 * 6, dtype="float32").reshape(2, 3, 6, 6)
    x[0, 1, 2, 3] = np.nan
    x[1, 2, 5, 5] = np.nan
    model = _model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2],
                                     strides=[2, 2])], ["x"], shape=x.shape)
    got = _irc(model, {"x": x})
    want = x.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5))
    assert _same(got, want)
    assert np.isnan(got).sum() == 2


@pytest.mark.parametrize("dispatch", [None, "dnnl"])
@pytest.mark.parametrize("act", ["Relu", "Clip"])
def test_nan_survives_an_activation_fused_into_a_convolution(dispatch, act):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 8, 10, 10)).astype("float32")
    x[0, 3, 4, 4] = np.nan
    w = rng.standard_normal((16, 8, 3, 3)).astype("float32")
    b = rng.standard_normal(16).astype("float32")
    act_inputs = ["c", "lo", "hi"] if act == "Clip" else ["c"]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node(act, act_inputs, ["y"])]
    consts = [("w", w), ("b", b), ("lo", np.array(0, "float32")),
              ("hi", np.array(6, "float32"))]
    model = _model(nodes, ["x"], consts if act == "Clip" else consts[:3], shape=x.shape)
    if dispatch == "dnnl":
        from irc.runtime import dnnl

        if not dnnl.available():
            pytest.skip("oneDNN is not installed")
    got = _irc(model, {"x": x}, **({"dispatch": dispatch} if dispatch else {}))
    want = _ort(model, {"x": x})
    assert np.isnan(got).sum() == np.isnan(want).sum() > 0
    assert _same(got, want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_loop_ir_max_and_min_propagate_nan_from_either_operand(dtype):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    n = 19  # vector body and scalar tail
    a_ = te.placeholder((n,), name="A", dtype=dtype)
    b_ = te.placeholder((n,), name="B", dtype=dtype)
    outs = [te.compute((n,), lambda i: tir.max(a_[i], b_[i]), name="mx"),
            te.compute((n,), lambda i: tir.min(a_[i], b_[i]), name="mn"),
            te.compute((n,), lambda i: tir.max(a_[i], tir.const(0, dtype)), name="relu"),
            te.compute((n,), lambda i: tir.min(tir.const(6, dtype), a_[i]), name="cap")]
    f = irc.build(te.create_prim_func([a_, b_, *outs]), "llvm")
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    a = np.resize(np.array([np.nan, 1, -1, 7, 2, np.nan]), n).astype(np_dtype)
    b = np.resize(np.array([0, np.nan, 2, np.nan, 1, np.nan]), n).astype(np_dtype)
    results = [np.zeros(n, np_dtype) for _ in outs]
    f(a, b, *results)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        wants = [np.maximum(a, b), np.minimum(a, b), np.maximum(a, np.zeros_like(a)),
                 np.minimum(np.full_like(a, 6), a)]
    for got, want in zip(results, wants):
        assert np.array_equal(got.astype("float64"), want.astype("float64"), equal_nan=True)


def test_interpreter_max_and_min_propagate_nan():
    from irc.tir import interpreter

    a_ = te.placeholder((6,), name="A")
    b_ = te.placeholder((6,), name="B")
    mx = te.compute((6,), lambda i: tir.max(a_[i], b_[i]), name="mx")
    mn = te.compute((6,), lambda i: tir.min(a_[i], b_[i]), name="mn")
    a = np.array([np.nan, 1, -1, 7, 2, np.nan], "float32")
    b = np.array([0, np.nan, 2, np.nan, 1, np.nan], "float32")
    out = [np.zeros(6, "float32"), np.zeros(6, "float32")]
    interpreter.run(te.create_prim_func([a_, b_, mx, mn]), a, b, *out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.array_equal(out[0], np.maximum(a, b), equal_nan=True)
        assert np.array_equal(out[1], np.minimum(a, b), equal_nan=True)


def test_cuda_code_keeps_nan_in_min_and_max():
    src = _cuda_source("float32")
    assert "isnan(" in src and "fmaxf" not in src
    assert "__hisnan(" in _cuda_source("float16")


def _cuda_source(dtype):
    from irc import dlight as dl
    from irc.core.module import IRModule
    from irc.target import Target

    a_ = te.placeholder((256,), name="A", dtype=dtype)
    b_ = te.placeholder((256,), name="B", dtype=dtype)
    c_ = te.compute((256,), lambda i: tir.max(a_[i], b_[i]), name="C")
    mod = IRModule(functions={"main": te.create_prim_func([a_, b_, c_])})
    with Target("cuda"):
        mod = dl.ApplyDefaultSchedule(dl.gpu.Fallback())(mod)
    return irc.build(mod, target="cuda").get_source()


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_reductions_point_at_the_nan_as_numpy(op, last):
    # max/min propagate NaN, so the NaN is the extreme: numpy gives its first position;
    # ONNX Runtime skips NaN and returns a position of the largest number instead.
    x = np.array([[1, np.nan, 3, np.nan], [5, 1, np.nan, 7], [np.nan, 0, 1, 2],
                  [1, 2, 3, 0]], "float32")
    graph = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"], axis=1, keepdims=0, select_last_index=last)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    ref = getattr(np, op.lower())
    want = ref(x, axis=1) if not last else x.shape[1] - 1 - ref(x[:, ::-1], axis=1)
    np.testing.assert_array_equal(_irc(model, {"x": x}), want)

"""Library dispatch of imported ONNX models: a convolution with a bias (the importer's
``add(conv2d(x, w), reshape(b))``), with a ReLU, a ``Gemm`` with a bias and a
``MatMul`` + ``Add`` go to oneDNN under ``dispatch="dnnl"`` and ``"auto"`` and match
ONNX Runtime; a subgraph the library cannot compile stays with irc's kernels, with a
warning naming it, under both."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import irc
from irc.core.diagnostics import IRCError
from irc.dispatch import dnnl as dnnl_backend
from irc.runtime import dnnl

onnx = pytest.importorskip("onnx", reason="needs onnx (pip install 'irc[onnx]')")
ort = pytest.importorskip("onnxruntime", reason="needs onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from irc.frontend.onnx import from_onnx  # noqa: E402

if not dnnl.available():
    pytest.skip("needs the onednn wheel (pip install 'irc[dnnl]')", allow_module_level=True)


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, irc_settings):
    irc_settings(cache_dir=tmp_path)
    return tmp_path


def _model(nodes, inputs, output, initializers):
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
        [numpy_helper.from_array(a, n) for n, a in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def conv_bias(relu: bool):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((8, 3, 3, 3)).astype("float32")
    b = rng.standard_normal(8).astype("float32")
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1])]
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    return _model(nodes, [("x", [1, 3, 12, 12])], "y" if relu else "c", {"W": w, "B": b})


def gemm_bias():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((16, 32)).astype("float32")
    b = rng.standard_normal(16).astype("float32")
    nodes = [helper.make_node("Gemm", ["x", "W", "B"], ["y"], transB=1)]
    return _model(nodes, [("x", [4, 32])], "y", {"W": w, "B": b})


def matmul_add():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((32, 16)).astype("float32")
    b = rng.standard_normal(16).astype("float32")
    nodes = [helper.make_node("MatMul", ["x", "W"], ["m"]),
             helper.make_node("Add", ["m", "B"], ["y"])]
    return _model(nodes, [("x", [2, 4, 32])], "y", {"W": w, "B": b})


MODELS = {
    "conv_bias": lambda: conv_bias(False),
    "conv_bias_relu": lambda: conv_bias(True),
    "gemm_bias": gemm_bias,
    "matmul_add": matmul_add,
}


def _run(model, ex):
    rng = np.random.default_rng(0)
    feeds = {}
    for inp in model.graph.input:
        shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
        feeds[inp.name] = rng.standard_normal(shape).astype("float32")
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    vm = irc.vm.VirtualMachine(ex, irc.cpu())
    got = vm["main"](*[irc.tensor(a) for a in feeds.values()]).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_onnx_models_dispatch_to_onednn_and_match_onnxruntime(name):
    model = MODELS[name]()
    ex = irc.compile(from_onnx(model), target="llvm", dispatch="dnnl")
    assert ex.external, "the subgraph did not go to oneDNN"
    _run(model, ex)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_onnx_models_compile_under_auto_dispatch_and_match_onnxruntime(name):
    model = MODELS[name]()
    _run(model, irc.compile(from_onnx(model), target="llvm", dispatch="auto"))


def _refuse_activations(monkeypatch):
    """Make the dnnl code generator refuse convolutions with a ReLU, as it would a
    subgraph it cannot take."""
    plan = dnnl_backend.ConvFunction.plan

    def refusing(self):
        if self.activation is not None:
            raise self.error("a test refuses activations")
        return plan(self)
    monkeypatch.setattr(dnnl_backend.ConvFunction, "plan", refusing)


def test_a_subgraph_onednn_cannot_compile_runs_on_irc_kernels_with_a_warning(
        monkeypatch, caplog):
    _refuse_activations(monkeypatch)
    model = conv_bias(True)
    with caplog.at_level(logging.WARNING, logger="irc.dispatch"):
        ex = irc.compile(from_onnx(model), target="llvm", dispatch="dnnl")
    warned = [r.getMessage() for r in caplog.records if r.name == "irc.dispatch"]
    assert len(warned) == 1, warned
    assert "the dnnl backend cannot compile fused_nn_conv2d_add_nn_relu_dnnl: a test " \
           "refuses activations" in warned[0]
    assert "pattern dnnl.conv2d_bias_relu" in warned[0] and "irc's kernels" in warned[0]
    # The convolution and its bias still go to oneDNN; the ReLU runs on irc's kernel.
    assert ex.external
    _run(model, ex)


def test_auto_dispatch_keeps_irc_kernels_for_what_the_library_cannot_compile(monkeypatch):
    _refuse_activations(monkeypatch)
    from irc.core.target import Target
    from irc.vm import auto_dispatch as auto

    monkeypatch.setattr(auto, "candidate_patterns",
                        lambda target: irc.dispatch.get_patterns_with_prefix("dnnl.conv2d"))
    model = conv_bias(True)
    report: list = []
    mod = irc.vm.build.prepare_for_dispatch(from_onnx(model),
                                            auto.candidate_patterns(None))
    auto.auto_dispatch(mod, Target("llvm"), irc.compile, report)
    assert report[0]["pattern"] == "dnnl.conv2d_bias_relu"
    assert report[0]["choice"] == "irc"
    assert report[0]["reason"] == "the library cannot compile it"
    _run(model, irc.compile(from_onnx(model), target="llvm", dispatch="auto"))


def test_run_codegen_alone_still_reports_what_a_backend_cannot_compile(monkeypatch):
    """The passes used by hand keep their contract: RunCodegen raises."""
    _refuse_activations(monkeypatch)
    mod = irc.vm.build.prepare_for_dispatch(
        from_onnx(conv_bias(True)), irc.dispatch.get_patterns_with_prefix("dnnl.conv2d"))
    fused = irc.passes.FuseOpsByPattern(irc.dispatch.get_patterns_with_prefix("dnnl.conv2d"),
                                        annotate_codegen=True)(mod)
    with pytest.raises(IRCError, match="a test refuses activations"):
        irc.passes.RunCodegen()(fused)

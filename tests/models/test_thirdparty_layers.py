"""Layers that third-party models (torchvision, timm) are made of and irc's own models are
not: grouped convolutions of every group width, concatenations of convolution branches
(fire, inception and dense blocks), ceil-mode pooling. Each is checked against ONNX
Runtime and for the schedule or graph the default build gives it."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import irc
from irc.core.target import Target
from irc.frontend.onnx import from_onnx
from irc.passes.pipeline import get_pipeline

ort = pytest.importorskip("onnxruntime")


def _model(nodes, x_shape, inits):
    graph = helper.make_graph(
        nodes, "layers", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model


def _check(model, x_shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(x_shape).astype("float32")
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    vm = irc.vm.VirtualMachine(irc.compile(from_onnx(model), "llvm"), irc.cpu())
    got = vm["main"](x).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def _scheduled(model):
    with Target("llvm"):
        return get_pipeline("default")(from_onnx(model))


def _grouped(cin, cout, groups, size, k=3, stride=1, seed=0):
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((cout, cin // groups, k, k)) / k).astype("float32")
    b = rng.standard_normal(cout).astype("float32")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], group=groups, pads=[k // 2] * 4,
                              strides=[stride, stride]),
             helper.make_node("Relu", ["c"], ["y"])]
    return _model(nodes, [1, cin, size, size], {"w": w, "b": b})


@pytest.mark.parametrize("cin,cout,groups,size,k,stride", [
    (64, 64, 8, 14, 3, 1),      # RegNet: group width 8
    (128, 128, 32, 12, 3, 1),   # ResNeXt's first stage: group width 4
    (64, 128, 16, 15, 3, 2),    # strided, odd size, 8 outputs per group from 4 inputs
    (48, 48, 6, 9, 5, 1),       # 5x5
    (24, 24, 3, 11, 1, 1),      # 1x1 grouped (ShuffleNet V1 style)
    (120, 120, 15, 7, 3, 1),    # a group width that is no power of two
])
def test_grouped_convolution_matches_onnxruntime(cin, cout, groups, size, k, stride):
    _check(_grouped(cin, cout, groups, size, k, stride), [1, cin, size, size])


def test_grouped_convolution_gets_a_vectorized_register_tile():
    # With the group as an axis of its own the input is a broadcast along a group's
    # output channels: the multiply-accumulate is vectorized and register-blocked,
    # not the fallback's scalar loop.
    mod = _scheduled(_grouped(64, 64, 8, 14))
    text = "\n".join(f.script() for gv, f in mod.functions.items()
                     if "conv2d" in str(getattr(gv, "name_hint", gv)))
    assert "group_conv2d_nhwc_groups" in text
    assert "T.vectorized" in text and "T.unroll" in text


def _fire(ceil_pool: bool):
    """A SqueezeNet fire module after a ceil-mode max pool: squeeze 1x1, two expand
    convolutions (1x1 and 3x3) concatenated along the channels."""
    rng = np.random.default_rng(1)
    inits = {"ws": rng.standard_normal((8, 16, 1, 1)).astype("float32") / 4,
             "we1": rng.standard_normal((16, 8, 1, 1)).astype("float32") / 3,
             "we3": rng.standard_normal((16, 8, 3, 3)).astype("float32") / 8}
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], strides=[2, 2],
                              ceil_mode=int(ceil_pool)),
             helper.make_node("Conv", ["p", "ws"], ["s0"]),
             helper.make_node("Relu", ["s0"], ["s"]),
             helper.make_node("Conv", ["s", "we1"], ["e10"]),
             helper.make_node("Relu", ["e10"], ["e1"]),
             helper.make_node("Conv", ["s", "we3"], ["e30"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["e30"], ["e3"]),
             helper.make_node("Concat", ["e1", "e3"], ["y"], axis=1)]
    return _model(nodes, [1, 16, 28, 28], inits)


@pytest.mark.parametrize("ceil_pool", [False, True])
def test_fire_module_matches_onnxruntime(ceil_pool):
    _check(_fire(ceil_pool), [1, 16, 28, 28])


def test_concatenated_branches_stay_channels_last_and_the_join_is_a_copy():
    mod = _scheduled(_fire(True))
    main = mod["main"].script()
    # One permutation in (the input) and one out (the result): the branches and their
    # concatenation run in NHWC.
    assert main.count("transpose") <= 2 + sum(  # kernels named transpose*, calls only
        1 for gv in mod.functions if str(getattr(gv, "name_hint", gv)).startswith("transpose")
    ), main
    names = [str(getattr(gv, "name_hint", gv)) for gv in mod.functions]
    joins = [n for n in names if "concatenate" in n]
    assert joins and all(n.startswith("concatenate") for n in joins), names
    assert any("max_pool2d" in n for n in names), names  # the 2-D operator, NHWC


def test_ceil_mode_pool_keeps_onnx_semantics_when_a_window_starts_in_the_padding():
    # 6 wide, kernel 2, stride 2, pad 1 each side: the ceil-mode window at 6 starts in
    # the right padding, which ONNX drops (output 4 wide, not 5).
    nodes = [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2],
                              pads=[1, 1, 1, 1], ceil_mode=1)]
    model = _model(nodes, [1, 3, 6, 6], {})
    _check(model, [1, 3, 6, 6])
    x = np.zeros((1, 3, 6, 6), "float32")
    vm = irc.vm.VirtualMachine(irc.compile(from_onnx(model), "llvm"), irc.cpu())
    assert vm["main"](x).numpy().shape == (1, 3, 4, 4)

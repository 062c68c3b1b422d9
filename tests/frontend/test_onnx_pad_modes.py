"""ONNX ``Pad`` with pads known at import time becomes ``R.nn.pad`` in every mode
(constant, reflect, edge, wrap), for ranks 1 to 4 and any amounts, negative ones
(cropping) included, through irc's default CPU pipeline, against ONNX Runtime; reflect
pads larger than ONNX Runtime allows are import errors naming the node (a run-time
check where the axis length is symbolic); PyTorch's ReflectionPad2d/ReplicationPad2d
exports run as well."""

from __future__ import annotations

import numpy as np
import pytest

import irc
from irc.core.diagnostics import IRCError

onnx = pytest.importorskip("onnx", reason="needs onnx (pip install 'irc[onnx]')")
ort = pytest.importorskip("onnxruntime", reason="needs onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from irc.frontend.onnx import from_onnx  # noqa: E402

MODES = ("constant", "reflect", "edge", "wrap")
# (shape, pads: all befores then all afters), each valid for every mode.
CASES = [
    ((5,), [2, 3]),
    ((6,), [-2, 3]),
    ((4, 6), [1, -1, -1, 2]),
    ((3, 5), [0, 4, 2, 0]),
    ((3, 4, 5), [0, 1, -2, 2, 0, 2]),
    ((2, 3, 4, 5), [1, 1, 0, -1, 0, -1, 3, 2]),
    ((1, 3, 8, 8), [0, 0, 3, 3, 0, 0, 3, 3]),
]


def pad_model(mode, shape, pads, value=None, axes=None, opset=19):
    inputs = ["x", "pads"] + (["value"] if value is not None else [""] if axes else [])
    inits = [helper.make_tensor("pads", TensorProto.INT64, [len(pads)], pads)]
    if value is not None:
        inits.append(helper.make_tensor("value", TensorProto.FLOAT, [], [value]))
    if axes is not None:
        inputs.append("axes")
        inits.append(helper.make_tensor("axes", TensorProto.INT64, [len(axes)], axes))
    graph = helper.make_graph(
        [helper.make_node("Pad", inputs, ["y"], mode=mode)], "pad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def ort_run(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def irc_run(model, feeds):
    ex = irc.compile(from_onnx(model), target="llvm")
    vm = irc.vm.VirtualMachine(ex, irc.cpu())
    return vm["main"](*[irc.tensor(a) for a in feeds.values()]).numpy()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape, pads", CASES, ids=lambda c: str(c).replace(" ", ""))
def test_constant_pads_in_every_mode_match_onnxruntime(mode, shape, pads):
    model = pad_model(mode, shape, pads, value=1.5 if mode == "constant" else None)
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    np.testing.assert_array_equal(irc_run(model, {"x": x}), ort_run(model, {"x": x}))


def test_pads_on_some_axes_in_reflect_mode():
    model = pad_model("reflect", (2, 5, 6), [-1, 2, 3, 1], axes=[-1, 1])
    x = np.random.default_rng(1).standard_normal((2, 5, 6)).astype("float32")
    np.testing.assert_array_equal(irc_run(model, {"x": x}), ort_run(model, {"x": x}))


def test_graph_operator_pads_in_every_mode():
    mod = irc.parse('''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 4), "float32")):
        with R.dataflow():
            a = R.nn.pad(x, [1, -1, 1, 3], pad_mode="reflect")
            b = R.nn.pad(x, [0, 2, -2, 1], pad_mode="replicate")
            c = R.nn.pad(x, [4, 1, 0, 5], pad_mode="circular")
            y = (a, b, c)
            R.output(y)
        return y
''')
    x = np.arange(12, dtype="float32").reshape(3, 4)
    ex = irc.compile(mod, target="llvm")
    a, b, c = (t.numpy() for t in irc.vm.VirtualMachine(ex, irc.cpu())["main"](irc.tensor(x)))
    np.testing.assert_array_equal(a, np.pad(x[:2], [(1, 0), (1, 3)], mode="reflect"))
    np.testing.assert_array_equal(b, np.pad(x[:, 2:], [(0, 2), (0, 1)], mode="edge"))
    np.testing.assert_array_equal(c, np.pad(x, [(4, 1), (0, 5)], mode="wrap"))


@pytest.mark.parametrize("shape, pads, message", [
    ((3,), [3, 0], "reflect padding of axis 0 by 3 needs more than 3 elements, the axis "
                   "has 3\n"),
    ((4, 6), [-1, 2, 3, -2], "reflect padding of axis 0 by 3 needs more than 3 elements, "
                             "the axis has 3 after cropping"),
    ((1, 4), [0, 1, 1, 0], "reflect padding of axis 0 by 1 needs more than 1 elements"),
])
def test_reflect_pads_onnxruntime_refuses_are_import_errors(shape, pads, message):
    model = pad_model("reflect", shape, pads)
    x = np.zeros(shape, "float32")
    with pytest.raises(Exception, match="Pad reflect"):
        ort_run(model, {"x": x})  # ONNX Runtime refuses them too
    with pytest.raises(IRCError, match=r"ONNX node 'Pad -> y' \(Pad\): " + message):
        from_onnx(model)


def test_edge_and_wrap_padding_of_an_empty_axis_are_import_errors():
    for mode in ("edge", "wrap"):
        with pytest.raises(IRCError, match=f"{mode} padding of axis 0, which is empty after "
                                           "cropping"):
            from_onnx(pad_model(mode, (2, 3), [-2, 0, 1, 0]))


def test_reflect_pads_on_a_symbolic_axis_are_checked_when_the_model_runs():
    model = pad_model("reflect", ("n", 4), [2, 1, 2, 1])
    vm = irc.vm.VirtualMachine(irc.compile(from_onnx(model), target="llvm"), irc.cpu())
    x = np.random.default_rng(2).standard_normal((5, 4)).astype("float32")
    np.testing.assert_array_equal(vm["main"](irc.tensor(x)).numpy(), ort_run(model, {"x": x}))
    with pytest.raises(IRCError, match="reflect_pad_too_large"):
        vm["main"](irc.tensor(np.zeros((2, 4), "float32")))


def _conv_net(mode):
    """x -> pad -> conv -> relu -> pad -> conv, as style-transfer networks pad."""
    rng = np.random.default_rng(3)
    w1 = rng.standard_normal((8, 3, 3, 3)).astype("float32")
    w2 = rng.standard_normal((4, 8, 3, 3)).astype("float32")
    pads = [0, 0, 1, 1, 0, 0, 1, 1]
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p1"], mode=mode),
             helper.make_node("Conv", ["p1", "w1"], ["c1"]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Pad", ["r1", "pads"], ["p2"], mode=mode),
             helper.make_node("Conv", ["p2", "w2"], ["y"])]
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [helper.make_tensor("pads", TensorProto.INT64, [8], pads),
         numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


@pytest.mark.parametrize("mode", MODES)
def test_pads_around_convolutions_through_the_default_cpu_pipeline(mode):
    model = _conv_net(mode)
    x = np.random.default_rng(4).standard_normal((1, 3, 12, 12)).astype("float32")
    np.testing.assert_allclose(irc_run(model, {"x": x}), ort_run(model, {"x": x}),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("layer", ["ReflectionPad2d", "ReplicationPad2d"])
def test_torch_padding_layers_exported_to_onnx(layer, tmp_path):
    torch = pytest.importorskip("torch", reason="needs torch to export the layers")
    net = torch.nn.Sequential(getattr(torch.nn, layer)((1, 2, 3, 0)),
                              torch.nn.Conv2d(3, 4, 3))
    x = torch.randn(1, 3, 8, 9)
    path = tmp_path / f"{layer}.onnx"
    # The TorchScript exporter (the dynamo one needs onnxscript), as irc.testing's zoo.
    torch.onnx.export(net, (x,), str(path), input_names=["x"], output_names=["y"],
                      opset_version=17, dynamo=False)
    model = onnx.load(str(path))
    feeds = {"x": x.numpy()}
    np.testing.assert_allclose(irc_run(model, feeds), ort_run(model, feeds), rtol=1e-4,
                               atol=1e-4)


def runtime_pad_model(mode, shape, npads):
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode)], "pad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
         helper.make_tensor_value_info("pads", TensorProto.INT64, [npads])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


@pytest.mark.parametrize("mode", MODES)
def test_pads_known_only_at_run_time_crop_first_as_onnxruntime_does(mode):
    model = runtime_pad_model(mode, (4, 6), 4)
    vm = irc.vm.VirtualMachine(irc.compile(from_onnx(model), target="llvm"), irc.cpu())
    x = np.random.default_rng(5).standard_normal((4, 6)).astype("float32")
    refused = 0
    for pads in ([1, -1, -1, 2], [0, -2, 2, 3], [-1, 3, 2, -1], [2, 0, 1, 5], [3, 0, 4, 0]):
        feeds = {"x": x, "pads": np.array(pads, "int64")}
        try:
            want = ort_run(model, feeds)
        except Exception:  # noqa: BLE001 - onnxruntime's errors share no base class
            with pytest.raises(IRCError, match=f"{mode}_pad_too_large"):
                vm["main"](*[irc.tensor(a) for a in feeds.values()])
            refused += 1
            continue
        got = vm["main"](*[irc.tensor(a) for a in feeds.values()]).numpy()
        np.testing.assert_array_equal(got, want, err_msg=f"pads {pads}")
    assert refused == (1 if mode == "reflect" else 0)

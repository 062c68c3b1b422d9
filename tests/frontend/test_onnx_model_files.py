"""What is not an ONNX model is refused by ``from_onnx`` (and so by ``irc run`` and ``irc
compile``) with an irc error naming the file: an empty file, garbage bytes, a file cut
short, a model without a graph or without outputs. A graph with no nodes whose outputs
are its inputs is a model and runs."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import irc
from irc.core.diagnostics import IRCError

onnx = pytest.importorskip("onnx", reason="needs onnx (pip install 'irc[onnx]')")
from onnx import TensorProto, helper  # noqa: E402

from irc.frontend.onnx import from_onnx  # noqa: E402


def _relu_model():
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_an_empty_file_is_refused_naming_it(tmp_path):
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    with pytest.raises(IRCError, match=rf"cannot import the file '{path}': it is empty "
                                       r"\(0 bytes\), so it is not an ONNX model"):
        from_onnx(str(path))
    with pytest.raises(IRCError, match="cannot import the bytes given: it is empty"):
        from_onnx(b"")
    with pytest.raises(IRCError, match="cannot import the ModelProto given: it is empty"):
        from_onnx(onnx.ModelProto())


def test_garbage_and_cut_short_files_are_refused_naming_them(tmp_path):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(np.random.default_rng(0).bytes(300))
    with pytest.raises(IRCError, match=f"'{garbage}' is not a readable ONNX model"):
        from_onnx(str(garbage))
    data = _relu_model().SerializeToString()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[:len(data) // 2])
    with pytest.raises(IRCError, match=f"'{cut}' is not a readable ONNX model"):
        from_onnx(str(cut))
    # Cut where a field ends, before the graph: it parses, as a model without a graph.
    head = helper.make_model(helper.make_graph([], "g", [], []))
    head.ClearField("graph")
    prefix = tmp_path / "prefix.onnx"
    prefix.write_bytes(head.SerializeToString())
    with pytest.raises(IRCError, match=f"cannot import the file '{prefix}': it has no graph"):
        from_onnx(str(prefix))


def test_a_graph_without_outputs_is_refused():
    model = _relu_model()
    del model.graph.output[:]
    with pytest.raises(IRCError, match="its graph 'relu' has no outputs, so it computes "
                                       "nothing"):
        from_onnx(model)


def test_an_identity_graph_without_nodes_runs():
    ort = pytest.importorskip("onnxruntime")
    graph = helper.make_graph(
        [], "identity", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.random.default_rng(0).standard_normal((2, 3)).astype("float32")
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    ex = irc.compile(from_onnx(model), target="llvm")
    got = irc.vm.VirtualMachine(ex, irc.cpu())["main"](irc.tensor(x)).numpy()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("command", ["run", "compile"])
def test_irc_run_and_compile_refuse_an_empty_onnx_file(tmp_path, command):
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    r = subprocess.run([sys.executable, "-m", "irc", command, str(path)],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert f"cannot import the file '{path}': it is empty" in r.stderr
    assert "Traceback" not in r.stderr

"""Helpers of the ``irc`` command's tests: run it as a user does, in a subprocess."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "convnet.ir"


def irc_env() -> dict:
    """The environment of an ``irc`` subprocess: this checkout first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep)
    env["PYTHONIOENCODING"] = "utf-8"
    env.pop("COLUMNS", None)
    return env


def run_irc(*args: str, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    """``python -m irc ARGS`` with its output captured as text."""
    return subprocess.run([sys.executable, "-m", "irc", *map(str, args)], env=irc_env(),
                          capture_output=True, text=True, timeout=timeout, **kw)


@pytest.fixture
def example() -> pathlib.Path:
    """The bundled example model (a small image classifier in irc's text format)."""
    return EXAMPLE


def irc_in_process(capsys, *args: str) -> tuple[int, str, str]:
    """``irc ARGS`` run in this process: ``(status, stdout, stderr)``. A usage error
    (argparse's ``SystemExit``) gives its status; any other exception propagates, so a
    test sees an internal error as the failure it is."""
    from irc.cli import main

    capsys.readouterr()
    try:
        status = main([str(a) for a in args])
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return status, out, err


def save_onnx(path, nodes, inputs, outputs, initializers=()) -> pathlib.Path:
    """An ONNX model (opset 17) of ``nodes`` written to ``path``; ``inputs`` and
    ``outputs`` are ``(name, element type, shape)``."""
    import onnx
    from onnx import helper

    graph = helper.make_graph(
        nodes, "model", [helper.make_tensor_value_info(*i) for i in inputs],
        [helper.make_tensor_value_info(*o) for o in outputs], initializer=list(initializers))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return pathlib.Path(path)


@pytest.fixture
def onnx_add(tmp_path) -> pathlib.Path:
    """``y = a + b`` with a[n, m], b[n, m]: one symbolic dimension in two parameters."""
    onnx = pytest.importorskip("onnx")
    from onnx import helper

    f = onnx.TensorProto.FLOAT
    return save_onnx(tmp_path / "add.onnx", [helper.make_node("Add", ["a", "b"], ["y"])],
                     [("a", f, ["n", "m"]), ("b", f, ["n", "m"])], [("y", f, ["n", "m"])])


@pytest.fixture
def onnx_gather(tmp_path) -> pathlib.Path:
    """Rows of a constant 3 x 4 table picked by 4096 int64 indices (ONNX Gather)."""
    onnx = pytest.importorskip("onnx")
    import numpy as np
    from onnx import helper, numpy_helper

    table = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), "table")
    return save_onnx(tmp_path / "gather.onnx",
                     [helper.make_node("Gather", ["table", "ids"], ["y"], axis=0)],
                     [("ids", onnx.TensorProto.INT64, [4096])],
                     [("y", onnx.TensorProto.FLOAT, [4096, 4])], [table])

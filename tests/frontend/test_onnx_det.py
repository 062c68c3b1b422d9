"""ONNX Det (``irc/frontend/onnx/ops_linalg.py``: ``R.linalg.det``, a loop kernel of
Gaussian elimination with partial pivoting in float64, ``irc.tir.topi.linalg``): the
node-test cases pass, and determinants match numpy for single and batched matrices,
1 x 1 and singular ones, in float16/32/64; the kernel builds for CUDA."""

import numpy as np
import pytest

import irc
from irc.core.diagnostics import IRCError

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

from irc.frontend.onnx import from_onnx  # noqa: E402
from irc.testing.onnx_node_cases import cases_using, failures  # noqa: E402

RNG = np.random.default_rng(3)


def _model(shape, dtype="float32"):
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph([helper.make_node("Det", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", elem, shape)],
                              [helper.make_tensor_value_info("y", elem, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])


def _det(x):
    ex = irc.compile(from_onnx(_model(x.shape, x.dtype)), "llvm")
    return irc.vm.VirtualMachine(ex)["main"](irc.tensor(x)).numpy()


def test_every_node_case_passes():
    assert failures(list(cases_using({"Det"}).values())) == []


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (5, 5), (3, 4, 4), (2, 3, 3, 3)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_det_matches_numpy(shape, dtype):
    x = RNG.normal(size=shape).astype(dtype)
    got = _det(x)
    assert got.shape == shape[:-2] and got.dtype == dtype
    np.testing.assert_allclose(got, np.linalg.det(x.astype("float64")), rtol=1e-5,
                               atol=1e-6)


def test_det_of_singular_matrices_is_zero():
    a = np.array([[1, 2, 3], [2, 4, 6], [0, 1, 1]], "float32")  # two equal rows, up to 2x
    zero_column = np.array([[0, 1], [0, 3]], "float32")
    got = _det(np.stack([a, np.zeros((3, 3), "float32")]))
    np.testing.assert_array_equal(got, [0, 0])
    assert _det(zero_column) == 0


def test_det_needs_row_swaps_for_a_zero_leading_entry():
    x = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 2]], "float64")  # one swap: -2
    assert _det(x) == -2


def test_det_in_float16_computes_in_float64():
    x = RNG.normal(size=(4, 3, 3)).astype("float16")
    got = _det(x)
    assert got.dtype == "float16"
    np.testing.assert_allclose(got.astype("float64"), np.linalg.det(x.astype("float64")),
                               rtol=2e-3, atol=2e-3)


def test_det_of_a_non_square_or_integer_input_is_an_import_error():
    with pytest.raises(IRCError, match="square"):
        irc.compile(from_onnx(_model((2, 3))), "llvm")
    with pytest.raises(IRCError, match="must be a float tensor"):
        from_onnx(_model((2, 2), "int32"))


def test_det_builds_for_cuda():
    ex = irc.compile(from_onnx(_model((2, 3, 3))), target="cuda")
    assert "kernels" in repr(ex)

"""ONNX's DFT (``irc/frontend/onnx/ops_signal.py``): every node case; the transform's
variants (axis, dft_length padding and truncating, onesided, inverse, the one-sided
inverse, real or complex input, opsets 17 and 20, an axis known only at run time)
against numpy.fft; and the errors of what irc does not take."""

import numpy as np
import pytest

import irc
from irc.core.diagnostics import IRCError

pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper

from irc.frontend.onnx import from_onnx
from irc.testing.onnx_node_cases import cases_using, run_case

DFT_CASES = cases_using({"DFT"})


@pytest.mark.parametrize("name", sorted(DFT_CASES))
def test_every_dft_node_case_passes(name):
    assert len(DFT_CASES) == 10
    r = run_case(DFT_CASES[name])
    assert r.outcome == "pass", r.message


def _dft_model(shape, attrs, opset, axis=None, length=None, elem=TensorProto.DOUBLE,
               runtime_axis=False):
    inputs, inits = ["x", "", ""], []
    graph_inputs = [helper.make_tensor_value_info("x", elem, list(shape))]
    if length is not None:
        inits.append(numpy_helper.from_array(np.array(length, "int64"), "n"))
        inputs[1] = "n"
    if opset >= 20 and axis is not None:
        inputs[2] = "axis"
        if runtime_axis:
            graph_inputs.append(helper.make_tensor_value_info("axis", TensorProto.INT64, []))
        else:
            inits.append(numpy_helper.from_array(np.array(axis, "int64"), "axis"))
    elif axis is not None:
        attrs = dict(attrs, axis=axis)
    while inputs and inputs[-1] == "":
        inputs.pop()
    node = helper.make_node("DFT", inputs, ["y"], **attrs)
    graph = helper.make_graph([node], "dft", graph_inputs,
                              [helper.make_tensor_value_info("y", elem, None)],
                              initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _numpy_dft(x, axis, length, inverse, onesided):
    signal = x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0]
    axis = axis % x.ndim  # counted with the real/imaginary dimension
    if inverse and onesided:
        return np.fft.irfft(signal, n=length, axis=axis)[..., None]
    full = (np.fft.ifft if inverse else np.fft.fft)(signal, n=length, axis=axis)
    if onesided:
        n = full.shape[axis]
        full = np.take(full, np.arange(n // 2 + 1), axis=axis)
    return np.stack([full.real, full.imag], axis=-1)


def _run(model, *args):
    ex = irc.compile(from_onnx(model), "llvm")
    return irc.vm.VirtualMachine(ex)["main"](*[irc.tensor(a) for a in args]).numpy()


# Each: the input's shape, the axis, dft_length, inverse, onesided and the opset.
VARIANTS = [
    ((2, 8, 1), 1, None, 0, 0, 20),
    ((2, 8, 3, 1), -3, None, 0, 1, 20),
    ((2, 8, 3, 2), 2, 5, 0, 0, 20),            # truncated to 5 points
    ((3, 6, 2), -2, 9, 1, 0, 20),              # zero-padded to 9 points
    ((2, 5, 4, 2), 1, None, 1, 1, 20),         # irfft, default length 2 * (5 - 1)
    ((2, 5, 4, 2), 2, 7, 1, 1, 20),            # irfft of odd length
    ((6, 4, 1), 0, None, 0, 1, 20),            # the first axis
    ((2, 7, 1), 1, 4, 0, 1, 17),
    ((2, 3, 6, 2), 2, None, 1, 0, 17),
    ((2, 3, 6, 2), -2, 8, 0, 0, 17),
]


@pytest.mark.parametrize("shape, axis, length, inverse, onesided, opset", VARIANTS)
def test_dft_matches_numpy(shape, axis, length, inverse, onesided, opset):
    x = np.random.default_rng(0).standard_normal(shape)
    attrs = dict(inverse=inverse, onesided=onesided)
    model = _dft_model(shape, attrs, opset, axis=axis, length=length)
    np.testing.assert_allclose(_run(model, x), _numpy_dft(x, axis, length, inverse, onesided),
                               rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("elem, dtype, tol", [(TensorProto.FLOAT, "float32", 1e-4),
                                              (TensorProto.FLOAT16, "float16", 3e-2)])
def test_dft_of_narrower_floats(elem, dtype, tol):
    x = np.random.default_rng(1).standard_normal((2, 12, 2)).astype(dtype)
    model = _dft_model(x.shape, {}, 20, axis=1, elem=elem)
    got = _run(model, x)
    assert got.dtype == dtype
    want = _numpy_dft(x.astype("float64"), 1, None, 0, 0)
    np.testing.assert_allclose(got.astype("float64"), want, rtol=tol, atol=tol * 4)


def test_dft_axis_known_at_run_time():
    x = np.random.default_rng(2).standard_normal((3, 4, 5, 2))
    model = _dft_model(x.shape, dict(onesided=0), 20, axis=0, runtime_axis=True)
    ex = irc.compile(from_onnx(model), "llvm")
    vm = irc.vm.VirtualMachine(ex)
    for axis in (0, 1, 2, -2, -3):
        got = vm["main"](irc.tensor(x), irc.tensor(np.array(axis, "int64"))).numpy()
        np.testing.assert_allclose(got, _numpy_dft(x, axis, None, 0, 0), rtol=1e-9,
                                   atol=1e-9)
    with pytest.raises(IRCError, match="axis_not_transformable"):
        vm["main"](irc.tensor(x), irc.tensor(np.array(3, "int64")))


@pytest.mark.parametrize("shape, attrs, axis, length, match", [
    ((2, 8, 3), {}, 1, None, "must end in a dimension of 1 .real. or 2 .complex."),
    ((2, 8, 1), {}, -1, None, "axis -1 is out of range"),
    ((2, 8, 1), {}, 2, None, "axis 2 is out of range"),
    ((2, 8, 1), {}, 1, 0, "dft_length must be positive"),
    ((2, 1, 2), dict(inverse=1, onesided=1), 1, None, "has no default length"),
])
def test_what_dft_does_not_take_is_a_named_error(shape, attrs, axis, length, match):
    model = _dft_model(shape, attrs, 20, axis=axis, length=length)
    with pytest.raises(IRCError, match=match):
        irc.compile(from_onnx(model), "llvm")


def test_a_run_time_dft_length_is_a_named_error():
    node = helper.make_node("DFT", ["x", "n"], ["y"])
    graph = helper.make_graph(
        [node], "dft", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 1]),
                        helper.make_tensor_value_info("n", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    with pytest.raises(IRCError, match="dft_length .input 1. must be known at import time"):
        from_onnx(model)

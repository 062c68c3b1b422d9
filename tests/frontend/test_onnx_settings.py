"""from_onnx's settings are checked against the model (a misspelt name is an error with the
close matches, not a setting silently ignored); operators of a custom domain are
reported with that domain's opset; memory-mapped inputs run."""

import warnings

import numpy as np
import pytest

import irc

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from irc.frontend.onnx import from_onnx  # noqa: E402


def _relu(batch="batch", opsets=(("", 17),), extra_nodes=()):
    nodes = [helper.make_node("Relu", ["input.1"], ["y"], name="r"), *extra_nodes]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [batch, 4])],
        [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, [batch, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v)
                                                   for d, v in opsets])


@pytest.mark.parametrize("kwargs, message", [
    (dict(shape_dict={"input_1": [2, 4]}),
     r"shape_dict names 'input_1', which is not a graph input or a named dimension of one "
     r"of the model \(did you mean 'input.1'"),
    (dict(shape_dict={"btach": 2}), r"shape_dict names 'btach'.*did you mean 'batch'"),
    (dict(shape_dict={"batch": "2"}), r"shape_dict\['batch'\] fixes the named dimension "
                                      r"'batch'; give its size"),
    (dict(shape_dict={"input.1": [2, 4, 1]}), r"has 3 dimensions, but the model declares "
                                              r"input 'input.1' with 2"),
    (dict(shape_dict={"input.1": 2}), r"shape_dict\['input.1'\] must be a list"),
    (dict(shape_dict=[("batch", 2)]), "shape_dict must be a dict"),
    (dict(dtype_dict={"x": "float16"}), r"dtype_dict names 'x', which is not a graph input"),
    (dict(dtype_dict={"input.1": "flaot16"}), r"dtype_dict\['input.1'\]: unknown dtype "
                                              r"'flaot16' \(did you mean 'float16'"),
    (dict(opset=0), "opset must be an ONNX opset version"),
    (dict(opset="17"), "opset must be an ONNX opset version"),
])
def test_settings_that_name_nothing_in_the_model_are_errors(kwargs, message):
    with pytest.raises(irc.IRCError, match=message) as info:
        from_onnx(_relu(), **kwargs)
    if "names" in message:
        assert "graph inputs are 'input.1'; its named dimensions 'batch'" in str(info.value)


def test_known_settings_still_apply():
    mod = from_onnx(_relu(), shape_dict={"batch": 3}, dtype_dict={"input.1": "float32"},
                    opset=17)
    assert 'R.Tensor((3, 4), dtype="float32")' in mod.script()
    mod = from_onnx(_relu(batch=None), shape_dict={"input.1_dim0": 5})  # an unnamed one
    assert "R.Tensor((5, 4)" in mod.script()


def test_a_custom_domain_operator_is_reported_with_its_domain_opset():
    custom = helper.make_node("Frobnicate", ["y"], ["z"], name="f", domain="com.example")
    model = _relu(opsets=(("", 17), ("com.example", 3)), extra_nodes=[custom])
    with pytest.raises(irc.UnsupportedOperatorError,
                       match=r"Frobnicate \(com.example, opset 3\): 1 node, first 'f'"):
        from_onnx(model)
    model = _relu(extra_nodes=[custom])  # the domain is not imported at all
    with pytest.raises(irc.UnsupportedOperatorError,
                       match=r"Frobnicate \(com.example, a domain missing from the model's "
                             r"opset_import\)"):
        from_onnx(model)


def test_a_memory_mapped_input_runs_in_a_compiled_model(tmp_path):
    vm = irc.vm.VirtualMachine(irc.compile(from_onnx(_relu(batch=2)), "llvm"))
    x = np.array([[-1, 2, -3, 4], [5, -6, 7, -8]], "float32")
    path = str(tmp_path / "x.npy")
    np.save(path, x)
    mapped = np.load(path, mmap_mode="r")
    np.testing.assert_array_equal(vm["main"](mapped).numpy(), np.maximum(x, 0))


def test_unsupported_op_error_is_a_deprecated_name():
    import irc.frontend.onnx as onnx_frontend

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert onnx_frontend.UnsupportedOpError is irc.UnsupportedOperatorError
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)

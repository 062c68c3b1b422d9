"""What the ONNX importer leaves out deliberately (``irc.frontend.onnx.registry``:
``REFUSED``, ``REFUSED_USES``, ``REFUSED_DOMAINS``): each is an
``UnsupportedOperatorError`` giving the registry's reason, and the support table lists
the same reasons."""

import numpy as np
import pytest

import irc
from irc.core.diagnostics import IRCError, UnsupportedOperatorError

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from irc.frontend.onnx import from_onnx, supported_ops  # noqa: E402
from irc.frontend.onnx.registry import (  # noqa: E402
    DROPOUT_TRAINING,
    REFUSED,
    REFUSED_DOMAINS,
    REFUSED_USES,
    STRING_TENSORS,
    refusal,
)
from irc.testing.onnx_node_cases import CaseResult, support_table  # noqa: E402


def _model(node, inputs, opset=22, extra_opsets=(), initializers=()):
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in node.output],
        initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)] + [
        helper.make_opsetid(d, v) for d, v in extra_opsets])


@pytest.mark.parametrize("op", sorted(REFUSED))
def test_each_refused_operator_is_unsupported_with_its_reason(op):
    node = helper.make_node(op, ["x"], ["y"])
    model = _model(node, [("x", TensorProto.FLOAT, [2])])
    with pytest.raises(UnsupportedOperatorError) as err:
        from_onnx(model)
    assert REFUSED[op] in err.value.message
    assert op not in supported_ops()


@pytest.mark.parametrize("domain, op", [("ai.onnx.ml", "Normalizer"),
                                        ("ai.onnx.ml", "TreeEnsemble"),
                                        ("ai.onnx.preview.training", "Adam"),
                                        ("ai.onnx.preview.training", "Gradient")])
def test_refused_domains_are_unsupported_with_their_reason(domain, op):
    node = helper.make_node(op, ["x"], ["y"], domain=domain)
    model = _model(node, [("x", TensorProto.FLOAT, [2])], extra_opsets=[(domain, 1)])
    with pytest.raises(UnsupportedOperatorError) as err:
        from_onnx(model)
    assert REFUSED_DOMAINS[domain] in err.value.message
    assert refusal(op, domain) == REFUSED_DOMAINS[domain]


def test_a_string_graph_input_is_unsupported_with_the_strings_reason():
    node = helper.make_node("Identity", ["x"], ["y"])
    with pytest.raises(UnsupportedOperatorError) as err:
        from_onnx(_model(node, [("x", TensorProto.STRING, [2])]))
    assert STRING_TENSORS in err.value.message


def test_a_cast_to_string_inside_a_converter_stays_unsupported():
    node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.STRING)
    with pytest.raises(UnsupportedOperatorError) as err:
        from_onnx(_model(node, [("x", TensorProto.FLOAT, [2])]))
    assert err.value.message.startswith("ONNX node ")
    assert STRING_TENSORS in err.value.message


# -- Dropout in training mode ---------------------------------------------------------


def _dropout(ratio, mode, run_time):
    """Dropout(x, ratio, training_mode) with ratio and mode as constants or as inputs."""
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"], seed=0)
    values = {"r": np.array(ratio, "float32"), "t": np.array(mode)}
    inputs = [("x", TensorProto.FLOAT, [3, 4])]
    if run_time:
        inputs += [("r", TensorProto.FLOAT, []), ("t", TensorProto.BOOL, [])]
        return _model(node, inputs), values
    inits = [numpy_helper.from_array(v, n) for n, v in values.items()]
    return _model(node, inputs, initializers=inits), {}


def _run(model, feeds):
    x = np.arange(12, dtype="float32").reshape(3, 4)
    vm = irc.vm.VirtualMachine(irc.compile(from_onnx(model), "llvm"))
    y, mask = vm["main"](irc.tensor(x), *[irc.tensor(v) for v in feeds.values()])
    return x, y.numpy(), mask.numpy()


def test_constant_training_mode_with_a_ratio_is_unsupported():
    with pytest.raises(UnsupportedOperatorError) as err:
        from_onnx(_dropout(0.5, True, run_time=False)[0])
    assert DROPOUT_TRAINING in err.value.message


@pytest.mark.parametrize("ratio, mode", [(0.5, False), (0.0, True)])
@pytest.mark.parametrize("run_time", [False, True])
def test_dropout_that_drops_nothing_is_the_identity(ratio, mode, run_time):
    x, y, mask = _run(*_dropout(ratio, mode, run_time))
    np.testing.assert_array_equal(y, x)
    assert mask.dtype == bool and mask.all()


def test_run_time_training_mode_with_a_ratio_fails_the_call_naming_it():
    with pytest.raises(IRCError, match="training_mode_is_not_supported"):
        _run(*_dropout(0.5, True, run_time=True))


# -- the support table ----------------------------------------------------------------


def test_the_support_table_lists_every_refusal_with_the_registry_reason():
    results = [CaseResult("test_string_concat", ("StringConcat",), "unsupported",
                          "StringConcat (ai.onnx, opset 20): 1 node, first 'y'; "
                          + REFUSED["StringConcat"]),
               CaseResult("test_relu", ("Relu",), "pass")]
    table = support_table(results)
    row = next(line for line in table.splitlines() if line.startswith("| StringConcat |"))
    assert "| left out |" in row and "0/1" in row and REFUSED["StringConcat"][:60] in row
    assert "first 'y'" not in row  # the node list is left out of the reasons column
    section = table.split("## What irc leaves out, and why", 1)[1]
    for why in (*REFUSED.values(), *REFUSED_USES.values(), *REFUSED_DOMAINS.values()):
        assert why in section
    for op in REFUSED:
        assert f"| {op} | left out" in table

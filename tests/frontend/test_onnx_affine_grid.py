"""ONNX's AffineGrid, through irc's converter and through the function body ONNX defines
for it (the ``_expanded`` node cases: a graph of ``If``s on the size input, one of whose
values is a scalar in one branch and a 1-element vector in the other)."""

import numpy as np
import pytest

import irc

pytest.importorskip("onnx")
from onnx.reference import ReferenceEvaluator

from irc.frontend.onnx import from_onnx
from irc.testing.onnx_node_cases import cases_using, run_case

CASES = {name: c for name, c in cases_using({"AffineGrid", "If"}).items()
         if name.startswith("test_affine_grid")}


# The expanded 3-d bodies take 13 s each: slow (their 2-d twins and the 3-d operator run).
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow)
                                  if "3d" in n and "expanded" in n else n
                                  for n in sorted(CASES)])
def test_every_affine_grid_node_case_passes(name):
    assert len(CASES) == 8
    r = run_case(CASES[name])
    assert r.outcome == "pass", r.message


@pytest.mark.parametrize("dims", [2, pytest.param(3, marks=pytest.mark.slow)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_the_function_body_matches_the_operator_at_every_size(dims, align_corners,
                                                              roundtrip_instrument):
    """The expanded graph compiled once (the sizes are a run-time input), run for sizes
    that take both branches of its ``If``s, against onnx.reference's AffineGrid."""
    base = f"test_affine_grid_{dims}d" + ("_align_corners" if align_corners else "")
    operator = CASES[base].model
    ex = irc.compile(from_onnx(CASES[base + "_expanded"].model), "llvm")
    assert roundtrip_instrument.checked  # every pass's module printed and parsed back
    vm = irc.vm.VirtualMachine(ex)
    rng = np.random.default_rng(dims)
    # N is the model's (2); D = 1 takes the other branch of the 3-D body's If on D
    sizes = [[2, 3, 4, 5], [2, 1, 1, 7], [2, 2, 6, 1]] if dims == 2 else \
        [[2, 3, 4, 5, 6], [2, 2, 1, 3, 2], [2, 1, 3, 2, 4]]
    for size in sizes:
        if align_corners and 1 in size[-2:]:
            continue  # align_corners divides by H - 1 and W - 1: inf in ONNX's body
        theta = rng.standard_normal((2, dims, dims + 1)).astype("float32")
        size = np.array(size, "int64")
        with np.errstate(divide="ignore"):  # the reference divides by D - 1 = 0, unused
            want = ReferenceEvaluator(operator).run(None, {"theta": theta, "size": size})[0]
        got = vm["main"](irc.tensor(theta), irc.tensor(size)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_an_if_output_of_either_rank_broadcasts_to_the_other_operands_rank():
    """The pattern of the 3-D body: an ``If`` on a run-time condition gives a scalar or a
    1-element vector, and a product with a vector has the vector's rank either way."""
    from onnx import TensorProto, helper, numpy_helper

    def branch(name, value):
        out = helper.make_tensor_value_info(name, TensorProto.FLOAT, None)
        return helper.make_graph([helper.make_node("Constant", [], [name], value=value)],
                                 name, [], [out])

    scalar = numpy_helper.from_array(np.array(2.0, "float32"))
    vector = numpy_helper.from_array(np.array([3.0], "float32"))
    nodes = [helper.make_node("If", ["c"], ["s"], then_branch=branch("t", scalar),
                              else_branch=branch("e", vector)),
             helper.make_node("Mul", ["x", "s"], ["y"]),
             helper.make_node("Add", ["s", "x"], ["z"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                     helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    vm = irc.vm.VirtualMachine(irc.compile(from_onnx(model), "llvm"))
    x = np.arange(4, dtype="float32")
    for c in (True, False):
        feeds = {"c": np.array(c), "x": x}
        got = vm["main"](irc.tensor(feeds["c"]), irc.tensor(x))
        for g, w in zip(got, ReferenceEvaluator(model).run(None, feeds)):
            assert g.numpy().shape == (4,)
            np.testing.assert_array_equal(g.numpy(), w)

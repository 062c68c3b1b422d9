"""ONNX's backend node tests through irc (``irc.testing.onnx_node_cases``): every case of
the operators listed here passes in the default run; the whole suite, with its counts, is
the slow test (``pytest -m slow``) and ``python -m irc.testing.onnx_node_cases``."""

import collections

import pytest

pytest.importorskip("onnx")

from irc.testing.onnx_node_cases import collect_cases, failures, run_case

# Operator types every node-test case of which (those whose graph is that operator alone)
# passes; the list grows as converters land.
PASSING = ["Relu", "Sigmoid", "Tanh", "Exp", "Sqrt", "Neg", "Abs", "Floor", "Ceil",
           "MatMul", "Gemm", "Transpose", "Softsign", "LeakyRelu", "Elu", "Selu",
           "HardSigmoid", "Reciprocal", "Sin", "Cos", "Where", "Not", "Flatten",
           "GlobalAveragePool", "GlobalMaxPool", "Pow", "BitCast", "Compress", "NonZero",
           "MaxUnpool"]


@pytest.fixture(scope="module")
def cases():
    return collect_cases()


def _only(cases, op):
    return [c for c in cases if {n.op_type for n in c.model.graph.node} == {op}]


@pytest.mark.parametrize("op", PASSING)
def test_every_case_of_a_supported_operator_passes(cases, op):
    mine = _only(cases, op)
    assert mine, f"no node test case uses {op} alone"
    assert failures(mine) == []


@pytest.mark.slow
def test_the_whole_node_suite_crashes_nowhere(cases):
    results = [run_case(c) for c in cases]
    counts = collections.Counter(r.outcome for r in results)
    print(dict(counts))
    assert counts["crash"] == 0, [r for r in results if r.outcome == "crash"][:5]

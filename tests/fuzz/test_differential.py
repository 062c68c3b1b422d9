"""irc's differential fuzzer (``irc.testing.fuzz``): random valid ONNX models through irc,
compared with ONNX Runtime (ONNX's reference evaluator settling disagreements).

The campaign tests run a fixed seed, as the fuzz tests of this directory do with their
``QUICK`` settings: every model must be ok or a clean refusal — no wrong result, no
crash. The ``slow`` version is the long run of the fuzz campaign (``python -m pytest -m
slow tests/fuzz``; ``irc fuzz --models 2000`` is the same at the command line). The other
tests check the fuzzer itself: the worker pool's crash isolation, the minimiser on
deliberately planted failures, the comparison's tolerances and the generator's
determinism.
"""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("ml_dtypes")

from irc.testing.fuzz import FuzzConfig, builds, generate_case
from irc.testing.fuzz.campaign import CampaignConfig, load_failure, replay, run_campaign
from irc.testing.fuzz.compare import mismatch
from irc.testing.fuzz.evaluate import (
    CRASH,
    INVALID,
    OK,
    WRONG,
    EvalOptions,
    compare_outputs,
    evaluate,
)
from irc.testing.fuzz.minimise import Reduced, minimise
from irc.testing.fuzz.runner import ModelTask, SeedTask, WorkerPool, run_task
from irc.testing.fuzz.values import np_dtype

# The fixed seed of the CI campaign and its number of models (under a minute on one
# worker); the slow campaign runs more.
QUICK_SEED, QUICK_MODELS = 20260, 48
LONG_SEED, LONG_MODELS = 0, 400
# The operator the planted failures are about.
PLANTED = "Tanh"


def _check_campaign(config: CampaignConfig) -> None:
    summary = run_campaign(config, progress=None)
    counts = summary.counts()
    assert counts[WRONG] == 0 and counts[CRASH] == 0, summary.format()
    assert counts[OK] > 0, summary.format()


def test_fixed_seed_campaign_finds_no_wrong_result_and_no_crash():
    _check_campaign(CampaignConfig(models=QUICK_MODELS, seed=QUICK_SEED, jobs=1,
                                   minimise=False))


def test_dispatch_auto_and_tuned_builds_agree_with_the_references():
    """The library-dispatch and tuning-record paths, on models of products and
    convolutions (what libraries and tuned schedules take) and a few others."""
    _check_campaign(CampaignConfig(
        models=4, seed=QUICK_SEED, jobs=1, minimise=False,
        fuzz=FuzzConfig(min_nodes=2, max_nodes=4, ops=("matmul", "conv", "binary"),
                        dtypes=("float32",)),
        options=EvalOptions(builds=("default", "auto", "tuned"))))


@pytest.mark.slow
def test_long_campaign_finds_no_wrong_result_and_no_crash():
    _check_campaign(CampaignConfig(models=LONG_MODELS, seed=LONG_SEED, jobs=2,
                                   minimise=True))


# -- planted failures ----------------------------------------------------------------------

def planted_wrong(model, got, want, sens):
    """A judge that finds every model with a Tanh node wrong."""
    if any(n.op_type == PLANTED for n in model.graph.node):
        return 0, f"planted: {PLANTED} is declared wrong"
    return compare_outputs(model, got, want, sens)


def broken_judge(model, got, want, sens):
    """A judge with a bug of its own."""
    raise KeyError("no such output")


def planted_segfault(model, got, want, sens):
    """A judge that kills its process with SIGSEGV on every model with a Tanh node."""
    if any(n.op_type == PLANTED for n in model.graph.node):
        os.kill(os.getpid(), signal.SIGSEGV)
    return compare_outputs(model, got, want, sens)


def _case_with(op: str, max_nodes: int = 7, min_ops: int = 4):
    """The first generated model (of unary and binary operators) that uses ``op`` with
    other operators around it."""
    config = FuzzConfig(min_nodes=min(5, max_nodes), max_nodes=max_nodes,
                        ops=("unary", "binary"), dtypes=("float32",))
    for seed in range(200):
        case = generate_case(seed, config)
        types = [n.op_type for n in case.model.graph.node if n.op_type != "Constant"]
        if op in types and len(types) >= min_ops:
            return case
    raise AssertionError(f"no model of 200 uses {op}")


def _only_op(reduced: Reduced) -> list[str]:
    return [n.op_type for n in reduced.model.graph.node if n.op_type != "Constant"]


def test_the_minimiser_shrinks_a_planted_wrong_result_to_its_node():
    case = _case_with(PLANTED)
    options = EvalOptions(judge=planted_wrong)
    first = evaluate(case.model, case.inputs, case.perturb, options)
    assert first.kind == WRONG and "planted" in first.reason
    calls = []

    def check(r: Reduced):
        calls.append(r.size)
        return evaluate(r.model, r.inputs, r.perturb, options)

    reduced, checks = minimise(Reduced(case.model, case.inputs, case.perturb), first, check)
    assert _only_op(reduced) == [PLANTED], reduced.model.graph
    assert checks == len(calls) and checks <= 40
    # The reduced model is a valid model that irc gets right without the planted judge.
    assert evaluate(reduced.model, reduced.inputs, reduced.perturb).kind == OK


def test_a_worker_that_dies_is_a_crash_and_the_pool_goes_on():
    """A segfault inside a worker (planted in the judge) is counted as a crash of that
    model; the next models run in a fresh worker."""
    case = _case_with(PLANTED, max_nodes=3, min_ops=1)
    with WorkerPool(1, FuzzConfig(), EvalOptions(judge=planted_segfault),
                    timeout=120) as pool:
        died = pool.run(ModelTask(case.model.SerializeToString(), case.inputs,
                                  case.perturb, seed=7))
        assert died.kind == CRASH and "SIGSEGV" in died.reason, died
        assert died.where == "died: signal SIGSEGV" and died.seed == 7
        after = pool.run(SeedTask(3))
        assert after.kind != CRASH, after


def test_the_minimiser_keeps_the_crash_it_shrinks(monkeypatch):
    """An exception of irc (planted: a ValueError when a Tanh is compiled) is a crash
    named by where it was raised, and the minimiser keeps that crash."""
    real = builds.build

    def crashing(model, path, target="llvm", seed=0):
        if any(n.op_type == PLANTED for n in model.graph.node):
            raise ValueError("planted")
        return real(model, path, target, seed)

    monkeypatch.setattr(builds, "build", crashing)
    case = _case_with(PLANTED)
    first = evaluate(case.model, case.inputs, case.perturb)
    assert first.kind == CRASH and first.reason == "ValueError: planted"
    assert first.where.startswith("ValueError at ") and "test_differential.py" in first.where
    reduced, _ = minimise(Reduced(case.model, case.inputs, case.perturb), first,
                          lambda r: evaluate(r.model, r.inputs, r.perturb))
    assert _only_op(reduced) == [PLANTED]


def test_a_failure_of_the_fuzzer_itself_is_no_verdict_on_irc():
    case = _case_with(PLANTED, max_nodes=3, min_ops=1)
    out = run_task(ModelTask(case.model.SerializeToString(), case.inputs, case.perturb),
                   FuzzConfig(), EvalOptions(judge=broken_judge))
    assert out.kind == INVALID and "the fuzzer failed: KeyError" in out.reason


def test_a_task_past_its_time_is_a_crash():
    with WorkerPool(1, FuzzConfig(), EvalOptions(), timeout=0.01) as pool:
        out = pool.run(SeedTask(5))
    assert out.kind == CRASH and out.where == "timeout", out


def test_a_failing_campaign_saves_the_minimised_failure(tmp_path):
    """The campaign minimises a failure in its pool and saves it: the reduced model, its
    inputs, the model as generated and a summary line."""
    import onnx

    case = _case_with(PLANTED)
    summary = run_campaign(CampaignConfig(
        models=1, seed=case.seed, jobs=1, out=str(tmp_path),
        fuzz=FuzzConfig(min_nodes=5, max_nodes=7, ops=("unary", "binary"),
                        dtypes=("float32",)),
        options=EvalOptions(judge=planted_wrong)), progress=None)
    assert summary.counts()[WRONG] == 1
    (failure,) = summary.failures
    assert failure.checks > 0 and failure.saved
    saved = onnx.load(os.path.join(failure.saved, "model.onnx"))
    assert [n.op_type for n in saved.graph.node if n.op_type != "Constant"] == [PLANTED]
    inputs = np.load(os.path.join(failure.saved, "inputs.npz"))
    assert sorted(inputs.files) == sorted(i.name for i in saved.graph.input)
    assert os.path.exists(os.path.join(failure.saved, "original.onnx"))
    lines = (tmp_path / "failures.txt").read_text().splitlines()
    assert len(lines) == 1 and f"seed {case.seed}" in lines[0] and "planted" in lines[0]
    # repro.py evaluates it again, with the default judge: irc's Tanh is right.
    assert "replay(" in (tmp_path / os.path.basename(failure.saved) / "repro.py").read_text()
    assert replay(failure.saved).kind == OK
    assert load_failure(failure.saved, original=True).size > 1
    text = summary.format()
    assert "wrong 1" in text and "operators (models / compiled / ok)" in text
    assert "not generated" in text or "Constant" in text


# -- the comparison --------------------------------------------------------------------------

def test_a_half_float_sum_is_judged_against_the_model_computed_in_float32():
    """ONNX Runtime has no bfloat16 ReduceSum, and ONNX's reference evaluator sums
    bfloat16 values in bfloat16 (a sum of 3000 ones stalls at 256): ONNX Runtime on the
    model computed in float32 judges irc, which accumulates in float32."""
    import ml_dtypes
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)], "sum",
        [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [3000])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    out = evaluate(model, {"x": np.ones(3000, ml_dtypes.bfloat16)}, ("x",))
    assert out.kind == OK, out.line()
    assert out.notes[0].startswith("judged by onnxruntime on the model computed in float32")
    assert len(out.notes) == 1, out.notes


@pytest.mark.parametrize("dtype, off, same", [
    ("float32", 1e-6, True), ("float32", 1e-2, False),
    ("float16", 2e-3, True), ("float16", 5e-2, False),
    ("bfloat16", 1.5e-2, True), ("bfloat16", 0.2, False),
])
def test_tolerances_depend_on_the_dtype(dtype, off, same):
    want = np.array([1.0, 2.0, -3.0]).astype(np_dtype(dtype))
    got = (np.array([1.0, 2.0, -3.0]) * (1 + off)).astype(np_dtype(dtype))
    assert (mismatch(got, want, np.zeros(3)) is None) == same


def test_integers_compare_exactly_and_nans_must_sit_at_the_same_places():
    assert mismatch(np.array([1, 2], "int32"), np.array([1, 3], "int32"), np.zeros(2))
    assert mismatch(np.array([1, 2], "int32"), np.array([1, 2], "int64"), np.zeros(2))
    nan = np.array([np.nan, 1.0], "float32")
    assert mismatch(nan, nan.copy(), np.zeros(2)) is None
    assert mismatch(np.array([1.0, np.nan], "float32"), nan, np.zeros(2))
    # An integer element that moved when the inputs moved is not compared.
    assert mismatch(np.array([1, 2]), np.array([1, 3]), np.array([0.0, np.inf])) is None


def test_a_seed_names_its_model():
    a, b = generate_case(11), generate_case(11)
    assert a.model.SerializeToString() == b.model.SerializeToString()
    assert all(a.inputs[k].tobytes() == b.inputs[k].tobytes() for k in a.inputs)

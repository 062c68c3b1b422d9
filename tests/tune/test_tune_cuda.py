"""Tuning for ``cuda``: candidates compiled with NVRTC in the builder's workers (no GPU
needed), measured on a GPU by the runner process (tests marked ``cuda``), CUDA faults
recorded as errors while tuning goes on, and the clear errors of a machine that cannot
measure.
"""

from __future__ import annotations

import io
import json
import random

import numpy as np
import pytest
from tune_workloads import matmul

import irc
from irc.core.diagnostics import TuningError
from irc.runtime.cuda_program import CUDAProgramModule
from irc.script_parser import parse
from irc.tune import LocalBuilder, LocalRunner, TuneConfig, TuneTask, ms, tune_tasks
from irc.tune.apply import schedule_from_record
from irc.tune.measure import BUILD_ERROR, RUN_ERROR, MeasureInput
from irc.tune.record import Workload
from irc.tune.space import SpaceGenerator
from irc.tune.tuner import check_gpu_for_measuring

pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVIDIA's cuda-bindings (irc[cuda])")

HAS_GPU = irc.cuda(0).exist

# The same signature as matmul(64)'s, and a write 2^40 floats past the end of C: an
# illegal address on a GPU (a fault that leaves the CUDA context unusable).
FAULTING = """
@T.prim_func
def main(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"),
         C: T.Buffer((64, 64), "float32")):
    for tx in T.thread_binding(64, thread="threadIdx.x"):
        C[T.int64(1099511627776) + T.Cast("int64", tx), 0] = A[tx, 0]
"""


def _gpu_candidates(func, n: int) -> list:
    """``n`` sampled GPU candidates of ``func`` (sketches in turn)."""
    space = SpaceGenerator("cuda")
    sketches = space.generate(func)
    rng = random.Random(0)
    cands = []
    for i in range(20 * n):
        cand = space.sample(func, sketches[i % len(sketches)], rng)
        if cand is not None:
            cands.append(cand)
        if len(cands) == n:
            return cands
    raise AssertionError(f"the GPU space made {len(cands)} of {n} candidates")


def test_builder_compiles_gpu_candidates_with_nvrtc():
    func = matmul(64)
    inputs = [MeasureInput(func, c.trace_json, "cuda") for c in _gpu_candidates(func, 3)]
    inputs.append(MeasureInput(func, None, "cuda", func=parse(FAULTING)))
    builder = LocalBuilder(n_parallel=1)
    try:
        results = builder.build(inputs)
    finally:
        builder.close()
    assert all(r.error_kind == "" for r in results), [r.error_msg for r in results]
    for r in results:
        module = CUDAProgramModule.deserialize(r.artifact)
        assert module.cubin[:4] == b"\x7fELF" and module.entry_name == "main"
        assert "__global__" in module.get_source()


def test_a_gpu_candidate_that_does_not_compile_is_a_build_error():
    # No thread binding: the loop nest would run on the host, which a CUDA build refuses.
    func = matmul(16)
    builder = LocalBuilder(n_parallel=0)
    (result,) = builder.build([MeasureInput(func, None, "cuda")])
    assert result.error_kind == BUILD_ERROR and result.error_msg


@pytest.mark.skipif(HAS_GPU, reason="checks the error of a machine without a GPU")
def test_tuning_for_cuda_without_a_gpu_is_a_clear_error(tmp_path):
    with pytest.raises(TuningError, match="needs an NVIDIA GPU, and this machine has no "
                                          "cuda\\(0\\)"):
        tune_tasks([TuneTask(matmul(32), "cuda")], str(tmp_path / "r.json"), TuneConfig(4))
    assert not (tmp_path / "r.json").exists() or not json.loads(
        (tmp_path / "r.json").read_text() or "[]")


@pytest.mark.cuda
def test_the_target_must_fit_the_gpu():
    attrs = irc.cuda(0).attributes
    other = "sm_52" if attrs.compute_capability != (5, 2) else "sm_90"
    with pytest.raises(TuningError, match=f"architecture sm_{attrs.compute_capability[0]}"):
        check_gpu_for_measuring(irc.target.Target(f"cuda -arch={other}"), 0)
    arch = "sm_{}{}".format(*attrs.compute_capability)
    too_many = attrs.max_threads_per_block * 2
    with pytest.raises(TuningError, match="-max-num-threads"):
        check_gpu_for_measuring(
            irc.target.Target(f"cuda -arch={arch} -max-num-threads={too_many}"), 0)
    check_gpu_for_measuring(irc.target.Target.from_device(irc.cuda(0)), 0)


@pytest.mark.cuda
def test_runner_measures_gpu_candidates_and_survives_a_fault():
    target = irc.target.Target.from_device(irc.cuda(0))
    func = matmul(64)
    good = [MeasureInput(func, c.trace_json, target) for c in _gpu_candidates(func, 2)]
    bad = MeasureInput(func, None, target, func=parse(FAULTING))
    inputs = [good[0], bad, good[1]]
    builder = LocalBuilder(n_parallel=1)
    runner = LocalRunner(check_correctness=True, min_repeat_ms=5)
    try:
        builds = builder.build(inputs)
        results = runner.run(inputs, builds)
    finally:
        builder.close()
        runner.close()
    assert results[0].error_kind == "" and min(results[0].run_secs) > 0
    assert results[1].error_kind == RUN_ERROR
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in results[1].error_msg
    # The fault broke that process's CUDA context; the next candidate got a fresh one.
    assert results[2].error_kind == "" and min(results[2].run_secs) > 0
    assert runner.restarts == 1


@pytest.mark.cuda
def test_tuning_a_matmul_on_the_gpu(tmp_path):
    target = irc.target.Target.from_device(irc.cuda(0))
    func = matmul(128)
    out = io.StringIO()
    db = ms.tune_tir(func, target, str(tmp_path), 16, num_trials_per_iter=8,
                              out=out, verbose=1)
    records = db.get_all_records()
    valid = [r for r in records if r.is_valid]
    assert len(valid) >= 8, out.getvalue()
    best = db.best_record(Workload.from_func(func))
    lib = irc.build(schedule_from_record(func, best).mod["main"], target=target)
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((128, 128)).astype("float32") for _ in range(2))
    dev = irc.cuda(0)
    c = irc.runtime.empty((128, 128), "float32", dev)
    lib(irc.tensor(a, dev), irc.tensor(b, dev), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)

"""Evolutionary search: initial population, GA iterations scored by the cost model,
epsilon-greedy picks, never proposing a candidate twice, the seed-002 log lines, and
candidate evaluation in worker processes."""

from __future__ import annotations

import io
import math

import numpy as np
from tune_workloads import matmul

from irc.tune import NumpyModel, RandomModel, SearchOptions
from irc.tune.search import EvolutionarySearch
from irc.tune.search_pool import EvaluatorPool, Job, JobKind, run_job, space_setup
from irc.tune.space import SpaceGenerator

SMALL = SearchOptions(population_size=24, num_iters=2, init_min_unmeasured=16)


def make_search(model=None):
    out = io.StringIO()
    s = EvolutionarySearch(matmul(64), SpaceGenerator("llvm"), model or RandomModel(seed=0),
                           SMALL, out=out, seed=1)
    return s, out


def test_generate_prints_the_seed_log_and_never_repeats():
    search, out = make_search()
    first = search.generate(6)
    assert len(first) == 6
    assert len({c.trace_key for c in first}) == 6
    log = out.getvalue()
    for line in ("[ Search ]", "Generate Sketches\t\t#s: ", "Sample Initial Population\t#s: ",
                 "GA Iter: 0\tMax score: ", "EvolutionarySearch\t\t#s: 6\tTime elapsed: "):
        assert line in log
    second = search.generate(6)
    keys = {c.trace_key for c in first}
    assert not keys & {c.trace_key for c in second}
    assert search.scored > 0 and search.candidates_per_second > 0


def test_measured_candidates_are_never_proposed():
    search, _ = make_search()
    batch = search.generate(4)
    other, _ = make_search()
    for c in batch:
        other.add_measured(c, 1e-3)
    again = other.generate(8)
    assert not {c.trace_key for c in batch} & {c.trace_key for c in again}


def test_trained_model_runs_ga_iterations_and_prefers_high_scores():
    model = NumpyModel(seed=0)
    search, out = make_search(model)
    batch = search.generate(8)
    # Teach the model: candidates with more vectorized work are "faster".
    costs = [1.0 / (1.0 + float(np.sum(c.features[:, 16]))) for c in batch]
    model.update_features([c.features for c in batch], [search.key] * len(batch), costs)
    search2, out2 = make_search(model)
    picked = search2.generate(4)
    log = out2.getvalue()
    assert "GA Iter: 2" in log and "#M+: " in log
    m_plus = int(log.split("#M+: ")[-1].split()[0])
    assert m_plus > 0
    assert all(math.isfinite(c.score) for c in picked)
    # Greedy picks are the best scored of what the search kept (eps 0.05 of 4 = 0 random).
    assert picked[0].score >= picked[-1].score


def test_pool_and_local_evaluation_agree():
    func = matmul(64)
    space = SpaceGenerator("llvm")
    sketches = space.generate(func)
    jobs = [Job(JobKind.SAMPLE, k % len(sketches), 100 + k) for k in range(8)]
    local = [run_job(func, space, sketches, j) for j in jobs]
    pool = EvaluatorPool(2)
    try:
        remote = pool.run("key", lambda: space_setup(func, space, sketches), jobs,
                          lambda js: [run_job(func, space, sketches, j) for j in js])
        assert pool.failures == 0
    finally:
        pool.close()
    for a, b in zip(local, remote):
        assert a.trace_json == b.trace_json
        np.testing.assert_array_equal(a.features, b.features)
    child = run_job(func, space, sketches, Job(JobKind.MUTATE, 0, 7, local[0].trace_json))
    assert child is None or child.trace_json != local[0].trace_json


def test_pool_resends_a_space_its_workers_evicted():
    """A worker keeps the spaces of its 16 most recent workloads; after more workloads
    than that (ResNet-50 has 30 tasks), the pool sends the first one's space again
    instead of the worker failing with "no search space" and its jobs running in the
    tuning process."""
    from irc.tune.search_pool import _CACHE_SIZE

    func = matmul(16)
    space = SpaceGenerator("llvm")
    sketches = space.generate(func)
    jobs = [Job(JobKind.SAMPLE, k % len(sketches), 100 + k) for k in range(4)]
    setups = []

    def setup():
        setups.append(1)
        return space_setup(func, space, sketches)

    def local(js):
        raise AssertionError("a job ran in the tuning process")

    pool = EvaluatorPool(2)
    try:
        keys = [f"w{k}" for k in range(_CACHE_SIZE + 2)] + ["w0", "w17", "w1"]
        for key in keys:
            out = pool.run(key, setup, jobs, local)
            assert len(out) == len(jobs)
        assert pool.failures == 0
        # A blob per new workload, and again for w0 and w1 (evicted); w17 is recent.
        assert len(setups) == _CACHE_SIZE + 2 + 2
    finally:
        pool.close()

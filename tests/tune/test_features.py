"""Per-store features of scheduled functions."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from tune_workloads import add_one, matmul, matmul_add, perfect_tiles, tiled_matmul

from irc.core.diagnostics import TuningError
from irc.tir import stmt as S
from irc.tir.transform import lower_primfunc
from irc.tune import MeasureInput
from irc.tune.features import (
    FEATURE_NAMES,
    NUM_FEATURES,
    extract_features,
    feature_index,
    features_of_inputs,
)


def feat(rows: np.ndarray, name: str) -> np.ndarray:
    return rows[:, feature_index(name)]


def slog(x: float) -> float:
    return math.log2(1 + x)


def test_layout():
    assert len(FEATURE_NAMES) == NUM_FEATURES == len(set(FEATURE_NAMES))
    with pytest.raises(TuningError, match="no feature"):
        feature_index("nope")


def test_matmul_counts_strides_and_reuse():
    n = 16
    rows = extract_features(matmul(n))
    assert rows.shape == (2, NUM_FEATURES) and rows.dtype == np.float32
    init, update = rows
    # The init store runs once per (i, j): its guard pins the reduction loop.
    assert feat(rows, "outer_prod")[0] == pytest.approx(slog(n * n))
    assert feat(rows, "outer_prod")[1] == pytest.approx(slog(n ** 3))
    # C = C + A*B: one multiply-add per iteration, nothing else in float.
    assert feat(rows, "float_mad")[1] == pytest.approx(slog(n ** 3))
    assert feat(rows, "float_mul")[1] == 0 and feat(rows, "float_addsub")[1] == 0
    assert feat(rows, "num_loops")[1] == pytest.approx(slog(3))
    # Innermost loop k: C[i, j] stays, A[i, k] moves by 1, B[k, j] moves by n.
    strides = sorted(feat(update[None], f"B{b}.stride")[0] for b in range(3))
    assert strides == pytest.approx([0.0, slog(1), slog(n)])
    assert feat(rows, "B0.acc_readwrite")[1] + feat(rows, "B1.acc_readwrite")[1] \
        + feat(rows, "B2.acc_readwrite")[1] == 1  # C is read and written
    for b in range(3):
        if feat(rows, f"B{b}.acc_readwrite")[1]:
            # C[i, j] does not move with the innermost k loop: reused n times.
            assert feat(rows, f"B{b}.reuse_loop")[1] == 1
            assert feat(rows, f"B{b}.reuse_ct")[1] == pytest.approx(slog(n))
    # No vector, unroll or parallel loops.
    assert feat(rows, "vec_pos_none")[1] == feat(rows, "parallel_pos_none")[1] == 1


def test_tiled_schedule_features():
    rows = extract_features(tiled_matmul(512))
    update = rows[1:2]
    assert feat(update, "vec_num")[0] == 1
    assert feat(update, "vec_len")[0] == pytest.approx(slog(16))
    assert feat(update, "vec_pos_inner")[0] == 1
    assert feat(update, "parallel_len")[0] == pytest.approx(slog(8))
    assert feat(update, "parallel_pos_outer")[0] == 1
    assert feat(update, "auto_unroll_max_step")[0] == pytest.approx(slog(16))
    assert feat(update, "num_loops")[0] == pytest.approx(slog(10))
    assert feat(update, "float_mad")[0] == pytest.approx(slog(512 ** 3))
    # Different tilings give different feature vectors.
    other = extract_features(tiled_matmul(512, (2, 16, 4, 4), (4, 4, 2, 16), (64, 8)))
    assert not np.array_equal(rows, other)


def test_lowered_vector_code_counts_lanes():
    func = lower_primfunc(tiled_matmul(64, (2, 2, 2, 8), (1, 2, 2, 16), (16, 4), unroll_step=0))
    rows = extract_features(func, lowered=True)
    assert rows.shape[0] >= 2
    assert feat(rows, "vec_len").max() == pytest.approx(slog(16))
    assert feat(rows, "float_mad").max() > 0


def test_allocation_and_elementwise_features():
    rows = extract_features(matmul_add(32))
    assert rows.shape[0] == 3  # init, update, out
    # The matmul intermediate is a local allocation of 32*32 floats.
    assert feat(rows, "alloc_size")[1] == pytest.approx(slog(32 * 32 * 4))
    assert feat(rows, "float_addsub")[2] == pytest.approx(slog(32 * 32))
    ew = extract_features(add_one(100))
    assert ew.shape[0] == 1 and feat(ew, "float_addsub")[0] == pytest.approx(slog(100))
    assert feat(ew, "B0.bytes")[0] == pytest.approx(slog(400))


def test_gpu_thread_extents():
    func = add_one(256)
    loop = func.body.block.body
    bound = loop.replace(kind="thread_binding", thread_tag="threadIdx.x")
    gpu = func.replace(body=func.body.replace(block=func.body.block.replace(body=bound)))
    rows = extract_features(gpu)
    assert feat(rows, "is_gpu")[0] == 1
    assert feat(rows, "gpu_threadIdx.x")[0] == pytest.approx(slog(256))


def test_function_without_stores_and_bad_input():
    func = add_one(8)
    empty = func.replace(body=S.no_op())
    assert extract_features(empty, lowered=True).shape == (0, NUM_FEATURES)
    with pytest.raises(TuningError, match="PrimFunc"):
        extract_features("nope")


def test_features_of_inputs_are_cached():
    inp = MeasureInput(matmul(8), ["scheduled"], func=tiled_matmul(64, (1, 2, 2, 16),
                                                                     (1, 2, 2, 16), (16, 4)))
    first = features_of_inputs([inp])[0]
    assert inp.features is not None and first.shape[1] == NUM_FEATURES
    assert features_of_inputs([inp])[0] is inp.features


def test_extraction_throughput(capsys):
    """Scores the extraction speed on 3-level tiled 512^3 matmuls (printed, not asserted:
    tests never assert timings)."""
    rng = np.random.default_rng(0)
    funcs = [tiled_matmul(512, perfect_tiles(512, 4, rng), perfect_tiles(512, 4, rng),
                          perfect_tiles(512, 2, rng)) for _ in range(40)]
    t0 = time.perf_counter()
    for f in funcs:
        assert extract_features(f).shape[0] == 2
    rate = len(funcs) / (time.perf_counter() - t0)
    with capsys.disabled():
        print(f"\nfeature extraction (lowering included): {rate:.0f} candidates/s "
              "on tiled 512^3 matmuls")

"""The template-free search space: sketches from rules, candidates from sketches
(postprocessed, numerically correct), mutators, validation."""

from __future__ import annotations

import random

import numpy as np
import pytest
from tune_workloads import add_one, matmul

import irc
from irc import te, topi
from irc.testing import ref
from irc.tir import Schedule
from irc.tir import expr as E
from irc.tir import stmt as S
from irc.tir.schedule import Trace, pack_params
from irc.tir.schedule.block_info import index_of, realize_of
from irc.tune import extract_features
from irc.tune.space import (
    MultiLevelTiling,
    MutateParallel,
    MutateTileSize,
    MutateUnroll,
    SpaceGenerator,
    TargetInfo,
    VerifyGPUCode,
    VerifyLoopBounds,
)
from irc.tune.space.analysis import needs_multi_level_tiling


def matmul_add(n: int = 64):
    """Seed 002's workload with its layout-free weight."""
    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    c = te.placeholder((n, n), name="C")
    k = te.reduce_axis((0, n), name="k")
    mm = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="matmul",
                    attrs={"layout_free_placeholders": [b]})
    out = te.compute((n, n), lambda i, j: mm[i, j] + c[i, j], name="out")
    return te.create_prim_func([a, b, c, out])


def conv_bias_relu(ci: int = 8, co: int = 16, hw: int = 7):
    """Seed 000's conv2d + bias + relu (NCHW, 3x3, pad 1)."""
    data = te.placeholder((1, ci, hw, hw), name="data")
    kernel = te.placeholder((co, ci, 3, 3), name="kernel")
    bias = te.placeholder((1, co, 1, 1), name="bias")
    conv = topi.nn.conv2d_nchw(data, kernel, (1, 1), (1, 1), dilation=1, out_dtype="float32")
    out = topi.nn.relu(conv + bias)
    return te.create_prim_func([data, kernel, bias, out])


def run(func, arrays):
    """Build ``func`` and run it on copies of ``arrays`` (packing rewritten weights)."""
    rt = irc.build(func, target="llvm")
    args = [irc.tensor(a) for a in pack_params(func, *[a.copy() for a in arrays])]
    rt(*args)
    return [a.numpy() for a in args]


def kinds(func):
    """Loop kinds of the lowered function (parallel, vectorized loops became vectors)."""
    text = irc.lower(func).script()
    return {"parallel": "T.parallel" in text, "vector": "T.Broadcast" in text or "T.Ramp" in
            text or ":" in text.split("def main")[1]}


def test_matmul_add_sketches_tile_and_cache():
    sp = SpaceGenerator("llvm")
    sketches = sp.generate(matmul_add(64))
    assert 3 <= len(sketches) <= 6
    texts = [s.trace.as_python() for s in sketches]
    assert all("sample_perfect_tile" in t for t in texts)
    assert sum("cache_write" in t for t in texts) == 2  # accumulator at tile level 1 or 2
    assert any("reverse_compute_inline" in t for t in texts)  # + C fused into the write-back
    assert all("meta_schedule.unroll_explicit" in t for t in texts)


def test_candidates_are_correct_and_postprocessed():
    func = matmul_add(64)
    sp = SpaceGenerator("llvm")
    sketches = sp.generate(func)
    rng = random.Random(0)
    data = np.random.default_rng(0)
    a, b, c = (data.random((64, 64), dtype=np.float32) for _ in range(3))
    want = a @ b + c
    for k in range(6):
        cand = sp.sample(func, sketches[k % len(sketches)], rng)
        assert cand is not None
        f = cand.func
        root = f.body.block
        assert not any(key.startswith("meta_schedule") for key in root.annotations)
        assert f.attrs.get("layout_rewrite"), "the layout-free weight B is packed"
        text = f.script()
        assert "matmul_init" in text  # RewriteReductionBlock decomposed the reduction
        out = run(f, [a, b, c, np.zeros_like(a)])[3]
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
        # The stored trace replays to the same program.
        again = sp.replay(func, cand.trace_json)
        np.testing.assert_array_equal(extract_features(again.func), extract_features(f))


def test_elementwise_gets_parallel_and_vector_loops():
    func = add_one(4096)
    sp = SpaceGenerator("llvm")
    sketches = sp.generate(func)
    assert len(sketches) == 1
    seen_parallel = False
    rng = random.Random(1)
    for _ in range(8):
        cand = sp.sample(func, sketches[0], rng)
        assert cand is not None
        text = cand.trace.as_python()
        assert "sch.vectorize" in text
        seen_parallel |= "sch.parallel" in text
        x = np.arange(4096, dtype=np.float32)
        np.testing.assert_allclose(run(cand.func, [x, np.zeros_like(x)])[1], x + 1)
    assert seen_parallel


def test_conv_padding_stays_a_sampled_compute_location():
    func = conv_bias_relu()
    sp = SpaceGenerator("llvm")
    sketches = sp.generate(func)
    texts = [s.trace.as_python() for s in sketches]
    # T_add is inlined into T_relu; pad_temp (an if_then_else) is placed by sampling.
    assert all('get_block(name="T_add"' not in t or "compute_inline" in t for t in texts)
    assert all("sample_compute_location" in t for t in texts)
    rng = random.Random(2)
    g = np.random.default_rng(1)
    data = g.random((1, 8, 7, 7), dtype=np.float32)
    kernel = g.random((16, 8, 3, 3), dtype=np.float32)
    bias = g.random((1, 16, 1, 1), dtype=np.float32)
    want = np.maximum(ref.conv2d_nchw(data, kernel, padding=1) + bias, 0)
    for k in range(4):
        cand = sp.sample(func, sketches[k % len(sketches)], rng)
        assert cand is not None
        out = run(cand.func, [data, kernel, bias, np.zeros((1, 16, 7, 7), np.float32)])[3]
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_mutators_change_one_decision():
    func = matmul(64)
    sp = SpaceGenerator("llvm")
    sketch = sp.generate(func)[0]
    rng = random.Random(3)
    cand = sp.sample(func, sketch, rng)
    trace = cand.sketch_trace()
    inst, tiles = MutateTileSize().apply(trace, rng)
    assert inst.kind.name == "SamplePerfectTile"
    assert np.prod(tiles) == np.prod(trace.decisions[inst]) and tiles != trace.decisions[inst]
    inst, choice = MutateUnroll().apply(trace, rng)
    assert inst.kind.name == "SampleCategorical" and choice != trace.decisions[inst]
    inst, choice = MutateParallel().apply(trace, rng)
    assert choice != trace.decisions[inst]
    made = [sp.mutate(func, cand, rng) for _ in range(10)]
    assert sum(m is not None for m in made) >= 8
    a = np.random.default_rng(2).random((64, 64), dtype=np.float32)
    for m in made:
        if m is not None:
            out = run(m.func, [a, a, np.zeros_like(a)])[2]
            np.testing.assert_allclose(out, a @ a, rtol=1e-4, atol=1e-4)


def test_mutated_trace_respects_max_innermost_factor():
    func = matmul(256)
    sp = SpaceGenerator("llvm")
    cand = sp.sample(func, sp.generate(func)[0], random.Random(4))
    trace = cand.sketch_trace()
    rng = random.Random(5)
    for _ in range(50):
        inst, tiles = MutateTileSize().apply(trace, rng)
        limit = inst.attrs[1]
        assert tiles[-1] <= limit


def test_multi_level_tiling_only_for_reuse():
    sch = Schedule(matmul(32))
    r = realize_of(sch, sch.get_block("C"))
    assert needs_multi_level_tiling(r, index_of(sch).loops_above(r))
    sch2 = Schedule(add_one(32))
    r2 = realize_of(sch2, sch2.get_block("B"))
    assert not needs_multi_level_tiling(r2, index_of(sch2).loops_above(r2))


def test_rfactor_sketch_for_a_long_reduction():
    n = 4096
    a = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, n), name="k")
    s = te.compute((1,), lambda i: te.sum(a[k] * a[k], axis=k), name="S")
    func = te.create_prim_func([a, s])
    sp = SpaceGenerator("llvm")
    sketches = sp.generate(func)
    assert any("rfactor" in sk.trace.as_python() for sk in sketches)
    rf = next(sk for sk in sketches if "rfactor" in sk.trace.as_python())
    rng = random.Random(6)
    x = np.random.default_rng(3).random(n, dtype=np.float32)
    for _ in range(3):
        cand = sp.sample(func, rf, rng)
        assert cand is not None
        out = run(cand.func, [x, np.zeros(1, np.float32)])[1]
        np.testing.assert_allclose(out, [np.dot(x, x)], rtol=1e-4)


def test_verify_loop_bounds_rejects_symbolic_loops():
    n = E.Var(name="n", dtype="int32")
    a = te.placeholder((n,), name="A")
    b = te.compute((n,), lambda i: a[i] * 2.0, name="B")
    sch = Schedule(te.create_prim_func([a, b]))
    p = VerifyLoopBounds()
    p.initialize(TargetInfo.of("llvm"))
    assert not p.apply(sch)
    sch2 = Schedule(add_one(16))
    assert p.apply(sch2)


def test_gpu_space_binds_threads_and_stages_shared_memory():
    func = matmul(128)
    sp = SpaceGenerator("cuda")
    sketches = sp.generate(func)
    tiled = [s for s in sketches if "blockIdx.x" in s.trace.as_python()]
    assert tiled
    text = tiled[0].trace.as_python()
    assert "threadIdx.x" in text and "vthread.x" in text
    assert 'storage_scope="shared"' in text and 'storage_scope="local"' in text
    rng = random.Random(7)
    made = [sp.sample(func, tiled[0], rng) for _ in range(12)]
    good = [m for m in made if m is not None]
    assert good, "some candidates fit the GPU's limits"
    for m in good:
        loops = [lp for lp in _all_loops(m.func.body) if lp.kind == "thread_binding"
                 and lp.thread_tag == "threadIdx.x"]
        assert loops and all(lp.extent.value <= 1024 for lp in loops)
    tight = VerifyGPUCode()
    tight.initialize(TargetInfo(is_gpu=True, num_cores=1, vector_bytes=16,
                                max_threads_per_block=1, max_shared_memory_per_block=16))
    sch = Schedule(func)
    Trace.from_json(good[0].trace_json).apply_to_schedule(sch)
    assert not tight.apply(sch)


def _all_loops(stmt):
    out, stack = [], [stmt]
    while stack:
        s = stack.pop()
        if isinstance(s, S.For):
            out.append(s)
            stack.append(s.body)
        elif isinstance(s, S.SeqStmt):
            stack.extend(s.seq)
        elif isinstance(s, S.BlockRealize):
            stack.append(s.block.body)
            if s.block.init is not None:
                stack.append(s.block.init)
    return out


def test_unknown_tiling_structure_is_an_irc_error():
    with pytest.raises(irc.IRCError, match="tiling structure"):
        MultiLevelTiling("SXS")


def test_space_of_a_non_function_is_an_irc_error():
    with pytest.raises(irc.TuningError, match="PrimFunc"):
        SpaceGenerator("llvm").generate("not a function")


def test_nchw_conv_gets_a_channel_vectorized_layout_sketch():
    """7 output columns cannot fill a vector; a sketch vectorizes the output channels,
    with the accumulator and the weight tile transformed to put channels last."""
    func = conv_bias_relu(ci=16, co=32)
    sp = SpaceGenerator("llvm")
    sketches = sp.generate(func)
    variant = [s for s in sketches if "transform_layout" in s.trace.as_python()]
    assert len(variant) == 1
    text = variant[0].trace.as_python()
    assert 'cache_read(block=' in text and 'storage_scope="global"' in text
    g = np.random.default_rng(4)
    data = g.random((1, 16, 7, 7), dtype=np.float32)
    kernel = g.random((32, 16, 3, 3), dtype=np.float32)
    bias = g.random((1, 32, 1, 1), dtype=np.float32)
    want = np.maximum(ref.conv2d_nchw(data, kernel, padding=1) + bias, 0)
    rng = random.Random(8)
    for _ in range(3):
        cand = sp.sample(func, variant[0], rng)
        assert cand is not None
        out = run(cand.func, [data, kernel, bias, np.zeros((1, 32, 7, 7), np.float32)])[3]
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)

"""The GPU rules on small shapes: each kernel kind goes to the expected rule, the
scheduled loop IR is valid thread-bound IR within the target's limits, and the
interpreter (which runs GPU threads one after another) computes what the unscheduled
function computes."""

import pytest
from dlight_helpers import assert_same_as_unscheduled, graph, kernels, loop_kinds

import irc
from irc import dlight as dl
from irc import te
from irc.core.diagnostics import ScheduleError
from irc.target import Target
from irc.tir.interpreter import run as interpret  # noqa: F401 - the oracle, via helpers

RULES = dl.gpu.default_rules


def _first(func, target="cuda"):
    t = Target(target)
    for rule in RULES():
        try:
            sch = rule.apply(func, t)
        except irc.IRCError:
            sch = None
        if sch is not None:
            return rule.name, sch.mod["main"]
    return None, None


def _main(ks):
    for f in ks.values():
        if "T.init()" in f.script():
            return f
    return next(iter(ks.values()))


CASES = [
    ("matmul_bias_relu", {"x": (64, 48), "w": (48, 32), "b": (32,)}, """
        mm = R.matmul(x, w, out_dtype="void")
        a = R.add(mm, b)
        gv = R.nn.relu(a)
     """, (64, 32), "Matmul"),
    ("batch_matmul", {"x": (2, 32, 16), "w": (2, 16, 64)}, """
        gv = R.matmul(x, w, out_dtype="void")
     """, (2, 32, 64), "Matmul"),
    # A dense layer on [batch, seq, k]: two row loops, the inner one tiled, the outer
    # one in the grid with it (epilogue: bias and a residual add).
    ("dense_3d_bias_residual", {"x": (2, 32, 48), "w": (48, 32), "b": (32,),
                                "r": (2, 32, 32)}, """
        mm = R.matmul(x, w, out_dtype="void")
        a = R.add(mm, b)
        gv = R.add(a, r)
     """, (2, 32, 32), "Matmul"),
    ("dense_3d_rows_of_16", {"x": (3, 16, 24), "w": (24, 64)}, """
        gv = R.matmul(x, w, out_dtype="void")
     """, (3, 16, 64), "Matmul"),
    ("gemv_seed_shape", {"x": (1, 256), "w": (256, 10)}, """
        gv = R.matmul(x, w, out_dtype="void")
     """, (1, 10), "Reduction"),
    ("row_sum", {"x": (6, 200)}, "gv = R.sum(x, axis=[1])", (6,), "GEMV"),
    ("mean_middle_axis", {"x": (4, 16, 40)}, "gv = R.mean(x, axis=[1])", (4, 40), "Reduction"),
    ("softmax", {"x": (4, 100)}, "gv = R.nn.softmax(x, axis=-1)", (4, 100), "GeneralReduction"),
    ("layer_norm", {"x": (2, 8, 96), "g": (96,), "b": (96,)},
     "gv = R.nn.layer_norm(x, g, b, axes=[-1])", (2, 8, 96), "GeneralReduction"),
    ("conv_nchw", {"x": (1, 4, 8, 8), "w": (8, 4, 3, 3)},
     "gv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])", (1, 8, 8, 8), None),
    ("max_pool", {"x": (1, 4, 8, 8)},
     "gv = R.nn.max_pool2d(x, pool_size=[2, 2], strides=[2, 2])", (1, 4, 4, 4), None),
    ("elementwise", {"x": (5, 300), "y": (300,)}, """
        a = R.add(x, y)
        gv = R.nn.relu(a)
     """, (5, 300), "Fallback"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gpu_rule_choice_and_numerics(case):
    _, params, body, out, rule = case
    ks = kernels(graph(params, body, out))
    for name, before in ks.items():
        got_rule, after = _first(before)
        assert after is not None, name
        if before is _main(ks) and rule is not None:
            assert got_rule == rule
        kinds = loop_kinds(after)
        assert any(k.startswith("blockIdx") for k in kinds)
        dl.gpu.utils.verify_gpu_func(after, Target("cuda"))
        assert_same_as_unscheduled(before, after, gpu=True, rtol=1e-4, atol=1e-5)


def _nt_matmul(n=4, m=32, k=64):
    a = te.placeholder((n, k), name="A")
    b = te.placeholder((m, k), name="B")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, r] * b[j, r], axis=r), name="C")
    return te.create_prim_func([a, b, c])


def test_gemv_puts_the_reduction_on_threadidx_x():
    before = _nt_matmul()
    name, after = _first(before)
    assert name == "GEMV"
    text = after.script()
    assert 'thread="threadIdx.x"' in text and 'scope="shared"' in text
    assert_same_as_unscheduled(before, after, gpu=True)


def test_matmul_uses_shared_memory_tiles_and_local_accumulators():
    ks = kernels(graph({"x": (64, 48), "w": (48, 32)}, "gv = R.matmul(x, w, out_dtype=\"void\")",
                       (64, 32)))
    before = next(iter(ks.values()))
    name, after = _first(before)
    assert name == "Matmul"
    text = after.script()
    assert text.count('scope="shared"') == 2 and 'scope="local"' in text
    assert {"blockIdx.x", "blockIdx.y", "threadIdx.x", "threadIdx.y"} <= set(loop_kinds(after))


def test_thread_limit_of_the_target_is_respected():
    ks = kernels(graph({"x": (64, 48), "w": (48, 32)}, "gv = R.matmul(x, w, out_dtype=\"void\")",
                       (64, 32)))
    before = next(iter(ks.values()))
    for limit in (64, 16):  # the tiles shrink to fit (16 threads: a 16 x 16 tile)
        t = Target(f"cuda -max-num-threads {limit}")
        after = dl.gpu.Matmul().apply(before, t).mod["main"]
        dl.gpu.utils.verify_gpu_func(after, t)
        assert_same_as_unscheduled(before, after, gpu=True)
    t = Target("cuda -max-num-threads 8")
    assert dl.gpu.Matmul().apply(before, t) is None  # even a 16 x 16 tile needs 16
    name, after = _first(before, "cuda -max-num-threads 8")
    assert name is not None
    dl.gpu.utils.verify_gpu_func(after, t)
    assert_same_as_unscheduled(before, after, gpu=True)


def test_shared_memory_limit_makes_matmul_decline():
    ks = kernels(graph({"x": (64, 48), "w": (48, 32)}, "gv = R.matmul(x, w, out_dtype=\"void\")",
                       (64, 32)))
    before = next(iter(ks.values()))
    t = Target("cuda -max-shared-memory-per-block 1024")
    with pytest.raises(ScheduleError, match="shared memory"):
        dl.gpu.Matmul().apply(before, t)
    mod = irc.IRModule(functions={"mm": before})
    with t:
        out = dl.ApplyDefaultSchedule(*RULES())(mod)
    assert out["mm"].attrs.get("tir.is_scheduled")
    assert 'scope="shared"' not in out["mm"].script() or "_rf" in out["mm"].script()


def test_verify_rejects_unbound_blocks_and_too_many_threads():
    ks = kernels(graph({"x": (5, 300)}, "gv = R.nn.relu(x)", (5, 300)))
    before = next(iter(ks.values()))
    with pytest.raises(ScheduleError, match="not inside a loop bound"):
        dl.gpu.utils.verify_gpu_func(before, Target("cuda"))
    sch = irc.tir.Schedule(before)
    i, j = sch.get_loops(sch.get_block("T_relu"))
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    with pytest.raises(ScheduleError, match="300 threads"):
        dl.gpu.utils.verify_gpu_func(sch.mod["main"], Target("cuda -max-num-threads 256"))


def test_fallback_splits_by_the_thread_limit():
    ks = kernels(graph({"x": (256, 10)}, "gv = R.permute_dims(x, axes=None)", (10, 256)))
    before = next(iter(ks.values()))
    with Target("cuda -max-num-threads 128"):
        sch = dl.gpu.Fallback().apply(before, Target.current())
    text = sch.mod["main"].script()
    assert "T.thread_binding(T.int64(20), thread=\"blockIdx.x\")" in text
    assert "T.thread_binding(T.int64(128), thread=\"threadIdx.x\")" in text


@pytest.mark.parametrize("body, out", [
    ("gv = R.mean(x)", ()),  # a whole-tensor reduction: one thread sums serially
    ("gv = R.max(x)", ()),
])
def test_fallback_runs_scalar_results_in_one_thread(body, out):
    ks = kernels(graph({"x": (6, 5)}, body, out))
    for before in ks.values():
        with Target("cuda"):
            sch = dl.gpu.Fallback().apply(before, Target.current())
        text = sch.mod["main"].script()
        assert 'thread="threadIdx.x"' in text
        assert_same_as_unscheduled(before, sch.mod["main"], gpu=True)

"""Parallel loops choose their thread count from their work: a constant for static work,
computed at run time where an extent is symbolic (``codegen/llvm_parallel.py``)."""

import re

import numpy as np
import pytest
from llvm_kernels import buf, func, loop, ramp, store

import irc
from irc import tir
from irc.codegen import codegen_llvm
from irc.codegen.llvm_parallel import (
    BACKOFF_MAX_CYCLES,
    BACKOFF_MIN_CYCLES,
    BARRIER_WAIT_CYCLES,
    UNKNOWN_EXTENT,
    WORK_PER_THREAD,
    loop_work,
)
from irc.runtime import engine
from irc.tir import expr as E
from irc.tir import stmt as S

TARGET = "llvm -num-cores 4"


def _team_size() -> E.Call:
    """``omp_get_num_threads()``: 1 on the calling thread outside a region, else the
    size of the region's team."""
    return E.Call(dtype="int32", op="call_extern",
                  args=(E.StringImm(value="omp_get_num_threads"),))


def _team_and_count(extent_of):
    """A parallel loop over ``extent_of(n)`` iterations writing, per iteration, the team
    size that ran it and a count (to check that each iteration runs once)."""
    n = tir.var("n")
    team, count = buf("team", (n,), "int32"), buf("count", (n,), "int32")
    i = tir.var("i")
    body = tir.seq(store(team, i, _team_size()), store(count, i, count[i] + 1))
    return func([team, count], loop(i, extent_of(n), body, kind="parallel"))


def test_symbolic_extent_threads_follow_the_work():
    mod = irc.build(_team_and_count(lambda n: n), target=TARGET)
    # Two stores per iteration: one thread per WORK_PER_THREAD / 2 iterations, at most 4.
    per_thread = WORK_PER_THREAD // 2
    for extent, threads in ((0, 1), (1, 1), (1000, 1), (2 * per_thread - 1, 1),
                            (2 * per_thread, 2), (3 * per_thread + 5, 3), (9 * per_thread, 4)):
        team, count = np.zeros(extent, "int32"), np.zeros(extent, "int32")
        engine.hold_parallel_regions(False)  # a loaded machine may have held the team back
        mod["main"](team, count)
        np.testing.assert_array_equal(count, np.ones(extent, "int32"), err_msg=str(extent))
        np.testing.assert_array_equal(team, np.full(extent, threads, "int32"),
                                      err_msg=str(extent))


def test_symbolic_inner_extent_gates_a_static_loop():
    # Three iterations of a symbolic inner loop: at most three threads, whatever the work.
    m = tir.var("m")
    team, acc = buf("team", (3,), "int32"), buf("acc", (3, m), "float32")
    i, j = tir.var("i"), tir.var("j")
    body = tir.seq(store(team, i, _team_size()),
                   loop(j, m, store(acc, (i, j), acc[i, j] + 1.0)))
    mod = irc.build(func([team, acc], loop(i, 3, body, kind="parallel")), target=TARGET)
    for cols, threads in ((16, 1), (WORK_PER_THREAD, 3)):
        t, a = np.zeros(3, "int32"), np.zeros((3, cols), "float32")
        engine.hold_parallel_regions(False)
        mod["main"](t, a)
        np.testing.assert_array_equal(a, np.ones((3, cols), "float32"))
        np.testing.assert_array_equal(t, np.full(3, threads, "int32"))


def test_static_loop_threads_capped_by_its_iterations():
    # Static work: the region is entered, with no more threads than iterations.
    for extent, threads in ((2, 2), (64, 4)):
        team = buf("team", (extent,), "int32")
        i = tir.var("i")
        mod = irc.build(func([team], loop(i, extent, store(team, i, _team_size()),
                                          kind="parallel")), target=TARGET)
        t = np.zeros(extent, "int32")
        engine.hold_parallel_regions(False)
        mod["main"](t)
        np.testing.assert_array_equal(t, np.full(extent, threads, "int32"))


def test_regions_run_on_one_thread_while_held():
    # After regions waited for a descheduled thread, the next ones run on the calling
    # thread for a while; released, the team is used again.
    team = buf("team", (64,), "int32")
    i = tir.var("i")
    mod = irc.build(func([team], loop(i, 64, store(team, i, _team_size()),
                                      kind="parallel")), target=TARGET)
    t = np.zeros(64, "int32")
    try:
        engine.hold_parallel_regions(True)
        mod["main"](t)
        assert (t == 1).all() and engine.parallel_regions_held()
        engine.hold_parallel_regions(False)
        mod["main"](t)
        assert (t == 4).all()
    finally:
        engine.hold_parallel_regions(False)


def test_generated_code_holds_the_team_back_after_two_late_regions():
    team = buf("team", (64,), "int32")
    i = tir.var("i")
    text = codegen_llvm({"main": func([team], loop(i, 64, store(team, i, _team_size()),
                                                   kind="parallel"))}, TARGET).text
    for sym in ("@irc_parallel_until", "@irc_parallel_hold", "@irc_parallel_strikes"):
        assert sym in text
    assert text.count("call i64 @llvm.readcyclecounter()") >= 4
    for c in (BARRIER_WAIT_CYCLES, BACKOFF_MIN_CYCLES, BACKOFF_MAX_CYCLES):
        assert str(c) in text


def test_generated_code_gates_symbolic_loops_at_run_time():
    def text(f):
        return codegen_llvm({"main": f}, TARGET).text

    dynamic = text(_team_and_count(lambda n: n))
    call = re.search(r"call void @GOMP_parallel\(ptr @main_parallel_0, ptr %[\w.]+, "
                     r"i32 (%[\w.]+), i32 0\)", dynamic)
    assert call, dynamic
    threads = call.group(1)
    # threads = min(work / WORK_PER_THREAD, extent, cores), and no region under two.
    assert re.search(rf"sdiv i64 %[\w.]+, {WORK_PER_THREAD}\n", dynamic)
    assert re.search(rf"icmp sgt i32 {re.escape(threads)}, 1", dynamic)
    assert "call void @main_parallel_0(ptr %" in dynamic  # the path on this thread

    def static(extent):
        team = buf("team", (extent,), "int32")
        i = tir.var("i")
        return text(func([team], loop(i, extent, store(team, i, _team_size()),
                                      kind="parallel")))

    assert re.search(r"@GOMP_parallel\(ptr @main_parallel_0, ptr %[\w.]+, i32 4, i32 0\)",
                     static(1000))
    assert re.search(r"@GOMP_parallel\(ptr @main_parallel_0, ptr %[\w.]+, i32 3, i32 0\)",
                     static(3))
    one = static(1)
    assert "GOMP_parallel" not in one and "call void @main_parallel_0(ptr %" in one


def test_loop_work_estimate():
    n, m = tir.var("n"), tir.var("m")
    a = buf("a", (n, 64))
    i, j, k = tir.var("i"), tir.var("j"), tir.var("k")
    bound = {id(n), id(m)}

    def work(body, extent=n):
        return loop_work(S.For(loop_var=i, min=tir.const(0), extent=extent, kind="parallel",
                               body=body), bound)

    vec = store(a, (i, ramp(0, 16)), a[i, ramp(0, 16)] * 2.0)  # 16 lanes
    assert E.as_int(work(vec, tir.const(8))) == 8 * 16
    branch = S.IfThenElse(condition=i < 3, then_case=loop(j, 4, vec),
                          else_case=store(a, (i, 0), 1.0))
    assert E.as_int(work(branch, tir.const(8))) == 8 * 4 * 16  # the larger side
    # An inner extent using the loop variable is taken at the first iteration.
    tri = loop(j, m - i, store(a, (i, j), 0.0))
    got = work(tri)
    assert E.as_int(got) is None
    assert _evaluate(got, {id(n): 10, id(m): 7}) == 70
    # One computed inside the loop is not known before it.
    t = tir.var("t")
    inner = S.LetStmt(var=t, value=tir.cast(a[i, 0], "int32"),
                      body=loop(k, t, store(a, (i, k), 0.0)))
    assert E.as_int(work(inner, tir.const(2))) == 2 * UNKNOWN_EXTENT


def _evaluate(e: E.PrimExpr, values: dict) -> int:
    """An integer expression of Vars, casts, + and * evaluated on ``values``."""
    if isinstance(e, E.IntImm):
        return e.value
    if isinstance(e, E.Var):
        return values[id(e)]
    if isinstance(e, E.Cast):
        return _evaluate(e.value, values)
    ops = {E.Add: lambda x, y: x + y, E.Sub: lambda x, y: x - y, E.Mul: lambda x, y: x * y}
    if type(e) in ops:
        return ops[type(e)](_evaluate(e.a, values), _evaluate(e.b, values))
    pytest.fail(f"unexpected {type(e).__name__} in a work estimate")


SYMBOLIC_ROWS = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 32), dtype="float32")) -> R.Tensor(("n", 32), dtype="float32"):
        with R.dataflow():
            gv = R.nn.relu(x)
            R.output(gv)
        return gv
'''


def test_symbolic_model_is_parallel_and_correct_at_any_size():
    # A symbolic dimension may be large: the CPU rules make the nest parallel, and its
    # loop decides per call (one thread for a row, all cores for many).
    ex = irc.compile(irc.parse(SYMBOLIC_ROWS), "llvm -num-cores 2")
    assert "GOMP_parallel" in ex.lib.get_source("ll")
    vm = irc.vm.VirtualMachine(ex)
    rng = np.random.default_rng(0)
    for rows in (1, 3, 40000):
        x = rng.standard_normal((rows, 32)).astype("float32")
        np.testing.assert_array_equal(vm["main"](x).numpy(), np.maximum(x, 0))

"""Loop kinds (parallel, unrolled, vectorized), Allocate, and errors of the LLVM backend."""

import importlib
from collections import OrderedDict

import numpy as np
import pytest
from llvm_kernels import buf, func, loop, ramp, rand, run, store

import irc
from irc import tir
from irc.codegen import codegen_llvm, llvm_parallel
from irc.tir import stmt as S


def _alloc(var, dtype, extents, body, scope="global"):
    return S.Allocate(buffer_var=var, dtype=dtype,
                      extents=tuple(tir.convert(e, "int32") for e in extents),
                      scope=scope, body=body)


def test_parallel_loop_runs_and_uses_openmp():
    n = 10007  # not a multiple of the thread count: uneven chunks
    a, b = buf("a", (n,)), buf("b", (n,))
    i = tir.var("i")
    f = func([a, b], loop(i, n, store(b, i, a[i] * a[i]), kind="parallel"))
    x, y = rand(n, "float32"), np.zeros(n, "float32")
    mod = run(f, x, y)
    np.testing.assert_allclose(y, x * x, rtol=1e-6)
    assert "GOMP_parallel" in mod.get_source("ll")


@pytest.mark.parametrize("cores", [2, 3, 4])
def test_parallel_chunks_run_every_iteration_once(cores, monkeypatch):
    """Each thread takes the chunks of its own range, then what is left of the others':
    whatever the extent against the thread count (none, fewer iterations than threads,
    ranges of unequal chunk counts), every iteration runs exactly once."""
    # A thread per stored element, so that small extents run in a region too (and a
    # build cache of this test's own, where no other build sees that setting).
    monkeypatch.setattr(llvm_parallel, "WORK_PER_THREAD", 1)
    monkeypatch.setattr(importlib.import_module("irc.codegen.build"), "_cache", OrderedDict())
    n = tir.var("n")
    a = buf("a", (n,), "int32")
    i = tir.var("i")
    f = func([a], loop(i, n, store(a, i, a[i] + 1), kind="parallel"))
    mod = irc.build(f, target=f"llvm -num-cores {cores}")
    for extent in (0, 1, 2, 3, 5, 17, 64, 1001, 40000):
        x = np.zeros(extent, "int32")
        mod["main"](x)
        np.testing.assert_array_equal(x, np.ones(extent, "int32"), err_msg=str(extent))


def test_parallel_outer_with_inner_loops_and_nested_parallel():
    m, n = 37, 53
    A, B = buf("A", (m, n)), buf("B", (m,))
    i, j, k = tir.var("i"), tir.var("j"), tir.var("k")
    # Inner parallel loop runs serially inside the outer parallel region.
    body = tir.seq(store(B, i, 0.0),
                   loop(j, n, store(B, i, B[i] + A[i, j]), kind="parallel"))
    f = func([A, B], loop(i, m, loop(k, 1, body), kind="parallel"))
    a, bb = rand((m, n), "float32"), np.zeros(m, "float32")
    mod = run(f, a, bb)
    np.testing.assert_allclose(bb, a.sum(axis=1), rtol=1e-5, atol=1e-5)
    assert mod.get_source("ll").count("call void @GOMP_parallel") == 1


def test_parallel_loop_with_nonzero_min_and_symbolic_extent():
    n = tir.var("n")
    a = buf("a", (n,), "int64")
    i = tir.var("i")
    f = func([a], loop(i, n - 3, store(a, i, tir.cast(i, "int64") * 7), kind="parallel",
                       start=3))
    x = np.zeros(100, "int64")
    run(f, x)
    expected = np.arange(100) * 7
    expected[:3] = 0
    np.testing.assert_array_equal(x, expected)


def test_assert_inside_parallel_loop_fails_cleanly():
    n = 64
    a = buf("a", (n,), "int32")
    i = tir.var("i")
    body = S.AssertStmt(condition=a[i] >= 0, message="negative entry",
                        body=store(a, i, a[i] + 1))
    f = func([a], loop(i, n, body, kind="parallel"))
    mod = irc.build(f)
    x = np.arange(n, dtype="int32")
    mod["main"](x)
    np.testing.assert_array_equal(x, np.arange(n) + 1)
    x[40] = -5
    with pytest.raises(irc.runtime.KernelAssertionError, match="negative entry"):
        mod["main"](x)


def test_unrolled_loop_is_unrolled_by_codegen():
    a, b = buf("a", (8,)), buf("b", (8,))
    i = tir.var("i")
    f = func([a, b], loop(i, 8, store(b, i, a[i] + tir.cast(i, "float32")), kind="unrolled"))
    x, y = rand(8, "float32"), np.zeros(8, "float32")
    run(f, x, y)
    np.testing.assert_allclose(y, x + np.arange(8))
    text = codegen_llvm({"main": f}, "llvm").text
    assert "for_head" not in text  # no loop left


def test_long_unrolled_and_vectorized_loops_get_metadata():
    n = 1000
    a, b, c = buf("a", (n,)), buf("b", (n,)), buf("c", (n,))
    i, j = tir.var("i"), tir.var("j")
    f = func([a, b, c], tir.seq(loop(i, n, store(b, i, a[i] * 2.0), kind="unrolled"),
                               loop(j, n, store(c, j, b[j] + a[j]), kind="vectorized")))
    text = codegen_llvm({"main": f}, "llvm").text
    assert "llvm.loop.unroll.enable" in text and "llvm.loop.vectorize.enable" in text
    x, y, z = rand(n, "float32"), np.zeros(n, "float32"), np.zeros(n, "float32")
    run(f, x, y, z)
    np.testing.assert_allclose(z, 3 * x, rtol=1e-6)


def test_local_allocate_in_registers():
    # A 4-element accumulator, fully unrolled: SROA keeps it in registers.
    m, k = 16, 32
    A, C = buf("A", (m, k)), buf("C", (m // 4, 4))
    acc = tir.var("acc", "handle")
    accb = tir.decl_buffer((4,), "float32", "acc", data=acc, scope="local")
    io, ii, r = tir.var("io"), tir.var("ii"), tir.var("r")
    body = tir.seq(
        loop(ii, 4, store(accb, ii, 0.0), kind="unrolled"),
        loop(r, k, loop(ii, 4, store(accb, ii, accb[ii] + A[io * 4 + ii, r]), kind="unrolled")),
        loop(ii, 4, store(C, (io, ii), accb[ii]), kind="unrolled"))
    f = func([A, C], loop(io, m // 4, _alloc(acc, "float32", [4], body, "local")))
    a, c = rand((m, k), "float32"), np.zeros((m // 4, 4), "float32")
    mod = run(f, a, c)
    np.testing.assert_allclose(c.ravel(), a.sum(axis=1), rtol=1e-5)
    assert "alloca" not in mod.get_source("ll")  # promoted to registers


def test_large_and_dynamic_allocate_use_the_heap():
    n = 40000  # 160 KB: heap
    a, b = buf("a", (n,)), buf("b", (n,))
    tmp = tir.var("tmp", "handle")
    tb = tir.decl_buffer((n,), "float32", "tmp", data=tmp)
    i, j = tir.var("i"), tir.var("j")
    body = _alloc(tmp, "float32", [n], tir.seq(loop(i, n, store(tb, i, a[i] + 1.0)),
                                               loop(j, n, store(b, j, tb[n - 1 - j]))))
    f = func([a, b], body)
    x, y = rand(n, "float32"), np.zeros(n, "float32")
    mod = run(f, x, y)
    np.testing.assert_allclose(y, (x + 1)[::-1])
    assert "aligned_alloc" in mod.get_source("ll")

    m = tir.var("m")
    c, d = buf("c", (m,), "int32"), buf("d", (m,), "int32")
    t2 = tir.var("t2", "handle")
    tb2 = tir.decl_buffer((m,), "int32", "t2", data=t2)
    body2 = _alloc(t2, "int32", [m], tir.seq(loop(i, m, store(tb2, i, c[i] * 2)),
                                             loop(j, m, store(d, j, tb2[j] + 1))))
    g = func([c, d], body2)
    for size in (0, 5, 1000):
        xs, ys = rand(size, "int32"), np.zeros(size, "int32")
        run(g, xs, ys)
        np.testing.assert_array_equal(ys, xs * 2 + 1)


def test_allocate_inside_parallel_loop_is_per_thread():
    m, n = 8, 64
    A, B = buf("A", (m, n)), buf("B", (m, n))
    tmp = tir.var("tmp", "handle")
    tb = tir.decl_buffer((n,), "float32", "tmp", data=tmp)
    i, j, k = tir.var("i"), tir.var("j"), tir.var("k")
    inner = tir.seq(loop(j, n, store(tb, j, A[i, j] * 2.0)),
                    loop(k, n, store(B, (i, k), tb[n - 1 - k])))
    f = func([A, B], loop(i, m, _alloc(tmp, "float32", [n], inner), kind="parallel"))
    a, b = rand((m, n), "float32"), np.zeros((m, n), "float32")
    run(f, a, b)
    np.testing.assert_allclose(b, (2 * a)[:, ::-1])


def test_parallel_vectorized_elementwise_matches_serial():
    n = 1 << 16
    a, b = buf("a", (n,)), buf("b", (n,))
    io = tir.var("io")
    body = store(b, ramp(io * 16, 16), a[ramp(io * 16, 16)] * 3.0 + 1.0)
    f = func([a, b], loop(io, n // 16, body, kind="parallel"))
    x, y = rand(n, "float32"), np.zeros(n, "float32")
    run(f, x, y)
    np.testing.assert_allclose(y, x * 3 + 1, rtol=1e-6, atol=1e-6)


def test_thread_binding_is_an_error_on_cpu():
    a = buf("a", (32,))
    i = tir.var("i")
    f = func([a], S.For(loop_var=i, min=tir.const(0), extent=tir.const(32),
                        kind="thread_binding", thread_tag="threadIdx.x",
                        body=store(a, i, 1.0)))
    with pytest.raises(irc.CodegenError, match="GPU thread axis"):
        irc.build(f)


def test_undefined_variable_is_an_error():
    a = buf("a", (4,))
    stray = tir.var("stray")
    f = func([a], store(a, stray, 1.0))
    with pytest.raises(irc.CodegenError, match="stray"):
        irc.build(f)


def test_block_form_needs_lowering_message():
    a = buf("a", (4,))
    blk = S.Block(name="b", iter_vars=(), reads=(), writes=(), body=store(a, 0, 1.0))
    realize = S.BlockRealize(iter_values=(), predicate=tir.const(True), block=blk)
    f = func([a], realize)
    with pytest.raises(irc.CodegenError, match="block form"):
        codegen_llvm({"main": f}, "llvm")


def _codegen_text(f):
    return codegen_llvm({"main": f}, "llvm").text


def test_vectorized_loop_becomes_vector_code():
    m, n = 6, 16
    A, B = buf("A", (m, n)), buf("B", (m, n))
    bias = buf("bias", (n,))
    i, j = tir.var("i"), tir.var("j")
    t = tir.var("t", "float32")
    value = S.LetStmt(var=t, value=A[i, j] * 2.0,
                      body=store(B, (i, j), tir.max(t + bias[j], tir.const(0.0, "float32"))
                                 + tir.cast(j, "float32")))
    f = func([A, bias, B], loop(i, m, loop(j, n, value, kind="vectorized")))
    text = _codegen_text(f)
    assert "load <16 x float>" in text and "store <16 x float>" in text
    assert "llvm.loop.vectorize" not in text  # vectorized by the code generator itself
    a, bv, out = rand((m, n), "float32"), rand(n, "float32"), np.zeros((m, n), "float32")
    run(f, a, bv, out)
    np.testing.assert_allclose(out, np.maximum(2 * a + bv, 0) + np.arange(n), rtol=1e-6)


def test_vectorized_loops_that_cannot_be_vector_code_stay_correct():
    n = 16
    a, s, b = buf("a", (n,)), buf("s", (1,)), buf("b", (n,))
    i, j = tir.var("i"), tir.var("j")
    # A reduction into one location and a lane-dependent branch: kept as loops.
    red = loop(i, n, store(s, 0, s[0] + a[i]), kind="vectorized")
    branch = loop(j, n, S.IfThenElse(condition=a[j] > 0, then_case=store(b, j, a[j]),
                                     else_case=store(b, j, -a[j])), kind="vectorized")
    f = func([a, s, b], tir.seq(red, branch))
    assert "llvm.loop.vectorize.enable" in _codegen_text(f)
    x, acc, y = rand(n, "float32"), np.zeros(1, "float32"), np.zeros(n, "float32")
    run(f, x, acc, y)
    np.testing.assert_allclose(acc[0], x.sum(), rtol=1e-5)
    np.testing.assert_allclose(y, np.abs(x))


def test_vectorized_micro_kernel_with_local_accumulator():
    # The shape of a scheduled matmul: unrolled rows, a vectorized column loop,
    # accumulators in a local buffer that must end up in vector registers.
    m, n, k, mr = 8, 32, 20, 4
    A, B, C = buf("A", (m, k)), buf("B", (k, n)), buf("C", (m, n))
    acc = tir.var("acc", "handle")
    accb = tir.decl_buffer((mr, n), "float32", "acc", data=acc, scope="local")
    io, ii, jj, r = tir.var("io"), tir.var("ii"), tir.var("jj"), tir.var("r")
    init = loop(ii, mr, loop(jj, n, store(accb, (ii, jj), 0.0), kind="vectorized"),
                kind="unrolled")
    upd = loop(ii, mr, loop(jj, n, store(accb, (ii, jj), accb[ii, jj]
                                         + A[io * mr + ii, r] * B[r, jj]), kind="vectorized"),
               kind="unrolled")
    out = loop(ii, mr, loop(jj, n, store(C, (io * mr + ii, jj), accb[ii, jj]),
                            kind="vectorized"), kind="unrolled")
    body = _alloc(acc, "float32", [mr * n], tir.seq(init, loop(r, k, upd), out), "local")
    f = func([A, B, C], loop(io, m // mr, body, kind="parallel"))
    a, b, c = rand((m, k), "float32"), rand((k, n), "float32"), np.zeros((m, n), "float32")
    mod = run(f, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    ll = mod.get_source("ll")
    assert "alloca" not in ll and "fmuladd" in ll or "fma" in mod.get_source("asm")

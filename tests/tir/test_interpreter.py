"""The reference interpreter on hand-written loop IR (block form and lowered form)."""

import math

import numpy as np
import pytest

from irc import te, tir
from irc.tir import (
    Allocate,
    AssertStmt,
    AttrStmt,
    Block,
    BlockRealize,
    Broadcast,
    BufferRegion,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    IfThenElse,
    IterVar,
    LetStmt,
    MatchBufferRegion,
    PrimFunc,
    Ramp,
    Range,
    Select,
    Var,
    While,
    const,
    decl_buffer,
    floordiv,
    floormod,
    if_then_else,
    seq,
    truncdiv,
    truncmod,
    var,
)
from irc.tir.interpreter import InterpreterError, compile_func, run


def func_of(buffers, body, scalars=()):
    """A PrimFunc with the given parameter buffers (then scalar vars)."""
    params, bmap = [], {}
    for b in buffers:
        p = Var(name=b.name, dtype="handle")
        params.append(p)
        bmap[p] = b
    params += list(scalars)
    return PrimFunc(params=tuple(params), buffer_map=bmap, body=body,
                    attrs={"global_symbol": "test"})


def loop(v, extent, body, kind="serial", tag=""):
    return For(loop_var=v, min=const(0, v.dtype), extent=const(extent, v.dtype), kind=kind,
               body=body, thread_tag=tag)


def test_lowered_matmul_with_allocate_declbuffer_and_vectors():
    n = m = kk = 8
    A = decl_buffer((n, kk), "float32", "A")
    B = decl_buffer((kk, m), "float32", "B")
    C = decl_buffer((n, m), "float32", "C")
    Af = decl_buffer((n * kk,), "float32", "A_1", data=A.data)
    Bf = decl_buffer((kk * m,), "float32", "B_1", data=B.data)
    Cf = decl_buffer((n * m,), "float32", "C_1", data=C.data)
    acc_ptr = Var(name="acc", dtype="handle")
    acc = decl_buffer((m,), "float32", "acc_1", data=acc_ptr)
    i, k, jo, j = (var(x) for x in ("i", "k", "j_outer", "j"))
    lanes = Ramp(dtype="int32x4", base=jo * 4, stride=const(1), lanes=4)
    init = loop(jo, m // 4, BufferStore(buffer=acc, indices=(lanes,),
                                        value=Broadcast(dtype="float32x4", value=const(0.0),
                                                        lanes=4)))
    b_lanes = Ramp(dtype="int32x4", base=k * m + jo * 4, stride=const(1), lanes=4)
    update = loop(k, kk, loop(jo, m // 4, BufferStore(
        buffer=acc, indices=(lanes,),
        value=acc[lanes] + Broadcast(dtype="float32x4", value=Af[i * kk + k], lanes=4)
        * Bf[b_lanes])))
    write = loop(j, m, BufferStore(buffer=Cf, indices=(i * m + j,), value=acc[j]), "vectorized")
    body = loop(i, n, Allocate(buffer_var=acc_ptr, dtype="float32", extents=(const(m),),
                               scope="global",
                               body=DeclBuffer(buffer=acc, body=seq(init, update, write))),
                "parallel")
    body = DeclBuffer(buffer=Af, body=DeclBuffer(buffer=Bf, body=DeclBuffer(buffer=Cf,
                                                                            body=body)))
    func = func_of([A, B, C], body)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, kk)).astype("float32")
    b = rng.standard_normal((kk, m)).astype("float32")
    c = np.zeros((n, m), "float32")
    run(func, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def _binary_func(dtype, out_dtype, make):
    A = decl_buffer((6,), dtype, "A")
    B = decl_buffer((6,), dtype, "B")
    C = decl_buffer((6,), out_dtype, "C")
    i = var("i")
    return func_of([A, B, C], loop(i, 6, BufferStore(buffer=C, indices=(i,),
                                                     value=make(A[i], B[i]))))


def _eval(dtype, out_dtype, make, a, b):
    a = np.array(a, dtype=dtype)
    b = np.array(b, dtype=dtype)
    c = np.zeros(6, dtype=out_dtype)
    run(_binary_func(dtype, out_dtype, make), a, b, c)
    return c


def test_integer_division_truncates_and_floors_like_c():
    a = [7, -7, 7, -7, 0, -128]
    b = [2, 2, -2, -2, 3, 3]
    np.testing.assert_array_equal(_eval("int32", "int32", truncdiv, a, b), [3, -3, -3, 3, 0, -42])
    np.testing.assert_array_equal(_eval("int32", "int32", truncmod, a, b), [1, -1, 1, -1, 0, -2])
    np.testing.assert_array_equal(_eval("int32", "int32", floordiv, a, b),
                                  np.floor_divide(a, b))
    np.testing.assert_array_equal(_eval("int32", "int32", floormod, a, b), np.mod(a, b))
    with pytest.raises(InterpreterError, match="division by zero"):
        _eval("int32", "int32", floordiv, a, [1, 1, 1, 1, 0, 1])


def test_narrow_integers_wrap_around():
    a = [100, 127, -128, 50, 1, -1]
    b = [100, 1, -1, 3, 0, 1]
    np.testing.assert_array_equal(_eval("int8", "int8", lambda x, y: x + y, a, b),
                                  np.array(a, "int8") + np.array(b, "int8"))
    np.testing.assert_array_equal(_eval("int8", "int8", lambda x, y: x * y - y, a, b),
                                  np.array(a, "int8") * np.array(b, "int8") - np.array(b, "int8"))
    np.testing.assert_array_equal(_eval("uint8", "uint8", lambda x, y: x - y, [1, 0, 5, 200, 3, 9],
                                        [2, 1, 5, 100, 4, 0]),
                                  np.array([255, 255, 0, 100, 255, 9], "uint8"))
    big = [2**31 - 1, -2**31, 65536, 46341, 7, 0]
    np.testing.assert_array_equal(_eval("int32", "int32", lambda x, y: x * y + y, big,
                                        [2, 2, 65536, 46341, 1, 0]),
                                  (np.array(big, "int64") * [2, 2, 65536, 46341, 1, 0]
                                   + [2, 2, 65536, 46341, 1, 0]).astype("int32"))
    # Narrowing casts wrap; float to int truncates toward zero.
    np.testing.assert_array_equal(
        _eval("int32", "int8", lambda x, y: (x + y).astype("int8"), [200, 300, -200, 1, 2, 3],
              [0] * 6), np.array([200, 300, -200, 1, 2, 3]).astype("int8"))
    np.testing.assert_array_equal(
        _eval("float32", "int32", lambda x, y: x.astype("int32"), [1.7, -1.7, 2.5, -0.2, 0, 9.99],
              [0] * 6), [1, -1, 2, 0, 0, 9])


def test_shifts_and_bitwise_intrinsics():
    a, b = [1, -8, 255, 3, 5, 6], [3, 1, 4, 0, 2, 1]
    np.testing.assert_array_equal(_eval("int32", "int32", tir.shift_left, a, b),
                                  np.left_shift(np.array(a, "int32"), b))
    np.testing.assert_array_equal(_eval("int32", "int32", tir.shift_right, a, b),
                                  np.right_shift(np.array(a, "int32"), b))
    np.testing.assert_array_equal(_eval("int32", "int32", tir.bitwise_xor, a, b),
                                  np.bitwise_xor(a, b))
    np.testing.assert_array_equal(_eval("int32", "int32", lambda x, y: tir.popcount(x), a, b),
                                  [1, 29, 8, 2, 2, 2])


def test_float32_arithmetic_rounds_in_float32():
    # In float64 (1 + 1e-8) - 1 is 1e-8; in float32 the 1e-8 is lost.
    out = _eval("float32", "float32", lambda x, y: (x + y) - x, [1.0] * 6, [1e-8] * 6)
    np.testing.assert_array_equal(out, np.zeros(6, "float32"))
    out = _eval("float64", "float64", lambda x, y: (x + y) - x, [1.0] * 6, [1e-8] * 6)
    assert out[0] != 0.0


def test_float16_and_bfloat16_storage():
    h = _eval("float16", "float16", lambda x, y: x * y, [1.5, 2, 3, 4, 5, 6], [2] * 6)
    np.testing.assert_array_equal(h, np.array([3, 4, 6, 8, 10, 12], "float16"))
    A = decl_buffer((3,), "float32", "A")
    Bb = decl_buffer((3,), "bfloat16", "B")
    C = decl_buffer((3,), "float32", "C")
    i = var("i")
    func = func_of([A, Bb, C], loop(i, 3, seq(
        BufferStore(buffer=Bb, indices=(i,), value=A[i].astype("bfloat16")),
        BufferStore(buffer=C, indices=(i,), value=Bb[i].astype("float32")))))
    a = np.array([1.0, 3.14159265, -2.71828], "float32")
    bits = np.zeros(3, "uint16")
    c = np.zeros(3, "float32")
    run(func, a, bits, c)
    np.testing.assert_allclose(c, a, rtol=2 ** -8)
    assert c[1] != a[1]  # rounded to 8 significant bits


def test_out_of_bounds_access_names_buffer_and_index():
    A = decl_buffer((4,), "float32", "A")
    B = decl_buffer((4,), "float32", "B")
    i = var("i")
    func = func_of([A, B], loop(i, 4, BufferStore(buffer=B, indices=(i,), value=A[i + 1])))
    with pytest.raises(InterpreterError, match=r"out-of-bounds access A\[4\]"):
        run(func, np.zeros(4, "float32"), np.zeros(4, "float32"))
    func = func_of([A, B], loop(i, 4, BufferStore(buffer=B, indices=(i - 1,), value=A[i])))
    with pytest.raises(InterpreterError, match=r"B\[-1\].*shape \(4\)"):
        run(func, np.zeros(4, "float32"), np.zeros(4, "float32"))
    vec = Ramp(dtype="int32x4", base=const(1), stride=const(1), lanes=4)
    func = func_of([A, B], BufferStore(buffer=B, indices=(Ramp(dtype="int32x4", base=const(0),
                                                                 stride=const(1), lanes=4),),
                                       value=A[vec]))
    with pytest.raises(InterpreterError, match="out-of-bounds access A"):
        run(func, np.zeros(4, "float32"), np.zeros(4, "float32"))


def test_if_then_else_reads_lazily_select_reads_both():
    A = decl_buffer((4,), "float32", "A")
    B = decl_buffer((5,), "float32", "B")
    i = var("i")
    guarded = if_then_else(i < 4, A[floormod(i, 5)], const(-1.0))
    func = func_of([A, B], loop(i, 5, BufferStore(buffer=B, indices=(i,), value=guarded)))
    b = np.zeros(5, "float32")
    run(func, np.arange(4, dtype="float32"), b)
    np.testing.assert_array_equal(b, [0, 1, 2, 3, -1])
    both = Select(dtype="float32", condition=i < 4, true_value=A[i], false_value=const(-1.0))
    func = func_of([A, B], loop(i, 5, BufferStore(buffer=B, indices=(i,), value=both)))
    with pytest.raises(InterpreterError, match="out-of-bounds"):
        run(func, np.arange(4, dtype="float32"), b)


def test_let_while_if_and_assert():
    A = decl_buffer((1,), "int32", "A")
    cnt = decl_buffer((1,), "int32", "cnt")
    x, n, limit = var("x"), var("n"), var("limit")
    zero = (const(0),)
    # Count the Collatz steps of n with a while loop over memory.
    step = IfThenElse(condition=floormod(A[0], 2) == 0,
                      then_case=BufferStore(buffer=A, indices=zero, value=floordiv(A[0], 2)),
                      else_case=BufferStore(buffer=A, indices=zero, value=A[0] * 3 + 1))
    body = LetStmt(var=x, value=n * 1, body=seq(
        BufferStore(buffer=A, indices=zero, value=x),
        BufferStore(buffer=cnt, indices=zero, value=const(0)),
        While(condition=A[0] != 1,
              body=seq(step, BufferStore(buffer=cnt, indices=zero, value=cnt[0] + 1))),
        AssertStmt(condition=cnt[0] < limit, message="too many steps",
                   body=Evaluate(value=const(0)))))
    func = func_of([A, cnt], body, scalars=[n, limit])
    a, c = np.zeros(1, "int32"), np.zeros(1, "int32")
    run(func, a, c, 27, 1000)
    assert c[0] == 111
    run(func, a, c, 6, limit=100)
    assert c[0] == 8
    with pytest.raises(InterpreterError, match="assertion failed: too many steps"):
        run(func, a, c, 6, 5)
    with pytest.raises(InterpreterError, match="limit is int32: pass an integer"):
        run(func, a, c, 6, 5.5)


def test_symbolic_shapes_bind_from_arrays():
    n = var("n")
    A = decl_buffer((n, 3), "float32", "A")
    B = decl_buffer((n * 3,), "float32", "B")
    i, j = var("i"), var("j")
    body = For(loop_var=i, min=const(0), extent=n, kind="serial", body=loop(
        j, 3, BufferStore(buffer=B, indices=(i * 3 + j,), value=A[i, j] + 1.0)))
    func = func_of([A, B], body)
    a = np.arange(12, dtype="float32").reshape(4, 3)
    b = np.zeros(12, "float32")
    run(func, a, b)
    np.testing.assert_array_equal(b, a.ravel() + 1)
    with pytest.raises(InterpreterError, match="dimension 0 is 10 but the function needs 12"):
        run(func, a, np.zeros(10, "float32"))
    with pytest.raises(InterpreterError, match="dtype float32 but the array is float64"):
        run(func, a.astype("float64"), b)
    # A variable no parameter binds comes from keyword arguments.
    m = var("m")
    C = decl_buffer((4,), "float32", "C")
    func = func_of([C], For(loop_var=i, min=const(0), extent=m, kind="serial",
                            body=BufferStore(buffer=C, indices=(i,), value=const(5.0))))
    c = np.zeros(4, "float32")
    with pytest.raises(InterpreterError, match="pass its value as run"):
        run(func, c)
    run(func, c, m=2)
    np.testing.assert_array_equal(c, [5, 5, 0, 0])


def test_gpu_style_thread_bindings_and_predicate():
    # Seed 003's transpose: fused blockIdx/threadIdx loops, a T.where predicate, and
    # floordiv/floormod bindings.
    W = decl_buffer((10, 25), "float32", "W")
    T = decl_buffer((25, 10), "float32", "T")
    bx, tx = var("bx"), var("tx")
    v0, v1 = var("v0"), var("v1")
    fused = bx * 64 + tx
    block = Block(name="T_transpose",
                  iter_vars=(IterVar(var=v0, dom=Range(min=const(0), extent=const(25))),
                             IterVar(var=v1, dom=Range(min=const(0), extent=const(10)))),
                  reads=(BufferRegion.from_indices(W, (v1, v0)),),
                  writes=(BufferRegion.from_indices(T, (v0, v1)),),
                  body=BufferStore(buffer=T, indices=(v0, v1), value=W[v1, v0]))
    realize = BlockRealize(iter_values=(floordiv(fused, 10), floormod(fused, 10)),
                           predicate=fused < 250, block=block)
    body = loop(bx, 4, loop(tx, 64, realize, "thread_binding", "threadIdx.x"),
                "thread_binding", "blockIdx.x")
    root = BlockRealize(iter_values=(), predicate=const(True),
                        block=Block(name="root", iter_vars=(), reads=(), writes=(), body=body))
    func = func_of([W, T], root)
    w = np.random.default_rng(1).standard_normal((10, 25)).astype("float32")
    t = np.zeros((25, 10), "float32")
    run(func, w, t)
    np.testing.assert_array_equal(t, w.T)
    # Without the predicate the binding leaves the block's domain.
    unguarded = BlockRealize(iter_values=realize.iter_values, predicate=const(True),
                             block=block)
    bad_body = loop(bx, 4, loop(tx, 64, unguarded, "thread_binding", "threadIdx.x"),
                    "thread_binding", "blockIdx.x")
    bad = func_of([W, T], root.replace(block=root.block.replace(body=bad_body)))
    # GPU-scheduled functions run lowered to kernels: the threads past the domain write
    # outside T, which the bounds checks report with the thread that did it.
    with pytest.raises(InterpreterError, match=r"T\b.*thread \(\d+, 0, 0\) of block \(3"):
        run(bad, w, t)


def test_launch_thread_attr_runs_each_thread():
    A = decl_buffer((32,), "float32", "A")
    tx = var("tx")
    iv = IterVar(var=tx, dom=Range(min=const(0), extent=const(32)), iter_type="opaque",
                 thread_tag="threadIdx.x")
    body = AttrStmt(node=iv, key="thread_extent", value=const(32),
                    body=BufferStore(buffer=A, indices=(tx,), value=tx.astype("float32")))
    a = np.zeros(32, "float32")
    run(func_of([A], body), a)
    np.testing.assert_array_equal(a, np.arange(32))


def test_match_buffer_views_a_region():
    A = decl_buffer((4, 8), "float32", "A")
    io = var("io")
    vi = var("vi")
    sub = decl_buffer((2, 8), "float32", "A_sub", elem_offset=var("off"),
                      strides=(var("s0"), var("s1")))
    ii, jj = var("ii"), var("jj")
    region = BufferRegion.from_indices(A, (slice(vi * 2, vi * 2 + 2), slice(0, 8)))
    inner = loop(ii, 2, loop(jj, 8, BufferStore(buffer=sub, indices=(ii, jj),
                                                value=sub[ii, jj] * 2.0)))
    block = Block(name="scale", iter_vars=(IterVar(var=vi, dom=Range(min=const(0),
                                                                      extent=const(2))),),
                  reads=(region,), writes=(region,), body=inner,
                  match_buffers=(MatchBufferRegion(buffer=sub, source=region),))
    body = loop(io, 2, BlockRealize(iter_values=(io,), predicate=const(True), block=block))
    a = np.arange(32, dtype="float32").reshape(4, 8)
    run(func_of([A], body), a)
    np.testing.assert_array_equal(a, np.arange(32).reshape(4, 8) * 2)


def test_block_init_runs_on_first_reduction_iteration():
    A = decl_buffer((3, 4), "float32", "A")
    S = decl_buffer((3,), "float32", "S")
    i, k = var("i"), var("k")
    vi, vk = var("vi"), var("vk")
    block = Block(name="sum",
                  iter_vars=(IterVar(var=vi, dom=Range(min=const(0), extent=const(3))),
                             IterVar(var=vk, dom=Range(min=const(0), extent=const(4)),
                                     iter_type="reduce")),
                  reads=(BufferRegion.from_indices(A, (vi, vk)),),
                  writes=(BufferRegion.from_indices(S, (vi,)),),
                  init=BufferStore(buffer=S, indices=(vi,), value=const(0.0)),
                  body=BufferStore(buffer=S, indices=(vi,), value=S[vi] + A[vi, vk]))
    body = loop(i, 3, loop(k, 4, BlockRealize(iter_values=(i, k), predicate=const(True),
                                              block=block)))
    s = np.full(3, 99.0, "float32")
    a = np.arange(12, dtype="float32").reshape(3, 4)
    run(func_of([A, S], body), a, s)
    np.testing.assert_array_equal(s, a.sum(axis=1))


def test_intrinsics_match_numpy():
    x = np.array([-2.0, -0.5, 0.0, 0.3, 1.0, 2.5], "float32")
    for name, ref in [("exp", np.exp), ("tanh", np.tanh), ("sqrt", lambda v: np.sqrt(abs(v))),
                      ("sigmoid", lambda v: 1 / (1 + np.exp(-v))), ("round", np.round),
                      ("floor", np.floor), ("erf", None)]:
        def make(a, b, name=name):
            arg = tir.fabs(a) if name == "sqrt" else a
            return getattr(tir, name)(arg)
        out = _eval("float32", "float32", make, x, x)
        if ref is None:
            ref_v = np.array([math.erf(v) for v in x], "float32")
        else:
            ref_v = ref(x).astype("float32")
        np.testing.assert_allclose(out, ref_v, rtol=1e-6, atol=1e-7, err_msg=name)


def test_deep_loop_nests_and_deep_expressions():
    A = decl_buffer((1,), "float32", "A")
    vs = [var(f"i{d}") for d in range(24)]
    body = BufferStore(buffer=A, indices=(const(0),), value=A[0] + 1.0)
    for v in reversed(vs):
        body = loop(v, 2 if v.name in ("i0", "i1") else 1, body)
    a = np.zeros(1, "float32")
    run(func_of([A], body), a)
    assert a[0] == 4.0
    e = A[0]
    for _ in range(300):
        e = e + 1.0
    a[0] = 0
    run(func_of([A], BufferStore(buffer=A, indices=(const(0),), value=e)), a)
    assert a[0] == 300.0


def test_bad_arguments():
    A = decl_buffer((4,), "float32", "A")
    func = func_of([A], Evaluate(value=const(0)))
    with pytest.raises(InterpreterError, match="takes 1 arguments, got 2"):
        run(func, np.zeros(4, "float32"), np.zeros(4, "float32"))
    with pytest.raises(InterpreterError, match="needs a numpy array"):
        run(func, [1, 2, 3, 4])
    with pytest.raises(InterpreterError, match="has 1 dimensions but the array has 2"):
        run(func, np.zeros((2, 2), "float32"))


def test_non_contiguous_outputs_are_written_back():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] * 2.0, name="B")
    func = te.create_prim_func([A, B])
    out = np.zeros((4, 2), "float32")[:, 0]
    run(func, np.arange(4, dtype="float32"), out)
    np.testing.assert_array_equal(out, [0, 2, 4, 6])


def test_matmul_64_is_quick_and_compiled_once():
    n = 64
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    func = te.create_prim_func([A, B, C])
    assert compile_func(func) is compile_func(func)
    a = np.random.default_rng(5).standard_normal((n, n)).astype("float32")
    c = np.zeros((n, n), "float32")
    run(func, a, a, c)
    np.testing.assert_allclose(c, a @ a, rtol=1e-4, atol=1e-4)
    # Index arithmetic proven in range needs no bounds checks in the generated code.
    assert "_oob" not in compile_func(func).source

"""LLVM code generation of hand-written lowered kernels, checked against numpy."""

import numpy as np
import pytest
from llvm_kernels import (
    bcast,
    buf,
    from_bf16_bits,
    func,
    loop,
    ramp,
    rand,
    run,
    store,
    to_bf16_bits,
)

import irc
from irc import tir
from irc.tir import expr as E
from irc.tir import stmt as S

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float16", "bfloat16", "float32", "float64"]


def _binary_kernel(dtype, n, op):
    a, b, c = buf("a", (n,), dtype), buf("b", (n,), dtype), buf("c", (n,), dtype)
    i = tir.var("i")
    return func([a, b, c], loop(i, n, store(c, i, op(a[i], b[i]))))


def test_elementwise_float32_add_mul():
    n = 1000
    a, b, c = buf("a", (n,)), buf("b", (n,)), buf("c", (n,))
    i = tir.var("i")
    f = func([a, b, c], loop(i, n, store(c, i, a[i] * b[i] + a[i] - 1.5)))
    x, y, z = rand(n, "float32"), rand(n, "float32"), np.zeros(n, "float32")
    run(f, x, y, z)
    np.testing.assert_allclose(z, x * y + x - 1.5, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_dtypes_arith(dtype):
    n = 257
    x, y = rand(n, dtype, np.random.default_rng(1)), rand(n, dtype, np.random.default_rng(2))
    for op, ref in [(lambda p, q: p + q, np.add), (lambda p, q: p - q, np.subtract),
                    (lambda p, q: p * q, np.multiply),
                    (lambda p, q: tir.max(p, q), np.maximum),
                    (lambda p, q: tir.min(p, q), np.minimum)]:
        z = np.zeros(n, dtype)
        run(_binary_kernel(dtype, n, op), x, y, z)
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(z, ref(x, y).astype(dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_float_dtypes_arith(dtype):
    n = 100
    x, y = rand(n, dtype, np.random.default_rng(1)), rand(n, dtype, np.random.default_rng(2))
    z = np.zeros(n, x.dtype)
    f = _binary_kernel(dtype, n, lambda p, q: (p * q - p) / (q + 10.0))
    run(f, x, y, z)
    if dtype == "bfloat16":
        def r(v):  # bfloat16 rounds after every operation
            return from_bf16_bits(to_bf16_bits(v))

        xf, yf = from_bf16_bits(x), from_bf16_bits(y)
        ref = r(r(r(xf * yf) - xf) / r(yf + np.float32(10)))
        np.testing.assert_array_equal(from_bf16_bits(z), ref)
    else:
        ref = ((x * y - x) / (y + x.dtype.type(10))).astype(dtype)
        tol = 2e-3 if dtype == "float16" else 1e-6
        np.testing.assert_allclose(z, ref, rtol=tol)


def test_float16_rounds_each_operation():
    # (a + b) - a in float16 loses b's low bits exactly as numpy's float16 does.
    n = 64
    a, b, c = buf("a", (n,), "float16"), buf("b", (n,), "float16"), buf("c", (n,), "float16")
    i = tir.var("i")
    f = func([a, b, c], loop(i, n, store(c, i, (a[i] + b[i]) - a[i])))
    x = np.full(n, 1000.0, np.float16)
    y = np.linspace(0.01, 0.5, n).astype(np.float16)
    z = np.zeros(n, np.float16)
    run(f, x, y, z)
    np.testing.assert_array_equal(z, (x + y) - x)


def test_bool_logic_and_compare():
    n = 50
    a, b = buf("a", (n,), "bool"), buf("b", (n,), "bool")
    x, y = buf("x", (n,), "int32"), buf("c", (n,), "bool")
    i = tir.var("i")
    expr = tir.any(tir.all(a[i], tir.logical_not(b[i])), x[i] > 3)
    f = func([a, b, x, y], loop(i, n, store(y, i, expr)))
    av, bv, xv = rand(n, "bool"), rand(n, "bool", np.random.default_rng(5)), rand(n, "int32")
    out = np.zeros(n, bool)
    run(f, av, bv, xv, out)
    np.testing.assert_array_equal(out, (av & ~bv) | (xv > 3))


@pytest.mark.parametrize("src,dst", [
    ("float32", "int32"), ("float32", "uint8"), ("int32", "float32"), ("int8", "int64"),
    ("uint8", "int32"), ("int64", "int16"), ("float64", "float32"), ("float32", "float16"),
    ("float16", "float64"), ("int32", "bool"), ("bool", "float32"), ("float32", "bool"),
    ("uint32", "float64"), ("float32", "bfloat16"), ("bfloat16", "float32"),
    ("int16", "uint16"),
])
def test_casts(src, dst):
    n = 40
    a, b = buf("a", (n,), src), buf("b", (n,), dst)
    i = tir.var("i")
    f = func([a, b], loop(i, n, store(b, i, tir.cast(a[i], dst))))
    x = rand(n, src, low=0 if dst.startswith("uint") else -4)
    out = np.zeros(n, irc.ir.dtype.to_numpy(dst))
    run(f, x, out)
    xs = from_bf16_bits(x) if src == "bfloat16" else x
    if dst == "bfloat16":
        np.testing.assert_array_equal(out, to_bf16_bits(xs.astype(np.float32)))
    else:
        ref = xs.astype(np.float32).astype(dst) if src == "bfloat16" else xs.astype(dst)
        np.testing.assert_array_equal(out, ref)


def test_integer_division_semantics():
    n = 64
    rng = np.random.default_rng(3)
    x = rng.integers(-50, 50, n).astype("int32")
    y = rng.integers(1, 9, n).astype("int32") * rng.choice([-1, 1], n).astype("int32")
    a, b = buf("a", (n,), "int32"), buf("b", (n,), "int32")
    outs = [buf(f"o{k}", (n,), "int32") for k in range(8)]
    i = tir.var("i")
    exprs = [tir.floordiv(a[i], b[i]), tir.floormod(a[i], b[i]), tir.truncdiv(a[i], b[i]),
             tir.truncmod(a[i], b[i]), tir.floordiv(a[i], 4), tir.floormod(a[i], 8),
             tir.floordiv(a[i], 3), tir.floormod(a[i], -3)]
    body = tir.seq(*[store(o, i, e) for o, e in zip(outs, exprs)])
    f = func([a, b, *outs], loop(i, n, body))
    res = [np.zeros(n, "int32") for _ in outs]
    run(f, x, y, *res)
    trunc_q = (np.abs(x) // np.abs(y)) * np.sign(x) * np.sign(y)
    refs = [x // y, x % y, trunc_q, x - trunc_q * y, x // 4, x % 8, x // 3, x % -3]
    for r, ref in zip(res, refs):
        np.testing.assert_array_equal(r, ref)


def test_float_floordiv_floormod():
    n = 30
    a, b, o1, o2 = (buf(s, (n,), "float32") for s in "abcd")
    i = tir.var("i")
    f = func([a, b, o1, o2], loop(i, n, tir.seq(store(o1, i, tir.floordiv(a[i], b[i])),
                                                 store(o2, i, tir.floormod(a[i], b[i])))))
    x = rand(n, "float32")
    y = rand(n, "float32", np.random.default_rng(4)) + 5.0
    r1, r2 = np.zeros(n, "float32"), np.zeros(n, "float32")
    run(f, x, y, r1, r2)
    np.testing.assert_allclose(r1, np.floor(x / y))
    np.testing.assert_allclose(r2, x - np.floor(x / y) * y, atol=1e-5)


def test_matmul_triple_loop_reduction():
    m, n, k = 33, 20, 17
    A, B, C = buf("A", (m * k,)), buf("B", (k * n,)), buf("C", (m * n,))
    i, j, r = tir.var("i"), tir.var("j"), tir.var("k")
    update = store(C, i * n + j, C[i * n + j] + A[i * k + r] * B[r * n + j])
    body = loop(i, m, loop(j, n, tir.seq(store(C, i * n + j, 0.0), loop(r, k, update))))
    f = func([A, B, C], body)
    a, b, c = rand((m, k), "float32"), rand((k, n), "float32"), np.zeros((m, n), "float32")
    mod = run(f, a.ravel(), b.ravel(), c.reshape(-1))
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    # The reduction update is the only place that may be reassociated.
    assert "reassoc" in mod.get_source("ll")


def test_nd_buffers_are_flattened():
    m, n = 7, 9
    A, B = buf("A", (m, n), "int32"), buf("B", (n, m), "int32")
    i, j = tir.var("i"), tir.var("j")
    f = func([A, B], loop(i, m, loop(j, n, store(B, (j, i), A[i, j] * 2))))
    a, b = rand((m, n), "int32"), np.zeros((n, m), "int32")
    run(f, a, b)
    np.testing.assert_array_equal(b, a.T * 2)


def test_vector_ramp_broadcast_load_store():
    n = 64
    a, b = buf("a", (n,)), buf("b", (n,))
    i = tir.var("i")
    vec = a[ramp(i * 16, 16)] * bcast(tir.const(2.0, "float32"), 16)
    f = func([a, b], loop(i, n // 16, store(b, ramp(i * 16, 16), vec)))
    x, y = rand(n, "float32"), np.zeros(n, "float32")
    mod = run(f, x, y)
    np.testing.assert_allclose(y, 2 * x)
    ll = mod.get_source("ll")
    assert "<16 x float>" in ll


def test_vector_gather_scatter_strided():
    n = 16
    a, b = buf("a", (4 * n,)), buf("b", (4 * n,))
    i = tir.var("i")
    # b[4*l + 1] = a[2*l] + a[(l*l) % 64] for l in 0..15 (strided and irregular indices).
    lanes = ramp(0, n)
    irregular = E.FloorMod(dtype="int32x16", a=lanes * lanes, b=bcast(tir.const(64), 16))
    body = store(b, ramp(i * 0 + 1, n, 4), a[ramp(0, n, 2)] + a[irregular])
    f = func([a, b], loop(i, 1, body))
    x, y = rand(4 * n, "float32"), np.zeros(4 * n, "float32")
    run(f, x, y)
    idx = np.arange(n)
    expected = np.zeros(4 * n, "float32")
    expected[4 * idx + 1] = x[2 * idx] + x[(idx * idx) % 64]
    np.testing.assert_allclose(y, expected)


def test_select_and_scalar_if_then_else_guard():
    n = 20
    a, b = buf("a", (n,)), buf("b", (n + 4,))
    i = tir.var("i")
    # Pad by 2 on each side: the guarded load must not read a[-2] or a[n+1].
    inside = tir.all(i >= 2, i < n + 2)
    val = tir.if_then_else(inside, a[i - 2], tir.const(-1.0, "float32"))
    body = store(b, i, tir.select(val > 0, val, val * 0.5))
    f = func([a, b], loop(i, n + 4, body))
    x, y = rand(n, "float32"), np.zeros(n + 4, "float32")
    run(f, x, y)
    padded = np.concatenate([[-1, -1], x, [-1, -1]]).astype("float32")
    np.testing.assert_allclose(y, np.where(padded > 0, padded, padded * 0.5))


def test_vector_if_then_else_masks_loads():
    n = 12
    a, b = buf("a", (n,)), buf("b", (16,))
    i = tir.var("i")
    lanes = ramp(0, 16)
    cond = E.LT(dtype="boolx16", a=lanes, b=bcast(tir.const(n), 16))
    val = tir.if_then_else(cond, a[lanes], bcast(tir.const(7.0, "float32"), 16))
    f = func([a, b], loop(i, 1, store(b, ramp(0, 16), val)))
    x, y = rand(n, "float32"), np.zeros(16, "float32")
    mod = run(f, x, y)
    np.testing.assert_allclose(y, np.concatenate([x, np.full(4, 7.0, "float32")]))
    assert "llvm.masked.load" in mod.get_source("ll") or "masked" in mod.get_source("ll") \
        or "vmaskmov" in mod.get_source("asm") or "{%k" in mod.get_source("asm")


def test_let_and_letstmt():
    n = 10
    a, b = buf("a", (n,)), buf("b", (n,))
    i = tir.var("i")
    t, u = tir.var("t", "float32"), tir.var("u", "int32")
    value = E.Let(dtype="float32", var=t, value=a[i] * 3.0, body=t * t + t)
    body = S.LetStmt(var=u, value=n - 1 - i, body=store(b, u, value))
    f = func([a, b], loop(i, n, body))
    x, y = rand(n, "float32"), np.zeros(n, "float32")
    run(f, x, y)
    z = x * 3
    np.testing.assert_allclose(y, (z * z + z)[::-1], rtol=1e-6)


def test_while_loop():
    a = buf("a", (1,), "int32")
    k = tir.var("k", "int32")
    buf_k = buf("state", (1,), "int32")
    del k
    body = S.While(condition=a[0] < 1000, body=store(a, 0, a[0] * 3 + 1))
    f = func([a, buf_k], body)
    x = np.array([1], "int32")
    run(f, x, np.zeros(1, "int32"))
    v = 1
    while v < 1000:
        v = v * 3 + 1
    assert x[0] == v


def test_scalar_params():
    n = 16
    a, b = buf("a", (n,)), buf("b", (n,))
    i = tir.var("i")
    s, k, flag = tir.var("s", "float32"), tir.var("k", "int64"), tir.var("flag", "bool")
    val = tir.select(flag, a[i] * s + tir.cast(k, "float32"), a[i])
    f = func([a, s, b, k, flag], loop(i, n, store(b, i, val)))
    x, y = rand(n, "float32"), np.zeros(n, "float32")
    mod = irc.build(f)
    mod["main"](x, 2.5, y, 7, True)
    np.testing.assert_allclose(y, x * 2.5 + 7, rtol=1e-6)
    mod["main"](x, 2.5, y, 7, False)
    np.testing.assert_allclose(y, x)


def test_symbolic_shape_variable():
    n = tir.var("n", "int32")
    a, b = buf("a", (n,)), buf("b", (n,))
    i = tir.var("i")
    f = func([a, b], loop(i, n, store(b, i, a[i] + 1.0)))
    mod = irc.build(f)
    for size in (1, 17, 300):
        x, y = rand(size, "float32"), np.zeros(size, "float32")
        mod["main"](x, y)
        np.testing.assert_allclose(y, x + 1)
    assert [v for v, _ in mod["main"].signature.shape_vars] == ["n"]


def test_symbolic_shape_expression_dimension():
    n = tir.var("n", "int64")
    a, b = buf("a", (n, 4)), buf("b", (n * 4,))
    i = tir.var("i", "int64")
    f = func([a, b], loop(i, n * 4, store(b, i, a[i // 4, i % 4] * 2.0)))
    mod = irc.build(f)
    x, y = rand((5, 4), "float32"), np.zeros(20, "float32")
    mod["main"](x, y)
    np.testing.assert_allclose(y, x.ravel() * 2)
    with pytest.raises(irc.RuntimeShapeError, match="dimension 0 must be"):
        mod["main"](x, np.zeros(21, "float32"))


def test_assert_stmt_reports_message():
    n = 4
    a = buf("a", (n,), "int32")
    body = S.AssertStmt(condition=a[0] > 0, message="a[0] must be positive", body=store(a, 1, 5))
    f = func([a], body)
    mod = irc.build(f)
    x = np.array([1, 0, 0, 0], "int32")
    mod["main"](x)
    assert x[1] == 5
    with pytest.raises(irc.runtime.KernelAssertionError, match="a\\[0\\] must be positive"):
        mod["main"](np.array([-1, 0, 0, 0], "int32"))


def test_vector_dtype_buffer():
    n = 16
    a, b = buf("a", (n,)), buf("b", (n,))
    t = tir.var("t", "handle")
    tb = tir.decl_buffer((4,), "float32x4", "t", data=t)
    i, j = tir.var("i"), tir.var("j")
    body = S.Allocate(buffer_var=t, dtype="float32x4", extents=(tir.const(4),), scope="local",
                      body=tir.seq(loop(i, 4, store(tb, i, a[ramp(i * 4, 4)] * 2.0)),
                                   loop(j, 4, store(b, ramp(j * 4, 4), tb[3 - j]))))
    f = func([a, b], body)
    x, y = rand(n, "float32"), np.zeros(n, "float32")
    run(f, x, y)
    np.testing.assert_allclose(y, (2 * x).reshape(4, 4)[::-1].ravel())


def test_integer_division_by_zero_does_not_crash():
    n = 6
    a, b, q, r = (buf(s, (n,), "int32") for s in "abqr")
    fq, fr = buf("fq", (n,), "int32"), buf("fr", (n,), "int32")
    i = tir.var("i")
    body = tir.seq(store(q, i, tir.truncdiv(a[i], b[i])), store(r, i, tir.truncmod(a[i], b[i])),
                   store(fq, i, tir.floordiv(a[i], b[i])), store(fr, i, tir.floormod(a[i], b[i])))
    f = func([a, b, q, r, fq, fr], loop(i, n, body))
    x = np.array([7, -7, 5, 0, 9, -9], "int32")
    y = np.array([2, 0, 0, 3, -2, 4], "int32")
    outs = [np.zeros(n, "int32") for _ in range(4)]
    run(f, x, y, *outs)
    zero = y == 0
    for o in outs:
        assert np.all(o[zero] == 0)
    np.testing.assert_array_equal(outs[2][~zero], x[~zero] // y[~zero])
    np.testing.assert_array_equal(outs[3][~zero], x[~zero] % y[~zero])


def test_floor_division_of_loop_indices_by_sign():
    # Loop variables from a start >= 0 divide with udiv/urem; one that starts below zero
    # keeps the floor fix-up. Both against numpy.
    n = 24
    outs = [buf(f"o{k}", (n,), "int64") for k in range(4)]
    i, j = tir.var("i", "int64"), tir.var("j", "int64")
    pos = tir.seq(store(outs[0], i, tir.floordiv(i * 5 + 3, 7)),
                  store(outs[1], i, tir.floormod(i * 5 + 3, 7)))
    neg = tir.seq(store(outs[2], j + 12, tir.floordiv(j * 5 + 3, 7)),
                  store(outs[3], j + 12, tir.floormod(j * 5 + 3, 7)))
    f = func(outs, tir.seq(loop(i, n, pos), loop(j, n, neg, start=-12)))
    res = [np.zeros(n, "int64") for _ in outs]
    run(f, *res)
    k = np.arange(n)
    m = np.arange(-12, 12)
    for r, ref in zip(res, [(k * 5 + 3) // 7, (k * 5 + 3) % 7, (m * 5 + 3) // 7,
                            (m * 5 + 3) % 7]):
        np.testing.assert_array_equal(r, ref)
    text = irc.codegen.llvm.codegen_llvm({"main": f}, "llvm").text
    assert "udiv" in text and "sdiv" in text  # the start decides


def test_guarded_loads_without_branches():
    # if_then_else(scalar guard, load, constant): a load from an always-valid address
    # and a select, for scalar and vector loads, against numpy.
    a, small, v = buf("a", (10,)), buf("s", (3,)), buf("v", (16,))
    b, c, w = buf("b", (16,)), buf("c", (16,)), buf("w", (16,))
    i, k = tir.var("i"), tir.var("k")
    guard = tir.all(i >= 2, i < 12)
    scalar = store(b, i, tir.if_then_else(guard, a[i - 2], tir.const(-1.0, "float32")))
    tiny = store(c, i, tir.if_then_else(i < 3, small[i], tir.const(7.0, "float32")))
    lanes = E.Ramp(dtype="int32x8", base=k * 8, stride=tir.const(1), lanes=8)
    vector = S.BufferStore(buffer=w, indices=(lanes,), value=tir.if_then_else(
        k < 1, E.BufferLoad(dtype="float32x8", buffer=v, indices=(lanes,)),
        E.Broadcast(dtype="float32x8", value=tir.const(0.5, "float32"), lanes=8)))
    f = func([a, small, v, b, c, w], tir.seq(loop(i, 16, tir.seq(scalar, tiny)),
                                             loop(k, 2, vector)))
    x = np.arange(1, 11, dtype="float32")
    s = np.array([5, 6, 7], "float32")
    y = np.arange(16, dtype="float32") * 3
    rb, rc, rw = (np.zeros(16, "float32") for _ in range(3))
    run(f, x, s, y, rb, rc, rw)
    want_b = np.full(16, -1.0, "float32")
    want_b[2:12] = x
    want_c = np.full(16, 7.0, "float32")
    want_c[:3] = s
    want_w = np.full(16, 0.5, "float32")
    want_w[:8] = y[:8]
    np.testing.assert_array_equal(rb, want_b)
    np.testing.assert_array_equal(rc, want_c)
    np.testing.assert_array_equal(rw, want_w)
    text = irc.codegen.llvm.codegen_llvm({"main": f}, "llvm").text
    assert "ite_then" not in text  # no branch for any guard

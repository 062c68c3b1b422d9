"""Every intrinsic of irc.tir.intrin through the LLVM backend, against numpy."""

import math

import numpy as np
import pytest
from llvm_kernels import bcast, buf, func, loop, ramp, run, store

import irc
from irc import tir, topi
from irc.codegen import supported_intrinsics
from irc.tir import Schedule, intrin, te
from irc.tir import expr as E
from irc.tir import stmt as S

_erf = np.vectorize(math.erf, otypes=[np.float64])

UNARY = {
    "exp": (np.exp, (-5, 5)), "exp2": (np.exp2, (-5, 5)), "exp10": (lambda x: 10.0 ** x, (-3, 3)),
    "log": (np.log, (0.1, 9)), "log2": (np.log2, (0.1, 9)), "log10": (np.log10, (0.1, 9)),
    "log1p": (np.log1p, (-0.5, 9)), "expm1": (np.expm1, (-3, 3)), "sqrt": (np.sqrt, (0, 9)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.1, 9)), "sin": (np.sin, (-4, 4)),
    "cos": (np.cos, (-4, 4)), "tan": (np.tan, (-1.2, 1.2)), "asin": (np.arcsin, (-1, 1)),
    "acos": (np.arccos, (-1, 1)), "atan": (np.arctan, (-5, 5)), "sinh": (np.sinh, (-3, 3)),
    "cosh": (np.cosh, (-3, 3)), "tanh": (np.tanh, (-5, 5)), "asinh": (np.arcsinh, (-5, 5)),
    "acosh": (np.arccosh, (1, 9)), "atanh": (np.arctanh, (-0.9, 0.9)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-8, 8)), "erf": (_erf, (-3, 3)),
    "fabs": (np.abs, (-5, 5)), "floor": (np.floor, (-5, 5)), "ceil": (np.ceil, (-5, 5)),
    "round": (np.round, (-5, 5)), "trunc": (np.trunc, (-5, 5)),
    "nearbyint": (np.rint, (-5, 5)),
}
BINARY = {
    "pow": (np.power, (0.1, 3), (-2, 2)), "fmod": (np.fmod, (-9, 9), (1, 3)),
    "atan2": (np.arctan2, (-3, 3), (-3, 3)), "hypot": (np.hypot, (-3, 3), (-3, 3)),
    "copysign": (np.copysign, (-3, 3), (-3, 3)),
}


def _data(n, lo, hi, dtype, seed=0):
    x = np.random.default_rng(seed).uniform(lo, hi, n)
    if dtype == "float32" or dtype == "float16":
        # Include exact halves to check round-half-to-even.
        x[:4] = [0.5, 1.5, 2.5, -0.5] if lo < -0.5 and hi > 2.5 else x[:4]
    return x.astype(dtype)


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_math(name, dtype):
    ref, (lo, hi) = UNARY[name]
    n = 37
    a, b = buf("a", (n,), dtype), buf("b", (n,), dtype)
    i = tir.var("i")
    f = func([a, b], loop(i, n, store(b, i, intrin.call_intrin(name, a[i]))))
    x, y = _data(n, lo, hi, dtype), np.zeros(n, dtype)
    run(f, x, y)
    rtol = 2e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(y, ref(x.astype(np.float64)).astype(dtype), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("name", ["exp", "tanh", "sqrt", "erf", "sigmoid", "log", "floor"])
def test_unary_math_vector_lanes(name):
    ref, (lo, hi) = UNARY[name]
    n = 32
    a, b = buf("a", (n,)), buf("b", (n,))
    i = tir.var("i")
    v = intrin.call_intrin(name, a[ramp(i * 16, 16)])
    f = func([a, b], loop(i, n // 16, store(b, ramp(i * 16, 16), v)))
    x, y = _data(n, lo, hi, "float32"), np.zeros(n, "float32")
    run(f, x, y)
    np.testing.assert_allclose(y, ref(x.astype(np.float64)), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid"])
@pytest.mark.parametrize("lanes", [12, 20, 24])
def test_unary_math_vector_lanes_an_odd_number_of_calls_wide(name, lanes):
    """Regression: a vector of 12 lanes goes to libmvec as three 4-lane calls; joining
    the three results built an 8-lane vector (invalid IR). 20 lanes: five calls; 24:
    three 8-lane calls."""
    ref, (lo, hi) = UNARY[name]
    n = 2 * lanes
    a, b = buf("a", (n,)), buf("b", (n,))
    i = tir.var("i")
    v = intrin.call_intrin(name, a[ramp(i * lanes, lanes)])
    f = func([a, b], loop(i, 2, store(b, ramp(i * lanes, lanes), v)))
    x, y = _data(n, lo, hi, "float32"), np.zeros(n, "float32")
    run(f, x, y)
    np.testing.assert_allclose(y, ref(x.astype(np.float64)), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", ["exp", "sqrt", "tanh", "sigmoid", "floor"])
def test_unary_math_float16(name):
    ref, (lo, hi) = UNARY[name]
    n = 16
    a, b = buf("a", (n,), "float16"), buf("b", (n,), "float16")
    i = tir.var("i")
    f = func([a, b], loop(i, n, store(b, i, intrin.call_intrin(name, a[i]))))
    x, y = _data(n, lo, hi, "float16"), np.zeros(n, "float16")
    run(f, x, y)
    np.testing.assert_allclose(y, ref(x.astype(np.float64)).astype("float16"), rtol=1e-3,
                               atol=1e-3)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_math(name):
    ref, (lo1, hi1), (lo2, hi2) = BINARY[name]
    n = 29
    a, b, c = buf("a", (n,)), buf("b", (n,)), buf("c", (n,))
    i = tir.var("i")
    f = func([a, b, c], loop(i, n, store(c, i, intrin.call_intrin(name, a[i], b[i]))))
    x, y = _data(n, lo1, hi1, "float32", 1), _data(n, lo2, hi2, "float32", 2)
    z = np.zeros(n, "float32")
    run(f, x, y, z)
    np.testing.assert_allclose(z, ref(x.astype(np.float64), y.astype(np.float64)), rtol=3e-6,
                               atol=1e-6)


def test_float_predicates():
    x = np.array([0.0, np.nan, np.inf, -np.inf, 1.5, -2.0, np.nan, 3.0], "float32")
    n = len(x)
    a = buf("a", (n,))
    outs = [buf(s, (n,), "bool") for s in ("p", "q", "r")]
    i = tir.var("i")
    body = tir.seq(store(outs[0], i, intrin.isnan(a[i])), store(outs[1], i, intrin.isinf(a[i])),
                   store(outs[2], i, intrin.isfinite(a[i])))
    f = func([a, *outs], loop(i, n, body))
    res = [np.zeros(n, bool) for _ in outs]
    run(f, x, *res)
    np.testing.assert_array_equal(res[0], np.isnan(x))
    np.testing.assert_array_equal(res[1], np.isinf(x))
    np.testing.assert_array_equal(res[2], np.isfinite(x))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "uint32", "int64"])
def test_bitwise_and_shifts(dtype):
    n = 41
    rng = np.random.default_rng(7)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, n, endpoint=True).astype(dtype)
    y = rng.integers(info.min, info.max, n, endpoint=True).astype(dtype)
    s = rng.integers(0, info.bits, n).astype(dtype)
    a, b, sh = buf("a", (n,), dtype), buf("b", (n,), dtype), buf("s", (n,), dtype)
    names = ["and", "or", "xor", "not", "shl", "shr", "popcount"]
    outs = [buf(k, (n,), dtype) for k in names]
    i = tir.var("i")
    exprs = [intrin.bitwise_and(a[i], b[i]), intrin.bitwise_or(a[i], b[i]),
             intrin.bitwise_xor(a[i], b[i]), intrin.bitwise_not(a[i]),
             intrin.shift_left(a[i], sh[i]), intrin.shift_right(a[i], sh[i]),
             intrin.popcount(a[i])]
    f = func([a, b, sh, *outs], loop(i, n, tir.seq(*[store(o, i, e) for o, e in zip(outs,
                                                                                   exprs)])))
    res = [np.zeros(n, dtype) for _ in outs]
    run(f, x, y, s, *res)
    np.testing.assert_array_equal(res[0], x & y)
    np.testing.assert_array_equal(res[1], x | y)
    np.testing.assert_array_equal(res[2], x ^ y)
    np.testing.assert_array_equal(res[3], ~x)
    np.testing.assert_array_equal(res[4], np.left_shift(x, s))
    np.testing.assert_array_equal(res[5], np.right_shift(x, s))
    bits = np.unpackbits(x.view(np.uint8).reshape(n, -1), axis=1).sum(axis=1)
    np.testing.assert_array_equal(res[6], bits.astype(dtype))


def test_reinterpret_and_abs_and_likely():
    n = 8
    x = np.array([1.0, -2.0, 0.5, np.inf, -0.0, 3.25, -7.0, 100.0], "float32")
    a, bits, absv, back = buf("a", (n,)), buf("bits", (n,), "int32"), buf("abs", (n,)), \
        buf("back", (n,))
    ints, iabs = buf("ints", (n,), "int32"), buf("iabs", (n,), "int32")
    i = tir.var("i")
    body = tir.seq(
        store(bits, i, intrin.reinterpret("int32", a[i])),
        store(absv, i, intrin.abs(a[i])),
        store(back, i, intrin.reinterpret("float32", bits[i])),
        store(iabs, i, tir.if_then_else(intrin.likely(ints[i] < 0), intrin.abs(ints[i]),
                                        ints[i])))
    f = func([a, bits, absv, back, ints, iabs], loop(i, n, body))
    rb, ra, rback = np.zeros(n, "int32"), np.zeros(n, "float32"), np.zeros(n, "float32")
    iv = np.arange(-4, 4, dtype="int32")
    ri = np.zeros(n, "int32")
    run(f, x, rb, ra, rback, iv, ri)
    np.testing.assert_array_equal(rb, x.view(np.int32))
    np.testing.assert_array_equal(ra, np.abs(x))
    np.testing.assert_array_equal(rback, x)
    np.testing.assert_array_equal(ri, np.abs(iv))


def test_reinterpret_half_bits():
    n = 4
    x = np.array([1.0, -2.5, 65504.0, 0.1], "float16")
    a, out = buf("a", (n,), "float16"), buf("o", (n,), "uint16")
    i = tir.var("i")
    f = func([a, out], loop(i, n, store(out, i, intrin.reinterpret("uint16", a[i]))))
    res = np.zeros(n, "uint16")
    run(f, x, res)
    np.testing.assert_array_equal(res, x.view(np.uint16))


def test_every_intrinsic_is_supported():
    missing = set(intrin.INTRINSICS) - set(supported_intrinsics())
    assert not missing, f"intrinsics without LLVM lowering: {sorted(missing)}"


def test_unknown_intrinsic_is_a_codegen_error():
    a = buf("a", (4,))
    i = tir.var("i")
    call = E.Call(dtype="float32", op="no_such_op", args=(a[i],))
    f = func([a], loop(i, 4, store(a, i, call)))
    with pytest.raises(irc.CodegenError, match="no_such_op"):
        irc.build(f)


def test_call_extern_libm():
    n = 5
    a, b = buf("a", (n,), "float64"), buf("b", (n,), "float64")
    i = tir.var("i")
    call = E.Call(dtype="float64", op="call_extern",
                  args=(E.StringImm(value="cbrt"), a[i]))
    f = func([a, b], loop(i, n, store(b, i, call)))
    x, y = np.array([1.0, 8.0, 27.0, -64.0, 2.0]), np.zeros(n)
    run(f, x, y)
    np.testing.assert_allclose(y, np.cbrt(x))


def test_broadcast_of_runtime_value():
    n = 16
    a, b = buf("a", (1,)), buf("b", (n,))
    i = tir.var("i")
    f = func([a, b], loop(i, 1, store(b, ramp(0, n), bcast(a[0], n) * 2.0)))
    x, y = np.array([1.25], "float32"), np.zeros(n, "float32")
    run(f, x, y)
    np.testing.assert_allclose(y, np.full(n, 2.5))


def test_gpu_barrier_is_an_error_on_cpu():
    a = buf("a", (4,))
    sync = E.Call(dtype="int32", op="tvm_storage_sync", args=(E.StringImm(value="shared"),))
    f = func([a], tir.seq(S.Evaluate(value=sync), store(a, 0, 1.0)))
    with pytest.raises(irc.CodegenError, match="GPU barrier"):
        irc.build(f)


def test_vector_exp_declared_once_when_llvm_also_vectorizes_a_loop():
    """Regression: a kernel with an explicitly vectorized exp (which calls libmvec
    directly) and a plain loop that LLVM's vectorizer turns into llvm.exp.v16f32 (mapped
    to libmvec after optimization) declared the libmvec function twice."""
    x = te.placeholder((4, 64), name="x")
    z = topi.exp(topi.nn.softmax(x))
    f = te.create_prim_func([x, z])
    sch = Schedule(f)
    _, j = sch.get_loops(sch.get_block("T_softmax_exp"))
    sch.vectorize(sch.split(j, [None, 16])[1])
    rt = irc.build(sch.mod, target="llvm")
    a = np.random.default_rng(0).random((4, 64), dtype=np.float32)
    out = np.zeros((4, 64), "float32")
    rt(a, out)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, np.exp(e / e.sum(axis=1, keepdims=True)), rtol=1e-5)


def test_a_kernel_named_like_the_libm_function_it_calls_runs():
    """A float64 kernel named ``exp`` calls libm's ``exp``: it is emitted under another
    symbol, so the call does not bind to the kernel itself (it recursed until the stack
    overflowed)."""
    import irc
    from irc import te
    from irc.runtime import tensor
    from irc.tir import intrin

    A = te.placeholder((3, 4), "float64", name="A")
    B = te.compute((3, 4), lambda i, j: intrin.exp(A[i, j]), name="B")
    from irc.core.module import IRModule

    f = te.create_prim_func([A, B]).with_attr("global_symbol", "exp")
    lib = irc.build(IRModule(functions={"exp": f}), target="llvm")
    a = np.linspace(-2, 2, 12).reshape(3, 4)
    out = tensor(np.zeros((3, 4)))
    lib["exp"](tensor(a), out)
    np.testing.assert_allclose(out.numpy(), np.exp(a), rtol=1e-12)


@pytest.mark.parametrize("lanes", [8, 16, 4])
def test_vector_exp_beyond_the_normal_range_matches_numpy(lanes):
    """libmvec's float exp has a slow path for lanes beyond about +-87.3 (a softmax under
    an attention mask of -10000 took it on every row); irc moves such arguments into the
    fast range. The results must stay exp's: zeros, infinities, denormals and NaN."""
    n = 4096
    x = te.placeholder((n,), name="x")
    y = te.compute((n,), lambda i: intrin.exp(x[i]), name="y")
    sch = Schedule(te.create_prim_func([x, y]))
    (i,) = sch.get_loops(sch.get_block("y"))
    sch.vectorize(sch.split(i, [None, lanes])[1])
    rt = irc.build(sch.mod, target="llvm")
    a = np.random.default_rng(1).uniform(-120, 120, n).astype("float32")
    a[:12] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 87.0, -87.0, 88.72, 88.73, -103.97,
              -1e4, 3e38]
    a[64:64 + lanes] = np.linspace(-5, 5, lanes)  # a vector with every lane inside
    out = np.zeros(n, "float32")
    rt(a, out)
    with np.errstate(over="ignore", under="ignore"):
        ref = np.exp(a.astype(np.float64))
    normal = (ref > np.finfo(np.float32).tiny) & (ref < np.finfo(np.float32).max)
    np.testing.assert_allclose(out[normal], ref[normal], rtol=1e-6)
    tiny = ref <= np.finfo(np.float32).tiny
    np.testing.assert_allclose(out[tiny], ref[tiny], rtol=0, atol=3e-45)
    assert np.isposinf(out[ref >= float(np.finfo(np.float32).max) * 1.001]).all()
    assert np.isnan(out[2]) and out[1] == 0.0 and out[10] == 0.0 and np.isposinf(out[0])


def test_masked_softmax_gives_exact_zeros():
    x = te.placeholder((4, 64), name="x")
    z = topi.nn.softmax(x)
    sch = Schedule(te.create_prim_func([x, z]))
    _, j = sch.get_loops(sch.get_block("T_softmax_exp"))
    sch.vectorize(sch.split(j, [None, 8])[1])
    rt = irc.build(sch.mod, target="llvm")
    a = np.random.default_rng(0).random((4, 64), dtype=np.float32)
    a[:, 40:] -= 10000.0  # an attention mask
    out = np.zeros((4, 64), "float32")
    rt(a, out)
    assert (out[:, 40:] == 0.0).all()
    e = np.exp(a[:, :40] - a[:, :40].max(axis=1, keepdims=True))
    np.testing.assert_allclose(out[:, :40], e / e.sum(axis=1, keepdims=True), rtol=1e-5)

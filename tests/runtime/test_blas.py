"""OpenBLAS gemm through the scipy-openblas32 wheel (irc.runtime.blas), against numpy."""

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

import irc
from irc.runtime import blas

pytest.importorskip("scipy_openblas32", reason="the BLAS backend needs the 'blas' extra "
                                               "(pip install 'irc[blas]')")

# (m, n, k): non-square, odd sizes, and a size-1 dimension.
SHAPES = [(3, 5, 7), (1, 6, 4), (17, 9, 33)]
TOLERANCE = {"float32": 1e-5, "float64": 1e-12}


def _random(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _operands(m, n, k, dtype, trans_a, trans_b, batch=None, b_batch=None, seed=0):
    """(a, b, expected op(a) @ op(b)) stored as the transpose flags say."""
    lead_a = () if batch is None else (batch,)
    lead_b = () if batch is None else (b_batch or batch,)
    a = _random((*lead_a, *((k, m) if trans_a else (m, k))), dtype, seed)
    b = _random((*lead_b, *((n, k) if trans_b else (k, n))), dtype, seed + 1)
    op_a = np.swapaxes(a, -1, -2) if trans_a else a
    op_b = np.swapaxes(b, -1, -2) if trans_b else b
    return a, b, op_a.astype(np.float64) @ op_b.astype(np.float64)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("trans_a,trans_b", list(itertools.product([False, True], repeat=2)))
def test_gemm_matches_numpy(dtype, trans_a, trans_b):
    for m, n, k in SHAPES:
        a, b, expected = _operands(m, n, k, dtype, trans_a, trans_b)
        c = np.full((m, n), np.nan, dtype)  # beta = 0 ignores c's old values, NaN too
        assert blas.gemm(a, b, c, trans_a=trans_a, trans_b=trans_b) is c
        np.testing.assert_allclose(c, expected, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gemm_alpha_beta(dtype):
    a, b, expected = _operands(4, 6, 5, dtype, False, True)
    c0 = _random((4, 6), dtype, seed=7)
    c = c0.copy()
    blas.gemm(a, b, c, trans_b=True, alpha=np.float64(0.5), beta=-2)
    tol = TOLERANCE[dtype]
    np.testing.assert_allclose(c, 0.5 * expected - 2 * c0, rtol=tol, atol=tol)


def test_gemm_on_tensors_and_mixed():
    a, b, expected = _operands(8, 3, 6, "float32", True, False)
    ta, tb, tc = irc.tensor(a), irc.tensor(b), irc.runtime.empty((8, 3), "float32")
    assert blas.gemm(ta, tb, tc, trans_a=True) is tc
    np.testing.assert_allclose(tc.numpy(), expected, rtol=1e-5, atol=1e-5)
    c = np.zeros((8, 3), np.float32)
    blas.gemm(ta, b, c, trans_a=True)  # a Tensor and numpy arrays together
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)


def test_gemm_empty_sizes():
    c = np.ones((3, 4))
    blas.gemm(np.ones((3, 0)), np.ones((0, 4)), c, beta=2.0)  # k = 0: c = beta * c
    np.testing.assert_array_equal(c, np.full((3, 4), 2.0))
    empty = np.ones((0, 4))
    blas.gemm(np.ones((0, 5)), np.ones((5, 4)), empty)  # m = 0: nothing to do
    assert empty.shape == (0, 4)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, True)])
@pytest.mark.parametrize("b_batch", [None, 1])
def test_batch_gemm(dtype, trans_a, trans_b, b_batch):
    a, b, expected = _operands(5, 3, 4, dtype, trans_a, trans_b, batch=6, b_batch=b_batch)
    c = np.full((6, 5, 3), 1.0, dtype)
    blas.batch_gemm(a, b, c, trans_a=trans_a, trans_b=trans_b, beta=1.0)
    tol = TOLERANCE[dtype]
    np.testing.assert_allclose(c, expected + 1.0, rtol=tol, atol=tol)


def test_batch_gemm_on_tensors():
    a, b, expected = _operands(2, 7, 3, "float64", False, False, batch=3, b_batch=1)
    tc = irc.runtime.zeros((3, 2, 7), "float64")
    blas.batch_gemm(irc.tensor(a), irc.tensor(b), tc)
    np.testing.assert_allclose(tc.numpy(), expected, rtol=1e-12)


def test_plan_with_raw_pointers():
    a, b, expected = _operands(4, 5, 3, "float32", False, True, batch=3, b_batch=1)
    plan = blas.BlasGemmPlan(dtype="float32", m=4, n=5, k=3, trans_b=True, batch=3,
                             b_broadcast=True, alpha=2.0)
    assert (plan.lda, plan.ldb, plan.ldc) == (3, 3, 5)
    assert (plan.stride_a, plan.stride_b, plan.stride_c) == (4 * 3 * 4, 0, 4 * 5 * 4)
    c = np.empty((3, 4, 5), np.float32)
    plan(a.ctypes.data, b.ctypes.data, c.ctypes.data)
    np.testing.assert_allclose(c, 2 * expected, rtol=1e-5, atol=1e-5)

    single = blas.BlasGemmPlan(dtype="float64", m=3, n=2, k=4, trans_a=True)
    assert (single.lda, single.ldb, single.ldc) == (3, 2, 2)
    a2, b2, expected2 = _operands(3, 2, 4, "float64", True, False)
    t = irc.runtime.empty((3, 2), "float64")
    single(a2.ctypes.data, b2.ctypes.data, t.data_ptr)
    np.testing.assert_allclose(t.numpy(), expected2, rtol=1e-12)


def test_plan_json_round_trip():
    plan = blas.BlasGemmPlan(dtype="float64", m=7, n=1, k=2, trans_a=True, batch=4,
                             b_broadcast=True, alpha=0.5, beta=1)
    saved = json.loads(json.dumps(plan.to_json()))
    assert saved == {"dtype": "float64", "m": 7, "n": 1, "k": 2, "trans_a": True,
                     "trans_b": False, "batch": 4, "b_broadcast": True, "alpha": 0.5,
                     "beta": 1.0}
    again = blas.BlasGemmPlan.from_json(saved)
    assert again == plan and again.ldb == plan.ldb == 1
    with pytest.raises(blas.BlasError, match=r"unknown keys \['lda'\], missing keys \['k'\]"):
        blas.BlasGemmPlan.from_json({"dtype": "float32", "m": 1, "n": 1, "lda": 1})


@pytest.mark.parametrize("kwargs,message", [
    (dict(dtype="float16", m=1, n=1, k=1), "dtype must be float32 or float64, not 'float16'"),
    (dict(dtype="float32", m=-1, n=1, k=1), "m must be an int >= 0, not -1"),
    (dict(dtype="float32", m=1, n=1, k=1.0), "k must be an int >= 0, not 1.0"),
    (dict(dtype="float32", m=1, n=1, k=1, trans_a=1), "trans_a must be a bool, not 1"),
    (dict(dtype="float32", m=1, n=2**31, k=1), "n = 2147483648 exceeds the 32-bit BLAS"),
])
def test_plan_errors(kwargs, message):
    with pytest.raises(blas.BlasError, match=message):
        blas.BlasGemmPlan(**kwargs)


def _f32(*shape):
    return np.zeros(shape, np.float32)


@pytest.mark.parametrize("call,message", [
    (lambda: blas.gemm(_f32(3, 5), _f32(6, 4), _f32(3, 4)),
     r"gemm: b must have shape \(5, n\); got \(6, 4\)"),
    (lambda: blas.gemm(_f32(3, 5), _f32(5, 4), _f32(3, 4), trans_b=True),
     r"gemm: b \(trans_b=True\) must have shape \(n, 5\); got \(5, 4\)"),
    (lambda: blas.gemm(_f32(5, 3), _f32(5, 4), _f32(4, 3), trans_a=True),
     r"gemm: c must have shape \(3, 4\); got \(4, 3\)"),
    (lambda: blas.gemm(_f32(2, 3, 5), _f32(5, 4), _f32(3, 4)),
     r"gemm: a must have shape \(m, k\); got \(2, 3, 5\)"),
    (lambda: blas.batch_gemm(_f32(3, 5), _f32(5, 4), _f32(3, 4), trans_a=True),
     r"batch_gemm: a \(trans_a=True\) must have shape \(batch, k, m\); got \(3, 5\)"),
    (lambda: blas.batch_gemm(_f32(2, 3, 5), _f32(3, 5, 4), _f32(2, 3, 4)),
     r"batch_gemm: b must have batch 2 \(as a\) or 1; got shape \(3, 5, 4\)"),
    (lambda: blas.batch_gemm(_f32(2, 3, 5), _f32(5, 4), _f32(2, 3, 4)),
     r"batch_gemm: b must have shape \(2, 5, n\); got \(5, 4\)"),
    (lambda: blas.batch_gemm(_f32(2, 3, 5), _f32(1, 5, 4), _f32(1, 3, 4)),
     r"batch_gemm: c must have shape \(2, 3, 4\); got \(1, 3, 4\)"),
])
def test_shape_errors(call, message):
    with pytest.raises(blas.BlasError, match=message):
        call()


@pytest.mark.parametrize("call,message", [
    (lambda: blas.gemm(np.zeros((2, 2), np.int32), _f32(2, 2), _f32(2, 2)),
     "gemm: a has dtype int32; BLAS gemm takes float32 or float64"),
    (lambda: blas.gemm(np.zeros((2, 2), ">f4"), _f32(2, 2), _f32(2, 2)),
     "native byte order"),
    (lambda: blas.gemm(_f32(2, 2), np.zeros((2, 2)), _f32(2, 2)),
     "gemm: b has dtype float64 but a has float32; a, b and c must have one dtype"),
    (lambda: blas.gemm(_f32(2, 2), _f32(2, 2), irc.runtime.zeros((2, 2), "float16")),
     "gemm: c has dtype float16; BLAS gemm takes float32 or float64"),
    (lambda: blas.gemm(_f32(2, 3).T, _f32(2, 2), _f32(3, 2)),
     r"gemm: a is not C-contiguous \(shape \(3, 2\), strides \(4, 12\)\)\n"
     r"hint: pass np.ascontiguousarray\(a\)"),
    (lambda: blas.gemm(_f32(2, 2), _f32(2, 2), np.broadcast_to(_f32(1, 2), (2, 2))),
     "gemm: c is not C-contiguous"),
    (lambda: blas.gemm([[1.0]], _f32(1, 1), _f32(1, 1)),
     "gemm: a must be a numpy array or an irc Tensor, not list"),
])
def test_argument_errors(call, message):
    with pytest.raises(blas.BlasError, match=message):
        call()


def test_read_only_output():
    c = _f32(2, 2)
    c.setflags(write=False)
    with pytest.raises(blas.BlasError, match="gemm: c is read-only"):
        blas.gemm(_f32(2, 2), _f32(2, 2), c)
    assert issubclass(blas.BlasError, irc.IRCError)


def test_thread_count_round_trip():
    before = blas.get_num_threads()
    try:
        blas.set_num_threads(1)
        assert blas.get_num_threads() == 1
        blas.set_num_threads(2)
        assert blas.get_num_threads() == 2
    finally:
        blas.set_num_threads(before)
    assert blas.get_num_threads() == before
    with pytest.raises(blas.BlasError, match="n must be a positive int, not 0"):
        blas.set_num_threads(0)


def test_library_is_the_wheels():
    import scipy_openblas32

    lib = blas.load_openblas()
    assert lib is blas.load_openblas()  # loaded once
    assert lib.path.startswith(scipy_openblas32.get_lib_dir())
    assert lib.sgemm.__name__ == blas.SYMBOL_PREFIX + "cblas_sgemm"


def test_missing_wheel(monkeypatch):
    monkeypatch.setattr(blas, "_library", None)
    monkeypatch.setitem(sys.modules, "scipy_openblas32", None)  # import fails
    with pytest.raises(irc.MissingDependencyError) as err:
        blas.gemm(_f32(2, 2), _f32(2, 2), _f32(2, 2))
    assert str(err.value) == ("the BLAS backend needs the package 'scipy-openblas32': "
                              "pip install 'irc[blas]'")
    assert isinstance(err.value, ImportError)
    with pytest.raises(irc.MissingDependencyError, match=r"irc\[blas\]"):
        blas.get_num_threads()


def test_import_does_not_load_the_library():
    code = ("import sys, irc.runtime.blas as b; "
            "assert 'scipy_openblas32' not in sys.modules and b._library is None")
    subprocess.run([sys.executable, "-c", code], check=True)

"""The ``cublas`` dispatch backend: its pattern table and check functions, the library
module it compiles (cuBLAS plans and CUDA epilogues, NVRTC needs no GPU), executables
that carry it; on a GPU (tests marked ``cuda``) the VM on ``irc.cuda(0)`` matches
numpy for every pattern and dtype pair.
"""

from __future__ import annotations

import numpy as np
import pytest
from gemm_modules import (
    batch_matmul_module,
    dense_module,
    dispatch,
    packed_calls,
    random_inputs,
)

import irc
from irc.dispatch import get_patterns_with_prefix
from irc.runtime.cublas import CublasError, CublasGemmPlan
from irc.runtime.cublas_module import CublasModule
from irc.runtime.cuda_program import CUDAProgramModule
from irc.vm.executable import Executable

pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVIDIA's cuda-bindings (irc[cuda])")

CUBLAS = get_patterns_with_prefix("cublas")


def test_the_table_has_the_dense_and_batch_patterns_most_specific_first():
    names = [e.name for e in CUBLAS]
    for prefix in ("cublas.matmul_transposed", "cublas.matmul"):
        for tail in ("_bias_relu", "_bias_gelu", "_bias"):
            assert prefix + tail in names
        assert names.index(prefix + "_bias_relu") < names.index(prefix + "_bias") < \
            names.index(prefix)
    assert "cublas.batch_matmul" in names


@pytest.mark.parametrize("dtype,out_dtype,accepted", [
    ("float32", None, True), ("float16", None, True), ("float16", "float32", True),
    ("bfloat16", None, True), ("bfloat16", "float32", True), ("float64", None, False),
    ("float32", "float16", False)])
def test_check_functions_accept_the_dtypes_cublas_multiplies(dtype, out_dtype, accepted):
    mod = dense_module((8, 64), 32, True, (32,), "relu", dtype=dtype, out_dtype=out_dtype)
    calls = packed_calls(dispatch(mod, CUBLAS))
    assert calls == (["fused_permute_dims_matmul_add_nn_relu_cublas"] if accepted else [])


def test_int8_needs_multiples_of_four():
    ok = dense_module((8, 64), 32, True, None, "", dtype="int8", out_dtype="int32")
    assert packed_calls(dispatch(ok, CUBLAS)) == ["fused_permute_dims_matmul_cublas"]
    odd = dense_module((8, 62), 30, True, None, "", dtype="int8", out_dtype="int32")
    assert packed_calls(dispatch(odd, CUBLAS)) == []


def test_the_library_module_holds_plans_and_compiled_epilogues(tmp_path):
    mod = dense_module((2, 3, 64), 48, True, (48,), "gelu", dtype="float16",
                       out_dtype="float32")
    out = dispatch(mod, CUBLAS)
    (ext,) = out.attrs["external_mods"]
    assert isinstance(ext, CublasModule)
    (spec,) = ext.specs.values()
    assert spec["plan"] == CublasGemmPlan(in_dtype="float16", out_dtype="float32", m=6, n=48,
                                          k=64, trans_b=True).to_json()
    assert isinstance(ext.epilogues, CUDAProgramModule)
    assert ext.epilogues.cubin[:4] == b"\x7fELF" and "erf" in ext.epilogues.get_source()
    ex = irc.compile(out, target="cuda")
    path = str(tmp_path / "dense.ircx")
    ex.save(path)
    back = Executable.load(path)
    assert isinstance(back.external[0], CublasModule)
    assert back.external[0].specs == ext.specs
    assert back.external[0].epilogues.cubin == ext.epilogues.cubin


def test_plans_reject_bad_sizes_and_dtypes():
    with pytest.raises(CublasError, match="m=0 must be a positive 32-bit int"):
        CublasGemmPlan(in_dtype="float32", out_dtype="float32", m=0, n=1, k=1)
    with pytest.raises(CublasError, match="unsupported dtypes float64"):
        CublasGemmPlan(in_dtype="float64", out_dtype="float64", m=1, n=1, k=1)
    with pytest.raises(CublasError, match="unknown fields"):
        CublasGemmPlan.from_json({"in_dtype": "float32", "bogus": 1})


# -- on a GPU -----------------------------------------------------------------------------

def _run_gpu(mod, args):
    ex = irc.compile(mod, target=irc.target.Target.from_device(irc.cuda(0)))
    dev = irc.cuda(0)
    vm = irc.vm.VirtualMachine(ex, dev)
    return vm["main"](*[irc.tensor(a, dev) for a in args]).numpy()


GPU_CASES = [(dtype, out, transposed, bias, act)
             for dtype, out in [("float32", None), ("float16", "float32"), ("float16", None)]
             for transposed in (True, False)
             for bias, act in [(None, ""), ("vector", ""), ("vector", "relu"),
                               ("vector", "gelu"), ("row", "silu")]]


@pytest.mark.cuda
@pytest.mark.parametrize("dtype,out_dtype,transposed,bias,act", GPU_CASES)
def test_every_dense_pattern_matches_numpy_on_the_gpu(dtype, out_dtype, transposed, bias,
                                                       act):
    n = 48
    bias_shape = {None: None, "vector": (n,), "row": (1, n)}[bias]
    mod = dense_module((2, 5, 64), n, transposed, bias_shape, act, dtype=dtype,
                       out_dtype=out_dtype)
    args = random_inputs(mod, np.random.default_rng(0))
    out = dispatch(mod, CUBLAS)
    assert len(packed_calls(out)) == 1
    got = _run_gpu(out, args)
    # irc's own GPU build of the same graph is the reference.
    want = _run_gpu(mod, args)
    tol = 1e-4 if dtype == "float32" else 2e-2
    np.testing.assert_allclose(got.astype("float64"), want.astype("float64"), rtol=tol,
                               atol=tol)


@pytest.mark.cuda
def test_batch_matmul_and_int8_on_the_gpu():
    for b_batch in (4, 1):
        mod = batch_matmul_module((4, 16, 32), (b_batch, 32, 8))
        args = random_inputs(mod, np.random.default_rng(1))
        got = _run_gpu(dispatch(mod, CUBLAS), args)
        np.testing.assert_allclose(got, args[0] @ args[1], rtol=1e-4, atol=1e-4)
    mod = dense_module((8, 64), 32, True, None, "", dtype="int8", out_dtype="int32")
    args = random_inputs(mod, np.random.default_rng(2))
    got = _run_gpu(dispatch(mod, CUBLAS), args)
    np.testing.assert_array_equal(got, args[0].astype(np.int32) @ args[1].T.astype(np.int32))

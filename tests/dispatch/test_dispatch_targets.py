"""A library backend for another device than the target is refused when the module is
compiled (cuBLAS for llvm, BLAS or oneDNN for cuda), not left to fail when it runs."""

import os
import sys

import pytest

import irc
from irc import passes
from irc.dispatch import get_patterns_with_prefix
from irc.target import Target

sys.path.insert(0, os.path.dirname(__file__))
from gemm_modules import dense_module, dispatch


def _matmul():
    return dense_module((4, 8), 4, False, None, "")


@pytest.mark.parametrize("target, names, message", [
    ("llvm", "cublas", r"dispatch='cublas': the dispatch backend 'cublas' runs on NVIDIA "
                       r"GPUs \(cuda targets\), but the target is llvm"),
    ("llvm", ["cublas.matmul"], r"dispatch='cublas.matmul': the dispatch backend 'cublas'"),
    ("cuda", "blas", r"dispatch='blas': the dispatch backend 'blas' runs on the CPU "
                     r"\(llvm targets\), but the target is cuda"),
    ("cuda", ["dnnl", "cublas"], r"dispatch='dnnl': the dispatch backend 'dnnl' runs on "
                                 r"the CPU"),
])
def test_a_backend_for_another_device_is_refused_at_compile_time(target, names, message):
    with pytest.raises(irc.BuildError, match=message) as info:
        irc.compile(_matmul(), target, dispatch=names)
    same = "'cublas'" if target == "cuda" else "'blas' or 'dnnl'"
    assert f"dispatch to {same}" in str(info.value)


def test_run_codegen_checks_the_current_target():
    fused = passes.FuseOpsByPattern(get_patterns_with_prefix("blas."),
                                    annotate_codegen=True)(_matmul())
    with Target("cuda"), pytest.raises(irc.BuildError, match="RunCodegen: the dispatch "
                                                              "backend 'blas' runs on the CPU"):
        passes.RunCodegen()(fused)


def test_a_module_holding_cublas_functions_does_not_compile_for_the_cpu():
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVIDIA's cuda-bindings")
    out = dispatch(_matmul(), get_patterns_with_prefix("cublas."))
    with pytest.raises(irc.BuildError, match="library functions: the dispatch backend "
                                             "'cublas' runs on NVIDIA GPUs"):
        irc.compile(out, "llvm")


def test_a_misspelt_backend_names_the_close_ones():
    with pytest.raises(irc.IRCError, match="no dispatch pattern named 'blass'; did you mean "
                                           "blas"):
        irc.compile(_matmul(), "llvm", dispatch="blass")

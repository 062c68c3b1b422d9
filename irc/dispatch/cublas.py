"""The ``cublas`` dispatch backend: matrix products on cuBLAS (NVIDIA GPUs), their bias
and activation epilogues compiled by irc to CUDA.

Patterns, most specific first: ``cublas.matmul_transposed_bias_{relu,gelu,gelu_tanh,
silu}``, ``cublas.matmul_transposed_bias``, ``cublas.matmul_transposed`` (seed 003's
``cublas.matmul_transposed_bias_relu``: a dense layer with weights ``[out, in]``), the
same without ``_transposed`` (weights ``[in, out]``), and ``cublas.batch_matmul``.

The check functions accept, as (input, output) dtypes: float32 -> float32, float16 ->
float16 or float32, bfloat16 -> bfloat16 or float32 (accumulating in float32), int8 ->
int32 (with ``k`` and ``n`` multiples of 4, as cuBLAS's integer kernels need); static
shapes; a bias of the output's dtype broadcasting to the product. The code generator
(:func:`cublas_codegen`) lays out a :class:`~irc.runtime.cublas.CublasGemmPlan` per
function and compiles the epilogues with the dlight GPU rules and NVRTC for the current
``cuda`` target (``sm_90`` when none is current); the result is a
:class:`~irc.runtime.cublas_module.CublasModule`, run by the VM on ``irc.cuda(i)``.
"""

from __future__ import annotations

import numpy as np

from ..codegen import build
from ..core.module import IRModule
from ..core.target import Target
from ..ir.expr import Function
from ..runtime.cublas import CublasGemmPlan
from ..runtime.cublas_module import CublasModule
from ._gemm import ACTIVATIONS, GemmFunction, gemm_entries
from .codegen import register_codegen
from .table import PatternCheckContext, register_patterns

_DTYPES = {("float32", "float32"), ("float16", "float16"), ("float16", "float32"),
           ("bfloat16", "bfloat16"), ("bfloat16", "float32"), ("int8", "int32")}


def _aligned(ctx: PatternCheckContext) -> bool:
    """cuBLAS's int8 products need leading dimensions that are multiples of 4."""
    if ctx.dtype("lhs") != "int8":
        return True
    lhs, root = ctx.shape("lhs"), ctx.shape("root")
    return lhs is not None and root is not None and lhs[-1] % 4 == 0 and root[-1] % 4 == 0


register_patterns(gemm_entries("cublas", list(ACTIVATIONS),
                               lambda i, o: (i, o) in _DTYPES, extra=_aligned))


def _target() -> Target:
    current = Target.current(allow_none=True)
    return current if current is not None and current.kind.name == "cuda" \
        else Target("cuda")


@register_codegen("cublas", device_type="cuda")
def cublas_codegen(funcs: list[tuple[str, Function]]) -> CublasModule:
    """A :class:`CublasModule` with one function per ``(symbol, composite function)``."""
    constants: dict[str, np.ndarray] = {}
    specs: dict[str, dict] = {}
    kernels = {}
    target = _target()
    for symbol, func in funcs:
        f = GemmFunction("cublas", symbol, func, constants)
        if (f.in_dtype, f.dtype) not in _DTYPES:
            raise f.error(f"dtypes {f.in_dtype} -> {f.dtype} are not a cuBLAS product")
        d = f.dims()
        plan = CublasGemmPlan(in_dtype=f.in_dtype, out_dtype=f.dtype, m=d["m"], n=d["n"],
                              k=d["k"], trans_b=d["trans_b"], batch=d["batch"],
                              b_broadcast=d["b_broadcast"])
        specs[symbol] = f.spec(plan.to_json(), target, kernels)
    lib = build(IRModule(functions=kernels), target=target) if kernels else None
    return CublasModule(specs, constants, lib)

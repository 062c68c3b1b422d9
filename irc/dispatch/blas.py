"""The ``blas`` dispatch backend: matrix products on OpenBLAS (the ``scipy-openblas32``
wheel, extra ``irc[blas]``), their bias and activation epilogues compiled by irc.

Patterns (most specific first, so a longer match wins), with ``x`` any tensor of rank
>= 2 and ``w`` a matrix:

- ``blas.matmul_transposed_bias_{relu,gelu,gelu_tanh,silu}``, ``blas.matmul_transposed_bias``,
  ``blas.matmul_transposed``: ``act(matmul(x, permute_dims(w)) + bias)`` — a dense layer
  with PyTorch-layout weights ``[out, in]`` (seed 003's ``nn.Linear`` + ``nn.ReLU``);
- ``blas.matmul_bias_{relu,gelu,gelu_tanh,silu}``, ``blas.matmul_bias``, ``blas.matmul``:
  the same with ``w`` as ``[in, out]``;
- ``blas.batch_matmul``: ``matmul(a, b)`` of two rank-3 tensors (``b``'s batch equal or 1).

The check functions accept float32 and float64 with static shapes, no dtype change
(``out_dtype`` "void" or the inputs' dtype), and a bias that broadcasts to the output.
Leading dimensions of ``x`` fold into the rows of one product. The code generator
(:func:`blas_codegen`, used by ``RunCodegen``) lays out one
:class:`~irc.runtime.blas.BlasGemmPlan` per function and compiles the epilogue (bias add,
activation) with LLVM into the module's kernel library; the result is a
:class:`~irc.runtime.blas_module.BlasModule`.
"""

from __future__ import annotations

import numpy as np

from ..codegen import build
from ..core.module import IRModule
from ..core.target import Target
from ..ir.expr import Function
from ..runtime.blas import BlasGemmPlan
from ..runtime.blas_module import BlasModule
from ._gemm import ACTIVATIONS, GemmFunction, gemm_entries
from .codegen import register_codegen
from .table import register_patterns

_DTYPES = ("float32", "float64")


register_patterns(gemm_entries("blas", list(ACTIVATIONS),
                               lambda i, o: i == o and i in _DTYPES))


@register_codegen("blas", device_type="cpu")
def blas_codegen(funcs: list[tuple[str, Function]]) -> BlasModule:
    """A :class:`BlasModule` with one function per ``(symbol, composite function)``."""
    constants: dict[str, np.ndarray] = {}
    specs: dict[str, dict] = {}
    kernels = {}
    llvm = Target("llvm")
    for symbol, func in funcs:
        f = GemmFunction("blas", symbol, func, constants)
        if f.dtype not in _DTYPES or f.in_dtype != f.dtype:
            raise f.error(f"dtype {f.in_dtype} -> {f.dtype} (the blas backend takes "
                          f"{', '.join(_DTYPES)})")
        d = f.dims()
        plan = BlasGemmPlan(dtype=f.dtype, m=d["m"], n=d["n"], k=d["k"], trans_b=d["trans_b"],
                            batch=d["batch"], b_broadcast=d["b_broadcast"])
        specs[symbol] = f.spec(plan.to_json(), llvm, kernels)
    lib = build(IRModule(functions=kernels), target=llvm) if kernels else None
    return BlasModule(specs, constants, lib)

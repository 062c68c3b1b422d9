"""Code generation: lowered loop IR to machine code.

``codegen_llvm`` (LLVM IR text for the CPU), ``compile_source`` (object code),
``build`` (what ``irc.build`` is), ``register_target_builder`` (plug in other targets),
``can_build`` (whether a target's code generator is available).
"""

from . import cuda_build  # registers the CUDA target builder
from .build import (
    build,
    build_llvm,
    can_build,
    clear_cache,
    collect_prim_funcs,
    register_target_builder,
)
from .llvm import CodeGenLLVM, LLVMSource, codegen_llvm
from .llvm_compile import CompiledObject, compile_source
from .llvm_intrin import supported_intrinsics

__all__ = [
    "CodeGenLLVM", "CompiledObject", "LLVMSource", "build", "build_llvm", "can_build",
    "clear_cache",
    "codegen_llvm", "collect_prim_funcs", "compile_source", "register_target_builder",
    "supported_intrinsics",
]

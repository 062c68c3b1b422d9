"""Helpers of the model-zoo tests: compiling while keeping the optimized module, running a
zoo model, comparing with its reference, and reading the kernel graph of a compiled
function."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import irc
from irc import passes
from irc.core.functor import Visitor
from irc.core.module import IRModule
from irc.ir.expr import Call, Constant, Function, GlobalVar, Op, SeqExpr, Tuple, Var
from irc.ir.op import INJECTIVE
from irc.testing.models import ZooModel
from irc.tir import expr as E
from irc.tir.stmt import Block, BufferStore, PrimFunc

# Relative error bound of the issue: max |irc - reference| / max |reference| (float32 irc
# against a float64 reference).
RTOL = 1e-4


def compile_keeping_ir(mod: IRModule, params: dict | None = None) -> tuple[Any, IRModule]:
    """``irc.compile(mod, "llvm")`` with the default pipeline, also returning the module the
    pipeline produced (what the VM compiler and codegen receive)."""
    kept: dict[str, IRModule] = {}

    @passes.module_pass(opt_level=0, name="KeepOptimizedModule")
    def keep(m: IRModule, ctx: Any) -> IRModule:
        kept["mod"] = m
        return m

    pipeline = passes.Sequential([passes.get_pipeline("default"), keep])
    ex = irc.compile(mod, "llvm", pipeline=pipeline, params=params)
    return ex, kept["mod"]


def run_model(ex: Any, model: ZooModel, x: np.ndarray, bound: bool) -> np.ndarray:
    """Run ``forward`` of ``ex`` on ``x`` (plus the weights unless they were bound)."""
    vm = irc.vm.VirtualMachine(ex)
    args = [irc.tensor(x)]
    if not bound:
        args += [irc.tensor(a) for a in model.param_arrays()]
    return vm[model.func_name](*args).numpy()


def relative_error(out: np.ndarray, ref: np.ndarray) -> float:
    """max |out - ref| / max |ref|."""
    assert out.shape == ref.shape, (out.shape, ref.shape)
    return float(np.abs(out.astype(np.float64) - ref).max() / np.abs(ref).max())


def assert_matches_reference(ex: Any, model: ZooModel, bound: bool, seed: int = 0) -> None:
    """Run the compiled model on a seeded input and compare with the float64 reference."""
    x = model.random_input(seed)
    out = run_model(ex, model, x, bound)
    ref = model.reference(x)
    assert np.isfinite(out).all()
    # A reference that is all zeros would make the check vacuous.
    assert np.abs(ref).max() > 1e-3
    err = relative_error(out, ref)
    assert err < RTOL, f"{model.name}: relative error {err:.3e} >= {RTOL}"


# ---------------------------------------------------------------------------------------
# The kernel graph of a compiled function
# ---------------------------------------------------------------------------------------


@dataclass
class KernelCall:
    """One ``call_tir`` binding: its result variable, kernel name and argument exprs."""

    var: Var
    kernel: str
    args: tuple[Any, ...]


def kernel_calls(mod: IRModule, func_name: str = "forward") -> list[KernelCall]:
    """The ``call_tir`` bindings of graph function ``func_name`` in program order; fails
    on any other call (after the default pipeline only kernels remain)."""
    func = mod[func_name]
    assert isinstance(func, Function) and isinstance(func.body, SeqExpr)
    calls = []
    for block in func.body.blocks:
        for b in block.bindings:
            value = b.value
            if not isinstance(value, Call):
                continue
            assert isinstance(value.op, Op) and value.op.name == "call_tir", \
                f"unexpected call {value.op} left after the default pipeline"
            gv, args = value.args[0], value.args[1]
            assert isinstance(gv, GlobalVar) and isinstance(args, Tuple)
            calls.append(KernelCall(b.var, gv.name_hint, args.fields))
    return calls


class _Blocks(Visitor):
    def __init__(self) -> None:
        self.blocks: list[Block] = []

    def visit_Block(self, b: Block) -> None:
        self.blocks.append(b)
        self.generic_visit(b)


def is_convolution(func: PrimFunc) -> bool:
    """Whether a kernel contains a convolution: a block reducing over two or more axes
    (the kernel window, and the input channels unless depthwise) whose update is a
    multiply-accumulate, or the output transform of a Winograd convolution (the kernel
    that writes its output). Pooling (no product) and matmul (one axis) are not."""
    for b in _blocks_of(func):
        if b.annotations.get("winograd_transform") == "output":
            return True
        reduce_axes = [iv for iv in b.iter_vars if iv.iter_type == "reduce"]
        body = b.body
        if len(reduce_axes) >= 2 and isinstance(body, BufferStore) and \
                isinstance(body.value, E.Add) and \
                (isinstance(body.value.b, E.Mul) or isinstance(body.value.a, E.Mul)):
            return True
    return False


def kernel_patterns(mod: IRModule) -> dict[str, int]:
    """The fusion pattern of every kernel (``AnnotateTIROpPattern`` classifies the fused
    kernels, which carry none after ``FuseTIR``)."""
    annotated = passes.AnnotateTIROpPattern()(mod)
    return {gv.name_hint: int(f.attrs["op_pattern"]) for gv, f in annotated.functions.items()
            if isinstance(f, PrimFunc)}


def activation_kernels(calls: list[KernelCall], num_input: int,
                       params: tuple[Var, ...]) -> list[KernelCall]:
    """The calls whose result depends on the function's first ``num_input`` parameters
    (the data, not the weights): weight-only preprocessing kernels are left out."""
    live = {id(p) for p in params[:num_input]}
    out = []
    for c in calls:
        if any(isinstance(a, Var) and id(a) in live for a in c.args):
            live.add(id(c.var))
            out.append(c)
    return out


def elementwise_after_conv(mod: IRModule, func_name: str = "forward") -> list[str]:
    """Kernels that read a convolution kernel's output and are themselves neither a
    convolution nor a non-elementwise operator (pattern above injective: pooling, dense,
    reductions) — stand-alone epilogues that fusion missed. Empty when fusion is complete."""
    calls = kernel_calls(mod, func_name)
    patterns = kernel_patterns(mod)
    conv_out = {id(c.var) for c in calls if is_convolution(mod[c.kernel])}
    bad = []
    for c in calls:
        reads_conv = any(isinstance(a, Var) and id(a) in conv_out for a in c.args)
        if reads_conv and not is_convolution(mod[c.kernel]) and patterns[c.kernel] <= INJECTIVE:
            bad.append(c.kernel)
    return bad


def winograd_convolutions(mod: IRModule, func_name: str = "forward") -> int:
    """How many convolutions run as Winograd convolutions (their output transforms)."""
    return sum(1 for c in kernel_calls(mod, func_name)
               if any(b.annotations.get("winograd_transform") == "output"
                      for b in _blocks_of(mod[c.kernel])))


def _blocks_of(func: PrimFunc) -> list:
    finder = _Blocks()
    finder.visit(func.body)
    return finder.blocks


def constant_args(calls: list[KernelCall]) -> int:
    """How many kernel arguments are bound constants."""
    return sum(isinstance(a, Constant) for c in calls for a in c.args)

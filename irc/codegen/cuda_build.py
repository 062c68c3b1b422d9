"""``irc.build(func, target="cuda")``: loop functions to a module of CUDA kernels.

The functions are lowered for the GPU (:data:`irc.tir.transform.LOWER_TIR_GPU`),
translated to CUDA C (:mod:`irc.codegen.cuda`) and compiled by NVRTC to a cubin for the
target's ``-arch`` (:mod:`irc.codegen.nvrtc`, cached on disk). Building needs no GPU;
calling a function does: its arguments are tensors on a CUDA device
(``irc.tensor(x, irc.cuda(0))``) and scalars, and the host plan of the function binds
shape variables from the tensors, evaluates the grid extents and launches the kernels in
order on the device (through :class:`irc.runtime.cuda_module.CUDAModule`).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..core import dtype as dt
from ..core.diagnostics import BuildError, CodegenError, IRCError
from ..core.target import Target
from ..runtime.cuda_module import CUDAModule, KernelSpec
from ..runtime.device import Device
from ..runtime.ndarray import Tensor, empty
from ..runtime.timer import time_evaluator
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.transform import lower_primfunc_for_gpu
from .build import register_target_builder
from .cuda import CUDAProgram, HostPlan, codegen_cuda
from .nvrtc import compile_cuda


class CUDAFunction:
    """One built function: call it with CUDA tensors and scalars."""

    def __init__(self, module: CUDABuiltModule, name: str, plan: HostPlan):
        self.module = module
        self.name = name
        self.plan = plan

    def __repr__(self) -> str:
        return f"<irc CUDA function {self.name}>"

    def __call__(self, *args: Any) -> None:
        func = self.plan.func
        if len(args) != len(func.params):
            raise IRCError(f"{self.name} takes {len(func.params)} arguments, got {len(args)}")
        env: dict[int, Any] = {}
        device: Device | None = None
        for j, (p, a) in enumerate(zip(func.params, args)):
            buf = func.buffer_map.get(p)
            if buf is None:
                env[id(p)] = _scalar(self.name, p, a)
                continue
            if not isinstance(a, Tensor) or a.device.device_type != "cuda":
                raise IRCError(f"{self.name}: argument #{j} ({buf.name}) must be a tensor on "
                               f"a CUDA device, got {_describe(a)}",
                               hint="irc.tensor(array, irc.cuda(0)) copies an array to the GPU")
            if device is None:
                device = a.device
            elif a.device != device:
                raise IRCError(f"{self.name}: the tensors are on {device} and {a.device}; "
                               "pass them all on one GPU")
            if dt.element_of(buf.dtype) != a.dtype:
                raise IRCError(f"{self.name}: {buf.name} has dtype {buf.dtype} but the tensor "
                               f"is {a.dtype}")
            if len(a.shape) != len(buf.shape):
                raise IRCError(f"{self.name}: {buf.name} has {len(buf.shape)} dimensions but "
                               f"the tensor has {len(a.shape)}")
            for d, s in enumerate(buf.shape):
                if type(s) is E.Var and id(s) not in env:
                    env[id(s)] = int(a.shape[d])
            env[id(buf.data)] = a
        for j, (p, a) in enumerate(zip(func.params, args)):
            buf = func.buffer_map.get(p)
            if buf is None:
                continue
            for d, s in enumerate(buf.shape):
                want = evaluate(s, env)
                if int(a.shape[d]) != want:
                    raise IRCError(f"{self.name}: dimension {d} of {buf.name} is {want} but "
                                   f"the tensor (argument #{j}) has {a.shape[d]}")
        if device is None:
            raise IRCError(f"{self.name} has no tensor argument to tell the device")
        scratch: list[Tensor] = []
        for step in self.plan.steps:
            if step.kind == "let":
                env[id(step.var)] = evaluate(step.value, env)
            elif step.kind == "assert":
                if not evaluate(step.value, env):
                    raise IRCError(f"{self.name}: {step.message}")
            elif step.kind == "alloc":
                t = empty((evaluate(step.extent, env),), dt.element_of(step.dtype), device)
                scratch.append(t)
                env[id(step.var)] = t
            elif step.kind == "free":
                env.pop(id(step.var), None)
            else:
                k = step.kernel
                grid = tuple(int(evaluate(g, env)) for g in k.grid)
                if min(grid) <= 0:
                    continue  # nothing to compute (an empty dimension)
                values = []
                for v in k.params:
                    if id(v) not in env:
                        raise IRCError(f"{self.name}: kernel {k.name} reads {v.name!r}, which "
                                       "the host does not define")
                    values.append(env[id(v)])
                self.module.device_module.launch(k.name, grid, k.block, values, device=device)
        del scratch


class CUDABuiltModule:
    """Compiled CUDA kernels and the host plans of the functions that launch them."""

    def __init__(self, program: CUDAProgram, cubin: bytes, target: Target):
        self.program = program
        self.cubin = cubin
        self.target = target
        specs = {name: KernelSpec(params=tuple(k.param_dtypes),
                                  shared_bytes=k.dyn_shared_bytes)
                 for name, k in program.kernels.items()}
        self.device_module = CUDAModule(cubin, specs)
        self.functions = {name: CUDAFunction(self, name, plan)
                          for name, plan in program.plans.items()}
        self.entry_name = "main" if "main" in self.functions else next(iter(self.functions))

    def __repr__(self) -> str:
        return f"<irc CUDA module {self.target}: {', '.join(self.functions)}>"

    def get_function(self, name: str) -> CUDAFunction:
        """The function ``name``."""
        fn = self.functions.get(name)
        if fn is None:
            raise IRCError(f"module has no function {name!r}; it has "
                           f"{', '.join(self.functions)}")
        return fn

    __getitem__ = get_function

    def __contains__(self, name: str) -> bool:
        return name in self.functions

    def __call__(self, *args: Any) -> None:
        return self.functions[self.entry_name](*args)

    @property
    def function_names(self) -> list[str]:
        """The functions' names."""
        return list(self.functions)

    @property
    def imported_modules(self) -> list[CUDABuiltModule]:
        """TVM's view of a built module (host, then device modules): the CUDA source is
        ``mod.imported_modules[0].get_source()``."""
        return [self]

    def get_source(self, fmt: str = "cuda") -> str:
        """The CUDA C source (``"cuda"``/``"cu"``)."""
        if fmt in ("cuda", "cu", ""):
            return self.program.source
        raise IRCError(f"unknown source format {fmt!r} for a CUDA module; use 'cuda'")

    def time_evaluator(self, name: str, dev: Any = None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0, cooldown_interval_ms: float = 0,
                       repeats_to_cooldown: int = 1):
        """A callable timing function ``name`` on ``dev`` (CUDA events)."""
        return time_evaluator(self.get_function(name), dev, number=number, repeat=repeat,
                              min_repeat_ms=min_repeat_ms,
                              cooldown_interval_ms=cooldown_interval_ms,
                              repeats_to_cooldown=repeats_to_cooldown)


def build_cuda(funcs: dict[str, S.PrimFunc], target: Target) -> CUDABuiltModule:
    """Lower, translate and compile ``funcs`` for a CUDA ``target``."""
    arch = str(target.attrs.get("arch") or "sm_90")
    try:
        lowered = {name: lower_primfunc_for_gpu(f) for name, f in funcs.items()}
        program = codegen_cuda(lowered)
    except RecursionError:
        raise BuildError("the function is too deeply nested to compile") from None
    cubin = compile_cuda(program.source, arch=arch)
    return CUDABuiltModule(program, cubin, target)


register_target_builder("cuda", build_cuda)


_OPS = {E.Add: operator.add, E.Sub: operator.sub, E.Mul: operator.mul,
        E.EQ: operator.eq, E.NE: operator.ne, E.LT: operator.lt, E.LE: operator.le,
        E.GT: operator.gt, E.GE: operator.ge, E.Min: min, E.Max: max,
        E.FloorDiv: operator.floordiv, E.FloorMod: operator.mod}


def evaluate(e: E.PrimExpr, env: dict[int, Any]) -> Any:
    """The value of a host expression (integers, comparisons, shape arithmetic) with
    variables bound in ``env`` (by id)."""
    t = type(e)
    if t is E.IntImm:
        return e.value
    if t is E.FloatImm:
        return e.value
    if t is E.Var:
        if id(e) not in env:
            raise CodegenError(f"the host needs {e.name!r} before it is defined", node=e)
        return env[id(e)]
    op = _OPS.get(t)
    if op is not None:
        return op(evaluate(e.a, env), evaluate(e.b, env))
    if t in (E.Div, E.Mod):
        a, b = evaluate(e.a, env), evaluate(e.b, env)
        if isinstance(a, float) or isinstance(b, float):
            return a / b if t is E.Div else a % b
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return q if t is E.Div else a - q * b
    if t is E.And:
        return evaluate(e.a, env) and evaluate(e.b, env)
    if t is E.Or:
        return evaluate(e.a, env) or evaluate(e.b, env)
    if t is E.Not:
        return not evaluate(e.a, env)
    if t is E.Cast:
        v = evaluate(e.value, env)
        return int(v) if dt.is_integer(e.dtype) else bool(v) if e.dtype == "bool" else v
    if t is E.Select or (t is E.Call and e.op == "if_then_else"):
        c, a, b = (e.condition, e.true_value, e.false_value) if t is E.Select else e.args
        return evaluate(a, env) if evaluate(c, env) else evaluate(b, env)
    raise CodegenError(f"the host cannot evaluate {t.__name__} expressions", node=e)


def _scalar(name: str, p: E.Var, a: Any) -> Any:
    if dt.is_integer(p.dtype) or p.dtype == "bool":
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise IRCError(f"{name}: parameter {p.name} is {p.dtype}; pass an int, got "
                           f"{_describe(a)}")
        return int(a)
    if not isinstance(a, (int, float, np.number)):
        raise IRCError(f"{name}: parameter {p.name} is {p.dtype}; pass a number, got "
                       f"{_describe(a)}")
    return float(a)


def _describe(a: Any) -> str:
    if isinstance(a, Tensor):
        return f"a tensor on {a.device}"
    return type(a).__name__

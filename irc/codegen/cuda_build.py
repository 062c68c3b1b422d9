"""``irc.build(func, target="cuda")``: loop functions to a module of CUDA kernels.

The functions are lowered for the GPU (:data:`irc.tir.transform.LOWER_TIR_GPU`),
translated to CUDA C (:mod:`irc.codegen.cuda`) and compiled by NVRTC to a cubin for the
target's ``-arch`` (:mod:`irc.codegen.nvrtc`, cached on disk). Building needs no GPU;
calling a function does: its arguments are tensors on a CUDA device
(``irc.tensor(x, irc.cuda(0))``) and scalars, and the host plan of the function binds
shape variables from the tensors, evaluates the grid extents and launches the kernels in
order on the device. The result is a :class:`irc.runtime.cuda_program.CUDAProgramModule`;
the host plans are encoded here into its JSON form, so a module saved inside a VM
executable loads without compiling again.
"""

from __future__ import annotations

from typing import Any

from ..core import dtype as dt
from ..core.diagnostics import BuildError, CodegenError
from ..core.target import Target
from ..runtime.cuda_program import CUDAProgramModule
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.analysis.written_params import written_params
from ..tir.transform import lower_primfunc_for_gpu
from .build import register_target_builder
from .cuda import HostPlan, codegen_cuda
from .nvrtc import compile_cuda


def build_cuda(funcs: dict[str, S.PrimFunc], target: Target) -> CUDAProgramModule:
    """Lower, translate and compile ``funcs`` for a CUDA ``target``."""
    arch = str(target.attrs.get("arch") or "sm_90")
    try:
        lowered = {name: lower_primfunc_for_gpu(f) for name, f in funcs.items()}
        program = codegen_cuda(lowered)
    except RecursionError:
        raise BuildError("the function is too deeply nested to compile") from None
    cubin = compile_cuda(program.source, arch=arch)
    kernels = {name: {"params": list(k.param_dtypes), "shared_bytes": k.dyn_shared_bytes}
               for name, k in program.kernels.items()}
    plans = {name: encode_plan(name, plan) for name, plan in program.plans.items()}
    for name, plan in plans.items():  # which tensors each function may store into
        if name in funcs and len(funcs[name].params) == len(plan["params"]):
            written = written_params(funcs[name])
            for pos, p in enumerate(plan["params"]):
                if p["kind"] == "buffer":
                    p["written"] = pos in written
    return CUDAProgramModule(program.source, cubin, kernels, plans, str(target))


register_target_builder("cuda", build_cuda)


_ENC = {E.Add: "add", E.Sub: "sub", E.Mul: "mul", E.FloorDiv: "floordiv",
        E.FloorMod: "floormod", E.Min: "min", E.Max: "max", E.EQ: "eq", E.NE: "ne",
        E.LT: "lt", E.LE: "le", E.GT: "gt", E.GE: "ge", E.And: "and", E.Or: "or"}


class _PlanEncoder:
    """A host plan as the JSON data of :mod:`irc.runtime.cuda_program`."""

    def __init__(self, name: str):
        self.name = name
        self.slots: list[str] = []
        self.slot_of: dict[int, int] = {}

    def slot(self, v: E.Var) -> int:
        k = self.slot_of.get(id(v))
        if k is None:
            k = len(self.slots)
            self.slots.append(v.name)
            self.slot_of[id(v)] = k
        return k

    def expr(self, e: E.PrimExpr) -> Any:
        t = type(e)
        if t is E.IntImm:
            return bool(e.value) if e.dtype == "bool" else int(e.value)
        if t is E.FloatImm:
            return float(e.value)
        if t is E.Var:
            if id(e) not in self.slot_of:
                raise CodegenError(f"{self.name}: the host needs {e.name!r} before it is "
                                   "defined", node=e)
            return ["var", self.slot_of[id(e)]]
        op = _ENC.get(t)
        if op is not None:
            return [op, self.expr(e.a), self.expr(e.b)]
        if t in (E.Div, E.Mod):
            if dt.is_float(e.dtype):
                if t is E.Mod:
                    raise CodegenError(f"{self.name}: the host cannot take a float remainder",
                                       node=e)
                return ["div", self.expr(e.a), self.expr(e.b)]
            return ["truncdiv" if t is E.Div else "truncmod", self.expr(e.a), self.expr(e.b)]
        if t is E.Not:
            return ["not", self.expr(e.a)]
        if t is E.Cast:
            return ["cast", e.dtype, self.expr(e.value)]
        if t is E.Select or (t is E.Call and e.op == "if_then_else"):
            c, a, b = (e.condition, e.true_value, e.false_value) if t is E.Select else e.args
            return ["select", self.expr(c), self.expr(a), self.expr(b)]
        raise CodegenError(f"{self.name}: the host cannot evaluate {t.__name__} expressions "
                           "(grid extents and checks must be integer arithmetic of shape "
                           "variables)", node=e)

    def encode(self, plan: HostPlan) -> dict:
        func = plan.func
        params = []
        for p in func.params:
            buf = func.buffer_map.get(p)
            if buf is None:
                params.append({"kind": "scalar", "name": p.name, "dtype": p.dtype,
                               "slot": self.slot(p)})
                continue
            for s in buf.shape:  # bare shape variables are bound from the tensors
                if type(s) is E.Var:
                    self.slot(s)
            params.append({"kind": "buffer", "name": buf.name, "dtype": buf.dtype,
                           "slot": self.slot(buf.data), "shape": []})
        for entry, p in zip(params, func.params):
            buf = func.buffer_map.get(p)
            if buf is not None:
                entry["shape"] = [self.expr(s) for s in buf.shape]
        steps: list[list] = []
        for st in plan.steps:
            if st.kind == "let":
                value = self.expr(st.value)
                steps.append(["let", self.slot(st.var), value])
            elif st.kind == "assert":
                steps.append(["assert", self.expr(st.value), st.message])
            elif st.kind == "alloc":
                extent = self.expr(st.extent)
                steps.append(["alloc", self.slot(st.var), st.dtype, extent])
            elif st.kind == "free":
                steps.append(["free", self.slot(st.var)])
            else:
                k = st.kernel
                steps.append(["launch", k.name, [self.expr(g) for g in k.grid],
                              [int(b) for b in k.block], [self.slot(v) for v in k.params]])
        return {"slots": self.slots, "params": params, "steps": steps}


def encode_plan(name: str, plan: HostPlan) -> dict:
    """The JSON form of function ``name``'s host plan (see
    :mod:`irc.runtime.cuda_program`)."""
    return _PlanEncoder(name).encode(plan)

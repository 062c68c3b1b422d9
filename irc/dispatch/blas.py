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

from typing import Any, Callable

import numpy as np

from ..codegen import build
from ..core import dtype as dt
from ..core.diagnostics import IRCError
from ..core.module import IRModule
from ..core.target import Target
from ..dlight import default_rules_for, schedule_func
from ..ir.expr import Call, Constant, Function, Op, SeqExpr, Var
from ..ir.struct_info import TensorStructInfo
from ..runtime.blas import BlasGemmPlan
from ..runtime.blas_module import BlasModule
from ..tir import te, topi
from .codegen import register_codegen
from .pattern import Pattern, is_op, wildcard
from .table import PatternCheckContext, register_patterns

_DTYPES = ("float32", "float64")
_ACTIVATIONS: dict[str, Callable[[Any], Any]] = {
    "relu": topi.relu,
    "gelu": topi.gelu,
    "gelu_tanh": lambda t: topi.gelu(t, "tanh"),
    "silu": topi.silu,
}


# -- patterns ---------------------------------------------------------------------------------

def _static_shape(ctx: PatternCheckContext, name: str) -> tuple[int, ...] | None:
    shape = ctx.shape(name)
    if shape is None or any(d is None for d in shape):
        return None
    return tuple(int(d) for d in shape)


def _broadcasts(bias: tuple[int, ...], out: tuple[int, ...]) -> bool:
    if len(bias) > len(out):
        return False
    return all(b in (1, o) for b, o in zip(reversed(bias), reversed(out)))


def _check(ctx: PatternCheckContext, transposed: bool, batch: bool) -> bool:
    names = ["lhs", "rhs", "root"] + (["bias"] if "bias" in ctx.annotated else [])
    dtypes = {ctx.dtype(n) for n in names}
    if len(dtypes) != 1 or dtypes.pop() not in _DTYPES:
        return False
    mm = ctx.value("matmul")
    if not isinstance(mm, Call) or mm.attrs.get("out_dtype", "void") not in (
            "void", "", None, ctx.dtype("lhs")):
        return False
    lhs, rhs, out = (_static_shape(ctx, n) for n in ("lhs", "rhs", "root"))
    if lhs is None or rhs is None or out is None:
        return False
    if transposed:
        perm = ctx.value("rhs_t")
        axes = perm.attrs.get("axes") if isinstance(perm, Call) else None
        if len(rhs) != 2 or axes not in (None, (1, 0), [1, 0]):
            return False
    if batch:
        if len(lhs) != 3 or len(rhs) != 3 or rhs[0] not in (1, lhs[0]):
            return False
    elif len(lhs) < 2 or len(rhs) != 2:
        return False
    if "bias" in ctx.annotated:
        # The epilogue writes the product's shape: a bias may not broadcast it larger.
        bias, product = _static_shape(ctx, "bias"), _static_shape(ctx, "matmul")
        if bias is None or product != out or not _broadcasts(bias, out):
            return False
    return True


def _entries() -> list[tuple]:
    out = []
    for transposed in (True, False):
        lhs, w, bias = wildcard(), wildcard(), wildcard()
        rhs_t = is_op("permute_dims")(w)
        rhs: Pattern = rhs_t if transposed else w
        mm = is_op("matmul")(lhs, rhs)
        add = is_op("add")(mm, bias) | is_op("add")(bias, mm)
        prefix = "blas.matmul_transposed" if transposed else "blas.matmul"
        notes: dict[str, Pattern] = {"lhs": lhs, "rhs": w, "matmul": mm}
        if transposed:
            notes["rhs_t"] = rhs_t

        def check(ctx: PatternCheckContext, t: bool = transposed) -> bool:
            return _check(ctx, t, False)
        for act in _ACTIVATIONS:
            out.append((f"{prefix}_bias_{act}", is_op(f"nn.{act}")(add),
                        {**notes, "bias": bias}, check))
        out.append((f"{prefix}_bias", add, {**notes, "bias": bias}, check))
        out.append((prefix, mm, notes, check))
    a, b = wildcard(), wildcard()
    bmm = is_op("matmul")(a, b)
    out.append(("blas.batch_matmul", bmm, {"lhs": a, "rhs": b, "matmul": bmm},
                lambda ctx: _check(ctx, False, True)))
    return out


register_patterns(_entries())


# -- code generation --------------------------------------------------------------------------

class _Function:
    """What one composite function computes, read from its bindings."""

    def __init__(self, symbol: str, func: Function, constants: dict[str, np.ndarray]):
        self.symbol = symbol
        self.func = func
        self.constants = constants
        self.params = {id(p): i for i, p in enumerate(func.params)}
        body = func.body
        if not isinstance(body, SeqExpr) or len(body.blocks) != 1:
            raise self.error("its body is not one dataflow block")
        self.values = {id(b.var): b.value for b in body.blocks[0].bindings}
        e = self._call(body.body)
        self.activation = None
        self.bias: Any = None
        if e.op.name.startswith("nn.") and e.op.name[3:] in _ACTIVATIONS:
            self.activation = e.op.name[3:]
            e = self._call(e.args[0])
        if e.op.name == "add":
            a, b = e.args
            if self._is_matmul(a):
                mm, self.bias = self._call(a), b
            else:
                mm, self.bias = self._call(b), a
        else:
            mm = e
        if mm.op.name != "matmul":
            raise self.error(f"expected a matmul, found {mm.op.name}")
        self.lhs, rhs = mm.args
        self.trans_b = False
        if self._is_call(rhs, "permute_dims"):
            self.trans_b = True
            rhs = self._call(rhs).args[0]
        self.rhs = rhs
        sinfo = func.ret_struct_info
        if not isinstance(sinfo, TensorStructInfo):
            raise self.error("it does not return a tensor")
        self.dtype = sinfo.dtype
        self.out_shape = _shape(sinfo, self)

    def error(self, what: str) -> IRCError:
        return IRCError(f"the blas backend cannot compile {self.symbol}: {what}")

    def _value(self, e: Any) -> Any:
        """What ``e`` is bound to inside the function (through renaming bindings)."""
        while isinstance(e, Var) and id(e) in self.values:
            e = self.values[id(e)]
        return e

    def _call(self, e: Any) -> Call:
        v = self._value(e)
        if not isinstance(v, Call) or not isinstance(v.op, Op):
            raise self.error(f"expected an operator call, found {type(v).__name__}")
        return v

    def _is_call(self, e: Any, name: str) -> bool:
        v = self._value(e)
        return isinstance(v, Call) and isinstance(v.op, Op) and v.op.name == name

    def _is_matmul(self, e: Any) -> bool:
        return self._is_call(e, "matmul")

    def role(self, e: Any) -> list:
        """``["param", i]`` or ``["const", key]`` for an operand."""
        if isinstance(e, Var) and id(e) in self.params:
            return ["param", self.params[id(e)]]
        if isinstance(e, Constant):
            key = f"c{len(self.constants)}"
            self.constants[key] = np.ascontiguousarray(e.data)
            return ["const", key]
        raise self.error("an operand is computed inside the function; only parameters "
                         "and constants can be passed to BLAS")

    def plan(self) -> BlasGemmPlan:
        lhs, rhs = _shape(self.lhs.struct_info, self), _shape(self.rhs.struct_info, self)
        k = lhs[-1]
        if len(rhs) == 3:  # batch matmul
            return BlasGemmPlan(dtype=self.dtype, m=lhs[1], n=rhs[2], k=k, batch=lhs[0],
                                b_broadcast=rhs[0] == 1 and lhs[0] != 1)
        n = rhs[0] if self.trans_b else rhs[1]
        m = int(np.prod(lhs[:-1]))
        return BlasGemmPlan(dtype=self.dtype, m=m, n=n, k=k, trans_b=self.trans_b)

    def epilogue(self) -> Any:
        """The epilogue as a loop function ``(gemm, [bias,] out)``, or None."""
        if self.bias is None and self.activation is None:
            return None
        gemm = te.placeholder(self.out_shape, name="gemm", dtype=self.dtype)
        inputs = [gemm]
        y = gemm
        if self.bias is not None:
            bias = te.placeholder(_shape(self.bias.struct_info, self), name="bias",
                                  dtype=self.dtype)
            inputs.append(bias)
            y = topi.add(gemm, bias)
        if self.activation is not None:
            y = _ACTIVATIONS[self.activation](y)
        func = te.create_prim_func(inputs + [y])
        llvm = Target("llvm")
        return schedule_func(func, llvm, default_rules_for(llvm)) or func


def _shape(sinfo: Any, f: _Function) -> tuple[int, ...]:
    shape = getattr(sinfo, "shape", None)
    if shape is None or not all(hasattr(d, "value") for d in shape):
        raise f.error("the blas backend needs static shapes")
    return tuple(int(d.value) for d in shape)


@register_codegen("blas")
def blas_codegen(funcs: list[tuple[str, Function]]) -> BlasModule:
    """A :class:`BlasModule` with one function per ``(symbol, composite function)``."""
    constants: dict[str, np.ndarray] = {}
    specs: dict[str, dict] = {}
    kernels = {}
    for symbol, func in funcs:
        f = _Function(symbol, func, constants)
        if f.dtype not in _DTYPES or not dt.is_float(f.dtype):
            raise f.error(f"dtype {f.dtype} (the blas backend takes {', '.join(_DTYPES)})")
        spec = {"plan": f.plan().to_json(), "lhs": f.role(f.lhs), "rhs": f.role(f.rhs),
                "bias": None if f.bias is None else f.role(f.bias),
                "num_params": len(func.params), "out_shape": list(f.out_shape),
                "dtype": f.dtype, "epilogue": None}
        epi = f.epilogue()
        if epi is not None:
            name = f"{symbol}_epilogue"
            kernels[name] = epi.with_attr("global_symbol", name)
            spec["epilogue"] = name
        specs[symbol] = spec
    lib = build(IRModule(functions=kernels), target="llvm") if kernels else None
    return BlasModule(specs, constants, lib)

"""What the matrix-product backends (``blas``, ``cublas``) share: the pattern entries of
a dense layer / matmul family with their check function, and the reading of a
composite function (operands, transposes, bias, activation, shapes) into a product and
an epilogue loop function.

A backend gives :func:`gemm_entries` its name, the activations it fuses and a dtype
rule, and builds its runtime plan from a :class:`GemmFunction`.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..core.diagnostics import IRCError
from ..core.target import Target
from ..dlight import default_rules_for, schedule_func
from ..ir.expr import Call, Constant, Function, Op, SeqExpr, Var
from ..ir.struct_info import TensorStructInfo
from ..tir import te, topi
from .pattern import Pattern, is_op, wildcard
from .table import PatternCheckContext

ACTIVATIONS: dict[str, Callable[[Any], Any]] = {
    "relu": topi.relu,
    "gelu": topi.gelu,
    "gelu_tanh": lambda t: topi.gelu(t, "tanh"),
    "silu": topi.silu,
}
# (input dtype, output dtype) -> accepted
DtypeRule = Callable[[str, str], bool]


def _static_shape(ctx: PatternCheckContext, name: str) -> tuple[int, ...] | None:
    shape = ctx.shape(name)
    if shape is None or any(d is None for d in shape):
        return None
    return tuple(int(d) for d in shape)


def _broadcasts(bias: tuple[int, ...], out: tuple[int, ...]) -> bool:
    if len(bias) > len(out):
        return False
    return all(b in (1, o) for b, o in zip(reversed(bias), reversed(out)))


def check_gemm(ctx: PatternCheckContext, transposed: bool, batch: bool,
               dtypes: DtypeRule) -> bool:
    """Whether a library runs the match: operands of one dtype and an output dtype the
    rule ``dtypes(in, out)`` accepts (the bias of the output's), static shapes, ``x`` of
    rank >= 2 and ``w`` a matrix (or both rank 3 for a batch matmul, ``w``'s batch equal
    or 1), ``permute_dims`` swapping a matrix's axes, and a bias broadcasting to the
    product without enlarging it."""
    in_dtypes = {ctx.dtype("lhs"), ctx.dtype("rhs")}
    out_dtype = ctx.dtype("root")
    if len(in_dtypes) != 1 or out_dtype is None:
        return False
    in_dtype = in_dtypes.pop()
    if in_dtype is None or not dtypes(in_dtype, out_dtype):
        return False
    if "bias" in ctx.annotated and ctx.dtype("bias") != out_dtype:
        return False
    mm = ctx.value("matmul")
    if not isinstance(mm, Call):
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


def gemm_entries(backend: str, activations: list[str], dtypes: DtypeRule,
                 extra: Callable[[PatternCheckContext], bool] | None = None) -> list[tuple]:
    """The pattern entries ``<backend>.matmul[_transposed][_bias[_<act>]]`` (most
    specific first) and ``<backend>.batch_matmul``, checked by :func:`check_gemm` and
    ``extra`` (a backend's own constraints, e.g. alignment)."""
    def checked(ctx: PatternCheckContext, t: bool, batch: bool) -> bool:
        return check_gemm(ctx, t, batch, dtypes) and (extra is None or bool(extra(ctx)))

    out = []
    for transposed in (True, False):
        lhs, w, bias = wildcard(), wildcard(), wildcard()
        rhs_t = is_op("permute_dims")(w)
        rhs: Pattern = rhs_t if transposed else w
        mm = is_op("matmul")(lhs, rhs)
        add = is_op("add")(mm, bias) | is_op("add")(bias, mm)
        prefix = f"{backend}.matmul_transposed" if transposed else f"{backend}.matmul"
        notes: dict[str, Pattern] = {"lhs": lhs, "rhs": w, "matmul": mm}
        if transposed:
            notes["rhs_t"] = rhs_t

        def check(ctx: PatternCheckContext, t: bool = transposed) -> bool:
            return checked(ctx, t, False)
        for act in activations:
            out.append((f"{prefix}_bias_{act}", is_op(f"nn.{act}")(add),
                        {**notes, "bias": bias}, check))
        out.append((f"{prefix}_bias", add, {**notes, "bias": bias}, check))
        out.append((prefix, mm, notes, check))
    a, b = wildcard(), wildcard()
    bmm = is_op("matmul")(a, b)
    out.append((f"{backend}.batch_matmul", bmm, {"lhs": a, "rhs": b, "matmul": bmm},
                lambda ctx: checked(ctx, False, True)))
    return out


class CompositeFunction:
    """A composite function made by ``FuseOpsByPattern``, read by a backend's code
    generator: its bindings by variable, its parameters by position, and the roles of its
    operands (a parameter, or a constant the library module keeps in ``constants``)."""

    def __init__(self, backend: str, symbol: str, func: Function,
                 constants: dict[str, np.ndarray]):
        self.backend = backend
        self.symbol = symbol
        self.func = func
        self.constants = constants
        self.params = {id(p): i for i, p in enumerate(func.params)}
        body = func.body
        if not isinstance(body, SeqExpr) or len(body.blocks) != 1:
            raise self.error("its body is not one dataflow block")
        self.values = {id(b.var): b.value for b in body.blocks[0].bindings}
        self.result = body.body
        sinfo = func.ret_struct_info
        if not isinstance(sinfo, TensorStructInfo):
            raise self.error("it does not return a tensor")
        self.dtype = sinfo.dtype
        self.out_shape = static_shape(sinfo, self)

    def error(self, what: str) -> IRCError:
        return IRCError(f"the {self.backend} backend cannot compile {self.symbol}: {what}")

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

    def role(self, e: Any, value: np.ndarray | None = None) -> list:
        """``["param", i]`` or ``["const", key]`` for an operand (a constant stored as
        ``value`` when given, e.g. reshaped)."""
        if isinstance(e, Var) and id(e) in self.params:
            return ["param", self.params[id(e)]]
        if isinstance(e, Constant):
            key = f"c{len(self.constants)}"
            self.constants[key] = np.asarray(e.data if value is None else value, order="C")
            return ["const", key]
        raise self.error("an operand is computed inside the function; only parameters "
                         "and constants can be passed to the library")

    def constant(self, e: Any) -> np.ndarray | None:
        """The array of a constant operand, None for a parameter."""
        return e.data if isinstance(e, Constant) else None


class GemmFunction(CompositeFunction):
    """What one composite function of the matmul family computes, read from its
    bindings: ``lhs``, ``rhs`` (with ``trans_b``), ``bias``, ``activation``."""

    def __init__(self, backend: str, symbol: str, func: Function,
                 constants: dict[str, np.ndarray]):
        super().__init__(backend, symbol, func, constants)
        e = self._call(self.result)
        self.activation = None
        self.bias: Any = None
        if e.op.name.startswith("nn.") and e.op.name[3:] in ACTIVATIONS:
            self.activation = e.op.name[3:]
            e = self._call(e.args[0])
        if e.op.name == "add":
            a, b = e.args
            if self._is_call(a, "matmul"):
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

    def dims(self) -> dict[str, Any]:
        """The product's sizes: ``m``, ``n``, ``k``, ``batch``, ``b_broadcast``,
        ``trans_b`` (leading dimensions of ``x`` fold into ``m``)."""
        lhs = static_shape(self.lhs.struct_info, self)
        rhs = static_shape(self.rhs.struct_info, self)
        k = lhs[-1]
        if len(rhs) == 3:  # batch matmul
            return {"m": lhs[1], "n": rhs[2], "k": k, "batch": lhs[0],
                    "b_broadcast": rhs[0] == 1 and lhs[0] != 1, "trans_b": False}
        n = rhs[0] if self.trans_b else rhs[1]
        return {"m": int(np.prod(lhs[:-1])), "n": n, "k": k, "batch": 1,
                "b_broadcast": False, "trans_b": self.trans_b}

    @property
    def in_dtype(self) -> str:
        """The dtype of the operands."""
        return self.lhs.struct_info.dtype

    def epilogue(self, target: Target) -> Any:
        """The epilogue as a loop function ``(gemm, [bias,] out)`` with ``target``'s
        default schedule, or None."""
        if self.bias is None and self.activation is None:
            return None
        gemm = te.placeholder(self.out_shape, name="gemm", dtype=self.dtype)
        inputs = [gemm]
        y = gemm
        if self.bias is not None:
            bias = te.placeholder(static_shape(self.bias.struct_info, self), name="bias",
                                  dtype=self.dtype)
            inputs.append(bias)
            y = topi.add(gemm, bias)
        if self.activation is not None:
            y = ACTIVATIONS[self.activation](y)
        func = te.create_prim_func(inputs + [y])
        return schedule_func(func, target, default_rules_for(target)) or func


    def spec(self, plan: dict[str, Any], target: Target, kernels: dict[str, Any]
             ) -> dict[str, Any]:
        """The library module's spec of this function (``plan``: the backend's plan as
        JSON); its epilogue, if any, is added to ``kernels`` (compiled for ``target``)."""
        out = {"plan": plan, "lhs": self.role(self.lhs), "rhs": self.role(self.rhs),
               "bias": None if self.bias is None else self.role(self.bias),
               "num_params": len(self.func.params), "out_shape": list(self.out_shape),
               "dtype": self.dtype, "epilogue": None}
        epi = self.epilogue(target)
        if epi is not None:
            name = f"{self.symbol}_epilogue"
            kernels[name] = epi.with_attr("global_symbol", name)
            out["epilogue"] = name
        return out


def static_shape(sinfo: Any, f: CompositeFunction) -> tuple[int, ...]:
    """The static shape of a tensor struct info, or ``f``'s error."""
    shape = getattr(sinfo, "shape", None)
    if shape is None or not all(hasattr(d, "value") for d in shape):
        raise f.error("it needs static shapes")
    return tuple(int(d.value) for d in shape)

"""DecomposeOpsForInference: rewrite normalization operators into elementwise arithmetic.

Algorithm: every ``R.nn.batch_norm(x, gamma, beta, mean, var, axis, epsilon, center,
scale)`` binding becomes, with inference semantics (the moving statistics are used and
returned unchanged)::

    s = gamma * rsqrt(var + epsilon)        # (C,)  (no gamma when scale=False)
    t = beta - mean * s                     # (C,)  (no beta when center=False)
    y = x * reshape(s, (C, 1, ..., 1)) + reshape(t, (C, 1, ..., 1))
    bn = (y, mean, var)

The per-channel factors depend only on the parameters, so once parameters are bound
``FoldConstant`` evaluates them and the whole batch norm is one multiply and one add,
which ``FuseOps`` folds into the preceding convolution's kernel. When asked
(``ops`` containing ``"nn.layer_norm"``), ``R.nn.layer_norm`` over trailing axes becomes
``(x - mean(x)) * rsqrt(variance(x) + epsilon) * gamma + beta``; a layer norm over
non-trailing axes is left alone. The result is renormalized (A-normal form).

Preconditions: the module is normalized; decomposed operators have tensors of known
rank. Postconditions: no decomposed operator remains in the selected functions
(``func_name``, or all); the program computes the same values at inference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..core.diagnostics import IRCError
from ..core.functor import Mutator
from ..core.module import IRModule
from ..core.transform import Pass, PassContext, pass_names
from ..ir import ops
from ..ir.expr import Call, Expr, Function, Op, Tuple, const
from ..ir.struct_info import TensorStructInfo
from ..tir.topi.utils import accumulator_dtype
from .normalize import normalize_function

SUPPORTED = ("nn.batch_norm", "nn.layer_norm")


def _channel_shape(x: TensorStructInfo, axis: int) -> list[Any] | None:
    """Shape a (C,) vector must take to broadcast along ``axis`` of ``x``."""
    trailing = x.ndim - axis - 1
    if trailing == 0:
        return None
    return [x.shape[axis]] + [1] * trailing


def decompose_batch_norm(call: Call) -> Expr:
    """The inference arithmetic of one ``R.nn.batch_norm`` call (not normalized)."""
    x, gamma, beta, mean, var = call.args
    xs = x.struct_info
    if not isinstance(xs, TensorStructInfo) or xs.ndim < 0 or xs.shape is None:
        raise IRCError("DecomposeOpsForInference: batch_norm needs an input of known shape",
                       node=call, span=call.span)
    a = call.attrs
    axis = a["axis"] % xs.ndim
    wide = accumulator_dtype(xs.dtype)
    if wide != xs.dtype:  # narrow floats: the factors and the product in float32, as the
        # undecomposed kernel computes them; one rounding at the end
        x, gamma, beta, mean, var = (ops.astype(e, wide) for e in call.args)
    eps = const(float(a["epsilon"]), wide)
    factor: Expr = ops.rsqrt(ops.add(var, eps))
    if a["scale"]:
        factor = ops.multiply(gamma, factor)
    shift: Expr = ops.multiply(mean, factor)
    shift = ops.subtract(beta, shift) if a["center"] else ops.negative(shift)
    shape = _channel_shape(xs, axis)
    if shape is not None:
        factor, shift = ops.reshape(factor, shape), ops.reshape(shift, shape)
    out = ops.add(ops.multiply(x, factor), shift)
    if wide != xs.dtype:
        out = ops.astype(out, xs.dtype)
        mean, var = call.args[3], call.args[4]
    return Tuple(fields=(out, mean, var))



def decompose_layer_norm(call: Call) -> Expr | None:
    """The arithmetic of one ``R.nn.layer_norm`` over trailing axes, or None."""
    x, gamma, beta = call.args
    xs = x.struct_info
    if not isinstance(xs, TensorStructInfo) or xs.ndim < 0:
        return None
    a = call.attrs
    axes = sorted(ax % xs.ndim for ax in a["axes"])
    if axes != list(range(xs.ndim - len(axes), xs.ndim)):
        return None
    wide = accumulator_dtype(xs.dtype)
    if wide != xs.dtype:
        x, gamma, beta = (ops.astype(e, wide) for e in call.args)
    eps = const(float(a["epsilon"]), wide)
    centered = ops.subtract(x, ops.mean(x, axes, keepdims=True))
    var = ops.variance(x, axes, keepdims=True)
    out: Expr = ops.multiply(centered, ops.rsqrt(ops.add(var, eps)))
    if a["scale"]:
        out = ops.multiply(out, gamma)
    if a["center"]:
        out = ops.add(out, beta)
    return ops.astype(out, xs.dtype) if wide != xs.dtype else out


class _Decomposer(Mutator):
    def __init__(self, which: Sequence[str]):
        super().__init__()
        self.which = set(which)
        self.changed = False

    def visit_Call(self, call: Call) -> Expr:
        call = self.generic_visit(call)
        if not isinstance(call.op, Op) or call.op.name not in self.which:
            return call
        new = decompose_batch_norm(call) if call.op.name == "nn.batch_norm" else \
            decompose_layer_norm(call)
        if new is None:
            return call
        self.changed = True
        return new

    def visit_StructInfo(self, s: Any) -> Any:
        return s


@dataclass(frozen=True)
class DecomposeOpsForInference(Pass):
    """Decompose ``batch_norm`` (and, when listed in ``ops``, ``layer_norm``) into
    elementwise arithmetic, in function ``func_name`` or in every graph function."""

    func_name: str | None = None
    ops: tuple[str, ...] = ("nn.batch_norm",)

    def __post_init__(self) -> None:
        ops = pass_names(self.ops, "DecomposeOpsForInference ops")
        unknown = [o for o in ops if o not in SUPPORTED]
        if unknown:
            raise IRCError(f"DecomposeOpsForInference cannot decompose {', '.join(unknown)}; "
                           f"supported: {', '.join(SUPPORTED)}")
        object.__setattr__(self, "ops", ops)

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        if self.func_name is not None:
            mod.get_global_var(self.func_name)  # raises naming the functions it has
        funcs: dict[Any, Any] = {}
        changed = False
        for gv, f in mod.functions.items():
            if isinstance(f, Function) and self.func_name in (None, gv.name_hint):
                d = _Decomposer(self.ops)
                new = d.visit(f)
                if d.changed:
                    new = normalize_function(new, mod)
                    changed = True
                    f = new
            funcs[gv] = f
        return IRModule(functions=funcs, attrs=mod.attrs) if changed else mod


__all__ = ["DecomposeOpsForInference", "decompose_batch_norm", "decompose_layer_norm"]

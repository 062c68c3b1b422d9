"""Softmax and log-softmax along one axis, in the numerically stable form: subtract the
maximum (``T_softmax_maxelem``), exponentiate (``T_softmax_exp``), sum
(``T_softmax_expsum``) and normalize (``T_softmax_norm``). For floats narrower than 32
bits (float16, bfloat16) every stage after the maximum computes in float32
(``accumulator_dtype``) and the output is rounded once, as PyTorch and ONNX Runtime do: a
difference ``x - max`` rounded to 16 bits would already put the exponential several units
in the last place off."""

from __future__ import annotations

from ....core import dtype as dt
from ....core.diagnostics import IRTypeError
from ... import intrin
from ...expr import PrimExpr, cast, const
from ...te import tensor as te
from ...te.tensor import Tensor, compute
from ..utils import accumulator_dtype, normalize_axis


def _setup(x: Tensor, axis: int, what: str) -> tuple[int, tuple[PrimExpr, ...]]:
    if not isinstance(x, Tensor):
        raise IRTypeError(f"topi.nn.{what} takes a tensor")
    if not dt.is_float(x.dtype):
        raise IRTypeError(f"topi.nn.{what} needs a floating-point tensor, got {x.dtype}")
    ax = normalize_axis(axis, x.ndim)
    reduced = tuple(s for d, s in enumerate(x.shape) if d != ax)
    return ax, reduced


def _insert(idx: tuple[PrimExpr, ...], ax: int, value: PrimExpr) -> tuple[PrimExpr, ...]:
    return tuple(idx[:ax]) + (value,) + tuple(idx[ax:])


def _drop(idx: tuple[PrimExpr, ...], ax: int) -> tuple[PrimExpr, ...]:
    return tuple(v for d, v in enumerate(idx) if d != ax)


def _max_elem(x: Tensor, ax: int, reduced: tuple, name: str) -> Tensor:
    def fn(*idx: PrimExpr) -> PrimExpr:
        k = te.reduce_axis((const(0, x.shape[ax].dtype), x.shape[ax]), name="k")
        return te.max(x[_insert(idx, ax, k.var)], axis=k)
    return compute(reduced, fn, name=name, tag="comm_reduce")


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``."""
    ax, reduced = _setup(x, axis, "softmax")
    max_elem = _max_elem(x, ax, reduced, "T_softmax_maxelem")
    acc = accumulator_dtype(x.dtype)
    exp = compute(x.shape, lambda *i: intrin.exp(cast(x[i], acc) -
                                                 cast(max_elem[_drop(i, ax)], acc)),
                  name="T_softmax_exp", tag="elemwise")

    def expsum(*idx: PrimExpr) -> PrimExpr:
        k = te.reduce_axis((const(0, x.shape[ax].dtype), x.shape[ax]), name="k")
        return te.sum(exp[_insert(idx, ax, k.var)], axis=k)

    total = compute(reduced, expsum, name="T_softmax_expsum", tag="comm_reduce")
    return compute(x.shape, lambda *i: cast(exp[i] / total[_drop(i, ax)], x.dtype),
                   name="T_softmax_norm", tag="elemwise", attrs={"axis": ax})


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    """``x - max - log(sum(exp(x - max)))`` along ``axis``."""
    ax, reduced = _setup(x, axis, "log_softmax")
    max_elem = _max_elem(x, ax, reduced, "T_log_softmax_maxelem")
    acc = accumulator_dtype(x.dtype)

    def expsum(*idx: PrimExpr) -> PrimExpr:
        k = te.reduce_axis((const(0, x.shape[ax].dtype), x.shape[ax]), name="k")
        return te.sum(intrin.exp(cast(x[_insert(idx, ax, k.var)], acc) -
                                 cast(max_elem[idx], acc)), axis=k)

    total = compute(reduced, expsum, name="T_log_softmax_expsum", tag="comm_reduce")

    def norm(*i: PrimExpr) -> PrimExpr:
        kept = _drop(i, ax)
        out = cast(x[i], acc) - cast(max_elem[kept], acc) - intrin.log(total[kept])
        return cast(out, x.dtype)

    return compute(x.shape, norm, name="T_log_softmax_norm", tag="elemwise",
                   attrs={"axis": ax})

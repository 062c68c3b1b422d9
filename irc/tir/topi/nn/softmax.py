"""Softmax and log-softmax along one axis, in the numerically stable form: subtract the
maximum (``T_softmax_maxelem``), exponentiate (``T_softmax_exp``), sum
(``T_softmax_expsum``) and normalize (``T_softmax_norm``). float16 sums accumulate in
float32 and are rounded to float16 once, as numpy's sums of float16 do; bfloat16 sums
round every partial sum, as numpy's sums of ml_dtypes' bfloat16 do (the ONNX reference
results irc is checked against come from both)."""

from __future__ import annotations

from ....core import dtype as dt
from ....core.diagnostics import IRTypeError
from ... import intrin
from ...expr import PrimExpr, cast, const
from ...te import tensor as te
from ...te.tensor import Tensor, compute
from ..utils import normalize_axis


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
    exp = compute(x.shape, lambda *i: intrin.exp(x[i] - max_elem[_drop(i, ax)]),
                  name="T_softmax_exp", tag="elemwise")

    acc = _accumulator(x.dtype)

    def expsum(*idx: PrimExpr) -> PrimExpr:
        k = te.reduce_axis((const(0, x.shape[ax].dtype), x.shape[ax]), name="k")
        return te.sum(cast(exp[_insert(idx, ax, k.var)], acc), axis=k)

    total = compute(reduced, expsum, name="T_softmax_expsum", tag="comm_reduce")
    return compute(x.shape, lambda *i: exp[i] / cast(total[_drop(i, ax)], x.dtype),
                   name="T_softmax_norm", tag="elemwise", attrs={"axis": ax})


def _accumulator(dtype: str) -> str:
    """The dtype softmax sums accumulate in: float32 for float16."""
    return "float32" if dtype == "float16" else dtype


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    """``x - max - log(sum(exp(x - max)))`` along ``axis``."""
    ax, reduced = _setup(x, axis, "log_softmax")
    max_elem = _max_elem(x, ax, reduced, "T_log_softmax_maxelem")

    acc = _accumulator(x.dtype)

    def expsum(*idx: PrimExpr) -> PrimExpr:
        k = te.reduce_axis((const(0, x.shape[ax].dtype), x.shape[ax]), name="k")
        return te.sum(cast(intrin.exp(x[_insert(idx, ax, k.var)] - max_elem[idx]), acc),
                      axis=k)

    total = compute(reduced, expsum, name="T_log_softmax_expsum", tag="comm_reduce")
    return compute(x.shape,
                   lambda *i: x[i] - max_elem[_drop(i, ax)] - intrin.log(
                       cast(total[_drop(i, ax)], x.dtype)),
                   name="T_log_softmax_norm", tag="elemwise", attrs={"axis": ax})

"""Matrix products: ``dense`` (x @ w.T + bias), ``matmul`` (with numpy batch
broadcasting and optional transposes) and ``batch_matmul``.

The product is one reduction stage ``T_matmul_<A><B>`` (``N``/``T`` per operand, e.g.
``T_matmul_NT(i, j) += x[i, k] * w[j, k]``); a bias is a separate ``T_add`` stage. The
products are summed in the accumulator dtype of the result (``out_dtype``, else the
operands'): float32 for floats narrower than 32 bits (``accumulator_dtype``), rounded to
the result's dtype in a ``T_cast`` stage after the reduction (and the bias).
"""

from __future__ import annotations

from ....core.diagnostics import IRTypeError
from ...expr import PrimExpr, cast, const
from ...te import tensor as te
from ...te.tensor import Tensor, compute
from ..broadcast import add
from ..elemwise import cast as cast_tensor
from ..utils import (
    accumulator_dtype,
    as_index,
    broadcast_indices,
    broadcast_shape,
    const_int,
    index_dtype,
    round_to,
)


def _read(t: Tensor, idx: list[PrimExpr], dtype: str) -> PrimExpr:
    return cast(t[tuple(idx)], dtype)


def _check_k(ka: PrimExpr, kb: PrimExpr, what: str) -> None:
    a, b = const_int(ka), const_int(kb)
    if a is not None and b is not None and a != b:
        raise IRTypeError(f"{what}: reduction dimensions differ ({a} vs {b})")


def matmul(a: Tensor, b: Tensor, transpose_a: bool = False, transpose_b: bool = False,
           out_dtype: str | None = None, bias: Tensor | None = None,
           name: str | None = None) -> Tensor:
    """The matrix product of ``a`` and ``b`` with numpy semantics: leading (batch)
    dimensions broadcast, 1-d operands are vectors. ``transpose_a``/``transpose_b`` use
    the operand's last two axes swapped. ``bias`` is added (broadcast) in a ``T_add``
    stage."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise IRTypeError("topi.matmul takes two tensors")
    if a.ndim == 0 or b.ndim == 0:
        raise IRTypeError("topi.matmul: operands must have at least one dimension")
    idt = index_dtype(a, b)
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    # Logical [.., M, K] x [.., K, N] views of the operands.
    a_m = const(1, idt) if a_vec else a.shape[-1 if transpose_a else -2]
    a_k = a.shape[0] if a_vec else a.shape[-2 if transpose_a else -1]
    b_k = b.shape[0] if b_vec else b.shape[-1 if transpose_b else -2]
    b_n = const(1, idt) if b_vec else b.shape[-2 if transpose_b else -1]
    tag = f"{'T' if transpose_a else 'N'}{'T' if transpose_b else 'N'}"
    _check_k(a_k, b_k, f"topi.matmul({'x'.join(map(str, a.shape))})")
    batch_a = list(a.shape[:-2]) if a.ndim > 2 else []
    batch_b = list(b.shape[:-2]) if b.ndim > 2 else []
    batch = list(broadcast_shape(batch_a, batch_b, "topi.matmul batch dimensions"))
    out_shape = batch + ([] if a_vec else [as_index(a_m, idt)]) + \
        ([] if b_vec else [as_index(b_n, idt)])
    k = te.reduce_axis((const(0, idt), as_index(a_k, idt)), name="k")
    result = out_dtype or a.dtype
    acc = accumulator_dtype(result)
    nb = len(batch)
    if nb == 0:
        names = []
    elif nb == 1:
        names = ["b"]
    else:
        names = [f"b{i}" for i in range(nb)]
    names += ([] if a_vec else ["i"]) + ([] if b_vec else ["j"])

    def fn(*idx: PrimExpr) -> PrimExpr:
        bidx = list(idx[:nb])
        rest = list(idx[nb:])
        i = None if a_vec else rest.pop(0)
        j = None if b_vec else rest.pop(0)
        if a_vec:
            ai = [k.var]
        else:
            ai = broadcast_indices(batch_a, batch, bidx) + ([k.var, i] if transpose_a
                                                             else [i, k.var])
        if b_vec:
            bi = [k.var]
        else:
            bi = broadcast_indices(batch_b, batch, bidx) + ([j, k.var] if transpose_b
                                                             else [k.var, j])
        return te.sum(_read(a, ai, acc) * _read(b, bi, acc), axis=k)

    prefix = "T_batch_matmul" if nb else "T_matmul"
    out = compute(tuple(out_shape), fn, name=name or f"{prefix}_{tag}", tag="matmul",
                  axis_names=names)
    if bias is not None:
        # added to the sums before they are rounded
        out = add(out, bias if bias.dtype == acc else cast_tensor(bias, acc))
    return round_to(out, result)


def dense(data: Tensor, weight: Tensor, bias: Tensor | None = None,
          out_dtype: str | None = None) -> Tensor:
    """``data @ weight.T (+ bias)`` for ``data`` [batch, in] and ``weight`` [out, in]."""
    if data.ndim != 2 or weight.ndim != 2:
        raise IRTypeError(f"topi.nn.dense needs 2-d data and weight, got ranks {data.ndim} "
                          f"and {weight.ndim}")
    return matmul(data, weight, False, True, out_dtype, bias)


def batch_matmul(x: Tensor, y: Tensor, out_dtype: str | None = None,
                 transpose_a: bool = False, transpose_b: bool = True) -> Tensor:
    """Batched product of ``x`` [..., M, K] and ``y`` [..., N, K] (or [..., K, N] with
    ``transpose_b=False``); batch dimensions broadcast as in numpy."""
    if x.ndim < 3 or y.ndim < 3:
        raise IRTypeError("topi.nn.batch_matmul needs operands with a batch dimension "
                          f"(ranks {x.ndim} and {y.ndim})")
    return matmul(x, y, transpose_a, transpose_b, out_dtype)


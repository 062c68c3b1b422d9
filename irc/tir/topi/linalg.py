"""Loop kernels of linear algebra on small matrices: :func:`det` (ONNX Det).

Written as loop IR in one opaque block (:func:`irc.tir.topi.index.loop_func`): serial, and
on a GPU one thread; a batch of matrices is processed one after the other in a float64
workspace the legalization passes as an extra output.
"""

from __future__ import annotations

from ...core import dtype as dt
from ...core.diagnostics import IRTypeError
from ..buffer import Buffer
from ..expr import PrimExpr, cast, const
from ..intrin import abs as abs_
from ..stmt import IfThenElse, Stmt, seq
from .index import IDX, cell, let, loop_nest, serial_range, store

_WORK = "float64"


def det(x: Buffer, out: Buffer, work: Buffer) -> Stmt:
    """``out[b] = det(x[b])`` for the square matrices ``x[b]`` (``x``: ``[..., n, n]``,
    ``out``: ``[...]``): Gaussian elimination with partial pivoting in float64 (``work``,
    ``[n, n]``), the determinant the product of the pivots with the sign of the row swaps.
    A singular matrix gives 0 (a zero pivot column), a 0 x 0 matrix 1."""
    if not dt.is_float(x.dtype) or out.dtype != x.dtype:
        raise IRTypeError(f"topi.det: x must be a float tensor and out of its dtype, got "
                          f"{x.dtype} and {out.dtype}")
    n = x.shape[-1]
    batch = list(x.shape[:-2])
    zero, one = const(0, IDX), const(1, IDX)
    pivot_row = cell("pivot_row")
    value = cell("det", _WORK)

    def per_matrix(b: list) -> Stmt:
        def at(i: PrimExpr, j: PrimExpr) -> tuple[PrimExpr, ...]:
            return (*b, i, j)

        load = loop_nest([n, n], lambda v: store(work, cast(x[at(v[0], v[1])], _WORK),
                                                 v[0], v[1]), "load")

        def column(k: PrimExpr) -> Stmt:
            find = seq(store(pivot_row, k), serial_range("r", k + one, n, lambda r: IfThenElse(
                condition=abs_(work[r, k]) > abs_(work[pivot_row[zero], k]),
                then_case=store(pivot_row, r))))

            def swap(p: PrimExpr) -> Stmt:
                rows = serial_range("c", k, n, lambda c: let(
                    "top", work[k, c], lambda top: seq(store(work, work[p, c], k, c),
                                                      store(work, top, p, c))))
                return IfThenElse(condition=p != k, then_case=seq(
                    rows, store(value, -value[zero])))

            def eliminate(pivot: PrimExpr) -> Stmt:
                def row(r: PrimExpr) -> Stmt:
                    return let("factor", work[r, k] / pivot, lambda f: serial_range(
                        "c", k + one, n, lambda c: store(work, work[r, c] - f * work[k, c],
                                                         r, c)))
                return IfThenElse(condition=pivot != const(0, _WORK),
                                  then_case=serial_range("r", k + one, n, row))

            return seq(find, let("p", pivot_row[zero], swap),
                       let("pivot", work[k, k], lambda pv: seq(
                           store(value, value[zero] * pv), eliminate(pv))))

        return seq(load, store(value, const(1, _WORK)), serial_range("k", zero, n, column),
                   store(out, cast(value[zero], out.dtype), *b))

    if not batch:
        return per_matrix([])
    return loop_nest(batch, per_matrix, "b")


__all__ = ["det"]

"""The converter of ONNX's ``Einsum``, lowered to graph operators.

The equation is parsed into one label list per operand (an ellipsis becomes as many
labels as it covers, right-aligned across operands so that its dimensions broadcast) and
the output's labels (implicit output: the ellipsis, then the labels seen once, in
alphabetical order). Then, per operand, a repeated label takes the diagonal (the two axes
moved last, flattened, every ``n + 1``-th element sliced) and a label nothing else needs
is summed away. Operands are contracted left to right: each pair becomes one batched
``matmul`` of ``(batch, kept-from-left, summed)`` by ``(batch, summed, kept-from-right)``
after ``permute_dims`` and ``reshape``; the result is permuted to the output's order.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any

from ...ir import ops
from ...ir.expr import Expr
from ...tir import expr as E
from .importer import Node
from .registry import converter

_ELLIPSIS = "..."


@dataclass
class _Term:
    """An operand during lowering: its expression, one label and one size per axis."""

    expr: Expr
    labels: list[str]
    dims: list[Any]


def _static(d: Any) -> int | None:
    return int(d.value) if isinstance(d, E.IntImm) else None


def _same_dim(a: Any, b: Any) -> bool:
    if _static(a) is not None and _static(b) is not None:
        return _static(a) == _static(b)
    return a is b


def _product(dims: list[Any]) -> Any:
    total: Any = E.IntImm(dtype="int64", value=1)
    for d in dims:
        total = d if _static(total) == 1 else (
            E.IntImm(dtype="int64", value=_static(total) * _static(d))
            if _static(total) is not None and _static(d) is not None else total * d)
    return total


def _parse_term(node: Node, text: str, ndim: int | None, ell: int) -> list[str]:
    """The labels of one side of the equation (``ell`` ellipsis labels for the output)."""
    count = text.count(_ELLIPSIS)
    if count > 1 or "." in text.replace(_ELLIPSIS, ""):
        raise node.error(f"term {text!r} has a malformed ellipsis")
    head, _, tail = text.partition(_ELLIPSIS)
    for c in head + tail:
        if c not in string.ascii_letters:
            raise node.error(f"term {text!r}: {c!r} is not a letter")
    if not count:
        if ndim is not None and len(text) != ndim:
            raise node.error(f"term {text!r} names {len(text)} axes of an operand of rank "
                             f"{ndim}")
        return list(text)
    covered = ell if ndim is None else ndim - len(head) - len(tail)
    if covered < 0:
        raise node.error(f"term {text!r} names more axes than the operand's {ndim}")
    return list(head) + [f"...{ell - covered + i}" for i in range(covered)] + list(tail)


def _diagonal(node: Node, t: _Term) -> _Term:
    """Take the diagonal of every label repeated in ``t``."""
    while len(set(t.labels)) < len(t.labels):
        seen: dict[str, int] = {}
        for j, label in enumerate(t.labels):
            if label in seen:
                i = seen[label]
                break
            seen[label] = j
        n = _static(t.dims[i])
        if n is None or _static(t.dims[j]) != n:
            raise node.error(f"the diagonal over label {t.labels[i]!r} needs equal static "
                             "sizes")
        rest = [k for k in range(len(t.labels)) if k not in (i, j)]
        x = ops.permute_dims(t.expr, rest + [i, j])
        x = ops.reshape(x, [t.dims[k] for k in rest] + [n * n])
        x = ops.strided_slice(x, axes=[len(rest)], begin=[0], end=[n * n], strides=[n + 1])
        t = _Term(x, [t.labels[k] for k in rest] + [t.labels[i]],
                  [t.dims[k] for k in rest] + [t.dims[i]])
    return t


def _sum_away(t: _Term, keep: set[str]) -> _Term:
    axes = [k for k, label in enumerate(t.labels) if label not in keep]
    if not axes:
        return t
    return _Term(ops.sum(t.expr, axes, keepdims=False),
                 [lb for lb in t.labels if lb in keep],
                 [d for d, lb in zip(t.dims, t.labels) if lb in keep])


def _arrange(t: _Term, order: list[str], sizes: dict[str, Any]) -> Expr:
    """``t`` permuted to ``order`` and broadcast to the full sizes of its labels."""
    perm = [t.labels.index(lb) for lb in order]
    x = t.expr if perm == list(range(len(perm))) else ops.permute_dims(t.expr, perm)
    dims = [t.dims[k] for k in perm]
    full = [sizes[lb] for lb in order]
    if not all(_same_dim(a, b) for a, b in zip(dims, full)):
        x = ops.broadcast_to(x, full)
    return x


def _contract(a: _Term, b: _Term, keep: set[str], sizes: dict[str, Any]) -> _Term:
    """The product of ``a`` and ``b`` summed over their shared labels not in ``keep``."""
    a = _sum_away(a, keep | set(b.labels))
    b = _sum_away(b, keep | set(a.labels))
    batch = [lb for lb in a.labels if lb in b.labels and lb in keep]
    summed = [lb for lb in a.labels if lb in b.labels and lb not in keep]
    left = [lb for lb in a.labels if lb not in b.labels]
    right = [lb for lb in b.labels if lb not in a.labels]
    dims = {lb: sizes[lb] for lb in batch + summed + left + right}
    x = ops.reshape(_arrange(a, batch + left + summed, sizes),
                    [_product([dims[lb] for lb in batch]),
                     _product([dims[lb] for lb in left]),
                     _product([dims[lb] for lb in summed])])
    y = ops.reshape(_arrange(b, batch + summed + right, sizes),
                    [_product([dims[lb] for lb in batch]),
                     _product([dims[lb] for lb in summed]),
                     _product([dims[lb] for lb in right])])
    labels = batch + left + right
    out_dims = [dims[lb] for lb in labels]
    return _Term(ops.reshape(ops.matmul(x, y), out_dims), labels, out_dims)


@converter("Einsum", since=12)
def _einsum(node: Node) -> Expr:
    equation = str(node.required_attr("equation")).replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    texts = lhs.split(",")
    if len(texts) != node.num_inputs:
        raise node.error(f"the equation {equation!r} has {len(texts)} operands, the node "
                         f"{node.num_inputs} inputs")
    ndims = [node.ndim(i) for i in range(node.num_inputs)]
    ell = 0
    for text, nd in zip(texts, ndims):
        if _ELLIPSIS in text:
            ell = max(ell, nd - len(text.replace(_ELLIPSIS, "")))
    terms = []
    sizes: dict[str, Any] = {}
    for i, (text, nd) in enumerate(zip(texts, ndims)):
        labels = _parse_term(node, text, nd, ell)
        dims = list(node.shape(i))
        for lb, d in zip(labels, dims):
            prev = sizes.get(lb)
            if prev is None or _static(prev) == 1:
                sizes[lb] = d
            elif _static(d) is not None and _static(prev) is not None and \
                    _static(d) not in (1, _static(prev)):
                raise node.error(f"label {lb!r} has sizes {_static(prev)} and {_static(d)}")
            elif _static(d) == 1 and not lb.startswith(_ELLIPSIS):
                raise node.error(f"label {lb!r} has sizes {_static(prev)} and 1")
        terms.append(_Term(node.input(i), labels, dims))
    if arrow:
        out = _parse_term(node, rhs, None, ell)
        if len(set(out)) < len(out):
            raise node.error(f"the output {rhs!r} repeats a label")
        unknown = [lb for lb in out if lb not in sizes]
        if unknown:
            raise node.error(f"the output names labels no operand has: {unknown}")
    else:
        counts: dict[str, int] = {}
        for t in terms:
            for lb in t.labels:
                counts[lb] = counts.get(lb, 0) + 1
        out = [f"...{k}" for k in range(ell)] + sorted(
            lb for lb, c in counts.items() if c == 1 and not lb.startswith(_ELLIPSIS))
    terms = [_diagonal(node, t) for t in terms]
    for i, t in enumerate(terms):
        others = {lb for k, u in enumerate(terms) if k != i for lb in u.labels}
        terms[i] = _sum_away(t, set(out) | others)
    result = terms[0]
    for i in range(1, len(terms)):
        later = {lb for u in terms[i + 1:] for lb in u.labels}
        result = _contract(result, terms[i], set(out) | later, sizes)
    result = _sum_away(result, set(out))
    return _arrange(result, out, sizes)


__all__: list[str] = []

"""Converters of ONNX's text-feature operators over integer token ids: ``TfIdfVectorizer``
(a pool of strings is refused: irc has no string tensors).

The n-gram pool is an attribute, so the counting is a fixed graph of comparisons: for
each n-gram length ``n`` and skip distance ``d``, the ``n`` strided windows of the input
are compared with the pool's n-grams of that length, the matches summed over the
positions, and the per-n-gram counts mapped to their output columns by a constant 0/1
matrix.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir import ops
from ...ir.expr import Constant, Expr
from .importer import Node
from .registry import converter

_MODES = ("TF", "IDF", "TFIDF")


def _pool(node: Node) -> tuple[list[tuple[int, ...]], list[int]]:
    """The pool's n-grams (in pool order, each a tuple of token ids) and the n-gram
    length of each, from ``pool_int64s`` and ``ngram_counts``."""
    if node.attr("pool_strings") is not None:
        raise node.error("pool_strings: string tensors are not supported; irc converts "
                         "TfIdfVectorizer over integer token ids (pool_int64s)")
    pool = [int(v) for v in node.required_attr("pool_int64s")]
    starts = [int(v) for v in node.required_attr("ngram_counts")]
    if any(b < a for a, b in zip(starts, starts[1:])) or any(
            not 0 <= v <= len(pool) for v in starts):
        raise node.error(f"ngram_counts {starts} must rise from 0 to at most the pool's "
                         f"{len(pool)} entries")
    grams: list[tuple[int, ...]] = []
    lengths: list[int] = []
    for size, start in enumerate(starts, start=1):
        end = starts[size] if size < len(starts) else len(pool)
        if (end - start) % size:
            raise node.error(f"the pool's {end - start} entries of {size}-grams are not a "
                             f"multiple of {size}")
        for at in range(start, end, size):
            grams.append(tuple(pool[at:at + size]))
            lengths.append(size)
    return grams, lengths


def _counts(node: Node, x: Expr, length: int, grams: list[tuple[int, ...]],
            width: int, skip: int, columns: np.ndarray) -> Expr | None:
    """How often each of ``grams`` (all ``width`` long) occurs in the rows of ``x``
    (``[rows, length]`` int64) with ``skip`` tokens between its items, summed into
    ``columns`` (a ``[len(grams), outputs]`` 0/1 float32 matrix): ``[rows, outputs]``,
    or None when no window fits."""
    span = (width - 1) * (skip + 1)
    positions = length - span
    if positions <= 0:
        return None
    table = np.asarray(grams, "int64")  # [grams, width]
    match: Any = None
    for k in range(width):
        begin = k * (skip + 1)
        window = ops.strided_slice(x, [1], [begin], [begin + positions])
        eq = ops.equal(ops.expand_dims(window, 2), Constant.from_numpy(table[:, k]))
        match = eq if match is None else ops.logical_and(match, eq)
    found = ops.sum(ops.astype(match, "float32"), axis=[1])  # [rows, grams]
    return ops.matmul(found, Constant.from_numpy(columns))


@converter("TfIdfVectorizer", since=9)
def _tfidf_vectorizer(node: Node) -> Expr:
    """N-gram counts of each row of token ids (``[C]`` or ``[N, C]``), as term
    frequencies, 0/1 (or the n-gram's weight) for presence, or frequency times weight."""
    mode = node.required_attr("mode")
    if mode not in _MODES:
        raise node.error(f"mode {mode!r} is not one of {', '.join(_MODES)}")
    if node.dtype(0) not in ("int32", "int64"):
        raise node.error(f"the input must hold int32 or int64 token ids, got "
                         f"{node.dtype(0)}")
    shape = node.static_shape(0)
    if shape is None or len(shape) not in (1, 2):
        raise node.error(f"the input must have a static shape [C] or [N, C], got "
                         f"{list(node.shape(0))}")
    lo = int(node.required_attr("min_gram_length"))
    hi = int(node.required_attr("max_gram_length"))
    max_skip = int(node.required_attr("max_skip_count"))
    if not 1 <= lo <= hi or max_skip < 0:
        raise node.error(f"need 1 <= min_gram_length ({lo}) <= max_gram_length ({hi}) and "
                         f"max_skip_count ({max_skip}) >= 0")
    grams, lengths = _pool(node)
    indexes = [int(v) for v in node.required_attr("ngram_indexes")]
    if len(indexes) != len(grams) or min(indexes, default=0) < 0:
        raise node.error(f"ngram_indexes needs one output column (>= 0) per pool n-gram "
                         f"({len(grams)}), got {indexes}")
    outputs = max(indexes, default=-1) + 1
    weights = node.attr("weights")
    if weights is not None and len(weights) != outputs:
        raise node.error(f"weights needs one value per output column ({outputs}), got "
                         f"{len(weights)}")
    rows = 1 if len(shape) == 1 else shape[0]
    x = ops.reshape(ops.astype(node.input(0), "int64"), [rows, shape[-1]])
    # The last occurrence of an n-gram in the pool decides its column, as in ONNX's
    # reference (a later entry replaces an earlier one).
    column_of = {g: indexes[j] for j, g in enumerate(grams) if lo <= lengths[j] <= hi}
    total: Any = None
    for width in range(lo, hi + 1):
        mine = [g for g in column_of if len(g) == width]
        if not mine:
            continue
        columns = np.zeros((len(mine), outputs), "float32")
        columns[np.arange(len(mine)), [column_of[g] for g in mine]] = 1
        # Unigrams are counted once: a skip does not change them.
        for skip in range(max_skip + 1 if width > 1 else 1):
            part = _counts(node, x, shape[-1], mine, width, skip, columns)
            if part is not None:
                total = part if total is None else ops.add(total, part)
    if total is None:
        total = ops.zeros([rows, outputs], "float32")
    w = Constant.from_numpy(np.asarray(weights, "float32")) if weights is not None else None
    if mode == "IDF":
        present = ops.astype(ops.greater(total, Constant.from_numpy(np.float32(0))),
                             "float32")
        total = present if w is None else ops.multiply(present, w)
    elif mode == "TFIDF" and w is not None:
        total = ops.multiply(total, w)
    return ops.reshape(total, [outputs]) if len(shape) == 1 else total


__all__: list[str] = []

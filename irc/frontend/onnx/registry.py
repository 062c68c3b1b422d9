"""The converter table: ONNX operator type -> converters, each valid from an opset version.

A converter is a function ``f(node) -> Expr | Sequence[Expr]`` (``node`` an
:class:`~irc.frontend.onnx.importer.Node`: its inputs as irc expressions, its attributes,
the graph it belongs to) registered with :func:`converter` for the opset version where the
operator took the form it handles. The importer picks, for a model importing opset ``v``,
the converter registered with the greatest version ``<= v``; so ``Reshape`` registered at 5
(the target shape as an input) serves every model from opset 5 on, and a model at opset 1
(the shape as an attribute) gets a clear "unsupported" error.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Callable

# The oldest opset irc imports (ONNX's broadcasting became numpy's in opset 7).
MIN_OPSET = 7


@dataclass(frozen=True)
class Converter:
    op_type: str
    since: int
    fn: Callable[[Any], Any]


_TABLE: dict[str, list[Converter]] = {}


def converter(*op_types: str, since: int = 1) -> Callable[[Callable], Callable]:
    """Register the decorated function as the converter of ``op_types`` (default domain)
    from opset ``since`` on."""

    def register(fn: Callable) -> Callable:
        for op in op_types:
            entries = _TABLE.setdefault(op, [])
            if any(c.since == since for c in entries):
                raise ValueError(f"two ONNX converters for {op} since opset {since}")
            bisect.insort(entries, Converter(op, since, fn), key=lambda c: c.since)
        return fn

    return register


def lookup(op_type: str, opset: int) -> Converter | None:
    """The converter of ``op_type`` for a model importing ``opset``, or None."""
    entries = _TABLE.get(op_type, [])
    best = None
    for c in entries:
        if c.since <= opset:
            best = c
    return best


def supported_ops() -> dict[str, list[int]]:
    """Every operator type with a converter, and the opset versions its converters start
    at (sorted)."""
    return {op: [c.since for c in entries] for op, entries in sorted(_TABLE.items())}

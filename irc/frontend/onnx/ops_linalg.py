"""Converters of ONNX's matrix functions: ``Det`` (``R.linalg.det``, a loop kernel of
Gaussian elimination in float64)."""

from __future__ import annotations

from ...core import dtype as dt
from ...ir.expr import Expr
from ...ir.ops import linalg
from .importer import Node
from .registry import converter


@converter("Det", since=11)
def _det(node: Node) -> Expr:
    """The determinant of each square matrix ``x[..., :, :]``."""
    if not dt.is_float(node.dtype(0)):
        raise node.error(f"the input must be a float tensor, got {node.dtype(0)}")
    if node.ndim(0) < 2:
        raise node.error(f"the input must have rank 2 or more, got rank {node.ndim(0)}")
    return linalg.det(node.input(0))


__all__: list[str] = []

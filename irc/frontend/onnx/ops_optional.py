"""Converters of ONNX's optional values: ``Optional``, ``OptionalHasElement``,
``OptionalGetElement``.

An optional is resolved at import time: an optional made from a tensor or a sequence is
that value, and an input left out (no name) is an empty optional. An empty ``Optional``
node (no input, only a type) is refused with an :class:`~irc.UnsupportedOperatorError`,
as is an ``If`` that would choose at run time between it and a value. An optional graph
input is imported as its element, which the caller must then give.
"""

from __future__ import annotations

import numpy as np

from ...core.diagnostics import UnsupportedOperatorError
from ...ir.expr import Constant, Expr
from .importer import Node
from .registry import converter


@converter("Optional", since=15)
def _optional(node: Node) -> Expr:
    if not node.has_input(0):
        raise UnsupportedOperatorError(
            "an empty optional (no input) is not supported: irc resolves an optional to "
            "the value it holds when the model is imported, so whether it holds one must "
            "be known then (an omitted input is an empty optional irc handles)")
    return node.input(0)


@converter("OptionalHasElement", since=15)
def _optional_has_element(node: Node) -> Expr:
    """True for a given tensor, False for an input left out."""
    return Constant.from_numpy(np.asarray(node.has_input(0)))


@converter("OptionalGetElement", since=15)
def _optional_get_element(node: Node) -> Expr:
    """The value itself (a tensor or sequence given where an optional is expected)."""
    if not node.has_input(0):
        raise node.error("the optional input is empty: it holds no element to get")
    return node.input(0)


__all__: list[str] = []

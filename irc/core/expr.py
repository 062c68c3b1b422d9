"""The expressions every level of IR can name: ``BaseExpr`` (the base of graph-level
expressions, which carry struct info) and ``GlobalVar`` (the name of a function in an
IRModule).

They live in the core because an :class:`~irc.core.module.IRModule` is keyed by
``GlobalVar`` whatever level its functions are; the graph IR (``irc.ir``) builds its
expressions on ``BaseExpr`` and re-exports it as ``irc.ir.Expr``.
"""

from __future__ import annotations

from .diagnostics import IRTypeError
from .node import Node, node


@node
class BaseExpr(Node):
    """Base of graph expressions. ``struct_info`` (an ``irc.ir.StructInfo``) is None
    until the expression is normalized."""

    struct_info: Node | None = None

    @property
    def sinfo(self) -> Node:
        """The struct info; raises if the expression was never normalized."""
        if self.struct_info is None:
            raise IRTypeError(f"{type(self).__name__} has no struct info; normalize it with "
                              "irc.ir.BlockBuilder first", node=self, span=self.span)
        return self.struct_info


@node
class GlobalVar(BaseExpr):
    """The name of a function in an IRModule."""

    name_hint: str

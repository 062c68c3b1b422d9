"""Rewriting loop IR (what TVM calls the statement functor): :class:`IRRewriter`, a
copy-on-write rewriter of statements and expressions, variable substitution, and mapping
over child statements. The analyses, the schedule primitives and the passes all build on
it, so it sits below them."""

from .rewriter import IRRewriter
from .stmt_util import flat_seq, map_stmt_children
from .substitute import Substituter, substitute

__all__ = ["IRRewriter", "Substituter", "flat_seq", "map_stmt_children", "substitute"]

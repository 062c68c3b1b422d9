"""Integer arithmetic analysis of loop-IR expressions: simplification (constant folding,
a canonical form for index expressions, rewrite rules), constant bounds, proofs,
symbolic intervals and modular (alignment) sets. The entry point is :class:`Analyzer`.
"""

from .analyzer import Analyzer
from .bound import NEG_INF, POS_INF, ConstIntBound
from .int_set import IntervalSet, union_intervals
from .modular import ModularSet


def simplify(expr, analyzer: Analyzer | None = None):
    """``expr`` simplified by ``analyzer`` (a fresh one when omitted)."""
    return (analyzer or Analyzer()).simplify(expr)


__all__ = [
    "Analyzer",
    "ConstIntBound",
    "IntervalSet",
    "ModularSet",
    "NEG_INF",
    "POS_INF",
    "simplify",
    "union_intervals",
]

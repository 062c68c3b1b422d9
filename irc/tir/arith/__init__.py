"""Integer arithmetic of loop-IR expressions: the one index algebra of irc.

- :class:`Analyzer` (``analyzer``, ``canonical``, ``rules``, ``bound``, ``int_set``,
  ``modular``): simplification under variable ranges and assumed facts (constant folding,
  the canonical *linear* form of index expressions with range-aware division rules,
  rewrite rules), constant bounds, proofs, symbolic intervals and alignment.
- ``polynomial``: the context-free *polynomial* normal form (products of symbols such as
  ``n*m*4``) with ``normalize``, ``prove_equal``, ``prove_not_equal``, ``const_value``,
  ``exact_divide`` and ``shape_product``: what graph-level shape inference uses.
- ``affine``: exact affine coefficients of an index (``affine_form``,
  ``row_major_strides``: what the default schedule rules and the tuning space read
  strides from) and the feature extractor's approximate strides
  (``approximate_coefficients``).

Each module's docstring says why its form is not one of the others'.
"""

from . import affine, polynomial
from .affine import affine_form, approximate_coefficients, row_major_strides
from .analyzer import Analyzer
from .bound import NEG_INF, POS_INF, ConstIntBound
from .int_set import IntervalSet, union_intervals
from .modular import ModularSet
from .polynomial import const_value, exact_divide, prove_equal, prove_not_equal, shape_product


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
    "affine",
    "affine_form",
    "approximate_coefficients",
    "const_value",
    "exact_divide",
    "polynomial",
    "prove_equal",
    "prove_not_equal",
    "row_major_strides",
    "shape_product",
    "simplify",
    "union_intervals",
]

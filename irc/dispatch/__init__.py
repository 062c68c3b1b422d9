"""Library dispatch: find the subgraphs of a graph function that a library (BLAS, oneDNN,
cuBLAS) can run, and hand them to it.

- ``pattern``: the dataflow pattern language (``wildcard``, ``is_op``, ``is_const``,
  ``is_tuple``, ``is_tuple_get_item``; ``p | q``, ``p.optional(f)``, ``p.has_attr``,
  ``p.has_dtype``, ``p.has_shape``) and matching inside a dataflow block (``match``,
  ``find_matches``, which keeps a value read outside a match out of it).
- ``table``: named patterns with annotated parts and check functions
  (``register_patterns``, ``get_pattern``, ``get_patterns_with_prefix``), which
  ``irc.passes.FuseOpsByPattern`` turns into composite functions.
- ``codegen``: the backends' code generators (``register_codegen``), which
  ``irc.passes.RunCodegen`` calls to turn composite functions into library modules.
- backends: ``blas`` (OpenBLAS, extra ``irc[blas]``), ``dnnl`` (oneDNN convolutions and
  matrix products with post-ops, extra ``irc[dnnl]``; registered only when installed) and
  ``cublas`` (cuBLAS on NVIDIA GPUs, extra ``irc[cuda]`` with ``nvidia-cublas``) and
  ``cudnn`` (cuDNN convolutions on NVIDIA GPUs, extra ``irc[cudnn]``; registered only when
  installed); their patterns are registered when irc is imported, the libraries are
  loaded at the first call.

    from irc.dispatch import is_op, wildcard, register_patterns
    x, w = wildcard(), wildcard()
    register_patterns([("mylib.matmul_relu", is_op("nn.relu")(is_op("matmul")(x, w)),
                        {"lhs": x, "rhs": w})])
"""

from . import blas, cublas, cudnn, dnnl
from .codegen import check_backend_target, get_codegen, register_codegen
from .pattern import (
    AttrPattern,
    CallPattern,
    ConstantPattern,
    DataTypePattern,
    OpPattern,
    OrPattern,
    Pattern,
    PatternMatch,
    ShapePattern,
    TupleGetItemPattern,
    TuplePattern,
    WildcardPattern,
    external_uses,
    find_matches,
    is_const,
    is_op,
    is_tuple,
    is_tuple_get_item,
    match,
    wildcard,
)
from .table import (
    PatternCheckContext,
    PatternEntry,
    as_entry,
    get_pattern,
    get_patterns_with_prefix,
    mark_unavailable,
    register_patterns,
    unavailable_reason,
)

__all__ = [
    "blas", "cublas", "cudnn", "dnnl", "check_backend_target", "get_codegen", "register_codegen",
    "Pattern", "WildcardPattern", "OpPattern", "CallPattern", "ConstantPattern",
    "TuplePattern", "TupleGetItemPattern", "OrPattern", "AttrPattern", "DataTypePattern",
    "ShapePattern", "wildcard", "is_op", "is_const", "is_tuple", "is_tuple_get_item",
    "match", "find_matches", "external_uses", "PatternMatch", "PatternEntry",
    "PatternCheckContext", "register_patterns", "get_pattern", "get_patterns_with_prefix",
    "as_entry", "mark_unavailable", "unavailable_reason",
]

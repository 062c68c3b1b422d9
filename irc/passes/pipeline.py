"""Named pipelines: ``get_pipeline("zero")`` and ``get_pipeline("default")``.

Both start by recording which extent each integer parameter indexes
(``AnnotateIndexExtents``: random inputs of the executable are drawn within it).

- ``zero``: the minimum that makes a module runnable — legalize operators to loop
  functions (seed 003 runs it before default schedule rules or tuning).
- ``default``: what ``irc.compile`` uses: fold batch norms into the constant-weight
  convolutions before them, decompose the remaining batch norms for inference, normalize,
  canonicalize bindings, remove dead code (a decomposed batch norm leaves an unused
  tuple that would keep its output in the old layout), on CPU (llvm) targets convert
  convolutions to NHWC (``ConvertLayoutForTarget``: permutations only at the ends of
  convolution chains) and run the 3 x 3 ones of stride 1 or 2 with constant kernels as
  Winograd convolutions where that pays (``WinogradConv2D``, tile size chosen per layer),
  legalize, normalize and canonicalize again (legalization may
  nest calls in tuples: batch norm and dropout return tuples), annotate loop functions
  with their fusion patterns, fold constants (weights are constants once bound, so
  weight transposes and batch-norm factors vanish), remove dead code, fuse operators into
  groups and each group into one loop function, and remove what fusion left unused.
  Last, the default schedule rules of the current target (``irc.compile`` runs the
  pipeline under ``with target:``; ``irc.dlight.cpu`` for llvm, ``irc.dlight.gpu`` for
  cuda) schedule every loop function not yet scheduled, packing constant weights into
  the layouts the CPU micro-kernels read (``irc.dlight.weights``).
"""

from __future__ import annotations

from ..core.diagnostics import IRCError
from ..core.transform import Pass, Sequential
from ..dlight.apply import DefaultScheduleForTarget
from .annotate_index_extents import AnnotateIndexExtents
from .annotate_tir_op_pattern import AnnotateTIROpPattern
from .canonicalize_bindings import CanonicalizeBindings
from .convert_layout import ConvertLayoutForTarget
from .dead_code_elimination import DeadCodeElimination
from .decompose_ops import DecomposeOpsForInference
from .fold_batch_norm import FoldBatchNormToConv2D
from .fold_constant import FoldConstant
from .fuse_ops import FuseOps
from .fuse_tir import FuseTIR
from .legalize import LegalizeOps
from .normalize import Normalize
from .winograd import WinogradConv2D


def _zero() -> Pass:
    return Sequential([AnnotateIndexExtents(), LegalizeOps()], name="zero")


def _default() -> Pass:
    return Sequential([
        AnnotateIndexExtents(),
        FoldBatchNormToConv2D(),
        DecomposeOpsForInference(),
        Normalize(),
        CanonicalizeBindings(),
        DeadCodeElimination(),
        ConvertLayoutForTarget(),
        WinogradConv2D(),
        LegalizeOps(),
        Normalize(),
        CanonicalizeBindings(),
        AnnotateTIROpPattern(),
        FoldConstant(),
        DeadCodeElimination(),
        FuseOps(),
        FuseTIR(),
        DeadCodeElimination(),
        DefaultScheduleForTarget(),
    ], name="default")


_PIPELINES = {"zero": _zero, "default": _default}


def get_pipeline(name: str = "zero") -> Pass:
    """The pipeline called ``name`` (``"zero"`` or ``"default"``)."""
    fn = _PIPELINES.get(name)
    if fn is None:
        raise IRCError(f"unknown pipeline {name!r}; available: {', '.join(sorted(_PIPELINES))}")
    return fn()

"""Named pipelines: ``get_pipeline("zero")`` and ``get_pipeline("default")``.

- ``zero``: the minimum that makes a module runnable — legalize operators to loop
  functions (seed 003 runs it before default schedule rules or tuning).
- ``default``: what ``irc.compile`` uses: fold batch norms into the constant-weight
  convolutions before them, decompose the remaining batch norms for inference, normalize,
  canonicalize bindings, legalize, normalize and canonicalize again (legalization may
  nest calls in tuples: batch norm and dropout return tuples), annotate loop functions
  with their fusion patterns, fold constants (weights are constants once bound, so
  weight transposes and batch-norm factors vanish), remove dead code, fuse operators into
  groups and each group into one loop function, and remove what fusion left unused.
  Layout conversion is not in it (it changes kernels' layouts, which pays with tuning;
  put ``ConvertLayout`` in front when wanted). Last, when the current target is llvm
  (``irc.compile`` runs the pipeline under ``with target:``), the default CPU schedule
  rules (``irc.dlight.cpu``) schedule every loop function not yet scheduled.
"""

from __future__ import annotations

from ..core.diagnostics import IRCError
from ..core.transform import Pass, Sequential
from ..dlight.apply import DefaultScheduleForTarget
from .annotate_tir_op_pattern import AnnotateTIROpPattern
from .canonicalize_bindings import CanonicalizeBindings
from .dead_code_elimination import DeadCodeElimination
from .decompose_ops import DecomposeOpsForInference
from .fold_batch_norm import FoldBatchNormToConv2D
from .fold_constant import FoldConstant
from .fuse_ops import FuseOps
from .fuse_tir import FuseTIR
from .legalize import LegalizeOps
from .normalize import Normalize


def _zero() -> Pass:
    return Sequential([LegalizeOps()], name="zero")


def _default() -> Pass:
    return Sequential([
        FoldBatchNormToConv2D(),
        DecomposeOpsForInference(),
        Normalize(),
        CanonicalizeBindings(),
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

"""Pass infrastructure and the graph-level passes; named pipelines."""

from .annotate_tir_op_pattern import AnnotateTIROpPattern
from .bind_params import BindParams
from .canonicalize_bindings import CanonicalizeBindings
from .convert_layout import ConvertLayout
from .dead_code_elimination import DeadCodeElimination
from .decompose_ops import DecomposeOpsForInference
from .fold_constant import FoldConstant
from .fuse_ops import FuseOps
from .fuse_tir import FuseTIR
from .infra import (
    FunctionPass,
    ModulePass,
    Pass,
    PassContext,
    PassInfo,
    PassInstrument,
    PassTimingInstrument,
    PrintIR,
    Sequential,
    WellFormedInstrument,
    function_pass,
    module_pass,
    prim_func_pass,
)
from .legalize import LegalizeOps
from .normalize import Normalize
from .pipeline import get_pipeline


def __getattr__(name: str):
    # The tuning passes live in irc.tune.ms; imported on first use so that importing
    # irc does not import the tuner.
    if name in ("MetaScheduleTuneTIR", "MetaScheduleApplyDatabase"):
        from ..tune import ms

        return getattr(ms, name)
    raise AttributeError(f"module 'irc.passes' has no attribute {name!r}")

"""The graph-level passes and the named pipelines; the pass infrastructure (defined in
:mod:`irc.core.transform` and :mod:`irc.core.instrument`) is re-exported here, as are
the function-pass decorators of both IR levels.

The tuning passes ``MetaScheduleTuneTIR`` and ``MetaScheduleApplyDatabase`` belong to
``irc.tune.ms`` (a higher layer than this package); ``irc.passes.MetaScheduleTuneTIR``
reaches them through the late binding the root package registers (:func:`late_bind`).
"""

from typing import Any, Callable

from ..core.instrument import PassTimingInstrument, PrintIR, RoundTripInstrument
from ..core.transform import (
    FunctionPass,
    ModulePass,
    Pass,
    PassContext,
    PassInfo,
    PassInstrument,
    Sequential,
    known_pass_names,
    module_pass,
    register_pass_config,
    register_pass_name,
)
from ..ir.transform import function_pass
from ..ir.well_formed import WellFormedInstrument
from ..tir.transform import PrimFuncPass, prim_func_pass
from .annotate_index_extents import AnnotateIndexExtents, index_extents
from .annotate_tir_op_pattern import AnnotateTIROpPattern
from .bind_params import BindParams
from .bind_symbolic_vars import BindSymbolicVars, parameter_shape_vars
from .canonicalize_bindings import CanonicalizeBindings
from .convert_layout import ConvertLayout, ConvertLayoutForTarget
from .dead_code_elimination import DeadCodeElimination
from .decompose_ops import DecomposeOpsForInference
from .fold_batch_norm import FoldBatchNormToConv2D
from .fold_constant import FoldConstant
from .fuse_ops import FuseOps
from .fuse_ops_by_pattern import FuseOpsByPattern
from .fuse_tir import FuseTIR
from .legalize import LegalizeOps
from .normalize import Normalize
from .pipeline import get_pipeline
from .run_codegen import RunCodegen
from .winograd import WinogradConv2D

_LATE: dict[str, Callable[[], Any]] = {}


def late_bind(name: str, load: Callable[[], Any]) -> None:
    """Make ``irc.passes.<name>`` resolve, on first use, to what ``load()`` returns. The
    root package uses this for the passes a higher layer defines (the tuning passes), so
    that this package never imports that layer. ``name`` counts as a pass name
    (``PassContext(disabled_pass=[name])``) from now on."""
    _LATE[name] = load
    register_pass_name(name)


def __getattr__(name: str) -> Any:
    load = _LATE.get(name)
    if load is None:
        raise AttributeError(f"module 'irc.passes' has no attribute {name!r}")
    value = load()
    globals()[name] = value
    return value

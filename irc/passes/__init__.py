"""Pass infrastructure and the graph-level passes; named pipelines."""

from .bind_params import BindParams
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
from .pipeline import get_pipeline

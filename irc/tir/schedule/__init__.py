"""The schedule language over block-form loop IR: ``Schedule`` with checked primitives,
sampling instructions and a replayable ``Trace`` (see ``schedule.py``)."""

from .blockize import TensorIntrin
from .index_map import IndexMap
from .instruction import BlockRV, ExprRV, Instruction, InstructionKind, LoopRV
from .layout import (
    LayoutRewrite,
    layout_rewrite_preproc,
    layout_rewrites,
    pack_params,
    pack_weight,
)
from .schedule import Schedule
from .trace import Trace

__all__ = [
    "BlockRV",
    "ExprRV",
    "IndexMap",
    "Instruction",
    "InstructionKind",
    "LayoutRewrite",
    "LoopRV",
    "Schedule",
    "TensorIntrin",
    "Trace",
    "layout_rewrite_preproc",
    "layout_rewrites",
    "pack_params",
    "pack_weight",
]

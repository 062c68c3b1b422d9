"""The schedule language over block-form loop IR: ``Schedule`` with checked primitives,
sampling instructions and a replayable ``Trace`` (see ``schedule.py``).

Modules: ``state`` (the function and its lookup tables), ``loops`` (split, fuse, reorder,
loop kinds, annotations), ``compute_location`` (compute_at and inlining), ``cache``,
``reduction`` (decompose_reduction, rfactor), ``layout`` (transform_layout, layout_rewrite
and weight packing), ``blockize`` (blockize, tensorize, ``TensorIntrin``), ``sampling``,
``iter_map`` (affine binding analysis), ``instruction`` and ``trace``; ``analysis`` (what
the primitives check about blocks) and ``block_info`` (what schedule rules ask about
blocks and loops: loop kinds, strides, reductions, outputs).
"""

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

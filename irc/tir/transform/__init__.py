"""Loop-IR passes, one per module, and the lowering pipeline (``lower_primfunc``,
``lower_module``, ``irc.lower``). Each pass is a frozen dataclass callable on a PrimFunc
or an IRModule, with a functional form of the same name in snake case."""

from ..functor.stmt_util import map_stmt_children
from ..functor.substitute import substitute
from .base import PrimFuncPass, prim_func_pass
from .compact_buffer_allocation import CompactBufferAllocation, compact_buffer_allocation
from .convert_blocks_to_opaque import ConvertBlocksToOpaque, convert_blocks_to_opaque
from .flatten_buffer import FlattenBuffer, flatten_buffer
from .loop_partition import LoopPartition, loop_partition
from .lower import (
    GPU_LOWERING_PASSES,
    LOWER_TIR,
    LOWER_TIR_GPU,
    LOWERING_PASSES,
    lower,
    lower_module,
    lower_primfunc,
    lower_primfunc_for_gpu,
)
from .lower_init_block import LowerInitBlock, lower_init_block
from .lower_match_buffer import LowerMatchBuffer, lower_match_buffer
from .lower_opaque_block import LowerOpaqueBlock, lower_opaque_block
from .lower_thread_binding import LowerThreadBinding
from .plan_buffer_allocation import (
    PlanAndUpdateBufferAllocationLocation,
    plan_and_update_buffer_allocation_location,
)
from .remove_no_op import RemoveNoOp, remove_no_op
from .simplify import Simplify, StmtSimplifier, simplify
from .thread_sync import ThreadSync
from .unroll_loop import UnrollLoop, unroll_loop
from .unswitch_guards import UNSWITCH_KEY, UnswitchGuards
from .vectorize_loop import VectorizeLoop, vectorize_loop

__all__ = [
    "CompactBufferAllocation",
    "ConvertBlocksToOpaque",
    "FlattenBuffer",
    "LoopPartition",
    "GPU_LOWERING_PASSES",
    "LOWER_TIR_GPU",
    "LowerThreadBinding",
    "ThreadSync",
    "lower_primfunc_for_gpu",
    "LOWERING_PASSES",
    "LOWER_TIR",
    "LowerInitBlock",
    "LowerMatchBuffer",
    "LowerOpaqueBlock",
    "PlanAndUpdateBufferAllocationLocation",
    "PrimFuncPass",
    "RemoveNoOp",
    "Simplify",
    "StmtSimplifier",
    "UnrollLoop",
    "UnswitchGuards",
    "UNSWITCH_KEY",
    "VectorizeLoop",
    "compact_buffer_allocation",
    "convert_blocks_to_opaque",
    "flatten_buffer",
    "lower",
    "lower_init_block",
    "lower_match_buffer",
    "lower_module",
    "lower_opaque_block",
    "loop_partition",
    "lower_primfunc",
    "map_stmt_children",
    "plan_and_update_buffer_allocation_location",
    "prim_func_pass",
    "remove_no_op",
    "simplify",
    "substitute",
    "unroll_loop",
    "vectorize_loop",
]

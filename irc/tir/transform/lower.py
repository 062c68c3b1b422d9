"""The lowering pipeline from block-form loop IR to the flat form code generators take,
and ``irc.lower``.

The passes run in this order (each is documented in its own module):

1. LowerInitBlock — ``init`` becomes a first-reduction-iteration guard
2. PlanAndUpdateBufferAllocationLocation — allocations move to the access LCA
3. ConvertBlocksToOpaque — block iteration variables are substituted away
4. CompactBufferAllocation — intermediate buffers shrink to the region touched
5. LowerMatchBuffer — match_buffer views become source accesses
6. Simplify
7. LowerOpaqueBlock — blocks disappear; Allocate/DeclBuffer, predicates become ifs
8. LoopPartition — loops are cut where a predicate changes (partial tiles)
9. UnswitchGuards — annotated tiles get a copy without padding guards, for the tiles
   inside the image
10. InsertBoundChecks — index checks, in functions built with ``check_bounds``
11. FlattenBuffer — every access is 1-D
12. LowerNarrowDTypes — float8/float4/int4/int2 values compute in float32/int32, stored
    as bytes
13. Simplify
14. VectorizeLoop — vectorized loops become vector expressions
15. UnrollLoop — unrolled loops and auto-unroll pragmas expand
16. Simplify
17. RemoveNoOp

The passes form one ``Sequential`` named ``LowerTIR`` (:data:`LOWER_TIR`), so the
instruments of the current ``PassContext`` (timing, printing, round-trip and
well-formedness checks) see every step. The result has no Block/BlockRealize; every
load/store is on a 1-D buffer whose data is a parameter buffer's data or an Allocate's
buffer_var; vectorized loops are vector code where possible; expressions are simplified.
"""

from __future__ import annotations

from typing import Any, Sequence

from ...core.diagnostics import LoweringError
from ...core.module import IRModule
from ...core.transform import Sequential
from ..stmt import PrimFunc
from ..te import create_prim_func
from .compact_buffer_allocation import CompactBufferAllocation
from .convert_blocks_to_opaque import ConvertBlocksToOpaque
from .flatten_buffer import FlattenBuffer
from .insert_bound_checks import InsertBoundChecks
from .launch_serial_loops import LaunchSerialLoops
from .loop_partition import LoopPartition
from .lower_init_block import LowerInitBlock
from .lower_match_buffer import LowerMatchBuffer
from .lower_narrow_dtypes import LowerNarrowDTypes
from .lower_opaque_block import LowerOpaqueBlock
from .lower_thread_binding import LowerThreadBinding
from .plan_buffer_allocation import PlanAndUpdateBufferAllocationLocation
from .remove_no_op import RemoveNoOp
from .simplify import Simplify
from .thread_sync import ThreadSync
from .unroll_loop import UnrollLoop
from .unswitch_guards import UnswitchGuards
from .vectorize_loop import VectorizeLoop

LOWERING_PASSES = (
    LowerInitBlock(),
    PlanAndUpdateBufferAllocationLocation(detect_regions=False),
    ConvertBlocksToOpaque(),
    CompactBufferAllocation(),
    LowerMatchBuffer(),
    Simplify(),
    LowerOpaqueBlock(),
    LoopPartition(),
    UnswitchGuards(),
    InsertBoundChecks(),
    FlattenBuffer(),
    LowerNarrowDTypes(),
    Simplify(),
    VectorizeLoop(),
    UnrollLoop(),
    Simplify(),
    RemoveNoOp(),
)
"""The passes of :data:`LOWER_TIR`, in order."""

LOWER_TIR = Sequential(LOWERING_PASSES, name="LowerTIR")
"""The lowering pipeline as one pass over every PrimFunc of a module."""

GPU_LOWERING_PASSES = LOWERING_PASSES + (
    LaunchSerialLoops(),
    LowerThreadBinding(),
    ThreadSync(),
    Simplify(),
    RemoveNoOp(),
)
"""The passes of :data:`LOWER_TIR_GPU`: lowering, then loop kernels written as plain loops
go into a one-thread launch (``LaunchSerialLoops``), thread-bound loops become kernels
in launch form (``LowerThreadBinding``) with the barriers their threads need
(``ThreadSync``)."""

LOWER_TIR_GPU = Sequential(GPU_LOWERING_PASSES, name="LowerTIRForGPU")
"""The lowering pipeline for GPU targets: what the CUDA code generator and the
interpreter's GPU mode take."""


def lower_primfunc(func: PrimFunc) -> PrimFunc:
    """Lower a block-form (or partly lowered) PrimFunc to the flat form code generators
    take. Lowering an already lowered function returns an equivalent function."""
    if not isinstance(func, PrimFunc):
        raise LoweringError(f"lower_primfunc takes a PrimFunc, not {type(func).__name__}")
    symbol = func.attrs.get("global_symbol", "main")
    name = symbol if isinstance(symbol, str) else "main"
    return LOWER_TIR(IRModule(functions={name: func}))[name]


def lower_primfunc_for_gpu(func: PrimFunc) -> PrimFunc:
    """Lower a GPU-scheduled PrimFunc to kernel form (:data:`LOWER_TIR_GPU`)."""
    if not isinstance(func, PrimFunc):
        raise LoweringError(f"lower_primfunc_for_gpu takes a PrimFunc, not "
                            f"{type(func).__name__}")
    symbol = func.attrs.get("global_symbol", "main")
    name = symbol if isinstance(symbol, str) else "main"
    return LOWER_TIR_GPU(IRModule(functions={name: func}))[name]


def lower_module(mod: IRModule) -> IRModule:
    """Lower every PrimFunc of ``mod``; graph-level functions are left as they are."""
    return LOWER_TIR(mod)


def lower(obj: Any, args: Sequence[Any] | None = None, simple_mode: bool = True,
          name: str = "main") -> IRModule:
    """Lower a schedule, PrimFunc or IRModule and return the lowered IRModule.

    ``obj`` may be an object with a ``.mod`` attribute (an ``irc.tir.Schedule``), a
    ``PrimFunc`` (named ``name`` in the result, or its ``global_symbol``), an
    ``IRModule``, or a list of te tensors; with ``args`` (te tensors) and no schedule
    module, the function is built by ``irc.tir.te.create_prim_func(args)``.
    ``simple_mode`` is accepted for compatibility: the result is always the lowered
    module without host-side wrappers. ``print(irc.lower(sch, args))`` prints its IR text.
    """
    del simple_mode  # irc never adds host wrappers here
    mod = _as_module(obj, args, name)
    return lower_module(mod)


def _as_module(obj: Any, args: Sequence[Any] | None, name: str) -> IRModule:
    if isinstance(obj, IRModule):
        return obj
    if isinstance(obj, PrimFunc):
        symbol = obj.attrs.get("global_symbol", name)
        return IRModule(functions={symbol: obj})
    mod = getattr(obj, "mod", None)
    if isinstance(mod, IRModule):
        return mod
    if isinstance(mod, PrimFunc):
        return IRModule(functions={name: mod})
    tensors = args if obj is None else obj if isinstance(obj, (list, tuple)) else None
    if tensors is not None:
        func = create_prim_func(list(tensors))
        return IRModule(functions={name: func})
    raise LoweringError(
        f"irc.lower cannot lower a {type(obj).__name__}; pass a Schedule (with .mod), a "
        "PrimFunc, an IRModule, or a list of te tensors")

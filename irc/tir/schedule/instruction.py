"""Instructions: one recorded call of a schedule primitive, and the table of kinds.

An :class:`Instruction` holds its kind, its inputs (random variables, numbers, None or
lists of them), its attributes (JSON values) and its outputs (random variables). The
kind table says which :class:`~irc.tir.Schedule` method replays an instruction, the
names of its parameters (for the printed Python), whether it is pure (no effect on the
IR, so it can be dropped when its outputs are unused) and what it returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class BlockRV:
    """A handle to a block, resolved against the schedule's current function."""

    __slots__ = ("__weakref__",)
    prefix = "b"

    def __repr__(self) -> str:
        return f"BlockRV({id(self):#x})"


class LoopRV:
    """A handle to a loop, resolved against the schedule's current function."""

    __slots__ = ("__weakref__",)
    prefix = "l"

    def __repr__(self) -> str:
        return f"LoopRV({id(self):#x})"


class ExprRV:
    """A handle to an integer chosen by a sampling instruction."""

    __slots__ = ("__weakref__",)
    prefix = "v"

    def __repr__(self) -> str:
        return f"ExprRV({id(self):#x})"


RV_TYPES = (BlockRV, LoopRV, ExprRV)


@dataclass(frozen=True)
class InstructionKind:
    """How an instruction kind is replayed and printed.

    ``inputs`` names the method parameters the inputs fill, in order; a name ending in
    ``...`` takes all remaining inputs as one list argument and a name starting with
    ``*`` passes them positionally. ``returns`` is "none", "one" or "list".
    """

    name: str
    method: str
    inputs: tuple[str, ...]
    attrs: tuple[str, ...]
    returns: str = "none"
    pure: bool = False
    sampling: bool = False


_KINDS = [
    InstructionKind("GetBlock", "get_block", (), ("name", "func_name"), "one", pure=True),
    InstructionKind("GetLoops", "get_loops", ("block",), (), "list", pure=True),
    InstructionKind("GetChildBlocks", "get_child_blocks", ("block_or_loop",), (), "list",
                    pure=True),
    InstructionKind("GetProducers", "get_producers", ("block",), (), "list", pure=True),
    InstructionKind("GetConsumers", "get_consumers", ("block",), (), "list", pure=True),
    InstructionKind("Split", "split", ("loop", "factors..."), ("preserve_unit_iters",), "list"),
    InstructionKind("Fuse", "fuse", ("*loops",), ("preserve_unit_iters",), "one"),
    InstructionKind("Reorder", "reorder", ("*ordered_loops",), ()),
    InstructionKind("AddUnitLoop", "add_unit_loop", ("block_or_loop",), (), "one"),
    InstructionKind("Parallel", "parallel", ("loop",), ()),
    InstructionKind("Vectorize", "vectorize", ("loop",), ()),
    InstructionKind("Unroll", "unroll", ("loop",), ()),
    InstructionKind("Bind", "bind", ("loop",), ("thread_axis",)),
    InstructionKind("Annotate", "annotate", ("block_or_loop", "ann_val"), ("ann_key",)),
    InstructionKind("Unannotate", "unannotate", ("block_or_loop",), ("ann_key",)),
    InstructionKind("ComputeAt", "compute_at", ("block", "loop"), ("preserve_unit_loops",)),
    InstructionKind("ReverseComputeAt", "reverse_compute_at", ("block", "loop"),
                    ("preserve_unit_loops",)),
    InstructionKind("ComputeInline", "compute_inline", ("block",), ()),
    InstructionKind("ReverseComputeInline", "reverse_compute_inline", ("block",), ()),
    InstructionKind("CacheRead", "cache_read", ("block", "consumer_blocks..."),
                    ("read_buffer_index", "storage_scope"), "one"),
    InstructionKind("CacheWrite", "cache_write", ("block",),
                    ("write_buffer_index", "storage_scope"), "one"),
    InstructionKind("SetScope", "set_scope", ("block",), ("buffer_index", "storage_scope")),
    InstructionKind("StorageAlign", "storage_align", ("block",),
                    ("buffer_index", "axis", "factor", "offset")),
    InstructionKind("DecomposeReduction", "decompose_reduction", ("block", "loop"), (),
                    "one"),
    InstructionKind("RFactor", "rfactor", ("loop",), ("factor_axis",), "one"),
    InstructionKind("TransformLayout", "transform_layout", ("block",),
                    ("buffer", "index_map")),
    InstructionKind("LayoutRewrite", "layout_rewrite", ("block",),
                    ("read_buffer_index", "index_map")),
    InstructionKind("Blockize", "blockize", ("loop",), ("preserve_unit_iters",), "one"),
    InstructionKind("Tensorize", "tensorize", ("block_or_loop",), ("tensor_intrin",)),
    InstructionKind("SamplePerfectTile", "sample_perfect_tile", ("loop",),
                    ("n", "max_innermost_factor"), "list", pure=True, sampling=True),
    InstructionKind("SampleCategorical", "sample_categorical", (), ("candidates", "probs"),
                    "one", pure=True, sampling=True),
    InstructionKind("SampleComputeLocation", "sample_compute_location", ("block",), (), "one",
                    pure=True, sampling=True),
    InstructionKind("EnterPostproc", "enter_postproc", (), ()),
]

KINDS: dict[str, InstructionKind] = {k.name: k for k in _KINDS}


class Instruction:
    """One recorded primitive call: ``kind``, ``inputs``, ``attrs`` and ``outputs``."""

    __slots__ = ("kind", "inputs", "attrs", "outputs")

    def __init__(self, kind: InstructionKind, inputs: list[Any], attrs: list[Any],
                 outputs: list[Any]):
        self.kind = kind
        self.inputs = inputs
        self.attrs = attrs
        self.outputs = outputs

    def __repr__(self) -> str:
        return f"Instruction({self.kind.name}, inputs={self.inputs!r}, attrs={self.attrs!r})"


def call_arguments(kind: InstructionKind, inputs: list[Any], attrs: list[Any]
                   ) -> tuple[list[Any], dict[str, Any]]:
    """Positional and keyword arguments of the method call an instruction stands for."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    pos = 0
    for name in kind.inputs:
        if name.startswith("*"):
            args.extend(inputs[pos:])
            pos = len(inputs)
        elif name.endswith("..."):
            kwargs[name[:-3]] = list(inputs[pos:])
            pos = len(inputs)
        else:
            kwargs[name] = inputs[pos]
            pos += 1
    for name, value in zip(kind.attrs, attrs):
        kwargs[name] = value
    return args, kwargs

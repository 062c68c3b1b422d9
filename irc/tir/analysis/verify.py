"""A checker of the lowered form (what code generators may assume)."""

from __future__ import annotations

from ...core.diagnostics import LoweringError
from ...core.node import Node, node_fields
from ..buffer import Buffer
from ..expr import BufferLoad, Var
from ..stmt import Allocate, Block, BlockRealize, BufferStore, For, PrimFunc
from .var_use import undefined_vars


def verify_lowered(func: PrimFunc) -> None:
    """Raise LoweringError unless ``func`` is in lowered form: no blocks, no
    ``vectorized`` loops, every load/store on a 1-D buffer without strides whose data is
    a parameter buffer's data or an ``Allocate``'s buffer_var in scope, and no variable
    used without a definition (parameters, their buffers' shapes, loops, lets)."""
    params = {id(b.data) for b in func.buffer_map.values()}
    params |= {id(p) for p in func.params if p.dtype == "handle"}
    allocated: set[int] = set()

    def check_buffer(b: Buffer, where: Node) -> None:
        if len(b.shape) != 1 or b.strides:
            raise LoweringError(f"buffer {b.name} is accessed with {len(b.shape)} dimensions "
                                "after lowering; FlattenBuffer must make it 1-D", node=where)
        if id(b.data) not in params and id(b.data) not in allocated:
            raise LoweringError(f"buffer {b.name} points at {b.data.name}, which is neither a "
                                "parameter nor an allocation in scope", node=where)

    def walk(x) -> None:
        if isinstance(x, (tuple, list)):
            for y in x:
                walk(y)
            return
        if not isinstance(x, Node) or isinstance(x, Buffer):
            return
        cls = type(x)
        if cls in (Block, BlockRealize):
            raise LoweringError("a block remains after lowering", node=x)
        if cls is For and x.kind == "vectorized":
            raise LoweringError(f"loop {x.loop_var.name} is still marked vectorized", node=x)
        if cls is BufferLoad or cls is BufferStore:
            check_buffer(x.buffer, x)
        if cls is Allocate:
            allocated.add(id(x.buffer_var))
            walk(x.extents)
            walk(x.body)
            allocated.discard(id(x.buffer_var))
            return
        for f in node_fields(cls):
            if f != "span":
                walk(getattr(x, f))

    walk(func.body)
    missing = [v for v in undefined_vars(func) if type(v) is Var]
    if missing:
        names = ", ".join(v.name for v in missing)
        raise LoweringError(f"lowered function uses undefined variables: {names}", node=func)

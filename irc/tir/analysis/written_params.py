"""Which buffer parameters a loop function may write.

A parameter buffer is written when the function stores into it (a ``BufferStore`` into
any buffer with the parameter's data pointer, ``DeclBuffer`` aliases included) or names
it in a block's ``writes`` or as the source of a ``match_buffer``. Any other use of the
data pointer (passed to ``call_extern``, bound by a ``Let``, an attribute's value) lets
the pointer escape where this analysis cannot follow it, so that parameter counts as
written too. Loads do not write. The runtime relies on the answer: a read-only array is
accepted for a parameter that is not written and refused for one that is.
"""

from __future__ import annotations

from ...core.node import Node, node_fields
from ..buffer import Buffer, BufferRegion, MatchBufferRegion
from ..expr import BufferLoad, Var
from ..stmt import Block, BufferStore, PrimFunc


def written_params(func: PrimFunc) -> set[int]:
    """Positions (in ``func.params``) of the buffer parameters ``func`` may write."""
    owner: dict[int, int] = {}
    for pos, p in enumerate(func.params):
        buf = func.buffer_map.get(p)
        if buf is not None:
            owner[id(p)] = pos
            owner[id(buf.data)] = pos
    written: set[int] = set()

    def write(buf: Buffer) -> None:
        pos = owner.get(id(buf.data))
        if pos is not None:
            written.add(pos)

    def walk(x) -> None:
        if isinstance(x, (tuple, list)):
            for y in x:
                walk(y)
            return
        if isinstance(x, dict):
            for y in x.values():
                walk(y)
            return
        if not isinstance(x, Node) or isinstance(x, Buffer):
            return  # a buffer named where it is declared or accessed (handled below)
        cls = type(x)
        if cls is Var:
            pos = owner.get(id(x))
            if pos is not None:
                written.add(pos)  # the pointer escapes
            return
        if cls is BufferLoad:
            walk(x.indices)
            return
        if cls is BufferStore:
            write(x.buffer)
            walk(x.value)
            walk(x.indices)
            return
        if cls is BufferRegion:
            walk(x.region)
            return
        if cls is MatchBufferRegion:
            write(x.source.buffer)
            walk(x.source.region)
            return
        if cls is Block:
            for region in x.writes:
                write(region.buffer)
        for f in node_fields(cls):
            if f != "span":
                walk(getattr(x, f))

    walk(func.body)
    return written

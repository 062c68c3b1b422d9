"""Collect every buffer access of a piece of loop IR, in program order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...core.node import Node, node_fields
from ..buffer import Buffer
from ..expr import BufferLoad, PrimExpr
from ..stmt import Block, BufferStore


@dataclass(frozen=True)
class BufferAccess:
    """One load (``kind == "read"``) or store (``"write"``) of ``buffer`` at ``indices``;
    ``node`` is the BufferLoad or BufferStore itself."""

    buffer: Buffer
    indices: tuple[PrimExpr, ...]
    kind: Literal["read", "write"]
    node: Node


def collect_buffer_accesses(node, *, into_blocks: bool = True) -> list[BufferAccess]:
    """All loads and stores under ``node`` in evaluation order (a store's value and
    indices are read before it writes). With ``into_blocks=False`` nested blocks are not
    entered (their init and body are skipped)."""
    out: list[BufferAccess] = []

    def walk(x, top: bool) -> None:
        if isinstance(x, (tuple, list)):
            for y in x:
                walk(y, False)
            return
        if not isinstance(x, Node) or isinstance(x, Buffer):
            return
        cls = type(x)
        if cls is BufferLoad:
            walk(x.indices, False)
            out.append(BufferAccess(x.buffer, x.indices, "read", x))
            return
        if cls is BufferStore:
            walk(x.value, False)
            walk(x.indices, False)
            out.append(BufferAccess(x.buffer, x.indices, "write", x))
            return
        if cls is Block and not into_blocks and not top:
            return
        if cls is Block:
            if x.init is not None:
                walk(x.init, False)
            walk(x.body, False)
            return
        for f in node_fields(cls):
            if f != "span":
                walk(getattr(x, f), False)

    walk(node, True)
    return out


def buffers_accessed(node) -> list[Buffer]:
    """Distinct buffers loaded or stored under ``node``, in order of first access."""
    seen: set[int] = set()
    out: list[Buffer] = []
    for a in collect_buffer_accesses(node):
        if id(a.buffer) not in seen:
            seen.add(id(a.buffer))
            out.append(a.buffer)
    return out

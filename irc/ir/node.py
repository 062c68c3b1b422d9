"""The base of every IR node.

Nodes are frozen dataclasses with slots and keyword-only fields. Python equality of nodes
is identity (``eq=False``); semantic equality is :func:`irc.ir.structural_equal`.
Edits make new nodes with :meth:`Node.replace` (copy on write).

Class-level hooks read by structural equality/hashing (see ``structural.py``):

- ``_sequal_ignore``: field names not compared (spans, names of bound variables).
- ``_sequal_binding``: True for nodes compared by binding position (variables, buffers):
  the first occurrence of a pair maps one to the other, later occurrences must agree.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from .diagnostics import Span

N = TypeVar("N", bound="Node")


def node(cls: type[N]) -> type[N]:
    """Class decorator making ``cls`` an immutable IR node dataclass."""
    return dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)(cls)


@node
class Node:
    """Base class of all IR nodes (graph level and loop level)."""

    span: Span | None = field(default=None)

    _sequal_ignore: ClassVar[frozenset[str]] = frozenset({"span"})
    _sequal_binding: ClassVar[bool] = False

    def replace(self: N, **changes: Any) -> N:
        """A copy of this node with some fields changed (the node itself if nothing did)."""
        if all(getattr(self, k) is v for k, v in changes.items()):
            return self
        return dataclasses.replace(self, **changes)

    def same_as(self, other: object) -> bool:
        """Identity comparison (what ``is`` does), named as in the IR literature."""
        return self is other

    def __repr__(self) -> str:
        try:
            from .printer import repr_node

            return repr_node(self)
        except Exception:  # noqa: BLE001 - repr must never raise
            return f"<{type(self).__name__} at {id(self):#x}>"

    def script(self, **kwargs: Any) -> str:
        """This node printed in irc's text format."""
        from .printer import script

        return script(self, **kwargs)

    def show(self, **kwargs: Any) -> None:
        """Print :meth:`script`."""
        print(self.script(**kwargs))


def node_fields(cls: type) -> tuple[str, ...]:
    """Names of the dataclass fields of a node class, cached."""
    cached = _FIELDS.get(cls)
    if cached is None:
        cached = tuple(f.name for f in dataclasses.fields(cls))
        _FIELDS[cls] = cached
    return cached


_FIELDS: dict[type, tuple[str, ...]] = {}

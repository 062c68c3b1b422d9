"""The base of every IR node.

Nodes are frozen dataclasses with slots and keyword-only fields. Python equality of nodes
is identity (``eq=False``); semantic equality is :func:`irc.ir.structural_equal`.
Edits make new nodes with :meth:`Node.replace` (copy on write).

Class-level hooks read by structural equality/hashing (see ``structural.py``):

- ``_sequal_ignore``: field names not compared (spans, names of bound variables).
- ``_sequal_binding``: True for nodes compared by binding position (variables, buffers):
  the first occurrence of a pair maps one to the other, later occurrences must agree.
- ``_sequal_scope``: True for functions: the pairs mapped inside one are forgotten when
  it ends, so a variable object shared by two functions of a module (a graph function's
  ``n`` reused in the loop functions legalized from it) compares like two variables,
  as the text format, which declares ``n`` in each function, reads it back.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, NamedTuple, TypeVar

from .diagnostics import IRCError, Span

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
    _sequal_scope: ClassVar[bool] = False

    def replace(self: N, **changes: Any) -> N:
        """A copy of this node with some fields changed (the node itself if nothing did)."""
        if all(getattr(self, k) is v for k, v in changes.items()):
            return self
        return dataclasses.replace(self, **changes)

    def same_as(self, other: object) -> bool:
        """Identity comparison (what ``is`` does), named as in the IR literature."""
        return self is other

    def __repr__(self) -> str:
        return repr_node(self)

    def script(self, **options: Any) -> str:
        """This node printed in irc's text format (``show_meta=True`` includes the
        values of constants)."""
        return script(self, **options)

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


class Printer(NamedTuple):
    """How one family of nodes prints: ``script(node, **options)`` gives irc script text,
    ``repr(node)`` a short one-line description."""

    script: Callable[..., str]
    repr: Callable[[Any], str]


_PRINTERS: dict[type, Printer] = {}


def register_printer(cls: type, printer: Printer) -> None:
    """Make ``printer`` print ``cls`` and its subclasses (unless a subclass has its own).
    The printers live with the IR they print (``irc.tir.printer``, ``irc.ir.printer``);
    the core only dispatches, so it never imports the levels above it."""
    _PRINTERS[cls] = printer
    _PRINTER_CACHE.clear()


_PRINTER_CACHE: dict[type, Printer | None] = {}


def printer_for(cls: type) -> Printer | None:
    """The printer registered for ``cls`` or its nearest base class (None when none is)."""
    try:
        return _PRINTER_CACHE[cls]
    except KeyError:
        found = next((_PRINTERS[k] for k in cls.__mro__ if k in _PRINTERS), None)
        _PRINTER_CACHE[cls] = found
        return found


def script(node: Any, **options: Any) -> str:
    """``node`` printed as irc script text by the printer registered for its class
    (modules and functions print as text ``irc.parse`` reads back)."""
    printer = printer_for(type(node))
    if printer is None:
        raise IRCError(f"{type(node).__name__} has no text form: no printer is registered "
                       "for it (irc.core.node.register_printer)")
    return printer.script(node, **options)


def repr_node(node: Any) -> str:
    """A short one-line description of ``node``; never raises."""
    printer = printer_for(type(node))
    try:
        if printer is not None:
            return printer.repr(node)
    except Exception:  # noqa: BLE001 - repr must never raise
        pass
    return f"<{type(node).__name__}>"

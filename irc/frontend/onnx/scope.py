"""What a graph being imported reads by ONNX value name: its :class:`Scope`.

A name is bound to an irc expression, or to a :class:`SymShape` (a symbolic shape value),
or to both: a shape value read as data keeps its symbolic form for the operators that
read a shape, next to the run-time tensor made of it
(:meth:`~irc.frontend.onnx.importer.GraphImporter.shape_tensor`). The importer converts
in one current scope; a subgraph converted into a function of its own, or each step of
``SequenceMap``, enters a new one for its duration
(:meth:`~irc.frontend.onnx.importer.GraphImporter.in_scope`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ...ir.expr import Expr
from ...tir import expr as E


class SymShape:
    """A 0-d or 1-d int64 value known as expressions at import time (a tensor's shape, or
    arithmetic on shapes), some of them symbolic."""

    def __init__(self, dims: Sequence[Any], scalar: bool = False):
        self.dims = tuple(E.IntImm(dtype="int64", value=int(d))
                          if isinstance(d, (int, np.integer)) else d for d in dims)
        self.scalar = scalar
        if scalar and len(self.dims) != 1:
            raise ValueError("a scalar SymShape has one element")

    def static(self) -> list[int] | None:
        """The values when every one is known, else None."""
        out = []
        for d in self.dims:
            if not isinstance(d, E.IntImm):
                return None
            out.append(int(d.value))
        return out

    def array(self) -> np.ndarray | None:
        """The value as an int64 array (0-d for a scalar) when every element is known,
        else None."""
        static = self.static()
        if static is None:
            return None
        return np.asarray(static[0] if self.scalar else static, dtype="int64")


@dataclass(kw_only=True, slots=True, eq=False)
class Scope:
    """The values one graph being converted reads, by ONNX name: irc expressions
    (``values``) and symbolic shape values (``syms``); and the names of the outputs of
    the function being built (``outputs``), those of them bound so far by
    ``emit_output`` (``emitted``), which are visible after its dataflow block.

    >>> scope = Scope()
    >>> scope.bind("s", SymShape([2, 3]))
    >>> scope.defines("s"), scope.shape_value("s").static()
    (True, [2, 3])
    """

    values: dict[str, Expr] = field(default_factory=dict)
    syms: dict[str, SymShape] = field(default_factory=dict)
    outputs: frozenset[str] = frozenset()
    emitted: set[str] = field(default_factory=set)

    def defines(self, name: str) -> bool:
        """Whether ``name`` is bound, as an expression or as a symbolic shape value."""
        return name in self.values or name in self.syms

    def lookup(self, name: str) -> Expr | SymShape | None:
        """What ``name`` is bound to: its expression when it has one, else its symbolic
        shape value, else None."""
        value = self.values.get(name)
        return value if value is not None else self.syms.get(name)

    def shape_value(self, name: str) -> SymShape | None:
        """``name``'s symbolic shape value when it has no expression (no tensor form)."""
        return None if name in self.values else self.syms.get(name)

    def bind(self, name: str, value: Expr | SymShape) -> None:
        """Bind ``name`` to ``value``, replacing what it was bound to (the steps of a body
        inlined once per step bind the same names again)."""
        if isinstance(value, SymShape):
            self.syms[name] = value
            self.values.pop(name, None)
        else:
            self.values[name] = value
            self.syms.pop(name, None)

    def nested(self) -> Scope:
        """A scope that reads what this one binds, in which bindings stay: a body
        inlined in the current function, whose outputs are values, not the function's."""
        return Scope(values=dict(self.values), syms=dict(self.syms))


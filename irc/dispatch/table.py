"""Pattern tables: named dispatch patterns, each with the parts a backend cares about and
a check function for the library's constraints.

A backend registers its entries once, at import::

    register_patterns([
        ("blas.matmul_bias", linear, {"lhs": x, "rhs": w, "bias": b}, _check_float32),
        ("blas.matmul", matmul, {"lhs": x, "rhs": w}),
    ])

Names are ``"backend.pattern"``. The table keeps registration order and that order is
the priority: :func:`get_patterns_with_prefix` lists the entries as they were registered,
and ``FuseOpsByPattern`` lets an earlier pattern win, so a backend registers its more
specific patterns first. A check function receives a :class:`PatternCheckContext` (the
match and its annotated expressions) and returns whether the library can run it.
"""

from __future__ import annotations

import difflib
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from ..core.diagnostics import IRCError, MissingDependencyError
from ..ir.expr import Expr
from ..ir.struct_info import PrimStructInfo, StructInfo, TensorStructInfo
from ..tir.expr import IntImm
from .pattern import Pattern, PatternMatch


@dataclass(frozen=True, eq=False)
class PatternEntry:
    """A named pattern. ``annotations`` name sub-patterns whose matched expressions the
    check function and the backend look at (``"lhs"``, ``"bias"``; ``"root"`` is added
    as the whole pattern when not given); ``check`` (None: always accepted) tells
    whether the library can run a match."""

    name: str
    pattern: Pattern
    annotations: Mapping[str, Pattern] = field(default_factory=dict)
    check: Callable[[PatternCheckContext], bool] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise IRCError(f"a dispatch pattern needs a name ('backend.pattern'), got "
                           f"{self.name!r}")
        where = f"dispatch pattern {self.name!r}"
        if not isinstance(self.pattern, Pattern):
            raise IRCError(f"{where}: the pattern must be a Pattern, got "
                           f"{type(self.pattern).__name__}")
        if not isinstance(self.annotations, Mapping):
            raise IRCError(f"{where}: annotations must be a dict of names to patterns")
        for key, p in self.annotations.items():
            if not isinstance(key, str) or not isinstance(p, Pattern):
                raise IRCError(f"{where}: annotation {key!r} must name a Pattern, got "
                               f"{type(p).__name__}")
        if self.check is not None and not callable(self.check):
            raise IRCError(f"{where}: check must be a function of a PatternCheckContext")
        object.__setattr__(self, "annotations", {"root": self.pattern, **self.annotations})

    @property
    def backend(self) -> str:
        """The library the pattern dispatches to: the name's part before its first dot
        (``blas`` for ``blas.matmul_bias``)."""
        backend, dot, rest = self.name.partition(".")
        if not dot or not backend or not rest:
            raise IRCError(f"dispatch pattern {self.name!r} names no backend: name it "
                           "'backend.pattern', e.g. 'blas.matmul'")
        return backend

    def __repr__(self) -> str:
        return f"PatternEntry({self.name!r})"


@dataclass(frozen=True, eq=False)
class PatternCheckContext:
    """What a check function sees: the ``match``, its table ``entry`` and ``annotated``,
    each annotation name mapped to the expression its sub-pattern met (a variable where
    the matcher looked through a binding; names of sub-patterns that took no part, such
    as an absent optional consumer, are missing)."""

    match: PatternMatch
    entry: PatternEntry
    annotated: dict[str, Expr] = field(init=False)

    def __post_init__(self) -> None:
        annotated = {name: self.match.matched[p] for name, p in self.entry.annotations.items()
                     if p in self.match.matched}
        object.__setattr__(self, "annotated", annotated)

    def _known(self, name: str) -> Expr | None:
        if name not in self.entry.annotations:
            raise IRCError(f"dispatch pattern {self.entry.name!r} has no annotation "
                           f"{name!r}{_did_you_mean(name, self.entry.annotations)}")
        return self.annotated.get(name)

    def value(self, name: str) -> Expr | None:
        """The value of the annotated expression ``name`` (the call its variable is bound
        to inside the match); None when its sub-pattern took no part in the match."""
        if self._known(name) is None:
            return None
        return self.match.value_of(self.entry.annotations[name])

    def struct_info(self, name: str) -> StructInfo | None:
        """The struct info of the annotated expression ``name`` (None when absent)."""
        e = self._known(name)
        return None if e is None else e.struct_info

    def dtype(self, name: str) -> str | None:
        """The dtype of the annotated tensor or scalar ``name`` (None when absent or
        unknown)."""
        sinfo = self.struct_info(name)
        if isinstance(sinfo, (TensorStructInfo, PrimStructInfo)) and sinfo.dtype:
            return sinfo.dtype
        return None

    def shape(self, name: str) -> tuple[int | None, ...] | None:
        """The shape of the annotated tensor ``name``: an int per constant dimension,
        None per symbolic one; None when absent or of unknown rank."""
        sinfo = self.struct_info(name)
        if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None:
            return None
        return tuple(d.value if isinstance(d, IntImm) else None for d in sinfo.shape)


_TABLE: dict[str, PatternEntry] = {}
# backend -> why its patterns are not registered (a library that is not installed)
_UNAVAILABLE: dict[str, str] = {}


def mark_unavailable(backend: str, reason: str) -> None:
    """Record that ``backend``'s patterns are not registered and why (``reason`` says how
    to get them); asking for its patterns then raises or warns with it."""
    _UNAVAILABLE[backend] = reason


def unavailable_reason(backend: str) -> str | None:
    """Why ``backend``'s patterns are not registered (how to install its library), or
    None when nothing was recorded."""
    return _UNAVAILABLE.get(backend)


def _did_you_mean(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=3)
    return f"; did you mean {', '.join(close)}?" if close else ""


def as_entry(item: Any) -> PatternEntry:
    """``item`` as a table entry: an entry as is, a name looked up in the table, a tuple
    ``(name, pattern[, annotations[, check]])`` made into an entry."""
    if isinstance(item, PatternEntry):
        return item
    if isinstance(item, str):
        return get_pattern(item)
    if isinstance(item, tuple) and 2 <= len(item) <= 4:
        return PatternEntry(*item)
    raise IRCError(f"a dispatch pattern is a PatternEntry, a registered name or a tuple "
                   f"(name, pattern[, annotations[, check]]), got {item!r}")


def register_patterns(entries: Iterable[PatternEntry | tuple]) -> list[PatternEntry]:
    """Add ``entries`` (``PatternEntry``s or ``(name, pattern[, annotations[, check]])``
    tuples) to the table, after those already there; returns them as entries.
    Registering a name again replaces its entry, which keeps its place."""
    out = []
    for item in entries:
        if isinstance(item, str):
            raise IRCError(f"register_patterns takes entries or tuples, not the name "
                           f"{item!r}")
        entry = as_entry(item)
        _TABLE[entry.name] = entry
        out.append(entry)
    return out


def get_pattern(name: str) -> PatternEntry:
    """The registered entry ``name``; an unknown name is an ``IRCError`` naming the
    closest registered ones."""
    entry = _TABLE.get(name)
    if entry is None:
        reason = _UNAVAILABLE.get(name.partition(".")[0])
        if reason is not None:
            raise MissingDependencyError(f"no dispatch pattern named {name!r}: {reason}")
        backends = {n.partition(".")[0] for n in _TABLE}
        hint = _did_you_mean(name, [*_TABLE, *sorted(backends)]) or (
            " (is the backend imported? its module registers its patterns)")
        raise IRCError(f"no dispatch pattern named {name!r}{hint}")
    return entry


def get_patterns_with_prefix(prefix: str) -> list[PatternEntry]:
    """The registered entries whose names start with ``prefix`` (``"blas"``), in
    registration order, which is their priority (earlier first). When ``prefix`` names a
    backend whose library is not installed, the list is empty and a warning says how to
    install it."""
    reason = _UNAVAILABLE.get(prefix.partition(".")[0])
    if reason is not None:
        warnings.warn(reason, stacklevel=2)
    return [e for name, e in _TABLE.items() if name.startswith(prefix)]

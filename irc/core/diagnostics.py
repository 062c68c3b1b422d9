"""Source spans and irc's exception hierarchy.

Every error a user can cause derives from :class:`IRCError`. Errors that point at text
carry a :class:`Span` and render ``file:line:col``, the offending line and a caret.
"""

from __future__ import annotations

import difflib
import importlib
import struct
import warnings
import zipfile
import zlib
from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True, slots=True)
class SourceFile:
    """The text a span points into, shared by every span of one parse."""

    name: str
    text: str

    def line(self, lineno: int) -> str:
        lines = self.text.splitlines()
        if 1 <= lineno <= len(lines):
            return lines[lineno - 1]
        return ""


@dataclass(frozen=True, slots=True)
class Span:
    """A region of source text: 1-based line and column, end exclusive."""

    source: SourceFile | None
    line: int
    column: int
    end_line: int | None = None
    end_column: int | None = None

    @property
    def source_name(self) -> str:
        return self.source.name if self.source is not None else "<unknown>"

    def location(self) -> str:
        return f"{self.source_name}:{self.line}:{self.column}"

    def render(self) -> str:
        """``file:line:col`` followed by the source line and a caret under the column."""
        head = self.location()
        if self.source is None:
            return head
        text = self.source.line(self.line)
        if not text:
            return head
        width = 1
        if self.end_line == self.line and self.end_column is not None:
            width = max(1, self.end_column - self.column)
        caret = " " * (self.column - 1) + "^" * min(width, max(1, len(text) - self.column + 1))
        return f"{head}\n    {text}\n    {caret}"


# What reading a damaged file raises deep inside zipfile, zlib, numpy's npz reader or
# json: a reader that catches these names the file and the cause in an irc error instead.
# RuntimeError covers zipfile's NotImplementedError (a header's "version needed" or
# compression method) and its RuntimeError for an "encrypted" flag bit; LookupError covers
# missing members and indices.
DAMAGED_FILE_ERRORS: tuple[type[BaseException], ...] = (
    zipfile.BadZipFile, zlib.error, EOFError, OSError, LookupError, ValueError, TypeError,
    AttributeError, struct.error, RuntimeError)


class IRCError(Exception):
    """Base class of every error irc raises on purpose.

    ``span`` (optional) locates the error in source text; ``node`` (optional) is the IR
    node the error is about. ``str(err)`` gives the full, rendered message.
    """

    def __init__(self, message: str, *, span: Span | None = None, node: object = None,
                 hint: str | None = None):
        self.message = message
        self.span = span
        self.node = node
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        parts = []
        if self.span is not None:
            where = self.span.render()
            head, _, rest = where.partition("\n")
            parts.append(f"{head}: {self.message}")
            if rest:
                parts.append(rest)
        else:
            parts.append(self.message)
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "\n".join(parts)


class IRParseError(IRCError):
    """Text that is not valid irc script."""


class IRTypeError(IRCError):
    """A program that parses but is ill-typed (shapes, dtypes, arity, attributes)."""


class IRWellFormedError(IRCError):
    """IR that violates a structural invariant (undefined variable, scope, dtype mismatch)."""


class ScheduleError(IRCError):
    """A schedule primitive applied where its preconditions do not hold."""


class LoweringError(IRCError):
    """Loop IR that the lowering passes cannot handle."""


class CodegenError(IRCError):
    """Loop IR that a code generator cannot translate, or a native compiler failure."""


class BuildError(IRCError):
    """Compiling a function or module failed."""


class VMError(IRCError):
    """An error raised by the virtual machine or the bytecode compiler."""


class RuntimeArgumentError(VMError):
    """An argument passed at run time to a compiled kernel or a VM function does not fit
    its parameter. The subclasses say how: :class:`RuntimeShapeError`,
    :class:`RuntimeDTypeError`, :class:`RuntimeArgumentCountError`,
    :class:`RuntimeArgumentTypeError`, :class:`RuntimeDeviceError`,
    :class:`RuntimeReadOnlyError`."""


class RuntimeShapeError(RuntimeArgumentError):
    """A tensor passed at run time contradicts the function's declared shape (rank, a
    dimension, a stride), or a shape computed at run time is invalid."""


class RuntimeDTypeError(RuntimeArgumentError):
    """A tensor passed at run time has another dtype than the parameter declares, or a
    dtype irc cannot hold."""


class RuntimeArgumentCountError(RuntimeArgumentError):
    """A function called at run time with the wrong number of arguments."""


class RuntimeArgumentTypeError(RuntimeArgumentError):
    """A value of the wrong kind passed at run time: a scalar where a tensor is expected,
    an array where a scalar is, a tuple of the wrong length, an object irc cannot take."""


class RuntimeDeviceError(RuntimeArgumentError):
    """A tensor passed at run time lives on another device than the function runs on."""


class RuntimeReadOnlyError(RuntimeArgumentError):
    """A read-only array passed at run time for a parameter the function writes."""


def deprecated_aliases(module: str, aliases: dict[str, tuple[str, object]]):
    """A module ``__getattr__`` giving each deprecated name of ``aliases`` (name ->
    (the name to use, the object)) with a ``DeprecationWarning`` saying what to use."""

    def module_getattr(name: str) -> object:
        if name in aliases:
            use, value = aliases[name]
            warnings.warn(f"{module}.{name} is a deprecated name of {use}; use that",
                          DeprecationWarning, stacklevel=2)
            return value
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return module_getattr


class LegalizeError(IRCError):
    """A graph operator has no legalization to loop IR."""


class UnsupportedOperatorError(IRCError):
    """An imported model uses an operator irc does not support."""



class TuningError(IRCError):
    """Auto-tuning failed (bad options, no valid candidate, unreadable records)."""


class MissingDependencyError(IRCError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


def did_you_mean(name: str, known: Iterable[str], n: int = 3) -> str:
    """``" (did you mean 'a' or 'b'?)"`` for the names in ``known`` close to ``name``
    (compared ignoring case), or ``""`` when none is; for "unknown name" messages."""
    by_lower: dict[str, str] = {}
    for k in known:
        by_lower.setdefault(k.lower(), k)
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=n)
    if not close:
        return ""
    return f" (did you mean {' or '.join(repr(by_lower[c]) for c in close)}?)"


def require(module: str | tuple[str, ...], extra: str | None = None, *,
            purpose: str = "this feature", package: str | None = None,
            install: str | None = None):
    """Import an optional dependency (the first of several alternative module names that
    imports) or raise a :class:`MissingDependencyError`: ``"<purpose> needs <package>:
    <install>"``, the install instruction being ``pip install 'irc[<extra>]'`` unless
    ``install`` says otherwise. The one place optional imports fail."""
    names = (module,) if isinstance(module, str) else tuple(module)
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError as err:
            # A module that is there but fails inside on a missing import of its own
            # (a dependency of the dependency) is reported the same way.
            missing = err
            continue
    what = package or f"the Python package '{names[0].partition('.')[0]}'"
    how = install or (f"pip install 'irc[{extra}]'" if extra else
                      f"pip install {names[0].partition('.')[0]}")
    raise MissingDependencyError(f"{purpose} needs {what}: {how}") from missing

"""Source spans and irc's exception hierarchy.

Every error a user can cause derives from :class:`IRCError`. Errors that point at text
carry a :class:`Span` and render ``file:line:col``, the offending line and a caret.
"""

from __future__ import annotations

import importlib
import struct
import zipfile
import zlib
from dataclasses import dataclass


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


class RuntimeShapeError(VMError):
    """A tensor passed at run time contradicts the function's declared shape or dtype."""


class LegalizeError(IRCError):
    """A graph operator has no legalization to loop IR."""


class UnsupportedOperatorError(IRCError):
    """An imported model uses an operator irc does not support."""


class TuningError(IRCError):
    """Auto-tuning failed (bad options, no valid candidate, unreadable records)."""


class MissingDependencyError(IRCError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


def require(module: str, extra: str):
    """Import an optional dependency or raise a one-line install instruction."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(
            f"this feature needs the Python package '{module}': pip install 'irc[{extra}]'"
        ) from None

"""Checks of the ``irc`` command's option values, made before any work starts.

The ``type=`` functions of argparse (``positive``, ``seed``, ``threads``, ``binding``,
...) refuse a malformed value with a usage error (status 2); the ``check_*`` functions,
called first thing by each command, refuse values that need the file system or irc to
judge (targets, output paths, record paths) with ``irc: error:`` (status 1).
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Sequence

from ..core.diagnostics import IRCError
from ..core.target import Target

SEED_LIMIT = 2 ** 63
RECORD_FILE_SUFFIXES = (".json", ".jsonl", ".db", ".sqlite", ".sqlite3")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


def positive(text: str) -> int:
    """A whole number, 1 or more."""
    return _int_in(text, 1, None)


def non_negative(text: str) -> int:
    """A whole number, 0 or more."""
    return _int_in(text, 0, None)


def seed(text: str) -> int:
    """A seed: a whole number from 0 to 2**63 - 1."""
    return _int_in(text, 0, SEED_LIMIT - 1)


def cores() -> int:
    """The cores of this machine that this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _per_core(text: str, what: str) -> int:
    """A count of ``what`` (threads, jobs): 1 to the number of cores of this machine."""
    value = _int_in(text, 1, None)
    if value > cores():
        raise argparse.ArgumentTypeError(f"{value} {what}: this machine has {cores()} "
                                         f"cores; give 1 to {cores()}")
    return value


def threads(text: str) -> int:
    """A thread count: 1 to the number of cores of this machine."""
    return _per_core(text, "threads")


def jobs(text: str) -> int:
    """A number of worker processes: 1 to the number of cores of this machine."""
    return _per_core(text, "jobs")


def _int_in(text: str, low: int, high: int | None) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"expected {low} or more, got {value}")
    if high is not None and value > high:
        raise argparse.ArgumentTypeError(f"expected at most {high}, got {value}")
    return value


def binding(text: str) -> tuple[str, int]:
    """``NAME=INT``: a symbolic dimension and its (positive) value."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not _NAME.match(name):
        raise argparse.ArgumentTypeError(f"expected NAME=INT (a symbolic dimension and its "
                                         f"size, e.g. n=8), got {text!r}")
    try:
        size = int(value.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name}: expected a whole number, got "
                                         f"{value!r}") from None
    if size < 1:
        raise argparse.ArgumentTypeError(f"{name}: a dimension is 1 or more, got {size}")
    return name, size


def bindings(items: Sequence[tuple[str, int]]) -> dict[str, int]:
    """``--shape`` values as a dict; a name given twice is an error."""
    out: dict[str, int] = {}
    for name, value in items:
        if name in out and out[name] != value:
            raise IRCError(f"--shape gives {name} twice ({out[name]} and {value}); give it "
                           "once")
        out[name] = value
    return out


def check_target(text: str | None, what: str = "--target") -> Target:
    """The target named by ``text`` (default llvm); a bad one is an irc error, as is a
    CPU target asking for more threads than this machine has cores."""
    try:
        target = Target.canon(text if text is not None else "llvm")
    except IRCError as err:
        raise IRCError(f"{what} {text!r}: {err}") from None
    cores_asked = target.attrs.get("num-cores")
    if target.kind.name == "llvm" and isinstance(cores_asked, int) \
            and cores_asked > cores():
        raise IRCError(f"{what} {text!r}: -num-cores {cores_asked}, but this machine has "
                       f"{cores()} cores", hint=f"give -num-cores 1 to {cores()}")
    return target


def check_output(path: str, what: str, suffixes: Sequence[str] = ()) -> None:
    """Refuse an output file irc could not write: a wrong suffix (when ``suffixes`` are
    given), a directory, a missing or read-only parent directory."""
    if not path:
        raise IRCError(f"{what}: give a file name")
    if suffixes and not path.lower().endswith(tuple(suffixes)):
        raise IRCError(f"{what} {path}: the file name must end in "
                       f"{', '.join(suffixes)}")
    if os.path.isdir(path):
        raise IRCError(f"{what} {path} is a directory; give a file name")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise IRCError(f"{what} {path}: there is no directory {parent}")
    if not os.access(parent, os.W_OK | os.X_OK) or \
            (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise IRCError(f"{what} {path}: not writable (permission denied)")


def check_output_dir(path: str, what: str) -> None:
    """Refuse a directory irc could not write into: a file of that name, a missing
    parent directory (the directory itself is created when missing), no permission."""
    if not path:
        raise IRCError(f"{what}: give a directory")
    if os.path.exists(path) and not os.path.isdir(path):
        raise IRCError(f"{what} {path} is a file, not a directory")
    if os.path.isdir(path):
        if not os.access(path, os.W_OK | os.X_OK):
            raise IRCError(f"{what} {path}: not writable (permission denied)")
        return
    parent = os.path.dirname(os.path.abspath(path.rstrip("/" + os.sep)))
    if not os.path.isdir(parent):
        raise IRCError(f"{what} {path}: there is no directory {parent} to create it in")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise IRCError(f"{what} {path}: cannot create it in {parent} (permission denied)")


def record_path_kind(path: str, what: str = "--records") -> str:
    """How a tuning database path to write is taken: ``"file"`` (a record file: .json or
    .jsonl lines, .db/.sqlite/.sqlite3 SQLite) or ``"dir"`` (a work directory: an
    existing directory, or a name without a suffix). Any other suffix is refused, as is a
    record file or work directory irc could not write."""
    if not path:
        raise IRCError(f"{what}: give a record file (.json, .db) or a work directory")
    if os.path.isdir(path):
        if not os.access(path, os.W_OK | os.X_OK):
            raise IRCError(f"{what} {path}: the work directory is not writable")
        return "dir"
    if path.endswith(RECORD_FILE_SUFFIXES):
        check_output(path, what)
        return "file"
    base = os.path.basename(path.rstrip("/" + os.sep))
    suffix = os.path.splitext(base)[1]
    if suffix or os.path.exists(path):
        raise IRCError(f"{what} {path}: not a record file or a work directory",
                       hint="a record file ends in .json or .jsonl (JSON lines) or .db "
                            "(SQLite); a work directory is named without a suffix")
    parent = os.path.dirname(os.path.abspath(path.rstrip("/" + os.sep)))
    if not os.path.isdir(parent):
        raise IRCError(f"{what} {path}: there is no directory {parent} to create the work "
                       "directory in")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise IRCError(f"{what} {path}: cannot create the work directory in {parent} "
                       "(permission denied)")
    return "dir"


def explicit(args: argparse.Namespace, *names: str) -> list[str]:
    """The options among ``names`` (dest names) given on the command line (not None and
    not False), as ``--option`` spellings."""
    return ["--" + n.replace("_", "-") for n in names
            if getattr(args, n, None) not in (None, False, [], ())]

"""irc's on-disk caches: where they live, how entries are written and read.

**Where.** The ``cache_dir`` setting (:mod:`irc.core.settings`: ``$IRC_CACHE_DIR``),
else ``$XDG_CACHE_HOME/irc``, else ``~/.cache/irc`` (:func:`cache_root`). Each cache
has a directory below it: ``cuda`` (cubins, ``irc.codegen.nvrtc``), ``llvm`` (compiled
CPU modules, ``irc.codegen.build``), and the file ``dispatch.json`` (library dispatch
decisions, ``irc.vm.auto_dispatch``). The ``cache`` setting (``IRC_CACHE=off``) turns the
compiled-module caches off (``llvm`` and ``cuda``: every process compiles again); the
dispatch decisions are kept regardless.

**Entries.** An entry is written to a temporary file in its directory and renamed into
place (a reader never sees half a file), and starts with the sha256 of its payload, so a
truncated or corrupt entry is detected, ignored and rebuilt. A directory that cannot be
written is one warning (logger ``irc.cache``), after which that cache works in memory
only. :func:`trim` keeps a directory under a size by deleting the entries read least
recently (a hit refreshes an entry's time).

**Keys** are sha256 digests of everything the cached bytes depend on. For code irc
generates that includes :func:`source_fingerprint`, a digest of irc's own source files,
so an edited or upgraded irc never reads an entry an older code generator wrote.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
from pathlib import Path

from . import settings

logger = logging.getLogger("irc.cache")

_unwritable: set[str] = set()
_fingerprint: str | None = None
_fingerprint_lock = threading.Lock()


def cache_root() -> Path:
    """The directory irc's caches live in (see the module docstring)."""
    return settings.current().cache_root()


def enabled() -> bool:
    """Whether compiled code is cached on disk (the ``cache`` setting: ``IRC_CACHE`` is
    not ``off``/``0``/``false``/``no``)."""
    return settings.current().cache


def source_fingerprint() -> str:
    """A sha256 digest of the text of every Python file of the installed irc package
    (computed once per process): part of the key of any cached code irc generated."""
    global _fingerprint
    with _fingerprint_lock:
        if _fingerprint is None:
            package = Path(__file__).resolve().parent.parent
            h = hashlib.sha256()
            for path in sorted(package.rglob("*.py")):
                h.update(str(path.relative_to(package)).encode() + b"\x00")
                h.update(path.read_bytes() + b"\x00")
            _fingerprint = h.hexdigest()
        return _fingerprint


def read_entry(path: Path, what: str) -> bytes | None:
    """The payload stored at ``path``; None when missing, unreadable or corrupt (``what``
    names the entry in log messages). A hit refreshes the file's times (see :func:`trim`)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        logger.info("cannot read cached %s %s (%s); compiling again", what, path, exc)
        return None
    digest, payload = data[:32], data[32:]
    if len(data) < 32 or hashlib.sha256(payload).digest() != digest:
        logger.info("cached %s %s is corrupt; compiling again", what, path)
        return None
    try:
        os.utime(path)
    except OSError:
        pass
    return payload


def write_entry(path: Path, payload: bytes, what: str) -> bool:
    """Store ``payload`` at ``path`` atomically; False (after one warning per directory)
    when the directory cannot be written."""
    directory = path.parent
    if str(directory) in _unwritable:
        return False
    tmp = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=path.suffix)
        with os.fdopen(fd, "wb") as f:
            f.write(hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, path)
        tmp = None
        return True
    except OSError as exc:
        _unwritable.add(str(directory))
        logger.warning("the %s cache %s cannot be written (%s); they are compiled again in "
                       "every process (set IRC_CACHE_DIR to a writable directory)", what,
                       directory, exc)
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def trim(directory: Path, max_bytes: int, suffix: str) -> None:
    """Delete the entries (files ending in ``suffix``) of ``directory`` read least
    recently until the rest take at most ``max_bytes``."""
    try:
        entries = []
        for e in os.scandir(directory):
            if e.name.endswith(suffix) and e.is_file():
                st = e.stat()
                entries.append((st.st_mtime, st.st_size, e.path))
    except OSError:
        return
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= max_bytes:
            break
        try:
            os.unlink(path)
            total -= size
        except OSError:
            pass

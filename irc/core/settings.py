"""irc's process settings: the environment read in one place, overridable in code.

A few choices are not options of any one pass or call but of the process: how many
processes compile-time work may use, where irc's caches live and whether compiled code is
cached, and whether the VM runs a function through its native run plan. They are fields
of one frozen :class:`Settings`. Its first value comes from the environment, read once,
the first time anything asks (:func:`current`):

========================  =====================================================  ============
variable                  meaning                                                 default
========================  =====================================================  ============
``IRC_COMPILE_JOBS``      processes for compile-time work (1 turns forking off)   one per core
``IRC_CACHE_DIR``         the directory of irc's caches                           see below
``IRC_CACHE``             ``off`` / ``0`` / ``false`` / ``no``: no compiled code   on
                          on disk
``IRC_VM_NATIVE_PLAN``    ``0``: the VM interprets every function's bytecode      on
========================  =====================================================  ============

Without ``IRC_CACHE_DIR`` the caches live in ``$XDG_CACHE_HOME/irc``, else
``~/.cache/irc``. A malformed value is an :class:`~irc.IRCError` naming the variable.

Code changes settings for a stretch of work with :func:`override` (a context manager,
per thread, nesting like :class:`~irc.core.transform.PassContext`)::

    with irc.settings(compile_jobs=1, cache=False):
        exe = irc.compile(mod, "llvm")

Processes forked by irc's compile-time work (:mod:`irc.core.parallel`) inherit the
settings in force; tuning workers, started afresh, are given them through their
environment (:meth:`Settings.environment`).
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Iterator, Mapping

from .diagnostics import IRCError

_OFF = ("off", "0", "false", "no")


@dataclass(frozen=True)
class Settings:
    """What the process is configured to do (see the module docstring)."""

    compile_jobs: int | None = None  # None: one process per core this process may use
    cache_dir: Path | None = None  # None: $XDG_CACHE_HOME/irc, else ~/.cache/irc
    cache: bool = True
    vm_native_plan: bool = True

    def __post_init__(self) -> None:
        jobs = self.compile_jobs
        if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int)
                                 or jobs < 1):
            raise IRCError(f"settings: compile_jobs must be a whole number of processes, 1 "
                           f"or more, or None (one per core); got {jobs!r}")
        if self.cache_dir is not None and not isinstance(self.cache_dir, Path):
            object.__setattr__(self, "cache_dir", Path(self.cache_dir))
        for name in ("cache", "vm_native_plan"):
            if not isinstance(getattr(self, name), bool):
                raise IRCError(f"settings: {name} must be True or False, got "
                               f"{getattr(self, name)!r}")

    @staticmethod
    def from_environment(env: Mapping[str, str] | None = None) -> Settings:
        """The settings ``env`` (default: ``os.environ``) asks for."""
        env = os.environ if env is None else env
        jobs_text = env.get("IRC_COMPILE_JOBS", "").strip()
        jobs: int | None = None
        if jobs_text:
            try:
                jobs = int(jobs_text)
            except ValueError:
                raise IRCError(f"IRC_COMPILE_JOBS must be a whole number of processes, "
                               f"got {jobs_text!r}") from None
            if jobs < 1:
                raise IRCError(f"IRC_COMPILE_JOBS must be 1 or more, got {jobs}")
        root = env.get("IRC_CACHE_DIR")
        return Settings(
            compile_jobs=jobs,
            cache_dir=Path(root) if root else None,
            cache=env.get("IRC_CACHE", "").strip().lower() not in _OFF,
            vm_native_plan=env.get("IRC_VM_NATIVE_PLAN", "1") != "0")

    def environment(self) -> dict[str, str]:
        """The environment variables that give a new process these settings (unset
        ones are left out: the process takes their defaults)."""
        env = {"IRC_CACHE": "on" if self.cache else "off",
               "IRC_VM_NATIVE_PLAN": "1" if self.vm_native_plan else "0"}
        if self.compile_jobs is not None:
            env["IRC_COMPILE_JOBS"] = str(self.compile_jobs)
        if self.cache_dir is not None:
            env["IRC_CACHE_DIR"] = str(self.cache_dir)
        return env

    def cache_root(self) -> Path:
        """The directory irc's caches live in."""
        if self.cache_dir is not None:
            return self.cache_dir
        xdg = os.environ.get("XDG_CACHE_HOME")
        return (Path(xdg) if xdg else Path.home() / ".cache") / "irc"

    def worker_count(self) -> int:
        """How many processes compile-time work may use: ``compile_jobs``, else the
        cores this process may run on."""
        if self.compile_jobs is not None:
            return self.compile_jobs
        if hasattr(os, "sched_getaffinity"):
            return max(1, len(os.sched_getaffinity(0)))
        return max(1, os.cpu_count() or 1)


_lock = threading.Lock()
_base: Settings | None = None
_local = threading.local()


def current() -> Settings:
    """The settings in force in this thread: the innermost :func:`override`, else the
    process's, read from the environment the first time they are asked for."""
    stack = getattr(_local, "stack", None)
    if stack:
        return stack[-1]
    return _process_settings()


def _process_settings() -> Settings:
    global _base
    with _lock:
        if _base is None:
            _base = Settings.from_environment()
        return _base


@contextlib.contextmanager
def override(**changes: object) -> Iterator[Settings]:
    """Run the ``with`` block under the current settings with ``changes`` applied
    (field names of :class:`Settings`; unknown names are an IRCError)."""
    known = {f.name for f in fields(Settings)}
    unknown = sorted(set(changes) - known)
    if unknown:
        raise IRCError(f"settings: unknown setting {unknown[0]!r}; the settings are "
                       f"{', '.join(sorted(known))}")
    new = replace(current(), **changes)  # type: ignore[arg-type]
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append(new)
    try:
        yield new
    finally:
        stack.pop()


__all__ = ["Settings", "current", "override"]

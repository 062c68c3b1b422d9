"""Independent pieces of work on several cores, in forked processes.

irc's compile-time work is Python (lowering) and LLVM calls; the interpreter lock and
llvmlite's own lock keep either to one core inside a process. :func:`fork_map` runs
pieces of work in child processes forked from this one (so they start at once, with
everything this process has loaded), each sending back its pickled result through a
pipe, while this process does the first piece itself.

It is used only where it is safe and pays: on Linux, with no other Python thread alive
in this process (a fork copies only the calling thread; a lock held by another thread
would stay locked in the child), and for large pieces of work. A child that fails, dies
or sends back something unreadable costs nothing but time: its piece is done again in
this process, so an error is raised here exactly as it would be without children.

:func:`fork_pull` shares out many pieces of uneven size: each process takes the next
piece when it has finished one (from a pipe written before the children start), so the
processes finish together however the sizes vary.

The number of processes is the ``compile_jobs`` setting (:mod:`irc.core.settings`,
``IRC_COMPILE_JOBS``; 1 turns forking off); by default there is one per core this
process may run on.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
import threading
from typing import Any, Callable, Sequence

from . import settings

_KILL = 9


def worker_count() -> int:
    """How many processes compile-time work may use (``irc.core.settings``:
    ``compile_jobs``, from ``IRC_COMPILE_JOBS``, else one per core)."""
    return settings.current().worker_count()


def can_fork() -> bool:
    """True where :func:`fork_map` may fork: Linux, and no other Python thread alive."""
    return (sys.platform.startswith("linux") and hasattr(os, "fork")
            and threading.active_count() == 1)


def fork_map(fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    """``[fn(x) for x in items]``, with ``items[1:]`` each in a forked child process
    (all at once: pass as many items as there should be processes) while this process
    does ``items[0]``; serially where forking is not possible (:func:`can_fork`).
    ``fn``'s results must pickle."""
    if len(items) <= 1 or not can_fork():
        return [fn(x) for x in items]
    workers: list[tuple[int, int] | None] = []
    try:
        for x in items[1:]:
            workers.append(_fork(fn, x))
        results = [fn(items[0])]
        for i, worker in enumerate(workers):
            ok, value = _collect(worker) if worker is not None else (False, None)
            workers[i] = None
            results.append(value if ok else fn(items[i + 1]))
        return results
    finally:
        for worker in workers:  # left early (an error, Ctrl-C): stop the children
            if worker is not None:
                _stop(worker)


# fork_pull writes every piece's number into a pipe before forking: at most what the
# pipe holds without a reader (64 KiB on Linux), 4 bytes each.
_MAX_PULLED = 8192


def fork_pull(fn: Callable[[Any], Any], items: Sequence[Any], jobs: int | None = None
              ) -> list[Any]:
    """``[fn(x) for x in items]`` on ``jobs`` processes (default :func:`worker_count`):
    this one and forked children each take the next item when they have finished one,
    so give the largest items first. An item whose child failed or died is done again
    here (raising its error as a serial run would); serially where forking is not
    possible. ``fn``'s results must pickle."""
    n = len(items)
    jobs = min(worker_count() if jobs is None else jobs, n)
    if jobs <= 1 or n > _MAX_PULLED or not can_fork():
        return [fn(x) for x in items]
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, b"".join(struct.pack("<I", i) for i in range(n)))
    finally:
        os.close(write_fd)  # the readers see the end of the queue once it is empty

    def take(_: int) -> dict[int, Any]:
        done: dict[int, Any] = {}
        while True:
            # One read of a pipe takes its bytes whole, whoever else is reading.
            data = os.read(read_fd, 4)
            if len(data) < 4:
                return done
            i = struct.unpack("<I", data)[0]
            done[i] = fn(items[i])

    try:
        shares = fork_map(take, list(range(jobs)))
    finally:
        os.close(read_fd)
    results: dict[int, Any] = {}
    for share in shares:
        results.update(share)
    return [results[i] if i in results else fn(items[i]) for i in range(n)]


def _fork(fn: Callable[[Any], Any], item: Any) -> tuple[int, int] | None:
    """A child process computing ``fn(item)``: ``(pid, read end of its pipe)``, or None
    when this process cannot fork now."""
    try:
        read_fd, write_fd = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        return None
    if pid == 0:  # the child: compute, write the pickled result, exit without cleanup
        status = 1
        try:
            os.close(read_fd)
            payload = pickle.dumps(fn(item), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write_fd, "wb") as pipe:
                pipe.write(payload)
            status = 0
        except BaseException:  # noqa: BLE001 - the parent does this piece again
            pass
        finally:
            os._exit(status)
    os.close(write_fd)
    return pid, read_fd


def _collect(worker: tuple[int, int]) -> tuple[bool, Any]:
    """``(True, result)`` of a child (waiting for it), or ``(False, None)`` when it
    failed."""
    pid, read_fd = worker
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        return False, None
    try:
        return True, pickle.loads(data)
    except Exception:  # noqa: BLE001 - an unreadable result: the piece is done again
        return False, None


def _stop(worker: tuple[int, int]) -> None:
    pid, read_fd = worker
    try:
        os.close(read_fd)
    except OSError:
        pass
    try:
        os.kill(pid, _KILL)
        os.waitpid(pid, 0)
    except (OSError, ChildProcessError):
        pass

"""The main loops of tuning processes (started by :mod:`irc.tune.worker_pool`).

A **worker** serves requests from its parent over one socket until the parent closes it:
``("call", module, function, args)`` runs ``module.function(*args)`` and answers
``("ok", result)`` or ``("fail", kind, message)``. A handler may send progress notes
(``("note", value)``) with :func:`notify` before its answer — the runner uses this to start
its timeout clock when the kernel starts.

A **zygote** has imported irc once and forks fresh workers on request (``("fork",
log_path)`` followed by the worker's socket, passed as a file descriptor), so replacing a
worker that crashed costs a fork, not an interpreter start; ``("wait", pid, block)``
reports a forked worker's exit status. The zygote never loads compiled code or starts an
OpenMP runtime, so its children can. Every process dies with its parent
(``PR_SET_PDEATHSIG``), so a kernel stuck in a loop never outlives the tuner.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import signal
import sys
import traceback
from multiprocessing import reduction
from multiprocessing.connection import Connection
from typing import Any

from irc.core.diagnostics import IRCError

_out: Any = None


class TaskFailure(Exception):
    """Raised by a handler to answer with an error kind and message; with ``restart`` the
    worker answers ``("fail", kind, message, True)`` and then exits, since its state is
    broken (a CUDA context after an illegal memory access), and the parent starts a
    fresh one for the next call."""

    def __init__(self, kind: str, message: str, restart: bool = False):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.restart = restart


def notify(value: Any) -> None:
    """Send a progress note to the parent (no-op outside a worker)."""
    if _out is not None:
        _out.send(("note", value))


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _resolve(module: str, name: str):
    if not module.startswith("irc."):
        raise TaskFailure("", f"worker refuses to run {module}.{name}: not part of irc")
    return getattr(importlib.import_module(module), name)


def serve(conn: Any) -> None:
    """Answer calls on ``conn`` until it closes (the worker loop)."""
    global _out
    _out = conn
    conn.send(("ready", os.getpid()))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            break
        if not msg or msg[0] == "exit":
            break
        _, module, name, args = msg
        restart = False
        try:
            result = _resolve(module, name)(*args)
            reply = ("ok", result)
        except TaskFailure as err:
            restart = err.restart
            reply = ("fail", err.kind, err.message, True) if restart else \
                ("fail", err.kind, err.message)
        except Exception as err:  # noqa: BLE001 - every failure becomes an answer
            if isinstance(err, IRCError):
                reply = ("fail", "", str(err))
            else:
                tb = traceback.format_exc(limit=8)
                reply = ("fail", "", f"{type(err).__name__}: {err}\n{tb[-2000:]}")
        try:
            conn.send(reply)
        except (BrokenPipeError, OSError):
            break
        if restart:
            break


def _redirect_output(log_path: str | None) -> None:
    if not log_path:
        return
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _forked_worker(control: Any, fd: int, log_path: str | None) -> None:
    try:
        control.close()
        _die_with_parent()
        _redirect_output(log_path)
        serve(Connection(fd))
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(0)


def zygote(conn: Any) -> None:
    """Fork workers on request until ``conn`` closes (the zygote loop)."""
    conn.send(("ready", os.getpid()))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            break
        if not msg or msg[0] == "exit":
            break
        if msg[0] == "fork":
            fd = reduction.recv_handle(conn)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _forked_worker(conn, fd, msg[1])
            os.close(fd)
            conn.send(("forked", pid))
        elif msg[0] == "wait":
            pid, block = msg[1], msg[2]
            code = None
            try:
                done, status = os.waitpid(pid, 0 if block else os.WNOHANG)
                if done:
                    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) \
                        else os.WEXITSTATUS(status)
            except ChildProcessError:
                code = 0  # already reaped: it is gone
            conn.send(("status", code))


def main(argv: list[str]) -> int:
    """Run as a worker (``argv[2] == "worker"``) or a zygote on socket fd ``argv[1]``."""
    _die_with_parent()
    conn = Connection(int(argv[1]))
    if len(argv) > 2 and argv[2] == "zygote":
        zygote(conn)
    else:
        serve(conn)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

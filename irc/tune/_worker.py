"""The main loop of a tuning worker process (started by ``irc.tune.worker_pool``).

A worker imports irc once, then serves requests from its parent over two pipes until the
parent closes them: ``("call", module, function, args)`` runs ``module.function(*args)``
and answers ``("ok", result)`` or ``("fail", kind, message)``. A handler may send progress
notes (``("note", value)``) with :func:`notify` before its answer — the runner uses this
to start its timeout clock when the kernel starts. The worker dies with its parent
(``PR_SET_PDEATHSIG``) so a kernel stuck in a loop never outlives the tuner.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from typing import Any

_out: Any = None


class TaskFailure(Exception):
    """Raised by a handler to answer with an error kind and message."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


def notify(value: Any) -> None:
    """Send a progress note to the parent (no-op outside a worker)."""
    if _out is not None:
        _out.send(("note", value))


def in_worker() -> bool:
    """True inside a worker process."""
    return _out is not None


def _die_with_parent() -> None:
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _resolve(module: str, name: str):
    if not module.startswith("irc."):
        raise TaskFailure("", f"worker refuses to run {module}.{name}: not part of irc")
    return getattr(importlib.import_module(module), name)


def main(argv: list[str]) -> int:
    """Serve requests on the pipe file descriptors given in ``argv``."""
    global _out
    from multiprocessing.connection import Connection

    _die_with_parent()
    conn_in = Connection(int(argv[1]), writable=False)
    conn_out = Connection(int(argv[2]), readable=False)
    _out = conn_out
    import irc  # noqa: F401 - the import this process exists to pay once

    conn_out.send(("ready", os.getpid()))
    while True:
        try:
            msg = conn_in.recv()
        except (EOFError, OSError):
            break
        if not msg or msg[0] == "exit":
            break
        _, module, name, args = msg
        try:
            result = _resolve(module, name)(*args)
            reply = ("ok", result)
        except TaskFailure as err:
            reply = ("fail", err.kind, err.message)
        except Exception as err:  # noqa: BLE001 - every failure becomes an answer
            from irc.ir.diagnostics import IRCError

            if isinstance(err, IRCError):
                reply = ("fail", "", str(err))
            else:
                tb = traceback.format_exc(limit=8)
                reply = ("fail", "", f"{type(err).__name__}: {err}\n{tb[-2000:]}")
        try:
            conn_out.send(reply)
        except (BrokenPipeError, OSError):
            break
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

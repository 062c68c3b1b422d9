"""Persistent worker processes for building and measuring candidates.

A :class:`WorkerProcess` is a separate Python process (``irc.tune._worker``) that imports
irc once and then serves calls over two pipes, so starting work on a candidate costs a
message, not an interpreter. The process is started with
``subprocess`` (not ``fork``): it never inherits the tuner's threads or OpenMP state, and
a script without an ``if __name__ == "__main__"`` guard is never re-run. When a call
crashes the process (a segfault, ``abort``) or overruns its timeout, the process is
killed and the next call starts a fresh one; what it printed is kept in a log file whose
tail explains the crash.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection, wait

from ..ir.diagnostics import TuningError

# The worker's command line: run irc.tune._worker's loop (imported as a module, not as
# __main__, so its helpers are the same objects the handlers import).
_LAUNCH = "import sys; from irc.tune._worker import main; sys.exit(main(sys.argv))"

# Starting a worker imports irc (about a second); allow a loaded machine much more.
START_TIMEOUT = 120.0


class WorkerDied(Exception):
    """The worker process exited while serving a call."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class WorkerTimeout(Exception):
    """The call did not answer in time; the worker has been killed."""


def _package_root() -> str:
    import irc

    return os.path.dirname(os.path.dirname(os.path.abspath(irc.__file__)))


def describe_exit(returncode: int | None) -> str:
    """``killed by signal SIGSEGV (11)`` / ``exited with status 3``."""
    if returncode is None:
        return "is still running"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name} ({-returncode})"
    return f"exited with status {returncode}"


class WorkerProcess:
    """One persistent worker process (see the module docstring).

    ``call(module, function, args, timeout)`` runs ``module.function(*args)`` in the
    worker and returns its answer ``("ok", result)`` or ``("fail", kind, message)``;
    it raises :class:`WorkerDied` or :class:`WorkerTimeout` (after killing the process).
    """

    def __init__(self, name: str = "worker", log_dir: str | None = None,
                 env: dict[str, str] | None = None):
        self.name = name
        self.log_dir = log_dir
        self.extra_env = dict(env or {})
        self.proc: subprocess.Popen | None = None
        self.conn_in: Connection | None = None   # parent reads
        self.conn_out: Connection | None = None  # parent writes
        self.log_path: str | None = None
        self._log_file = None
        self._ready = False
        self.generation = 0  # bumped at every (re)start; callers key per-process caches by it
        self.busy_since: float | None = None

    # -- lifetime ---------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        """Start the process (returns at once; :meth:`wait_ready` waits for its import)."""
        if self.alive:
            return
        self.stop()
        if self.log_dir is None and self.log_path and os.path.exists(self.log_path):
            os.unlink(self.log_path)  # the previous incarnation's temporary log
        p2c_r, p2c_w = os.pipe()
        c2p_r, c2p_w = os.pipe()
        if self.log_dir is not None:
            os.makedirs(self.log_dir, exist_ok=True)
            self.log_path = os.path.join(self.log_dir, f"{self.name}.log")
            log = open(self.log_path, "wb")
        else:
            fd, self.log_path = tempfile.mkstemp(prefix=f"irc-{self.name}-", suffix=".log")
            log = os.fdopen(fd, "wb")
        env = dict(os.environ)
        root = _package_root()
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"]
                                    if env.get("PYTHONPATH") else "")
        env.update(self.extra_env)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _LAUNCH, str(p2c_r), str(c2p_w)],
                pass_fds=(p2c_r, c2p_w), stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, env=env, cwd=os.getcwd(), close_fds=True)
        except OSError as err:
            for fd in (p2c_r, p2c_w, c2p_r, c2p_w):
                os.close(fd)
            log.close()
            raise TuningError(f"cannot start a tuning worker process: {err}") from None
        os.close(p2c_r)
        os.close(c2p_w)
        self._log_file = log
        self.conn_out = Connection(p2c_w, readable=False)
        self.conn_in = Connection(c2p_r, writable=False)
        self._ready = False
        self.generation += 1

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        """Wait until the worker has imported irc (starting it if needed)."""
        if self._ready and self.alive:
            return
        if not self.alive:
            self.start()
        deadline = time.monotonic() + timeout
        while not self._ready:
            msg = self.next_message(max(0.0, deadline - time.monotonic()))
            if msg is None:
                self.kill()
                raise TuningError(f"the {self.name} process did not start within "
                                  f"{timeout:.0f} s; its output: {self.log_tail() or 'none'}")

    @property
    def ready(self) -> bool:
        """True once the worker has imported irc and waits for calls."""
        return self._ready

    def stop(self) -> None:
        """End the process (politely if idle, else killed) and close its pipes."""
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    if self._ready and self.busy_since is None and self.conn_out is not None:
                        self.conn_out.send(("exit",))
                        self.proc.wait(timeout=2)
                except (OSError, subprocess.TimeoutExpired, BrokenPipeError):
                    pass
                if self.proc.poll() is None:
                    self.proc.kill()
                    self.proc.wait()
        for conn in (self.conn_in, self.conn_out):
            if conn is not None:
                try:
                    conn.close()
                except OSError:
                    pass
        self.conn_in = self.conn_out = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        self.busy_since = None
        self._ready = False

    def kill(self) -> None:
        """Kill the process now (a hung kernel) and close its pipes."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.stop()

    def close(self) -> None:
        """Stop the process and delete its temporary log."""
        self.stop()
        if self.log_dir is None and self.log_path and os.path.exists(self.log_path):
            os.unlink(self.log_path)
        self.proc = None

    # -- calls ------------------------------------------------------------------------
    def send_call(self, module: str, function: str, args: tuple) -> None:
        """Start a call (the worker must be idle); collect its answer with :meth:`recv`."""
        if not self.alive:
            self.start()
        assert self.conn_out is not None
        try:
            self.conn_out.send(("call", module, function, tuple(args)))
        except (BrokenPipeError, OSError):
            raise WorkerDied(self.death_message()) from None
        self.busy_since = time.monotonic()

    def next_message(self, timeout: float | None) -> tuple | None:
        """The next message from the worker, or None when none arrives within ``timeout``
        seconds (None: wait forever); raises WorkerDied when the process is gone."""
        conn = self.conn_in
        if conn is None:
            raise WorkerDied(self.death_message())
        try:
            if not conn.poll(timeout):
                return None
            msg = conn.recv()
        except (EOFError, OSError):
            if self.proc is not None:
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            message = self.death_message()
            self.stop()
            raise WorkerDied(message) from None
        if msg[0] == "ready":
            self._ready = True
        elif msg[0] in ("ok", "fail"):
            self.busy_since = None
        return msg

    def recv(self, deadline: float | None) -> tuple:
        """The next note or answer of the current call; raises WorkerDied, or
        WorkerTimeout (after killing the process) when ``deadline`` (monotonic) passes."""
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            msg = self.next_message(remaining)
            if msg is None:
                self.kill()
                raise WorkerTimeout()
            if msg[0] != "ready":
                return msg

    def call(self, module: str, function: str, args: tuple,
             timeout: float | None = None) -> tuple:
        """Run a call to completion (notes are ignored) and return its answer."""
        self.wait_ready()
        self.send_call(module, function, args)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            msg = self.recv(deadline)
            if msg[0] != "note":
                return msg

    # -- diagnostics ------------------------------------------------------------------
    def log_tail(self, limit: int = 600) -> str:
        """The last characters the worker printed (e.g. a libc abort message)."""
        if not self.log_path or not os.path.exists(self.log_path):
            return ""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - limit))
                return f.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""

    def death_message(self) -> str:
        """Why the worker is gone: its exit status and the tail of its output."""
        code = self.proc.poll() if self.proc is not None else None
        msg = f"the {self.name} process {describe_exit(code)}"
        tail = self.log_tail()
        if tail:
            msg += f"; its last output: {tail}"
        return msg

    def fileno_for_wait(self) -> Connection | None:
        """The connection to pass to ``multiprocessing.connection.wait``."""
        return self.conn_in


def wait_any(workers: list[WorkerProcess], timeout: float | None) -> list[WorkerProcess]:
    """The workers (among ``workers``) with a message or EOF pending."""
    conns = {w.conn_in: w for w in workers if w.conn_in is not None}
    if not conns:
        return []
    ready = wait(list(conns), timeout)
    return [conns[c] for c in ready]


__all__ = ["WorkerDied", "WorkerProcess", "WorkerTimeout", "describe_exit", "wait_any"]

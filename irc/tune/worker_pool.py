"""Persistent worker processes for building and measuring candidates.

A :class:`WorkerProcess` is a separate process (running ``irc.tune._worker``) that has
imported irc and serves calls over a socket, so starting work on a candidate costs a
message, not an interpreter. Workers are forked by a **zygote** (:class:`Zygote`): one
process per tuner, started with ``subprocess`` (not ``fork``, so it never inherits the
tuner's threads or OpenMP state, and a script without an ``if __name__ == "__main__"``
guard is never re-run), which imports irc once and forks a fresh worker in milliseconds
whenever one is needed. When a call crashes its worker (a segfault, ``abort``) or overruns
its timeout, the worker is killed and the next call gets a new one; what a worker printed
is kept in a log file whose tail explains a crash. Where the zygote cannot run, workers
are started directly with ``subprocess`` (about a second each).
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from multiprocessing import reduction
from multiprocessing.connection import Connection, wait

from ..core import settings
from ..core.diagnostics import TuningError

# The command line of a tuning process: run irc.tune._worker's loop (imported as a
# module, not as __main__, so its helpers are the objects the handlers import).
_LAUNCH = "import sys; from irc.tune._worker import main; sys.exit(main(sys.argv))"

# Starting a process imports irc (about a second); allow a loaded machine much more.
START_TIMEOUT = 120.0


class WorkerDied(Exception):
    """The worker process exited while serving a call."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class WorkerTimeout(Exception):
    """The call did not answer in time; the worker has been killed."""


def describe_exit(returncode: int | None) -> str:
    """``was killed by SIGSEGV (11)`` / ``exited with status 3``."""
    if returncode is None:
        return "is still running"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name} ({-returncode})"
    return f"exited with status {returncode}"


def _spawn(mode: str, log) -> tuple[subprocess.Popen, Connection]:
    """Start ``python -c _LAUNCH <fd> <mode>`` connected by a socket pair."""
    parent, child = socket.socketpair()
    env = {**os.environ, **settings.current().environment()}
    # The directory holding the irc package (irc/tune/worker_pool.py is three levels down).
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        proc = subprocess.Popen([sys.executable, "-c", _LAUNCH, str(child.fileno()), mode],
                                pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, env=env,
                                cwd=os.getcwd(), close_fds=True)
    except OSError as err:
        parent.close()
        raise TuningError(f"cannot start a tuning process: {err}") from None
    finally:
        child.close()
    return proc, Connection(parent.detach())


def _temp_log(name: str) -> str:
    fd, path = tempfile.mkstemp(prefix=f"irc-{name}-", suffix=".log")
    os.close(fd)
    return path


class Zygote:
    """A process that has imported irc and forks workers on request (see the module
    docstring). :func:`get_zygote` returns the tuner's one zygote."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.conn: Connection | None = None
        self.log_path: str | None = None
        self.failed = False
        self._lock = threading.Lock()

    def ensure(self) -> bool:
        """Start the zygote if needed; False when it cannot run here."""
        if self.failed:
            return False
        if self.proc is not None and self.proc.poll() is None:
            return True
        self.close()
        self.log_path = _temp_log("zygote")
        try:
            with open(self.log_path, "wb") as log:
                self.proc, self.conn = _spawn("zygote", log)
            if not self.conn.poll(START_TIMEOUT) or self.conn.recv()[0] != "ready":
                raise TuningError("the zygote did not start")
        except (TuningError, EOFError, OSError):
            self.failed = True
            self.close()
            return False
        return True

    def fork(self, log_path: str | None) -> tuple[int, Connection]:
        """A new worker: its pid and the connection to it."""
        parent, child = socket.socketpair()
        try:
            with self._lock:
                self.conn.send(("fork", log_path))
                reduction.send_handle(self.conn, child.fileno(), self.proc.pid)
                reply = self.conn.recv()
        finally:
            child.close()
        return reply[1], Connection(parent.detach())

    def status(self, pid: int, block: bool) -> int | None:
        """The exit status of worker ``pid`` (None while it runs and ``block`` is False)."""
        with self._lock:
            self.conn.send(("wait", pid, block))
            return self.conn.recv()[1]

    def close(self) -> None:
        """Stop the zygote (its workers die with it)."""
        if self.conn is not None:
            try:
                self.conn.send(("exit",))
            except OSError:
                pass
            self.conn.close()
            self.conn = None
        if self.proc is not None:
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        if self.log_path and os.path.exists(self.log_path):
            os.unlink(self.log_path)
        self.log_path = None


_zygote: Zygote | None = None
_zygote_lock = threading.Lock()


def get_zygote() -> Zygote:
    """This process's zygote (created on first use, stopped at exit)."""
    global _zygote
    with _zygote_lock:
        if _zygote is None:
            _zygote = Zygote()
            atexit.register(_zygote.close)
        return _zygote


class _Popen:
    """A worker started with subprocess."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.pid = proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class _Forked:
    """A worker forked by the zygote (its exit status comes from the zygote)."""

    def __init__(self, zygote: Zygote, pid: int):
        self.zygote = zygote
        self.pid = pid
        self.code: int | None = None

    def poll(self) -> int | None:
        if self.code is None:
            try:
                self.code = self.zygote.status(self.pid, block=False)
            except (OSError, EOFError, TypeError, AttributeError):
                self.code = -signal.SIGKILL  # the zygote is gone, and its workers with it
        return self.code

    def wait(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while self.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        return self.code

    def kill(self) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                self.code = self.zygote.status(self.pid, block=True)
            except (OSError, EOFError, TypeError, AttributeError):
                self.code = -signal.SIGKILL


class WorkerProcess:
    """One persistent worker process (see the module docstring).

    ``call(module, function, args, timeout)`` runs ``module.function(*args)`` in the
    worker and returns its answer ``("ok", result)`` or ``("fail", kind, message)``;
    it raises :class:`WorkerDied` or :class:`WorkerTimeout` (after killing the process).
    ``use_zygote=False`` starts the process with subprocess instead of forking it.
    """

    def __init__(self, name: str = "worker", log_dir: str | None = None,
                 use_zygote: bool = True):
        self.name = name
        self.log_dir = log_dir
        self.use_zygote = use_zygote
        self.handle: _Popen | _Forked | None = None
        self.conn: Connection | None = None
        self.log_path: str | None = None
        self._ready = False
        self.generation = 0  # bumped at every (re)start; callers key per-process caches by it
        self.busy_since: float | None = None

    # -- lifetime ---------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self.handle.pid if self.handle is not None else None

    @property
    def alive(self) -> bool:
        return self.handle is not None and self.conn is not None and self.handle.poll() is None

    @property
    def ready(self) -> bool:
        """True once the worker has imported irc and waits for calls."""
        return self._ready

    def start(self) -> None:
        """Start the worker (returns at once; :meth:`wait_ready` waits until it serves)."""
        if self.alive:
            return
        self.stop()
        if self.log_dir is not None:
            os.makedirs(self.log_dir, exist_ok=True)
            self.log_path = os.path.join(self.log_dir, f"{self.name}.log")
        else:
            if self.log_path and os.path.exists(self.log_path):
                os.unlink(self.log_path)  # the previous incarnation's temporary log
            self.log_path = _temp_log(self.name)
        zygote = get_zygote() if self.use_zygote else None
        if zygote is not None and zygote.ensure():
            try:
                pid, self.conn = zygote.fork(self.log_path)
                self.handle = _Forked(zygote, pid)
            except (OSError, EOFError):
                zygote.failed = True
                self.conn = None
        if self.conn is None:
            with open(self.log_path, "wb") as log:
                proc, self.conn = _spawn("worker", log)
            self.handle = _Popen(proc)
        self._ready = False
        self.generation += 1

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        """Wait until the worker serves calls (starting it if needed)."""
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

    def stop(self) -> None:
        """End the process (politely if idle, else killed) and close its socket."""
        if self.handle is not None and self.handle.poll() is None:
            try:
                if self._ready and self.busy_since is None and self.conn is not None:
                    self.conn.send(("exit",))
                    self.handle.wait(2.0)
            except OSError:
                pass
            self.handle.kill()
        if self.conn is not None:
            try:
                self.conn.close()
            except OSError:
                pass
        self.conn = None
        self.busy_since = None
        self._ready = False

    def kill(self) -> None:
        """Kill the process now (a hung kernel) and close its socket."""
        if self.handle is not None:
            self.handle.kill()
        self.stop()

    def close(self) -> None:
        """Stop the process and delete its temporary log."""
        self.stop()
        if self.log_dir is None and self.log_path and os.path.exists(self.log_path):
            os.unlink(self.log_path)
        self.handle = None

    # -- calls ------------------------------------------------------------------------
    def send_call(self, module: str, function: str, args: tuple) -> None:
        """Start a call (the worker must be idle); collect its answer with :meth:`recv`."""
        if not self.alive:
            self.start()
        try:
            self.conn.send(("call", module, function, tuple(args)))
        except OSError:
            raise WorkerDied(self._died()) from None
        self.busy_since = time.monotonic()

    def next_message(self, timeout: float | None) -> tuple | None:
        """The next message from the worker, or None when none arrives within ``timeout``
        seconds (None: wait forever); raises WorkerDied when the process is gone."""
        conn = self.conn
        if conn is None:
            raise WorkerDied(self.death_message())
        try:
            if not conn.poll(timeout):
                return None
            msg = conn.recv()
        except (EOFError, OSError):
            raise WorkerDied(self._died()) from None
        if msg[0] == "ready":
            self._ready = True
        elif msg[0] in ("ok", "fail"):
            self.busy_since = None
        return msg

    def _died(self) -> str:
        if self.handle is not None and self.handle.wait(5.0) is None:
            self.handle.kill()
        message = self.death_message()
        self.stop()
        return message

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
        code = self.handle.poll() if self.handle is not None else None
        msg = f"the {self.name} process {describe_exit(code)}"
        tail = self.log_tail()
        if tail:
            msg += f"; its last output: {tail}"
        return msg


def wait_any(workers: list[WorkerProcess], timeout: float | None) -> list[WorkerProcess]:
    """The workers (among ``workers``) with a message or EOF pending."""
    conns = {w.conn: w for w in workers if w.conn is not None}
    if not conns:
        return []
    ready = wait(list(conns), timeout)
    return [conns[c] for c in ready]


__all__ = ["WorkerDied", "WorkerProcess", "WorkerTimeout", "Zygote", "describe_exit",
           "get_zygote", "wait_any"]

"""LocalBuilder: compile candidates in parallel, persistent worker processes.

Each worker imports irc once and keeps the workloads it has seen, so a candidate costs
one message: the worker replays the trace onto the workload's function (or takes the
scheduled function it was sent), applies the optional postprocessor, lowers and compiles
it with ``irc.build``, and answers with the serialized module (object code and
signatures, without the LLVM IR text). A candidate that fails to replay, lower or compile
becomes ``BUILD_ERROR`` with the message; one that compiles longer than ``timeout``
seconds becomes ``BUILD_TIMEOUT`` (its worker is killed and restarted); a worker that
crashes takes only its candidate with it.

For a ``cuda`` target the workers lower the candidate for the GPU, write CUDA C and
compile it with NVRTC to a cubin (no GPU needed; NVRTC's errors become BUILD_ERROR).
"""

from __future__ import annotations

import importlib
import pickle
import time
from collections import OrderedDict, deque
from typing import Any, Callable, Sequence

from ..codegen import build
from ..core.diagnostics import IRCError, TuningError
from ..core.target import Target, host_num_cores
from ..runtime.cuda_program import CUDAProgramModule
from ..runtime.module import Module
from ..tir.stmt import PrimFunc
from .measure import BUILD_ERROR, BUILD_TIMEOUT, Builder, BuildResult, MeasureInput, apply_trace
from .worker_pool import START_TIMEOUT, WorkerDied, WorkerProcess, wait_any

# Workloads a worker keeps unpickled (a tuning run has at most a few dozen).
_WORKLOAD_CACHE_SIZE = 64
_worker_workloads: OrderedDict[str, PrimFunc] = OrderedDict()


def resolve_postproc(path: str) -> Callable[[PrimFunc, Target], PrimFunc]:
    """The builder postprocessor named ``"module:function"`` (imported); a TuningError
    when the name is malformed or does not import."""
    module, _, name = path.partition(":")
    if not module or not name:
        raise TuningError(f"a builder postprocessor is named 'module:function', got {path!r}")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise TuningError(f"cannot load the builder postprocessor {path!r}: {err}") from None


def worker_has_workload(key: str) -> bool:
    """True when this (builder worker) process keeps workload ``key`` unpickled, so
    :func:`build_candidate` needs no copy of it."""
    return key in _worker_workloads


def serialize_for_runner(module: Any) -> bytes:
    """A compiled module as bytes for a runner process: a CPU module's object code and
    signatures (the LLVM IR text is left out to keep messages small), or a CUDA module
    (cubin, source and host plans)."""
    if isinstance(module, CUDAProgramModule):
        return module.serialize()
    if not isinstance(module, Module):
        raise TuningError(f"a {type(module).__name__} cannot be sent to a runner process",
                          hint="LocalRunner measures CPU (llvm) and CUDA kernels")
    compact = Module(module.objects, module.signatures, module.messages, module.target,
                     entry_name=module.entry_name, externals=module.externals, llvm_ir="")
    return compact.serialize()


def build_candidate(key: str, workload_blob: bytes | None, trace: Any,
                    func_blob: bytes | None, target: str, postproc: str | None
                    ) -> tuple[bytes, float]:
    """Worker side of :class:`LocalBuilder`: compile one candidate and return
    ``(serialized module, seconds)``. Raises on failure (the worker reports it)."""
    t0 = time.perf_counter()
    if func_blob is not None:
        func = pickle.loads(func_blob)
    else:
        base = _worker_workloads.get(key)
        if base is None:
            if workload_blob is None:
                raise TuningError(f"the builder worker has no workload {key}")
            base = pickle.loads(workload_blob)
            _worker_workloads[key] = base
            while len(_worker_workloads) > _WORKLOAD_CACHE_SIZE:
                _worker_workloads.popitem(last=False)
        else:
            _worker_workloads.move_to_end(key)
        func = apply_trace(base, trace)
    if postproc:
        func = resolve_postproc(postproc)(func, Target.canon(target))
    module = build(func, target=target, name="main")
    return serialize_for_runner(module), time.perf_counter() - t0


class LocalBuilder(Builder):
    """Compile candidates in ``n_parallel`` persistent worker processes (default: one per
    core) with a per-candidate ``timeout`` in seconds (default 15).

    ``postproc`` names a function ``"module:function"`` called in the worker on each
    scheduled function as ``f(func, target) -> func`` before compiling (a search's
    postprocessing). ``n_parallel=0`` compiles in this process (no isolation, for
    debugging). ``log_dir`` keeps the workers' output there.
    """

    def __init__(self, timeout: float = 15.0, n_parallel: int | None = None,
                 postproc: str | None = None, log_dir: str | None = None):
        if timeout <= 0:
            raise TuningError(f"LocalBuilder timeout must be positive, got {timeout}")
        self.timeout = float(timeout)
        self.n_parallel = host_num_cores() if n_parallel is None else int(n_parallel)
        if self.n_parallel < 0:
            raise TuningError("LocalBuilder n_parallel must be >= 0")
        if postproc is not None:
            resolve_postproc(postproc)  # fail early on a bad name
        self.postproc = postproc
        self.log_dir = log_dir
        self._workers = [WorkerProcess(f"builder-{i}", log_dir)
                         for i in range(self.n_parallel)]
        self._workload_blobs: OrderedDict[str, bytes] = OrderedDict()

    def _workload_blob(self, inp: MeasureInput) -> bytes:
        key = inp.workload.key
        blob = self._workload_blobs.get(key)
        if blob is None:
            blob = pickle.dumps(inp.workload.func, protocol=pickle.HIGHEST_PROTOCOL)
            self._workload_blobs[key] = blob
            while len(self._workload_blobs) > _WORKLOAD_CACHE_SIZE:
                self._workload_blobs.popitem(last=False)
        return blob

    def _args(self, inp: MeasureInput) -> tuple:
        func_blob = None
        if inp.func is not None:
            func_blob = pickle.dumps(inp.func, protocol=pickle.HIGHEST_PROTOCOL)
        wl_blob = None if func_blob is not None else self._workload_blob(inp)
        return (inp.workload.key, wl_blob, inp.trace, func_blob, str(inp.target), self.postproc)

    def start(self) -> None:
        """Start the worker processes now (otherwise the first build starts them)."""
        for w in self._workers:
            if not w.alive:
                w.start()

    def build(self, inputs: Sequence[MeasureInput]) -> list[BuildResult]:
        inputs = list(inputs)
        if not inputs:
            return []
        if self.n_parallel == 0:
            return [self._build_here(inp) for inp in inputs]
        return self._build_parallel(inputs)

    def _build_here(self, inp: MeasureInput) -> BuildResult:
        t0 = time.perf_counter()
        try:
            blob, secs = build_candidate(*self._args(inp))
            return BuildResult(blob, build_secs=secs)
        except IRCError as err:
            return BuildResult(None, BUILD_ERROR, str(err), time.perf_counter() - t0)
        except Exception as err:  # noqa: BLE001 - a failed candidate, not a failed tuner
            return BuildResult(None, BUILD_ERROR, f"{type(err).__name__}: {err}",
                               time.perf_counter() - t0)

    def _build_parallel(self, inputs: list[MeasureInput]) -> list[BuildResult]:
        self.start()
        results: list[BuildResult | None] = [None] * len(inputs)
        pending = deque(range(len(inputs)))
        running: dict[int, tuple[int, float, float]] = {}  # worker index -> (input, t0, deadline)
        start_deadline = time.monotonic() + START_TIMEOUT
        while pending or running:
            now = time.monotonic()
            for wi, w in enumerate(self._workers):
                if wi in running or not pending:
                    continue
                if not w.alive:
                    w.start()
                if not w.ready:
                    continue
                i = pending.popleft()
                try:
                    w.send_call(__name__, "build_candidate", self._args(inputs[i]))
                except WorkerDied as err:
                    results[i] = BuildResult(None, BUILD_ERROR, err.message)
                    w.start()
                    continue
                running[wi] = (i, now, now + self.timeout)
            if not pending and not running:
                break
            deadlines = [d for _, _, d in running.values()]
            if any(not w.ready for w in self._workers):
                deadlines.append(start_deadline)
            timeout = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
            for w in wait_any(self._workers, timeout):
                wi = self._workers.index(w)
                try:
                    msg = w.next_message(0)
                except WorkerDied as err:
                    if wi in running:
                        i, t0, _ = running.pop(wi)
                        results[i] = BuildResult(None, BUILD_ERROR,
                                                 f"{err.message} while compiling",
                                                 time.monotonic() - t0)
                    w.start()
                    continue
                if msg is None or msg[0] in ("ready", "note") or wi not in running:
                    continue
                i, t0, _ = running.pop(wi)
                if msg[0] == "ok":
                    blob, secs = msg[1]
                    results[i] = BuildResult(blob, build_secs=secs)
                else:
                    results[i] = BuildResult(None, msg[1] or BUILD_ERROR, msg[2],
                                             time.monotonic() - t0)
            now = time.monotonic()
            for wi, (i, t0, deadline) in list(running.items()):
                if now >= deadline:
                    running.pop(wi)
                    self._workers[wi].kill()
                    self._workers[wi].start()
                    results[i] = BuildResult(None, BUILD_TIMEOUT,
                                             f"compiling took longer than the build timeout "
                                             f"of {self.timeout:g} s", now - t0)
            if now >= start_deadline and not running and pending \
                    and not any(w.ready for w in self._workers):
                tail = self._workers[0].log_tail()
                raise TuningError(f"no builder worker started within {START_TIMEOUT:.0f} s; "
                                  f"worker output: {tail or 'none'}")
        return [r if r is not None else BuildResult(None, BUILD_ERROR, "not built")
                for r in results]

    def close(self) -> None:
        for w in self._workers:
            w.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

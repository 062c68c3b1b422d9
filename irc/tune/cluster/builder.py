"""Building candidates on a Ray cluster: :class:`RayBuilder` compiles each candidate as
a Ray task (one CPU each) in Ray's worker processes, anywhere in the cluster. The
compiled module stays in Ray's object store and goes from the building node straight to
the measuring one. A build past ``timeout`` seconds is cancelled (``BUILD_TIMEOUT``); a
build whose worker process dies is retried once by Ray, then recorded as
``BUILD_ERROR`` with the cause.

A :class:`RayBuilder` is a :class:`~irc.tune.measure.Builder` (``build`` waits for a
batch) and the :class:`~irc.tune.cluster.dispatcher.BuildService` of a
:class:`~irc.tune.cluster.runner.RayRunner` (``submit`` starts one build, ``outcome``
reads it, ``cancel`` stops it).
"""

from __future__ import annotations

import pickle
import socket
import time
from collections import OrderedDict, deque
from typing import Any, Sequence

from ...core.diagnostics import IRCError, TuningError
from .. import builder as local_builder
from ..measure import BUILD_ERROR, BUILD_TIMEOUT, Builder, BuildResult, MeasureInput
from .connection import connect, import_ray, ray_error_text
from .dispatcher import BuildOutcome

# Workloads kept in the object store (a tuning run has at most a few dozen).
_WORKLOAD_REFS = 64


def _build_task(key: str, workload_box: list, trace: Any, func_blob: bytes | None,
                target: str, postproc: str | None) -> tuple[dict, bytes | None]:
    """A Ray task: compile one candidate; returns ``(metadata, serialized module)``.
    ``workload_box`` holds the ObjectRef of the pickled workload, fetched only by a
    worker process that has not seen the workload yet."""
    t0 = time.perf_counter()
    host = socket.gethostname()
    try:
        blob = None
        if func_blob is None and not local_builder.worker_has_workload(key):
            blob = import_ray().get(workload_box[0])
        artifact, secs = local_builder.build_candidate(key, blob, trace, func_blob, target,
                                                       postproc)
    except IRCError as err:
        return {"error": str(err), "secs": time.perf_counter() - t0, "host": host}, None
    except Exception as err:  # noqa: BLE001 - a failed candidate, not a failed tuner
        return ({"error": f"{type(err).__name__}: {err}", "secs": time.perf_counter() - t0,
                 "host": host}, None)
    return {"secs": secs, "host": host, "bytes": len(artifact)}, artifact


class RayBuilder(Builder):
    """Compile candidates as Ray tasks over the cluster's CPUs (see the module
    docstring): ``timeout`` seconds per candidate (default 15), at most ``max_in_flight``
    builds at once (default: the cluster's CPUs), ``postproc`` as for
    :class:`~irc.tune.LocalBuilder`. ``address`` and ``init_options`` go to
    :func:`~irc.tune.cluster.connect` on first use."""

    def __init__(self, address: str | None = None, timeout: float = 15.0,
                 max_in_flight: int | None = None, postproc: str | None = None,
                 **init_options: Any):
        if timeout <= 0:
            raise TuningError(f"RayBuilder timeout must be positive, got {timeout}")
        if max_in_flight is not None and max_in_flight < 1:
            raise TuningError("RayBuilder max_in_flight must be at least 1")
        if postproc is not None:
            local_builder.resolve_postproc(postproc)  # fail early on a bad name
        self.address = address
        self.init_options = init_options
        self.timeout = float(timeout)
        self._max_in_flight = max_in_flight
        self.postproc = postproc
        self._ray: Any = None
        self._remote: Any = None
        self._workload_refs: OrderedDict[str, Any] = OrderedDict()

    @property
    def ray(self) -> Any:
        """The ``ray`` module, connected (on first use)."""
        if self._ray is None:
            self._ray = connect(self.address, **self.init_options)
            self._remote = self._ray.remote(num_cpus=1, num_returns=2, max_retries=1)(
                _build_task)
        return self._ray

    @property
    def max_in_flight(self) -> int:
        """The most builds at once."""
        if self._max_in_flight is None:
            cpus = int(self.ray.cluster_resources().get("CPU", 1))
            self._max_in_flight = max(1, cpus)
        return self._max_in_flight

    def workload_ref(self, inp: MeasureInput) -> Any:
        """The object-store reference of ``inp``'s pickled workload (put once)."""
        key = inp.workload.key
        ref = self._workload_refs.get(key)
        if ref is None:
            ref = self.ray.put(pickle.dumps(inp.workload.func,
                                            protocol=pickle.HIGHEST_PROTOCOL))
            self._workload_refs[key] = ref
            while len(self._workload_refs) > _WORKLOAD_REFS:
                self._workload_refs.popitem(last=False)
        return ref

    def submit(self, inp: MeasureInput) -> tuple[Any, Any]:
        """Start compiling ``inp``: ``(metadata ref, artifact ref)``."""
        func_blob = None if inp.func is None else \
            pickle.dumps(inp.func, protocol=pickle.HIGHEST_PROTOCOL)
        self.ray  # noqa: B018 - connects and defines the remote function
        meta, artifact = self._remote.remote(inp.workload.key, [self.workload_ref(inp)],
                                             inp.trace, func_blob, str(inp.target),
                                             self.postproc)
        return meta, artifact

    def outcome(self, reply: Any) -> BuildOutcome:
        """How a finished build went (``reply``: its metadata ref): its seconds and the
        module's size, or the failed build."""
        try:
            meta = self.ray.get(reply)
        except Exception as err:  # noqa: BLE001 - Ray's errors: a dead worker, a cancel
            return BuildOutcome(failure=BuildResult(
                None, BUILD_ERROR, f"the build worker failed: {ray_error_text(err)}"))
        if "error" in meta:
            return BuildOutcome(failure=BuildResult(None, BUILD_ERROR, meta["error"],
                                                    meta.get("secs", 0.0)))
        return BuildOutcome(secs=float(meta.get("secs", 0.0)), nbytes=int(meta.get("bytes", 0)))

    def cancel(self, reply: Any) -> None:
        """Stop a build (its worker process is killed)."""
        try:
            self.ray.cancel(reply, force=True)
        except Exception:  # noqa: BLE001 - already finished or gone
            pass

    def build(self, inputs: Sequence[MeasureInput]) -> list[BuildResult]:
        inputs = list(inputs)
        results: list[BuildResult | None] = [None] * len(inputs)
        pending = deque(range(len(inputs)))
        running: dict[Any, tuple[int, Any, float]] = {}  # meta ref -> (i, artifact, deadline)
        ray = self.ray
        while pending or running:
            while pending and len(running) < self.max_in_flight:
                i = pending.popleft()
                meta, art = self.submit(inputs[i])
                running[meta] = (i, art, time.monotonic() + self.timeout)
            wait = max(0.0, min(d for _, _, d in running.values()) - time.monotonic())
            ready, _ = ray.wait(list(running), num_returns=1, timeout=wait)
            for ref in ready:
                i, art, _ = running.pop(ref)
                outcome = self.outcome(ref)
                if outcome.failure is not None:
                    results[i] = outcome.failure
                    continue
                try:
                    results[i] = BuildResult(ray.get(art), build_secs=outcome.secs)
                except Exception as err:  # noqa: BLE001 - the object was lost
                    results[i] = BuildResult(None, BUILD_ERROR, "the compiled module was "
                                             f"lost: {ray_error_text(err)}")
            now = time.monotonic()
            for ref, (i, _, deadline) in list(running.items()):
                if now >= deadline:
                    del running[ref]
                    self.cancel(ref)
                    results[i] = BuildResult(None, BUILD_TIMEOUT, "compiling took longer "
                                             f"than the build timeout of {self.timeout:g} s",
                                             self.timeout)
        return results  # type: ignore[return-value]


__all__ = ["RayBuilder"]

"""Measuring on a Ray cluster: runner actors and the Ray side of the dispatcher.

- :class:`RunnerHost` is the body of a runner actor: a :class:`~irc.tune.LocalRunner`
  (so a crashing kernel kills only that runner's own measuring process) on the node Ray
  placed the actor on. It reports its hardware fingerprint (CPU model, features and
  cores, or GPU name), which the records carry.
- :class:`RayWorkers` is the :class:`~irc.tune.cluster.dispatcher.WorkerBackend` on
  Ray: runner actors placed by their :class:`RunnerPool`'s resources (or pinned to a
  node), calls to them, ``ray.wait`` over the replies, Ray's errors turned into
  :class:`~irc.tune.cluster.dispatcher.WorkerLost`.
- :class:`RayRunner` is the :class:`~irc.tune.measure.AsyncRunner`: it connects,
  starts the pools' actors, builds batches with the builder it is given, and leaves
  queues, deadlines and lost workers to its
  :class:`~irc.tune.cluster.dispatcher.Dispatcher`.
"""

from __future__ import annotations

import os
import pickle
import socket
from collections import OrderedDict
from typing import Any, Callable, Mapping, Sequence

from ...core.diagnostics import TuningError
from ...core.target import Target
from ..measure import (
    AsyncRunner,
    BatchHandle,
    Builder,
    BuildResult,
    FinishedCandidate,
    MeasureInput,
    RunResult,
)
from ..record import Workload
from ..runner import LocalRunner
from .builder import RayBuilder
from .connection import connect, import_ray, ray_error_text
from .dispatcher import (
    START_TIMEOUT,
    Assignment,
    Dispatcher,
    RunnerPool,
    Worker,
    WorkerIdentity,
    WorkerLost,
)

#: Seconds beyond the runner's own time-outs before a silent actor is given up on.
RUN_GRACE = 30.0
# Workloads a runner actor keeps unpickled.
_WORKLOAD_CACHE_SIZE = 64


class RunnerHost:
    """The body of a runner actor: a :class:`~irc.tune.LocalRunner` (with its own
    isolated measuring process) on the node Ray placed the actor on."""

    def __init__(self, options: dict):
        self.runner = LocalRunner(**options)
        self.runner.start()
        self._workloads: OrderedDict[str, Workload] = OrderedDict()
        self._fingerprints: dict[str, str] = {}

    def identity(self, target: str) -> WorkerIdentity:
        """Who measures: the hardware fingerprint of ``target`` on this machine, the
        host, the Ray node, this process and the resources Ray assigned to it."""
        ctx = import_ray().get_runtime_context()
        return WorkerIdentity(
            fingerprint=self._fingerprint(target), host=socket.gethostname(),
            node=ctx.get_node_id(), pid=os.getpid(),
            resources={k: float(v) for k, v in ctx.get_assigned_resources().items()})

    def run(self, key: str, workload_box: list, trace: Any, func_blob: bytes | None,
            target: str, artifact: bytes, build_secs: float) -> RunResult:
        """Measure one built candidate (``workload_box`` holds the ObjectRef of the
        pickled workload, fetched the first time this actor sees it)."""
        workload = self._workloads.get(key)
        if workload is None:
            func = pickle.loads(import_ray().get(workload_box[0]))
            workload = Workload.from_func(func)
            self._workloads[key] = workload
            while len(self._workloads) > _WORKLOAD_CACHE_SIZE:
                self._workloads.popitem(last=False)
        func = pickle.loads(func_blob) if func_blob is not None else None
        inp = MeasureInput(workload, trace, target, func=func)
        res = self.runner.run([inp], [BuildResult(artifact, build_secs=build_secs)])[0]
        res.fingerprint = self._fingerprint(target)
        return res

    def _fingerprint(self, target: str) -> str:
        fp = self._fingerprints.get(target)
        if fp is None:
            fp = self._fingerprints[target] = Target.canon(target).fingerprint()
        return fp

    def close(self) -> None:
        """Stop the measuring process."""
        self.runner.close()


class RayWorkers:
    """The dispatcher's :class:`~irc.tune.cluster.dispatcher.WorkerBackend` on Ray:
    each worker a :class:`RunnerHost` actor made with ``runner_options``, placed by its
    pool's resources or pinned to a node, measuring one candidate at a time.
    ``workload_ref`` gives the object-store reference of a candidate's workload.
    Connects (``address``, ``init_options``) on first use."""

    def __init__(self, address: str | None, init_options: Mapping[str, Any],
                 runner_options: Mapping[str, Any],
                 workload_ref: Callable[[MeasureInput], Any]):
        self.address = address
        self.init_options = dict(init_options)
        self.runner_options = dict(runner_options)
        self.workload_ref = workload_ref
        self._ray: Any = None
        self._actor_class: Any = None

    @property
    def ray(self) -> Any:
        """The ``ray`` module, connected (on first use)."""
        if self._ray is None:
            self._ray = connect(self.address, **self.init_options)
            self._actor_class = self._ray.remote(RunnerHost)
        return self._ray

    def start_worker(self, pool: RunnerPool, node: str | None) -> tuple[Any, Any]:
        options: dict[str, Any] = {"num_cpus": pool.num_cpus, "max_restarts": 0,
                                   "max_concurrency": 1}
        if pool.resources:
            options["resources"] = dict(pool.resources)
        if node is not None:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node, soft=False)
        self.ray  # noqa: B018 - connects and defines the actor class
        handle = self._actor_class.options(**options).remote(self.runner_options)
        return handle, handle.identity.remote(pool.target or "llvm")

    def identity(self, reply: Any) -> WorkerIdentity:
        return self._get(reply)

    def store(self, artifact: bytes) -> Any:
        return self.ray.put(artifact)

    def measure(self, worker: Any, inp: MeasureInput, artifact: Any,
                build_secs: float) -> Any:
        func_blob = None if inp.func is None else \
            pickle.dumps(inp.func, protocol=pickle.HIGHEST_PROTOCOL)
        return worker.run.remote(inp.workload.key, [self.workload_ref(inp)], inp.trace,
                                 func_blob, str(inp.target), artifact, build_secs)

    def result(self, reply: Any) -> RunResult:
        return self._get(reply)

    def kill(self, worker: Any) -> None:
        try:
            self.ray.kill(worker, no_restart=True)
        except Exception:  # noqa: BLE001 - already gone
            pass

    def alive_nodes(self) -> list[str]:
        return [n["NodeID"] for n in self.ray.nodes() if n.get("Alive")]

    def wait(self, replies: Sequence[Any], timeout: float | None) -> list[Any]:
        ready, _ = self.ray.wait(list(replies), num_returns=1, timeout=timeout)
        if ready:
            ready, _ = self.ray.wait(list(replies), num_returns=len(replies), timeout=0)
        return ready

    def _get(self, reply: Any) -> Any:
        try:
            return self.ray.get(reply)
        except Exception as err:  # noqa: BLE001 - the actor died or its call failed
            raise WorkerLost(ray_error_text(err)) from None


class RayRunner(AsyncRunner):
    """Measure candidates on runner actors over a Ray cluster (see the package
    docstring).

    ``pools``: :class:`RunnerPool` s (default: one CPU runner per node for ``llvm``
    targets and one per GPU for ``cuda``); the measuring options (``timeout``,
    ``number``, ``repeat``, ``min_repeat_ms``, ``enable_cpu_cache_flush``,
    ``check_correctness``, ...) are :class:`~irc.tune.LocalRunner`'s and apply on every
    actor. ``address`` and ``init_options`` go to :func:`~irc.tune.cluster.connect` on
    first use.

    ``assignments`` lists where each candidate was measured
    (:class:`~irc.tune.cluster.dispatcher.Assignment`: workload key, trace key, target,
    pool index, host, node, resources). ``stats`` sums per stage: seconds building,
    measuring on the actors and from dispatch to result as seen here, bytes of compiled
    modules, retries and replaced actors. ``workers`` are the runner actors and what the
    dispatcher knows of them.
    """

    def __init__(self, address: str | None = None, pools: Sequence[RunnerPool] | None = None,
                 *, init_options: Mapping[str, Any] | None = None, **runner_options: Any):
        LocalRunner(**runner_options).close()  # checks the options here, not on the actors
        self.address = address
        self.init_options = dict(init_options or {})
        self.runner_options = dict(runner_options)
        self._requested_pools = list(pools) if pools is not None else None
        for p in self._requested_pools or ():
            if not isinstance(p, RunnerPool):
                raise TuningError(f"RayRunner pools are RunnerPool objects, got "
                                  f"{type(p).__name__}")
        self._builder: RayBuilder | None = None
        self._own_builder: RayBuilder | None = None
        self._target_fingerprints: dict[str, str] = {}
        self._workers = RayWorkers(address, self.init_options, self.runner_options,
                                   self._workload_ref)
        run_timeout = float(runner_options.get("setup_timeout", 120.0)) + \
            float(runner_options.get("timeout", 10.0)) * 2 + RUN_GRACE
        self._dispatcher = Dispatcher(self._workers, run_timeout=run_timeout)
        self._connected = False
        self.closed = False

    # -- set-up -------------------------------------------------------------------------
    @property
    def ray(self) -> Any:
        """The ``ray`` module, connected, with the pools' runner actors started (on first
        use)."""
        ray = self._workers.ray
        if not self._connected:
            self._connected = True
            pools = self._requested_pools
            if pools is None:
                pools = [RunnerPool(target="llvm")]
                if ray.cluster_resources().get("GPU", 0) >= 1:
                    pools.append(RunnerPool({"GPU": 1}, target="cuda"))
            resources = ray.cluster_resources()
            nodes = self._workers.alive_nodes()
            for pool in pools:
                self._dispatcher.add_pool(pool, resources, nodes)
        return ray

    @property
    def pools(self) -> list[RunnerPool]:
        """The runner pools (the default ones resolved)."""
        self.ray  # noqa: B018 - resolves the default pools
        return list(self._dispatcher.pools)

    @property
    def workers(self) -> list[Worker]:
        """The runner actors started so far, dead ones included."""
        return list(self._dispatcher.workers)

    @property
    def assignments(self) -> list[Assignment]:
        """Where each candidate was measured."""
        return self._dispatcher.assignments

    @property
    def stats(self) -> dict[str, float]:
        """Sums per stage (see the class docstring)."""
        return self._dispatcher.stats

    def hardware_fingerprint(self, target: Any) -> str:
        """The fingerprint of the hardware that measures ``target``: that of the pool's
        runner actors (waits for one to start). A TuningError when no pool measures it,
        no runner starts, or the pool's runners are on different hardware."""
        t = Target.canon(target)
        self.ray  # noqa: B018 - starts the pools
        i = self._dispatcher.pool_for(t)
        if i is None:
            raise TuningError(f"no runner pool of the cluster measures target {t}",
                              hint="add a RunnerPool(target=...) for it")
        known = self._target_fingerprints.get(str(t))
        if known is not None:
            return known
        worker = self._dispatcher.wait_for_worker(i, t)
        try:
            ident = self.ray.get(worker.handle.identity.remote(str(t)), timeout=START_TIMEOUT)
        except Exception as err:  # noqa: BLE001 - the actor died meanwhile
            raise TuningError(f"the runner for target {t} failed: {ray_error_text(err)}"
                              ) from None
        self._target_fingerprints[str(t)] = ident.fingerprint
        return ident.fingerprint

    # -- the AsyncRunner interface -------------------------------------------------------
    def use_builder(self, builder: Builder | None) -> None:
        """Builds of later :meth:`submit` calls without a builder go to ``builder`` (a
        :class:`RayBuilder`; another kind is ignored)."""
        self._builder = builder if isinstance(builder, RayBuilder) else None

    def submit(self, inputs: Sequence[MeasureInput], builder: Builder | None = None,
               builds: Sequence[BuildResult] | None = None) -> BatchHandle:
        self.ray  # noqa: B018 - connects and starts the pools
        inputs = list(inputs)
        if builds is None:
            if builder is None:
                builder = self._builder or self._ensure_own_builder()
            if isinstance(builder, RayBuilder):
                self._builder = self._dispatcher.builds = builder
            else:
                # Another kind of builder: build here, then measure on the cluster.
                builds = builder.build(inputs)
        return self._dispatcher.submit(inputs, builds)

    def poll(self, timeout: float | None = None) -> list[FinishedCandidate]:
        return self._dispatcher.poll(timeout)

    def run(self, inputs: Sequence[MeasureInput], builds: Sequence[BuildResult]
            ) -> list[RunResult]:
        if len(inputs) != len(builds):
            raise TuningError("RayRunner.run needs one build result per input")
        if not inputs:
            return []
        batch = self.submit(inputs, builds=builds)
        return [done.run for done in self._dispatcher.wait_for(batch)]

    def _ensure_own_builder(self) -> RayBuilder:
        if self._own_builder is None:
            self._own_builder = RayBuilder(self.address, **self.init_options)
        return self._own_builder

    def _workload_ref(self, inp: MeasureInput) -> Any:
        return (self._builder or self._ensure_own_builder()).workload_ref(inp)

    # -- lifetime -----------------------------------------------------------------------
    def close(self) -> None:
        """Stop the runner actors and the builds in flight (Ray stays connected)."""
        if not self.closed and self._connected:
            self._dispatcher.close()
        self.closed = True

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


__all__ = ["RUN_GRACE", "RayRunner", "RayWorkers", "RunnerHost"]

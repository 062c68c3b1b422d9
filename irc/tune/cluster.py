"""Tuning on a Ray cluster: builds spread over the cluster's CPUs, measurements on runner
actors pinned to the machines that hold the target's hardware, one database written by
the tuner.

Ray (the ``cluster`` extra) is the execution engine; irc adds the tuning-specific parts:

- :class:`RayBuilder` compiles each candidate as a Ray task (one CPU each) in Ray's
  worker processes, anywhere in the cluster. The compiled module stays in Ray's object
  store and goes from the building node straight to the measuring one. A build past
  ``timeout`` seconds is cancelled (``BUILD_TIMEOUT``); a build whose worker process dies
  is retried once by Ray, then recorded as ``BUILD_ERROR`` with the cause.
- :class:`RayRunner` keeps long-lived runner actors, each a
  :class:`~irc.tune.LocalRunner` (so a crashing kernel kills only that runner's own
  measuring process) placed by a :class:`RunnerPool`: ``resources={"GPU": 1}`` for one
  actor per GPU, a custom resource naming a kind of machine (``ray start
  --resources='{"epyc-zen4": 1}'``), or by default one actor per node. Each actor measures
  one candidate at a time (timing on a shared device is noise); candidates go to an idle
  actor of the pool whose ``target`` matches theirs, and results come back as they
  finish. Every actor reports its hardware fingerprint (CPU model, features and cores, or
  GPU name); the records carry it, and a pool whose actors disagree is an error, so
  records of different hardware never mix.
- Faults: an actor that dies (its process killed, its node lost) or stops answering
  costs only the candidate it was measuring, which is tried once more on another actor
  of the pool (then recorded as ``RUN_ERROR`` with the cause); the dead actor is
  replaced when the cluster can place it again. The run goes on with the actors left.
- :class:`RayRunner` is an :class:`~irc.tune.measure.AsyncRunner`: the tuning engine
  keeps two rounds (of different tasks) in flight, so the actors measure one round while
  the search prepares the next, and records each candidate as soon as it is measured. The
  database stays on the tuner's machine, its single writer.

:class:`RayCluster` connects once and gives both (``cluster.builder``,
``cluster.runner``); ``irc tune --cluster auto|local|ray://host:port`` uses it. The
README's "Tuning on a cluster" section shows a real cluster's set-up.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..core.diagnostics import IRCError, TuningError
from ..core.target import Target
from .measure import (
    BUILD_ERROR,
    BUILD_TIMEOUT,
    RUN_ERROR,
    AsyncRunner,
    Builder,
    BuildResult,
    MeasureInput,
    RunResult,
)

logger = logging.getLogger("irc.tune")

#: Seconds a runner actor may take to start (placing it, importing irc).
START_TIMEOUT = 120.0
#: Seconds beyond the runner's own time-outs before a silent actor is given up on.
RUN_GRACE = 30.0
#: Seconds to wait for the head node's port to answer.
PROBE_TIMEOUT = 5.0
#: Runner attempts per candidate: one more on another actor when the first died.
MAX_RUN_ATTEMPTS = 2


# ---------------------------------------------------------------------------------------
# Connecting
# ---------------------------------------------------------------------------------------


def import_ray() -> Any:
    """The ``ray`` module, or a TuningError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise TuningError("tuning on a cluster needs Ray, which is not installed",
                          hint="pip install 'irc[cluster]'") from None
    return ray


def connect(address: str | None = None, **init_options: Any) -> Any:
    """Connect this process to Ray (once; later calls reuse the connection) and return
    the ``ray`` module. ``address``: None or ``"local"`` starts a Ray instance on this
    machine (``init_options`` such as ``num_cpus`` or ``resources`` size it), ``"auto"``
    joins the cluster this machine belongs to (``ray start`` ran here), ``"host:port"``
    its head node, ``"ray://host:port"`` a head through Ray Client."""
    ray = import_ray()
    if ray.is_initialized():
        return ray
    options: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
    if address in (None, "", "local"):
        options["address"] = "local"
        options["include_dashboard"] = False
    else:
        options["address"] = address
        _probe(address)
    options.update(init_options)
    try:
        ray.init(**options)
    except (ConnectionError, TimeoutError, RuntimeError, ValueError) as err:
        where = "a local Ray instance" if options["address"] == "local" else \
            f"the Ray cluster at {address}"
        raise TuningError(f"cannot connect to {where}: {err}",
                          hint="start the head node with 'ray start --head' and pass its "
                               "address, or 'local' for a Ray instance on this machine"
                          ) from None
    return ray


def _probe(address: str) -> None:
    """A TuningError when nothing answers at a ``host:port`` or ``ray://host:port``
    address (Ray itself would retry for minutes)."""
    rest = address.split("://", 1)[1] if "://" in address else address
    if rest == "auto" or ":" not in rest:
        return
    host, _, port = rest.rpartition(":")
    try:
        port_no = int(port)
    except ValueError:
        raise TuningError(f"the cluster address {address!r} has no port number",
                          hint="auto, local, host:port or ray://host:port") from None
    try:
        with socket.create_connection((host, port_no), timeout=PROBE_TIMEOUT):
            pass
    except OSError as err:
        raise TuningError(f"nothing answers at the cluster address {address}: "
                          f"{err.strerror or err}",
                          hint="start the head node with 'ray start --head' (its address is "
                               "printed there) or pass 'local'") from None


def _ray_error_text(err: BaseException) -> str:
    """The first useful line of a Ray exception."""
    text = str(err).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "Error" in ln or "died" in ln or "killed" in ln:
            return ln.strip()[:300]
    return (lines[0] if lines else type(err).__name__)[:300]


# ---------------------------------------------------------------------------------------
# Worker side (run in Ray's processes)
# ---------------------------------------------------------------------------------------


def _build_task(key: str, workload_box: list, trace: Any, func_blob: bytes | None,
                target: str, postproc: str | None) -> tuple[dict, bytes | None]:
    """A Ray task: compile one candidate; returns ``(metadata, serialized module)``.
    ``workload_box`` holds the ObjectRef of the pickled workload, fetched only by a
    worker process that has not seen the workload yet."""
    from . import builder as local_builder

    t0 = time.perf_counter()
    host = socket.gethostname()
    try:
        blob = None
        if func_blob is None and key not in local_builder._worker_workloads:
            blob = import_ray().get(workload_box[0])
        artifact, secs = local_builder.build_candidate(key, blob, trace, func_blob, target,
                                                       postproc)
    except IRCError as err:
        return {"error": str(err), "secs": time.perf_counter() - t0, "host": host}, None
    except Exception as err:  # noqa: BLE001 - a failed candidate, not a failed tuner
        return ({"error": f"{type(err).__name__}: {err}", "secs": time.perf_counter() - t0,
                 "host": host}, None)
    return {"secs": secs, "host": host, "bytes": len(artifact)}, artifact


class RunnerHost:
    """The body of a runner actor: a :class:`~irc.tune.LocalRunner` (with its own
    isolated measuring process) on the node Ray placed the actor on."""

    def __init__(self, options: dict):
        from .runner import LocalRunner

        self.runner = LocalRunner(**options)
        self.runner.start()
        self._workloads: OrderedDict[str, Any] = OrderedDict()
        self._fingerprints: dict[str, str] = {}

    def identity(self, target: str) -> dict:
        """Who measures: the hardware fingerprint of ``target`` on this machine, the
        host, the Ray node, this process and the resources Ray assigned to it."""
        ray = import_ray()
        ctx = ray.get_runtime_context()
        return {"fingerprint": self._fingerprint(target),
                "host": socket.gethostname(), "node": ctx.get_node_id(), "pid": os.getpid(),
                "resources": {k: float(v) for k, v in ctx.get_assigned_resources().items()}}

    def run(self, key: str, workload_box: list, trace: Any, func_blob: bytes | None,
            target: str, artifact: bytes, build_secs: float) -> RunResult:
        import pickle

        from .record import Workload

        workload = self._workloads.get(key)
        if workload is None:
            func = pickle.loads(import_ray().get(workload_box[0]))
            workload = Workload.from_func(func)
            self._workloads[key] = workload
            while len(self._workloads) > 64:
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
        self.runner.close()


# ---------------------------------------------------------------------------------------
# Builder
# ---------------------------------------------------------------------------------------


class RayBuilder(Builder):
    """Compile candidates as Ray tasks over the cluster's CPUs (see the module
    docstring): ``timeout`` seconds per candidate (default 15), at most ``max_in_flight``
    builds at once (default: the cluster's CPUs), ``postproc`` as for
    :class:`~irc.tune.LocalBuilder`. ``address`` and ``init_options`` go to
    :func:`connect` on first use."""

    def __init__(self, address: str | None = None, timeout: float = 15.0,
                 max_in_flight: int | None = None, postproc: str | None = None,
                 **init_options: Any):
        if timeout <= 0:
            raise TuningError(f"RayBuilder timeout must be positive, got {timeout}")
        if max_in_flight is not None and max_in_flight < 1:
            raise TuningError("RayBuilder max_in_flight must be at least 1")
        if postproc is not None:
            from .builder import _resolve_postproc
            _resolve_postproc(postproc)
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
        if self._ray is None:
            self._ray = connect(self.address, **self.init_options)
            self._remote = self._ray.remote(num_cpus=1, num_returns=2, max_retries=1)(
                _build_task)
        return self._ray

    @property
    def max_in_flight(self) -> int:
        if self._max_in_flight is None:
            cpus = int(self.ray.cluster_resources().get("CPU", 1))
            self._max_in_flight = max(1, cpus)
        return self._max_in_flight

    def workload_ref(self, inp: MeasureInput) -> Any:
        """The object-store reference of ``inp``'s pickled workload (put once)."""
        import pickle

        key = inp.workload.key
        ref = self._workload_refs.get(key)
        if ref is None:
            ref = self.ray.put(pickle.dumps(inp.workload.func,
                                            protocol=pickle.HIGHEST_PROTOCOL))
            self._workload_refs[key] = ref
            while len(self._workload_refs) > 64:
                self._workload_refs.popitem(last=False)
        return ref

    def submit(self, inp: MeasureInput) -> tuple[Any, Any]:
        """Start compiling ``inp``: ``(metadata ref, artifact ref)``."""
        import pickle

        func_blob = None if inp.func is None else \
            pickle.dumps(inp.func, protocol=pickle.HIGHEST_PROTOCOL)
        return self._remote_call(inp.workload.key, [self.workload_ref(inp)], inp.trace,
                                 func_blob, str(inp.target), self.postproc)

    def _remote_call(self, *args: Any) -> tuple[Any, Any]:
        self.ray  # noqa: B018 - connects and defines the remote function
        meta, artifact = self._remote.remote(*args)
        return meta, artifact

    def result(self, meta_ref: Any) -> tuple[dict | None, BuildResult | None]:
        """The outcome of a finished build: ``(metadata, None)`` when it compiled,
        ``(None, failed BuildResult)`` otherwise."""
        try:
            meta = self.ray.get(meta_ref)
        except Exception as err:  # noqa: BLE001 - Ray's errors: a dead worker, a cancel
            return None, BuildResult(None, BUILD_ERROR,
                                     f"the build worker failed: {_ray_error_text(err)}")
        if "error" in meta:
            return None, BuildResult(None, BUILD_ERROR, meta["error"], meta.get("secs", 0.0))
        return meta, None

    def cancel(self, ref: Any) -> None:
        """Stop a build (its worker process is killed)."""
        try:
            self.ray.cancel(ref, force=True)
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
                meta, failed = self.result(ref)
                if failed is not None:
                    results[i] = failed
                    continue
                try:
                    results[i] = BuildResult(ray.get(art), build_secs=meta["secs"])
                except Exception as err:  # noqa: BLE001 - the object was lost
                    results[i] = BuildResult(None, BUILD_ERROR, "the compiled module was "
                                             f"lost: {_ray_error_text(err)}")
            now = time.monotonic()
            for ref, (i, _, deadline) in list(running.items()):
                if now >= deadline:
                    del running[ref]
                    self.cancel(ref)
                    results[i] = BuildResult(None, BUILD_TIMEOUT, "compiling took longer "
                                             f"than the build timeout of {self.timeout:g} s",
                                             self.timeout)
        return results  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------
# Runner
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunnerPool:
    """Where a :class:`RayRunner` places runner actors and what they measure.

    ``resources``: what each actor holds (``{"GPU": 1}``, or a custom resource naming a
    kind of machine, given to ``ray start --resources``); empty: one actor per node of
    the cluster. ``target``: the targets it measures, a kind (``"llvm"``, ``"cuda"``) or
    a full target string (None: any). ``count``: actors (None: as many as the cluster's
    resources allow; without resources, one per node, on the first ``count`` nodes).
    ``num_cpus``: CPUs each actor reserves (default 0; reserve the runner machines' CPUs
    to keep builds off them while measuring).
    """

    resources: Mapping[str, float] = field(default_factory=dict)
    target: str | None = None
    count: int | None = None
    num_cpus: float = 0.0

    def matches(self, target: Target) -> bool:
        """True when this pool measures ``target``."""
        if self.target is None:
            return True
        mine = Target.canon(self.target)
        if str(mine) == mine.kind.name:
            return mine.kind.name == target.kind.name
        return str(mine) == str(target)


class _Actor:
    """A runner actor and what the dispatcher knows about it."""

    __slots__ = ("handle", "pool", "node", "ready_ref", "identity", "busy", "started",
                 "dead")

    def __init__(self, handle: Any, pool: int, node: str | None, ready_ref: Any):
        self.handle = handle
        self.pool = pool
        self.node = node  # the node an actor of a per-node pool is pinned to
        self.ready_ref = ready_ref
        self.identity: dict | None = None
        self.busy: _Cand | None = None
        self.started = time.monotonic()
        self.dead = False


class _Cand:
    """A candidate on its way through build and measurement."""

    __slots__ = ("ticket", "index", "inp", "pool", "artifact", "build_secs", "attempts",
                 "deadline", "dispatched", "causes")

    def __init__(self, ticket: int, index: int, inp: MeasureInput, pool: int):
        self.ticket = ticket
        self.index = index
        self.inp = inp
        self.pool = pool
        self.artifact: Any = None  # an ObjectRef of the compiled module
        self.build_secs = 0.0
        self.attempts = 0
        self.deadline = 0.0
        self.dispatched = 0.0
        self.causes: list[str] = []


class RayRunner(AsyncRunner):
    """Measure candidates on runner actors over a Ray cluster (see the module docstring).

    ``pools``: :class:`RunnerPool` s (default: one CPU runner per node for ``llvm``
    targets and one per GPU for ``cuda``); the measuring options (``timeout``,
    ``number``, ``repeat``, ``min_repeat_ms``, ``enable_cpu_cache_flush``,
    ``check_correctness``, ...) are :class:`~irc.tune.LocalRunner`'s and apply on every
    actor. ``address`` and ``init_options`` go to :func:`connect` on first use.

    ``assignments`` lists where each candidate was measured: ``(workload key, trace key,
    target, pool index, host, node, resources)``. ``stats`` sums per stage: seconds
    building, measuring on the actors and from dispatch to result as seen here, bytes
    of compiled modules, retries and replaced actors.
    """

    def __init__(self, address: str | None = None, pools: Sequence[RunnerPool] | None = None,
                 *, init_options: Mapping[str, Any] | None = None, **runner_options: Any):
        from .runner import LocalRunner

        LocalRunner(**runner_options).close()  # checks the options here, not on the actors
        self.address = address
        self.init_options = dict(init_options or {})
        self.runner_options = dict(runner_options)
        self._pools = list(pools) if pools is not None else None
        for p in self._pools or ():
            if not isinstance(p, RunnerPool):
                raise TuningError(f"RayRunner pools are RunnerPool objects, got "
                                  f"{type(p).__name__}")
        self._ray: Any = None
        self._actors: list[_Actor] = []
        self._queues: list[deque[_Cand]] = []
        self._building: dict[Any, tuple[_Cand, float]] = {}  # meta ref -> (cand, deadline)
        self._to_build: deque[_Cand] = deque()
        self._running: dict[Any, _Actor] = {}  # run ref -> actor
        self._finished: list[tuple[int, int, BuildResult, RunResult]] = []
        self._stash: list[tuple[int, int, BuildResult, RunResult]] = []
        self._builder: RayBuilder | None = None
        self._own_builder: RayBuilder | None = None
        self._tickets = 0
        self._pending = 0
        self._fingerprints: dict[int, str] = {}  # pool -> its hardware (pool's target)
        self._target_fingerprints: dict[str, str] = {}
        self._actor_class: Any = None
        self.assignments: list[tuple] = []
        self.stats = {"candidates": 0, "build_secs": 0.0, "run_secs": 0.0,
                      "round_trip_secs": 0.0, "artifact_bytes": 0, "retries": 0,
                      "replaced_actors": 0}
        self.closed = False

    # -- set-up -------------------------------------------------------------------------
    @property
    def ray(self) -> Any:
        if self._ray is None:
            self._ray = connect(self.address, **self.init_options)
            if self._pools is None:
                self._pools = [RunnerPool(target="llvm")]
                if self._ray.cluster_resources().get("GPU", 0) >= 1:
                    self._pools.append(RunnerPool({"GPU": 1}, target="cuda"))
            self._queues = [deque() for _ in self._pools]
            for i in range(len(self._pools)):
                self._start_pool(i)
        return self._ray

    @property
    def pools(self) -> list[RunnerPool]:
        self.ray  # noqa: B018 - resolves the default pools
        return list(self._pools or ())

    def _alive_nodes(self) -> list[str]:
        return [n["NodeID"] for n in self.ray.nodes() if n.get("Alive")]

    def _start_pool(self, i: int) -> None:
        pool = self._pools[i]
        total = self._ray.cluster_resources()
        if not pool.resources:
            nodes = self._alive_nodes()
            for node in nodes if pool.count is None else nodes[:pool.count]:
                self._start_actor(i, node)
            return
        missing = [r for r in pool.resources if total.get(r, 0) < pool.resources[r]]
        if missing:
            raise TuningError(f"runner pool {i} needs resources {dict(pool.resources)}, but "
                              f"the cluster has no {', '.join(missing)} to give",
                              hint="start the machines that should measure with "
                                   "ray start --resources='{\"NAME\": 1}'")
        count = pool.count
        if count is None:
            count = int(min(total[r] // pool.resources[r] for r in pool.resources))
        for _ in range(max(1, count)):
            self._start_actor(i, None)

    def _start_actor(self, i: int, node: str | None) -> None:
        ray = self._ray
        pool = self._pools[i]
        options: dict[str, Any] = {"num_cpus": pool.num_cpus, "max_restarts": 0,
                                   "max_concurrency": 1}
        if pool.resources:
            options["resources"] = dict(pool.resources)
        if node is not None:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node, soft=False)
        if self._actor_class is None:
            self._actor_class = ray.remote(RunnerHost)
        handle = self._actor_class.options(**options).remote(self.runner_options)
        target = pool.target or "llvm"
        self._actors.append(_Actor(handle, i, node, handle.identity.remote(target)))

    def hardware_fingerprint(self, target: Any) -> str:
        """The fingerprint of the hardware that measures ``target``: that of the pool's
        runner actors (waits for one to start). A TuningError when no pool measures it,
        no runner starts, or the pool's runners are on different hardware."""
        t = Target.canon(target)
        i = self._pool_for(t)
        if i is None:
            raise TuningError(f"no runner pool of the cluster measures target {t}",
                              hint="add a RunnerPool(target=...) for it")
        known = self._target_fingerprints.get(str(t))
        if known is not None:
            return known
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            ready = [a for a in self._actors if a.pool == i and not a.dead and
                     a.identity is not None]
            if ready:
                break
            if not any(a.pool == i and not a.dead for a in self._actors):
                raise TuningError(f"no runner for target {t} could start on the cluster",
                                  hint="see the Ray logs of the runner actors")
            if time.monotonic() >= deadline:
                raise TuningError(f"no runner for target {t} started within "
                                  f"{START_TIMEOUT:g} s (the cluster has no room for "
                                  f"{dict(self._pools[i].resources) or 'one per node'}?)")
            self._pump(timeout=1.0)
        try:
            ident = self.ray.get(ready[0].handle.identity.remote(str(t)), timeout=START_TIMEOUT)
        except Exception as err:  # noqa: BLE001 - the actor died meanwhile
            raise TuningError(f"the runner for target {t} failed: {_ray_error_text(err)}"
                              ) from None
        self._target_fingerprints[str(t)] = ident["fingerprint"]
        return ident["fingerprint"]

    def _pool_for(self, target: Target) -> int | None:
        for i, p in enumerate(self.pools):
            if p.matches(target):
                return i
        return None

    # -- the AsyncRunner interface -------------------------------------------------------
    def use_builder(self, builder: Builder | None) -> None:
        """Builds of later :meth:`submit` calls without a builder go to ``builder``."""
        self._builder = builder if isinstance(builder, RayBuilder) else None

    def submit(self, inputs: Sequence[MeasureInput], builder: Builder | None = None,
               builds: Sequence[BuildResult] | None = None) -> int:
        ray = self.ray
        self._tickets += 1
        ticket = self._tickets
        inputs = list(inputs)
        if builds is None and not isinstance(builder, RayBuilder):
            # Another kind of builder: build here, then measure on the cluster.
            if builder is None:
                builder = self._ensure_own_builder()
            else:
                builds = builder.build(inputs)
        if isinstance(builder, RayBuilder) and builds is None:
            self._builder = builder
        for k, inp in enumerate(inputs):
            stripped = MeasureInput(inp.workload, inp.trace, inp.target, func=inp.func)
            pool = self._pool_for(inp.target)
            cand = _Cand(ticket, k, stripped, -1 if pool is None else pool)
            self._pending += 1
            if pool is None:
                self._fail(cand, RUN_ERROR, f"no runner pool measures target {inp.target}")
            elif builds is not None:
                b = builds[k]
                if b.error_kind or b.artifact is None:
                    self._finish(cand, b, RunResult(None, b.error_kind or RUN_ERROR,
                                                    b.error_msg or "the candidate was not "
                                                                   "built"))
                else:
                    cand.artifact = ray.put(b.artifact)
                    cand.build_secs = b.build_secs
                    self.stats["artifact_bytes"] += len(b.artifact)
                    self._queues[pool].append(cand)
            else:
                self._to_build.append(cand)
        return ticket

    def poll(self, timeout: float | None = None
             ) -> list[tuple[int, int, BuildResult, RunResult]]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._finished:
            if self._pending == 0:
                break
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            self._pump(left)
        out, self._finished = self._finished, []
        return out

    def run(self, inputs: Sequence[MeasureInput], builds: Sequence[BuildResult]
            ) -> list[RunResult]:
        if len(inputs) != len(builds):
            raise TuningError("RayRunner.run needs one build result per input")
        if not inputs:
            return []
        ticket = self.submit(inputs, builds=builds)
        out: list[RunResult | None] = [None] * len(inputs)
        while any(r is None for r in out):
            for item in self.poll():
                if item[0] == ticket:
                    out[item[1]] = item[3]
                else:
                    self._stash.append(item)
        self._finished[:0] = self._stash
        self._stash = []
        return out  # type: ignore[return-value]

    # -- the dispatcher -----------------------------------------------------------------
    def _finish(self, cand: _Cand, build: BuildResult, run: RunResult) -> None:
        self._pending -= 1
        self._finished.append((cand.ticket, cand.index, build, run))

    def _fail(self, cand: _Cand, kind: str, msg: str) -> None:
        self._finish(cand, BuildResult(b"", build_secs=cand.build_secs),
                     RunResult(None, kind, msg))

    def _pump(self, timeout: float | None) -> None:
        """One step: start builds, hand candidates to idle actors, wait (up to
        ``timeout``) for something to finish and handle what did, enforce deadlines."""
        ray = self._ray
        builder = self._builder or self._own_builder
        while self._to_build and builder is not None and \
                len(self._building) < builder.max_in_flight:
            cand = self._to_build.popleft()
            meta, cand.artifact = builder.submit(cand.inp)
            self._building[meta] = (cand, time.monotonic() + builder.timeout)
        self._dispatch()
        refs = list(self._building) + list(self._running) + \
            [a.ready_ref for a in self._actors if a.identity is None and not a.dead]
        if not refs:
            if self._pending and not self._to_build:
                # Queued candidates with no actor left to measure them.
                self._drain_orphans()
            return
        now = time.monotonic()
        deadlines = [d for _, d in self._building.values()] + \
            [a.busy.deadline for a in self._running.values() if a.busy is not None] + \
            [a.started + START_TIMEOUT for a in self._actors
             if a.identity is None and not a.dead]
        wait = max(0.0, min(deadlines) - now) if deadlines else None
        if timeout is not None:
            wait = timeout if wait is None else min(wait, timeout)
        ready, _ = ray.wait(refs, num_returns=1, timeout=wait)
        if ready:
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        for ref in ready:
            if ref in self._building:
                self._build_done(ref, builder)
            elif ref in self._running:
                self._run_done(ref)
            else:
                self._actor_ready(ref)
        self._enforce_deadlines(builder)
        self._dispatch()

    def _dispatch(self) -> None:
        for a in self._actors:
            if a.dead or a.busy is not None or a.identity is None:
                continue
            queue = self._queues[a.pool]
            if not queue:
                continue
            cand = queue.popleft()
            inp = cand.inp
            func_blob = None
            if inp.func is not None:
                import pickle
                func_blob = pickle.dumps(inp.func, protocol=pickle.HIGHEST_PROTOCOL)
            wl = (self._builder or self._ensure_own_builder()).workload_ref(inp)
            ref = a.handle.run.remote(inp.workload.key, [wl], inp.trace, func_blob,
                                      str(inp.target), cand.artifact, cand.build_secs)
            cand.attempts += 1
            cand.dispatched = time.monotonic()
            opts = self.runner_options
            cand.deadline = cand.dispatched + float(opts.get("setup_timeout", 120.0)) + \
                float(opts.get("timeout", 10.0)) * 2 + RUN_GRACE
            a.busy = cand
            self._running[ref] = a

    def _ensure_own_builder(self) -> RayBuilder:
        if self._own_builder is None:
            self._own_builder = RayBuilder(self.address, **self.init_options)
        return self._own_builder

    def _build_done(self, ref: Any, builder: RayBuilder) -> None:
        cand, _ = self._building.pop(ref)
        meta, failed = builder.result(ref)
        if failed is not None:
            self._finish(cand, failed, RunResult(None, failed.error_kind, failed.error_msg))
            return
        cand.build_secs = float(meta.get("secs", 0.0))
        self.stats["build_secs"] += cand.build_secs
        self.stats["artifact_bytes"] += int(meta.get("bytes", 0))
        self._queues[cand.pool].append(cand)

    def _run_done(self, ref: Any) -> None:
        a = self._running.pop(ref)
        cand, a.busy = a.busy, None
        try:
            res: RunResult = self._ray.get(ref)
        except Exception as err:  # noqa: BLE001 - the actor died or its call failed
            self._actor_lost(a, f"the runner on {self._where(a)} died while measuring "
                                f"it: {_ray_error_text(err)}", cand)
            return
        self.stats["candidates"] += 1
        self.stats["run_secs"] += res.run_wall_secs
        self.stats["round_trip_secs"] += time.monotonic() - cand.dispatched
        ident = a.identity or {}
        self.assignments.append((cand.inp.workload.key, cand.inp.trace_key,
                                 str(cand.inp.target), a.pool, ident.get("host"),
                                 ident.get("node"), ident.get("resources")))
        self._finish(cand, BuildResult(b"", build_secs=cand.build_secs), res)

    def _actor_ready(self, ref: Any) -> None:
        a = next((x for x in self._actors if x.ready_ref is ref), None)
        if a is None:
            return
        try:
            ident = self._ray.get(ref)
        except Exception as err:  # noqa: BLE001 - the actor could not start
            a.dead = True
            logger.warning("a runner of pool %d could not start: %s", a.pool,
                           _ray_error_text(err))
            return
        known = self._fingerprints.get(a.pool)
        if known is not None and ident["fingerprint"] != known:
            a.dead = True
            self._kill(a)
            logger.warning("the runner on %s measures on hardware %s, but pool %d measures "
                           "on %s; it is not used (give each kind of machine its own "
                           "resource and RunnerPool)", ident["host"], ident["fingerprint"],
                           a.pool, known)
            return
        self._fingerprints[a.pool] = ident["fingerprint"]
        a.identity = ident

    def _where(self, a: _Actor) -> str:
        ident = a.identity or {}
        return f"host {ident.get('host', '?')} (pid {ident.get('pid', '?')})"

    def _kill(self, a: _Actor) -> None:
        try:
            self._ray.kill(a.handle, no_restart=True)
        except Exception:  # noqa: BLE001 - already gone
            pass

    def _actor_lost(self, a: _Actor, cause: str, cand: _Cand | None) -> None:
        """An actor died or stopped answering: retry its candidate elsewhere, replace
        the actor when the cluster can place it."""
        a.dead = True
        self._kill(a)
        for ref, x in list(self._running.items()):
            if x is a:
                del self._running[ref]
        logger.warning("%s", cause)
        if cand is not None:
            cand.causes.append(cause)
            if cand.attempts < MAX_RUN_ATTEMPTS:
                self.stats["retries"] += 1
                self._queues[cand.pool].appendleft(cand)
            else:
                self._fail(cand, RUN_ERROR, "; ".join(cand.causes))
        if a.node is None or a.node in self._alive_nodes():
            self.stats["replaced_actors"] += 1
            self._start_actor(a.pool, a.node)

    def _enforce_deadlines(self, builder: RayBuilder | None) -> None:
        now = time.monotonic()
        for ref, (cand, deadline) in list(self._building.items()):
            if now >= deadline and builder is not None:
                del self._building[ref]
                builder.cancel(ref)
                b = BuildResult(None, BUILD_TIMEOUT, "compiling took longer than the build "
                                f"timeout of {builder.timeout:g} s", builder.timeout)
                self._finish(cand, b, RunResult(None, BUILD_TIMEOUT, b.error_msg))
        for a in list(self._running.values()):
            if a.busy is not None and now >= a.busy.deadline:
                cand, a.busy = a.busy, None
                self._actor_lost(a, f"the runner on {self._where(a)} did not answer within "
                                    f"{now - cand.dispatched:.0f} s", cand)
        for a in self._actors:
            if a.identity is None and not a.dead and now >= a.started + START_TIMEOUT:
                a.dead = True
                self._kill(a)
                logger.warning("a runner of pool %d did not start within %g s (no room on "
                               "the cluster for %s?)", a.pool, START_TIMEOUT,
                               dict(self._pools[a.pool].resources) or "one per node")

    def _drain_orphans(self) -> None:
        for i, queue in enumerate(self._queues):
            if queue and not any(a.pool == i and not a.dead for a in self._actors):
                while queue:
                    cand = queue.popleft()
                    causes = "; ".join(cand.causes) or "every runner of its pool is gone"
                    self._fail(cand, RUN_ERROR, f"no runner is left to measure it ({causes})")

    # -- lifetime -----------------------------------------------------------------------
    def close(self) -> None:
        """Stop the runner actors and the builds in flight (Ray stays connected)."""
        if self.closed or self._ray is None:
            self.closed = True
            return
        self.closed = True
        builder = self._builder or self._own_builder
        for ref in list(self._building):
            if builder is not None:
                builder.cancel(ref)
        self._building.clear()
        for a in self._actors:
            if not a.dead:
                self._kill(a)
                a.dead = True
        self._running.clear()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


# ---------------------------------------------------------------------------------------
# Both, on one connection
# ---------------------------------------------------------------------------------------


class RayCluster:
    """A connection to a Ray cluster with a :class:`RayBuilder` and a :class:`RayRunner`
    for tuning there::

        with RayCluster("auto", pools=[RunnerPool({"GPU": 1}, target="cuda")]) as cluster:
            ms.tune_tir(mod, "cuda", work_dir, 2000, builder=cluster.builder,
                        runner=cluster.runner)

    ``address``: see :func:`connect` (None: a Ray instance on this machine, stopped by
    :meth:`close`); ``pools``: :class:`RunnerPool` s; ``build_timeout``: seconds per
    build; ``init_options``: for ``ray.init``; the other options are the runner's
    (:class:`~irc.tune.LocalRunner`'s).
    """

    def __init__(self, address: str | None = None, pools: Sequence[RunnerPool] | None = None,
                 *, build_timeout: float = 15.0, init_options: Mapping[str, Any] | None = None,
                 **runner_options: Any):
        ray = import_ray()
        self._started_here = not ray.is_initialized() and address in (None, "", "local")
        init = dict(init_options or {})
        self.ray = connect(address, **init)
        self.builder = RayBuilder(address, timeout=build_timeout, **init)
        self.runner = RayRunner(address, pools, init_options=init, **runner_options)
        self.runner.use_builder(self.builder)

    def resources(self) -> dict[str, float]:
        """The cluster's resources (CPUs, GPUs, custom ones) and their amounts."""
        return dict(self.ray.cluster_resources())

    def close(self) -> None:
        """Stop the runner actors (and the Ray instance this object started)."""
        self.runner.close()
        self.builder.close()
        if self._started_here and self.ray.is_initialized():
            self.ray.shutdown()

    def __enter__(self) -> RayCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["RayBuilder", "RayCluster", "RayRunner", "RunnerHost", "RunnerPool", "connect",
           "import_ray"]

"""The dispatcher of a cluster's runners, without Ray: what happens to candidates between
a cluster runner's :meth:`~irc.tune.measure.AsyncRunner.submit` and its
:meth:`~irc.tune.measure.AsyncRunner.poll`.

- **Queues.** :meth:`Dispatcher.submit` takes a batch, built already (each module is
  stored where the workers read it) or to be built by the cluster's
  :class:`BuildService`, which builds at most ``max_in_flight`` candidates at once. A
  built candidate waits in the queue of the :class:`RunnerPool` that measures its
  target; a candidate no pool measures, or whose build failed, is finished at once with
  the error.
- **Workers.** Each pool has workers (runner processes on the cluster, started through
  the :class:`WorkerBackend` where :meth:`RunnerPool.placements` says). A worker reports
  its :class:`WorkerIdentity` once started and measures one candidate at a time; a
  worker whose hardware is not that of its pool's first worker is not used, so records
  of different hardware never mix.
- **Deadlines**, read from ``clock``: a build past the service's ``timeout`` is
  cancelled (``BUILD_TIMEOUT``); a worker silent for ``run_timeout`` seconds on one
  candidate is given up on; a worker not started within ``start_timeout`` seconds too.
- **Lost workers.** A worker that dies or is given up on is killed; its candidate goes
  back to the front of its pool's queue, for another worker, up to
  ``max_run_attempts`` attempts, then finishes as ``RUN_ERROR`` with every cause. The
  worker is replaced when its node is alive (or it was not pinned to one). Candidates
  queued for a pool with no worker left finish as ``RUN_ERROR``.
- **Results.** :meth:`Dispatcher.poll` returns what finished since the last call, in the
  order it finished, as :class:`~irc.tune.measure.FinishedCandidate` s naming the
  :class:`~irc.tune.measure.BatchHandle` that ``submit`` returned.

Everything the dispatcher asks of the cluster goes through :class:`WorkerBackend` and
:class:`BuildService`: Ray's are :class:`~irc.tune.cluster.runner.RayWorkers` and
:class:`~irc.tune.cluster.builder.RayBuilder`; the tests drive the dispatcher with fake
ones and a fake clock.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Mapping, NamedTuple, Protocol, Sequence

from ...core.diagnostics import TuningError
from ...core.target import Target
from ..measure import (
    BUILD_TIMEOUT,
    RUN_ERROR,
    BatchHandle,
    BuildResult,
    FinishedCandidate,
    MeasureInput,
    RunResult,
)

logger = logging.getLogger(__name__)

#: Seconds a runner worker may take to start (placing it, importing irc).
START_TIMEOUT = 120.0
#: Runner attempts per candidate: one more on another worker when the first was lost.
MAX_RUN_ATTEMPTS = 2

Reply = Hashable
"""A pending answer of the cluster (for Ray, an ObjectRef): what
:meth:`WorkerBackend.wait` waits on."""


# ---------------------------------------------------------------------------------------
# What the dispatcher exchanges with the cluster
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunnerPool:
    """Where a cluster runner places runner workers and what they measure.

    ``resources``: what each worker holds (``{"GPU": 1}``, or a custom resource naming a
    kind of machine, given to ``ray start --resources``); empty: one worker per node of
    the cluster. ``target``: the targets it measures, a kind (``"llvm"``, ``"cuda"``) or
    a full target string (None: any). ``count``: workers (None: as many as the cluster's
    resources allow; without resources, one per node, on the first ``count`` nodes).
    ``num_cpus``: CPUs each worker reserves (default 0; reserve the runner machines' CPUs
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

    def placements(self, index: int, resources: Mapping[str, float],
                   nodes: Sequence[str]) -> list[str | None]:
        """Where to start this pool's workers on a cluster holding ``resources`` with
        the alive ``nodes``: one node per worker of a per-node pool, None (wherever the
        resources are) for each worker of the others. A TuningError naming pool
        ``index`` when the cluster lacks one of its resources."""
        if not self.resources:
            return list(nodes if self.count is None else nodes[:self.count])
        missing = [r for r in self.resources if resources.get(r, 0) < self.resources[r]]
        if missing:
            raise TuningError(f"runner pool {index} needs resources {dict(self.resources)}, "
                              f"but the cluster has no {', '.join(missing)} to give",
                              hint="start the machines that should measure with "
                                   "ray start --resources='{\"NAME\": 1}'")
        count = self.count
        if count is None:
            count = int(min(resources[r] // self.resources[r] for r in self.resources))
        return [None] * max(1, count)


@dataclass(frozen=True, kw_only=True)
class WorkerIdentity:
    """Who measures: the hardware fingerprint of the pool's target on the worker's
    machine, its host, its cluster node, its process and the resources the cluster
    assigned to it."""

    fingerprint: str
    host: str
    node: str
    pid: int
    resources: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class BuildOutcome:
    """A build the cluster finished: its seconds and the size of the compiled module
    (which stays on the cluster), or ``failure``, the failed build."""

    secs: float = 0.0
    nbytes: int = 0
    failure: BuildResult | None = None


class Assignment(NamedTuple):
    """Where a candidate was measured: its workload and trace keys, its target, the
    pool's index and the worker's host, node and resources."""

    workload_key: str
    trace_key: str
    target: str
    pool: int
    host: str
    node: str
    resources: Mapping[str, float]


class WorkerLost(TuningError):
    """A worker died or could not start; the message says how (from the cluster)."""


class BuildService(Protocol):
    """Builds candidates on the cluster for a :class:`Dispatcher`
    (:class:`~irc.tune.cluster.builder.RayBuilder`)."""

    #: Seconds a build may take before it is cancelled.
    timeout: float

    @property
    def max_in_flight(self) -> int:
        """The most builds at once."""

    def submit(self, inp: MeasureInput) -> tuple[Reply, Any]:
        """Start building ``inp``: the reply to wait on, and where the compiled module
        will be (for :meth:`WorkerBackend.measure`)."""

    def outcome(self, reply: Reply) -> BuildOutcome:
        """How the build behind a ready ``reply`` went."""

    def cancel(self, reply: Reply) -> None:
        """Stop a build (it may have finished)."""


class WorkerBackend(Protocol):
    """The cluster as a :class:`Dispatcher` sees it
    (:class:`~irc.tune.cluster.runner.RayWorkers`). :meth:`wait` waits on the build
    service's replies too."""

    def start_worker(self, pool: RunnerPool, node: str | None) -> tuple[Any, Reply]:
        """Start a worker of ``pool`` (pinned to ``node`` when given): its handle and the
        reply that brings its :class:`WorkerIdentity`."""

    def identity(self, reply: Reply) -> WorkerIdentity:
        """The identity a started worker reported; :class:`WorkerLost` when it could not
        start."""

    def store(self, artifact: bytes) -> Any:
        """Put a compiled module where the workers read it; returns where."""

    def measure(self, worker: Any, inp: MeasureInput, artifact: Any,
                build_secs: float) -> Reply:
        """Ask ``worker`` to measure the built candidate ``inp`` (its module at
        ``artifact``)."""

    def result(self, reply: Reply) -> RunResult:
        """What a worker measured; :class:`WorkerLost` when it died meanwhile."""

    def kill(self, worker: Any) -> None:
        """Stop a worker (it may be gone already)."""

    def alive_nodes(self) -> list[str]:
        """The nodes of the cluster that are alive."""

    def wait(self, replies: Sequence[Reply], timeout: float | None) -> list[Reply]:
        """The ``replies`` that are ready, waiting up to ``timeout`` seconds (None:
        without limit) for the first."""


# ---------------------------------------------------------------------------------------
# The dispatcher
# ---------------------------------------------------------------------------------------


class Worker:
    """A runner worker and what the dispatcher knows of it: its ``pool`` (index), the
    ``node`` a per-node pool pins it to, the ``ready`` reply that brings its
    ``identity``, the candidate it measures (``busy``), when it was ``started``, and
    whether it is gone (``dead``)."""

    __slots__ = ("handle", "pool", "node", "ready", "identity", "busy", "started", "dead")

    def __init__(self, handle: Any, pool: int, node: str | None, ready: Reply,
                 started: float):
        self.handle = handle
        self.pool = pool
        self.node = node
        self.ready = ready
        self.identity: WorkerIdentity | None = None
        self.busy: CandidateInFlight | None = None
        self.started = started
        self.dead = False

    @property
    def starting(self) -> bool:
        """Started but not reported yet."""
        return self.identity is None and not self.dead

    @property
    def idle(self) -> bool:
        """Started, alive and measuring nothing."""
        return self.identity is not None and not self.dead and self.busy is None

    def where(self) -> str:
        """The worker's host and process, for messages."""
        ident = self.identity
        if ident is None:
            return "host ? (pid ?)"
        return f"host {ident.host} (pid {ident.pid})"


class CandidateInFlight:
    """A candidate on its way through build and measurement: its place in its batch,
    its pool (None: no pool measures its target), where its compiled module is, the
    measuring attempts so far with their deadline, and why earlier attempts failed."""

    __slots__ = ("batch", "index", "inp", "pool", "artifact", "build_secs", "attempts",
                 "deadline", "dispatched", "causes")

    def __init__(self, batch: BatchHandle, index: int, inp: MeasureInput, pool: int | None):
        self.batch = batch
        self.index = index
        self.inp = inp
        self.pool = pool
        self.artifact: Any = None
        self.build_secs = 0.0
        self.attempts = 0
        self.deadline = 0.0
        self.dispatched = 0.0
        self.causes: list[str] = []


class Dispatcher:
    """Builds, queues and measures candidates on a cluster's runner workers (see the
    module docstring). ``backend`` is the cluster; ``run_timeout`` the seconds a worker
    may take on one candidate; ``clock`` gives the time in seconds (``time.monotonic``).
    Set :attr:`builds` to the build service before submitting a batch to build.

    ``assignments`` lists where each candidate was measured (:class:`Assignment`);
    ``stats`` sums seconds building, measuring on the workers and from dispatch to result
    as seen here, bytes of compiled modules, retries and replaced workers
    (``replaced_actors``).
    """

    def __init__(self, backend: WorkerBackend, *, run_timeout: float,
                 start_timeout: float = START_TIMEOUT,
                 max_run_attempts: int = MAX_RUN_ATTEMPTS,
                 clock: Callable[[], float] = time.monotonic):
        self.backend = backend
        self.run_timeout = float(run_timeout)
        self.start_timeout = float(start_timeout)
        self.max_run_attempts = int(max_run_attempts)
        self.clock = clock
        self.builds: BuildService | None = None
        self.pools: list[RunnerPool] = []
        self.workers: list[Worker] = []
        self.assignments: list[Assignment] = []
        self.stats = {"candidates": 0, "build_secs": 0.0, "run_secs": 0.0,
                      "round_trip_secs": 0.0, "artifact_bytes": 0, "retries": 0,
                      "replaced_actors": 0}
        self._fingerprints: dict[int, str] = {}  # pool -> the hardware its workers measure
        self._to_build: deque[CandidateInFlight] = deque()
        self._building: dict[Reply, tuple[CandidateInFlight, float]] = {}  # -> deadline
        self._queues: list[deque[CandidateInFlight]] = []  # per pool: built, waiting
        self._running: dict[Reply, Worker] = {}
        self._finished: list[FinishedCandidate] = []
        self._batches = 0
        self._pending = 0  # candidates submitted and not finished

    # -- pools and workers ----------------------------------------------------------------
    def add_pool(self, pool: RunnerPool, resources: Mapping[str, float],
                 nodes: Sequence[str]) -> int:
        """Add ``pool`` and start its workers on a cluster holding ``resources`` with
        the alive ``nodes`` (:meth:`RunnerPool.placements`); returns its index."""
        index = len(self.pools)
        placements = pool.placements(index, resources, nodes)
        self.pools.append(pool)
        self._queues.append(deque())
        for node in placements:
            self.start_worker(index, node)
        return index

    def start_worker(self, pool: int, node: str | None) -> None:
        """Start a worker of pool ``pool`` (pinned to ``node`` when given)."""
        handle, ready = self.backend.start_worker(self.pools[pool], node)
        self.workers.append(Worker(handle, pool, node, ready, self.clock()))

    def pool_for(self, target: Target) -> int | None:
        """The index of the first pool that measures ``target`` (None: no pool does)."""
        for i, pool in enumerate(self.pools):
            if pool.matches(target):
                return i
        return None

    def wait_for_worker(self, pool: int, target: Target) -> Worker:
        """A started worker of pool ``pool``, which measures ``target``: waits up to
        ``start_timeout`` seconds for one; a TuningError when none can start."""
        deadline = self.clock() + self.start_timeout
        while True:
            for w in self.workers:
                if w.pool == pool and not w.dead and w.identity is not None:
                    return w
            if not any(w.pool == pool and not w.dead for w in self.workers):
                raise TuningError(f"no runner for target {target} could start on the cluster",
                                  hint="see the Ray logs of the runner actors")
            if self.clock() >= deadline:
                raise TuningError(f"no runner for target {target} started within "
                                  f"{self.start_timeout:g} s (the cluster has no room for "
                                  f"{dict(self.pools[pool].resources) or 'one per node'}?)")
            self._step(timeout=1.0)

    # -- batches --------------------------------------------------------------------------
    def submit(self, inputs: Sequence[MeasureInput],
               builds: Sequence[BuildResult] | None = None) -> BatchHandle:
        """Take a batch to measure: already built (``builds``, one per input), or to be
        built by :attr:`builds`. Returns the batch's handle."""
        if builds is None and self.builds is None:
            raise TuningError("the dispatcher has no build service for a batch to build")
        self._batches += 1
        batch = BatchHandle(number=self._batches, size=len(inputs))
        for k, inp in enumerate(inputs):
            # The search's features stay out of the dispatcher's queues.
            inp = MeasureInput(inp.workload, inp.trace, inp.target, func=inp.func)
            cand = CandidateInFlight(batch, k, inp, self.pool_for(inp.target))
            self._pending += 1
            if cand.pool is None:
                self._fail(cand, RUN_ERROR, f"no runner pool measures target {inp.target}")
            elif builds is None:
                self._to_build.append(cand)
            elif builds[k].error_kind or builds[k].artifact is None:
                self._built(cand, BuildOutcome(failure=builds[k]))
            else:
                cand.artifact = self.backend.store(builds[k].artifact)
                self._built(cand, BuildOutcome(secs=builds[k].build_secs,
                                               nbytes=len(builds[k].artifact)))
        return batch

    def poll(self, timeout: float | None = None) -> list[FinishedCandidate]:
        """The candidates finished since the last call, in the order they finished;
        waits up to ``timeout`` seconds for the first (None: until one finishes; [] at
        once when nothing is in flight)."""
        deadline = None if timeout is None else self.clock() + timeout
        while not self._finished and self._pending:
            left = None if deadline is None else deadline - self.clock()
            if left is not None and left <= 0:
                break
            self._step(left)
        out, self._finished = self._finished, []
        return out

    def wait_for(self, batch: BatchHandle) -> list[FinishedCandidate]:
        """Wait until every candidate of ``batch`` finished; returns them in the order of
        its inputs. Candidates of other batches that finish meanwhile stay for
        :meth:`poll`."""
        mine: dict[int, FinishedCandidate] = {}
        while True:
            others = []
            for done in self._finished:
                if done.batch == batch:
                    mine[done.index] = done
                else:
                    others.append(done)
            self._finished = others
            if len(mine) == batch.size:
                return [mine[k] for k in range(batch.size)]
            self._step(None)

    def close(self) -> None:
        """Cancel the builds in flight and stop the workers."""
        if self.builds is not None:
            for reply in self._building:
                self.builds.cancel(reply)
        self._building.clear()
        for w in self.workers:
            if not w.dead:
                self.backend.kill(w.handle)
                w.dead = True
        self._running.clear()

    # -- one step -------------------------------------------------------------------------
    def _step(self, timeout: float | None) -> None:
        """Start builds, hand candidates to idle workers, wait (up to ``timeout``, and
        no later than the next deadline) for replies and handle those that came,
        enforce the deadlines."""
        self._start_builds()
        self._dispatch()
        replies = list(self._building) + list(self._running) + \
            [w.ready for w in self.workers if w.starting]
        if not replies:
            if self._pending and not self._to_build:
                self._drain_orphans()
            return
        deadlines = [d for _, d in self._building.values()] + \
            [w.busy.deadline for w in self._running.values() if w.busy is not None] + \
            [w.started + self.start_timeout for w in self.workers if w.starting]
        wait = max(0.0, min(deadlines) - self.clock()) if deadlines else None
        if timeout is not None:
            wait = timeout if wait is None else min(wait, timeout)
        for reply in self.backend.wait(replies, wait):
            if reply in self._building:
                self._build_done(reply)
            elif reply in self._running:
                self._run_done(reply)
            else:
                self._worker_started(reply)
        self._enforce_deadlines()
        self._dispatch()

    def _start_builds(self) -> None:
        builds = self.builds
        while self._to_build and builds is not None and \
                len(self._building) < builds.max_in_flight:
            cand = self._to_build.popleft()
            reply, cand.artifact = builds.submit(cand.inp)
            self._building[reply] = (cand, self.clock() + builds.timeout)

    def _dispatch(self) -> None:
        for w in self.workers:
            if not w.idle or not self._queues[w.pool]:
                continue
            cand = self._queues[w.pool].popleft()
            reply = self.backend.measure(w.handle, cand.inp, cand.artifact, cand.build_secs)
            cand.attempts += 1
            cand.dispatched = self.clock()
            cand.deadline = cand.dispatched + self.run_timeout
            w.busy = cand
            self._running[reply] = w

    def _built(self, cand: CandidateInFlight, outcome: BuildOutcome) -> None:
        """A candidate's build is over: queue it for its pool's workers, or finish it
        with the failed build."""
        failed = outcome.failure
        if failed is not None:
            self._finish(cand, failed, RunResult(None, failed.error_kind or RUN_ERROR,
                                                 failed.error_msg or
                                                 "the candidate was not built"))
            return
        cand.build_secs = outcome.secs
        self.stats["build_secs"] += outcome.secs
        self.stats["artifact_bytes"] += outcome.nbytes
        self._queues[cand.pool].append(cand)

    def _build_done(self, reply: Reply) -> None:
        cand, _ = self._building.pop(reply)
        assert self.builds is not None  # it made the reply
        self._built(cand, self.builds.outcome(reply))

    def _run_done(self, reply: Reply) -> None:
        w = self._running.pop(reply)
        cand, w.busy = w.busy, None
        try:
            res = self.backend.result(reply)
        except WorkerLost as err:
            self._worker_lost(w, f"the runner on {w.where()} died while measuring it: "
                                 f"{err.message}", cand)
            return
        self.stats["candidates"] += 1
        self.stats["run_secs"] += res.run_wall_secs
        self.stats["round_trip_secs"] += self.clock() - cand.dispatched
        ident = w.identity
        self.assignments.append(Assignment(cand.inp.workload.key, cand.inp.trace_key,
                                           str(cand.inp.target), w.pool, ident.host,
                                           ident.node, ident.resources))
        self._finish(cand, BuildResult(b"", build_secs=cand.build_secs), res)

    def _worker_started(self, reply: Reply) -> None:
        w = next((x for x in self.workers if x.ready == reply), None)
        if w is None:
            return
        try:
            ident = self.backend.identity(reply)
        except WorkerLost as err:
            w.dead = True
            logger.warning("a runner of pool %d could not start: %s", w.pool, err.message)
            return
        known = self._fingerprints.get(w.pool)
        if known is not None and ident.fingerprint != known:
            w.dead = True
            self.backend.kill(w.handle)
            logger.warning("the runner on %s measures on hardware %s, but pool %d measures "
                           "on %s; it is not used (give each kind of machine its own "
                           "resource and RunnerPool)", ident.host, ident.fingerprint,
                           w.pool, known)
            return
        self._fingerprints[w.pool] = ident.fingerprint
        w.identity = ident

    def _worker_lost(self, w: Worker, cause: str, cand: CandidateInFlight | None) -> None:
        """A worker died or stopped answering: its candidate goes to another worker (or
        fails after ``max_run_attempts``); the worker is replaced where its node is
        alive."""
        w.dead = True
        self.backend.kill(w.handle)
        for reply, x in list(self._running.items()):
            if x is w:
                del self._running[reply]
        logger.warning("%s", cause)
        if cand is not None:
            cand.causes.append(cause)
            if cand.attempts < self.max_run_attempts:
                self.stats["retries"] += 1
                self._queues[cand.pool].appendleft(cand)
            else:
                self._fail(cand, RUN_ERROR, "; ".join(cand.causes))
        if w.node is None or w.node in self.backend.alive_nodes():
            self.stats["replaced_actors"] += 1
            self.start_worker(w.pool, w.node)

    def _enforce_deadlines(self) -> None:
        now = self.clock()
        builds = self.builds
        for reply, (cand, deadline) in list(self._building.items()):
            if now >= deadline and builds is not None:
                del self._building[reply]
                builds.cancel(reply)
                failed = BuildResult(None, BUILD_TIMEOUT, "compiling took longer than the "
                                     f"build timeout of {builds.timeout:g} s", builds.timeout)
                self._finish(cand, failed, RunResult(None, BUILD_TIMEOUT, failed.error_msg))
        for w in list(self._running.values()):
            if w.busy is not None and now >= w.busy.deadline:
                cand, w.busy = w.busy, None
                self._worker_lost(w, f"the runner on {w.where()} did not answer within "
                                     f"{now - cand.dispatched:.0f} s", cand)
        for w in self.workers:
            if w.starting and now >= w.started + self.start_timeout:
                w.dead = True
                self.backend.kill(w.handle)
                logger.warning("a runner of pool %d did not start within %g s (no room on "
                               "the cluster for %s?)", w.pool, self.start_timeout,
                               dict(self.pools[w.pool].resources) or "one per node")

    def _drain_orphans(self) -> None:
        """Finish the candidates queued for a pool that has no worker left."""
        for i, queue in enumerate(self._queues):
            if queue and not any(w.pool == i and not w.dead for w in self.workers):
                while queue:
                    cand = queue.popleft()
                    causes = "; ".join(cand.causes) or "every runner of its pool is gone"
                    self._fail(cand, RUN_ERROR, f"no runner is left to measure it ({causes})")

    def _finish(self, cand: CandidateInFlight, build: BuildResult, run: RunResult) -> None:
        self._pending -= 1
        self._finished.append(FinishedCandidate(batch=cand.batch, index=cand.index,
                                                build=build, run=run))

    def _fail(self, cand: CandidateInFlight, kind: str, msg: str) -> None:
        self._finish(cand, BuildResult(b"", build_secs=cand.build_secs),
                     RunResult(None, kind, msg))


__all__ = ["Assignment", "BuildOutcome", "BuildService", "CandidateInFlight", "Dispatcher",
           "MAX_RUN_ATTEMPTS", "RunnerPool", "START_TIMEOUT", "Worker", "WorkerBackend",
           "WorkerIdentity", "WorkerLost"]

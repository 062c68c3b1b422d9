"""The cluster runner's dispatcher (irc.tune.cluster.dispatcher) without Ray: fake
workers and builds whose replies come at set times of a fake clock. Results come back in
the order they finish; a worker that dies or hangs costs its candidate one more attempt
elsewhere (then an error naming every cause) and is replaced where its node is alive;
builds, runs and worker starts have deadlines."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
from tune_workloads import matmul

from irc.core.diagnostics import TuningError
from irc.tune.cluster.dispatcher import (
    BuildOutcome,
    Dispatcher,
    RunnerPool,
    WorkerIdentity,
    WorkerLost,
)
from irc.tune.measure import BUILD_TIMEOUT, RUN_ERROR, BuildResult, MeasureInput, RunResult

FUNC = matmul(8)


class FakeClock:
    """Seconds that pass only when the fake cluster waits."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Spec:
    """How a fake worker behaves: ``start_secs`` to start (never when not ``starts``),
    ``secs`` per candidate, dying ``die_after`` seconds into a candidate, or hanging."""

    secs: float = 1.0
    start_secs: float = 1.0
    starts: bool = True
    die_after: float | None = None
    hang: bool = False
    fingerprint: str = "fp"


class FakeWorker:
    def __init__(self, name: str, node: str | None, spec: Spec):
        self.name, self.node, self.spec = name, node, spec


class FakeCluster:
    """The dispatcher's WorkerBackend and BuildService: every reply is ready at a time
    of ``clock``; :meth:`wait` moves the clock to the first ready one (or by the
    timeout). Workers take the next of ``specs`` (default: ``Spec()``); builds take the
    next of ``build_secs``."""

    timeout = 10.0  # seconds per build
    max_in_flight = 2

    def __init__(self, clock: FakeClock, specs=(), build_secs=(), nodes=("n0", "n1")):
        self.clock = clock
        self.specs = list(specs)
        self.build_secs = list(build_secs)
        self.nodes = list(nodes)
        self.replies: dict[int, tuple[float, object]] = {}
        self.sent = 0  # replies made
        self.builds_started = 0
        self.started: list[FakeWorker] = []
        self.killed: list[str] = []
        self.cancelled: list[int] = []
        self.measured: list[tuple[float, str, bytes]] = []  # (time, worker, module)

    def _reply(self, after: float, value: object) -> int:
        self.sent += 1
        self.replies[self.sent] = (self.clock.now + after, value)
        return self.sent

    def _take(self, reply: int):
        _, value = self.replies.pop(reply)
        if isinstance(value, Exception):
            raise value
        return value

    # -- WorkerBackend --------------------------------------------------------------------
    def start_worker(self, pool, node):
        spec = self.specs.pop(0) if self.specs else Spec()
        worker = FakeWorker(f"w{len(self.started)}", node, spec)
        self.started.append(worker)
        ident = WorkerIdentity(fingerprint=spec.fingerprint, host=worker.name,
                               node=node or "n0", pid=100 + len(self.started))
        return worker, self._reply(spec.start_secs if spec.starts else math.inf, ident)

    def identity(self, reply):
        return self._take(reply)

    def store(self, artifact):
        return artifact

    def measure(self, worker, inp, artifact, build_secs):
        self.measured.append((self.clock.now, worker.name, artifact))
        spec = worker.spec
        if spec.hang:
            return self._reply(math.inf, None)
        if spec.die_after is not None:
            return self._reply(spec.die_after, WorkerLost(f"{worker.name} died"))
        return self._reply(spec.secs, RunResult((spec.secs,), run_wall_secs=spec.secs))

    def result(self, reply):
        return self._take(reply)

    def kill(self, worker):
        self.killed.append(worker.name)

    def alive_nodes(self):
        return list(self.nodes)

    def wait(self, replies, timeout):
        at = {r: self.replies[r][0] for r in replies}
        limit = math.inf if timeout is None else self.clock.now + timeout
        first = min(at.values())
        if first > limit:
            assert timeout is not None, "waiting for ever"
            self.clock.now = limit
            return []
        self.clock.now = max(self.clock.now, first)
        return sorted((r for r in replies if at[r] <= self.clock.now), key=at.get)

    # -- BuildService ---------------------------------------------------------------------
    def submit(self, inp):
        secs = self.build_secs.pop(0)
        module = f"module-{self.builds_started}".encode()
        self.builds_started += 1
        return self._reply(secs, BuildOutcome(secs=secs, nbytes=len(module))), module

    def outcome(self, reply):
        return self._take(reply)

    def cancel(self, reply):
        self.cancelled.append(reply)
        self.replies.pop(reply, None)


def _inputs(n: int, target: str = "llvm") -> list[MeasureInput]:
    return [MeasureInput(FUNC, None, target) for _ in range(n)]


def _built(n: int) -> list[BuildResult]:
    return [BuildResult(f"c{k}".encode(), build_secs=0.5) for k in range(n)]


def _setup(specs=(), pool: RunnerPool | None = None, **options):
    """A fake clock and cluster (nodes n0 and n1, one "dev" resource) and a dispatcher
    with one pool (default: a worker per node)."""
    clock = FakeClock()
    cluster = FakeCluster(clock, specs)
    dispatcher = Dispatcher(cluster, run_timeout=options.pop("run_timeout", 5.0),
                            clock=clock, **options)
    dispatcher.add_pool(pool or RunnerPool(), {"dev": 1.0}, cluster.nodes)
    return clock, cluster, dispatcher


def _drain(dispatcher: Dispatcher, clock: FakeClock, n: int) -> list[tuple[float, int]]:
    """(time, index) of ``n`` finished candidates, as poll gives them."""
    out = []
    while len(out) < n:
        out += [(clock(), done.index) for done in dispatcher.poll()]
    return out


def test_results_come_in_the_order_they_finish():
    # One worker per node: w0 takes 3.5 s per candidate, w1 takes 1 s.
    clock, cluster, dispatcher = _setup([Spec(secs=3.5), Spec(secs=1.0)])
    batch = dispatcher.submit(_inputs(4), _built(4))
    assert (batch.number, batch.size) == (1, 4)
    assert _drain(dispatcher, clock, 4) == [(2.0, 1), (3.0, 2), (4.0, 3), (4.5, 0)]
    assert [(t, w) for t, w, _ in cluster.measured] == [
        (1.0, "w0"), (1.0, "w1"), (2.0, "w1"), (3.0, "w1")]
    assert [a.host for a in dispatcher.assignments] == ["w1", "w1", "w1", "w0"]
    assert dispatcher.stats["candidates"] == 4 and dispatcher.stats["retries"] == 0
    assert dispatcher.poll() == []  # nothing in flight: at once
    assert clock() == 4.5


def test_a_lost_worker_costs_its_candidate_one_more_attempt_and_is_replaced():
    clock, cluster, dispatcher = _setup([Spec(die_after=0.5), Spec(secs=1.0)])
    dispatcher.submit(_inputs(2), _built(2))
    done = []
    while len(done) < 2:
        done += [(clock(), d.index, d.run) for d in dispatcher.poll()]
    # w0 dies at 1.5 measuring c0; c0 waits at the front of the queue for w1 (free at 2).
    assert [(t, k) for t, k, _ in done] == [(2.0, 1), (3.0, 0)]
    assert all(run.run_secs == (1.0,) and not run.error_kind for _, _, run in done)
    assert [(t, w, m) for t, w, m in cluster.measured] == [
        (1.0, "w0", b"c0"), (1.0, "w1", b"c1"), (2.0, "w1", b"c0")]
    assert cluster.killed == ["w0"]
    # n0 is alive: w0 is replaced on it.
    assert [(w.name, w.node) for w in cluster.started] == [("w0", "n0"), ("w1", "n1"),
                                                           ("w2", "n0")]
    assert dispatcher.stats["retries"] == 1 and dispatcher.stats["replaced_actors"] == 1
    assert [w.dead for w in dispatcher.workers] == [True, False, False]


def test_a_worker_on_a_lost_node_is_not_replaced():
    clock, cluster, dispatcher = _setup([Spec(die_after=0.5), Spec(secs=1.0)])
    cluster.nodes.remove("n0")
    dispatcher.submit(_inputs(2), _built(2))
    assert _drain(dispatcher, clock, 2) == [(2.0, 1), (3.0, 0)]
    assert len(cluster.started) == 2 and dispatcher.stats["replaced_actors"] == 0


def test_a_candidate_lost_twice_fails_with_both_causes():
    pool = RunnerPool({"dev": 1})  # one worker, not pinned to a node
    clock, cluster, dispatcher = _setup([Spec(die_after=0.5), Spec(die_after=0.5)], pool)
    dispatcher.submit(_inputs(1), _built(1))
    (done,) = dispatcher.poll()
    assert clock() == 3.0  # died at 1.5; the replacement started at 2.5, died at 3
    assert done.run.error_kind == RUN_ERROR
    assert done.run.error_msg == ("the runner on host w0 (pid 101) died while measuring it: "
                                  "w0 died; the runner on host w1 (pid 102) died while "
                                  "measuring it: w1 died")
    assert cluster.killed == ["w0", "w1"] and len(cluster.started) == 3


def test_a_silent_worker_is_given_up_at_its_deadline():
    clock, cluster, dispatcher = _setup([Spec(hang=True), Spec(secs=1.0)], run_timeout=5.0)
    dispatcher.submit(_inputs(2), _built(2))
    assert [d.index for d in dispatcher.poll()] == [1] and clock() == 2.0
    assert dispatcher.poll(timeout=2.0) == [] and clock() == 4.0
    # c0 went to w0 at 1 with a deadline at 6: then w0 is killed, c0 goes to w1.
    (done,) = dispatcher.poll()
    assert (clock(), done.index, done.run.run_secs) == (7.0, 0, (1.0,))
    assert cluster.killed == ["w0"] and cluster.measured[-1] == (6.0, "w1", b"c0")


def test_builds_have_a_deadline_and_a_limit_in_flight():
    clock = FakeClock()
    cluster = FakeCluster(clock, build_secs=[2.0, 20.0, 1.0])
    dispatcher = Dispatcher(cluster, run_timeout=5.0, clock=clock)
    dispatcher.add_pool(RunnerPool({"dev": 1}), {"dev": 1.0}, cluster.nodes)
    with pytest.raises(TuningError, match="no build service"):
        dispatcher.submit(_inputs(1))
    dispatcher.builds = cluster
    dispatcher.submit(_inputs(3))
    # Two builds at once: c0 (2 s) and c1 (20 s); c2 starts when c0 is built.
    results = {}
    while len(results) < 3:
        results.update({d.index: (clock(), d) for d in dispatcher.poll()})
    assert [t for t, _ in (results[0], results[2])] == [3.0, 4.0]
    t1, d1 = results[1]
    assert t1 == 10.0 and len(cluster.cancelled) == 1
    assert d1.build.error_kind == d1.run.error_kind == BUILD_TIMEOUT
    assert d1.build.error_msg == "compiling took longer than the build timeout of 10 s"
    assert [m for _, _, m in cluster.measured] == [b"module-0", b"module-2"]
    assert dispatcher.stats["build_secs"] == 3.0


def test_without_a_worker_or_a_pool_candidates_fail_at_once():
    clock, cluster, dispatcher = _setup([Spec(starts=False)],
                                        RunnerPool({"dev": 1}, target="llvm"),
                                        start_timeout=30.0)
    dispatcher.submit(_inputs(1, "cuda"), _built(1))
    dispatcher.submit(_inputs(1), _built(1))
    first, second = dispatcher.poll(), dispatcher.poll()
    assert first[0].run.error_msg.startswith("no runner pool measures target cuda")
    assert first[0].run.error_kind == RUN_ERROR
    assert second[0].run.error_msg == ("no runner is left to measure it (every runner of "
                                       "its pool is gone)")
    assert clock() == 30.0 and cluster.killed == ["w0"]
    with pytest.raises(TuningError, match="no runner for target llvm could start"):
        dispatcher.wait_for_worker(0, "llvm")


def test_a_worker_on_other_hardware_is_not_used():
    clock, cluster, dispatcher = _setup([Spec(secs=1.0), Spec(fingerprint="other")])
    dispatcher.submit(_inputs(2), _built(2))
    assert _drain(dispatcher, clock, 2) == [(2.0, 0), (3.0, 1)]
    assert cluster.killed == ["w1"] and {w for _, w, _ in cluster.measured} == {"w0"}
    assert dispatcher.wait_for_worker(0, "llvm").handle.name == "w0"


def test_a_batch_waited_for_leaves_the_others_to_poll():
    clock, cluster, dispatcher = _setup([Spec(secs=1.0), Spec(secs=5.0)])
    first = dispatcher.submit(_inputs(1), _built(1))   # w0: done at 2
    second = dispatcher.submit(_inputs(2), _built(2))  # w1: done at 6; w0: done at 3
    done = dispatcher.wait_for(second)
    assert [(d.batch, d.index) for d in done] == [(second, 0), (second, 1)]
    assert clock() == 6.0
    assert [(d.batch, d.index) for d in dispatcher.poll()] == [(first, 0)]

"""Tuning on a Ray cluster: builds spread over the cluster's CPUs, measurements on runner
actors pinned to the machines that hold the target's hardware, one database written by
the tuner.

Ray (the ``cluster`` extra) is the execution engine, imported only in this package;
irc adds the tuning-specific parts:

- :class:`RayBuilder` (:mod:`~irc.tune.cluster.builder`) compiles each candidate as a
  Ray task (one CPU each) anywhere in the cluster. The compiled module stays in Ray's
  object store and goes from the building node straight to the measuring one. A build
  past ``timeout`` seconds is cancelled (``BUILD_TIMEOUT``); a build whose worker
  process dies is retried once by Ray, then recorded as ``BUILD_ERROR`` with the cause.
- :class:`RayRunner` (:mod:`~irc.tune.cluster.runner`) keeps long-lived runner actors,
  each a :class:`~irc.tune.LocalRunner` (so a crashing kernel kills only that runner's
  own measuring process) placed by a :class:`RunnerPool`: ``resources={"GPU": 1}`` for
  one actor per GPU, a custom resource naming a kind of machine (``ray start
  --resources='{"epyc-zen4": 1}'``), or by default one actor per node. Each actor
  measures one candidate at a time (timing on a shared device is noise); candidates go
  to an idle actor of the pool whose ``target`` matches theirs, and results come back as
  they finish. Every actor reports its hardware fingerprint (CPU model, features and
  cores, or GPU name); the records carry it, and a pool whose actors disagree is an
  error, so records of different hardware never mix.
- Faults: an actor that dies (its process killed, its node lost) or stops answering
  costs only the candidate it was measuring, which is tried once more on another actor
  of the pool (then recorded as ``RUN_ERROR`` with the cause); the dead actor is
  replaced when the cluster can place it again. The run goes on with the actors left.
- :class:`RayRunner` is an :class:`~irc.tune.measure.AsyncRunner`: the tuning engine
  keeps two rounds (of different tasks) in flight, so the actors measure one round while
  the search prepares the next, and records each candidate as soon as it is measured.
  The database stays on the tuner's machine, its single writer.

The queues, deadlines and lost actors are the business of the
:class:`~irc.tune.cluster.dispatcher.Dispatcher` (:mod:`~irc.tune.cluster.dispatcher`,
no Ray there: it reaches the cluster through a ``WorkerBackend`` and a
``BuildService``); :mod:`~irc.tune.cluster.runner` is its Ray adapter and
:mod:`~irc.tune.cluster.connection` connects.

:class:`RayCluster` connects once and gives both (``cluster.builder``,
``cluster.runner``); ``irc tune --cluster auto|local|ray://host:port`` uses it. The
README's "Tuning on a cluster" section shows a real cluster's set-up.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .builder import RayBuilder
from .connection import connect, import_ray
from .dispatcher import RunnerPool
from .runner import RayRunner, RunnerHost


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

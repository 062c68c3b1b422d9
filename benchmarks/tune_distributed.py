"""Tuning throughput on one machine against a Ray cluster (issue 15).

Tunes the bundled network (``examples/convnet.ir``, its loop functions as tasks) for
``--trials`` trials twice, on fresh databases, with the same search, cost model and
seed:

1. **local**: irc's default measuring set-up, a :class:`~irc.tune.LocalBuilder` (one
   build process per core) and one :class:`~irc.tune.LocalRunner`, as ``irc tune``
   without ``--cluster``;
2. **cluster**: a Ray instance on this machine with ``--runners`` "device hosts" (a
   custom resource each), builds as Ray tasks, one runner actor per device host, and the
   tuning engine keeping two rounds in flight (``irc tune --cluster``).

It prints trials per minute of each and their ratio, then the measured per-candidate
costs (build, the runner's measurement, Ray handing a runner a module of that size and
answering, and the search's own time on the tuner per candidate) and, from them, an
estimate of trials per minute on N machines like this one, each with one runner and all
its cores building:

    rate(N) = min(N * cores / build, N / (measure + transfer), 1 / search)   [per second]

the first two terms are the cluster's build and measuring capacity; the last is the tuner
itself (search, cost model, records), which one machine does for the whole cluster.

On this 2-core machine both set-ups share the same two cores, so the cluster cannot be
much faster here: it can only overlap the search with measuring. Run with nothing else
busy: ``python benchmarks/tune_distributed.py [--trials 96] [--runners 2]``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

EXAMPLE = pathlib.Path(__file__).resolve().parent.parent / "examples" / "convnet.ir"


def _tasks():
    from irc.cli.models import load_model
    from irc.core.target import Target
    from irc.tune.graph import graph_tasks, prepare_graph

    target = Target.canon("llvm")
    return graph_tasks(prepare_graph(load_model(str(EXAMPLE)), None, target), target)


class _Echo:
    def size(self, blob: bytes) -> int:
        return len(blob)


def _transfer_secs(ray, nbytes: int, calls: int = 20) -> float:
    """Seconds Ray takes to hand an actor a compiled module of ``nbytes`` and answer
    (an object put, an actor call, the reply), median of ``calls``."""
    echo = ray.remote(num_cpus=0)(_Echo).remote()
    ray.get(echo.size.remote(b""))
    times = []
    for _ in range(calls):
        blob = os.urandom(max(1, nbytes))
        t0 = time.perf_counter()
        ray.get(echo.size.remote(ray.put(blob)))
        times.append(time.perf_counter() - t0)
    ray.kill(echo)
    return sorted(times)[len(times) // 2]


def _tune(tasks, trials: int, per_round: int, components, work: str):
    from irc.tune.database import JSONDatabase
    from irc.tune.measure import measuring_hardware
    from irc.tune.options import TuneConfig
    from irc.tune.tuner import tune_tasks

    os.makedirs(work, exist_ok=True)
    db = JSONDatabase.from_work_dir(work, measuring_hardware(components.runner, "llvm"))
    t0 = time.perf_counter()
    summary, engine = tune_tasks(tasks, db, TuneConfig(trials, num_trials_per_iter=per_round,
                                                       verbose=0, seed=0), components)
    wall = time.perf_counter() - t0
    n = len(db.get_all_records())
    db.close()
    return summary, engine, wall, n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=96, help="trials per set-up (default 96)")
    ap.add_argument("--per-round", type=int, default=16,
                    help="candidates measured per round (default 16)")
    ap.add_argument("--runners", type=int, default=2,
                    help="device hosts (runner actors) of the local cluster (default 2)")
    args = ap.parse_args()

    from irc.core.target import host_cpu_model, host_num_cores
    from irc.tune.builder import LocalBuilder
    from irc.tune.cluster import RayCluster, RunnerPool
    from irc.tune.ms import NETWORK_RUNNER_OPTIONS
    from irc.tune.options import TuneComponents
    from irc.tune.runner import LocalRunner

    cores = host_num_cores()
    print(f"# tune_distributed: {EXAMPLE.name}, {args.trials} trials per set-up, "
          f"{args.per_round} per round; {host_cpu_model()}, {cores} cores "
          f"({time.strftime('%Y-%m-%d')})")
    tasks = _tasks()
    print(f"# {len(tasks)} tasks: {', '.join(t.name for t in tasks)}")

    rows = []
    with tempfile.TemporaryDirectory(prefix="irc-bench-") as tmp:
        builder = LocalBuilder()
        runner = LocalRunner(**NETWORK_RUNNER_OPTIONS)
        try:
            summary, engine, wall, n = _tune(tasks, args.trials, args.per_round,
                                             TuneComponents(builder=builder, runner=runner),
                                             os.path.join(tmp, "local"))
        finally:
            builder.close()
            runner.close()
        search_local = max(0.0, wall - engine.measure_seconds)
        rows.append(("local (1 builder pool, 1 runner)", n, wall))

        t0 = time.perf_counter()
        with RayCluster("local", [RunnerPool({"device_host": 1}, target="llvm")],
                        init_options={"num_cpus": cores,
                                      "resources": {"device_host": args.runners}},
                        **NETWORK_RUNNER_OPTIONS) as cluster:
            start = time.perf_counter() - t0
            comps = TuneComponents(builder=cluster.builder, runner=cluster.runner)
            _, _, cwall, cn = _tune(tasks, args.trials, args.per_round, comps,
                                             os.path.join(tmp, "cluster"))
            stats = dict(cluster.runner.stats)
            transfer = _transfer_secs(cluster.ray, stats.get("artifact_bytes", 0) //
                                      max(1, stats["candidates"]))
        rows.append((f"Ray cluster ({args.runners} runners, Ray builds)", cn, cwall))

    print()
    print(f"{'set-up':<40} {'trials':>6} {'wall s':>8} {'trials/min':>11} {'vs local':>9}")
    base = rows[0][1] / rows[0][2] * 60
    for name, n, wall in rows:
        rate = n / wall * 60
        print(f"{name:<40} {n:>6} {wall:>8.1f} {rate:>11.1f} {rate / base:>8.2f}x")
    print(f"(starting the local Ray instance took {start:.1f} s, not counted)")

    k = max(1, stats["candidates"])
    build = stats["build_secs"] / k
    measure = stats["run_secs"] / k
    trip = stats["round_trip_secs"] / k
    search = search_local / max(1, rows[0][1])
    print()
    print("per candidate (cluster run; search from the local run; builds, runner and "
          "tuner shared 2 cores):")
    print(f"  build {build * 1e3:.1f} ms; measure on the runner {measure * 1e3:.1f} ms; "
          f"handing a runner a module ({stats.get('artifact_bytes', 0) // k} bytes) and "
          f"getting the answer {transfer * 1e3:.1f} ms; search on the tuner "
          f"{search * 1e3:.1f} ms")
    print(f"  (dispatch to result seen by the tuner: {trip * 1e3:.1f} ms, which includes "
          "results waiting while the tuner searched)")
    print(f"  retries {stats['retries']}, runners replaced {stats['replaced_actors']}")
    trip = measure + transfer
    print()
    print("estimated trials/min on N machines like this one (one runner and "
          f"{cores} build cores each):")
    print(f"{'N':>4} {'build-bound':>12} {'measure-bound':>14} {'tuner-bound':>12} "
          f"{'estimate':>9}")
    for n_machines in (1, 2, 4, 8, 16, 32, 64):
        b = n_machines * cores / build * 60 if build > 0 else float("inf")
        m = n_machines / trip * 60 if trip > 0 else float("inf")
        s = 1 / search * 60 if search > 0 else float("inf")
        print(f"{n_machines:>4} {b:>12.0f} {m:>14.0f} {s:>12.0f} {min(b, m, s):>9.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

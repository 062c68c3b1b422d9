"""The tuned build checked against the default one inside the network.

A tuned kernel wins its task's measurements, which time it alone (with cold caches by
default). Inside the network it runs between other kernels, with their data in the
caches and its threads just woken, and it can lose there: on ResNet-18, a stride-2
convolution whose record beat the default in isolation took 389 µs in the network
against 276 µs for the default kernel. :func:`not_faster_in_network` builds both
executables, runs the graph function on the same seeded random inputs in alternating
profiled rounds (``vm.profile``), and names the tuned kernels whose time, divided by the
default kernel's of the same round, does not have a median below ``1 - MARGIN``;
``compile_tuned`` then builds again with those kernels' records set aside
(:class:`RecordsWithout`), so they keep the default schedule. Last,
:func:`not_faster_as_a_whole` times the graph function itself in both builds
(alternating rounds again, without profiling, as users run it): a tuned build that is
not faster than the default one as a whole is not kept — tuning never makes the
network slower.

The check is asymmetric on purpose: a tuned kernel must win clearly to replace the
default schedule, and a tie goes to the default. The default schedules are built for
the caches (packed panels, blocked reductions sized to L1 and L2); a candidate that
wins cold, alone, by a few percent may lean harder on the shared L3 and memory. On a
shared 2-core Zen 4, ResNet-50 builds that kept every tuned kernel within 2% of its
default ran 0.98-1.04x the default build in same-process comparisons and once 1.23x in
a benchmark run; in a slow phase of that machine, one such build's stage-4 Winograd
product took 1.44x its default's time.

``compile_tuned`` runs the check on the CPU for a graph function whose inputs
``Executable.random_inputs`` can make (static shapes); otherwise (or when nothing was
tuned) the tuned build is kept as it is.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from ..core.module import IRModule
from ..tir.stmt import PrimFunc
from ..vm import VirtualMachine

logger = logging.getLogger(__name__)

# A tuned kernel is kept only when its median time in the network is below the default
# kernel's by more than this fraction (see the module docstring).
MARGIN = 0.02
# Profiled rounds per build (alternating), and runs per round.
ROUNDS = 9
RUNS_PER_ROUND = 3


class RecordsWithout:
    """A database view that hides the records of some workloads (their loop functions
    then keep the default schedule); everything else is the wrapped database's."""

    def __init__(self, database: Any, hidden: set[str]):
        self.database = database
        self.hidden = set(hidden)

    def best_record(self, key: str) -> Any:
        """The wrapped database's best record of ``key``, or None when it is hidden."""
        return None if key in self.hidden else self.database.best_record(key)

    def get_top_k(self, key: str, k: int) -> list[Any]:
        """The wrapped database's ``k`` fastest records of ``key``; none when hidden."""
        return [] if key in self.hidden else self.database.get_top_k(key, k)

    @property
    def location(self) -> str:
        """The wrapped database's location."""
        return getattr(self.database, "location", "")


def _kernel_times(vms: list[VirtualMachine], entry: str, args: list[np.ndarray]
                  ) -> list[dict[str, list[float]]]:
    """Seconds per run of every kernel in each round, for each VM (rounds alternate, so
    a slow moment of the machine hits both builds)."""
    samples: list[dict[str, list[float]]] = [{} for _ in vms]
    for _ in range(ROUNDS):
        for vm, acc in zip(vms, samples):
            report = vm.profile(entry, *args, repeat=RUNS_PER_ROUND, warmup=1)
            for k in report.kernels:
                acc.setdefault(k.name, []).append(k.seconds / report.runs)
    return samples


def not_faster_in_network(default_ex: Any, tuned_ex: Any, tuned_names: set[str],
                          entry: str, args: list[np.ndarray]) -> set[str]:
    """The kernels among ``tuned_names`` that do not run faster by ``MARGIN`` in
    ``tuned_ex`` than in ``default_ex`` when the graph function ``entry`` runs on
    ``args`` (see the module docstring); CPU executables. A kernel is compared round by
    round (the two builds' times of one round are neighbours in time) and judged by the
    median of the ratios: comparing the two medians instead set aside about a third of
    ResNet-50's tuned kernels that a longer profile found faster than their defaults."""
    default_vm, tuned_vm = VirtualMachine(default_ex), VirtualMachine(tuned_ex)
    before, after = _kernel_times([default_vm, tuned_vm], entry, args)
    not_faster = set()
    for name in tuned_names:
        b, a = before.get(name), after.get(name)
        if not b or not a or len(a) != len(b):
            continue
        ratio = float(np.median([x / y for x, y in zip(a, b) if y > 0] or [1.0]))
        if ratio > 1 - MARGIN:
            not_faster.add(name)
            logger.info("tuned kernel %s: %.0f us in the network against %.0f us for the "
                        "default schedule (%.2fx, median of %d rounds); the default is kept",
                        name, np.median(a) * 1e6, np.median(b) * 1e6, ratio, len(a))
    return not_faster


def _run_times(vms: list[VirtualMachine], entry: str, args: list[np.ndarray]
               ) -> list[float]:
    """Median seconds of one call of ``entry`` for each VM, in alternating rounds."""
    samples: list[list[float]] = [[] for _ in vms]
    for _ in range(ROUNDS):
        for vm, acc in zip(vms, samples):
            fn = vm[entry]
            fn(*args)  # warm-up: caches, the thread team
            for _ in range(RUNS_PER_ROUND):
                t0 = time.perf_counter()
                fn(*args)
                acc.append(time.perf_counter() - t0)
    return [float(np.median(acc)) for acc in samples]


def not_faster_as_a_whole(default_ex: Any, tuned_ex: Any, entry: str,
                          args: list[np.ndarray]) -> bool:
    """True when the graph function ``entry`` does not run faster in ``tuned_ex`` than
    in ``default_ex`` (median of alternating rounds); CPU executables."""
    before, after = _run_times([VirtualMachine(default_ex), VirtualMachine(tuned_ex)],
                               entry, args)
    if after >= before:
        logger.info("the tuned build runs %s in %.3f ms against %.3f ms for the default "
                    "build; the default build is kept", entry, after * 1e3, before * 1e3)
        return True
    return False


def tuned_callees(prepared: IRModule, tuned: IRModule) -> set[str]:
    """Names of the loop functions ``apply_database`` replaced in place (same name, a
    tuned function)."""
    before = {gv.name_hint: f for gv, f in prepared.functions.items()
              if isinstance(f, PrimFunc)}
    return {gv.name_hint for gv, f in tuned.functions.items()
            if isinstance(f, PrimFunc) and gv.name_hint in before
            and f is not before[gv.name_hint] and f.attrs.get("tir.is_scheduled")}


__all__ = ["MARGIN", "RecordsWithout", "not_faster_as_a_whole", "not_faster_in_network",
           "tuned_callees"]

"""Per-kernel profiles of VM functions: ``vm.profile("main", x)``.

A function that runs as a native plan (static, straight-line, on the CPU) is profiled by
a timed copy of the plan, which reads the clock between kernels while they run back to
back (:mod:`irc.vm.native_plan`). For other functions the VM prepares a profiled copy of
the function (and of every function it calls) whose kernel and runtime-function calls
are timed one by one, synchronizing the device after each on a GPU. Everything else the
bytecode does (argument checks, allocations, tuples, shape arithmetic) is the VM's own
time. The report sums each kernel over its calls and
over ``repeat`` runs of the function, so it shows where a model's time goes:

    >>> print(vm.profile("main", x))          # doctest: +SKIP
    kernel                                 calls        ms   us/call      %   GFLOPS
    fused_conv2d_add_relu                      8     4.210     526.2   38.1    187.3
    ...
    VM (checks, allocations, dispatch)               0.120                1.1
    total                                           11.050              100.0

A kernel's GFLOPS are its floating-point operations (counted on its compiled loops,
``Executable.kernel_flops``: :func:`irc.tir.analysis.flop_count`, where a partial tile's
predicate keeps only the iterations it runs) over its time; library and runtime
functions, and kernels whose count is unknown (symbolic shapes), show none.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class KernelStat:
    """Time spent in one kernel or runtime function, summed over the profiled runs."""

    name: str
    kind: str  # "kernel" (compiled by irc) or "packed" (a library or runtime function)
    calls: int = 0
    seconds: float = 0.0
    # Floating-point operations of one call, where known.
    flops: float | None = None

    @property
    def mean_seconds(self) -> float:
        """Seconds per call."""
        return self.seconds / self.calls if self.calls else 0.0

    @property
    def gflops(self) -> float | None:
        """Billions of floating-point operations per second, where the count is known
        (and not zero) and the kernel took time."""
        if not self.flops or not self.seconds:
            return None
        return self.flops * self.calls / self.seconds / 1e9


class Recorder:
    """What the profiled closures write into: one :class:`KernelStat` per name."""

    def __init__(self, sync: Callable[[], Any] | None = None):
        self.stats: dict[str, KernelStat] = {}
        self.sync = sync

    def stat(self, name: str, kind: str) -> KernelStat:
        """The entry of kernel or runtime function ``name`` (made on first use)."""
        return self.stats.setdefault(name, KernelStat(name, kind))

    def timed(self, name: str, kind: str, call: Callable[..., Any]) -> Callable[..., Any]:
        """``call`` wrapped so each call adds its wall time to ``name``'s entry."""
        stat = self.stat(name, kind)
        sync = self.sync
        clock = time.perf_counter

        def run(*args: Any) -> Any:
            t0 = clock()
            out = call(*args)
            if sync is not None:
                sync()
            stat.seconds += clock() - t0
            stat.calls += 1
            return out
        return run


@dataclass
class ProfileReport:
    """The result of :meth:`irc.vm.VirtualMachine.profile`.

    ``kernels`` are sorted by total time, largest first, with times summed over ``runs``
    runs of the function; ``run_seconds`` holds each run's wall time. ``str(report)`` (or
    :meth:`table`) formats it; :meth:`as_dict` gives plain data (for JSON)."""

    function: str
    runs: int
    run_seconds: list[float]
    kernels: list[KernelStat] = field(default_factory=list)

    @property
    def total_seconds(self) -> float:
        """Wall time of all profiled runs together."""
        return sum(self.run_seconds)

    @property
    def kernel_seconds(self) -> float:
        """Time inside kernels and runtime functions, all runs together."""
        return sum(k.seconds for k in self.kernels)

    @property
    def vm_seconds(self) -> float:
        """The VM's own time (checks, allocations, dispatch), all runs together."""
        return max(0.0, self.total_seconds - self.kernel_seconds)

    def table(self, top: int | None = None) -> str:
        """The report as a text table; ``top`` keeps the largest kernels (the rest are
        summed into one line)."""
        total = self.total_seconds or 1e-30
        per_run = 1e3 / max(self.runs, 1)
        shown = self.kernels if top is None else self.kernels[:top]
        rate = any(k.gflops is not None for k in shown)
        lines = [f"profile of {self.function!r}: {self.runs} run(s); times per run",
                 f"{'kernel':48s} {'calls':>5s} {'ms':>9s} {'us/call':>9s} {'%':>6s}"
                 + (f" {'GFLOPS':>8s}" if rate else "")]
        for k in shown:
            name = k.name if k.kind == "kernel" else f"{k.name} [packed]"
            g = k.gflops
            lines.append(f"{name[:48]:48s} {k.calls // max(self.runs, 1):5d} "
                         f"{k.seconds * per_run:9.3f} {k.mean_seconds * 1e6:9.1f} "
                         f"{100 * k.seconds / total:6.1f}"
                         + (f" {g:8.1f}" if rate and g is not None else ""))
        rest = self.kernels[len(shown):]
        if rest:
            s = sum(k.seconds for k in rest)
            lines.append(f"{f'({len(rest)} more kernels)':48s} {'':5s} {s * per_run:9.3f} "
                         f"{'':9s} {100 * s / total:6.1f}")
        lines.append(f"{'VM (checks, allocations, dispatch)':48s} {'':5s} "
                     f"{self.vm_seconds * per_run:9.3f} {'':9s} "
                     f"{100 * self.vm_seconds / total:6.1f}")
        lines.append(f"{'total':48s} {'':5s} {self.total_seconds * per_run:9.3f} "
                     f"{'':9s} {100.0:6.1f}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def as_dict(self) -> dict[str, Any]:
        """Plain data: the function, runs, per-run seconds and each kernel's figures."""
        return {"function": self.function, "runs": self.runs,
                "run_seconds": list(self.run_seconds),
                "kernels": [{"name": k.name, "kind": k.kind, "calls": k.calls,
                             "seconds": k.seconds, "flops": k.flops}
                            for k in self.kernels]}

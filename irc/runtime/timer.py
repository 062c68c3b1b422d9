"""``time_evaluator``: timing compiled kernels the way TVM users expect.

``f = mod.time_evaluator(name, dev, number=10, repeat=1, min_repeat_ms=0)`` returns a
callable; ``f(*args)`` runs the kernel once to warm up, then ``repeat`` times measures
``number`` back-to-back runs and records the mean seconds per run. When a measurement
lasts less than ``min_repeat_ms``, ``number`` grows (by at least the golden ratio, or to
what the last measurement predicts) and that repeat is measured again. Arguments are
checked once, before timing; the timed loop calls native code directly.

On a CUDA device (``dev = irc.cuda(i)``) a measurement is the time between two CUDA
events recorded on the legacy default stream around the ``number`` calls (after the
warm-up has finished on the GPU), so it counts the kernels' execution, not the Python
time of queueing them, as long as the calls queue their work on that stream (or on a
stream that waits for it).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.diagnostics import IRCError
from . import cuda_backend

_GOLDEN = 1.618


@dataclass(frozen=True)
class BenchmarkResult:
    """Seconds per run of each repeat (``results``) and their statistics."""

    results: tuple[float, ...]
    number: int = 1

    @property
    def mean(self) -> float:
        """Mean seconds per run over the repeats."""
        return statistics.fmean(self.results)

    @property
    def median(self) -> float:
        """Median seconds per run over the repeats."""
        return statistics.median(self.results)

    @property
    def std(self) -> float:
        """Standard deviation of the repeats (seconds)."""
        return statistics.pstdev(self.results) if len(self.results) > 1 else 0.0

    @property
    def min(self) -> float:
        """Fastest repeat (seconds per run)."""
        return min(self.results)

    @property
    def max(self) -> float:
        """Slowest repeat (seconds per run)."""
        return max(self.results)

    def __repr__(self) -> str:
        return (f"BenchmarkResult(mean={self.mean * 1e3:.4f} ms, median={self.median * 1e3:.4f}"
                f" ms, std={self.std * 1e3:.4f} ms, repeats={len(self.results)}, "
                f"number={self.number})")


class TimeEvaluator:
    """The callable ``time_evaluator`` returns (see the module docstring)."""

    def __init__(self, function, device: Any, number: int, repeat: int, min_repeat_ms: float,
                 cooldown_interval_ms: float = 0, repeats_to_cooldown: int = 1):
        if number < 1 or repeat < 1:
            raise IRCError(f"time_evaluator needs number >= 1 and repeat >= 1, got "
                           f"number={number}, repeat={repeat}")
        if min_repeat_ms < 0:
            raise IRCError("time_evaluator needs min_repeat_ms >= 0")
        self.function = function
        self.device = device
        self.number = number
        self.repeat = repeat
        self.min_repeat_ms = min_repeat_ms
        self.cooldown_interval_ms = cooldown_interval_ms
        self.repeats_to_cooldown = max(1, repeats_to_cooldown)
        self.calls = 0  # native calls made by the last evaluation (warm-up included)

    def __call__(self, *args: Any) -> BenchmarkResult:
        fn = self.function
        if hasattr(fn, "prepare") and hasattr(fn, "c_function"):
            # A compiled kernel: check arguments once, then time the native call alone.
            native, staged = fn.prepare(args)
            c = fn.c_function

            def run_batch(count: int) -> None:
                failed = 0
                for _ in range(count):
                    failed |= c(*native)
                if failed:
                    raise fn.module._error(fn.name, c(*native) or failed)
        else:
            # Any other callable (a VM function): time the whole call.
            staged = []

            def run_batch(count: int) -> None:
                for _ in range(count):
                    fn(*args)
        measure = _clock(self.device, run_batch)
        calls = 1
        run_batch(1)  # warm-up: page faults, lazy binding, thread pool start, module load
        sync = getattr(self.device, "sync", None)
        if sync is not None:
            sync()  # the warm-up must not overlap the first measurement
        results = []
        number = self.number
        for r in range(self.repeat):
            duration_ms = 0.0
            while True:
                if duration_ms > 0.0:
                    number = int(max(self.min_repeat_ms / (duration_ms / number) + 1,
                                     number * _GOLDEN))
                duration_ms = measure(number)
                calls += number
                if duration_ms >= self.min_repeat_ms:
                    break
            results.append(duration_ms / 1e3 / number)
            if self.cooldown_interval_ms > 0 and (r + 1) % self.repeats_to_cooldown == 0:
                time.sleep(self.cooldown_interval_ms / 1e3)
        for orig, copy in staged:
            if orig is not None:
                np.copyto(orig, copy)
        self.calls = calls
        return BenchmarkResult(tuple(results), number)


def _clock(device: Any, run_batch):
    """``measure(count)``: milliseconds that ``run_batch(count)`` takes on ``device``
    (CUDA events on a GPU; the host's clock, then ``device.sync()``, elsewhere)."""
    if getattr(device, "device_type", None) == "cuda":
        index = device.index
        start = cuda_backend.Event(index)
        end = cuda_backend.Event(index)

        def measure_gpu(count: int) -> float:
            start.record()
            run_batch(count)
            end.record()
            end.synchronize()
            return start.elapsed_time(end)
        return measure_gpu
    sync = getattr(device, "sync", None)
    perf = time.perf_counter

    def measure_host(count: int) -> float:
        t0 = perf()
        run_batch(count)
        if sync is not None:
            sync()
        return (perf() - t0) * 1e3
    return measure_host


def time_evaluator(function, device: Any = None, number: int = 10, repeat: int = 1,
                   min_repeat_ms: float = 0, cooldown_interval_ms: float = 0,
                   repeats_to_cooldown: int = 1) -> TimeEvaluator:
    """A callable timing ``function`` (a compiled :class:`irc.runtime.Function`, timed
    natively, or any Python callable such as a VM function), with TVM's semantics of
    ``number``, ``repeat`` and ``min_repeat_ms``."""
    return TimeEvaluator(function, device, number, repeat, min_repeat_ms,
                         cooldown_interval_ms, repeats_to_cooldown)

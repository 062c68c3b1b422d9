"""The ways the fuzzer builds a model with irc, each a path a user takes from an ONNX
model to results: import (``from_onnx``), then

- ``default``: ``irc.compile`` with the default pipeline;
- ``auto``: ``irc.compile(..., dispatch="auto")``, library dispatch where measured faster;
- ``tuned``: the build with tuning records (``irc compile --records``): every tuning task
  of the model gets one record of a schedule sampled from its search space, as a tuning
  run could have kept (a sampled schedule that does not compile alone is never
  recorded, as the tuner's builder would have failed it), and the model is built with
  the best records in place — without ``compile_relax``'s fallbacks, so a record that
  replays but does not build is seen.

then runs the executable's ``main`` in the VM on the model's inputs.
"""

from __future__ import annotations

import os
import random
import tempfile
from typing import Any

import numpy as np

from ...codegen import build as build_kernel
from ...core.diagnostics import IRCError
from ...core.target import Target
from ...frontend.onnx import from_onnx
from ...tune.database import JSONDatabase
from ...tune.graph import apply_database, default_schedules, graph_tasks, prepare_graph
from ...tune.measure import apply_trace
from ...tune.record import TuningRecord, target_identity
from ...tune.space.sketch import SpaceGenerator
from ...vm import VirtualMachine, link
from ...vm import compile as irc_compile
from .values import np_dtype

BUILDS = ("default", "auto", "tuned")
# Schedules sampled per tuning task until one compiles.
SAMPLES_PER_TASK = 4


def build(model: Any, path: str, target: str = "llvm", seed: int = 0) -> Any:
    """The executable of ``model`` built along ``path`` (one of ``BUILDS``)."""
    mod = from_onnx(model)
    if path == "default":
        return irc_compile(mod, target)
    if path == "auto":
        return irc_compile(mod, target, dispatch="auto")
    if path == "tuned":
        return _build_tuned(mod, Target.canon(target), seed)
    raise ValueError(f"unknown build {path!r}; the builds are {', '.join(BUILDS)}")


def _build_tuned(mod: Any, target: Target, seed: int) -> Any:
    prepared = prepare_graph(mod, None, target)
    rng = random.Random(seed)
    space = SpaceGenerator(target)
    name, fingerprint = target_identity(target)
    with tempfile.TemporaryDirectory(prefix="irc-fuzz-records-") as work:
        with JSONDatabase(os.path.join(work, "records.json")) as db:
            for task in graph_tasks(prepared, target):
                trace = _sampled_trace(space, task.func, target, rng)
                if trace is None:
                    continue
                workload = db.commit_workload(task.workload)
                db.commit_record(TuningRecord(workload_key=workload.key, trace=trace,
                                              run_secs=(1e-3,), target=name,
                                              fingerprint=fingerprint, seed=seed))
            return link(default_schedules(apply_database(prepared, db, target), target),
                        target)


def _sampled_trace(space: SpaceGenerator, func: Any, target: Target, rng: random.Random
                   ) -> Any:
    """The trace of a schedule of ``func`` sampled from ``space`` that compiles (None
    when none of ``SAMPLES_PER_TASK`` samples does)."""
    sketches = space.generate(func, seed=rng.randrange(1, 2 ** 31 - 1))
    for _ in range(SAMPLES_PER_TASK):
        cand = space.sample(func, sketches[rng.randrange(len(sketches))], rng)
        if cand is None:
            continue
        try:
            build_kernel(apply_trace(func, cand.trace_json), target=target, name="main")
        except IRCError:
            continue
        return cand.trace_json
    return None


def run(executable: Any, model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The outputs of ``executable``'s ``main`` on ``feeds`` (by the model's input
    names), as arrays of the dtypes the VM's tensors declare."""
    machine = VirtualMachine(executable)
    init = {t.name for t in model.graph.initializer}
    args = [feeds[i.name] for i in model.graph.input if i.name not in init]
    out = machine["main"](*args)
    return [_array(t) for t in (out if isinstance(out, (tuple, list)) else [out])]


def _array(value: Any) -> np.ndarray:
    """A VM result as an array of its declared dtype (a bfloat16 tensor's numpy() gives
    its bits)."""
    arr = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
    declared = getattr(value, "dtype", None)
    if isinstance(declared, str) and declared == "bfloat16" and arr.dtype == np.uint16:
        return arr.view(np_dtype("bfloat16"))
    return arr


__all__ = ["BUILDS", "SAMPLES_PER_TASK", "build", "run"]

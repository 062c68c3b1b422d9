"""The search space of one loop function: sketches from rules, candidates from sketches.

:class:`SpaceGenerator` applies its sketch rules (:class:`~irc.tune.space.rules.SketchRule`)
to a function (each rule to every
block, consumers first, then the next rule; the root-level rule once per schedule), which
yields the **sketches**: schedules whose sampling instructions leave tile sizes, unroll
depth, parallel extent and compute locations open. A **candidate** is a sketch's trace
replayed with concrete decisions (freshly sampled, or a mutation of another
candidate's) followed by the postprocessors; it carries the scheduled function and its
full trace (what a tuning record stores and what the builder replays).

Default rules, postprocessors and mutators depend on the target (CPU or GPU; see
:func:`default_rules`, :func:`~irc.tune.space.postproc.default_postprocs`,
:func:`~irc.tune.space.mutators.default_mutators`).
"""

from __future__ import annotations

import logging
import random
from typing import Any, Sequence

from ...core.diagnostics import IRCError, ScheduleError, TuningError
from ...tir.schedule import Schedule, Trace
from ...tir.schedule.block_info import has_block
from ...tir.stmt import PrimFunc
from ..record import trace_key
from .analysis import TargetInfo, all_block_names
from .mutators import TraceMutator, default_mutators
from .postproc import Postproc, default_postprocs
from .rules import (
    AddRFactor,
    AutoInline,
    CrossThreadReduction,
    ParallelizeVectorizeUnroll,
    RandomComputeLocation,
    SketchRule,
)
from .tiling import MultiLevelTiling, ReuseConfig

logger = logging.getLogger(__name__)


def default_rules(info: TargetInfo) -> list[SketchRule]:
    """The sketch rules of a target, in the order they are applied."""
    if info.is_gpu:
        rules: list[SketchRule] = [
            AutoInline(into_producer=True, into_consumer=True, disallow_if_then_else=False),
            CrossThreadReduction(),
            MultiLevelTiling("SSSRRSRS", ("blockIdx.x", "vthread.x", "threadIdx.x"),
                             max_innermost_factor=64,
                             reuse_read=ReuseConfig("must", (4,), "shared"),
                             reuse_write=ReuseConfig("must", (3,), "local")),
            AutoInline(into_producer=True, into_consumer=True, disallow_if_then_else=False),
            ParallelizeVectorizeUnroll(unroll_max_steps=(0, 16, 64, 512, 1024)),
        ]
    else:
        rules = [
            AutoInline(into_producer=False, into_consumer=True, disallow_if_then_else=True),
            AddRFactor(),
            MultiLevelTiling("SSRSRS", max_innermost_factor=64,
                             reuse_write=ReuseConfig("may", (1, 2), "local"),
                             vector_layout=True),
            ParallelizeVectorizeUnroll(),
            RandomComputeLocation(),
        ]
    for r in rules:
        r.initialize(info)
    return rules


class Sketch:
    """One sketch: its index, its trace (decisions included, postprocessing excluded)
    and the rules' schedule it came from."""

    __slots__ = ("index", "trace", "sch")

    def __init__(self, index: int, trace: Trace, sch: Schedule):
        self.index = index
        self.trace = trace
        self.sch = sch

    def __repr__(self) -> str:
        return f"Sketch({self.index}, {len(self.trace)} instructions)"


class Candidate:
    """A sampled program: ``func`` (scheduled; None when it was made in a worker
    process), its full ``trace`` (postprocessing included; a Trace, or built from
    ``trace_json``) and the index of its ``sketch``; ``features`` and ``score`` are
    filled by the search."""

    __slots__ = ("func", "_trace", "sketch", "features", "score", "_json", "_key")

    def __init__(self, func: PrimFunc | None, trace: Trace | None, sketch: int,
                 trace_json: Any = None, features: Any = None):
        if trace is None and trace_json is None:
            raise TuningError("a candidate needs its trace")
        self.func = func
        self._trace = trace
        self.sketch = sketch
        self.features: Any = features
        self.score = 0.0
        self._json: Any = trace_json
        self._key: str | None = None

    @property
    def trace(self) -> Trace:
        """The full trace."""
        if self._trace is None:
            self._trace = Trace.from_json(self._json)
        return self._trace

    @property
    def trace_json(self) -> Any:
        """The trace as JSON data (what records store)."""
        if self._json is None:
            self._json = self._trace.to_json()
        return self._json

    @property
    def trace_key(self) -> str:
        """See :func:`irc.tune.record.trace_key`."""
        if self._key is None:
            self._key = trace_key(self.trace_json)
        return self._key

    def sketch_trace(self) -> Trace:
        """The trace without its postprocessing part (what mutation replays)."""
        insts = []
        for inst in self.trace.insts:
            if inst.kind.name == "EnterPostproc":
                break
            insts.append(inst)
        keep = set(insts)
        return Trace(insts, {i: d for i, d in self.trace.decisions.items() if i in keep})


class SpaceGenerator:
    """Rules, postprocessors and mutators for a target (defaults when None); see the
    module docstring. ``generate(func)`` makes the sketches; ``sample`` and ``mutate``
    make candidates."""

    def __init__(self, target: Any = "llvm", rules: Sequence[SketchRule] | None = None,
                 postprocs: Sequence[Postproc] | None = None,
                 mutators: dict[TraceMutator, float] | None = None):
        self.info = TargetInfo.of(target)
        self.rules = list(rules) if rules is not None else default_rules(self.info)
        for r in self.rules:
            if r.info is None:
                r.initialize(self.info)
        self.postprocs = list(postprocs) if postprocs is not None \
            else default_postprocs(self.info)
        for p in self.postprocs:
            if p.info is None:
                p.initialize(self.info)
        self.mutators = dict(mutators) if mutators is not None \
            else default_mutators(self.info.is_gpu)
        total = sum(self.mutators.values())
        if self.mutators and total <= 0:
            raise TuningError("mutator probabilities must have a positive sum")
        self._mutator_list = list(self.mutators)
        self._mutator_probs = [self.mutators[m] / total for m in self._mutator_list] \
            if self.mutators else []

    # -- sketches -------------------------------------------------------------------------
    def generate(self, func: PrimFunc, seed: int = 0) -> list[Sketch]:
        """The sketches of ``func`` (at least one: the function with only the root-level
        rules when every other rule declines)."""
        if not isinstance(func, PrimFunc):
            raise TuningError(f"a search space is generated for a PrimFunc, got "
                              f"{type(func).__name__}")
        try:
            states = [Schedule(func, seed=seed or 1)]
        except IRCError as err:
            raise TuningError(f"cannot schedule this function: {err}") from None
        for rule in self.rules:
            nxt: list[Schedule] = []
            for sch in states:
                nxt.extend(self._apply_rule(rule, sch))
            states = nxt
        sketches = []
        seen: set[str] = set()
        for sch in states:
            key = sch.trace.to_json_str()
            if key in seen:
                continue
            seen.add(key)
            sketches.append(Sketch(len(sketches), sch.trace.simplified(remove_postproc=False),
                                   sch))
        return sketches

    @staticmethod
    def _apply_rule(rule: SketchRule, sch: Schedule) -> list[Schedule]:
        if rule.on_root:
            work = sch.copy()
            try:
                return rule.apply(work, work.get_block("root"))
            except ScheduleError as err:
                logger.debug("sketch rule %s does not apply at the root: %s", rule.name, err)
                return [sch]
        names = list(reversed(all_block_names(sch.func)))
        results: list[Schedule] = []
        stack: list[tuple[Schedule, int]] = [(sch, 0)]
        while stack:
            s, i = stack.pop()
            if i == len(names):
                results.append(s)
                continue
            name = names[i]
            if not has_block(s, name):
                stack.append((s, i + 1))
                continue
            work = s.copy()
            try:
                outs = rule.apply(work, work.get_block(name))
            except ScheduleError as err:
                logger.debug("sketch rule %s does not apply to block %s: %s", rule.name,
                             name, err)
                outs = [s]
            for o in reversed(outs):
                stack.append((o, i + 1))
        return results

    # -- candidates -----------------------------------------------------------------------
    def postprocess(self, sch: Schedule) -> bool:
        """Run the postprocessors on ``sch`` (after ``enter_postproc``); False when one
        rejects it."""
        sch.enter_postproc()
        try:
            for p in self.postprocs:
                if not p.apply(sch):
                    return False
        except ScheduleError:
            return False
        return True

    def _replay(self, func: PrimFunc, trace: Trace, seed: int, sketch: int,
                decisions: dict | None = None) -> Candidate | None:
        sch = Schedule(func, seed=seed)
        try:
            trace.apply_to_schedule(sch, remove_postproc=True, decisions=decisions)
        except ScheduleError:
            return None
        if not self.postprocess(sch):
            return None
        return Candidate(sch.func, sch.trace.simplified(remove_postproc=False), sketch)

    def sample(self, func: PrimFunc, sketch: Sketch, rng: random.Random) -> Candidate | None:
        """A candidate of ``sketch`` with freshly sampled decisions (None when the
        postprocessors reject it)."""
        fresh = Trace(sketch.trace.insts, {})
        return self._replay(func, fresh, rng.randrange(1, 2 ** 31 - 1), sketch.index)

    def replay(self, func: PrimFunc, trace: Any, sketch: int = -1) -> Candidate | None:
        """The candidate of a stored trace (JSON or Trace): its sketch part replayed with
        its decisions and postprocessed again (None when it no longer applies)."""
        tr = trace if isinstance(trace, Trace) else Trace.from_json(trace)
        return self._replay(func, tr, 1, sketch)

    def mutate(self, func: PrimFunc, cand: Candidate, rng: random.Random
               ) -> Candidate | None:
        """A mutation of ``cand`` (one decision changed by a mutator drawn by
        probability); None when the mutator finds nothing or the result is invalid."""
        if not self._mutator_list:
            return None
        mutator = rng.choices(self._mutator_list, self._mutator_probs)[0]
        trace = cand.sketch_trace()
        found = mutator.apply(trace, rng)
        if found is None:
            return None
        return self._replay(func, trace, rng.randrange(1, 2 ** 31 - 1), cand.sketch,
                            {found.inst: found.decision})


__all__ = ["Candidate", "Sketch", "SpaceGenerator", "default_rules"]

"""Trace mutators: small changes to a candidate's decisions, the moves of evolutionary
search.

A :class:`TraceMutator` (not to be confused with ``irc.core.functor.Mutator``, which
rewrites IR) looks at a trace (the sketch part, without postprocessing) and proposes a
new decision for one sampling instruction; the search replays the trace with that
decision replaced (never re-parsing or re-printing IR) and runs the postprocessors again.
``apply(trace, rng)`` returns a :class:`Mutation` ``(instruction, new decision)`` or None
when it finds nothing to change.

- :class:`MutateTileSize` — move a prime factor between two tile sizes of one
  ``sample_perfect_tile`` (respecting ``max_innermost_factor``).
- :class:`MutateUnroll` — another auto-unroll depth.
- :class:`MutateParallel` — another parallel extent limit.
- :class:`MutateComputeLocation` — another compute location (validated by replay).
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from typing import Any, NamedTuple

from ...tir.schedule import Trace
from ...tir.schedule.instruction import Instruction
from .analysis import ANN_PARALLEL, ANN_UNROLL_EXPLICIT, ANN_UNROLL_IMPLICIT


class Mutation(NamedTuple):
    """A mutator's proposal: a sampling instruction of a trace and its new decision."""

    inst: Instruction
    decision: Any


class TraceMutator(ABC):
    """A mutator of traces (see the module docstring)."""

    name = "TraceMutator"

    @abstractmethod
    def apply(self, trace: Trace, rng: random.Random) -> Mutation | None:
        """A sampling instruction of ``trace`` and a new decision for it, or None."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _divisors(n: int) -> list[int]:
    small = [d for d in range(2, int(n ** 0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small] + ([n] if n > 1 else [])))


class MutateTileSize(TraceMutator):
    """Divide one factor of a perfect tile by one of its divisors and multiply another
    by it (the product stays the loop extent)."""

    name = "MutateTileSize"

    def apply(self, trace: Trace, rng: random.Random) -> Mutation | None:
        cands = [i for i in trace.insts if i.kind.name == "SamplePerfectTile"
                 and isinstance(trace.decisions.get(i), list)
                 and len(trace.decisions[i]) > 1 and any(d > 1 for d in trace.decisions[i])]
        if not cands:
            return None
        for _ in range(8):
            inst = rng.choice(cands)
            tiles = list(trace.decisions[inst])
            limit = inst.attrs[1] if len(inst.attrs) > 1 else None
            src = rng.choice([k for k, d in enumerate(tiles) if d > 1])
            d = rng.choice(_divisors(tiles[src]))
            dst = rng.choice([k for k in range(len(tiles)) if k != src])
            new = list(tiles)
            new[src] //= d
            new[dst] *= d
            if limit and limit > 0 and new[-1] > limit:
                continue
            return Mutation(inst, new)
        return None


def _annotated_categoricals(trace: Trace, keys: tuple[str, ...]) -> list[Instruction]:
    """SampleCategorical instructions whose value feeds an Annotate with one of
    ``keys``."""
    feeds: set[int] = set()
    for inst in trace.insts:
        if inst.kind.name == "Annotate" and inst.attrs and inst.attrs[0] in keys \
                and len(inst.inputs) > 1:
            feeds.add(id(inst.inputs[1]))
    return [i for i in trace.insts if i.kind.name == "SampleCategorical"
            and i.outputs and id(i.outputs[0]) in feeds and len(i.attrs[0]) > 1]


def _other_choice(trace: Trace, inst: Instruction, rng: random.Random) -> Any:
    n = len(inst.attrs[0])
    current = trace.decisions.get(inst)
    return rng.choice([k for k in range(n) if k != current])


class MutateUnroll(TraceMutator):
    """Pick another value of the auto-unroll depth."""

    name = "MutateUnroll"

    def apply(self, trace: Trace, rng: random.Random) -> Mutation | None:
        cands = _annotated_categoricals(trace, (ANN_UNROLL_EXPLICIT, ANN_UNROLL_IMPLICIT))
        if not cands:
            return None
        inst = rng.choice(cands)
        return Mutation(inst, _other_choice(trace, inst, rng))


class MutateParallel(TraceMutator):
    """Pick another parallel extent limit (how many outer loops are fused and run in
    parallel)."""

    name = "MutateParallel"

    def apply(self, trace: Trace, rng: random.Random) -> Mutation | None:
        cands = _annotated_categoricals(trace, (ANN_PARALLEL,))
        if not cands:
            return None
        inst = rng.choice(cands)
        return Mutation(inst, _other_choice(trace, inst, rng))


class MutateComputeLocation(TraceMutator):
    """Pick another compute location for a block placed by ``sample_compute_location``
    (-1 root, -2 inlined, k the k-th candidate loop); replay rejects locations that do
    not exist."""

    name = "MutateComputeLocation"

    def __init__(self, max_candidates: int = 12):
        self.max_candidates = max_candidates

    def apply(self, trace: Trace, rng: random.Random) -> Mutation | None:
        cands = [i for i in trace.insts if i.kind.name == "SampleComputeLocation"]
        if not cands:
            return None
        inst = rng.choice(cands)
        current = trace.decisions.get(inst)
        options = [k for k in range(-2, self.max_candidates) if k != current]
        return Mutation(inst, rng.choice(options))


def default_mutators(is_gpu: bool) -> dict[TraceMutator, float]:
    """Mutators of a target with the probability each is picked."""
    if is_gpu:
        return {MutateTileSize(): 0.9, MutateUnroll(): 0.08, MutateComputeLocation(): 0.02}
    return {MutateTileSize(): 0.9, MutateComputeLocation(): 0.05, MutateUnroll(): 0.03,
            MutateParallel(): 0.02}

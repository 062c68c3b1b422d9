"""Sampling instructions: perfect tile sizes, categorical choices and compute locations.

Each takes the schedule's seeded ``random.Random`` and an optional ``decision``; with a
decision the sample is checked and returned as is (replay and mutation), without one it
is drawn. Decisions are what the trace records.
"""

from __future__ import annotations

import random
from typing import Any, Sequence

from ..stmt import BlockRealize, For
from .analysis import (
    const_extent,
    consumers,
    fail,
    is_complete,
    is_output_block,
    is_reduction,
    loop_name,
)
from .state import FuncIndex


def prime_factors(n: int) -> list[int]:
    """The prime factors of ``n`` (with multiplicity, ascending; none for 1)."""
    out = []
    p = 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def perfect_tile(rng: random.Random, loop: For, n: int, max_innermost_factor: int | None,
                 decision: Sequence[int] | None) -> list[int]:
    """``n`` factors multiplying to the loop's extent, the last at most
    ``max_innermost_factor`` (no limit when None or not positive)."""
    P = "sample_perfect_tile"
    extent = const_extent(loop)
    if extent is None:
        fail(P, f"loop {loop_name(loop)} has a symbolic extent; perfect tiles need a "
             "constant one")
    if not isinstance(n, int) or n < 1:
        fail(P, f"n must be a positive integer, got {n!r}")
    limit = max_innermost_factor if max_innermost_factor and max_innermost_factor > 0 else None
    if decision is not None:
        if not isinstance(decision, (list, tuple)):
            fail(P, f"decision {decision!r} for loop {loop_name(loop)} must be a list of "
                 f"{n} factors")
        values = list(decision)
        prod = 1
        for v in values:
            if not _is_int(v) or v <= 0:
                fail(P, f"decision {values} for loop {loop_name(loop)} has a factor that "
                     "is not a positive integer")
            prod *= v
        if len(values) != n or prod != extent:
            fail(P, f"decision {values} for loop {loop_name(loop)} must be {n} factors "
                 f"multiplying to its extent {extent}")
        if limit is not None and values[-1] > limit:
            fail(P, f"decision {values}: the innermost factor exceeds "
                 f"max_innermost_factor={limit}")
        return values
    divs = [d for d in _divisors(extent) if limit is None or d <= limit]
    innermost = rng.choice(divs) if n > 1 else extent
    out = [1] * n
    out[-1] = innermost
    for p in prime_factors(extent // innermost):
        out[rng.randrange(n - 1) if n > 1 else 0] *= p
    return out


def categorical(rng: random.Random, candidates: list[Any], probs: list[float],
                decision: int | None) -> int:
    """The index of the chosen candidate."""
    P = "sample_categorical"
    if not candidates or len(candidates) != len(probs):
        fail(P, f"{len(candidates)} candidates and {len(probs)} probabilities; they must be "
             "non-empty and of equal length")
    if any(p < 0 for p in probs) or sum(probs) <= 0:
        fail(P, f"probabilities {probs} must be non-negative with a positive sum")
    if decision is not None:
        if not _is_int(decision) or not 0 <= decision < len(candidates):
            fail(P, f"decision {decision!r} is not an index into {len(candidates)} candidates")
        return decision
    x = rng.random() * sum(probs)
    acc = 0.0
    for k, p in enumerate(probs):
        acc += p
        if x < acc:
            return k
    return len(probs) - 1


def compute_location_candidates(index: FuncIndex, r: BlockRealize) -> list[For]:
    """Loops (outermost first) where compute_at of ``r`` can place it: loops of its
    scope enclosing every consumer and not enclosing ``r``."""
    block = r.block
    if not (is_complete(block) or is_reduction(block)) or is_output_block(index, r) \
            or len(block.writes) != 1:
        return []
    cons = consumers(index, r)
    if not cons:
        return []
    out = []
    for lp in index.loops_above(cons[0]):
        if all(index.is_ancestor(lp, c) for c in cons[1:]) and not index.is_ancestor(lp, r):
            out.append(lp)
    return out


def _is_int(value: object) -> bool:
    """An integer decision (a bool or a float is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)


def choose_location(rng: random.Random, candidates: list[For], decision: int | None,
                    inline_ok: bool, name: str) -> int:
    """-1 (stay), -2 (inline) or an index into ``candidates``."""
    options = [-1] + ([-2] if inline_ok else []) + list(range(len(candidates)))
    if decision is not None:
        if not _is_int(decision) or decision not in options:
            fail("sample_compute_location", f"decision {decision!r} for block {name!r} is "
                 f"not one of the locations {options}")
        return decision
    return rng.choice(options)

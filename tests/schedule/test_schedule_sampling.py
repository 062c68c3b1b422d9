"""Sampling instructions: perfect tiles, categorical choices, compute locations."""

from math import prod

import pytest
from schedule_helpers import (
    check_numeric,
    elementwise3,
    matmul_add,
    schedule_error,
    verify_trace_roundtrip,
)

from irc.tir import Schedule


@pytest.mark.parametrize("extent,n,limit", [(64, 2, 16), (96, 4, 8), (17, 3, None), (1, 2, 4)])
def test_perfect_tile_products(extent, n, limit):
    f = matmul_add(extent, 8, 4)
    seen = set()
    for seed in range(40):
        sch = Schedule(f, seed=seed)
        i, _, _ = sch.get_loops(sch.get_block("C"))
        values = [sch.get(v) for v in sch.sample_perfect_tile(i, n, max_innermost_factor=limit)]
        assert len(values) == n and prod(values) == extent
        assert limit is None or values[-1] <= limit
        seen.add(tuple(values))
    if extent == 64:
        assert len(seen) > 3  # the sampler explores


def test_sampling_is_seeded_and_recorded():
    f = matmul_add(64, 64, 64)

    def draw(seed):
        sch = Schedule(f, seed=seed)
        i, j, k = sch.get_loops(sch.get_block("C"))
        tiles = [sch.get(v) for v in sch.sample_perfect_tile(i, 3, 8)]
        cat = sch.get(sch.sample_categorical([0, 16, 64, 512], [0.1, 0.2, 0.3, 0.4]))
        return tiles, cat, sch

    a, b = draw(7), draw(7)
    assert a[:2] == b[:2]
    sch = a[2]
    decisions = [sch.trace.get_decision(inst) for inst in sch.trace.insts[-2:]]
    assert decisions[0] == a[0]
    assert [0, 16, 64, 512][decisions[1]] == a[1]
    assert len({str(draw(s)[:2]) for s in range(12)}) > 1


def test_sampling_decisions_are_checked():
    f = matmul_add(64, 8, 4)
    sch = Schedule(f)
    i, j, k = sch.get_loops(sch.get_block("C"))
    v = sch.sample_perfect_tile(i, 2, 16, decision=[4, 16])
    assert [sch.get(x) for x in v] == [4, 16]
    schedule_error(lambda: sch.sample_perfect_tile(i, 2, 16, decision=[8, 4]),
                   "multiplying to its extent 64")
    schedule_error(lambda: sch.sample_perfect_tile(i, 2, 8, decision=[4, 16]),
                   "max_innermost_factor=8")
    schedule_error(lambda: sch.sample_categorical([1, 2], [0.5]), "equal length")
    schedule_error(lambda: sch.sample_categorical([1, 2], [0.5, 0.5], decision=2),
                   "not an index")
    assert sch.get(sch.sample_categorical([1, 2], [0.0, 1.0])) == 2
    # Decisions of the wrong kind (a damaged record; found by the fuzz campaign, where
    # an int decision of SamplePerfectTile escaped as a TypeError).
    schedule_error(lambda: sch.sample_perfect_tile(i, 2, 16, decision=64),
                   "must be a list of 2 factors")
    schedule_error(lambda: sch.sample_perfect_tile(i, 2, 16, decision="ab"),
                   "must be a list of 2 factors")
    schedule_error(lambda: sch.sample_perfect_tile(i, 2, 16, decision=[4.0, 16]),
                   "not a positive integer")
    schedule_error(lambda: sch.sample_categorical([1, 2], [0.5, 0.5], decision=True),
                   "not an index")
    schedule_error(lambda: sch.sample_compute_location(sch.get_block("C"), decision=-1.0),
                   "not one of the locations")


def test_categorical_follows_probabilities():
    sch = Schedule(matmul_add(), seed=1)
    counts = {1: 0, 2: 0}
    for _ in range(400):
        counts[sch.get(sch.sample_categorical([1, 2], [0.2, 0.8]))] += 1
    assert 40 < counts[1] < 130


def test_sample_compute_location():
    f = elementwise3()
    locations = set()
    for seed in range(30):
        sch = Schedule(f, seed=seed, debug_mask="all")
        b = sch.get_block("B")
        loc = sch.sample_compute_location(b)
        sch.compute_at(b, loc)
        locations.add(sch.trace.get_decision(sch.trace.insts[-2]))
        check_numeric(f, sch.func)
        verify_trace_roundtrip(sch, f)
    assert locations == {-2, -1, 0, 1}  # inline, stay at root, under C's i or j


def test_compute_location_decisions():
    f = elementwise3()
    sch = Schedule(f)
    b = sch.get_block("B")
    assert sch.get(sch.sample_compute_location(b, decision=-1)) == "root"
    loc = sch.sample_compute_location(b, decision=-2)
    sch.compute_at(b, loc)
    schedule_error(lambda: sch.get_loops(b), "no longer exists")
    s2 = Schedule(f)
    d = s2.get_block("D")
    schedule_error(lambda: s2.sample_compute_location(d, decision=0), "not one of the "
                   "locations [-1]")
    loc = s2.sample_compute_location(s2.get_block("B"), decision=1)
    schedule_error(lambda: s2.split(s2.sample_compute_location(s2.get_block("B"), -1), [2]),
                   "special 'root' location")
    s2.compute_at(s2.get_block("B"), loc)
    assert [s2.get(x).loop_var.name for x in s2.get_loops(s2.get_block("B"))] == ["i", "j"]


def test_fork_seed_and_copy():
    f = matmul_add(64, 64, 8)
    sch = Schedule(f, seed=5)
    child_seed = sch.fork_seed()
    assert isinstance(child_seed, int)
    i, j, k = sch.get_loops(sch.get_block("C"))
    copy = sch.copy()
    a = [sch.get(v) for v in sch.sample_perfect_tile(i, 2)]
    b = [copy.get(v) for v in copy.sample_perfect_tile(i, 2)]
    assert a == b  # the copy carries the generator state
    copy.split(i, factors=[8, 8])
    assert sch.get(i).extent.value == 64  # the original is untouched
    assert len(copy.trace) == len(sch.trace) + 1

"""Random schedules: every primitive either raises ScheduleError or keeps the function
computing the same values (checked with the interpreter), and every trace replays."""

import random
import zlib

import pytest
from schedule_helpers import check_numeric, elementwise3, matmul_add, three_stage

import irc
from irc.ir import assert_structural_equal
from irc.tir import Schedule, Trace


def _blocks(sch):
    return [n for n in sch._indexed(sch._current).blocks if n != "root"]


def _all_loops(sch, rng):
    out = []
    for name in _blocks(sch):
        out.extend(sch.get_loops(sch.get_block(name)))
    rng.shuffle(out)
    return out


def _random_step(sch, rng):
    blocks = _blocks(sch)
    if not blocks:
        return
    block = sch.get_block(rng.choice(blocks))
    loops = sch.get_loops(block)
    any_loops = _all_loops(sch, rng)
    op = rng.choice(["split", "split", "fuse", "reorder", "parallel", "vectorize", "unroll",
                     "compute_at", "reverse_compute_at", "compute_inline",
                     "reverse_compute_inline", "cache_read", "cache_write", "decompose",
                     "rfactor", "blockize", "layout", "location"])
    if op == "split" and loops:
        lp = rng.choice(loops)
        n = rng.choice([2, 3])
        factors = [rng.choice([None, 1, 2, 3, 4, 5, 8]) for _ in range(n)]
        sch.split(lp, factors=factors)
    elif op == "fuse" and len(loops) >= 2:
        k = rng.randrange(len(loops) - 1)
        sch.fuse(loops[k], loops[k + 1])
    elif op == "reorder" and len(loops) >= 2:
        picked = rng.sample(loops, rng.randint(2, len(loops)))
        sch.reorder(*picked)
    elif op in ("parallel", "vectorize", "unroll") and any_loops:
        getattr(sch, op)(rng.choice(any_loops))
    elif op == "compute_at" and any_loops:
        sch.compute_at(block, rng.choice(any_loops), preserve_unit_loops=rng.random() < 0.5)
    elif op == "reverse_compute_at" and any_loops:
        sch.reverse_compute_at(block, rng.choice(any_loops))
    elif op == "compute_inline":
        sch.compute_inline(block)
    elif op == "reverse_compute_inline":
        sch.reverse_compute_inline(block)
    elif op == "cache_read":
        sch.cache_read(block, rng.randrange(2), rng.choice(["global", "local"]))
    elif op == "cache_write":
        sch.cache_write(block, 0, rng.choice(["global", "local"]))
    elif op == "decompose" and any_loops:
        sch.decompose_reduction(block, rng.choice(any_loops))
    elif op == "rfactor" and any_loops:
        sch.rfactor(rng.choice(any_loops), rng.randrange(2))
    elif op == "blockize" and loops:
        sch.blockize(rng.choice(loops))
    elif op == "layout":
        written = sch.get(block).writes[0].buffer
        if all(written is not b for b in sch.func.buffer_map.values()):  # keep signature
            sch.transform_layout(block, ("write", 0), "lambda i, j: (j, i)")
    elif op == "location":
        sch.compute_at(block, sch.sample_compute_location(block))


def random_schedule_checked(f, rng, seed: int, steps: int) -> int:
    """``steps`` random steps on ``f`` (each applied or refused with a ScheduleError that
    is not an internal error), then the numeric check and the trace replay; returns how
    many steps applied. A failure's message ends with the trace of the applied
    primitives."""
    sch = Schedule(f, seed=seed, debug_mask="all")
    applied = 0
    for _ in range(steps):
        try:
            _random_step(sch, rng)
            applied += 1
        except irc.ScheduleError as err:
            assert "internal error" not in str(err), \
                f"{err}\nafter these primitives:\n{sch.trace.as_python()}"
    try:
        check_numeric(f, sch.func)
        replayed = Schedule(f)
        Trace.from_json(sch.trace.to_json_str()).apply_to_schedule(replayed)
        assert_structural_equal(replayed.func, sch.func)
    except (AssertionError, irc.IRCError) as err:
        raise AssertionError(f"{err}\nafter these primitives:\n"
                             f"{sch.trace.as_python()}") from err
    return applied


@pytest.mark.parametrize("make", [three_stage, matmul_add, elementwise3])
def test_random_schedules_are_correct(make):
    f = make()
    rng = random.Random(zlib.crc32(make.__name__.encode()))  # stable across processes
    applied = sum(random_schedule_checked(f, rng, trial, 8) for trial in range(12))
    assert applied > 20

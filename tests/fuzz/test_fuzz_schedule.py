"""Fuzzing the schedule language and the tuner's search space.

- Random primitive sequences (hypothesis drives the choices of
  ``tests/schedule/test_schedule_random.py``'s steps) on three workloads: each step either
  raises ScheduleError or keeps the function computing the same values (interpreter),
  and the trace replays to the same function.
- The tuner's sketches on workloads of odd sizes (primes, 1, sizes not divisible by the
  vector width): candidates sampled, mutated by the tuner's mutators, and replayed from
  traces whose decisions were overwritten with random values (as a damaged record would
  hold). Each is None (rejected) or a function that compiles with LLVM and computes what
  the unscheduled function computes; any other exception fails.
"""

from __future__ import annotations

import copy
import os
import random
import sys

import numpy as np
import pytest
from fuzz_settings import LONG, QUICK
from hypothesis import given, settings
from hypothesis import strategies as st

import irc
from irc import te
from irc.tune.space import SpaceGenerator

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "schedule"))
from schedule_helpers import elementwise3, matmul_add, three_stage  # noqa: E402
from test_schedule_random import random_schedule_checked  # noqa: E402

WORKLOADS = {"three_stage": three_stage, "matmul_add": matmul_add, "elementwise3": elementwise3}


def _primitives(name: str, rng: random.Random, steps: int) -> None:
    random_schedule_checked(WORKLOADS[name](), rng, rng.randrange(1, 1000), steps)


@settings(QUICK, max_examples=30)
@given(st.sampled_from(sorted(WORKLOADS)), st.randoms(use_true_random=False),
       st.integers(1, 10))
def test_random_primitive_sequences(name, rng, steps):
    _primitives(name, rng, steps)


@pytest.mark.slow
@settings(LONG, max_examples=1500)
@given(st.sampled_from(sorted(WORKLOADS)), st.randoms(use_true_random=False),
       st.integers(1, 16))
def test_random_primitive_sequences_long(name, rng, steps):
    _primitives(name, rng, steps)


# ---------------------------------------------------------------------------------------
# The tuner's search space
# ---------------------------------------------------------------------------------------

SIZES = [1, 3, 7, 13, 16, 17, 33]


def _workload(kind: str, a: int, b: int, c: int):
    if kind == "matmul":
        x = te.placeholder((a, c), name="A")
        w = te.placeholder((c, b), name="B")
        r = te.reduce_axis((0, c), name="k")
        y = te.compute((a, b), lambda i, j: te.sum(x[i, r] * w[r, j], axis=r), name="C")
        return te.create_prim_func([x, w, y])
    if kind == "matmul_relu":
        x = te.placeholder((a, c), name="A")
        w = te.placeholder((c, b), name="B")
        r = te.reduce_axis((0, c), name="k")
        y = te.compute((a, b), lambda i, j: te.sum(x[i, r] * w[r, j], axis=r), name="C")
        z = te.compute((a, b), lambda i, j: te.max(y[i, j], 0.0), name="D")
        return te.create_prim_func([x, w, z])
    if kind == "conv1d":
        x = te.placeholder((a, c + 2), name="X")
        w = te.placeholder((b, a, 3), name="W")
        ci = te.reduce_axis((0, a), name="ci")
        k = te.reduce_axis((0, 3), name="k")
        y = te.compute((b, c), lambda o, i: te.sum(x[ci, i + k] * w[o, ci, k], axis=[ci, k]),
                       name="Y")
        return te.create_prim_func([x, w, y])
    # a row reduction (softmax's max)
    x = te.placeholder((a, b * c), name="X")
    r = te.reduce_axis((0, b * c), name="r")
    y = te.compute((a,), lambda i: te.max(x[i, r], axis=r), name="M")
    return te.create_prim_func([x, y])


_SPACE = {}


def _space() -> SpaceGenerator:
    if "llvm" not in _SPACE:
        _SPACE["llvm"] = SpaceGenerator("llvm")
    return _SPACE["llvm"]


def _inputs(func, seed):
    rng = np.random.default_rng(seed)
    out = []
    for p in func.params:
        buf = func.buffer_map[p]
        shape = tuple(int(d.value) for d in buf.shape)
        out.append(rng.uniform(-1, 1, shape).astype(str(buf.dtype)))
    return out


def _check_compiles_and_agrees(func, scheduled):
    args = _inputs(func, 0)
    want = [a.copy() for a in args]
    ref = irc.build(func, target="llvm")
    ref_t = [irc.tensor(a) for a in want]
    ref["main"](*ref_t)
    got = irc.build(scheduled, target="llvm")
    got_t = [irc.tensor(a) for a in args]
    got["main"](*got_t)
    np.testing.assert_allclose(got_t[-1].numpy(), ref_t[-1].numpy(), rtol=1e-4, atol=1e-4)


def _damage(trace_json, rng: random.Random):
    """The trace with some decisions overwritten by random values."""
    insts, decisions = copy.deepcopy(trace_json)
    for d in decisions:
        if rng.random() < 0.5:
            continue
        value = d[1]
        if isinstance(value, list):
            d[1] = [rng.choice([-1, 0, 1, 2, 3, 5, 64, 10 ** 6]) for _ in
                    range(rng.choice([len(value), len(value), 1, 5]))]
        else:
            d[1] = rng.choice([-1, 0, 1, 2, 7, 99, "x", None, [1]])
    if decisions and rng.random() < 0.2:
        decisions.append([rng.randrange(len(insts) + 3), 1])
    return [insts, decisions]


def _search_space(kind, a, b, c, rng, mutations, damage):
    func = _workload(kind, a, b, c)
    space = _space()
    sketches = space.generate(func, seed=rng.randrange(1, 100))
    assert sketches
    cand = space.sample(func, rng.choice(sketches), rng)
    for _ in range(mutations):
        if cand is None:
            break
        cand = space.mutate(func, cand, rng) or cand
    if cand is not None and damage:
        try:
            cand = space.replay(func, _damage(cand.trace_json, rng))
        except irc.IRCError as err:
            assert str(err)
            return
    if cand is None:
        return
    try:
        _check_compiles_and_agrees(func, cand.func)
    except irc.IRCError as err:
        # A candidate the tuner would record as a build error: it must say why.
        assert str(err) and "internal error" not in str(err), str(err)


@settings(QUICK, max_examples=25)
@given(st.sampled_from(["matmul", "matmul_relu", "conv1d", "reduce"]),
       st.sampled_from(SIZES), st.sampled_from(SIZES), st.sampled_from(SIZES),
       st.randoms(use_true_random=False), st.integers(0, 3), st.booleans())
def test_sketch_candidates_compile_and_agree(kind, a, b, c, rng, mutations, damage):
    _search_space(kind, a, b, c, rng, mutations, damage)


@pytest.mark.slow
@settings(LONG, max_examples=600)
@given(st.sampled_from(["matmul", "matmul_relu", "conv1d", "reduce"]),
       st.sampled_from(SIZES), st.sampled_from(SIZES), st.sampled_from(SIZES),
       st.randoms(use_true_random=False), st.integers(0, 6), st.booleans())
def test_sketch_candidates_long(kind, a, b, c, rng, mutations, damage):
    _search_space(kind, a, b, c, rng, mutations, damage)

"""Traces: JSON round trip, replay (with replaced decisions), Python printing."""

import json
import time

import pytest
from schedule_helpers import (
    check_numeric,
    elementwise3,
    matmul_add,
    row_max,
    three_stage,
    verify_trace_roundtrip,
)

import irc
from irc.ir import assert_structural_equal, structural_equal
from irc.tir import Schedule, Trace


def tile_three_stage(sch):
    """A typical tuned CPU schedule of the three-stage function (sampled tiles)."""
    b, c, d = (sch.get_block(n) for n in "BCD")
    sch.compute_inline(b)
    i, j, k = sch.get_loops(c)
    ti = sch.sample_perfect_tile(i, n=2, max_innermost_factor=8)
    tj = sch.sample_perfect_tile(j, n=2, max_innermost_factor=8)
    i0, i1 = sch.split(i, ti)
    j0, j1 = sch.split(j, tj)
    sch.reorder(i0, j0, k, i1, j1)
    sch.reverse_compute_at(d, j0)
    sch.parallel(i0)
    sch.vectorize(j1)
    unroll = sch.sample_categorical([0, 16, 64], [0.3, 0.3, 0.4])
    sch.annotate(c, "pragma_auto_unroll_max_step", unroll)


def cache_and_reduce(sch):
    c = sch.get_block("C")
    c_local = sch.cache_write(c, 0, "local")
    i, j, k = sch.get_loops(c)
    k0, k1 = sch.split(k, factors=[None, 4])
    sch.reorder(i, k0, j, k1)
    sch.reverse_compute_at(c_local, i)
    sch.decompose_reduction(c, k0)
    sch.unroll(k1)


def rfactor_schedule(sch):
    b = sch.get_block("B")
    i, k = sch.get_loops(b)
    k0, k1 = sch.split(k, factors=[None, 8])
    rf = sch.rfactor(k1, 1)
    sch.parallel(sch.get_loops(rf)[0])


def layout_schedule(sch):
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.reorder(i, j0, k, j1)
    sch.layout_rewrite(c, 1)
    sch.transform_layout(sch.get_block("B"), ("write", 0), lambda a, b: (b, a))


def elementwise_schedule(sch):
    c = sch.get_block("C")
    i, j = sch.get_loops(c)
    f = sch.fuse(i, j)
    o, inner = sch.split(f, factors=[None, 16])
    sch.compute_at(sch.get_block("B"), o)
    sch.cache_read(sch.get_block("D"), 0, "local")
    sch.bind(o, "blockIdx.x")
    sch.bind(inner, "threadIdx.x")


CASES = [
    (three_stage, tile_three_stage),
    (matmul_add, cache_and_reduce),
    (row_max, rfactor_schedule),
    (three_stage, layout_schedule),
    (elementwise3, elementwise_schedule),
]


@pytest.mark.parametrize("make,apply", CASES, ids=[c[1].__name__ for c in CASES])
def test_roundtrip(make, apply):
    f = make()
    sch = Schedule(f, seed=11, debug_mask="all")
    apply(sch)
    verify_trace_roundtrip(sch, f)
    check_numeric(f, sch.func, packed=apply is layout_schedule)


def test_json_is_plain_and_stable():
    f = three_stage()
    sch = Schedule(f, seed=3)
    tile_three_stage(sch)
    js = sch.trace.to_json()
    text = json.dumps(js)
    assert json.loads(text) == js
    again = Trace.from_json(text).to_json()
    assert again == js
    insts, decisions = js
    assert insts[0] == ["GetBlock", [], ["B", "main"], ["b0"]]
    assert [d[0] for d in decisions] == [5, 6, 13]
    assert insts[-1][1] == ["b1", "v14"]


def test_replay_with_replaced_decisions():
    f = three_stage()
    sch = Schedule(f, seed=3)
    tile_three_stage(sch)
    trace = sch.trace
    tile_inst = next(i for i in trace.insts if i.kind.name == "SamplePerfectTile")
    mutated = trace.with_decision(tile_inst, [2, 8], remove_postproc=True)
    s2 = Schedule(f)
    mutated.apply_to_schedule(s2)
    assert s2.get(s2.get_loops(s2.get_block("C"))[0]).extent.value == 2
    check_numeric(f, s2.func)
    s3 = Schedule(f)
    trace.apply_to_schedule(s3, decisions={trace.insts.index(tile_inst): [4, 4]})
    assert s3.get(s3.get_loops(s3.get_block("C"))[0]).extent.value == 4
    s4 = Schedule(f)
    with pytest.raises(irc.ScheduleError, match="multiplying to its extent 16"):
        trace.apply_to_schedule(s4, decisions={tile_inst: [3, 3]})


def test_postproc_and_simplified():
    f = matmul_add()
    sch = Schedule(f)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    sch.sample_perfect_tile(j, 2)  # unused
    sch.get_loops(sch.get_block("D"))  # unused
    sch.enter_postproc()
    sch.parallel(i)
    assert sch.trace.simplified(True).insts == []  # nothing before postproc has effects
    full = [x.kind.name for x in sch.trace.simplified(False).insts]
    assert full == ["GetBlock", "GetLoops", "EnterPostproc", "Parallel"]
    s2 = Schedule(f)
    sch.trace.apply_to_schedule(s2, remove_postproc=True)
    assert s2.get(s2.get_loops(s2.get_block("C"))[0]).kind == "serial"
    assert "EnterPostproc" not in json.dumps(sch.trace.to_json(remove_postproc=True))


def test_bad_json():
    for bad, words in [("[1", "not valid JSON"), ("{}", "must be [instructions, decisions]"),
                       ('[[["Nope", [], [], []]], []]', "unknown kind 'Nope'"),
                       ('[[["GetLoops", ["b0"], [], ["l1"]]], []]', "before it is defined"),
                       ('[[["GetBlock", [], ["C", "main"], ["b0"]]], [[4, 1]]]',
                        "must be [index, decision]")]:
        with pytest.raises(irc.ScheduleError, match=words.replace("[", r"\[")):
            Trace.from_json(bad)


def test_replay_onto_another_function_fails_clearly():
    sch = Schedule(three_stage())
    tile_three_stage(sch)
    with pytest.raises(irc.ScheduleError, match="no block named 'B'"):
        sch.trace.apply_to_schedule(Schedule(matmul_add()))


def test_python_text():
    f = three_stage()
    sch = Schedule(f, seed=3)
    tile_three_stage(sch)
    text = sch.trace.as_python()
    assert 'b0 = sch.get_block(name="B", func_name="main")' in text
    assert "sch.split(loop=l3, factors=[v6, v7], preserve_unit_iters=True)" in text
    assert "decision=[" in text
    assert str(sch.trace) == text
    layout = Schedule(three_stage())
    layout_schedule(layout)
    assert 'index_map=lambda a, b: (b, a))' in layout.trace.as_python()


def test_failed_replay_leaves_no_partial_instruction():
    f = elementwise3()
    sch = Schedule(f)
    i, j = sch.get_loops(sch.get_block("C"))
    with pytest.raises(irc.ScheduleError):
        sch.split(i, factors=[5, 3])
    assert [x.kind.name for x in sch.trace.insts] == ["GetBlock", "GetLoops"]
    assert structural_equal(sch.func, f)


def test_replay_is_fast():
    """Replay of a 15-instruction trace on the three-stage function takes milliseconds
    (no printing or parsing); timed for the report, asserted loosely."""
    f = three_stage(64, 64, 64)
    sch = Schedule(f, seed=3)
    tile_three_stage(sch)
    trace = Trace.from_json(sch.trace.to_json())
    n = 20
    start = time.perf_counter()
    for _ in range(n):
        s = Schedule(f)
        trace.apply_to_schedule(s)
    per = (time.perf_counter() - start) / n
    assert_structural_equal(s.func, sch.func)
    assert per < 0.5


def test_module_with_several_functions():
    mod = irc.IRModule(functions={"main": matmul_add(), "other": elementwise3()})
    sch = Schedule(mod, debug_mask="all")
    c = sch.get_block("C")  # main's C
    d = sch.get_block("D", func_name="other")
    assert sch.get(sch.get_loops(c)[2]).extent.value == 32
    i, j = sch.get_loops(d)
    sch.split(j, factors=[None, 8])
    mi, _, _ = sch.get_loops(c)
    with pytest.raises(irc.ScheduleError, match="different functions"):
        sch.fuse(i, mi)
    with pytest.raises(irc.ScheduleError, match="function 'main' but the block is in 'other'"):
        sch.compute_at(sch.get_block("C", func_name="other"), mi)
    assert structural_equal(sch.mod["main"], mod["main"])
    assert not structural_equal(sch.mod["other"], mod["other"])
    check_numeric(mod["other"], sch.mod["other"])
    sch.work_on("other")
    assert sch.get(sch.get_block("B")).name == "B"
    replayed = Schedule(mod)
    sch.trace.apply_to_schedule(replayed)
    assert_structural_equal(replayed.mod, sch.mod)
    printed = sch.mod.script()
    assert "def other" in printed and "def main" in printed

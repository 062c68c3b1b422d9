"""Block analysis for schedule rules (irc.tir.schedule.block_info): lookups, block kinds,
output blocks, both views of loop kinds, strides, reductions and guards, on small te and
loop-IR examples."""

from __future__ import annotations

import pytest

import irc
from irc import te, topi
from irc.core.diagnostics import ScheduleError
from irc.tir import Schedule
from irc.tir.expr import Select
from irc.tir.schedule.block_info import (
    block_accesses,
    const_shape,
    flat_strides,
    get_block_infos,
    has_block,
    has_if_then_else,
    has_simple_bindings,
    index_of,
    innermost_spatial_var,
    is_complete,
    is_elementwise_store,
    is_normalized,
    is_output,
    is_reduction,
    loads,
    loop_kinds,
    loop_users,
    match_reduction,
    multiply_operands,
    realize_of,
    store_of,
    store_strides,
)


def matmul_bias(n: int = 16, m: int = 8, k: int = 4, dtype: str = "float32"):
    """``D = A @ B + bias``: a reduction block ``C`` and an elementwise epilogue ``D``."""
    a = te.placeholder((n, k), name="A", dtype=dtype)
    b = te.placeholder((k, m), name="B", dtype=dtype)
    bias = te.placeholder((m,), name="bias", dtype="float32")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((n, m), lambda i, j: te.sum(te.cast(a[i, r], "float32")
                                               * te.cast(b[r, j], "float32"), axis=r),
                   name="C")
    d = te.compute((n, m), lambda i, j: c[i, j] + bias[j], name="D")
    return te.create_prim_func([a, b, bias, d])


def transpose(n: int = 4, m: int = 6):
    a = te.placeholder((n, m), name="A")
    b = te.compute((m, n), lambda i, j: a[j, i], name="T")
    return te.create_prim_func([a, b])


def padded(n: int = 6):
    a = te.placeholder((1, 1, n, n), name="A")
    return te.create_prim_func([a, topi.nn.pad(a, (0, 0, 1, 1), (0, 0, 1, 1))])


UNUSED_LOOP = '''
@T.prim_func
def main(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for i, r, u in T.grid(4, 3, 1):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            B[vi] = A[vi] * T.float32(2)
'''


def test_block_infos_of_a_matmul_with_an_epilogue():
    sch = Schedule(matmul_bias())
    infos = get_block_infos(sch)
    assert [b.name for b in infos] == ["C", "D"]
    c, d = infos
    assert [c.dom_kind(), d.dom_kind()] == ["SSR", "SS"]
    assert is_normalized(infos)
    assert c.is_reduction() and not c.is_injective()
    assert d.is_injective() and not d.is_reduction()
    assert [it.const_extent for it in c.iters] == [16, 8, 4]
    assert c.iter_of(c.iters[1].var) is c.iters[1]
    assert [it.var for it in c.spatial()] == [iv.var for iv in c.block.iter_vars[:2]]
    assert c.has_trivial_predicate()
    # block kinds and outputs
    assert is_reduction(c.block) and not is_complete(c.block)
    assert is_complete(d.block) and not is_reduction(d.block)
    assert not is_output(sch, "C") and is_output(sch, d.block_rv)
    assert has_block(sch, "D") and not has_block(sch, "E")
    assert realize_of(sch, "C") is index_of(sch).blocks["C"]
    with pytest.raises(ScheduleError, match="no block named 'E'"):
        realize_of(sch, "E")


def test_reduction_parts():
    sch = Schedule(matmul_bias(dtype="float16"))
    c, d = get_block_infos(sch)
    red = match_reduction(c.block)
    assert red.kind == "sum" and red.store is store_of(c.block)
    x, y = multiply_operands(red.rhs)  # through the casts
    assert {x.value.buffer.name, y.value.buffer.name} == {"A", "B"}
    assert match_reduction(d.block) is None
    assert multiply_operands(d.block.body.value) is None
    # the accumulator is not a load of the reduction
    assert [a.buffer.name for a in loads(c.block)] == ["A", "B"]
    assert [a.kind for a in block_accesses(c.block)] == ["read", "read", "read", "write"]
    assert len(block_accesses(c.block, include_init=True)) == 5


def test_strides_of_accesses():
    sch = Schedule(transpose(4, 6))
    (t,) = get_block_infos(sch)
    vi, vj = (iv.var for iv in t.block.iter_vars)
    (load,) = loads(t.block)
    assert load.stride(vi) == 1 and load.stride(vj) == 6 and load.stride(None) == 0
    assert flat_strides(store_of(t.block).buffer, (vi, vj)) == {id(vi): 4, id(vj): 1}
    assert innermost_spatial_var(t.block) is vj
    assert is_elementwise_store(t.block)
    assert const_shape(load.buffer) == [4, 6]
    c = get_block_infos(Schedule(matmul_bias()))[0]
    assert innermost_spatial_var(c.block) is c.iters[1].var


def test_symbolic_shapes_have_no_strides():
    n = irc.tir.var("n", "int64")
    a = te.placeholder((n, 4), name="A")
    func = te.create_prim_func([a, te.compute((n, 4), lambda i, j: a[i, j] + 1.0, name="B")])
    (b,) = get_block_infos(Schedule(func))
    assert const_shape(store_of(b.block).buffer) is None
    assert all(acc.strides is None and acc.stride(b.iters[0].var) is None
               for acc in block_accesses(b.block))
    # without strides, the last index still names the contiguous variable
    assert innermost_spatial_var(b.block) is b.iters[1].var


def test_loop_kinds_and_store_strides_follow_splits_and_fusions():
    sch = Schedule(matmul_bias())
    r = realize_of(sch, "C")
    loops = index_of(sch).loops_above(r)
    assert loop_kinds(r, loops) == ["S", "S", "R"]
    assert has_simple_bindings(r, loops)
    assert store_strides(r, loops) == [8, 1, 0]
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.split(j, [None, 4])
    r = realize_of(sch, "C")
    loops = index_of(sch).loops_above(r)
    assert loop_kinds(r, loops) == ["S", "S", "S", "R"]
    assert not has_simple_bindings(r, loops)  # j = j_0 * 4 + j_1
    assert store_strides(r, loops) == [8, 4, 1, 0]
    assert [len(users) for _, users in loop_users(sch, "C")] == [1, 1, 1, 1]
    # after fusing i and the outer part of j, the store index divides: no strides
    i, jo, ji, k = sch.get_loops(sch.get_block("C"))
    sch.fuse(i, jo)
    r = realize_of(sch, "C")
    loops = index_of(sch).loops_above(r)
    assert loop_kinds(r, loops) == ["S", "S", "R"]
    assert store_strides(r, loops) == [None, None, None]
    infos = get_block_infos(sch)
    assert infos[0].dom_kind() == "OOR" and not is_normalized(infos)
    assert [len(users) for _, users in loop_users(sch, "C")] == [2, 1, 1]


def test_fused_spatial_and_reduction_loops_are_opaque():
    sch = Schedule(matmul_bias())
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.fuse(j, k)
    r = realize_of(sch, "C")
    assert loop_kinds(r, index_of(sch).loops_above(r)) == ["S", "O"]


def test_unused_loops():
    sch = Schedule(irc.parse(UNUSED_LOOP))
    r = realize_of(sch, "B")
    assert loop_kinds(r, index_of(sch).loops_above(r)) == ["S", "U", "U"]
    (b,) = get_block_infos(sch)
    # a unit loop is spatial; a longer loop feeding nothing is opaque
    assert b.dom_kind() == "SOS" and not is_normalized([b])
    assert [it.var for it in b.iters][1:] == [None, None]


def test_guards():
    sch = Schedule(padded())
    (p,) = get_block_infos(sch)
    value = store_of(p.block).value
    assert has_if_then_else(value)
    assert not has_if_then_else(store_of(get_block_infos(Schedule(transpose()))[0].block).value)
    x = irc.tir.var("x", "float32")
    sel = Select(dtype="float32", condition=x > 0.0, true_value=x, false_value=x * 2.0)
    assert has_if_then_else(sel, include_select=True) and not has_if_then_else(sel)


def test_not_block_form():
    lowered = irc.lower(transpose())["main"]
    assert get_block_infos(Schedule(lowered)) is None

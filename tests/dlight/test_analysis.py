"""Block analysis: loop kinds, strides, reductions and shared rows."""

from dlight_helpers import graph, kernels

import irc
from irc import dlight as dl
from irc.dlight.analysis import row_depth
from irc.tir import Schedule, decl_buffer, var
from irc.tir.arith import affine_form
from irc.tir.schedule.block_info import (
    flat_strides,
    get_block_infos,
    innermost_spatial_var,
    match_reduction,
    multiply_operands,
)


def _infos(body, params, out):
    ks = kernels(graph(params, body, out))
    return get_block_infos(Schedule(next(iter(ks.values()))))


def test_dom_kinds_of_matmul_and_conv():
    mm = _infos('gv = R.matmul(x, w, out_dtype="void")', {"x": (4, 8), "w": (8, 6)}, (4, 6))
    assert [b.dom_kind() for b in mm] == ["SSR"]
    assert mm[0].is_reduction() and not mm[0].is_injective()
    conv = _infos("gv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])",
                  {"x": (1, 2, 5, 5), "w": (3, 2, 3, 3)}, (1, 3, 5, 5))
    assert [b.dom_kind() for b in conv] == ["SSSS", "SSSSRRR"]
    assert conv[0].is_injective() and conv[1].is_reduction()


def test_linear_forms_and_strides():
    i, j, k = var("i", "int64"), var("j", "int64"), var("k", "int64")
    assert affine_form(i * 3 + j - 2) == ({id(i): 3, id(j): 1}, -2)
    assert affine_form(i * j) is None
    assert affine_form((i + 4) // 1) == ({id(i): 1}, 4)
    assert affine_form(i // 2) is None
    buf = decl_buffer((4, 5, 6), "float32", "B", index_dtype="int64")
    assert flat_strides(buf, (i, j + k, k)) == {id(i): 30, id(j): 6, id(k): 7}


def test_reduction_parts():
    mm = _infos('gv = R.matmul(x, w, out_dtype="void")', {"x": (4, 8), "w": (8, 6)}, (4, 6))
    red = match_reduction(mm[0].block)
    assert red.kind == "sum" and multiply_operands(red.rhs) is not None
    assert innermost_spatial_var(mm[0].block) is mm[0].iters[1].var
    pool = _infos("gv = R.nn.max_pool2d(x, pool_size=[2, 2], strides=[2, 2])",
                  {"x": (1, 2, 4, 4)}, (1, 2, 2, 2))
    assert match_reduction(pool[-1].block).kind == "max"


def test_softmax_blocks_share_one_row():
    infos = _infos("gv = R.nn.softmax(x, axis=-1)", {"x": (4, 10)}, (4, 10))
    assert [b.dom_kind() for b in infos] == ["SR", "SS", "SR", "SS"]
    assert row_depth(infos) == 1
    ln = _infos("gv = R.nn.layer_norm(x, g, b, axes=[-1])",
                {"x": (2, 3, 8), "g": (8,), "b": (8,)}, (2, 3, 8))
    assert row_depth(ln) == 2


def test_infos_are_none_for_lowered_functions():
    ks = kernels(graph({"x": (3, 5)}, "gv = R.nn.relu(x)", (3, 5)))
    lowered = irc.lower(next(iter(ks.values())))["main"]
    assert get_block_infos(Schedule(lowered)) is None or dl.cpu.Fallback().apply(
        lowered, irc.target.Target("llvm")) is None

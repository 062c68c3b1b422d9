"""Weight packing (``Schedule.layout_rewrite`` and ``pack_weight``) of degenerate
weights: one element (``[1]``, ``[1, 1]``, 0-d), unit dimensions beside real ones, and
extents smaller than a micro-kernel's tile; and the CPU rules on kernels whose domain
is empty.

Each packing path is checked against the others on the same weight: the index map's
scatter, the reshape-and-transpose fast path (where it applies) and the block-form
``layout_rewrite_preproc`` run in the interpreter; the packed weight, fed to the
rewritten function, gives the unscheduled function's result. The CPU rules' own
choices (a repacked constant, or a strided weight copied with the vector dimension
innermost by ``transform_layout``) are checked the same way."""

from __future__ import annotations

import numpy as np
import pytest

import irc
from irc import dlight as dl
from irc import te
from irc.dlight.weights import mark_packable
from irc.target import Target
from irc.tir import Schedule
from irc.tir.interpreter import run
from irc.tir.schedule import (
    IndexMap,
    layout,
    layout_rewrite_preproc,
    layout_rewrites,
    pack_weight,
)
from irc.tir.stmt import PrimFunc


def _matmul(m: int, k: int, n: int) -> PrimFunc:
    """``C = A @ W`` with ``A: [m, k]``, ``W: [k, n]`` (parameter 1)."""
    a = te.placeholder((m, k), name="A")
    w = te.placeholder((k, n), name="W")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((m, n), lambda i, j: te.sum(a[i, r] * w[r, j], axis=r), name="C")
    return te.create_prim_func([a, w, c])


def _weight_first(m: int, k: int, n: int) -> PrimFunc:
    """``C = W @ A`` with ``A: [k, n]``, ``W: [m, k]`` (parameter 1)."""
    a = te.placeholder((k, n), name="A")
    w = te.placeholder((m, k), name="W")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((m, n), lambda i, j: te.sum(w[i, r] * a[r, j], axis=r), name="C")
    return te.create_prim_func([a, w, c])


def _dense(m: int, k: int, n: int) -> PrimFunc:
    """``C = A @ W^T`` with ``W: [n, k]`` (parameter 1)."""
    a = te.placeholder((m, k), name="A")
    w = te.placeholder((n, k), name="W")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((m, n), lambda i, j: te.sum(a[i, r] * w[j, r], axis=r), name="C")
    return te.create_prim_func([a, w, c])


def _batch_matmul(b: int, m: int, k: int, n: int) -> PrimFunc:
    """``C = A @ W`` batched, ``W: [1, k, n]`` broadcast over the batch."""
    a = te.placeholder((b, m, k), name="A")
    w = te.placeholder((1, k, n), name="W")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((b, m, n), lambda q, i, j: te.sum(a[q, i, r] * w[0, r, j], axis=r),
                   name="C")
    return te.create_prim_func([a, w, c])


def _conv_nhwc(h: int, w_: int, ci: int, kh: int, kw: int, co: int) -> PrimFunc:
    """A stride-1, unpadded NHWC convolution with an HWIO kernel (parameter 1)."""
    x = te.placeholder((1, h, w_, ci), name="X")
    w = te.placeholder((kh, kw, ci, co), name="W")
    rh = te.reduce_axis((0, kh), name="rh")
    rw = te.reduce_axis((0, kw), name="rw")
    rc = te.reduce_axis((0, ci), name="rc")
    c = te.compute((1, h - kh + 1, w_ - kw + 1, co),
                   lambda n, i, j, o: te.sum(x[n, i + rh, j + rw, rc] * w[rh, rw, rc, o],
                                             axis=[rh, rw, rc]), name="C")
    return te.create_prim_func([x, w, c])


def _conv_nhwc_oihw(h: int, w_: int, ci: int, co: int) -> PrimFunc:
    """A 1 x 1 NHWC convolution with an OIHW kernel (parameter 1): the kernel's unit
    dimensions, and a stride of ``ci`` along the output channels (the vector loop),
    which the CPU rules lay out anew (a copy with the channels innermost)."""
    x = te.placeholder((1, h, w_, ci), name="X")
    w = te.placeholder((co, ci, 1, 1), name="W")
    rc = te.reduce_axis((0, ci), name="rc")
    c = te.compute((1, h, w_, co),
                   lambda n, i, j, o: te.sum(x[n, i, j, rc] * w[o, rc, 0, 0], axis=rc),
                   name="C")
    return te.create_prim_func([x, w, c])


def _scaled_sum(shape: tuple[int, ...], wshape: tuple[int, ...]) -> PrimFunc:
    """``C[i, j, l] = sum_k X[i, k, j, l] * W[0, ...]``: a reduction over a middle axis
    of an input scaled by a one-element weight (``Mul`` by a constant, then
    ``ReduceSum``)."""
    x = te.placeholder(shape, name="X")
    w = te.placeholder(wshape, name="W")
    r = te.reduce_axis((0, shape[1]), name="k")
    zero = (0,) * len(wshape)
    c = te.compute((shape[0],) + tuple(shape[2:]),
                   lambda i, j, m: te.sum(x[i, r, j, m] * w[zero], axis=r), name="C")
    return te.create_prim_func([x, w, c])


FUNCS = {
    "matmul_4x1_1x1": lambda: _matmul(4, 1, 1),
    "matmul_1x1_1x1": lambda: _matmul(1, 1, 1),
    "matmul_1x1_1x7": lambda: _matmul(1, 1, 7),
    "matmul_3x1_1x9": lambda: _matmul(3, 1, 9),
    "matmul_16x1_1x32": lambda: _matmul(16, 1, 32),
    "matmul_16x7_7x1": lambda: _matmul(16, 7, 1),
    "matmul_3x5_5x2": lambda: _matmul(3, 5, 2),
    "weight_first_1x1_1x4": lambda: _weight_first(1, 1, 4),
    "weight_first_1x1_1x32": lambda: _weight_first(1, 1, 32),
    "weight_first_7x1_1x24": lambda: _weight_first(7, 1, 24),
    "dense_w1x1": lambda: _dense(4, 1, 1),
    "dense_w1x6": lambda: _dense(8, 6, 1),
    "dense_w16x1": lambda: _dense(8, 1, 16),
    "batch_matmul_w1x1x1": lambda: _batch_matmul(2, 8, 1, 1),
    "batch_matmul_w1x5x16": lambda: _batch_matmul(1, 8, 5, 16),
    "conv_w1x1x1x1": lambda: _conv_nhwc(4, 16, 1, 1, 1, 1),
    "conv_w1x1x1x16": lambda: _conv_nhwc(4, 6, 1, 1, 1, 16),
    "conv_w3x3x1x1": lambda: _conv_nhwc(6, 18, 1, 3, 3, 1),
    "conv_image_1x1_w1x1x3x8": lambda: _conv_nhwc(1, 1, 3, 1, 1, 8),
    "conv_oihw_w16x64x1x1": lambda: _conv_nhwc_oihw(4, 4, 64, 16),
    "conv_oihw_image_1x1_w1x1x1x1": lambda: _conv_nhwc_oihw(1, 1, 1, 1),
    "scaled_sum_w1": lambda: _scaled_sum((2, 3, 4, 5), (1,)),
    "scaled_sum_w11": lambda: _scaled_sum((2, 3, 4, 16), (1, 1)),
    "scaled_sum_w111": lambda: _scaled_sum((1, 1, 1, 8), (1, 1, 1)),
}


def _random(shape, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(
        [int(s) for s in shape]).astype("float32")


def _check_packing_paths(func: PrimFunc, param: int, weight: np.ndarray) -> np.ndarray:
    """``pack_weight`` of ``weight``, after checking it against the scatter, the
    fast path (where it applies) and the block-form preprocessing function."""
    (rw,) = [r for r in layout_rewrites(func) if r.param == param]
    new_shape = [int(s) for s in func.buffer_map[func.params[param]].shape]
    packed = pack_weight(func, param, weight)
    assert list(packed.shape) == new_shape
    imap = IndexMap.parse(rw.index_map)
    np.testing.assert_array_equal(layout._scatter(imap, weight, new_shape), packed)
    fast = layout._split_transpose(imap, weight, new_shape)
    if fast is not None:
        np.testing.assert_array_equal(fast, packed)
    pre = np.full(new_shape, np.nan, "float32")
    run(layout_rewrite_preproc(func, param), weight.copy(), pre)
    np.testing.assert_array_equal(pre, packed)
    # A bijection: every element of the weight lands exactly once.
    np.testing.assert_array_equal(np.sort(packed, axis=None), np.sort(weight, axis=None))
    return packed


def _check_rewritten(before: PrimFunc, after: PrimFunc) -> None:
    """``after`` (a layout-rewritten schedule of ``before``) on the packed weights
    computes what ``before`` does on the original ones (both interpreted)."""
    args = [_random(b.shape, k) for k, b in enumerate(before.buffers)]
    want = [a.copy() for a in args]
    run(before, *want)
    got = [a.copy() for a in args]
    for rw in layout_rewrites(after):
        got[rw.param] = _check_packing_paths(after, rw.param, got[rw.param])
    run(after, *got)
    np.testing.assert_allclose(got[-1], want[-1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_derived_layout_rewrite_of_degenerate_weight_packs_every_path_alike(name):
    """``layout_rewrite`` with the map derived from the loops, on the untiled function:
    unit dimensions that no loop walks drop out of the new layout."""
    func = FUNCS[name]().with_attr("layout_free_buffers", [1])
    sch = Schedule(func)
    block = sch.get_block("C")
    index = next(k for k, r in enumerate(sch.get(block).reads)
                 if r.buffer is func.buffer_map[func.params[1]])
    sch.layout_rewrite(block, index)
    assert layout_rewrites(sch.func)
    _check_rewritten(func, sch.func)


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_default_cpu_rules_pack_degenerate_weight_consistently(name):
    """The CPU rules, with the weight marked packable as for a constant at every call
    site: whatever layout they choose, every packing path agrees and the kernel on the
    packed weight computes the unscheduled result."""
    func = FUNCS[name]()
    target = Target("llvm")
    with target:
        sch = None
        for rule in (dl.cpu.Matmul(), dl.cpu.Reduction()):
            sch = rule.apply(mark_packable(func, [1]), target)
            if sch is not None:
                break
    assert sch is not None, f"no CPU rule scheduled {name}"
    _check_rewritten(func, sch.mod["main"])


@pytest.mark.parametrize("text, shape, new_shape", [
    ("lambda i0, i1: (0,)", (1, 1), [1]),
    ("lambda i0: (0,)", (1,), [1]),
    ("lambda i0, i1: (i1,)", (1, 7), [7]),
    ("lambda i0, i1: (i0,)", (7, 1), [7]),
    ("lambda i0, i1: (i1 // 8, i0, i1 % 8)", (1, 16), [2, 1, 8]),
    ("lambda i0, i1: (i1, i0)", (1, 1), [1, 1]),
    ("lambda i0, i1, i2: (i2, 0, i0)", (3, 1, 5), [5, 1, 3]),
])
def test_pack_weight_paths_agree_on_unit_dimensions(text, shape, new_shape):
    """Index maps over unit dimensions, constants among the new indices: the scatter
    puts every element where the fast path (if it applies) does."""
    imap = IndexMap.parse(text)
    a = _random(shape, 0)
    got = layout._scatter(imap, a, new_shape)
    assert list(got.shape) == new_shape
    np.testing.assert_array_equal(np.sort(got, axis=None), np.sort(a, axis=None))
    fast = layout._split_transpose(imap, a, new_shape)
    if fast is not None:
        np.testing.assert_array_equal(fast, got)


def test_zero_d_weight_is_rewritten_to_one_element():
    """A 0-d weight (a scalar constant broadcast into a reduction) gets the layout
    ``[1]``; every path packs it alike."""
    x = te.placeholder((3, 5), name="X")
    w = te.placeholder((), name="W")
    r = te.reduce_axis((0, 5), name="k")
    c = te.compute((3,), lambda i: te.sum(x[i, r] * w[()], axis=r), name="C")
    func = te.create_prim_func([x, w, c]).with_attr("layout_free_buffers", [1])
    sch = Schedule(func)
    block = sch.get_block("C")
    sch.layout_rewrite(block, 1)
    (rw,) = layout_rewrites(sch.func)
    assert rw.original_shape == ()
    assert [int(s) for s in sch.func.buffer_map[sch.func.params[1]].shape] == [1]
    _check_rewritten(func, sch.func)


ZERO_SIZE = {
    "matmul_no_rows": lambda: _matmul(0, 5, 16),
    "matmul_no_columns": lambda: _matmul(8, 5, 0),
    "matmul_empty_inner": lambda: _matmul(8, 0, 16),
    "conv_empty_row": lambda: _conv_nhwc(3, 0, 2, 1, 1, 8),
    "scaled_sum_empty_middle": lambda: _scaled_sum((2, 3, 0, 16), (1,)),
}


@pytest.mark.parametrize("name", sorted(ZERO_SIZE))
def test_cpu_rules_schedule_zero_size_kernels_without_failing(name):
    """A kernel with a zero-size output or reduction has nothing to tile: the tiling
    rules decline it (none fails half way), a later rule schedules its empty loops,
    and the compiled kernel runs."""
    func = mark_packable(ZERO_SIZE[name](), [1])
    target = Target("llvm")
    with target:
        outcome = dl.apply_rules(func, target, dl.cpu.default_rules())
    assert not outcome.failures, [f.error.message for f in outcome.failures]
    assert outcome.schedule is not None
    scheduled = outcome.schedule.mod["main"]
    args = [_random(b.shape, k) for k, b in enumerate(func.buffers)]
    want = [a.copy() for a in args]
    run(func, *want)
    for rw in layout_rewrites(scheduled):
        args[rw.param] = pack_weight(scheduled, rw.param, args[rw.param])
    rt = irc.build(scheduled.with_attr("global_symbol", "main"), target="llvm")
    tensors = [irc.tensor(a) for a in args]
    rt(*tensors)
    np.testing.assert_array_equal(tensors[-1].numpy(), want[-1])

"""transform_layout and layout_rewrite of a layout-free weight."""

import numpy as np
import pytest
from schedule_helpers import (
    assert_ir,
    assert_print_roundtrip,
    check_llvm,
    check_numeric,
    elementwise3,
    matmul_add,
    schedule_error,
    three_stage,
    verify_trace_roundtrip,
)

from irc.tir import Schedule
from irc.tir.interpreter import run
from irc.tir.schedule import (
    IndexMap,
    layout_rewrite_preproc,
    layout_rewrites,
    pack_weight,
)


def test_transform_layout_intermediate():
    f = elementwise3()
    sch = Schedule(f, debug_mask="all")
    b = sch.get_block("B")
    sch.transform_layout(b, ("write", 0), lambda i, j: (j // 8, i, j % 8))
    assert_ir(sch.func, '''
@T.prim_func
def main(A: T.Buffer((16, 32), "float32"), D: T.Buffer((16, 32), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    B = T.alloc_buffer((4, 16, 8))
    C = T.alloc_buffer((16, 32))
    for i, j in T.grid(16, 32):
        with T.block("B"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(A[v_i, v_j])
            T.writes(B[v_j // 8, v_i, v_j % 8])
            B[v_j // 8, v_i, v_j % 8] = A[v_i, v_j] * T.float32(2.0)
    for i, j in T.grid(16, 32):
        with T.block("C"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(B[v_j // 8, v_i, v_j % 8])
            T.writes(C[v_i, v_j])
            C[v_i, v_j] = B[v_j // 8, v_i, v_j % 8] + T.float32(1.0)
    for i, j in T.grid(16, 32):
        with T.block("D"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(C[v_i, v_j])
            T.writes(D[v_i, v_j])
            D[v_i, v_j] = C[v_i, v_j] * C[v_i, v_j]
''')
    check_numeric(f, sch.func)
    verify_trace_roundtrip(sch, f)
    assert sch.trace.insts[-1].attrs == [["write", 0], "lambda i, j: (j // 8, i, j % 8)"]


def test_transform_layout_by_name_and_text():
    f = elementwise3()
    sch = Schedule(f, debug_mask="all")
    c = sch.get_block("C")
    sch.transform_layout(c, "C", "lambda i, j: (i * 32 + j,)")
    assert [int(s.value) for s in sch.get(c).writes[0].buffer.shape] == [512]
    check_numeric(f, sch.func)
    assert_print_roundtrip(sch.func)


def test_transform_layout_errors():
    f = elementwise3()
    sch = Schedule(f)
    b = sch.get_block("B")
    schedule_error(lambda: sch.transform_layout(b, ("write", 0), lambda i, j: (i, j // 2)),
                   "not a one-to-one map")
    schedule_error(lambda: sch.transform_layout(b, ("write", 0), lambda i, j: (i * j,)),
                   "not affine")
    schedule_error(lambda: sch.transform_layout(b, ("write", 0), lambda i: (i,)),
                   "takes 1 indices")
    schedule_error(lambda: sch.transform_layout(b, ("read", 3), lambda i, j: (i, j)),
                   "out of range")
    schedule_error(lambda: sch.transform_layout(b, ("write", 0), "lambda i, j: (abs(i), j)"),
                   "is not allowed")


def test_index_map_text_roundtrip():
    m = IndexMap.from_callable(lambda i, j: (j // 8, (i - 1) * 3, -j % 4))
    again = IndexMap.parse(m.text())
    assert again.text() == m.text()
    with pytest.raises(Exception, match="must be a lambda"):
        IndexMap.parse("i + 1")


def _tiled_matmul_layout_rewrite():
    f = three_stage()
    sch = Schedule(f, debug_mask="all")
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[4, 4])
    j0, j1 = sch.split(j, factors=[3, 8])
    k0, k1 = sch.split(k, factors=[8, 4])
    sch.reorder(i0, j0, k0, i1, k1, j1)
    sch.layout_rewrite(c, 1)
    return f, sch


def test_layout_rewrite_derived_from_loops():
    f, sch = _tiled_matmul_layout_rewrite()
    w = sch.func.buffer_map[sch.func.params[1]]
    # loops j_0 (3), k_0 (8), k_1 (4), j_1 (8) walk W in that order
    assert [int(s.value) for s in w.shape] == [3, 8, 4, 8]
    (rw,) = layout_rewrites(sch.func)
    assert rw.param == 1 and rw.original_shape == (32, 24)
    assert rw.index_map == "lambda i0, i1: (i1 // 8, i0 // 4, i0 % 4, i1 % 8)"
    check_numeric(f, sch.func, packed=True)
    check_llvm(f, sch.func, packed=True)
    verify_trace_roundtrip(sch, f)
    assert_print_roundtrip(sch.func)


def test_layout_rewrite_preproc_matches_pack_weight():
    f, sch = _tiled_matmul_layout_rewrite()
    weight = np.arange(32 * 24, dtype="float32").reshape(32, 24)
    packed = pack_weight(sch.func, 1, weight)
    assert packed[1, 2, 3, 4] == weight[2 * 4 + 3, 1 * 8 + 4]
    pre = layout_rewrite_preproc(sch.func, 1)
    out = np.zeros_like(packed)
    run(pre, weight, out)
    np.testing.assert_array_equal(out, packed)


def test_layout_rewrite_errors():
    f = matmul_add()
    sch = Schedule(f)
    c = sch.get_block("C")
    schedule_error(lambda: sch.layout_rewrite(c, 1), "layout_rewrite", "not layout-free")
    f3 = three_stage()
    s3 = Schedule(f3)
    c3 = s3.get_block("C")
    schedule_error(lambda: s3.layout_rewrite(c3, 0), "'B' is not a function parameter")
    s3.layout_rewrite(c3, 1, lambda k, j: (j, k))
    check_numeric(f3, s3.func, packed=True)
    schedule_error(lambda: s3.layout_rewrite(c3, 1), "already rewritten")


@pytest.mark.parametrize("text, shape, new_shape", [
    ("lambda i0, i1, i2, i3: (i3 // 32, i0, i1, i2, i3 // 8 % 4, i3 % 8)", (7, 7, 3, 64),
     [2, 7, 7, 3, 4, 8]),
    ("lambda i0, i1, i2, i3: (i3 // 32, i2, i3 // 8 % 4, i3 % 8)", (1, 1, 24, 64),
     [2, 24, 4, 8]),
    ("lambda i0, i1, i2, i3: (i3 // 64, i2 // 16, i3 // 16 % 4, i2 % 16, i3 // 8 % 2, "
     "i3 % 8)", (1, 1, 32, 128), [2, 2, 4, 16, 2, 8]),
    ("lambda i, j: (j // 8, i, j % 8)", (5, 24), [3, 5, 8]),
])
def test_pack_weight_split_transpose_equals_scatter(text, shape, new_shape):
    """The reshape-and-transpose fast path moves every element where the scatter of the
    index map puts it."""
    from irc.tir.schedule import layout

    imap = IndexMap.parse(text)
    a = np.random.default_rng(0).standard_normal(shape).astype("float32")
    fast = layout._split_transpose(imap, a, new_shape)
    assert fast is not None and fast.flags.c_contiguous
    grids = np.indices(shape, dtype=np.int64, sparse=True)
    env = {id(p): g for p, g in zip(imap.params, grids)}
    want = np.empty(new_shape, dtype=a.dtype)
    want[tuple(layout._np_eval(o, env) for o in imap.outputs)] = a
    np.testing.assert_array_equal(fast, want)


@pytest.mark.parametrize("text, shape, new_shape", [
    ("lambda i, j: (j // 8, i, j % 8)", (5, 20), [3, 5, 8]),  # padded to 24 columns
    ("lambda i, j: (i + j, j)", (4, 4), [7, 4]),  # not a split of one dimension
    ("lambda i, j: (j % 8, i)", (4, 16), [8, 4]),  # j // 8 is missing: not a bijection
])
def test_pack_weight_split_transpose_declines_other_maps(text, shape, new_shape):
    from irc.tir.schedule import layout

    a = np.zeros(shape, "float32")
    assert layout._split_transpose(IndexMap.parse(text), a, new_shape) is None


@pytest.mark.parametrize("shape", [[3, 3, 8, 4, 2, 8], [2, 3, 4, 5], [6], [1, 4, 1, 3]])
def test_coalesced_transpose_is_numpys_transpose(shape):
    # Weight packing merges the axes that stay adjacent before copying; every
    # permutation must give numpy's transpose, C-contiguous.
    import itertools

    from irc.tir.schedule.layout import coalesced_transpose

    a = np.random.default_rng(0).random(int(np.prod(shape))).astype("float32")
    for perm in itertools.permutations(range(len(shape))):
        want = np.ascontiguousarray(a.reshape(shape).transpose(perm))
        got = coalesced_transpose(a, list(shape), list(perm))
        assert got.shape == want.shape and got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float16", "int8", "bool", "float64"])
def test_coalesced_transpose_other_dtypes_and_strided_input(dtype):
    # Rows that stay last move as raw bytes: every element size must come back intact,
    # also from a non-contiguous source.
    from irc.tir.schedule.layout import coalesced_transpose

    base = np.random.default_rng(1).integers(0, 2, size=(2, 3, 4, 5 * 2)).astype(dtype)
    a = base[..., ::2]  # strided
    for perm in ([2, 0, 1, 3], [1, 0, 2, 3], [3, 2, 1, 0]):
        want = np.ascontiguousarray(a.transpose(perm))
        got = coalesced_transpose(a, [2, 3, 4, 5], perm)
        assert got.dtype == a.dtype and got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)

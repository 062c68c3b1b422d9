"""te.create_prim_func: block-form PrimFuncs of the shape TVM produces."""

import numpy as np
import pytest

from irc import IRCError, te, topi
from irc.ir import assert_structural_equal, structural_equal
from irc.tir import (
    Block,
    BlockRealize,
    BufferRegion,
    BufferStore,
    FloatImm,
    For,
    IntImm,
    IterVar,
    PrimFunc,
    Range,
    Var,
    const,
    decl_buffer,
    seq,
)
from irc.tir.interpreter import run
from irc.tir.well_formed import check_prim_func


def _grid(loop_vars, extents, body):
    for v, e in reversed(list(zip(loop_vars, extents))):
        body = For(loop_var=v, min=const(0, v.dtype), extent=const(e, v.dtype), kind="serial",
                   body=body)
    return body


def _iv(v, extent, kind="spatial"):
    return IterVar(var=v, dom=Range(min=const(0, v.dtype), extent=const(extent, v.dtype)),
                   iter_type=kind)


def expected_matmul(n, m, kk, index="int32", with_add=False):
    """The matmul(+add) PrimFunc written out by hand, node by node."""
    A = decl_buffer((n, kk), "float32", "A", index_dtype=index)
    B = decl_buffer((kk, m), "float32", "B", index_dtype=index)
    out_name = "matmul" if not with_add else "out"
    mm = decl_buffer((n, m), "float32", "matmul", index_dtype=index)
    i, j, k = (Var(name=x, dtype=index) for x in "ijk")
    vi, vj, vk = (Var(name=f"v_{x}", dtype=index) for x in "ijk")
    store = BufferStore(buffer=mm, indices=(vi, vj), value=mm[vi, vj] + A[vi, vk] * B[vk, vj])
    block = Block(
        name="matmul",
        iter_vars=(_iv(vi, n), _iv(vj, m), _iv(vk, kk, "reduce")),
        reads=(BufferRegion.from_indices(A, (vi, vk)), BufferRegion.from_indices(B, (vk, vj))),
        writes=(BufferRegion.from_indices(mm, (vi, vj)),),
        body=store,
        init=BufferStore(buffer=mm, indices=(vi, vj), value=FloatImm(dtype="float32", value=0.0)),
    )
    stages = [_grid([i, j, k], [n, m, kk], BlockRealize(iter_values=(i, j, k),
                                                         predicate=const(True), block=block))]
    params = [A, B]
    allocs = ()
    if with_add:
        C = decl_buffer((n, m), "float32", "C", index_dtype=index)
        out = decl_buffer((n, m), "float32", out_name, index_dtype=index)
        i2, j2 = Var(name="i", dtype=index), Var(name="j", dtype=index)
        wi, wj = Var(name="v_i", dtype=index), Var(name="v_j", dtype=index)
        add_block = Block(
            name="out", iter_vars=(_iv(wi, n), _iv(wj, m)),
            reads=(BufferRegion.from_indices(mm, (wi, wj)), BufferRegion.from_indices(C, (wi, wj))),
            writes=(BufferRegion.from_indices(out, (wi, wj)),),
            body=BufferStore(buffer=out, indices=(wi, wj), value=mm[wi, wj] + C[wi, wj]))
        stages.append(_grid([i2, j2], [n, m], BlockRealize(iter_values=(i2, j2),
                                                            predicate=const(True),
                                                            block=add_block)))
        params += [C, out]
        allocs = (mm,)
    else:
        params.append(mm)
    root = Block(name="root", iter_vars=(), reads=(), writes=(), body=seq(*stages),
                 alloc_buffers=allocs)
    handles = [Var(name=b.name, dtype="handle") for b in params]
    attrs = {"global_symbol": "main", "tir.noalias": True}
    if with_add:
        attrs["layout_free_buffers"] = [1]
    return PrimFunc(params=tuple(handles), buffer_map=dict(zip(handles, params)),
                    body=BlockRealize(iter_values=(), predicate=const(True), block=root),
                    attrs=attrs)


def te_matmul(n, m, kk):
    A = te.placeholder((n, kk), name="A")
    B = te.placeholder((kk, m), name="B")
    k = te.reduce_axis((0, kk), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul")
    return A, B, C


def test_matmul_matches_hand_written_block_form():
    A, B, C = te_matmul(16, 8, 4)
    func = te.create_prim_func([A, B, C])
    assert_structural_equal(func, expected_matmul(16, 8, 4))
    check_prim_func(func)


def test_matmul_add_seed_002_with_layout_free_placeholder():
    A, B, _ = te_matmul(0, 0, 0)  # unused; the seed's misspelt attribute is tested below
    N = L = M = 64
    A = te.placeholder((N, L), name="A")
    B = te.placeholder((L, M), name="B")
    C = te.placeholder((N, M), name="C")
    k = te.reduce_axis((0, L), name="k")
    mm = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul",
                    attrs={"layout_free_placeholers": [B]})
    out = te.compute((N, M), lambda i, j: mm[i, j] + C[i, j], name="out")
    func = te.create_prim_func([A, B, C, out])
    assert_structural_equal(func, expected_matmul(N, M, L, with_add=True))
    assert func.attrs["layout_free_buffers"] == [1]
    # The correctly spelt attribute works the same and is not left on the block.
    mm2 = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul",
                     attrs={"layout_free_placeholders": [B]})
    out2 = te.compute((N, M), lambda i, j: mm2[i, j] + C[i, j], name="out")
    func2 = te.create_prim_func([A, B, C, out2])
    assert structural_equal(func, func2)
    # And it computes A @ B + C.
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal((64, 64)).astype("float32") for _ in range(3))
    o = np.zeros((64, 64), "float32")
    run(func, a, b, c, o)
    np.testing.assert_allclose(o, a @ b + c, rtol=1e-4, atol=1e-4)


def test_int64_index_override_matches_int64_shapes():
    A, B, C = te_matmul(16, 8, 4)
    func = te.create_prim_func([A, B, C], index_dtype_override="int64")
    assert_structural_equal(func, expected_matmul(16, 8, 4, index="int64"))
    check_prim_func(func)
    # te written directly with int64 shapes gives the same function.
    i64 = [IntImm(dtype="int64", value=v) for v in (16, 8, 4)]
    A2 = te.placeholder((i64[0], i64[2]), name="A")
    B2 = te.placeholder((i64[2], i64[1]), name="B")
    k = te.reduce_axis((IntImm(dtype="int64", value=0), i64[2]), name="k")
    C2 = te.compute((i64[0], i64[1]), lambda i, j: te.sum(A2[i, k] * B2[k, j], axis=k),
                    name="matmul")
    assert_structural_equal(te.create_prim_func([A2, B2, C2]), func)


def _blocks(func):
    found = []

    def walk(s):
        if isinstance(s, BlockRealize):
            found.append(s.block)
            walk(s.block.body)
        elif isinstance(s, For):
            walk(s.body)
        elif hasattr(s, "seq"):
            for x in s.seq:
                walk(x)
    walk(func.body)
    return found


def conv2d_layer(N, H, W, CO, CI, KH, KW, stride, padding):
    data = te.placeholder((N, CI, H, W), name="data")
    kernel = te.placeholder((CO, CI, KH, KW), name="kernel")
    bias = te.placeholder((1, CO, 1, 1), name="bias")
    conv = topi.nn.conv2d_nchw(data, kernel, stride, padding, dilation=1, out_dtype="float32")
    out = topi.nn.relu(conv + bias)
    return [data, kernel, bias, out]


def test_conv2d_bias_relu_seed_000():
    tensors = conv2d_layer(1, 7, 7, 8, 4, 3, 3, (1, 1), (1, 1))
    func = te.create_prim_func(tensors)
    check_prim_func(func)
    blocks = _blocks(func)
    assert [b.name for b in blocks] == ["root", "pad_temp", "conv2d_nchw", "T_add", "T_relu"]
    assert [b.name for b in blocks[0].alloc_buffers] == ["pad_temp", "conv2d_nchw", "T_add"]
    conv = blocks[2]
    assert [iv.iter_type for iv in conv.iter_vars] == ["spatial"] * 4 + ["reduce"] * 3
    assert [iv.var.name for iv in conv.iter_vars] == ["v_nn", "v_ff", "v_yy", "v_xx", "v_rc",
                                                      "v_ry", "v_rx"]
    assert [r.buffer.name for r in conv.reads] == ["pad_temp", "kernel"]
    assert conv.init is not None
    # The padding stage reads the input at a point; the bias is read broadcast.
    assert [r.buffer.name for r in blocks[1].reads] == ["data"]
    assert all(structural_equal(r.extent, const(1)) for r in blocks[1].reads[0].region)
    bias_read = blocks[3].reads[1]
    assert bias_read.buffer.name == "bias"
    assert structural_equal(bias_read.region[2].min, const(0))
    rng = np.random.default_rng(2)
    d = rng.standard_normal((1, 4, 7, 7)).astype("float32")
    w = rng.standard_normal((8, 4, 3, 3)).astype("float32")
    b = rng.standard_normal((1, 8, 1, 1)).astype("float32")
    o = np.zeros((1, 8, 7, 7), "float32")
    run(func, d, w, b, o)
    dp = np.pad(d, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros_like(o)
    for y in range(3):
        for x in range(3):
            ref += np.einsum("nchw,oc->nohw", dp[:, :, y:y + 7, x:x + 7], w[:, :, y, x])
    np.testing.assert_allclose(o, np.maximum(ref + b, 0), rtol=1e-4, atol=1e-4)


def test_softmax_blocks_and_reduction_inits():
    x = te.placeholder((2, 5), name="x")
    func = te.create_prim_func([x, topi.nn.softmax(x)])
    check_prim_func(func)
    blocks = _blocks(func)
    assert [b.name for b in blocks] == ["root", "T_softmax_maxelem", "T_softmax_exp",
                                       "T_softmax_expsum", "T_softmax_norm"]
    maxelem, expsum = blocks[1], blocks[3]
    assert maxelem.init.value.value == float("-inf")  # a row of -inf keeps its maximum
    assert expsum.init.value.value == 0.0
    assert blocks[4].annotations == {"axis": 1}
    xs = np.random.default_rng(3).standard_normal((2, 5)).astype("float32")
    o = np.zeros_like(xs)
    run(func, xs, o)
    e = np.exp(xs - xs.max(axis=1, keepdims=True))
    np.testing.assert_allclose(o, e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def test_duplicate_stage_names_get_unique_blocks_and_buffers():
    x = te.placeholder((4,), name="x")
    y = topi.add(topi.add(x, 1.0), 2.0)
    func = te.create_prim_func([x, y])
    blocks = _blocks(func)
    assert [b.name for b in blocks[1:]] == ["T_add", "T_add_1"]
    assert [b.name for b in func.buffers] == ["x", "T_add_1"]


def test_reduction_with_where_and_zero_dim_output():
    A = te.placeholder((6,), name="A")
    k = te.reduce_axis((0, 6), name="k")
    s = te.compute((), lambda: te.sum(A[k], axis=k, where=k % 2 == 0), name="s")
    func = te.create_prim_func([A, s])
    check_prim_func(func)
    a = np.arange(6, dtype="float32")
    o = np.zeros((), "float32")
    run(func, a, o)
    assert o == 0 + 2 + 4
    c = te.compute((), lambda: te.const(3.0), name="c")
    func = te.create_prim_func([c])
    blk = _blocks(func)[1]
    assert [iv.var.name for iv in blk.iter_vars] == ["vi"]
    o = np.zeros((), "float32")
    run(func, o)
    assert o == 3.0


def test_scalar_var_parameter_and_symbolic_shape():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    func = te.create_prim_func([A, B])
    check_prim_func(func)
    a = np.arange(5, dtype="float32")
    b = np.zeros(5, "float32")
    run(func, a, b)
    np.testing.assert_array_equal(b, a * 2)
    alpha = te.var("alpha", "float32")
    C = te.compute((n,), lambda i: A[i] * alpha, name="C")
    func = te.create_prim_func([A, alpha, C])
    assert len(func.params) == 3 and func.params[1] is alpha
    c = np.zeros(5, "float32")
    run(func, a, 3.0, c)
    np.testing.assert_array_equal(c, a * 3)


def test_errors_name_the_problem():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(IRCError, match="placeholder A .* not passed"):
        te.create_prim_func([B])
    k = te.reduce_axis((0, 4), name="k")
    with pytest.raises(IRCError, match="whole body"):
        te.compute((1,), lambda i: te.sum(A[k], axis=k) + 1.0, name="bad")
    with pytest.raises(IRCError, match="listed twice"):
        te.create_prim_func([A, B, B])
    with pytest.raises(IRCError, match="takes 2 index arguments"):
        te.compute((4,), lambda i, j: A[i], name="bad")
    with pytest.raises(IRCError, match="indexed with 2"):
        te.compute((4,), lambda i: A[i, i], name="bad")
    with pytest.raises(IRCError, match="depends on another axis"):
        def tri(i):
            r = te.reduce_axis((0, i + 1), name="r")
            return te.sum(A[r], axis=r)
        te.create_prim_func([A, te.compute((4,), tri, name="tri")])

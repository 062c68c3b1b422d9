"""ComputeDAG: printing in the seeds' notation, operation order, FLOP counts, keys."""

import json

import pytest

from irc import IRCError, te, topi
from irc.tir import Select, const


def matmul_add(n, kk, m, dtype="float32"):
    A = te.placeholder((n, kk), name="A", dtype=dtype)
    B = te.placeholder((kk, m), name="B", dtype=dtype)
    C = te.placeholder((n, m), name="C", dtype=dtype)
    k = te.reduce_axis((0, kk), name="k")
    matmul = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul",
                        attrs={"layout_free_placeholers": [B]})
    out = te.compute((n, m), lambda i, j: matmul[i, j] + C[i, j], name="out")
    return [A, B, C, out]


def test_seed_002_matmul_add_prints_exactly():
    dag = te.ComputeDAG(matmul_add(1024, 1024, 1024))
    assert str(dag) == (
        "A = PLACEHOLDER [1024, 1024]\n"
        "B = PLACEHOLDER [1024, 1024]\n"
        "matmul(i, j) += (A[i, k]*B[k, j])\n"
        "C = PLACEHOLDER [1024, 1024]\n"
        "out(i, j) = (matmul[i, j] + C[i, j])\n"
    )


def test_topological_order_puts_producers_first():
    dag = te.ComputeDAG(matmul_add(8, 8, 8))
    assert [op.name for op in dag.ops] == ["A", "B", "matmul", "C", "out"]


def test_seed_004_conv2d_nhwc_without_padding():
    p0 = te.placeholder((1, 56, 56, 64), name="p0")
    p1 = te.placeholder((1, 1, 64, 64), name="p1")
    out = topi.nn.conv2d_nhwc(p0, p1, 1, 0)
    assert str(te.ComputeDAG([p0, p1, out])) == (
        "p0 = PLACEHOLDER [1, 56, 56, 64]\n"
        "pad_temp(i0, i1, i2, i3) = p0[i0, i1, i2, i3]\n"
        "p1 = PLACEHOLDER [1, 1, 64, 64]\n"
        "conv2d_nhwc(nn, yy, xx, ff) += (pad_temp[nn, (yy + ry), (xx + rx), rc]"
        "*p1[ry, rx, rc, ff])\n"
    )


def test_seed_004_conv2d_bias_relu_nhwc():
    p0 = te.placeholder((1, 14, 14, 256), name="p0")
    p1 = te.placeholder((3, 3, 256, 512), name="p1")
    p2 = te.placeholder((1, 1, 1, 512), name="p2")
    out = topi.nn.relu(topi.nn.conv2d_nhwc(p0, p1, 2, 1) + p2)
    assert str(te.ComputeDAG([p0, p1, p2, out])) == (
        "p0 = PLACEHOLDER [1, 14, 14, 256]\n"
        "pad_temp(i0, i1, i2, i3) = tir.if_then_else(((((i1 >= 1) && (i1 < 15)) && (i2 >= 1)) "
        "&& (i2 < 15)), p0[i0, (i1 - 1), (i2 - 1), i3], 0f)\n"
        "p1 = PLACEHOLDER [3, 3, 256, 512]\n"
        "conv2d_nhwc(nn, yy, xx, ff) += (pad_temp[nn, ((yy*2) + ry), ((xx*2) + rx), rc]"
        "*p1[ry, rx, rc, ff])\n"
        "p2 = PLACEHOLDER [1, 1, 1, 512]\n"
        "T_add(ax0, ax1, ax2, ax3) = (conv2d_nhwc[ax0, ax1, ax2, ax3] + p2[ax0, 0, 0, ax3])\n"
        "T_relu(ax0, ax1, ax2, ax3) = max(T_add[ax0, ax1, ax2, ax3], 0f)\n"
    )


def test_seed_004_softmax_dense_and_pooling():
    p0 = te.placeholder((1, 1000), name="p0")
    sm = topi.nn.softmax(p0)
    assert str(te.ComputeDAG([p0, sm])) == (
        "p0 = PLACEHOLDER [1, 1000]\n"
        "T_softmax_maxelem(i0) max= p0[i0, k]\n"
        "T_softmax_exp(i0, i1) = tir.exp((p0[i0, i1] - T_softmax_maxelem[i0]))\n"
        "T_softmax_expsum(i0) += T_softmax_exp[i0, k]\n"
        "T_softmax_norm(i0, i1) = (T_softmax_exp[i0, i1]/T_softmax_expsum[i0])\n"
    )
    x = te.placeholder((1, 512), name="p0")
    w = te.placeholder((1000, 512), name="p1")
    b = te.placeholder((1, 1000), name="p2")
    dense = topi.nn.dense(x, w) + b
    assert str(te.ComputeDAG([x, w, b, dense])) == (
        "p0 = PLACEHOLDER [1, 512]\n"
        "p1 = PLACEHOLDER [1000, 512]\n"
        "T_matmul_NT(i, j) += (p0[i, k]*p1[j, k])\n"
        "p2 = PLACEHOLDER [1, 1000]\n"
        "T_add(ax0, ax1) = (T_matmul_NT[ax0, ax1] + p2[ax0, ax1])\n"
    )
    p = te.placeholder((1, 112, 112, 64), name="p0")
    pool = topi.nn.max_pool2d(p, 3, 2, 1, layout="NHWC")
    assert str(te.ComputeDAG([p, pool])) == (
        "p0 = PLACEHOLDER [1, 112, 112, 64]\n"
        "pad_temp(ax0, ax1, ax2, ax3) = tir.if_then_else(((((ax1 >= 1) && (ax1 < 113)) && "
        "(ax2 >= 1)) && (ax2 < 113)), p0[ax0, (ax1 - 1), (ax2 - 1), ax3], -3.40282e+38f)\n"
        "pool_max(ax0, ax1, ax2, ax3) max= pad_temp[ax0, ((ax1*2) + rv0), ((ax2*2) + rv1), ax3]\n"
    )
    g = te.placeholder((1, 7, 7, 512), name="p0")
    ap = topi.nn.adaptive_pool(g, (1, 1), "avg", layout="NHWC")
    assert str(te.ComputeDAG([g, ap])).splitlines()[1] == (
        "adaptive_pool_sum(ax0, ax1, ax2, ax3) += p0[ax0, ((ax1*7) + rv0), ((ax2*7) + rv1), ax3]"
    )


def test_select_floordiv_cast_and_bool_forms():
    A = te.placeholder((16,), name="A", dtype="int32")
    out = te.compute((4, 4), lambda i, j: te.if_then_else(
        (te.floormod(i, 4) == 3) & (te.floordiv(j, 2) == 1),
        A[i * 4 + j].astype("float32"), te.const(0.5, "float32")), name="B")
    line = str(te.ComputeDAG([A, out])).splitlines()[1]
    assert line == ("B(i, j) = tir.if_then_else(((floormod(i, 4) == 3) && (floordiv(j, 2) == 1)), "
                    "float32(A[((i*4) + j)]), 0.5f)")
    sel = te.compute((4,), lambda i: Select(dtype="float32", condition=const(True),
                                            true_value=te.const(1.0), false_value=te.const(0.0)),
                     name="S")
    assert str(te.ComputeDAG([sel])).strip() == "S(i) = select((bool)1, 1f, 0f)"


def test_long_lines_are_shortened_in_the_middle():
    A = te.placeholder((4,), name="A")
    def body(i):
        e = A[i]
        for _ in range(40):
            e = e + A[i]
        return e
    out = te.compute((4,), body, name="long")
    line = str(te.ComputeDAG([A, out])).splitlines()[1]
    assert " ..(OMITTED).. " in line
    assert len(line) == 128 + len(" ..(OMITTED).. ") + 128
    assert line.startswith("long(i) = (((")


def test_flop_count():
    assert te.ComputeDAG(matmul_add(1024, 1024, 1024)).flop_count() == 2 * 1024**3 + 1024**2
    p0 = te.placeholder((1, 8, 8, 4), name="p0")
    p1 = te.placeholder((3, 3, 4, 6), name="p1")
    conv = topi.nn.conv2d_nhwc(p0, p1, 1, 1)
    # Padding moves data only; each output element does 3*3*4 multiply-adds.
    assert te.ComputeDAG([p0, p1, conv]).flop_count() == 2 * (1 * 8 * 8 * 6) * 3 * 3 * 4
    n = te.var("n")
    X = te.placeholder((n, 4), name="X")
    assert te.ComputeDAG([X, topi.exp(X)]).flop_count() == -1.0


def test_workload_key_is_structural():
    key1 = json.loads(te.ComputeDAG(matmul_add(32, 16, 8)).workload_key())
    key2 = json.loads(te.ComputeDAG(matmul_add(32, 16, 8)).workload_key())
    key3 = json.loads(te.ComputeDAG(matmul_add(32, 16, 4)).workload_key())
    assert key1 == key2
    assert key1[0] != key3[0]
    assert len(key1[0]) == 32
    assert key1[1:] == [[32, 16], [16, 8], [32, 8], [32, 8]]


def test_dag_rejects_non_tensors():
    with pytest.raises(IRCError, match="te tensors"):
        te.ComputeDAG([1, 2])

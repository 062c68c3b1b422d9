"""te tensors, operations, reducers and the intrinsic builders."""

import numpy as np
import pytest

from irc import IRCError, te, tir
from irc.tir import Call, FloatImm, Max, Reduce, Select
from irc.tir.interpreter import run


def test_tensor_and_operation_attributes():
    A = te.placeholder((4, 5), name="A", dtype="float16")
    k = te.reduce_axis((0, 5), name="k")
    S = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="S", tag="reduce")
    assert A.ndim == 2 and A.dtype == "float16" and A.name == "A"
    assert [int(s) for s in A.shape] == [4, 5]
    assert S.op.input_tensors == [A]
    assert [ax.var.name for ax in S.op.axis] == ["i"]
    assert [ax.var.name for ax in S.op.reduce_axis] == ["k"]
    assert S.op.reduce_axis[0].iter_type == "reduce"
    assert S.op.tag == "reduce" and S.op.output(0) is S
    assert isinstance(S.op.body, Reduce) and S.op.body.kind == "sum"
    assert repr(A) == "Tensor(shape=[4, 5], op.name=A, dtype=float16)"
    # A[i, k] and A(i, k) are the same load; loads are BufferLoads of the tensor's buffer.
    assert S.op.body.source.buffer is A.buffer
    T = te.compute((4, 5), lambda *idx: A(*idx) * 2, name="T")
    assert [ax.var.name for ax in T.op.axis] == ["i0", "i1"]


def test_reduce_axis_arithmetic_and_where():
    A = te.placeholder((10,), name="A")
    r = te.reduce_axis((0, 3), name="r")
    out = te.compute((4,), lambda i: te.max(A[i * 2 + r], axis=r, where=r < 2), name="out")
    func = te.create_prim_func([A, out])
    a = np.arange(10, dtype="float32")[::-1].copy()
    o = np.zeros(4, "float32")
    run(func, a, o)
    np.testing.assert_array_equal(o, [a[2 * i:2 * i + 2].max() for i in range(4)])


def test_reducers_with_two_operands_are_elementwise():
    x, y = tir.var("x", "float32"), tir.var("y", "float32")
    assert isinstance(te.max(x, y), Max)
    assert isinstance(te.sum(x, 1.0), tir.Add)
    with pytest.raises(IRCError, match="te.min needs axis"):
        te.min(x)


def test_reduction_init_value():
    A = te.placeholder((3, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    out = te.compute((3,), lambda i: te.sum(A[i, k], axis=k, init=10.0), name="out")
    a = np.ones((3, 4), "float32")
    o = np.zeros(3, "float32")
    run(te.create_prim_func([A, out]), a, o)
    np.testing.assert_array_equal(o, [14, 14, 14])


def test_intrinsic_builders_check_arguments():
    x = tir.var("x", "float32")
    e = tir.exp(x)
    assert isinstance(e, Call) and e.op == "exp" and e.dtype == "float32"
    assert tir.pow(x, 2).args[1].dtype == "float32"
    assert isinstance(tir.sqrt(2), Call) and isinstance(tir.sqrt(2).args[0], FloatImm)
    assert tir.isnan(x).dtype == "bool"
    assert isinstance(tir.abs(tir.var("i")), Select)
    assert tir.reinterpret("int32", x).dtype == "int32"
    with pytest.raises(IRCError, match="exp needs floating-point arguments, got int32"):
        tir.exp(tir.var("i"))
    with pytest.raises(IRCError, match="shift_left needs integer arguments"):
        tir.shift_left(x, x)
    with pytest.raises(IRCError, match="changes the bit width"):
        tir.reinterpret("int64", x)
    with pytest.raises(IRCError, match="unknown intrinsic 'frobnicate'"):
        tir.call_intrin("frobnicate", x)
    assert "exp" in tir.intrin.INTRINSICS and tir.intrin.get_intrinsic("fmod").num_args == 2


def test_te_builders_reject_bad_input():
    with pytest.raises(IRCError, match="shape dimension -1 is negative"):
        te.placeholder((2, -1), name="bad")
    with pytest.raises(IRCError, match="must be an integer"):
        te.placeholder((2.5,), name="bad")
    with pytest.raises(IRCError, match="dom must be"):
        te.reduce_axis(5)
    A = te.placeholder((3,), name="A")
    with pytest.raises(IRCError, match="returned a whole tensor"):
        te.compute((3,), lambda i: A, name="bad")
    with pytest.raises(IRCError, match="several outputs"):
        te.compute((3,), lambda i: (A[i], A[i]), name="bad")
    B = tir.decl_buffer((3,), "float32", "B")
    with pytest.raises(IRCError, match="reads buffer B, which is not a te tensor"):
        te.compute((3,), lambda i: B[i], name="bad")
    with pytest.raises(IRCError, match="axis must be a te.reduce_axis or a non-empty list"):
        te.compute((3,), lambda i: te.sum(A[i], axis=[]), name="bad")
    with pytest.raises(IRCError, match="cannot make a int32 constant of 'x'; give a number"):
        tir.var("n") + "x"

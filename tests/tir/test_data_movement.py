"""Whole-array evaluation of data-movement loop functions (FoldConstant's fast path),
checked element for element against the reference interpreter; functions of any other
form are declined with nothing written."""

import numpy as np
import pytest

from irc import te, topi
from irc.script import tir as T
from irc.tir.interpreter import run
from irc.tir.interpreter.data_movement import run_data_movement

RNG = np.random.default_rng(7)


def arrays_for(func_tensors):
    out = []
    for t in func_tensors:
        shape = tuple(int(s) for s in t.shape)
        if t.dtype == "bool":
            out.append(RNG.random(shape) < 0.5)
        elif t.dtype.startswith("int"):
            out.append(RNG.integers(-100, 100, shape).astype(t.dtype))
        else:
            out.append(RNG.standard_normal(shape).astype(t.dtype))
    return out


def both_ways(inputs, output):
    """The function's output from the fast path and from the interpreter."""
    func = te.create_prim_func(list(inputs) + [output])
    ins = arrays_for(inputs)
    shape = tuple(int(s) for s in output.shape)
    fast = np.zeros(shape, dtype=output.dtype)
    assert run_data_movement(func, ins + [fast]), "declined a data movement"
    ref = np.zeros(shape, dtype=output.dtype)
    run(func, *ins, ref)
    return fast, ref


CASES = {
    "transpose": lambda x: topi.transpose(x, (2, 0, 3, 1)),
    "reshape_flat": lambda x: topi.reshape(x, (-1,)),
    "reshape_odd": lambda x: topi.reshape(x, (12, 35)),
    "expand_dims": lambda x: topi.expand_dims(x, 1, 2),
    "squeeze_like": lambda x: topi.reshape(x, (1, 3, 7, 2, 1, 10)),
    "slice_stride2": lambda x: topi.strided_slice(x, [0, 1, 0, 1], [3, 7, 2, 10], [1, 2, 1, 3]),
    "slice_reverse": lambda x: topi.strided_slice(x, [2, 6, 1, 9], [-4, -8, -3, -11],
                                                  [-1, -1, -1, -2]),
    "pad": lambda x: topi.nn.pad(x, [1, 0, 2, 3], [0, 2, 1, 1], pad_value=3),
    "tile": lambda x: topi.tile(x, (2, 1, 1, 2)),
    "repeat": lambda x: topi.repeat(x, 2, axis=2),
    "flatten": lambda x: topi.flatten(x, 1, 2),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", ["float32", "int64", "float16"])
def test_matches_interpreter(name, dtype):
    x = te.placeholder((3, 7, 2, 10), dtype=dtype, name="x")  # a prime extent, odd ones
    fast, ref = both_ways([x], CASES[name](x))
    np.testing.assert_array_equal(fast, ref)


def test_concatenate_and_bool():
    a = te.placeholder((2, 3), dtype="bool", name="a")
    b = te.placeholder((5, 3), dtype="bool", name="b")
    fast, ref = both_ways([a, b], topi.concatenate([a, b], axis=0))
    np.testing.assert_array_equal(fast, ref)


def test_zero_dimensional_and_empty():
    x = te.placeholder((), dtype="float32", name="x")
    fast, ref = both_ways([x], topi.reshape(x, (1, 1)))
    np.testing.assert_array_equal(fast, ref)
    y = te.placeholder((0, 4), dtype="float32", name="y")
    fast, ref = both_ways([y], topi.transpose(y))
    assert fast.shape == ref.shape == (4, 0)


def declined(func, *arrays):
    before = [a.copy() for a in arrays]
    assert not run_data_movement(func, list(arrays))
    for a, b in zip(arrays, before):
        np.testing.assert_array_equal(a, b)  # nothing written


def test_declines_arithmetic_and_reductions():
    x = te.placeholder((4, 5), name="x")
    for out in (topi.add(x, x), topi.sum(x, axis=1), topi.exp(x)):
        func = te.create_prim_func([x, out])
        declined(func, np.ones((4, 5), "float32"),
                 np.zeros(tuple(int(s) for s in out.shape), "float32"))


def test_an_empty_reduction_is_its_start_value():
    # A reduction over an empty axis is a block storing its start value (the maximum's
    # lowest value) at every output element: evaluated exactly.
    x = te.placeholder((3, 0), name="x")
    func = te.create_prim_func([x, topi.max(x, axis=1)])
    out = np.zeros(3, "float32")
    assert run_data_movement(func, [np.zeros((3, 0), "float32"), out])
    np.testing.assert_array_equal(out, np.full(3, -np.inf, "float32"))


def test_declines_shape_mismatch_and_scalar_params():
    x = te.placeholder((4, 5), name="x")
    func = te.create_prim_func([x, topi.transpose(x)])
    declined(func, np.ones((5, 4), "float32"), np.zeros((5, 4), "float32"))
    declined(func, np.ones((4, 5), "float64"), np.zeros((5, 4), "float32"))


@T.prim_func
def out_of_bounds(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi + 1]


@T.prim_func
def not_injective(A: T.Buffer((8,), "float32"), B: T.Buffer((4,), "float32")):
    for i, j in T.grid(4, 2):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi] = A[vi * 2 + vj]


@T.prim_func
def int32_wraps(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[(vi + 2147483647) - 2147483647]


def test_declines_what_the_interpreter_must_judge():
    a = np.arange(8, dtype="float32")
    declined(out_of_bounds, a, np.zeros(8, "float32"))
    declined(not_injective, a, np.zeros(4, "float32"))
    declined(int32_wraps, a, np.zeros(8, "float32"))


def test_guarded_load_out_of_range_is_not_evaluated():
    # pad reads the input only where the guard holds: the other points would be out of
    # bounds, and must neither fail nor be used.
    x = te.placeholder((3, 4), name="x")
    out = topi.nn.pad(x, [2, 2], [2, 2], pad_value=-1.0)
    fast, ref = both_ways([x], out)
    np.testing.assert_array_equal(fast, ref)

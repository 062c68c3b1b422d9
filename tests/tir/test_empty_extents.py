"""Loop functions over empty domains: a reduction whose reduction extent is 0 (a
matrix product with an empty inner dimension) stores its start value everywhere, and
padding an empty tensor is a data movement FoldConstant evaluates like any other."""

import numpy as np
import pytest

import irc
from irc import te, tir, topi
from irc.core.functor import post_order_visit
from irc.ir import BlockBuilder, Var, ops, tensor_sinfo
from irc.ir.expr import Constant
from irc.tir.interpreter import run
from irc.tir.interpreter.data_movement import run_data_movement
from irc.tir.stmt import Block, PrimFunc


def _blocks(func: PrimFunc) -> list[Block]:
    out: list[Block] = []

    def visit(x) -> None:
        if isinstance(x, Block) and x.name != "root":
            out.append(x)

    post_order_visit(func.body, visit)
    return out


def _compiled(func: PrimFunc, *arrays: np.ndarray) -> np.ndarray:
    rt = irc.build(func.with_attr("global_symbol", "main"), target="llvm")
    tensors = [irc.tensor(a.copy()) for a in arrays]
    rt(*tensors)
    return tensors[-1].numpy()


# kind -> (reducer, the value of a reduction over nothing)
REDUCERS = {
    "sum": (te.sum, 0.0),
    "max": (te.max, -np.inf),
    "min": (te.min, np.inf),
}


@pytest.mark.parametrize("kind", sorted(REDUCERS))
def test_reduction_over_an_empty_axis_stores_its_start_value(kind):
    reducer, start = REDUCERS[kind]
    a = te.placeholder((3, 0), name="A")
    b = te.placeholder((0, 4), name="B")
    k = te.reduce_axis((0, 0), name="k")
    c = te.compute((3, 4), lambda i, j: reducer(a[i, k] * b[k, j], axis=k), name="C")
    func = te.create_prim_func([a, b, c])
    (block,) = _blocks(func)
    assert block.init is None and all(iv.iter_type != "reduce" for iv in block.iter_vars)
    args = [np.zeros((3, 0), "float32"), np.zeros((0, 4), "float32"),
            np.full((3, 4), np.nan, "float32")]
    run(func, *args)
    np.testing.assert_array_equal(args[-1], np.full((3, 4), start, "float32"))
    np.testing.assert_array_equal(_compiled(func, *args), np.full((3, 4), start, "float32"))


def test_reduction_over_an_empty_axis_with_an_init_value_stores_it():
    a = te.placeholder((5, 0), name="A")
    k = te.reduce_axis((0, 0), name="k")
    c = te.compute((5,), lambda i: te.sum(a[i, k], axis=k, init=tir.const(2.5, "float32")),
                   name="C")
    func = te.create_prim_func([a, c])
    args = [np.zeros((5, 0), "float32"), np.zeros((5,), "float32")]
    run(func, *args)
    np.testing.assert_array_equal(args[-1], np.full((5,), 2.5, "float32"))


def test_reduction_over_one_empty_axis_of_several_stores_its_start_value():
    """One empty reduction axis empties the whole domain, whatever the others."""
    a = te.placeholder((2, 3, 0), name="A")
    r1 = te.reduce_axis((0, 3), name="r1")
    r2 = te.reduce_axis((0, 0), name="r2")
    c = te.compute((2,), lambda i: te.sum(a[i, r1, r2], axis=[r1, r2]), name="C")
    func = te.create_prim_func([a, c])
    args = [np.zeros((2, 3, 0), "float32"), np.full((2,), np.nan, "float32")]
    run(func, *args)
    np.testing.assert_array_equal(args[-1], np.zeros((2,), "float32"))


def test_padding_an_empty_tensor_is_a_data_movement():
    x = te.placeholder((0, 3), name="x")
    y = topi.nn.pad(x, [1, 0], [1, 2], pad_value=1.5)
    func = te.create_prim_func([x, y])
    src = np.zeros((0, 3), "float32")
    fast = np.zeros((2, 5), "float32")
    assert run_data_movement(func, [src, fast])
    ref = np.zeros((2, 5), "float32")
    run(func, src, ref)
    np.testing.assert_array_equal(fast, ref)
    np.testing.assert_array_equal(fast, np.full((2, 5), 1.5, "float32"))


def test_fold_constant_pads_an_empty_constant():
    bb = BlockBuilder()
    x = Var(name_hint="x", struct_info=tensor_sinfo((2, 3)))
    with bb.function("main", [x]):
        with bb.dataflow():
            empty = Constant.from_numpy(np.zeros((0, 3), "float32"))
            padded = bb.emit(ops.nn.pad(empty, [1, 1, 0, 0], pad_value=1.5))
            out = bb.emit_output(bb.emit(ops.add(x, padded)))
        bb.emit_func_output(out)
    ex = irc.compile(bb.get(), "llvm")
    x_value = np.arange(6, dtype="float32").reshape(2, 3)
    got = irc.vm.VirtualMachine(ex)["main"](x_value).numpy()
    np.testing.assert_array_equal(got, x_value + 1.5)


def test_data_movement_evaluates_an_empty_reduction_to_its_start_value():
    """A reduction over an empty axis is a block storing the start value: a constant
    fill, which the data-movement evaluator writes exactly."""
    x = te.placeholder((3, 0), name="x")
    func = te.create_prim_func([x, topi.max(x, axis=1)])
    out = np.zeros(3, "float32")
    assert run_data_movement(func, [np.zeros((3, 0), "float32"), out])
    np.testing.assert_array_equal(out, np.full(3, -np.inf, "float32"))

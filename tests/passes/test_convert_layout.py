"""ConvertLayout: convolutions and their neighbours in NHWC, permutes only at the ends."""

import numpy as np
import pytest
from pass_helpers import check_pass, parse_module, random_args, run_main

import irc
from irc import passes

CONV_BLOCK = """
@R.function
def main(x: R.Tensor((1, 3, 8, 8), "float32"), w: R.Tensor((4, 3, 3, 3), "float32"), b: R.Tensor((1, 4, 1, 1), "float32")) -> R.Tensor((1, 4, 4, 4), "float32"):
    with R.dataflow():
        c = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])
        a = R.add(c, b)
        r = R.nn.relu(a)
        gv = R.nn.max_pool2d(r, pool_size=[2, 2], strides=[2, 2])
        R.output(gv)
    return gv
"""  # noqa: E501 - IR text


def test_conv_bias_relu_pool_run_in_nhwc():
    expected = """
@R.function
def main(x: R.Tensor((1, 3, 8, 8), "float32"), w: R.Tensor((4, 3, 3, 3), "float32"), b: R.Tensor((1, 4, 1, 1), "float32")) -> R.Tensor((1, 4, 4, 4), "float32"):
    with R.dataflow():
        lv = R.permute_dims(x, axes=[0, 2, 3, 1])
        lv1 = R.permute_dims(w, axes=[2, 3, 1, 0])
        c = R.nn.conv2d(lv, lv1, padding=[1, 1, 1, 1], data_layout="NHWC", kernel_layout="HWIO")
        lv2 = R.permute_dims(b, axes=[0, 2, 3, 1])
        a = R.add(c, lv2)
        r = R.nn.relu(a)
        p = R.nn.max_pool2d(r, pool_size=[2, 2], strides=[2, 2], layout="NHWC")
        gv = R.permute_dims(p, axes=[0, 3, 1, 2])
        R.output(gv)
    return gv
"""  # noqa: E501 - IR text
    out = check_pass(passes.ConvertLayout(), CONV_BLOCK, expected)
    mod = parse_module(CONV_BLOCK)
    args = random_args(mod["main"])
    np.testing.assert_allclose(run_main(out, *args, pipeline="default"),
                               run_main(mod, *args, pipeline="default"), rtol=1e-5, atol=1e-6)


NETWORK = """
@R.function
def main(x: R.Tensor((1, 4, 8, 8), "float32"), w1: R.Tensor((4, 1, 3, 3), "float32"),
         g: R.Tensor((4,), "float32"), be: R.Tensor((4,), "float32"), m: R.Tensor((4,), "float32"),
         v: R.Tensor((4,), "float32"), w2: R.Tensor((8, 4, 1, 1), "float32"), s: R.Tensor((8, 1, 1), "float32"),
         fc: R.Tensor((8, 3), "float32")) -> R.Tensor((1, 3), "float32"):
    with R.dataflow():
        c1 = R.nn.conv2d(x, w1, padding=[1, 1, 1, 1], groups=4)
        bn = R.nn.batch_norm(c1, g, be, m, v, axis=1)
        y = bn[0]
        mean = bn[1]
        r = R.nn.relu(y)
        res = R.add(r, x)
        c2 = R.nn.conv2d(res, w2)
        sc = R.multiply(c2, s)
        p = R.nn.adaptive_avg_pool2d(sc, output_size=[1, 1])
        f = R.reshape(p, R.shape([1, 8]))
        gv = R.matmul(f, fc)
        R.output(gv)
    return gv
"""  # noqa: E501 - IR text


@pytest.mark.parametrize("kernel_layout", ["default", "OHWI"])
def test_a_small_network_computes_the_same_in_nhwc(kernel_layout):
    mod = parse_module(NETWORK)
    out = passes.ConvertLayout({"nn.conv2d": ["NHWC", kernel_layout]})(mod)
    irc.ir.well_formed(out)
    calls = [b.value for b in out["main"].body.blocks[0].bindings
             if isinstance(b.value, irc.ir.Call)]
    convs = [c for c in calls if c.op.name == "nn.conv2d"]
    expected_kernel = "HWIO" if kernel_layout == "default" else kernel_layout
    assert all(c.attrs["data_layout"] == "NHWC" and c.attrs["kernel_layout"] == expected_kernel
               for c in convs)
    bns = [c for c in calls if c.op.name == "nn.batch_norm"]
    assert bns[0].attrs["axis"] == 3
    # data in and the residual input: two data permutes, two weights; the pooled result
    # (1, 1, 1, 8) goes back to (1, 8, 1, 1) by a reshape (next to the model's own and
    # the scale's reshape to rank 4)
    permutes = [c for c in calls if c.op.name == "permute_dims"]
    assert len(permutes) == 4
    assert [c.op.name for c in calls].count("reshape") == 3
    args = random_args(mod["main"], low=0.2, high=1.0)
    np.testing.assert_allclose(run_main(out, *args, pipeline="default"),
                               run_main(mod, *args, pipeline="default"), rtol=1e-5, atol=1e-6)


def test_already_converted_modules_and_bad_options():
    mod = parse_module(CONV_BLOCK)
    nchw = passes.ConvertLayout({"nn.conv2d": ["NCHW"]})
    assert nchw(mod) is mod
    with pytest.raises(irc.IRCError, match="nn.dense"):
        passes.ConvertLayout({"nn.dense": ["NC"]})
    with pytest.raises(irc.IRCError, match="not a permutation of NCHW"):
        passes.ConvertLayout({"nn.conv2d": ["NHWCX"]})


REDUCTIONS = """
@R.function
def main(x: R.Tensor((2, 3, 6, 5), "float32"), w: R.Tensor((4, 3, 3, 3), "float32")):
    with R.dataflow():
        c = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])
        r = R.nn.relu(c)
        g = R.mean(r, axis=[2, 3], keepdims=True)
        f = R.reshape(g, R.shape([2, 4]))
        s = R.sum(r, axis=[-1, -2])
        m = R.max(r, axis=[1], keepdims=True)
        n = R.max(r, axis=[1])
        gv = (f, s, m, n)
        R.output(gv)
    return gv
"""


def test_reductions_follow_the_layout():
    """A global average pool written as a mean over H and W runs in NHWC; the result goes
    back by a reshape; reductions keeping channels in place are bound as they are, the
    others go back to NCHW first."""
    mod = parse_module(REDUCTIONS)
    out = passes.ConvertLayout()(mod)
    irc.ir.well_formed(out)
    calls = {b.var.name_hint: b.value for b in out["main"].body.blocks[0].bindings
             if isinstance(b.value, irc.ir.Call)}
    means = [c for c in calls.values() if c.op.name == "mean"]
    assert [list(map(int, c.attrs["axis"])) for c in means] == [[1, 2]]
    assert [list(map(int, c.attrs["axis"])) for c in calls.values()
            if c.op.name == "sum"] == [[1, 2]]
    # max over C: with keepdims it stays in NHWC as axis 3; without, (N, H, W) is the
    # same from both layouts, so it is reduced in NHWC too
    assert sorted(list(map(int, c.attrs["axis"])) for c in calls.values()
                  if c.op.name == "max") == [[3], [3]]
    args = random_args(mod["main"])

    def run(m):
        return irc.vm.VirtualMachine(irc.vm.compile(m, "llvm"))["main"](*args)
    for a, b in zip(run(out), run(mod)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_tvm_spelling_of_the_operator_name():
    """TVM's users write {"relax.nn.conv2d": [...]}; irc refused the prefix."""
    from irc.ir import assert_structural_equal

    mod = parse_module(CONV_BLOCK)
    tvm = passes.ConvertLayout({"relax.nn.conv2d": ["NHWC", "default"]})(mod)
    ours = passes.ConvertLayout({"nn.conv2d": ["NHWC", "default"]})(mod)
    assert_structural_equal(tvm, ours)
    with pytest.raises(irc.IRCError, match="no layout conversion for nn.dense"):
        passes.ConvertLayout({"relax.nn.dense": ["NHWC"]})

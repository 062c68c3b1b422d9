"""DecomposeOpsForInference: batch norm (and layer norm on request) as arithmetic."""

import numpy as np
import pytest
from pass_helpers import check_pass, parse_module, random_args, run_main

import irc
from irc import passes

BATCH_NORM = """
@R.function
def main(x: R.Tensor((1, 4, 5, 5), "float32"), g: R.Tensor((4,), "float32"), b: R.Tensor((4,), "float32"), m: R.Tensor((4,), "float32"), v: R.Tensor((4,), "float32")) -> R.Tensor((1, 4, 5, 5), "float32"):
    with R.dataflow():
        bn = R.nn.batch_norm(x, g, b, m, v, axis=1, epsilon=1e-3, center=CENTER, scale=SCALE)
        gv = bn[0]
        R.output(gv)
    return gv
"""  # noqa: E501 - IR text


def _batch_norm(center: bool = True, scale: bool = True) -> str:
    return BATCH_NORM.replace("CENTER", str(center)).replace("SCALE", str(scale))


def test_batch_norm_becomes_a_multiply_and_an_add_per_channel():
    expected = """
@R.function
def main(x: R.Tensor((1, 4, 5, 5), "float32"), g: R.Tensor((4,), "float32"), b: R.Tensor((4,), "float32"), m: R.Tensor((4,), "float32"), v: R.Tensor((4,), "float32")) -> R.Tensor((1, 4, 5, 5), "float32"):
    with R.dataflow():
        lv = R.add(v, R.const(1e-3, "float32"))
        lv1 = R.rsqrt(lv)
        lv2 = R.multiply(g, lv1)
        lv3 = R.reshape(lv2, R.shape([4, 1, 1]))
        lv4 = R.multiply(x, lv3)
        lv5 = R.multiply(m, lv2)
        lv6 = R.subtract(b, lv5)
        lv7 = R.reshape(lv6, R.shape([4, 1, 1]))
        lv8 = R.add(lv4, lv7)
        bn = (lv8, m, v)
        gv = bn[0]
        R.output(gv)
    return gv
"""  # noqa: E501 - IR text
    check_pass(passes.DecomposeOpsForInference(), _batch_norm(), expected)


@pytest.mark.parametrize("center,scale", [(True, True), (False, True), (True, False),
                                          (False, False)])
def test_decomposed_batch_norm_matches_the_operator(center, scale):
    mod = parse_module(_batch_norm(center, scale))
    args = random_args(mod["main"], low=0.1, high=2.0)
    expected = run_main(mod, *args, pipeline="zero")  # the legalized batch_norm kernel
    decomposed = passes.DecomposeOpsForInference()(mod)
    np.testing.assert_allclose(run_main(decomposed, *args, pipeline="zero"), expected,
                               rtol=1e-5, atol=1e-6)


LAYER_NORM = """
@R.function
def main(x: R.Tensor((2, 3, 8), "float32"), g: R.Tensor((8,), "float32"), b: R.Tensor((8,), "float32")) -> R.Tensor((2, 3, 8), "float32"):
    with R.dataflow():
        gv = R.nn.layer_norm(x, g, b, axes=[-1])
        R.output(gv)
    return gv
"""  # noqa: E501 - IR text


def test_layer_norm_is_left_alone_unless_asked():
    mod = parse_module(LAYER_NORM)
    assert passes.DecomposeOpsForInference()(mod) is mod
    decomposed = passes.DecomposeOpsForInference(ops=["nn.layer_norm"])(mod)
    names = [b.value.op.name for b in decomposed["main"].body.blocks[0].bindings]
    assert "nn.layer_norm" not in names and "variance" in names
    args = random_args(mod["main"])
    np.testing.assert_allclose(run_main(decomposed, *args, pipeline="zero"),
                               run_main(mod, *args, pipeline="zero"), rtol=1e-4, atol=1e-5)


def test_function_selection_and_unknown_operators():
    mod = parse_module(_batch_norm())
    assert passes.DecomposeOpsForInference(func_name="main")(mod) is not mod
    with pytest.raises(irc.IRCError, match="no function named 'other'"):
        passes.DecomposeOpsForInference(func_name="other")(mod)
    with pytest.raises(irc.IRCError, match="cannot decompose nn.softmax"):
        passes.DecomposeOpsForInference(ops=["nn.softmax"])

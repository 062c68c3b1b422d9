"""The vectorized numpy building blocks of the zoo's references agree with the loop
references of irc.testing.ref (the operator oracle)."""

import numpy as np
import pytest

from irc.testing import ref
from irc.testing.models import reference_ops as R

RNG = np.random.default_rng(0)


def _rand(*shape):
    return RNG.standard_normal(shape)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("cin,cout,k,stride,pad,groups", [
    (3, 8, 7, 2, 3, 1),    # a stem
    (8, 8, 3, 1, 1, 1),    # 3x3 same
    (8, 16, 1, 2, 0, 1),   # strided 1x1 shortcut
    (8, 8, 3, 2, 1, 8),    # depthwise, strided
    (8, 12, 3, 1, 1, 4),   # grouped
    (4, 6, 3, 1, (0, 1, 2, 1), 1),  # asymmetric padding
])
def test_conv2d_matches_loop_reference(layout, cin, cout, k, stride, pad, groups):
    x = _rand(2, cin, 9, 11)
    w = _rand(cout, cin // groups, k, k)
    expected = ref.conv2d_nchw(x, w, strides=stride, padding=pad, groups=groups)
    if layout == "NHWC":
        got = R.conv2d(x.transpose(0, 2, 3, 1), w, stride, pad, groups, "NHWC")
        got = got.transpose(0, 3, 1, 2)
    else:
        got = R.conv2d(x, w, stride, pad, groups, "NCHW")
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_max_pool_and_global_average_match_loop_reference(layout):
    x = _rand(1, 5, 9, 8)
    to = (lambda a: a) if layout == "NCHW" else (lambda a: a.transpose(0, 2, 3, 1))
    back = (lambda a: a) if layout == "NCHW" else (lambda a: a.transpose(0, 3, 1, 2))
    np.testing.assert_allclose(back(R.max_pool2d(to(x), 3, 2, 1, layout)),
                               ref.pool2d_nchw(x, 3, 2, 1, "max"))
    np.testing.assert_allclose(back(R.global_avg_pool2d(to(x), layout)),
                               ref.adaptive_avg_pool2d_nchw(x, 1))


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_batch_norm_and_bias_match_loop_reference(layout):
    c = 6
    x = _rand(2, c, 3, 4)
    state = {"bn.weight": _rand(c), "bn.bias": _rand(c), "bn.running_mean": _rand(c),
             "bn.running_var": RNG.uniform(0.5, 2.0, c)}
    expected = ref.batch_norm(x, state["bn.weight"], state["bn.bias"],
                              state["bn.running_mean"], state["bn.running_var"], axis=1)
    if layout == "NHWC":
        got = R.batch_norm(x.transpose(0, 2, 3, 1), state, "bn", "NHWC").transpose(0, 3, 1, 2)
        biased = R.channel_bias(x.transpose(0, 2, 3, 1), state["bn.bias"], "NHWC")
        biased = biased.transpose(0, 3, 1, 2)
    else:
        got = R.batch_norm(x, state, "bn", "NCHW")
        biased = R.channel_bias(x, state["bn.bias"], "NCHW")
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    np.testing.assert_allclose(biased, x + state["bn.bias"].reshape(1, c, 1, 1))


def test_dense_layer_norm_gelu_softmax_match_loop_reference():
    x = _rand(2, 5, 16)
    state = {"ln.weight": _rand(16), "ln.bias": _rand(16), "fc.weight": _rand(7, 16),
             "fc.bias": _rand(7)}
    np.testing.assert_allclose(R.layer_norm(x, state, "ln", 1e-12),
                               ref.layer_norm(x, state["ln.weight"], state["ln.bias"],
                                              epsilon=1e-12), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(R.linear(x, state, "fc"),
                               x @ state["fc.weight"].T + state["fc.bias"])
    np.testing.assert_allclose(R.gelu(x), ref.gelu(x), rtol=1e-12, atol=1e-14)
    # softmax and relu are shared with irc.testing.ref: check them against the definitions.
    e = np.exp(x)
    np.testing.assert_allclose(R.softmax(x, axis=1), e / e.sum(axis=1, keepdims=True))
    np.testing.assert_array_equal(R.relu(x), np.where(x > 0, x, 0))


def test_as_compute_converts_floats_only_and_does_not_copy_in_place_dtype():
    state = {"w": np.ones(3, "float32"), "ids": np.arange(3)}
    out = R.as_compute(state, "float32")
    assert out["w"] is state["w"] and out["ids"] is state["ids"]
    out64 = R.as_compute(state, "float64")
    assert out64["w"].dtype == np.float64 and out64["ids"].dtype == state["ids"].dtype


def test_unknown_layout_is_rejected():
    with pytest.raises(ValueError, match="layout"):
        R.conv2d(_rand(1, 2, 3, 3), _rand(2, 2, 1, 1), layout="NCWH")

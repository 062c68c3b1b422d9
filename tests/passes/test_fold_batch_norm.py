"""FoldBatchNormToConv2D: inference batch norm folded into the constant-weight convolution
before it (scaled weights and a per-channel bias)."""

import numpy as np
import pytest
from pass_helpers import parse_module, run_main

import irc
from irc import passes
from irc.ir import assert_structural_equal, well_formed

CONV_BN = """
@R.function
def main(x: R.Tensor(XSHAPE, "float32"), w: R.Tensor(WSHAPE, "float32"), g: R.Tensor((C,), "float32"), b: R.Tensor((C,), "float32"), m: R.Tensor((C,), "float32"), v: R.Tensor((C,), "float32")) -> R.Tensor(OSHAPE, "float32"):
    with R.dataflow():
        conv = R.nn.conv2d(x, w, padding=[1, 1], groups=GROUPS, data_layout="DLAYOUT", kernel_layout="KLAYOUT")
        bn = R.nn.batch_norm(conv, g, b, m, v, axis=AXIS, epsilon=1e-3, center=CENTER, scale=SCALE)
        gv = R.nn.relu(bn[0])
        R.output(gv)
    return gv
"""  # noqa: E501 - IR text


def _conv_bn_text(layout="NCHW", kernel_layout="OIHW", groups=1, axis=None, center=True,
                  scale=True, c=8, cin=4, template=CONV_BN):
    sizes = {"N": 1, "C": cin, "H": 6, "W": 6}
    out = dict(sizes, C=c)
    w = {"O": c, "I": cin // groups, "H": 3, "W": 3}
    axis = layout.index("C") if axis is None else axis
    vec = c if axis == layout.index("C") else out[layout[axis]]
    return (template.replace("XSHAPE", str(tuple(sizes[d] for d in layout)))
            .replace("OSHAPE", str(tuple(out[d] for d in layout)))
            .replace("WSHAPE", str(tuple(w[d] for d in kernel_layout)))
            .replace("(C,)", f"({vec},)").replace("GROUPS", str(groups))
            .replace("DLAYOUT", layout).replace("KLAYOUT", kernel_layout)
            .replace("AXIS", str(axis))
            .replace("CENTER", str(center)).replace("SCALE", str(scale)))


def _conv_bn(**kw):
    return parse_module(_conv_bn_text(**kw))


def _weights(mod, seed=0):
    rng = np.random.default_rng(seed)
    params = {}
    for p in mod["main"].params[1:]:
        shape = p.struct_info.static_shape
        low = 0.5 if p.name_hint == "v" else -1.0  # variances are positive
        params[p.name_hint] = rng.uniform(low, 1.5, shape).astype("float32")
    x = rng.uniform(-1, 1, mod["main"].params[0].struct_info.static_shape).astype("float32")
    return x, params


def _ops(mod):
    return [line.split("= R.")[1].split("(")[0] for line in mod.script().splitlines()
            if "= R." in line]


@pytest.mark.parametrize("layout,kernel_layout,groups", [
    ("NCHW", "OIHW", 1), ("NHWC", "OIHW", 1), ("NHWC", "HWIO", 1), ("NCHW", "OIHW", 2),
    ("NHWC", "OHWI", 4),
])
def test_batch_norm_folds_into_the_convolution(layout, kernel_layout, groups):
    mod = _conv_bn(layout=layout, kernel_layout=kernel_layout, groups=groups)
    x, params = _weights(mod)
    bound = passes.BindParams("main", params)(mod)
    folded = passes.FoldBatchNormToConv2D()(bound)
    well_formed(folded)
    assert _ops(folded) == ["nn.conv2d", "add", "nn.relu"]
    expected = run_main(bound, x, pipeline="zero")  # the batch_norm kernel itself
    np.testing.assert_allclose(run_main(folded, x, pipeline="zero"), expected,
                               rtol=1e-5, atol=1e-5)


def test_the_folded_form_is_scaled_weights_and_a_channel_bias():
    mod = _conv_bn(c=2, cin=1)
    _, params = _weights(mod)
    folded = passes.FoldBatchNormToConv2D()(passes.BindParams("main", params)(mod))
    p = {k: v.astype("float64") for k, v in params.items()}
    s = p["g"] / np.sqrt(p["v"] + 1e-3)
    new_w = (p["w"] * s.reshape(-1, 1, 1, 1)).astype("float32")
    bias = ((0 - p["m"]) * s + p["b"]).reshape(2, 1, 1).astype("float32")
    expected = parse_module("""
@R.function
def main(x: R.Tensor((1, 1, 6, 6), "float32")) -> R.Tensor((1, 2, 6, 6), "float32"):
    with R.dataflow():
        lv = R.nn.conv2d(x, metadata["relax.expr.Constant"][0], padding=[1, 1])
        lv1 = R.add(lv, metadata["relax.expr.Constant"][1])
        gv = R.nn.relu(lv1)
        R.output(gv)
    return gv
""", [new_w, bias])
    assert_structural_equal(folded, expected)


@pytest.mark.parametrize("center,scale", [(False, True), (True, False), (False, False)])
def test_batch_norm_without_shift_or_scale_folds(center, scale):
    mod = _conv_bn(center=center, scale=scale)
    x, params = _weights(mod)
    bound = passes.BindParams("main", params)(mod)
    folded = passes.FoldBatchNormToConv2D()(bound)
    assert "nn.batch_norm" not in _ops(folded)
    np.testing.assert_allclose(run_main(folded, x, pipeline="zero"),
                               run_main(bound, x, pipeline="zero"), rtol=1e-5, atol=1e-5)


CONV_BIAS_BN = """
@R.function
def main(x: R.Tensor((1, 3, 5, 5), "float32"), w: R.Tensor((4, 3, 3, 3), "float32"), cb: R.Tensor((1, 4, 1, 1), "float32"), g: R.Tensor((4,), "float32"), b: R.Tensor((4,), "float32"), m: R.Tensor((4,), "float32"), v: R.Tensor((4,), "float32")) -> R.Tensor((1, 4, 3, 3), "float32"):
    with R.dataflow():
        conv = R.nn.conv2d(x, w)
        biased = R.add(conv, cb)
        bn = R.nn.batch_norm(biased, g, b, m, v, axis=1)
        gv = bn[0]
        R.output(gv)
    return gv
"""  # noqa: E501 - IR text


def test_a_convolution_bias_folds_with_the_batch_norm():
    mod = parse_module(CONV_BIAS_BN)
    x, params = _weights(mod)
    bound = passes.BindParams("main", params)(mod)
    folded = passes.FoldBatchNormToConv2D()(bound)
    assert _ops(folded) == ["nn.conv2d", "add"]
    np.testing.assert_allclose(run_main(folded, x, pipeline="zero"),
                               run_main(bound, x, pipeline="zero"), rtol=1e-5, atol=1e-5)


def test_nothing_folds_without_constant_weights():
    mod = _conv_bn()
    assert passes.FoldBatchNormToConv2D()(mod) is mod
    _, params = _weights(mod)
    del params["w"]  # statistics bound, the weight a run-time input
    bound = passes.BindParams("main", params)(mod)
    assert passes.FoldBatchNormToConv2D()(bound) is bound


def test_nothing_folds_along_another_axis():
    mod = _conv_bn(axis=2)  # normalizes rows, not channels
    _, params = _weights(mod)
    bound = passes.BindParams("main", params)(mod)
    assert passes.FoldBatchNormToConv2D()(bound) is bound


@pytest.mark.parametrize("shared", ["conv", "biased"])
def test_a_convolution_used_elsewhere_is_not_changed(shared):
    text = CONV_BIAS_BN.replace("gv = bn[0]", f"gv = (bn[0], {shared})").replace(
        '-> R.Tensor((1, 4, 3, 3), "float32")',
        '-> R.Tuple(R.Tensor((1, 4, 3, 3), "float32"), R.Tensor((1, 4, 3, 3), "float32"))')
    mod = parse_module(text)
    _, params = _weights(mod)
    bound = passes.BindParams("main", params)(mod)
    assert passes.FoldBatchNormToConv2D()(bound) is bound


def test_the_statistics_outputs_stay_available():
    template = CONV_BN.replace("gv = R.nn.relu(bn[0])", "gv = (R.nn.relu(bn[0]), bn[1])")
    template = template.replace(
        '-> R.Tensor(OSHAPE, "float32")',
        '-> R.Tuple(R.Tensor(OSHAPE, "float32"), R.Tensor((C,), "float32"))')
    mod = parse_module(_conv_bn_text(template=template))
    x, params = _weights(mod)
    folded = passes.FoldBatchNormToConv2D()(passes.BindParams("main", params)(mod))
    assert "nn.batch_norm" not in _ops(folded)
    vm = irc.vm.VirtualMachine(irc.vm.compile(folded, "llvm", pipeline="zero"))
    np.testing.assert_array_equal(vm["main"](x)[1].numpy(), params["m"])

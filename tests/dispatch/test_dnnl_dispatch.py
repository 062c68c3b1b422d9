"""The ``dnnl`` dispatch backend end to end: convolutions (every pattern of the conv2d
family, NCHW and NHWC, strides, asymmetric padding, dilation, groups, depthwise) and the
matmul family go to oneDNN with their bias, residual add and activation as post-ops; the
VM's results match numpy, with weights as parameters and as bound constants; executables
with oneDNN modules save and load; a backend that is not installed says how to get it.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from gemm_modules import (
    ACTS,
    NUMPY_ACTS,
    batch_matmul_module,
    dense_module,
    dense_reference,
    dispatch,
    packed_calls,
    random_inputs,
    run_main,
    tensor_type,
)

import irc
from irc.core.diagnostics import (
    IRCError,
    MissingDependencyError,
    RuntimeArgumentCountError,
    RuntimeArgumentTypeError,
    RuntimeShapeError,
)
from irc.dispatch import get_pattern, get_patterns_with_prefix, table
from irc.runtime import dnnl
from irc.runtime.dnnl_module import DnnlModule
from irc.testing.models.reference_ops import conv2d as numpy_conv2d
from irc.vm.executable import Executable

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

if not dnnl.available():
    pytest.skip("needs the onednn wheel (pip install 'irc[dnnl]')", allow_module_level=True)


def conv_module(x_shape, w_shape, *, layout="NCHW", strides=1, padding=0, dilation=1,
                groups=1, bias=None, residual=False, relu=False):
    """``relu(conv2d(x, w) + b + r)`` with the optional parts, as a module."""
    kernel_layout = "OIHW" if layout == "NCHW" else "HWIO"
    probe = irc.parse(f"""
@I.ir_module
class Module:
    @R.function
    def main(x: {tensor_type(x_shape)}, w: {tensor_type(w_shape)}):
        with R.dataflow():
            gv = R.nn.conv2d(x, w, strides={strides}, padding={padding}, dilation={dilation},
                             groups={groups}, data_layout="{layout}",
                             kernel_layout="{kernel_layout}")
            R.output(gv)
        return gv
""")
    out = tuple(int(d.value) for d in probe["main"].ret_struct_info.shape)
    params = [f"x: {tensor_type(x_shape)}", f"w: {tensor_type(w_shape)}"]
    lines = [f"""y = R.nn.conv2d(x, w, strides={strides}, padding={padding}, dilation={dilation}, groups={groups}, data_layout="{layout}", kernel_layout="{kernel_layout}")"""]  # noqa: E501
    if bias is not None:
        params.append(f"b: {tensor_type(bias)}")
        lines += ["y1 = R.add(y, b)", "y = y1"]
    if residual:
        params.append(f"r: {tensor_type(out)}")
        lines += ["y2 = R.add(r, y)", "y = y2"]
    if relu:
        lines += ["y3 = R.nn.relu(y)", "y = y3"]
    lines.append("gv = y")
    body = "\n".join(f"            {ln}" for ln in lines)
    return irc.parse(f"""
@I.ir_module
class Module:
    @R.function
    def main({", ".join(params)}) -> {tensor_type(out)}:
        with R.dataflow():
{body}
            R.output(gv)
        return gv
""")


def conv_reference(args, *, layout, strides, padding, dilation, groups, bias, residual,
                   relu):
    x, w = (a.astype(np.float64) for a in args[:2])
    if layout == "NHWC":
        x, w = x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1)
    if dilation > 1:  # a dilated kernel is the kernel with zeros between its taps
        o, i, kh, kw = w.shape
        wd = np.zeros((o, i, (kh - 1) * dilation + 1, (kw - 1) * dilation + 1))
        wd[:, :, ::dilation, ::dilation] = w
        w = wd
    pad = padding if isinstance(padding, list) else [padding] * 4
    x = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    y = numpy_conv2d(x, w, strides, 0, groups)
    if layout == "NHWC":
        y = y.transpose(0, 2, 3, 1)
    rest = list(args[2:])
    if bias is not None:
        y = y + rest.pop(0)
    if residual:
        y = y + rest.pop(0)
    return np.maximum(y, 0) if relu else y


# (layout, x shape, w shape, strides, padding, dilation, groups)
GEOMETRIES = {
    "nchw-3x3": ("NCHW", (1, 8, 9, 9), (16, 8, 3, 3), 1, 1, 1, 1),
    "nhwc-strided-asym": ("NHWC", (2, 10, 9, 8), (3, 3, 2, 8), 2, [1, 0, 2, 1], 1, 4),
    "nhwc-depthwise": ("NHWC", (1, 7, 7, 16), (3, 3, 1, 16), 1, 1, 1, 16),
    "nchw-dilated": ("NCHW", (1, 4, 11, 11), (6, 4, 3, 3), 1, 2, 2, 1),
    "nchw-1x1": ("NCHW", (1, 8, 5, 5), (12, 8, 1, 1), 1, 0, 1, 1),
}
# pattern suffix -> (bias, residual, relu)
CONV_PATTERNS = {
    "conv2d_bias_add_relu": (True, True, True),
    "conv2d_bias_add": (True, True, False),
    "conv2d_bias_relu": (True, False, True),
    "conv2d_bias": (True, False, False),
    "conv2d_add_relu": (False, True, True),
    "conv2d_add": (False, True, False),
    "conv2d_relu": (False, False, True),
    "conv2d": (False, False, False),
}
CONV_CASES = [(g, p) for g in GEOMETRIES for p in CONV_PATTERNS
              if g == "nchw-3x3" or p in ("conv2d_bias_add_relu", "conv2d")]


@pytest.mark.parametrize("geometry,pattern", CONV_CASES, ids=[f"{g}-{p}" for g, p in CONV_CASES])
@pytest.mark.parametrize("bind", [False, True], ids=["params", "constants"])
def test_every_conv2d_pattern_matches_numpy(geometry, pattern, bind):
    layout, x_shape, w_shape, strides, padding, dilation, groups = GEOMETRIES[geometry]
    has_bias, residual, relu = CONV_PATTERNS[pattern]
    co = w_shape[0] if layout == "NCHW" else w_shape[3]
    bias = ((1, co, 1, 1) if layout == "NCHW" else (co,)) if has_bias else None
    geo = dict(layout=layout, strides=strides, padding=padding, dilation=dilation,
               groups=groups)
    mod = conv_module(x_shape, w_shape, bias=bias, residual=residual, relu=relu, **geo)
    args = random_inputs(mod, np.random.default_rng(7))
    want = conv_reference(args, bias=bias, residual=residual, relu=relu, **geo)
    names = [p.name_hint for p in mod["main"].params]
    params = {n: a for n, a in zip(names, args) if n in ("w", "b")} if bind else None
    if params:
        mod = irc.passes.BindParams("main", params)(mod)
        args = [a for n, a in zip(names, args) if n not in params]
    out = dispatch(mod, get_patterns_with_prefix("dnnl"))
    (symbol,) = packed_calls(out)
    (ext,) = out.attrs["external_mods"]
    assert isinstance(ext, DnnlModule)
    # The most specific pattern won: its composite has every part.
    assert ext.specs[symbol]["plan"]["bias"] == has_bias
    assert ext.specs[symbol]["plan"]["residual"] == residual
    assert ext.specs[symbol]["plan"]["activation"] == ("relu" if relu else None)
    assert (ext.specs[symbol]["weight"][0] == "const") == bind
    got = run_main(out, args)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # The single pattern by name matches the same subgraph.
    assert packed_calls(dispatch(mod, [get_pattern(f"dnnl.{pattern}")])) == [symbol]


def test_a_bias_that_is_not_per_channel_is_left_out_of_the_convolution():
    # [W]-shaped "bias" on NCHW broadcasts along W, not along channels: not a oneDNN bias,
    # and not a residual either: only the convolution is dispatched.
    mod = conv_module((1, 8, 6, 6), (8, 8, 3, 3), padding=1, bias=(6,), relu=True)
    out = dispatch(mod, get_patterns_with_prefix("dnnl"))
    assert packed_calls(out) == ["fused_nn_conv2d_dnnl"]
    args = random_inputs(mod, np.random.default_rng(8))
    np.testing.assert_allclose(run_main(out, args), run_main(mod, args), rtol=1e-4, atol=1e-4)


def test_non_float32_and_symbolic_convolutions_stay_with_irc():
    half = irc.parse(f"""
@I.ir_module
class Module:
    @R.function
    def main(x: {tensor_type((1, 4, 5, 5), "float16")}, w: {tensor_type((4, 4, 3, 3), "float16")}):
        with R.dataflow():
            gv = R.nn.conv2d(x, w)
            R.output(gv)
        return gv
""")
    sym = irc.parse(f"""
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4, 5, 5), dtype="float32"), w: {tensor_type((4, 4, 3, 3))}):
        with R.dataflow():
            gv = R.nn.conv2d(x, w)
            R.output(gv)
        return gv
""")
    for mod in (half, sym):
        assert not packed_calls(dispatch(mod, get_patterns_with_prefix("dnnl")))


DENSE_CASES = [(x_shape, transposed, bias, act)
               for x_shape in [(5, 24), (2, 3, 24)]
               for transposed in (True, False)
               for bias in (None, "vector", "full")
               for act in ACTS
               if not (bias is None and act)]


@pytest.mark.parametrize("x_shape,transposed,bias,act", DENSE_CASES,
                         ids=[f"{len(c[0])}d-{'T' if c[1] else 'N'}-{c[2]}-{c[3] or 'none'}"
                              for c in DENSE_CASES])
def test_every_matmul_pattern_matches_numpy(x_shape, transposed, bias, act):
    n = 16
    bias_shape = {None: None, "vector": (n,), "full": tuple(x_shape[:-1]) + (n,)}[bias]
    mod = dense_module(x_shape, n, transposed, bias_shape, act)
    args = random_inputs(mod, np.random.default_rng(1))
    name = "dnnl.matmul" + ("_transposed" if transposed else "") + \
        ("_bias" if bias else "") + (f"_{act}" if act else "")
    want = dense_reference(args, transposed, act)
    for bind in (False, True):
        m = irc.passes.BindParams("main", {"w": args[1]})(mod) if bind else mod
        out = dispatch(m, [get_pattern(name)])
        assert len(packed_calls(out)) == 1, out.script()
        got = run_main(out, [a for i, a in enumerate(args) if not (bind and i == 1)])
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert packed_calls(dispatch(mod, get_patterns_with_prefix("dnnl"))) == packed_calls(out)


def test_batch_matmul_with_and_without_a_broadcast_batch():
    for b_batch in (3, 1):
        mod = batch_matmul_module((3, 4, 8), (b_batch, 8, 5))
        args = random_inputs(mod, np.random.default_rng(3))
        out = dispatch(mod, [get_pattern("dnnl.batch_matmul")])
        assert packed_calls(out), out.script()
        np.testing.assert_allclose(run_main(out, args), args[0] @ args[1], rtol=1e-5, atol=1e-5)


def test_activations_match_numpy_forms():
    assert set(dnnl.ACTIVATIONS) <= set(NUMPY_ACTS)


def test_cnn_compiles_with_dispatch_saves_and_loads(tmp_path):
    mod = conv_module((1, 8, 8, 8), (8, 8, 3, 3), padding=1, bias=(1, 8, 1, 1),
                      residual=True, relu=True)
    args = random_inputs(mod, np.random.default_rng(5))
    params = {"w": args[1], "b": args[2]}
    ex = irc.compile(mod, target="llvm", params=params, dispatch="dnnl")
    assert [m.kind for m in ex.external] == ["dnnl"]
    want = conv_reference(args, layout="NCHW", strides=1, padding=1, dilation=1, groups=1,
                          bias=True, residual=True, relu=True)
    inputs = [irc.tensor(args[0]), irc.tensor(args[3])]
    np.testing.assert_allclose(irc.vm.VirtualMachine(ex, irc.cpu())["main"](*inputs).numpy(),
                               want, rtol=1e-4, atol=1e-4)
    path = tmp_path / "cnn.ircx"
    ex.save(path)
    loaded = Executable.load(path)
    np.testing.assert_allclose(irc.vm.VirtualMachine(loaded, irc.cpu())["main"](*inputs)
                               .numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("layout,plain", [("NHWC", True), ("NCHW", False)])
def test_channels_last_runs_without_reorders(layout, plain):
    # oneDNN's direct kernels read NHWC as it is; for NCHW it needs its blocked layout.
    shape = (1, 16, 8, 8) if layout == "NCHW" else (1, 8, 8, 16)
    plan = dnnl.ConvPlan(shape, layout, (16, 16, 3, 3), "OIHW", shape, layout,
                         padding=(1, 1, 1, 1), bias=True, residual=True, activation="relu")
    prim = plan.build(np.ones((16, 16, 3, 3), "float32"))
    assert prim.plain == plain
    assert (prim.src.reorder is None and prim.dst.reorder is None) == plain


def test_resnet_dispatches_every_convolution_in_nhwc_with_batch_norm_folded():
    from irc.testing.models import get_model

    model = get_model("resnet18", image_size=32)  # NCHW, batch norm after each conv
    ex = irc.compile(model.mod, "llvm", params=model.bound_params(), dispatch="dnnl")
    (ext,) = ex.external
    plans = [spec["plan"] for spec in ext.specs.values() if "data_layout" in spec["plan"]]
    assert len(plans) == 20  # 17 convolutions and 3 shortcut projections
    assert all(p["data_layout"] == "NHWC" and p["out_layout"] == "NHWC" and p["bias"]
               for p in plans)
    assert sum(p["residual"] for p in plans) == 8  # one per basic block
    x = model.random_input()
    got = irc.vm.VirtualMachine(ex)["forward"](irc.tensor(x)).numpy()
    want = model.reference(x)
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


def test_calls_with_wrong_arguments_are_irc_errors():
    mod = conv_module((1, 4, 6, 6), (4, 4, 3, 3), padding=1, relu=True)
    out = dispatch(mod, get_patterns_with_prefix("dnnl"))
    (ext,) = out.attrs["external_mods"]
    (symbol,) = ext.function_names
    fn = ext.get_function(symbol)
    x, w = (np.ones(s, "float32") for s in [(1, 4, 6, 6), (4, 4, 3, 3)])
    with pytest.raises(RuntimeArgumentCountError, match="takes 2 inputs"):
        fn(x, w)
    with pytest.raises(RuntimeShapeError, match="output has shape"):
        fn(x, w, np.empty((1, 4, 5, 5), "float32"))
    with pytest.raises(RuntimeShapeError, match="input #0 has shape"):
        fn(np.ones((1, 4, 7, 7), "float32"), w, np.empty((1, 4, 6, 6), "float32"))
    with pytest.raises(RuntimeArgumentTypeError, match="contiguous"):
        fn(x[:, :, ::1, ::-1], w, np.empty((1, 4, 6, 6), "float32"))
    with pytest.raises(IRCError, match="no function"):
        ext.get_function("nope")


def test_plans_refuse_what_onednn_cannotrun_main():
    with pytest.raises(dnnl.DnnlError, match="not a permutation of NCHW"):
        dnnl.ConvPlan((1, 4, 5, 5), "NCHX", (4, 4, 3, 3), "OIHW", (1, 4, 3, 3), "NCHW")
    with pytest.raises(dnnl.DnnlError, match="unknown oneDNN plan kind"):
        dnnl.plan_from_json({"op": "pool"})
    with pytest.raises(dnnl.DnnlError, match="no activation"):
        dnnl.MatmulPlan(2, 2, 2, activation="tanh").build()
    # Output sizes that do not follow from the input: oneDNN refuses, irc names the conv.
    bad = dnnl.ConvPlan((1, 4, 5, 5), "NCHW", (4, 4, 3, 3), "OIHW", (1, 4, 9, 9), "NCHW")
    with pytest.raises(dnnl.DnnlError, match=r"planning the convolution NCHW \[1, 4, 5, 5\]"):
        bad.build()


def test_a_backend_that_is_not_installed_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(table._UNAVAILABLE, "fakelib", "install fakelib: pip install x")
    with pytest.raises(MissingDependencyError, match="pip install x"):
        get_pattern("fakelib.conv2d")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert get_patterns_with_prefix("fakelib") == []
    assert any("pip install x" in str(w.message) for w in caught)
    with pytest.raises(MissingDependencyError, match="pip install x"):
        irc.compile(conv_module((1, 4, 5, 5), (4, 4, 3, 3)), dispatch="fakelib")


def test_a_missing_onednn_wheel_is_a_one_line_install_hint(monkeypatch):
    monkeypatch.setattr(dnnl, "_library", None)
    monkeypatch.setattr(dnnl, "library_dir", lambda: None)
    with pytest.raises(MissingDependencyError, match=r"irc\[dnnl\]"):
        dnnl.load_dnnl()


def test_cnn_dispatch_example_runs():
    # Seed 003's flow on a CNN: oneDNN by pattern, MetaSchedule tuning for the rest, the VM.
    res = subprocess.run([sys.executable, str(EXAMPLES / "dnnl_cnn.py"), "--trials", "2"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert 'R.call_dps_packed("fused_nn_conv2d_add_add_nn_relu_dnnl"' in res.stdout
    assert 'R.call_dps_packed("fused_permute_dims_matmul_add_dnnl"' in res.stdout
    assert "matches numpy" in res.stdout

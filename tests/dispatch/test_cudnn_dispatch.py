"""The ``cudnn`` dispatch backend: its pattern table and check function, the plans and
library module its code generator makes (none of which loads cuDNN), executables that
carry it and replay it in CUDA graphs; on a GPU (tests marked ``cuda``) the VM on
``irc.cuda(0)`` matches numpy for every fused form, layout, stride, dilation and group
count.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import irc
from irc import passes
from irc.dispatch import cudnn as cudnn_backend
from irc.dispatch._conv import CONV_CHAINS
from irc.dispatch.table import as_entry
from irc.runtime import cudnn
from irc.runtime.cudnn_module import CudnnModule
from irc.vm.cuda_graph import capture_plan

pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVIDIA's cuda-bindings (irc[cuda])")

ENTRIES = [as_entry(e) for e in cudnn_backend.conv_entries(
    "cudnn", cudnn_backend.check_cudnn_conv2d)]


def conv_module(x_shape, w_shape, *, bias=False, residual=False, relu=False,
                layout=("NCHW", "OIHW"), dtype="float32", strides=(1, 1),
                padding=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    """``relu(conv2d(x, w) + b + r)`` with the parts asked for, all parameters."""
    out = _out_shape(x_shape, w_shape, layout, strides, padding, dilation)
    c_axis = layout[0].index("C")
    b_shape = [1] * 4
    b_shape[c_axis] = out[c_axis]

    def t(shape):
        return f"R.Tensor({tuple(shape)}, dtype=\"{dtype}\")"
    params = [f"x: {t(x_shape)}", f"w: {t(w_shape)}"]
    body = [f"y0 = R.nn.conv2d(x, w, strides={list(strides)}, padding={list(padding)}, "
            f"dilation={list(dilation)}, groups={groups}, data_layout=\"{layout[0]}\", "
            f"kernel_layout=\"{layout[1]}\")"]
    for name, on, shape in (("b", bias, b_shape), ("r", residual, out)):
        if on:
            params.append(f"{name}: {t(shape)}")
            body.append(f"y{len(body)} = R.add(y{len(body) - 1}, {name})")
    if relu:
        body.append(f"y{len(body)} = R.nn.relu(y{len(body) - 1})")
    last = f"y{len(body) - 1}"
    lines = "\n".join(f"            {ln}" for ln in body)
    text = f"""
@I.ir_module
class Module:
    @R.function
    def forward({", ".join(params)}):
        with R.dataflow():
{lines}
            R.output({last})
        return {last}
"""
    return irc.parse(text), out


def _out_shape(x_shape, w_shape, layout, strides, padding, dilation):
    d = dict(zip(layout[0], x_shape))
    k = dict(zip(layout[1], w_shape))
    oh = (d["H"] + padding[0] + padding[2] - dilation[0] * (k["H"] - 1) - 1) // strides[0] + 1
    ow = (d["W"] + padding[1] + padding[3] - dilation[1] * (k["W"] - 1) - 1) // strides[1] + 1
    o = {"N": d["N"], "C": k["O"], "H": oh, "W": ow}
    return tuple(o[a] for a in layout[0])


def _dispatched(mod):
    mod = passes.FoldBatchNormToConv2D()(passes.Normalize()(mod))
    return passes.RunCodegen()(passes.FuseOpsByPattern(ENTRIES, annotate_codegen=True)(mod))


def _packed(mod):
    names = []
    for _, f in mod.functions.items():
        text = f.script() if hasattr(f, "script") else ""
        names += [ln.split('"')[1] for ln in text.splitlines() if "call_dps_packed(" in ln]
    return names


def test_the_table_has_the_conv_family_most_specific_first():
    assert [e.name for e in ENTRIES] == [f"cudnn.{c}" for c in CONV_CHAINS]
    if cudnn.available():  # registered with irc when the wheel is installed
        names = [e.name for e in irc.dispatch.get_patterns_with_prefix("cudnn")]
        assert names == [e.name for e in ENTRIES]


@pytest.mark.parametrize("kwargs,accepted", [
    ({}, True),
    ({"layout": ("NHWC", "OHWI")}, True),
    ({"groups": 4}, True),
    ({"padding": (1, 1, 1, 1), "strides": (2, 2), "dilation": (2, 2)}, True),
    ({"padding": (0, 0, 1, 1)}, False),  # asymmetric
    ({"layout": ("NHWC", "HWIO")}, False),
    ({"dtype": "float16"}, False),
])
def test_check_accepts_what_cudnn_runs(kwargs, accepted):
    kw = dict(kwargs)
    layout = kw.pop("layout", ("NCHW", "OIHW"))
    dtype = kw.pop("dtype", "float32")
    groups = kw.get("groups", 1)
    x = (1, 8, 12, 12) if layout[0] == "NCHW" else (1, 12, 12, 8)
    w = dict(O=16, I=8 // groups, H=3, W=3)
    mod, _ = conv_module(x, tuple(w[a] for a in layout[1]), bias=True, relu=True,
                         layout=layout, dtype=dtype, **kw)
    calls = _packed(_dispatched(mod))
    assert bool(calls) == accepted, calls


@pytest.mark.parametrize("bias,residual,relu,name", [
    (True, True, True, "add_add_nn_relu"), (True, False, True, "add_nn_relu"),
    (True, True, False, "add_add"), (False, False, False, "conv2d_cudnn"),
    (False, True, True, "add_nn_relu")])
def test_codegen_lays_out_one_plan_per_function(bias, residual, relu, name):
    mod, out = conv_module((2, 4, 9, 9), (6, 4, 3, 3), bias=bias, residual=residual,
                           relu=relu, padding=(1, 1, 1, 1), strides=(2, 2))
    ex = irc.compile(_dispatched(mod), target="cuda")
    (lib,) = ex.external
    assert isinstance(lib, CudnnModule) and lib.graph_capturable
    (symbol,) = lib.function_names
    assert name in symbol
    plan = cudnn.CudnnConvPlan.from_json(lib.specs[symbol]["plan"])
    assert (plan.n, plan.c, plan.h, plan.w, plan.k, plan.r, plan.s) == (2, 4, 9, 9, 6, 3, 3)
    assert plan.stride == (2, 2) and plan.pad == (1, 1) and plan.out_hw == out[2:]
    assert (plan.bias, plan.residual, plan.activation) == (bias, residual,
                                                           "relu" if relu else None)
    assert plan.fused == (bias or residual or relu)
    assert capture_plan(ex, "forward").captured
    # The module saves and loads with the executable.
    again = CudnnModule.deserialize(lib.serialize())
    assert json.dumps(again.specs, sort_keys=True) == json.dumps(lib.specs, sort_keys=True)


def test_constant_weights_and_bias_are_kept_in_the_module():
    from irc.testing.models import get_model
    m = get_model("resnet18", image_size=32, num_classes=10)
    ex = irc.compile(m.mod, target="cuda", params=m.bound_params(), dispatch="cudnn")
    (lib,) = ex.external
    specs = list(lib.specs.values())
    assert len(specs) >= 17  # every convolution of the ResNet-18
    assert all(s["weight"][0] == "const" and s["bias"][0] == "const" for s in specs)
    assert all(lib.constants[s["bias"][1]].ndim == 1 for s in specs)
    assert any(s["residual"] is not None for s in specs)


def test_plans_refuse_what_cudnn_does_not_run():
    with pytest.raises(cudnn.CudnnError, match="layout"):
        cudnn.CudnnConvPlan("HWCN", 1, 4, 8, 8, 4, 3, 3)
    with pytest.raises(cudnn.CudnnError, match="relu"):
        cudnn.CudnnConvPlan("NCHW", 1, 4, 8, 8, 4, 3, 3, activation="gelu")
    with pytest.raises(cudnn.CudnnError, match="groups"):
        cudnn.CudnnConvPlan("NCHW", 1, 6, 8, 8, 4, 3, 3, groups=4)
    with pytest.raises(cudnn.CudnnError, match="unknown fields"):
        cudnn.CudnnConvPlan.from_json({"layout": "NCHW", "bogus": 1})


def test_auto_dispatch_considers_cudnn_first_on_cuda():
    from irc.target import Target
    from irc.vm.auto_dispatch import candidate_patterns
    names = [e.name for e in candidate_patterns(Target("cuda"))]
    if cudnn.available():
        assert names[0].startswith("cudnn.") and any(n.startswith("cublas.") for n in names)
    else:
        assert not any(n.startswith("cudnn.") for n in names)


# -- on a GPU -------------------------------------------------------------------------------

def _reference(x, w, b, r, relu, layout, strides=(1, 1), padding=(0, 0, 0, 0),
               dilation=(1, 1), groups=1):
    """The convolution in float64 numpy, NCHW inside."""
    if layout[0] == "NHWC":
        x = x.transpose(0, 3, 1, 2)
        w = w.transpose(0, 3, 1, 2)  # OHWI -> OIHW
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding[0], padding[2]),
                                      (padding[1], padding[3])))
    n, c, h, wd = x.shape
    o, ci, kh, kw = w.shape
    oh = (h - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, o, oh, ow))
    per = o // groups
    for g in range(groups):
        xs = x[:, g * ci:(g + 1) * ci]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dilation[0]:i * dilation[0] + strides[0] * oh:strides[0],
                           j * dilation[1]:j * dilation[1] + strides[1] * ow:strides[1]]
                out[:, g * per:(g + 1) * per] += np.einsum(
                    "nchw,oc->nohw", patch, w[g * per:(g + 1) * per, :, i, j])
    if layout[0] == "NHWC":
        out = out.transpose(0, 2, 3, 1)
    if b is not None:
        out = out + b
    if r is not None:
        out = out + r
    return np.maximum(out, 0) if relu else out


@pytest.mark.cuda
@pytest.mark.parametrize("case", [
    dict(bias=True, residual=True, relu=True),
    dict(bias=True, relu=True, padding=(1, 1, 1, 1), strides=(2, 2)),
    dict(bias=True, residual=True),
    dict(),
    dict(residual=True, relu=True, dilation=(2, 2), padding=(2, 2, 2, 2)),
    dict(bias=True, relu=True, groups=8, padding=(1, 1, 1, 1)),  # depthwise
    dict(bias=True, relu=True, layout=("NHWC", "OHWI"), padding=(1, 1, 1, 1)),
])
def test_cudnn_convolutions_match_numpy_on_the_gpu(case):
    kw = dict(case)
    layout = kw.pop("layout", ("NCHW", "OIHW"))
    bias, residual, relu = (kw.pop(k, False) for k in ("bias", "residual", "relu"))
    groups = kw.get("groups", 1)
    x_shape = (2, 8, 10, 10) if layout[0] == "NCHW" else (2, 10, 10, 8)
    wd = dict(O=8, I=8 // groups, H=3, W=3)
    w_shape = tuple(wd[a] for a in layout[1])
    mod, out = conv_module(x_shape, w_shape, bias=bias, residual=residual, relu=relu,
                           layout=layout, **kw)
    ex = irc.compile(_dispatched(mod), target="cuda")
    assert ex.external, "dispatched"
    rng = np.random.default_rng(0)
    c_axis = layout[0].index("C")
    b_shape = [1] * 4
    b_shape[c_axis] = out[c_axis]
    dev = irc.cuda(0)
    for cuda_graphs in (False, True):
        vm = irc.vm.VirtualMachine(ex, dev, cuda_graphs=cuda_graphs)
        for _ in range(3):  # eager, capture, replay
            x = rng.standard_normal(x_shape).astype("float32")
            w = rng.standard_normal(w_shape).astype("float32")
            args = [x, w]
            b = rng.standard_normal(b_shape).astype("float32") if bias else None
            r = rng.standard_normal(out).astype("float32") if residual else None
            args += [a for a in (b, r) if a is not None]
            got = vm["forward"](*[irc.tensor(a, dev) for a in args]).numpy()
            want = _reference(x, w, b, r, relu, layout, **kw)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)

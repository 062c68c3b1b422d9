"""Each layer's exported bindings and struct info, and exported models compiled with
irc.compile and run on the VM against numpy references."""

import math

import numpy as np
import pytest

import irc
from irc.frontend import nn
from irc.ir import TupleStructInfo


def export_layer(layer, shape, dtype="float32"):
    class Wrap(nn.Module):
        def __init__(self):
            self.layer = layer

        def forward(self, x):
            return self.layer(x)

    mod, params = Wrap().export_ir({"forward": {"x": nn.spec.Tensor(shape, dtype)}})
    func = mod["forward"]
    calls = [b.value.op.name for block in func.body.blocks for b in block.bindings
             if hasattr(b.value, "op") and hasattr(b.value.op, "name")]
    ret = func.ret_struct_info
    out = None if isinstance(ret, TupleStructInfo) else \
        tuple(getattr(d, "value", d) for d in ret.shape)
    return calls, out, [n for n, _ in params]


@pytest.mark.parametrize("layer, shape, calls, out, params", [
    (nn.ReLU(), (2, 3), ["nn.relu"], (2, 3), []),
    (nn.GELU(), (2, 3), ["nn.gelu"], (2, 3), []),
    (nn.GELU(approximate="tanh"), (2, 3), ["nn.gelu_tanh"], (2, 3), []),
    (nn.SiLU(), (2, 3), ["nn.silu"], (2, 3), []),
    (nn.Sigmoid(), (2, 3), ["sigmoid"], (2, 3), []),
    (nn.Tanh(), (2, 3), ["tanh"], (2, 3), []),
    (nn.Softmax(dim=0), (2, 3), ["nn.softmax"], (2, 3), []),
    (nn.Dropout(0.3), (2, 3), [], (2, 3), []),
    (nn.Identity(), (2, 3), [], (2, 3), []),
    (nn.Flatten(), (2, 3, 4, 5), ["reshape"], (2, 60), []),
    (nn.Flatten(0, 1), (2, 3, 4), ["reshape"], (6, 4), []),
    (nn.Linear(3, 5, bias=False), (4, 2, 3), ["permute_dims", "matmul"], (4, 2, 5),
     ["layer_weight"]),
    (nn.Conv2D(3, 6, (3, 5), stride=2, padding=(1, 2), groups=3), (1, 3, 9, 9),
     ["nn.conv2d", "reshape", "add"], (1, 6, 5, 5), ["layer_weight", "layer_bias"]),
    (nn.Conv2D(3, 4, 3, padding=1, data_layout="NHWC", bias=False), (1, 8, 8, 3),
     ["nn.conv2d"], (1, 8, 8, 4), ["layer_weight"]),
    (nn.MaxPool2D(3, stride=2, padding=1), (1, 2, 9, 9), ["nn.max_pool2d"], (1, 2, 5, 5), []),
    (nn.AvgPool2D(2), (1, 2, 8, 6), ["nn.avg_pool2d"], (1, 2, 4, 3), []),
    (nn.AdaptiveAvgPool2D(1), (1, 2, 7, 7), ["nn.adaptive_avg_pool2d"], (1, 2, 1, 1), []),
    (nn.BatchNorm2D(4, affine=False), (2, 4, 3, 3), ["nn.batch_norm"], (2, 4, 3, 3),
     ["layer_running_mean", "layer_running_var"]),
    (nn.LayerNorm((3, 4)), (2, 3, 4), ["nn.layer_norm"], (2, 3, 4),
     ["layer_weight", "layer_bias"]),
    (nn.LayerNorm(4, elementwise_affine=False), (2, 4), ["nn.layer_norm"], (2, 4), []),
    (nn.GroupNorm(2, 4), (2, 4, 3, 3), ["nn.group_norm"], (2, 4, 3, 3),
     ["layer_weight", "layer_bias"]),
])
def test_layer_bindings_and_output_shape(layer, shape, calls, out, params):
    got_calls, got_out, got_params = export_layer(layer, shape)
    assert got_calls == calls
    assert got_out == out
    assert got_params == params


def test_parameter_layouts_are_pytorchs():
    assert nn.Linear(3, 5).weight.shape == (5, 3)
    assert nn.Conv2D(4, 6, (3, 5), groups=2).weight.shape == (6, 2, 3, 5)
    assert nn.Conv2D(4, 6, 3, data_layout="NHWC").weight.shape == (6, 4, 3, 3)
    bn = nn.BatchNorm2D(7)
    assert [n for n, _ in bn.named_parameters()] == ["weight", "bias", "running_mean",
                                                     "running_var"]
    assert nn.Embedding(10, 3).weight.shape == (10, 3)
    assert nn.GroupNorm(2, 6).weight.shape == (6,)


def test_embedding_of_any_index_shape():
    calls, out, params = export_layer(nn.Embedding(10, 3), (2, 5), "int64")
    assert calls == ["take"] and out == (2, 5, 3) and params == ["layer_weight"]


def test_layer_rank_checks():
    with pytest.raises(irc.IRTypeError, match=r"'layer' \(BatchNorm2D\): BatchNorm2D expects "
                                              r"an input of rank 4"):
        export_layer(nn.BatchNorm2D(4), (2, 4))
    with pytest.raises(irc.IRTypeError, match=r"MaxPool2D expects an input of rank 4"):
        export_layer(nn.MaxPool2D(2), (4, 4))
    with pytest.raises(irc.IRTypeError, match=r"LayerNorm over 2 axes"):
        export_layer(nn.LayerNorm((3, 4)), (4,))
    with pytest.raises(irc.IRTypeError, match=r"GroupNorm expects an input of rank 2 or more"):
        export_layer(nn.GroupNorm(1, 4), (4,))
    with pytest.raises(irc.IRTypeError, match=r"'layer' \(LayerNorm\): R\.nn\.layer_norm: gamma "
                                              r"must have shape \(5,\), got \(4,\)"):
        export_layer(nn.LayerNorm(4), (2, 5))


# ---------------------------------------------------------------------------------
# Numeric checks through irc.compile and the VM
# ---------------------------------------------------------------------------------


def run(model, spec, *inputs):
    mod, params = model.export_ir(spec)
    ex = irc.compile(mod, "llvm")
    vm = irc.vm.VirtualMachine(ex, irc.cpu())
    args = [irc.tensor(a) for a in inputs] + [irc.tensor(p.numpy()) for _, p in params]
    return vm["forward"](*args).numpy()


class RelaxModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(256, 10, bias=False)

    def forward(self, x):
        return self.fc2(self.relu1(self.fc1(x)))


def test_seed_mlp_runs_and_matches_numpy():
    model = RelaxModel().init_random(seed=0)
    x = np.random.default_rng(1).random((1, 784), dtype=np.float32)
    out = run(model, {"forward": {"x": nn.spec.Tensor((1, 784), "float32")}}, x)
    s = model.state_dict()
    ref = np.maximum(x @ s["fc1.weight"].T + s["fc1.bias"], 0) @ s["fc2.weight"].T
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_mlp_with_symbolic_batch_runs_for_several_batch_sizes():
    model = RelaxModel().init_random(seed=2)
    mod, params = model.export_ir({"forward": {"x": nn.spec.Tensor(("n", 784), "float32")}})
    vm = irc.vm.VirtualMachine(irc.compile(mod, "llvm"), irc.cpu())
    s = model.state_dict()
    for n in (1, 3):
        x = np.random.default_rng(n).random((n, 784), dtype=np.float32)
        out = vm["forward"](irc.tensor(x), *[irc.tensor(p.numpy()) for _, p in params]).numpy()
        ref = np.maximum(x @ s["fc1.weight"].T + s["fc1.bias"], 0) @ s["fc2.weight"].T
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def _conv2d_nchw(x, w, pad):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    out = np.zeros((n, o, h - kh + 1, wd - kw + 1), np.float64)
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i:i + out.shape[2], j:j + out.shape[3]]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out


def test_conv_net_runs_and_matches_numpy():
    class ConvNet(nn.Module):
        def __init__(self):
            self.conv = nn.Conv2D(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2D(4)
            self.relu = nn.ReLU()
            self.pool = nn.MaxPool2D(2)
            self.flatten = nn.Flatten()
            self.fc = nn.Linear(4 * 4 * 4, 5)

        def forward(self, x):
            return self.fc(self.flatten(self.pool(self.relu(self.bn(self.conv(x))))))

    model = ConvNet().init_random(seed=5)
    rng = np.random.default_rng(6)
    model.bn.running_mean.data = rng.standard_normal(4) * 0.1
    model.bn.running_var.data = rng.random(4) + 0.5
    model.bn.weight.data = rng.random(4) + 0.5
    model.bn.bias.data = rng.standard_normal(4) * 0.1
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    out = run(model, {"forward": {"x": nn.spec.Tensor((2, 3, 8, 8), "float32")}}, x)
    s = model.state_dict()
    y = _conv2d_nchw(x, s["conv.weight"], 1) + s["conv.bias"][None, :, None, None]
    c = (None, slice(None), None, None)
    y = (y - s["bn.running_mean"][c]) / np.sqrt(s["bn.running_var"][c] + 1e-5)
    y = np.maximum(y * s["bn.weight"][c] + s["bn.bias"][c], 0)
    y = y.reshape(2, 4, 4, 2, 4, 2).max(axis=(3, 5)).reshape(2, -1)
    ref = y @ s["fc.weight"].T + s["fc.bias"]
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_embedding_norm_gelu_softmax_run_and_match_numpy():
    class Tiny(nn.Module):
        def __init__(self):
            self.embed = nn.Embedding(7, 8)
            self.norm = nn.LayerNorm(8)
            self.act = nn.GELU()
            self.proj = nn.Linear(8, 4)
            self.softmax = nn.Softmax()

        def forward(self, ids):
            return self.softmax(self.proj(self.act(self.norm(self.embed(ids)))))

    model = Tiny().init_random(seed=9)
    rng = np.random.default_rng(10)
    model.norm.weight.data = rng.random(8) + 0.5
    model.norm.bias.data = rng.standard_normal(8) * 0.1
    ids = np.array([[0, 3, 6], [1, 1, 5]], dtype=np.int64)
    out = run(model, {"forward": {"ids": nn.spec.Tensor((2, 3), "int64")}}, ids)
    s = model.state_dict()
    h = s["embed.weight"][ids].astype(np.float64)
    h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5)
    h = h * s["norm.weight"] + s["norm.bias"]
    h = h * 0.5 * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))
    z = h @ s["proj.weight"].T + s["proj.bias"]
    ref = np.exp(z - z.max(-1, keepdims=True))
    ref /= ref.sum(-1, keepdims=True)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-6)

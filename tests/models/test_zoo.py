"""The zoo's API and architectures: names, parameter counts against the published models,
exported signatures, seeding, and errors."""

import numpy as np
import pytest

from irc import IRCError
from irc.frontend import nn
from irc.ir.struct_info import TensorStructInfo
from irc.testing.models import bert, get_model, list_models, mobilenet, resnet
from irc.testing.models._layers import BatchNorm

_STATS = ("running_mean", "running_var")


def _learned(params):
    # torchvision counts batch-norm statistics as buffers, not parameters
    return sum(int(np.prod(p.shape)) for name, p in params if not name.endswith(_STATS))


@pytest.mark.parametrize("name,count", [
    ("resnet18", 11_689_512), ("resnet50", 25_557_032), ("mobilenet_v2", 3_504_872),
])
def test_parameter_counts_match_torchvision(name, count):
    model = get_model(name, image_size=32)
    assert _learned(model.params) == count


def test_bert_parameter_count_and_names():
    vocab, hidden, layers, ffn = 1000, 256, 4, 1024
    model = get_model("bert", vocab_size=vocab)
    per_layer = 4 * (hidden * hidden + hidden) + 2 * 2 * hidden + \
        (hidden * ffn + ffn) + (ffn * hidden + hidden)
    expected = vocab * hidden + 512 * hidden + 2 * hidden + layers * per_layer
    assert _learned(model.params) == expected
    state = model.state_dict()
    assert "layers.3.attention.query.weight" in state
    assert state["token_embeddings.weight"].shape == (vocab, hidden)


def test_resnet_names_follow_torchvision():
    state = get_model("resnet50", image_size=32).state_dict()
    for key in ("conv1.weight", "bn1.running_var", "layer1.0.conv3.weight",
                "layer1.0.downsample.0.weight", "layer2.0.downsample.1.bias", "fc.bias"):
        assert key in state
    assert state["layer3.5.conv2.weight"].shape == (256, 256, 3, 3)
    assert "layer1.1.downsample.0.weight" not in state
    assert "layer1.0.downsample.0.weight" not in get_model("resnet18",
                                                          image_size=32).state_dict()


def test_batch_norm_statistics_are_nontrivial_and_seeded():
    a = get_model("resnet18", image_size=32, seed=3).state_dict()
    b = get_model("resnet18", image_size=32, seed=3).state_dict()
    c = get_model("resnet18", image_size=32, seed=4).state_dict()
    for key in ("bn1.running_mean", "layer2.1.bn2.running_var", "bn1.weight", "bn1.bias"):
        np.testing.assert_array_equal(a[key], b[key])
        assert not np.array_equal(a[key], c[key])
    assert np.abs(a["bn1.running_mean"]).max() > 0
    assert np.abs(a["bn1.running_var"] - 1).max() > 0.1


def test_layouts_share_weights_and_export_their_input_shape():
    nchw = get_model("resnet18", image_size=64)
    nhwc = get_model("resnet18", image_size=64, layout="NHWC")
    assert nchw.input_shape == (1, 3, 64, 64) and nhwc.input_shape == (1, 64, 64, 3)
    sa, sb = nchw.state_dict(), nhwc.state_dict()
    assert sa.keys() == sb.keys()
    assert all(np.array_equal(sa[k], sb[k]) for k in sa)
    func = nhwc.mod["forward"]
    x = func.params[0]
    assert isinstance(x.struct_info, TensorStructInfo)
    assert [int(d.value) for d in x.struct_info.shape] == [1, 64, 64, 3]
    assert func.attrs["num_input"] == 1
    assert len(func.params) == 1 + len(nhwc.params)
    # the reference agrees across layouts (same weights, transposed input)
    img = nchw.random_input(0)
    np.testing.assert_allclose(nchw.reference(img),
                               nhwc.reference(np.ascontiguousarray(img.transpose(0, 2, 3, 1))),
                               rtol=1e-10, atol=1e-12)


def test_module_functions_give_mod_params_and_shape():
    mod, params, shape = resnet.get_resnet(18, image_size=32, layout="NHWC")
    assert shape == (1, 32, 32, 3) and params[0][0] == "conv1_weight"
    assert "forward" in [gv.name_hint for gv in mod.functions]
    mod, params, shape = mobilenet.get_mobilenet_v2(batch_size=2, image_size=32)
    assert shape == (2, 3, 32, 32) and params[0][0] == "stem_conv_weight"
    mod, params, shape = bert.get_bert(seq_len=8, vocab_size=20, num_layers=1)
    assert shape == (1, 8) and params[0][0] == "token_embeddings_weight"
    assert mod["forward"].params[0].struct_info.dtype == "int64"


def test_random_inputs_are_seeded_and_typed():
    m = get_model("bert", seq_len=8, vocab_size=20, num_layers=1)
    ids = m.random_input(1)
    assert ids.dtype == np.int64 and ids.shape == (1, 8) and ids.min() >= 0 and ids.max() < 20
    np.testing.assert_array_equal(ids, m.random_input(1))
    img = get_model("mobilenet_v2", image_size=32).random_input(2)
    assert img.dtype == np.float32 and img.shape == (1, 3, 32, 32)


def test_reference_float32_is_close_to_float64():
    m = get_model("mobilenet_v2", image_size=32)
    x = m.random_input(0)
    r64, r32 = m.reference(x), m.reference(x, dtype="float32")
    assert r32.dtype == np.float32
    assert np.abs(r32 - r64).max() / np.abs(r64).max() < 1e-5


def test_list_models():
    names = list_models()
    assert {"resnet18", "resnet50", "mobilenet_v2", "bert"} <= set(names)


@pytest.mark.parametrize("call,match", [
    (lambda: get_model("vgg16"), "unknown zoo model 'vgg16'"),
    (lambda: get_model("resnet18", seq_len=4), "keywords"),
    (lambda: get_model("resnet18", image_size=16), "at least 32x32"),
    (lambda: get_model("resnet18", layout="NCWH", image_size=32), "layout"),
    (lambda: get_model("bert", seq_len=1000), r"seq_len must be an int in \[1, 512\]"),
    (lambda: resnet.build_resnet(depth=20), "depth must be one of"),
    (lambda: bert.SelfAttention(10, 3), "divisible"),
])
def test_errors_are_irc_errors(call, match):
    with pytest.raises(IRCError, match=match):
        call()


def test_reference_rejects_wrong_input_shape():
    m = get_model("resnet18", image_size=32)
    with pytest.raises(IRCError, match="expects an input of shape"):
        m.reference(np.zeros((1, 3, 64, 64), "float32"))


def test_batch_norm_layer_rejects_unknown_layout():
    with pytest.raises(nn.NNError, match="layout"):
        BatchNorm(4, layout="CHWN")

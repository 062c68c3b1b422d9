"""ResNet-50, MobileNet-V2 and the BERT-style encoder compile with irc.compile(mod, "llvm")
and match their numpy references (max |irc - ref| / max |ref| < 1e-4, float32 against
float64). ResNet-18 is in test_resnet18.py.

Default runs use reduced inputs where the architecture allows (32x32 and 64x64 images:
the same layers, smaller feature maps); the BERT encoder runs at its full configuration
(4 layers, hidden 256, 4 heads, sequence 128) with a 1000-token vocabulary (the vocabulary
only sizes the lookup table). ImageNet-size runs are marked slow.
"""

import numpy as np
import pytest
from zoo_helpers import (
    assert_matches_reference,
    compile_keeping_ir,
    elementwise_after_conv,
    is_convolution,
    kernel_calls,
)

import irc
from irc.testing.models import get_model


@pytest.mark.slow  # 33 s; the default run checks ResNet-50 against ONNX Runtime
# (tests/frontend/test_onnx_models.py) and ResNet-18's fusion (test_resnet18.py)
def test_resnet50_matches_numpy():
    model = get_model("resnet50", image_size=32)
    ex, opt = compile_keeping_ir(model.mod, model.bound_params())
    assert_matches_reference(ex, model, bound=True)
    # 53 convolutions: stem, 3 per bottleneck block (16 blocks), 4 downsample shortcuts.
    assert sum(is_convolution(opt[c.kernel]) for c in kernel_calls(opt)) == 53
    assert elementwise_after_conv(opt) == []


@pytest.mark.slow  # (CI time; the default run checks the smaller cases)
def test_mobilenet_v2_matches_numpy():
    model = get_model("mobilenet_v2", image_size=64)
    ex, opt = compile_keeping_ir(model.mod, model.bound_params())
    assert_matches_reference(ex, model, bound=True)
    # 52 convolutions: stem, head, 17 depthwise + 17 projections + 16 expansions; ReLU6
    # (clip), batch norm and the residual adds are fused into them.
    assert sum(is_convolution(opt[c.kernel]) for c in kernel_calls(opt)) == 52
    assert elementwise_after_conv(opt) == []


def test_bert_encoder_matches_numpy_with_weights_as_params():
    model = get_model("bert", seq_len=128, vocab_size=1000)
    ex = irc.compile(model.mod, "llvm")
    assert_matches_reference(ex, model, bound=False)


def test_bert_encoder_rows_are_layer_normalized():
    # The output is the last LayerNorm's: per position, (y - beta) / gamma has mean 0 and
    # variance 1 — a property check independent of the reference.
    model = get_model("bert", seq_len=16, vocab_size=50, num_layers=1, batch_size=2, hidden=64,
                      num_heads=2, ffn=128)
    ex = irc.compile(model.mod, "llvm", params=model.bound_params())
    x = model.random_input(3)
    y = irc.vm.VirtualMachine(ex)["forward"](irc.tensor(x)).numpy().astype(np.float64)
    state = model.state_dict()
    z = (y - state["layers.0.ffn_norm.bias"]) / state["layers.0.ffn_norm.weight"]
    np.testing.assert_allclose(z.mean(axis=-1), 0.0, atol=1e-4)
    np.testing.assert_allclose(z.var(axis=-1), 1.0, atol=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet50", "mobilenet_v2"])
def test_imagenet_size_matches_numpy(name):
    model = get_model(name, image_size=224)
    ex, opt = compile_keeping_ir(model.mod, model.bound_params())
    assert_matches_reference(ex, model, bound=True)
    assert elementwise_after_conv(opt) == []


@pytest.mark.slow
def test_resnet50_nhwc_matches_numpy():
    model = get_model("resnet50", image_size=64, layout="NHWC")
    ex, _ = compile_keeping_ir(model.mod, model.bound_params())
    assert_matches_reference(ex, model, bound=True)


@pytest.mark.slow
def test_bert_encoder_full_vocabulary_bound_matches_numpy():
    model = get_model("bert")
    ex = irc.compile(model.mod, "llvm", params=model.bound_params())
    assert_matches_reference(ex, model, bound=True)

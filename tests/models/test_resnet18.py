"""ResNet-18 through irc.compile: numerics against the numpy reference, and the fusion
result of the default pipeline (kernels counted on the compiled graph function), with the
weights passed as parameters and bound as constants, in NCHW and NHWC.

Default runs use 64x64 images (same architecture, every stage at least 2x2); the
ImageNet-size runs are marked slow.
"""

import pytest
from zoo_helpers import (
    activation_kernels,
    assert_matches_reference,
    compile_keeping_ir,
    constant_args,
    elementwise_after_conv,
    is_convolution,
    kernel_calls,
    kernel_patterns,
    winograd_convolutions,
)

from irc import passes
from irc.frontend import nn
from irc.ir.op import INJECTIVE
from irc.testing.models import get_model

IMAGE = 64
NUM_CONVS = 20  # stem, 16 in the basic blocks, 3 downsample shortcuts
# Kernels on the data path once fused: the 20 convolutions (with batch norm, ReLU and the
# residual add inside), max pooling, average pooling, the flattening reshape, the dense
# layer with its bias.
NUM_DATA_KERNELS = NUM_CONVS + 4


@pytest.fixture(scope="module")
def resnet18():
    return get_model("resnet18", image_size=IMAGE)


@pytest.fixture(scope="module", params=["weights_as_params", "weights_bound"])
def compiled(request, resnet18):
    bound = request.param == "weights_bound"
    ex, opt = compile_keeping_ir(resnet18.mod, resnet18.bound_params() if bound else None)
    return bound, ex, opt


def test_resnet18_matches_numpy(resnet18, compiled):
    bound, ex, _ = compiled
    assert_matches_reference(ex, resnet18, bound)


def test_resnet18_no_standalone_elementwise_after_conv(compiled):
    _, _, opt = compiled
    assert elementwise_after_conv(opt) == []


def test_resnet18_kernel_count(resnet18, compiled):
    bound, _, opt = compiled
    func = opt["forward"]
    calls = kernel_calls(opt)
    convs = [c for c in calls if is_convolution(opt[c.kernel])]
    assert len(convs) == NUM_CONVS
    data = activation_kernels(calls, func.attrs["num_input"], func.params)
    # With constant weights, the 3 x 3 layers with enough output tiles run as Winograd
    # convolutions: each adds an input transform and a batched product before the
    # kernel that writes its output (at this image size layer 1, 16 x 16, and layer 2,
    # 8 x 8: 4 + 4 convolutions, layer 2's first one at stride 2).
    winograd = winograd_convolutions(opt)
    assert winograd == (8 if bound else 0)
    # On the CPU the convolutions run in NHWC: the NCHW image is transposed once, first;
    # the chain stays NHWC to the global pooling (no other conversion).
    assert len(data) == NUM_DATA_KERNELS + 1 + 2 * winograd, [c.kernel for c in data]
    patterns = kernel_patterns(opt)
    # Every data-path kernel but that transpose and the flattening reshape does real work.
    assert [c.kernel for c in data if patterns[c.kernel] <= INJECTIVE and
            not is_convolution(opt[c.kernel])] == [data[0].kernel, data[-2].kernel]
    assert data[0].kernel.startswith("transpose")
    # Batch norm, ReLU and (in the second convolution of each block) the residual add
    # are inside the convolution kernels; with constant weights batch norm was folded
    # into them (scaled weights and a bias: no multiply left). In a downsampling block
    # the second convolution's bias may instead join the shortcut convolution's
    # epilogue, which adds the two (a Winograd output transform then stands alone).
    fused_names = [c.kernel for c in convs]
    assert [n for n in fused_names if not ("add" in n and ("multiply" in n) != bound)
            and not n.startswith("winograd_output_transform")] == []
    assert sum("relu" in n for n in fused_names) == NUM_CONVS - 3  # not the shortcuts
    if bound:
        # Folded: no weight preprocessing is left, the kernels read constants.
        assert len(calls) == NUM_DATA_KERNELS + 1 + 2 * winograd
        assert len(func.params) == 1 and constant_args(calls) > 0
    else:
        # The rest is weight-side preprocessing (batch-norm scale and shift, the dense
        # weight's transpose): small kernels on the weights, no convolution among them,
        # and the data path reads no constant.
        on_data = {id(c) for c in data}
        weight_side = [c for c in calls if id(c) not in on_data]
        assert weight_side and not any(is_convolution(opt[c.kernel]) for c in weight_side)
        assert constant_args(data) == 0


def test_checker_sees_unfused_epilogues():
    # Without FuseOps/FuseTIR the conv's batch norm and ReLU are separate kernels: the
    # checker must report them (so an empty report above means something).
    class ConvBNReLU(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2D(3, 4, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2D(4)

        def forward(self, x):
            return nn.op.relu(self.bn(self.conv(x)))

    mod, params = ConvBNReLU().init_random(0).export_ir(
        {"forward": {"x": nn.spec.Tensor((1, 3, 8, 8), "float32")}})
    unfused = passes.Sequential([
        passes.DecomposeOpsForInference(), passes.Normalize(), passes.LegalizeOps(),
        passes.Normalize(), passes.CanonicalizeBindings(),
    ])(mod)
    assert elementwise_after_conv(unfused)
    fused = passes.get_pipeline("default")(mod)
    assert elementwise_after_conv(fused) == []


@pytest.mark.slow  # 19 s; the default pipeline runs the NCHW model's convolutions in NHWC
def test_resnet18_nhwc_matches_numpy_and_fuses():
    model = get_model("resnet18", image_size=IMAGE, layout="NHWC")
    ex, opt = compile_keeping_ir(model.mod, model.bound_params())
    assert_matches_reference(ex, model, bound=True)
    assert elementwise_after_conv(opt) == []
    assert len(kernel_calls(opt)) == NUM_DATA_KERNELS


@pytest.mark.slow
def test_resnet18_convert_layout_to_nhwc_matches_numpy(resnet18):
    # The NCHW model with its convolutions converted to NHWC/HWIO by ConvertLayout (put in
    # front of the default pipeline, as seed 004 recommends) still matches the reference.
    mod = passes.ConvertLayout({"nn.conv2d": ["NHWC", "default"]})(resnet18.mod)
    ex, opt = compile_keeping_ir(mod, resnet18.bound_params())
    assert_matches_reference(ex, resnet18, bound=True, seed=1)
    assert elementwise_after_conv(opt) == []


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_resnet18_imagenet_size_matches_numpy(layout):
    model = get_model("resnet18", image_size=224, layout=layout)
    ex, opt = compile_keeping_ir(model.mod, model.bound_params())
    assert_matches_reference(ex, model, bound=True)
    assert elementwise_after_conv(opt) == []

"""The default pipeline: a ResNet-style network fuses into one kernel per convolution."""

import numpy as np
import pytest
from pass_helpers import prim_funcs, run_main

import irc
from irc import passes
from irc.ir import BlockBuilder, TupleGetItem, Var, ops, tensor_sinfo
from irc.testing import ref
from irc.tir.stmt import Block


class _Net:
    """A stem and two basic residual blocks (the second downsamples with a 1x1 conv
    shortcut), built with the BlockBuilder, with random weights and a numpy forward."""

    def __init__(self, channels: int = 4, size: int = 8, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.params: list[Var] = []
        self.values: dict[str, np.ndarray] = {}
        self.convs = 0
        self.bb = BlockBuilder()
        self.c = channels
        self.x = Var(name_hint="x", struct_info=tensor_sinfo((1, 3, size, size), "float32"))

    def param(self, name: str, shape: tuple[int, ...], low: float = -0.5,
              high: float = 0.5) -> Var:
        v = Var(name_hint=name, struct_info=tensor_sinfo(shape, "float32"))
        self.params.append(v)
        self.values[name] = self.rng.uniform(low, high, shape).astype("float32")
        return v

    def conv_bn(self, h, cin: int, cout: int, k: int, stride: int, relu: bool,
                residual=None):
        """conv2d -> add bias -> batch_norm -> (+ residual) -> (relu), in IR and numpy."""
        i = self.convs
        self.convs += 1
        w = self.param(f"w{i}", (cout, cin, k, k))
        b = self.param(f"b{i}", (1, cout, 1, 1))
        bn = [self.param(f"gamma{i}", (cout,), 0.5, 1.5), self.param(f"beta{i}", (cout,)),
              self.param(f"mean{i}", (cout,)), self.param(f"var{i}", (cout,), 0.5, 1.5)]
        pad = k // 2
        bb = self.bb
        ir, arr = h
        y = bb.emit(ops.nn.conv2d(ir, w, strides=stride, padding=pad))
        y = bb.emit(ops.add(y, b))
        t = bb.emit(ops.nn.batch_norm(y, *bn, axis=1))
        y = bb.emit(TupleGetItem(tuple_value=t, index=0))
        v = self.values
        a = ref.conv2d_nchw(arr, v[w.name_hint], strides=stride, padding=pad) + v[b.name_hint]
        a = ref.batch_norm(a, *(v[p.name_hint] for p in bn), axis=1)
        if residual is not None:
            y = bb.emit(ops.add(y, residual[0]))
            a = a + residual[1]
        if relu:
            y = bb.emit(ops.nn.relu(y))
            a = np.maximum(a, 0)
        return y, a

    def build(self, x_value: np.ndarray):
        bb = self.bb
        c = self.c
        with bb.function("main", attrs={"num_input": 1}):
            with bb.dataflow():
                h = (self.x, x_value)
                h = self.conv_bn(h, 3, c, 3, 1, relu=True)                 # stem
                r = self.conv_bn(h, c, c, 3, 1, relu=True)                 # block 1
                h = self.conv_bn(r, c, c, 3, 1, relu=True, residual=h)
                r = self.conv_bn(h, c, 2 * c, 3, 2, relu=True)             # block 2
                s = self.conv_bn(h, c, 2 * c, 1, 2, relu=False)            # shortcut
                h = self.conv_bn(r, 2 * c, 2 * c, 3, 1, relu=True, residual=s)
                out = bb.emit_output(h[0])
            bb.emit_func_output(out, params=[self.x] + self.params)
        return bb.get(), h[1]


@pytest.fixture(scope="module")
def network():
    x = np.random.default_rng(42).uniform(-1, 1, (1, 3, 8, 8)).astype("float32")
    net = _Net()
    mod, expected = net.build(x)
    return net, mod, x, expected


def _kernel_calls(mod) -> list[str]:
    """The loop functions ``main`` calls, one entry per call."""
    return [b.value.args[0].name_hint for blk in mod["main"].body.blocks
            for b in blk.bindings if isinstance(b.value, irc.ir.Call)
            and b.value.op.name == "call_tir"]


def _conv_blocks(func) -> list[str]:
    names = irc.ir.collect(func.body, lambda n: isinstance(n, Block))
    return [b.name for b in names if b.name.startswith("conv2d")]


def test_bound_resnet_blocks_compile_to_one_kernel_per_convolution(network):
    net, mod, x, expected = network
    bound = passes.BindParams("main", net.values)(mod)
    optimized = passes.get_pipeline("default")(bound)
    irc.ir.well_formed(optimized)
    kernels = prim_funcs(optimized)
    # every kernel is a convolution with its bias, batch norm, residual add and relu fused
    # in: no stand-alone elementwise kernel after a convolution
    calls = _kernel_calls(optimized)
    assert len(calls) == net.convs == 6
    for name in calls:
        assert name.startswith("fused_conv2d"), name
        assert len(_conv_blocks(kernels[name])) == 1, name
    np.testing.assert_allclose(run_main(optimized, x), expected, rtol=1e-4, atol=1e-4)
    # irc.compile takes the same route
    vm = irc.vm.VirtualMachine(irc.compile(mod, "llvm", params=net.values))
    np.testing.assert_allclose(vm["main"](x).numpy(), expected, rtol=1e-4, atol=1e-4)


def test_unbound_weights_still_fuse_each_epilogue_into_its_convolution(network):
    net, mod, x, expected = network
    optimized = passes.get_pipeline("default")(mod)
    kernels = prim_funcs(optimized)
    conv_kernels = [f for f in kernels.values() if _conv_blocks(f)]
    assert len(conv_kernels) == net.convs
    # the batch-norm factors are computed from the parameters by small kernels, but no
    # kernel reads a convolution's output except the next convolution
    calls = {b.var.name_hint: b.value for blk in optimized["main"].body.blocks
             for b in blk.bindings}
    conv_outputs = {name for name, c in calls.items()
                    if c.args[0].name_hint.startswith("fused_conv2d")}
    for name, c in calls.items():
        readers = {a.name_hint for a in c.args[1].fields if isinstance(a, Var)}
        if readers & conv_outputs:
            assert c.args[0].name_hint.startswith("fused_conv2d"), name
    args = [x] + [net.values[p.name_hint] for p in net.params]
    np.testing.assert_allclose(run_main(optimized, *args), expected, rtol=1e-4, atol=1e-4)


def test_nhwc_conversion_then_the_default_pipeline(network):
    net, mod, x, expected = network
    bound = passes.BindParams("main", net.values)(mod)
    nhwc = passes.ConvertLayout({"nn.conv2d": ["NHWC", "default"]})(bound)
    optimized = passes.get_pipeline("default")(nhwc)
    kernels = prim_funcs(optimized)
    conv_kernels = [f for f in kernels.values() if _conv_blocks(f)]
    assert len(conv_kernels) == net.convs
    assert all(_conv_blocks(f) == ["conv2d_nhwc"] for f in conv_kernels)
    # weights were permuted at compile time; only the input and the output are permuted
    # at run time (the input permute fuses into the stem's kernel)
    assert len(kernels) - len(conv_kernels) <= 2
    np.testing.assert_allclose(run_main(optimized, x), expected, rtol=1e-4, atol=1e-4)


def test_default_pipeline_order():
    names = [p.info.name for p in passes.get_pipeline("default").passes]
    assert names == ["AnnotateIndexExtents",
                     "FoldBatchNormToConv2D", "DecomposeOpsForInference", "Normalize",
                     "CanonicalizeBindings", "DeadCodeElimination", "ConvertLayoutForTarget",
                     "WinogradConv2D",
                     "LegalizeOps", "Normalize", "CanonicalizeBindings",
                     "AnnotateTIROpPattern", "FoldConstant",
                     "DeadCodeElimination", "FuseOps", "FuseTIR", "DeadCodeElimination",
                     "DefaultScheduleForTarget"]



def test_opt_level_0_compiles_without_fusion(network, roundtrip_instrument):
    net, mod, x, expected = network
    bound = passes.BindParams("main", net.values)(mod)
    with passes.PassContext(opt_level=0, instruments=[roundtrip_instrument]):
        plain = passes.get_pipeline("default")(bound)
    assert not any(name.startswith("fused") for name in prim_funcs(plain))
    np.testing.assert_allclose(run_main(plain, x), expected, rtol=1e-4, atol=1e-4)


def test_a_cnn_with_a_dynamic_batch_compiles_with_the_default_pipeline():
    """nn.Flatten of a batch "n" (a reshape to a symbolic shape) broke the default
    pipeline ("'Var' object has no attribute 'name_hint'", from Normalize)."""
    import numpy as np

    from irc.frontend import nn

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2D(3, 4, 3, padding=1)
            self.flat = nn.Flatten()
            self.fc = nn.Linear(4 * 8 * 8, 10)

        def forward(self, x):
            return self.fc(self.flat(self.conv(x)))

    model = CNN()
    mod, params = model.export_ir({"forward": {"x": nn.spec.Tensor(("n", 3, 8, 8),
                                                                   "float32")}})
    vm = irc.vm.VirtualMachine(irc.compile(mod, "llvm"))
    weights = [np.random.default_rng(k).standard_normal(p.shape).astype("float32")
               for k, (_, p) in enumerate(params)]
    for n in (1, 3):
        x = np.random.default_rng(n).standard_normal((n, 3, 8, 8)).astype("float32")
        assert vm["forward"](x, *weights).numpy().shape == (n, 10)

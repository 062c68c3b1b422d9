"""Seed 003's library dispatch on a CNN, on the CPU: a custom module pass offloads every
convolution (with its bias, ResNet-style residual add and ReLU) and the dense head to
oneDNN by pattern (``irc.dispatch.get_patterns_with_prefix("dnnl")``); the MetaSchedule
tuning passes tune what is left (pooling, the bias reshapes); the VM runs the result,
checked against numpy.

Needs the ``dnnl`` extra (``pip install 'irc[dnnl]'``). Run:
``python examples/dnnl_cnn.py [--trials 8]``.
"""

import argparse
import tempfile

import numpy as np

import irc
from irc import passes
from irc.frontend import nn
from irc.testing.models.reference_ops import conv2d


class ResidualCNN(nn.Module):
    """conv-relu, a residual block (conv-relu, conv + shortcut, relu), pooling, dense."""

    def __init__(self, channels=16, classes=10):
        super().__init__()
        self.stem = nn.Conv2D(3, channels, 3, padding=1)
        self.conv1 = nn.Conv2D(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2D(channels, channels, 3, padding=1)
        self.relu = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.flatten = nn.Flatten(1)
        self.fc = nn.Linear(channels, classes)

    def forward(self, x):
        y = self.relu(self.stem(x))
        z = self.relu(self.conv1(y))
        z = self.relu(self.conv2(z) + y)
        return self.fc(self.flatten(self.pool(z)))


@passes.module_pass(opt_level=0, name="DnnlDispatch")
class DnnlDispatch:
    def transform_module(self, mod, ctx):
        patterns = irc.dispatch.get_patterns_with_prefix("dnnl")
        mod = passes.FuseOpsByPattern(patterns, annotate_codegen=True)(mod)
        return passes.RunCodegen()(mod)


def reference(x, weights):
    """The model in numpy (float64)."""
    (ws, bs), (w1, b1), (w2, b2), (wf, bf) = (weights[i:i + 2] for i in range(0, 8, 2))

    def conv(v, w, b):
        return conv2d(v, w.astype(np.float64), 1, 1) + b.reshape(1, -1, 1, 1)

    y = np.maximum(conv(x, ws, bs), 0)
    z = np.maximum(conv(y, w1, b1), 0)
    z = np.maximum(conv(z, w2, b2) + y, 0)
    return z.mean(axis=(2, 3)) @ wf.T + bf


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=8)
    args = p.parse_args()

    input_shape = (1, 3, 32, 32)
    mod, params = ResidualCNN().export_ir({"forward": {"x": nn.spec.Tensor(input_shape,
                                                                            "float32")}})
    mod = DnnlDispatch()(mod)
    mod.show()

    target = irc.target.Target("llvm")
    with target, tempfile.TemporaryDirectory() as tmp_dir:
        mod = passes.Sequential(
            [
                passes.get_pipeline("zero"),
                passes.MetaScheduleTuneTIR(work_dir=tmp_dir, max_trials_global=args.trials),
                passes.MetaScheduleApplyDatabase(work_dir=tmp_dir),
            ]
        )(mod)

    ex = irc.compile(mod, target="llvm")
    print(ex, ex.stats())
    dev = irc.cpu(0)
    vm = irc.vm.VirtualMachine(ex, dev)
    rng = np.random.default_rng(0)
    data = rng.standard_normal(input_shape).astype("float32")
    weights = [(rng.standard_normal(p.shape) * 0.2).astype(p.dtype) for _, p in params]
    out = vm["forward"](irc.tensor(data, dev), *[irc.tensor(w, dev) for w in weights]).numpy()
    print(out)
    np.testing.assert_allclose(out, reference(data.astype(np.float64), weights), rtol=1e-4,
                               atol=1e-4)
    print("matches numpy")


if __name__ == "__main__":
    main()

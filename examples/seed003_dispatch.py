"""Seed 003's library dispatch with irc's names, on the CPU: a custom module pass
offloads ``matmul(x, permute_dims(w)) + b -> relu`` (seed 003's ``nn.Linear`` +
``nn.ReLU``) to OpenBLAS by pattern (``blas.matmul_transposed_bias_relu``, the twin of
the seed's ``cublas.matmul_transposed_bias_relu``); the MetaSchedule tuning passes tune
the rest of the graph; the VM runs the result, checked against numpy.

Needs the ``blas`` extra (``pip install 'irc[blas]'``). Run:
``python examples/seed003_dispatch.py [--trials 16]``.
"""

import argparse
import os
import sys
import tempfile

import numpy as np

import irc
from irc import passes
from irc.frontend import nn

# Seed 003's model, as the tuning half of the seed defines it.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tune_seed003_passes import RelaxModel


@passes.module_pass(opt_level=0, name="BlasDispatch")
class BlasDispatch:
    def transform_module(self, mod, ctx):
        # All of the backend's patterns: irc.dispatch.get_patterns_with_prefix("blas").
        patterns = [irc.dispatch.get_pattern("blas.matmul_transposed_bias_relu")]
        mod = passes.FuseOpsByPattern(patterns, annotate_codegen=True)(mod)
        return passes.RunCodegen()(mod)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=16)
    args = p.parse_args()

    input_shape = (1, 784)
    mod, params = RelaxModel().export_ir({"forward": {"x": nn.spec.Tensor(input_shape,
                                                                          "float32")}})
    mod = BlasDispatch()(mod)
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
    data = rng.random(input_shape).astype("float32")
    weights = [rng.random(p.shape).astype(p.dtype) for _, p in params]
    out = vm["forward"](irc.tensor(data, dev), *[irc.tensor(w, dev) for w in weights]).numpy()
    print(out)
    w1, b1, w2 = weights
    np.testing.assert_allclose(out, np.maximum(data @ w1.T + b1, 0) @ w2.T, rtol=1e-5)
    print("matches numpy")


if __name__ == "__main__":
    main()

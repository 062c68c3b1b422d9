"""Seed 003's GPU flow with irc's names: an nn.Module exported to an IRModule, its
``matmul(x, permute_dims(w)) + b -> relu`` offloaded to cuBLAS by pattern
(``cublas.matmul_transposed_bias_relu``, through a custom module pass), the rest
legalized (the "zero" pipeline) and scheduled by the DLight GPU rules, compiled for
``cuda`` and run on the VM on ``irc.cuda(0)`` with inputs and weights on the GPU.

The kernels are compiled with NVRTC whether or not this machine has a GPU; running them
needs one (without it the example says so and stops after the build).

Run: ``python examples/seed003_gpu.py``.
"""

import os
import sys

import numpy as np

import irc
from irc import dlight as dl
from irc import passes
from irc.frontend import nn

# Seed 003's model, as the tuning half of the seed defines it.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tune_seed003_passes import RelaxModel


@passes.module_pass(opt_level=0, name="CublasDispatch")
class CublasDispatch:
    def transform_module(self, mod, ctx):
        # In practice all of them: irc.dispatch.get_patterns_with_prefix("cublas").
        patterns = [irc.dispatch.get_pattern("cublas.matmul_transposed_bias_relu")]
        mod = passes.FuseOpsByPattern(patterns, annotate_codegen=True)(mod)
        return passes.RunCodegen()(mod)


def main():
    input_shape = (1, 784)
    mod, params = RelaxModel().export_ir({"forward": {"x": nn.spec.Tensor(input_shape,
                                                                          "float32")}})
    target = irc.target.Target.from_device(irc.cuda(0))
    mod = CublasDispatch()(mod)
    mod.show()
    with target:
        mod = passes.Sequential(
            [
                passes.get_pipeline("zero"),
                dl.ApplyDefaultSchedule(
                    dl.gpu.Matmul(),
                    dl.gpu.GEMV(),
                    dl.gpu.Reduction(),
                    dl.gpu.GeneralReduction(),
                    dl.gpu.Fallback(),
                ),
            ]
        )(mod)
    mod.show()

    ex = irc.compile(mod, target="cuda")
    print(ex, ex.stats())
    if not irc.cuda(0).exist:
        print("no CUDA GPU on this machine: the kernels above compiled with NVRTC; running "
              "them needs a GPU")
        return
    dev = irc.cuda(0)
    vm = irc.vm.VirtualMachine(ex, dev)
    # Data and parameters are allocated on the GPU.
    rng = np.random.default_rng(0)
    data = irc.tensor(rng.random(input_shape).astype("float32"), dev)
    weights = [rng.random(p.shape).astype(p.dtype) for _, p in params]
    gpu_params = [irc.tensor(w, dev) for w in weights]
    gpu_out = vm["forward"](data, *gpu_params).numpy()
    print(gpu_out)
    w1, b1, w2 = weights
    want = np.maximum(data.numpy() @ w1.T + b1, 0) @ w2.T
    np.testing.assert_allclose(gpu_out, want, rtol=1e-4)
    print("matches numpy")


if __name__ == "__main__":
    main()

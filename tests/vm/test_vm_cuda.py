"""``irc.compile(mod, target="cuda")`` and the VM on a GPU.

Without a GPU: the default GPU pipeline (legalize, fuse, the dlight GPU rules) schedules
every kernel of the zoo models, NVRTC compiles them, the executable saves and loads with
its cubin and host plans, and the same bytecode with the GPU-scheduled kernels run by the
barrier-faithful interpreter matches the models' numpy references. With a GPU (tests
marked ``cuda``): the VM on ``irc.cuda(0)`` matches them too.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest

import irc
from irc import passes
from irc.core.diagnostics import IRCError, VMError
from irc.runtime.cuda_program import CUDAProgramModule, compile_expr
from irc.target import Target
from irc.testing.models import get_model
from irc.tir.interpreter import compile_func
from irc.tir.stmt import PrimFunc
from irc.vm.build import link
from irc.vm.executable import Executable

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SMALL = {
    "bert": {"seq_len": 8, "hidden": 32, "num_layers": 1, "num_heads": 2, "ffn": 64,
             "vocab_size": 50},
    "resnet18": {"image_size": 32, "num_classes": 10},
}


class _InterpretedKernels:
    """A kernel library whose functions are a module's GPU-scheduled loop functions run
    by the reference interpreter with GPU semantics (lowered to kernels, threads in
    lock-step between barriers): what the VM's bytecode calls in place of the cubin, so
    a GPU build's numerics are checked on the CPU."""

    def __init__(self, mod):
        self.funcs = {gv.name_hint: f for gv, f in mod.functions.items()
                      if isinstance(f, PrimFunc)}

    @property
    def function_names(self):
        return list(self.funcs)

    def get_function(self, name):
        compiled = compile_func(self.funcs[name])

        class _Kernel:
            num_args = len(self.funcs[name].params)

            def __call__(self, *args):
                compiled(*args)

            _vm_call = __call__

        return _Kernel()


def _gpu_module(m):
    with Target("cuda"):
        return passes.get_pipeline("default")(
            passes.BindParams("forward", m.bound_params())(m.mod))


def _run_interpreted(m, x):
    mod = _gpu_module(m)
    ex = link(mod, "cuda")
    assert isinstance(ex.lib, CUDAProgramModule)
    assert ex.lib.cubin[:4] == b"\x7fELF"
    cpu_ex = Executable(ex.functions, ex.constants, _InterpretedKernels(mod), "cuda")
    return irc.vm.VirtualMachine(cpu_ex, irc.cpu())["forward"](x).numpy()


def _model(name):
    return get_model(name, **SMALL[name])


def test_default_gpu_pipeline_schedules_every_kernel():
    m = _model("bert")
    mod = _gpu_module(m)
    funcs = [f for f in mod.functions.values() if isinstance(f, PrimFunc)]
    assert funcs and all(f.attrs.get("tir.is_scheduled") for f in funcs)


@pytest.mark.parametrize("name", ["bert"])
def test_gpu_build_matches_the_reference_under_the_interpreter(name):
    m = _model(name)
    x = m.random_input()
    got = _run_interpreted(m, x)
    want = m.reference(x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_gpu_build_of_a_resnet_matches_under_the_interpreter():
    m = _model("resnet18")
    x = m.random_input()
    np.testing.assert_allclose(_run_interpreted(m, x), m.reference(x), rtol=1e-4, atol=1e-4)


def test_cuda_executable_saves_and_loads(tmp_path):
    m = _model("bert")
    ex = irc.compile(m.mod, target="cuda", params=m.bound_params())
    assert "cuda" in ex.target and ex.stats()["kernels"] >= 5
    path = str(tmp_path / "bert.ircx")
    ex.save(path)
    back = Executable.load(path)
    assert isinstance(back.lib, CUDAProgramModule)
    assert back.lib.cubin == ex.lib.cubin
    assert back.lib.get_source() == ex.lib.get_source()
    assert back.lib.plans == ex.lib.plans
    assert back.as_text() == ex.as_text()


def test_device_mismatch_is_a_vm_error():
    # The bundled example: the check is the VM's, so any network will do.
    mod = irc.parse((EXAMPLES / "convnet.ir").read_text())
    gpu_ex = irc.compile(mod, target="cuda")
    with pytest.raises(VMError, match="runs on a CUDA GPU, not on cpu"):
        irc.vm.VirtualMachine(gpu_ex, irc.cpu())
    cpu_ex = irc.compile(mod, target="llvm")
    with pytest.raises(VMError, match="runs on the CPU, not on cuda"):
        irc.vm.VirtualMachine(cpu_ex, irc.cuda(0))


def test_host_plan_runtime_rejects_malformed_expressions():
    env = [7, 3]
    assert compile_expr(["floordiv", ["var", 0], ["var", 1]])(env) == 2
    assert compile_expr(["truncdiv", -7, 2])(env) == -3
    assert compile_expr(["select", ["lt", ["var", 1], 5], 1, 2])(env) == 1
    assert compile_expr(["cast", "int64", 2.0])(env) == 2
    with pytest.raises(IRCError, match="unknown operator"):
        compile_expr(["pow", 1, 2])
    with pytest.raises(IRCError, match="malformed"):
        compile_expr({"x": 1})


# The whole zoo on a real GPU, at reduced shapes (benchmarks/gpu.py runs full sizes).
GPU_ZOO = {**SMALL, "resnet50": {"image_size": 64, "num_classes": 100},
           "mobilenet_v2": {"image_size": 64, "num_classes": 100}}


@pytest.mark.cuda
@pytest.mark.parametrize("name", list(GPU_ZOO))
def test_vm_on_the_gpu_matches_the_reference(name):
    m = get_model(name, **GPU_ZOO[name])
    ex = irc.compile(m.mod, target="cuda", params=m.bound_params())
    vm = irc.vm.VirtualMachine(ex, irc.cuda(0))
    x = m.random_input()
    out = vm["forward"](irc.tensor(x, irc.cuda(0)))
    assert out.device == irc.cuda(0)
    np.testing.assert_allclose(out.numpy(), m.reference(x), rtol=1e-4, atol=1e-4)
    # numpy inputs are copied to the device; the planned storage is reused.
    np.testing.assert_allclose(vm["forward"](x).numpy(), m.reference(x), rtol=1e-4,
                               atol=1e-4)


def test_seed003_gpu_example_builds(capsys):
    # Seed 003's flow: cuBLAS by pattern for the first dense layer, DLight GPU rules for
    # the rest, compile for cuda, the VM on irc.cuda(0) (which runs and checks numpy where
    # a GPU exists).
    runpy.run_path(str(EXAMPLES / "seed003_gpu.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert 'R.call_dps_packed("fused_permute_dims_matmul_add_nn_relu_cublas"' in out
    assert "kernels=2" in out
    assert ("matches numpy" in out) == irc.cuda(0).exist


@pytest.mark.parametrize("name,kw", [
    ("resnet50", {"image_size": 224}),
    ("mobilenet_v2", {"image_size": 224}),
    ("bert", {"seq_len": 128, "hidden": 768, "num_layers": 1, "num_heads": 12, "ffn": 3072}),
    ("bert", {"batch_size": 16, "seq_len": 128, "hidden": 768, "num_layers": 1,
              "num_heads": 12, "ffn": 3072}),
], ids=["resnet50", "mobilenet_v2", "bert", "bert-b16"])
def test_default_gpu_kernels_of_the_zoo_do_not_spill(name, kw):
    # ptxas's report (through NVRTC, no GPU): no register spills, no stack frame, in
    # every kernel the default GPU rules make for the zoo's models at their benchmark
    # sizes (BERT-base with one of its twelve identical layers).
    from irc.codegen.cuda import codegen_cuda
    from irc.codegen.nvrtc import kernel_resources
    from irc.tir.transform import lower_primfunc_for_gpu

    with passes.PassContext(instruments=[]):  # the round trips are checked elsewhere
        mod = _gpu_module(get_model(name, **kw))
        program = codegen_cuda({gv.name_hint: lower_primfunc_for_gpu(f)
                                for gv, f in mod.functions.items()
                                if isinstance(f, PrimFunc)})
        res = kernel_resources(program.source)
    assert len(res) == len(program.kernels)
    spilled = {k: r for k, r in res.items()
               if r.spill_store_bytes or r.spill_load_bytes or r.stack_bytes}
    assert not spilled
    assert all(0 < r.registers <= 255 for r in res.values())

"""Seed 003's DLight step: the MLP's two small kernels under the GPU rules, as
Before/Expected pairs, and the whole module scheduled and checked in the interpreter.

irc's ``matmul`` differs from TVM's print in one respect, by design: irc does not lower
cross-thread reductions, so the 16 partial sums per output live in shared memory and
each ``threadIdx.x`` thread adds them up in a serial loop (TVM binds that loop to
``threadIdx.y`` and keeps the partials thread-local).
"""

import pathlib

import numpy as np
from dlight_helpers import assert_same_as_unscheduled

import irc
from irc import dlight as dl
from irc import passes
from irc.core.structural import assert_structural_equal
from irc.frontend import nn
from irc.target import Target
from irc.tir.stmt import PrimFunc

SEED_RULES = [dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(), dl.gpu.GeneralReduction(),
              dl.gpu.Fallback()]

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
BEFORE = (FIXTURES / "seed003_gpu_before.ir").read_text()
EXPECTED = (FIXTURES / "seed003_gpu_expected.ir").read_text()




def test_seed003_kernels_before_expected():
    with Target("cuda"):
        after = dl.ApplyDefaultSchedule(*SEED_RULES)(irc.parse(BEFORE))
    assert_structural_equal(after, irc.parse(EXPECTED))


def test_seed003_rule_per_kernel():
    mod = irc.parse(BEFORE)
    t = Target("cuda")
    assert dl.gpu.Matmul().apply(mod["matmul"], t) is None  # too small to tile
    assert dl.gpu.GEMV().apply(mod["matmul"], t) is None  # contiguous along j, not k
    assert dl.gpu.Reduction().apply(mod["matmul"], t) is not None
    assert dl.gpu.Reduction().apply(mod["transpose"], t) is None
    assert dl.gpu.Fallback().apply(mod["transpose"], t) is not None


class _MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(256, 10, bias=False)

    def forward(self, x):
        return self.fc2(self.relu1(self.fc1(x)))


def test_seed003_module_scheduled_and_runs_in_the_interpreter():
    model = _MLP()
    model.init_random(0)
    mod, params = model.export_ir({"forward": {"x": nn.spec.Tensor((1, 784), "float32")}})
    with Target("cuda"):
        zero = passes.get_pipeline("zero")(mod)
        seq = passes.Sequential([passes.get_pipeline("zero"),
                                 dl.ApplyDefaultSchedule(*SEED_RULES)])
        scheduled = seq(mod)
    prims = {gv.name_hint: f for gv, f in scheduled.functions.items()
             if isinstance(f, PrimFunc)}
    assert prims and all(f.attrs.get("tir.is_scheduled") for f in prims.values())
    for name, f in prims.items():
        assert "thread_binding" in f.script(), name
        assert_same_as_unscheduled(zero[name], f, gpu=True, rtol=1e-4, atol=1e-4)
    # The graph function is untouched.
    assert_structural_equal(scheduled["forward"], zero["forward"])


def test_seed003_mlp_still_runs_on_cpu_unscheduled_by_gpu_rules():
    # GPU rules leave llvm modules alone (they are skipped for other targets).
    model = _MLP()
    model.init_random(0)
    mod, params = model.export_ir({"forward": {"x": nn.spec.Tensor((1, 784), "float32")}})
    with Target("llvm"):
        out = passes.Sequential([passes.get_pipeline("zero"),
                                 dl.ApplyDefaultSchedule(*SEED_RULES)])(mod)
    assert not any(f.attrs.get("tir.is_scheduled") for f in out.functions.values()
                   if isinstance(f, PrimFunc))
    x = np.random.default_rng(0).random((1, 784), dtype=np.float32)
    w = [p.numpy() for _, p in params]
    vm = irc.vm.VirtualMachine(irc.compile(out, "llvm", pipeline=None))
    np.testing.assert_allclose(vm["forward"](x, *w).numpy(),
                               np.maximum(x @ w[0].T + w[1], 0) @ w[2].T, rtol=1e-4,
                               atol=1e-5)

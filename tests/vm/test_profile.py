"""``vm.profile``: per-kernel times of a VM function."""

import json

import numpy as np
import pytest

import irc
from irc.vm.profiler import ProfileReport

MLP = '''
@I.ir_module
class Module:
    @R.function
    def layer(x: R.Tensor((4, 16), dtype="float32"), w: R.Tensor((16, 16), dtype="float32")
              ) -> R.Tensor((4, 16), dtype="float32"):
        with R.dataflow():
            y = R.nn.relu(R.matmul(x, w))
            R.output(y)
        return y

    @R.function
    def main(x: R.Tensor((4, 16), dtype="float32"), w: R.Tensor((16, 16), dtype="float32")
             ) -> R.Tensor((4, 16), dtype="float32"):
        cls = Module
        a = cls.layer(x, w)
        b = cls.layer(a, w)
        c = R.add(a, b)
        return c
'''


@pytest.fixture(scope="module")
def vm():
    return irc.vm.VirtualMachine(irc.compile(irc.parse(MLP), "llvm"))


def _args():
    rng = np.random.default_rng(0)
    return rng.standard_normal((4, 16)).astype("float32"), \
        rng.standard_normal((16, 16)).astype("float32")


def test_profile_counts_every_kernel_call_including_called_functions(vm):
    report = vm.profile("main", *_args(), repeat=3, warmup=1)
    assert isinstance(report, ProfileReport)
    assert report.function == "main" and report.runs == 3 and len(report.run_seconds) == 3
    calls = {k.name: k.calls for k in report.kernels}
    # The layer's fused matmul+relu runs twice per call of main (through `layer`), the
    # add once; three runs.
    matmul = [n for n in calls if "matmul" in n]
    assert len(matmul) == 1 and calls[matmul[0]] == 6
    add = [n for n in calls if n.startswith("add")]
    assert len(add) == 1 and calls[add[0]] == 3
    assert all(k.kind == "kernel" and k.seconds > 0 for k in report.kernels)
    # Largest first; kernel time and the VM's own time add up to the runs' time.
    secs = [k.seconds for k in report.kernels]
    assert secs == sorted(secs, reverse=True)
    assert report.kernel_seconds <= report.total_seconds
    assert report.vm_seconds == pytest.approx(report.total_seconds - report.kernel_seconds)


def test_profile_table_and_plain_data(vm):
    report = vm.profile("main", *_args(), repeat=2)
    text = str(report)
    assert "profile of 'main': 2 run(s)" in text
    assert "VM (checks, allocations, dispatch)" in text and text.splitlines()[-1].startswith(
        "total")
    for k in report.kernels:
        assert k.name in text
    short = report.table(top=1)
    assert "(1 more kernels)" in short
    data = json.loads(json.dumps(report.as_dict()))
    assert data["function"] == "main" and data["runs"] == 2
    assert {k["name"] for k in data["kernels"]} == {k.name for k in report.kernels}


def test_profiled_runs_compute_the_same_and_leave_the_vm_as_it_was(vm):
    x, w = _args()
    want = vm["main"](x, w).numpy()
    vm.profile("main", x, w, repeat=1, warmup=0)
    assert vm._profiled == {}
    a = np.maximum(x @ w, 0)
    np.testing.assert_allclose(want, a + np.maximum(a @ w, 0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(vm["main"](x, w).numpy(), want, rtol=0, atol=0)


def test_profile_checks_its_arguments(vm):
    with pytest.raises(irc.IRCError, match="repeat must be at least 1"):
        vm.profile("main", *_args(), repeat=0)
    with pytest.raises(irc.IRCError, match="no function 'nope'"):
        vm.profile("nope", *_args())
    with pytest.raises(irc.IRCError, match="takes 2 arguments"):
        vm.profile("main", _args()[0])


def test_profile_reports_each_kernels_gflops(vm, tmp_path):
    # Floating-point operations per call, counted on the loops before scheduling: the
    # fused matmul + ReLU does 2 * 4 * 16 * 16 multiply-adds' worth plus a max per
    # output element, the add one per element.
    flops = vm.exe.kernel_flops
    matmul = next(n for n in flops if "matmul" in n)
    add = next(n for n in flops if n.startswith("add"))
    assert flops[matmul] == 2 * 4 * 16 * 16 + 4 * 16 and flops[add] == 4 * 16
    report = vm.profile("main", *_args(), repeat=2)
    for k in report.kernels:
        assert k.flops == flops[k.name]
        assert k.gflops == pytest.approx(k.flops * k.calls / k.seconds / 1e9)
    assert "GFLOPS" in str(report)
    assert all(k["flops"] == flops[k["name"]] for k in report.as_dict()["kernels"])
    # Saved executables keep the counts.
    path = str(tmp_path / "mlp.irc")
    vm.exe.save(path)
    assert irc.vm.Executable.load(path).kernel_flops == flops


def test_a_partial_tiles_kernel_counts_only_the_iterations_its_predicate_keeps():
    # 7 rows take a register tile of 4 and a partial one of 3: the scheduled loops run
    # 8 rows' worth of iterations, of which the predicate (T.where) keeps 7; the count
    # takes only those, as on the loops before scheduling.
    from irc.tir.analysis.flops import flop_count

    mod = irc.parse('''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((7, 64), dtype="float32"), w: R.Tensor((64, 512), dtype="float32")
             ) -> R.Tensor((7, 512), dtype="float32"):
        with R.dataflow():
            y = R.matmul(x, w)
            R.output(y)
        return y
''')
    with irc.target.Target("llvm -num-cores 2 -vector-width 256 -vector-registers 16"):
        scheduled = irc.passes.get_pipeline("default")(mod)
    (name, func), = [(gv.name_hint, f) for gv, f in scheduled.functions.items()
                     if isinstance(f, irc.tir.PrimFunc)]
    assert "T.where" in func.script()
    assert flop_count(func) == 2.0 * 7 * 64 * 512
    ex = irc.compile(mod, "llvm -num-cores 2 -vector-width 256 -vector-registers 16")
    assert ex.kernel_flops == {name: 2.0 * 7 * 64 * 512}

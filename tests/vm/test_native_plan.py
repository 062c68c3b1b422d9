"""The VM's native run plan: static straight-line functions run as one native call, with
the same results and errors as the instruction-by-instruction path."""

import sys

import numpy as np
import pytest

import irc
from irc.core.settings import Settings
from irc.runtime.ndarray import aligned_empty
from irc.vm.native_plan import plans_enabled

CHAIN = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32"), w: R.Tensor((8, 8), dtype="float32")):
        with R.dataflow():
            a = R.matmul(x, w)
            b = R.nn.relu(a)
            c = R.add(b, R.const(1.0, "float32"))
            d = R.multiply(c, x)
            R.output(c, d)
        return (d, (c, x))
'''

CHECKED = '''
@I.ir_module
class Module:
    @T.prim_func
    def positive(a: T.Buffer((4,), "int32"), b: T.Buffer((4,), "int32")):
        with T.Assert(a[0] > 0, "the first entry must be positive"):
            for i in range(4):
                b[i] = a[i] * 2

    @R.function
    def main(x: R.Tensor((4,), dtype="int32")):
        cls = Module
        y = R.call_tir(cls.positive, (x,), out_sinfo=R.Tensor((4,), dtype="int32"))
        z = R.call_tir(cls.positive, (y,), out_sinfo=R.Tensor((4,), dtype="int32"))
        return z
'''

SYMBOLIC = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 8), dtype="float32")):
        with R.dataflow():
            y = R.add(x, x)
            z = R.nn.relu(y)
            R.output(z)
        return z
'''


def _vms(text, monkeypatch=None):
    ex = irc.compile(irc.parse(text), "llvm")
    planned = irc.vm.VirtualMachine(ex)
    with irc.settings(vm_native_plan=False):
        plain = irc.vm.VirtualMachine(ex)
        plain._function("main")  # prepared while plans are off
    return planned, plain


def test_static_function_runs_as_one_native_call(monkeypatch):
    planned, plain = _vms(CHAIN, monkeypatch)
    assert planned._function("main").plan is not None
    assert plain._function("main").plan is None
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype("float32")
    w = rng.standard_normal((8, 8)).astype("float32")
    got, want = planned["main"](x, w), plain["main"](x, w)
    # The nested result tuple, with a parameter returned as it came in.
    assert isinstance(got, tuple) and isinstance(got[1], tuple)
    np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
    np.testing.assert_array_equal(got[1][0].numpy(), want[1][0].numpy())
    np.testing.assert_array_equal(got[1][1].numpy(), x)
    c = np.maximum(x @ w, 0) + 1
    np.testing.assert_allclose(got[0].numpy(), c * x, rtol=1e-5, atol=1e-5)


def test_each_call_returns_fresh_outputs(monkeypatch):
    planned, _ = _vms(CHAIN, monkeypatch)
    x = np.ones((4, 8), "float32")
    w = np.eye(8, dtype="float32")
    first = planned["main"](x, w)
    first_d = first[0].numpy().copy()
    planned["main"](3 * x, w)
    np.testing.assert_array_equal(first[0].numpy(), first_d)


def test_arguments_are_still_checked(monkeypatch):
    planned, _ = _vms(CHAIN, monkeypatch)
    with pytest.raises(irc.RuntimeShapeError, match="expects R.Tensor"):
        planned["main"](np.ones((4, 9), "float32"), np.ones((8, 8), "float32"))
    with pytest.raises(irc.RuntimeDTypeError, match="expects R.Tensor"):
        planned["main"](np.ones((4, 8), "float64"), np.ones((8, 8), "float32"))
    # Unaligned and strided inputs are copied before the native call.
    big = np.ones((8, 16), "float32")
    out = planned["main"](big[::2, 1:9], np.eye(8, dtype="float32"))
    np.testing.assert_array_equal(out[1][0].numpy(), np.full((4, 8), 2, "float32"))


def test_kernel_failure_names_the_kernel(monkeypatch):
    planned, plain = _vms(CHECKED, monkeypatch)
    assert planned._function("main").plan is not None
    x = np.array([1, 2, 3, 4], "int32")
    np.testing.assert_array_equal(planned["main"](x).numpy(), 4 * x)
    for vm in (planned, plain):
        with pytest.raises(irc.runtime.KernelAssertionError,
                           match="positive: the first entry must be positive"):
            vm["main"](-x)


def test_symbolic_shapes_keep_the_instruction_path():
    ex = irc.compile(irc.parse(SYMBOLIC), "llvm")
    vm = irc.vm.VirtualMachine(ex)
    x = np.arange(24, dtype="float32").reshape(3, 8) - 10
    np.testing.assert_array_equal(vm["main"](x).numpy(), np.maximum(2 * x, 0))
    assert vm._function("main").plan is None


def test_profiling_times_each_kernel():
    ex = irc.compile(irc.parse(CHAIN), "llvm")
    vm = irc.vm.VirtualMachine(ex)
    x, w = np.ones((4, 8), "float32"), np.ones((8, 8), "float32")
    vm["main"](x, w)
    report = vm.profile("main", x, w, repeat=2)
    assert len(report.kernels) >= 2
    assert all(k.calls == 2 for k in report.kernels)


@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="timed plans read Linux's CLOCK_MONOTONIC")
def test_profiling_a_planned_function_runs_its_timed_plan(monkeypatch):
    planned, plain = _vms(CHAIN, monkeypatch)
    prepared = planned._function("main")
    timed = prepared.timed_plan()
    assert timed is not None and timed is prepared.timed_plan()  # made once
    assert [k.name for k in timed.kernels] == [k.name for k in prepared.plan.kernels]
    # One clock reading before the first kernel and one after each: non-decreasing.
    rng = np.random.default_rng(1)
    x, w = aligned_empty((4, 8), np.float32), aligned_empty((8, 8), np.float32)
    x[:] = rng.standard_normal((4, 8))
    w[:] = rng.standard_normal((8, 8))
    got = prepared.invoke([x, w], plan=timed)  # the VM's callers align its arguments
    assert len(timed.stamps) == len(timed.kernels) + 1
    assert timed.stamps[0] > 0 and np.all(np.diff(timed.stamps) >= 0)
    np.testing.assert_array_equal(got[0], plain["main"](x, w)[0].numpy())
    # The profile counts each kernel once per run, as the instruction path does, and
    # leaves no profiled copy of the function behind.
    report, old = planned.profile("main", x, w, repeat=3), plain.profile("main", x, w, repeat=3)
    assert {k.name: k.calls for k in report.kernels} == {k.name: k.calls for k in old.kernels}
    assert all(k.calls == 3 and k.seconds >= 0 for k in report.kernels)
    assert report.kernel_seconds <= report.total_seconds
    assert planned._profiled == {}


@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="timed plans read Linux's CLOCK_MONOTONIC")
def test_a_kernel_failing_in_a_profile_is_named(monkeypatch):
    planned, _ = _vms(CHECKED, monkeypatch)
    assert planned._function("main").timed_plan() is not None
    with pytest.raises(irc.runtime.KernelAssertionError,
                       match="positive: the first entry must be positive"):
        planned.profile("main", np.array([-1, 2, 3, 4], "int32"), repeat=1, warmup=0)


def test_functions_without_a_plan_have_no_timed_plan(monkeypatch):
    _, plain = _vms(CHAIN, monkeypatch)
    assert plain._function("main").timed_plan() is None
    vm = irc.vm.VirtualMachine(irc.compile(irc.parse(SYMBOLIC), "llvm"))
    assert vm._function("main").timed_plan() is None
    report = vm.profile("main", np.ones((3, 8), "float32"), repeat=2)
    assert all(k.calls == 2 for k in report.kernels)


def test_settings_switch():
    assert plans_enabled()
    with irc.settings(vm_native_plan=False):
        assert not plans_enabled()
    assert Settings.from_environment({"IRC_VM_NATIVE_PLAN": "0"}).vm_native_plan is False

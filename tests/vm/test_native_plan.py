"""The VM's native run plan: static straight-line functions run as one native call, with
the same results and errors as the instruction-by-instruction path."""

import numpy as np
import pytest

import irc
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


def _vms(text, monkeypatch):
    ex = irc.compile(irc.parse(text), "llvm")
    planned = irc.vm.VirtualMachine(ex)
    monkeypatch.setenv("IRC_VM_NATIVE_PLAN", "0")
    plain = irc.vm.VirtualMachine(ex)
    plain._function("main")  # prepared while plans are off
    monkeypatch.delenv("IRC_VM_NATIVE_PLAN")
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
    with pytest.raises(irc.RuntimeShapeError, match="expects R.Tensor"):
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


def test_environment_switch(monkeypatch):
    assert plans_enabled()
    monkeypatch.setenv("IRC_VM_NATIVE_PLAN", "0")
    assert not plans_enabled()

"""The VM's stateful calls, as TVM's relax VirtualMachine has them: ``set_input``
(positional and by parameter name), ``invoke_stateful``, ``get_outputs``, and timing
with ``vm.time_evaluator("invoke_stateful", dev)(name)``."""

import numpy as np
import pytest

import irc

MODULE = """from irc.script import ir as I
from irc.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), w: R.Tensor((3, 4), "float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            z = R.nn.relu(y)
            R.output(y, z)
        return (z, y)

    @R.function
    def double(x: R.Tensor(("n",), "float32")):
        y = R.add(x, x)
        return y

    @R.function
    def seven():
        c = R.const(7.0, "float32")
        return c
"""


@pytest.fixture(scope="module")
def executable():
    return irc.compile(irc.parse(MODULE), "llvm")


@pytest.fixture()
def vm(executable):
    return irc.vm.VirtualMachine(executable, irc.cpu())


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((2, 3)).astype("float32"),
            rng.standard_normal((3, 4)).astype("float32"))


def test_set_input_invoke_stateful_get_outputs(vm):
    x, w = _inputs()
    assert vm.set_input("main", x, w) is None
    assert vm.invoke_stateful("main") is None
    z, y = vm.get_outputs("main")
    np.testing.assert_allclose(y.numpy(), x @ w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(z.numpy(), np.maximum(x @ w, 0), rtol=1e-5, atol=1e-6)
    # the same as calling the function
    direct = vm["main"](x, w)
    np.testing.assert_array_equal(direct[0].numpy(), z.numpy())
    # a single tensor result comes back as a tensor; symbolic shapes are bound per call
    vm.set_input("double", np.arange(5, dtype="float32"))
    vm.invoke_stateful("double")
    out = vm.get_outputs("double")
    assert isinstance(out, irc.runtime.Tensor)
    np.testing.assert_array_equal(out.numpy(), 2 * np.arange(5, dtype="float32"))
    vm.set_input("seven")
    vm.invoke_stateful("seven")
    assert float(vm.get_outputs("seven").numpy()) == 7.0


def test_set_input_by_name_and_mixed(vm):
    x, w = _inputs(1)
    vm.set_input("main", w=w, x=irc.tensor(x))
    vm.invoke_stateful("main")
    np.testing.assert_allclose(vm.get_outputs("main")[1].numpy(), x @ w, rtol=1e-5, atol=1e-6)
    # positional values fill the parameters not named, in order
    x2, w2 = _inputs(2)
    vm.set_input("main", w2, x=x2)
    vm.invoke_stateful("main")
    np.testing.assert_allclose(vm.get_outputs("main")[1].numpy(), x2 @ w2, rtol=1e-5,
                               atol=1e-6)


def test_outputs_stay_until_the_next_stateful_call(vm):
    x, w = _inputs(3)
    vm.set_input("main", x, w)
    vm.invoke_stateful("main")
    first = vm.get_outputs("main")[1].numpy().copy()
    vm.set_input("main", x * 2, w)  # new inputs; the saved output is the last call's
    np.testing.assert_array_equal(vm.get_outputs("main")[1].numpy(), first)
    vm.invoke_stateful("main")
    np.testing.assert_allclose(vm.get_outputs("main")[1].numpy(), 2 * first, rtol=1e-5,
                               atol=1e-6)


def test_stateful_errors_say_what_to_do(vm):
    x, w = _inputs()
    with pytest.raises(irc.VMError, match=r"invoke_stateful\('main'\): no inputs are set") \
            as e:
        vm.invoke_stateful("main")
    assert "vm.set_input('main', ...)" in str(e.value)
    with pytest.raises(irc.VMError, match=r"get_outputs\('main'\): no output is saved") as e:
        vm.get_outputs("main")
    assert "vm.invoke_stateful('main')" in str(e.value)
    vm.set_input("main", x, w)
    with pytest.raises(irc.VMError, match="no output is saved"):
        vm.get_outputs("main")
    for call in (lambda: vm.set_input("nope", x), lambda: vm.invoke_stateful("nope"),
                 lambda: vm.get_outputs("nope")):
        with pytest.raises(irc.VMError, match="the executable has no function 'nope'"):
            call()
    with pytest.raises(irc.RuntimeArgumentCountError,
                       match=r"main takes 2 arguments \(x, w\), got 1"):
        vm.set_input("main", x)
    with pytest.raises(irc.RuntimeArgumentCountError, match="got 3"):
        vm.set_input("main", x, w, x)
    with pytest.raises(irc.RuntimeArgumentCountError, match=r"got 3 \(1 by name\)"):
        vm.set_input("main", x, w, x=x)
    with pytest.raises(irc.RuntimeArgumentError,
                       match="main has no parameter 'weight'; its parameters are x, w"):
        vm.set_input("main", x, weight=w)
    # the values are checked when they are set
    with pytest.raises(irc.RuntimeShapeError, match="parameter x"):
        vm.set_input("main", w, x)
    with pytest.raises(irc.RuntimeArgumentError, match="parameter w .* float64"):
        vm.set_input("main", x, w.astype("float64"))
    # a failed set_input leaves the inputs set before
    vm.invoke_stateful("main")
    np.testing.assert_allclose(vm.get_outputs("main")[1].numpy(), x @ w, rtol=1e-5, atol=1e-6)


def test_time_evaluator_of_invoke_stateful(vm):
    x, w = _inputs()
    vm.set_input("main", x, w)
    timer = vm.time_evaluator("invoke_stateful", irc.cpu(), repeat=3, min_repeat_ms=5)
    result = timer("main")
    assert len(result.results) == 3 and all(t > 0 for t in result.results)
    assert timer.calls >= 4  # the warm-up, then at least one run per repeat
    np.testing.assert_allclose(vm.get_outputs("main")[1].numpy(), x @ w, rtol=1e-5, atol=1e-6)
    with pytest.raises(irc.RuntimeArgumentCountError, match="call the timer with that "
                                                            "function's name"):
        timer()
    fresh = irc.vm.VirtualMachine(vm.exe)
    with pytest.raises(irc.VMError, match="no inputs are set"):
        fresh.time_evaluator("invoke_stateful", irc.cpu())("main")
    # the plain form still times a function called with its arguments
    plain = vm.time_evaluator("main", irc.cpu(), number=2, repeat=2)(x, w)
    assert len(plain.results) == 2

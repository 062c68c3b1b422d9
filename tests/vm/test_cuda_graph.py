"""CUDA graphs in the VM (irc.vm.cuda_graph).

Without a GPU: which functions are captured and why the others are not (decided from
the bytecode of executables compiled for ``cuda``, NVRTC needs no GPU); which kernel
parameters the CUDA host plans record as written; the graph runner's decisions (staging
parameters whose address changes, capturing again when an in-place one moves, copying
results out, giving up) with the capture simulated on the CPU. With a GPU (tests marked
``cuda``): results with graphs equal those without, over calls with new inputs, moved
weights, several symbolic bindings, in-place writes and cuBLAS calls.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

import irc
from irc import passes
from irc.dispatch import get_patterns_with_prefix
from irc.runtime import cuda_backend
from irc.runtime.ndarray import Tensor
from irc.vm import cuda_graph
from irc.vm.bytecode import ValueCheck, VMFunction
from irc.vm.cuda_graph import GraphRunner, capture_plan

pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVIDIA's cuda-bindings (irc[cuda])")

STATIC = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32"), w: R.Tensor((8, 8), dtype="float32")):
        with R.dataflow():
            p = R.sigmoid(R.matmul(x, w))
            q = R.multiply(p, R.const(2.0, "float32"))
            R.output(q)
        return (q, x)
'''

SYMBOLIC = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 8), dtype="float32"), s: R.Tensor((8,), dtype="float32")):
        with R.dataflow():
            z = R.nn.relu(R.multiply(x, s))
            R.output(z)
        return z
'''

BRANCH = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32"), n: R.Tensor((), dtype="int64")):
        if R.greater(n, R.const(0, "int64")):
            out = R.add(x, x)
        else:
            out = R.multiply(x, x)
        return out
'''

CALLS = '''
@I.ir_module
class Module:
    @R.function
    def double(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        y = R.add(x, x)
        return y

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")):
        cls = Module
        y = cls.double(x)
        z = R.nn.relu(y)
        return z
'''

PACKED = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")):
        y = R.call_dps_packed("my_runtime_function", (x,),
                              out_sinfo=R.Tensor((4,), dtype="float32"))
        z = R.nn.relu(y)
        return z
'''

DENSE = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((8, 64), dtype="float32"), w: R.Tensor((64, 32), dtype="float32"),
             b: R.Tensor((32,), dtype="float32")):
        with R.dataflow():
            y = R.nn.relu(R.add(R.matmul(x, w), b))
            R.output(y)
        return y
'''

INPLACE = '''
@I.ir_module
class Module:
    @T.prim_func
    def bump(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
        for i in T.thread_binding(4, thread="threadIdx.x"):
            a[i] = a[i] + T.float32(1)
            b[i] = T.max(a[i], T.float32(0))

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")):
        cls = Module
        y = R.call_tir(cls.bump, (x,), out_sinfo=R.Tensor((4,), dtype="float32"))
        return y
'''


def _cuda(text):
    return irc.compile(irc.parse(text), target="cuda")


def test_static_and_symbolic_functions_are_captured():
    ex = _cuda(STATIC)
    plan = capture_plan(ex, "main")
    assert plan.captured and not plan.per_binding
    kernels = sum(ins[0] == "kernel" for ins in ex.functions["main"].code)
    assert plan.launches == kernels >= 1
    assert "captured" in str(plan)
    sym = capture_plan(_cuda(SYMBOLIC), "main")
    assert sym.captured and sym.per_binding
    assert "one graph per binding" in str(sym)


@pytest.mark.parametrize("text,reason", [
    (BRANCH, "control flow"), (CALLS, "a call of VM function double"),
    (PACKED, "runtime function my_runtime_function is not known to be safe")])
def test_functions_that_cannot_be_replayed_say_why(text, reason):
    plan = capture_plan(_cuda(text), "main")
    assert not plan.captured
    assert reason in plan.reason
    assert "not captured" in str(plan)


def _cublas_executable():
    mod = irc.parse(DENSE)
    mod = passes.FuseOpsByPattern(get_patterns_with_prefix("cublas"),
                                  annotate_codegen=True)(mod)
    return irc.compile(passes.RunCodegen()(mod), target="cuda")


def test_cublas_calls_are_captured():
    ex = _cublas_executable()
    assert any(ins[0] == "packed" for ins in ex.functions["main"].code)
    assert capture_plan(ex, "main").captured


def test_unknown_function_is_an_error():
    with pytest.raises(irc.IRCError, match="no function 'nope'"):
        capture_plan(_cuda(STATIC), "nope")


def test_host_plans_record_which_tensors_a_kernel_writes():
    ex = _cuda(INPLACE)
    writes = {name: ex.lib.get_function(name).argument_writes
              for name in ex.lib.function_names}
    assert writes == {"bump": [True, True]}
    static = _cuda(STATIC)
    (kernel,) = [ins[1] for ins in static.functions["main"].code if ins[0] == "kernel"]
    assert static.lib.get_function(kernel).argument_writes == [False, False, True]
    # Saved modules carry it.
    again = type(ex.lib).deserialize(ex.lib.serialize())
    assert again.get_function("bump").argument_writes == [True, True]


# -- the runner's decisions, with the capture simulated on the CPU -------------------------

class _Stream:
    """What a capture records: the kernels 'queued' while it runs."""

    recording: list | None = None


def _fake_capture(index, run):
    _Stream.recording = recorded = []
    try:
        result = run()
    finally:
        _Stream.recording = None

    class _Graph:
        nodes = len(recorded)

        @staticmethod
        def launch():
            for k in recorded:
                k()
    return _Graph(), result


def _tensor(array):
    return Tensor(array=np.ascontiguousarray(array, dtype="float32"), dtype="float32",
                  device=irc.cpu())


def _launch(kernel):
    if _Stream.recording is not None:
        _Stream.recording.append(kernel)
    else:
        kernel()


def _eager_axpy(calls):
    """A VM function (x, w) -> (x * w + 1, x) whose kernel queues like a GPU's."""
    def eager(values, heap):
        calls.append([v.data_ptr for v in values])
        x, w = values
        out = _tensor(np.empty(x.shape))

        def kernel():
            out._array[...] = x._array * w._array + 1
        _launch(kernel)
        return (out, x)
    return eager


@pytest.fixture
def simulated(monkeypatch):
    monkeypatch.setattr(cuda_backend, "capture", _fake_capture)
    monkeypatch.setattr(cuda_graph, "device_empty",
                        lambda shape, dtype, device: _tensor(np.empty(shape)))
    monkeypatch.setattr(cuda_graph, "_copy", lambda dst, src: np.copyto(dst._array,
                                                                         src._array))


def _runner(written=frozenset()):
    fn = VMFunction(name="main", params=["x", "w"], num_regs=2, code=[],
                    param_checks=[ValueCheck("tensor", "float32", 1, [4])] * 2, checks=[],
                    allocs=[], exprs=[], slot_names=[], storage_sizes=[])
    return GraphRunner(fn, irc.cpu(), [], written)


@pytest.mark.usefixtures("simulated")
def test_runner_stages_new_inputs_and_reads_stable_weights_in_place():
    runner, calls = _runner(), []
    eager = _eager_axpy(calls)
    w = _tensor([1, 2, 3, 4])
    results = []
    for k in range(5):
        x = _tensor(np.arange(4) + 10 * k)
        out, same = runner.run([x, w], [], eager)
        assert same is x  # a returned parameter is the caller's tensor
        results.append((out, x._array * w._array + 1))
    for out, want in results:  # each result is its own copy, still valid
        np.testing.assert_array_equal(out._array, want)
    stats = runner.stats()
    # One eager call, one capture (replayed at once), then replays only.
    assert len(calls) == 2 and stats["captures"] == 1 and stats["replays"] == 4
    assert calls[1][1] == w.data_ptr and calls[1][0] != calls[0][0]  # x staged, w in place


@pytest.mark.usefixtures("simulated")
def test_runner_captures_again_when_a_weight_moves_then_gives_up(caplog):
    runner, calls = _runner(), []
    eager = _eager_axpy(calls)
    x = _tensor([1, 1, 1, 1])
    w = _tensor([1, 2, 3, 4])
    runner.run([x, w], [], eager)
    runner.run([x, w], [], eager)  # both in place
    assert runner.stats()["captures"] == 1
    w2 = _tensor([5, 6, 7, 8])
    out, _ = runner.run([x, w2], [], eager)
    np.testing.assert_array_equal(out._array, x._array * w2._array + 1)
    assert runner.stats()["captures"] == 2  # now w is staged: it moves freely
    for k in range(cuda_graph.MAX_RECAPTURES + 3):
        w3 = _tensor(np.arange(4) + k)
        out, _ = runner.run([x, w3], [], eager)
        np.testing.assert_array_equal(out._array, x._array * w3._array + 1)
    assert runner.stats()["captures"] == 2
    # x, in place so far, moves on every call: captured again up to the limit, then the
    # binding runs eagerly for good, with the reason logged.
    with caplog.at_level(logging.WARNING, logger="irc.vm.cuda_graph"):
        for k in range(cuda_graph.MAX_RECAPTURES + 2):
            xk = _tensor(np.arange(4) - k)
            out, _ = runner.run([xk, w], [], eager)
            np.testing.assert_array_equal(out._array, xk._array * w._array + 1)
    # The first move of x stages it; x staged, nothing in place moves any more.
    assert runner.stats()["captures"] == 3 and not runner.stats()["eager"]


@pytest.mark.usefixtures("simulated")
def test_runner_never_stages_a_written_parameter(caplog):
    runner, calls = _runner(written=frozenset({0})), []
    eager = _eager_axpy(calls)
    w = _tensor([1, 2, 3, 4])
    with caplog.at_level(logging.WARNING, logger="irc.vm.cuda_graph"):
        for k in range(cuda_graph.MAX_RECAPTURES + 4):
            x = _tensor(np.arange(4) + k)
            seen = len(calls)
            out, _ = runner.run([x, w], [], eager)
            np.testing.assert_array_equal(out._array, x._array * w._array + 1)
            # Each capture (and eager run) read x in place, never a staged copy.
            assert len(calls) == seen + 1 and calls[-1][0] == x.data_ptr
    stats = runner.stats()
    assert stats["eager"] and "changed address" in stats["eager"][0]
    assert "runs without a CUDA graph" in caplog.text


@pytest.mark.usefixtures("simulated")
def test_runner_keeps_one_graph_per_binding():
    runner, calls = _runner(), []
    eager = _eager_axpy(calls)
    w = _tensor([1, 2, 3, 4])
    x = _tensor([1, 1, 1, 1])
    for n in range(cuda_graph.MAX_GRAPHS + 2):
        for _ in range(2):
            runner.run([x, w], [n], eager)
    assert runner.stats()["graphs"] == cuda_graph.MAX_GRAPHS


@pytest.mark.usefixtures("simulated")
def test_a_failed_capture_runs_eagerly_with_the_reason(monkeypatch, caplog):
    def failing(index, run):
        raise cuda_backend.CUDAError("CUDA call cuStreamEndCapture failed")
    monkeypatch.setattr(cuda_backend, "capture", failing)
    runner, calls = _runner(), []
    eager = _eager_axpy(calls)
    x, w = _tensor([1, 2, 3, 4]), _tensor([2, 2, 2, 2])
    with caplog.at_level(logging.WARNING, logger="irc.vm.cuda_graph"):
        for _ in range(3):
            out, _ = runner.run([x, w], [], eager)
            np.testing.assert_array_equal(out._array, x._array * 2 + 1)
    assert len(calls) == 3
    assert "capture failed" in runner.stats()["eager"][0]
    assert "cuStreamEndCapture" in caplog.text


# -- on a GPU -------------------------------------------------------------------------------

def _vms(ex):
    dev = irc.cuda(0)
    return (irc.vm.VirtualMachine(ex, dev),
            irc.vm.VirtualMachine(ex, dev, cuda_graphs=False))


@pytest.mark.cuda
def test_graphs_match_eager_runs_over_new_inputs_and_moved_weights():
    graphs, plain = _vms(_cuda(STATIC))
    dev = irc.cuda(0)
    rng = np.random.default_rng(0)
    w = irc.tensor(rng.standard_normal((8, 8)).astype("float32"), dev)
    kept = []
    for k in range(6):
        x = irc.tensor(rng.standard_normal((4, 8)).astype("float32"), dev)
        if k == 4:
            w = irc.tensor(rng.standard_normal((8, 8)).astype("float32"), dev)
        got, want = graphs["main"](x, w), plain["main"](x, w)
        assert got[1] is x or np.array_equal(got[1].numpy(), x.numpy())
        np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
        kept.append((got[0], want[0].numpy()))
    for got, want in kept:  # earlier results are not overwritten by later replays
        np.testing.assert_array_equal(got.numpy(), want)
    stats = graphs.cuda_graph_stats("main")
    assert stats["plan"].captured and stats["replays"] >= 4 and stats["captures"] >= 2
    assert "replays" not in plain.cuda_graph_stats("main")


@pytest.mark.cuda
def test_graphs_per_symbolic_binding():
    graphs, plain = _vms(_cuda(SYMBOLIC))
    dev = irc.cuda(0)
    rng = np.random.default_rng(1)
    s = irc.tensor(rng.standard_normal(8).astype("float32"), dev)
    for n in (3, 5, 3, 5, 7, 3):
        x = irc.tensor(rng.standard_normal((n, 8)).astype("float32"), dev)
        np.testing.assert_array_equal(graphs["main"](x, s).numpy(),
                                      plain["main"](x, s).numpy())
    assert graphs.cuda_graph_stats("main")["graphs"] == 2


@pytest.mark.cuda
def test_in_place_writes_reach_the_callers_tensor():
    graphs, _ = _vms(_cuda(INPLACE))
    dev = irc.cuda(0)
    for k in range(4):
        host = np.arange(4, dtype="float32") - 2 + k
        x = irc.tensor(host, dev)
        y = graphs["main"](x)
        np.testing.assert_array_equal(x.numpy(), host + 1)
        np.testing.assert_array_equal(y.numpy(), np.maximum(host + 1, 0))


@pytest.mark.cuda
def test_cublas_calls_replay_in_a_graph():
    graphs, plain = _vms(_cublas_executable())
    dev = irc.cuda(0)
    rng = np.random.default_rng(2)
    for _ in range(4):
        args = [irc.tensor(rng.standard_normal(s).astype("float32"), dev)
                for s in ((8, 64), (64, 32), (32,))]
        np.testing.assert_allclose(graphs["main"](*args).numpy(),
                                   plain["main"](*args).numpy(), rtol=1e-5, atol=1e-5)
    assert graphs.cuda_graph_stats("main")["replays"] >= 2

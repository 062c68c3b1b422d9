"""Every operator that indexes with run-time values checks them: an index outside
``[-extent, extent)`` (negative ones counted from the end once, as ONNX and numpy define
it) fails the run with an irc error naming the operator, the binding, the index and the
extent, where reading another element would be a silently wrong answer. The same holds
for the run-time lengths, batch indices and ``k`` of ReverseSequence, RoiAlign and TopK,
and for ``nn.Embedding``."""

import numpy as np
import pytest

import irc
from irc.runtime.module import KernelAssertionError
from irc.tir import interpreter
from irc.tir import intrin as T_intrin

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from irc.frontend.onnx import from_onnx  # noqa: E402


def _compile(nodes, inputs, target="llvm", opset=17):
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return irc.compile(from_onnx(model), target=target)


def _run(nodes, inputs, **kw):
    vm = irc.vm.VirtualMachine(_compile(nodes, inputs, **kw))
    out = vm["main"](*[irc.tensor(a) for a in inputs.values()])
    return (out[0] if isinstance(out, (list, tuple)) else out).numpy()


TABLE = np.arange(6, dtype="float32").reshape(3, 2)
GATHER = [helper.make_node("Gather", ["x", "i"], ["y"], axis=0)]


@pytest.mark.parametrize("index", [1000000, 3, -4, -(2 ** 62)])
def test_gather_index_out_of_range_fails_naming_operator_index_and_extent(index):
    with pytest.raises(KernelAssertionError) as err:
        _run(GATHER, {"x": TABLE, "i": np.array([0, index], "int64")})
    text = str(err.value)
    assert f"index {index} is out of range for axis 0 of extent 3" in text
    assert "take (binding y of main)" in text and "-3 to 2" in text


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_gather_negative_indices_count_from_the_end_once(dtype):
    got = _run(GATHER, {"x": TABLE, "i": np.array([-1, -3, 2, 0], dtype)})
    np.testing.assert_array_equal(got, TABLE[[2, 0, 2, 0]])


CASES = {
    "GatherElements": ([helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)],
                       {"x": TABLE, "i": np.array([[0, 1], [5, 0], [1, 1]], "int64")},
                       "gather_elements", "index 5 is out of range for axis 1 of extent 2"),
    "GatherND": ([helper.make_node("GatherND", ["x", "i"], ["y"])],
                 {"x": TABLE, "i": np.array([[0, 1], [2, -3]], "int64")},
                 "gather_nd", "index -3 is out of range for axis 1 of extent 2"),
    "ScatterElements": ([helper.make_node("ScatterElements", ["x", "i", "u"], ["y"])],
                        {"x": TABLE, "i": np.array([[7, 0]], "int64"),
                         "u": np.ones((1, 2), "float32")},
                        "scatter_elements", "index 7 is out of range for axis 0 of extent 3"),
    "ScatterND": ([helper.make_node("ScatterND", ["x", "i", "u"], ["y"])],
                  {"x": TABLE, "i": np.array([[-4]], "int64"),
                   "u": np.ones((1, 2), "float32")},
                  "scatter_nd", "index -4 is out of range for axis 0 of extent 3"),
    "ReverseSequence": ([helper.make_node("ReverseSequence", ["x", "s"], ["y"],
                                          batch_axis=1, time_axis=0)],
                        {"x": np.ones((4, 2), "float32"), "s": np.array([9, 1], "int64")},
                        "reverse_sequence", "sequence length 9 is out of range [0, 4]"),
    "RoiAlign": ([helper.make_node("RoiAlign", ["x", "r", "b"], ["y"], output_height=2,
                                   output_width=2, sampling_ratio=2)],
                 {"x": np.ones((2, 1, 4, 4), "float32"),
                  "r": np.array([[0, 0, 2, 2]], "float32"), "b": np.array([2], "int64")},
                 "image.roi_align", "batch index 2 is out of range [0, 1]"),
    "TopK": ([helper.make_node("TopK", ["x", "k"], ["y", "idx"])],
             {"x": np.arange(4, dtype="float32"), "k": np.array([9], "int64")},
             "topk", "k 9 exceeds the size 4 of axis 0"),
    "MaxUnpool": ([helper.make_node("MaxUnpool", ["x", "i"], ["y"], kernel_shape=[2, 2],
                                    strides=[2, 2])],
                  {"x": np.ones((1, 1, 2, 2), "float32"),
                   "i": np.array([[[[0, 100], [2, 3]]]], "int64")},
                  "scatter_elements", "index 100 is out of range for axis 0 of extent 16"),
}


@pytest.mark.parametrize("op", sorted(CASES))
def test_every_indexing_operator_checks_its_run_time_values(op):
    nodes, inputs, name, message = CASES[op]
    with pytest.raises(KernelAssertionError) as err:
        _run(nodes, inputs)
    assert message in str(err.value)
    assert f"{name} (binding" in str(err.value)


def test_max_unpool_refuses_a_negative_index():
    with pytest.raises(KernelAssertionError, match="out of range"):
        _run(CASES["MaxUnpool"][0], {"x": np.ones((1, 1, 2, 2), "float32"),
                                     "i": np.array([[[[0, -1], [2, 3]]]], "int64")})


def test_in_range_values_still_compute_the_operator():
    x = np.arange(8, dtype="float32").reshape(4, 2)
    got = _run(CASES["ReverseSequence"][0], {"x": x, "s": np.array([4, 0], "int64")})
    np.testing.assert_array_equal(got, np.stack([x[::-1, 0], x[:, 1]], axis=1))
    got = _run(CASES["TopK"][0], {"x": np.array([3, 1, 4, 1], "float32"),
                                  "k": np.array([2], "int64")})
    np.testing.assert_array_equal(got, [4, 3])


def test_embedding_lookup_checks_its_indices():
    from irc.frontend import nn

    class Embed(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(5, 3)

        def forward(self, ids):
            return self.emb(ids)

    mod, params = Embed().export_ir({"forward": {"ids": nn.spec.Tensor((4,), "int64")}})
    vm = irc.vm.VirtualMachine(irc.compile(mod, target="llvm"))
    weight = np.arange(15, dtype="float32").reshape(5, 3)
    ok = vm["forward"](irc.tensor(np.array([0, 4, -1, 2])), irc.tensor(weight)).numpy()
    np.testing.assert_array_equal(ok, weight[[0, 4, 4, 2]])
    with pytest.raises(KernelAssertionError, match="index 5 is out of range"):
        vm["forward"](irc.tensor(np.array([0, 5, 1, 2])), irc.tensor(weight))


def test_gather_with_checks_compiles_for_cuda_and_runs_in_one_gpu_thread():
    ex = _compile(GATHER + [helper.make_node("ScatterElements", ["x", "j", "u"], ["z"])],
                  {"x": TABLE, "i": np.array([0, 2], "int64"),
                   "j": np.array([[1, 0]], "int64"), "u": np.ones((1, 2), "float32")},
                  target="cuda")
    assert "kernels" in repr(ex)


def test_serial_loop_kernels_lowered_for_the_gpu_compute_as_on_the_cpu():
    from irc.tir.topi import index as topi_index
    from irc.tir.transform import lower_primfunc_for_gpu

    data = topi_index.buffer((3, 2), "float32", "data")
    idx = topi_index.buffer((4,), "int64", "indices")
    out = topi_index.buffer((4,), "int64", "out")
    func = topi_index.loop_func([data, idx, out], topi_index.check_indices(
        data, idx, out, 0, "take"))
    low = lower_primfunc_for_gpu(func)
    assert '"thread_extent"' in low.script()
    result = np.zeros(4, "int64")
    interpreter.compile_func(low)(np.zeros((3, 2), "float32"), np.array([0, -1, 2, -3]),
                                  result)
    np.testing.assert_array_equal(result, [0, 2, 2, 0])
    with pytest.raises(irc.IRCError, match="index 3 is out of range for axis 0 of extent 3"):
        interpreter.compile_func(low)(np.zeros((3, 2), "float32"), np.array([0, 3, 0, 0]),
                                      result)


ERROR_VALUES = """
@T.prim_func
def main(A: T.Buffer((4,), "int64")):
    if A[0] != 0:
        T.error_values(A[1], A[0] * 2)
        assert A[0] == 0, "got {0} and {1}"
    A[3] = A[2]
"""


def test_error_values_fill_a_kernel_assertion_message():
    func = irc.parse(ERROR_VALUES)
    f = irc.build(func, "llvm")
    a = np.array([0, 1, 2, 3])
    f(a)
    assert a.tolist() == [0, 1, 2, 2]
    with pytest.raises(KernelAssertionError, match="main: got 7 and 6"):
        f(np.array([3, 7, 2, 3]))
    with pytest.raises(irc.IRCError, match="got 7 and 6"):
        interpreter.run(func, np.array([3, 7, 2, 3]))
    # A message without fields gets the values appended; no values leave it as it is.
    assert T_intrin.format_error_message("plain", [1, 2]) == "plain (values: 1, 2)"
    assert T_intrin.format_error_message("x {0}", []) == "x {0}"

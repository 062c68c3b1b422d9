"""Real models through the ONNX importer: each committed file of ``tests/data/onnx``
(written by ``python -m irc.testing.models.onnx_zoo --out tests/data/onnx``: PyTorch's
exporter, seeded random weights, reduced widths) imported with ``from_onnx``, compiled
for ``llvm`` and run on seeded inputs, its outputs compared with ONNX Runtime's on the
same inputs. The error is ``max |irc - ort| / max |ort|`` per output, at most 1e-4.

The slow tests build the published sizes (ResNet-18/50, MobileNet-V2 at 224x224) with
PyTorch at test time, and skip without it.
"""

from pathlib import Path

import numpy as np
import pytest

import irc

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from irc.frontend.onnx import from_onnx  # noqa: E402
from irc.passes import PassContext  # noqa: E402
from irc.testing.models import onnx_zoo  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "data" / "onnx"
TOLERANCE = 1e-4


def _ort_session(model, optimized: bool = True):
    opts = ort.SessionOptions()
    if not optimized:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])


def _run_irc(vm, model, feeds):
    names = [i.name for i in model.graph.input if i.name in feeds]
    out = vm["main"](*[irc.tensor(feeds[n]) for n in names])
    return [o.numpy() for o in out] if isinstance(out, (list, tuple)) else [out.numpy()]


def _check(model, feeds_list, optimized_ort: bool = True, round_trip: bool = False):
    """Import and compile ``model`` once, run it on every feed dict, compare with ORT.

    The models compile without the suite's print -> parse check after every pass (it
    makes a 50-kernel model compile ten to twenty times slower); what they exercise is
    numerics, and the IR they produce is made of operators whose round trip the operator
    tests check."""
    mod = from_onnx(model)
    if round_trip:
        ex = irc.compile(mod, "llvm")
    else:
        with PassContext():
            ex = irc.compile(mod, "llvm")
    vm = irc.vm.VirtualMachine(ex)
    sess = _ort_session(model, optimized_ort)
    for feeds in feeds_list:
        want = sess.run(None, feeds)
        got = _run_irc(vm, model, feeds)
        assert len(got) == len(want)
        for out, g, w in zip(sess.get_outputs(), got, want):
            assert g.shape == w.shape, out.name
            err = np.abs(g.astype("float64") - w).max() / max(np.abs(w).max(), 1e-30)
            assert err <= TOLERANCE, f"{out.name} {tuple(w.shape)}: max relative error {err:.2e}"


def _load(name: str):
    path = DATA / f"{name}.onnx"
    assert path.exists(), f"{path} is missing: python -m irc.testing.models.onnx_zoo --out " \
                          "tests/data/onnx"
    return onnx.load(str(path))


def test_every_zoo_model_is_committed():
    assert sorted(p.stem for p in DATA.glob("*.onnx")) == sorted(onnx_zoo.ZOO)
    total = sum(p.stat().st_size for p in DATA.glob("*.onnx"))
    assert total < 4 << 20, f"the committed models take {total / 2**20:.1f} MiB"


@pytest.mark.parametrize("name", [
    "resnet18", "resnet50", "mobilenet_v2", "bert",
    "lstm",
])
def test_model_matches_onnx_runtime(name):
    _check(_load(name), [onnx_zoo.random_inputs(name, seed=s) for s in (0, 1)])


def test_decoder_runs_two_sequence_lengths_with_one_compiled_module():
    _check(_load("gpt_decoder"), [onnx_zoo.random_inputs("gpt_decoder", seed=s, seq=n)
                                  for s, n in ((0, 5), (1, 13))])


def test_loop_model_runs_two_trip_counts_with_one_compiled_module():
    _check(_load("loop_rnn"), [onnx_zoo.random_inputs("loop_rnn", seed=s, seq=n)
                               for s, n in ((0, 3), (1, 7))])


def test_qdq_model_matches_onnx_runtime_running_the_graph_as_written():
    # ORT's optimized session fuses each DequantizeLinear -> Conv -> QuantizeLinear into an
    # integer QLinearConv whose rounding differs from the graph's float semantics by a few
    # quantization steps (5% of the output here); with graph optimizations off ORT
    # computes what the ONNX graph says, which is what irc must match.
    _check(_load("qdq_cnn"), [onnx_zoo.random_inputs("qdq_cnn", seed=s) for s in (0, 1)],
           optimized_ort=False)


def test_if_model_takes_both_branches_with_one_compiled_module():
    x = onnx_zoo.random_inputs("if_branch", seed=0)["x"]
    assert x.mean() != 0
    _check(_load("if_branch"), [{"x": x}, {"x": -x}])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet18", "resnet50", "mobilenet_v2"])
def test_full_size_model_matches_onnx_runtime(name):
    pytest.importorskip("torch")
    _check(onnx_zoo.build(name, full=True), [onnx_zoo.random_inputs(name, full=True)])


def test_range_over_a_symbolic_length_runs_at_every_length():
    # position ids as exporters write them: arange(x.shape[1]), then used as data.
    from onnx import TensorProto, helper, numpy_helper

    def const(name, value):
        return helper.make_node("Constant", [], [name],
                                value=numpy_helper.from_array(np.asarray(value, "int64")))

    nodes = [helper.make_node("Shape", ["x"], ["s"]), const("one", 1), const("zero", 0),
             helper.make_node("Gather", ["s", "one"], ["n"]),
             helper.make_node("Range", ["zero", "n", "one"], ["pos"]),
             helper.make_node("Cast", ["pos"], ["posf"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["x", "posf"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "seq"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, "seq"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert 'R.Tensor((2, "seq")' in from_onnx(model).script()
    _check(model, [{"x": np.ones((2, n), "float32")} for n in (1, 6)], round_trip=True)


def test_zoo_requests_it_cannot_serve_are_irc_errors():
    with pytest.raises(irc.IRCError, match="no zoo model 'vgg'"):
        onnx_zoo.random_inputs("vgg")
    with pytest.raises(irc.IRCError, match="no full-size version"):
        onnx_zoo.random_inputs("gpt_decoder", full=True)
    # BERT's full size is BERT-base at sequence 128 (benchmarks/cpu_models.py).
    feeds = onnx_zoo.random_inputs("bert", full=True)
    assert {k: v.shape for k, v in feeds.items()} == {"input_ids": (1, 128),
                                                      "attention_mask": (1, 128)}
    assert feeds["input_ids"].max() < 30522

"""ONNX's recurrent operators (LSTM, GRU, RNN) through irc: ONNX's node test cases, the
attributes and optional inputs those cases leave out compared with ONNX Runtime, a
two-layer batch-first LSTM as torch.onnx writes it, and the errors for what irc does not
take."""

import importlib
import warnings

import numpy as np
import pytest

import irc
from irc.core.diagnostics import IRCError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from irc.frontend.onnx import from_onnx  # noqa: E402
from irc.testing.onnx_node_cases import case_ops, collect_cases, run_case  # noqa: E402

_OPS = {"LSTM", "GRU", "RNN"}
_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
_NODE_CASES = [f"test_lstm_{n}" for n in ("defaults", "with_initial_bias", "with_peepholes",
                                           "batchwise", "reverse", "bidirectional")] + \
    [f"test_gru_{n}" for n in ("defaults", "with_initial_bias", "seq_length", "batchwise",
                               "reverse", "bidirectional")] + \
    [f"test_simple_rnn_{n}" for n in ("defaults", "with_initial_bias", "batchwise",
                                      "reverse", "bidirectional")] + ["test_rnn_seq_length"]
# One case per operator in the default run; every case with -m slow.
_FAST_CASES = {"test_lstm_with_peepholes", "test_gru_seq_length", "test_simple_rnn_defaults"}


@pytest.fixture(scope="module")
def recurrent_cases():
    """ONNX's node cases of the three operators, by name. Collecting every case takes
    about a minute; importing the three definition modules makes just these (their
    classes export their cases when defined)."""
    from onnx.backend.test.case import node

    for name in ("lstm", "gru", "rnn"):
        importlib.import_module(f"onnx.backend.test.case.node.{name}")
    cases = getattr(node, "_NodeTestCases", None)
    if cases is None:  # another onnx version: the slow, public way
        cases = collect_cases()
    return {c.name: c for c in cases if c.model is not None and set(case_ops(c)) & _OPS}


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in _FAST_CASES
                                               else pytest.mark.slow) for n in _NODE_CASES])
def test_node_case_passes(recurrent_cases, name):
    r = run_case(recurrent_cases[name])
    assert r.outcome == "pass", r.message


@pytest.mark.slow
def test_the_node_cases_listed_are_all_of_them():
    names = {c.name for c in collect_cases() if set(case_ops(c)) & _OPS}
    assert names == set(_NODE_CASES)


def _arrays(op, *, seq, batch, inp, hidden, num_dir, bias, init, peep, seq_lens, seed,
            dtype="float32"):
    """The inputs of a recurrent node in layout 0, by ONNX input name."""
    rng = np.random.default_rng(seed)
    g = _GATES[op]

    def rand(*shape):
        return rng.uniform(-1, 1, shape).astype(dtype)

    a = {"X": rand(seq, batch, inp), "W": rand(num_dir, g * hidden, inp),
         "R": rand(num_dir, g * hidden, hidden)}
    if bias:
        a["B"] = rand(num_dir, 2 * g * hidden)
    if seq_lens is not None:
        a["sequence_lens"] = np.asarray(seq_lens, "int32")
    if init:
        a["initial_h"] = rand(num_dir, batch, hidden)
        if op == "LSTM":
            a["initial_c"] = rand(num_dir, batch, hidden)
    if peep:
        a["P"] = rand(num_dir, 3 * hidden)
    return a


def _model(op, arrays, *, hidden, direction, layout=0, runtime=(), opset=22,
           batch_name=None, outputs=("Y", "Y_h", "Y_c"), **attrs):
    """A one-node model; ``runtime`` names the inputs given at run time (X always is)."""
    names = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
    names = names if op == "LSTM" else names[:6]
    node_inputs = [n if n in arrays else "" for n in names]
    while node_inputs[-1] == "":
        node_inputs.pop()
    outputs = [o for o in outputs if op == "LSTM" or o != "Y_c"]
    feeds, graph_inputs, inits = {}, [], []
    for name, value in arrays.items():
        if layout and name == "X" or layout and name.startswith("initial"):
            value = value.transpose(1, 0, 2)
        if name == "X" or name in runtime:
            shape = list(value.shape)
            if batch_name and name == "X":
                shape[1 - layout] = batch_name
            feeds[name] = value
            graph_inputs.append(helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(value.dtype), shape))
        else:
            inits.append(numpy_helper.from_array(value, name))
    if layout:
        attrs["layout"] = layout
    node = helper.make_node(op, node_inputs, outputs, hidden_size=hidden, direction=direction,
                            **attrs)
    graph = helper.make_graph([node], "g", graph_inputs,
                              [helper.make_empty_tensor_value_info(o) for o in outputs if o],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), feeds


def _irc(model, feeds, **kw):
    mod = from_onnx(model, **kw)
    ex = irc.compile(mod, "llvm")
    args = [irc.tensor(feeds[i.name]) for i in model.graph.input]
    out = irc.vm.VirtualMachine(ex)["main"](*args)
    return [o.numpy() for o in out] if isinstance(out, (list, tuple)) else [out.numpy()]


def _ort(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _check(op, *, seq=3, batch=2, inp=3, hidden=4, direction="forward", bias=True,
           init=False, peep=False, seq_lens=None, layout=0, runtime=(), seed=0,
           dtype="float32", **attrs):
    """irc against ONNX Runtime; with layout=1, against ONNX Runtime's layout-0 results
    transposed (it has no batch-first recurrences)."""
    num_dir = 2 if direction == "bidirectional" else 1
    arrays = _arrays(op, seq=seq, batch=batch, inp=inp, hidden=hidden, num_dir=num_dir,
                     bias=bias, init=init, peep=peep, seq_lens=seq_lens, seed=seed,
                     dtype=dtype)
    runtime = tuple(runtime) + (("sequence_lens",) if seq_lens is not None else ())
    model, feeds = _model(op, arrays, hidden=hidden, direction=direction, layout=layout,
                          runtime=runtime, **attrs)
    got = _irc(model, feeds)
    ref_model, ref_feeds = _model(op, arrays, hidden=hidden, direction=direction,
                                  runtime=runtime, **attrs)
    if dtype == "float64":  # ONNX Runtime's LSTM takes no doubles: onnx's reference
        from onnx.reference import ReferenceEvaluator

        want = ReferenceEvaluator(ref_model).run(None, ref_feeds)
    else:
        want = _ort(ref_model, ref_feeds)
    if layout:
        want = [want[0].transpose(2, 0, 1, 3)] + [w.transpose(1, 0, 2) for w in want[1:]]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_bidirectional_lstm_with_peepholes_clip_and_run_time_lengths():
    _check("LSTM", direction="bidirectional", init=True, peep=True, seq_lens=[3, 1],
           clip=0.7)


@pytest.mark.slow
def test_gru_with_weights_as_graph_inputs_and_linear_before_reset():
    _check("GRU", linear_before_reset=1, init=True, runtime=("W", "R", "B", "initial_h"))


@pytest.mark.slow
@pytest.mark.parametrize("op,kw", [
    ("LSTM", dict(input_forget=1, activations=["HardSigmoid", "Affine", "ScaledTanh"],
                  activation_alpha=[0.3, 0.9, 1.5], activation_beta=[0.4, 0.1, 0.8])),
    ("LSTM", dict(direction="reverse", seq_lens=[2, 3], init=True)),
    ("LSTM", dict(layout=1, direction="bidirectional", init=True, seq_lens=[1, 3])),
    ("LSTM", dict(runtime=("W", "R", "B", "P", "initial_h", "initial_c"), init=True,
                  peep=True, direction="bidirectional")),
    ("LSTM", dict(opset=7, bias=False, init=True)),
    ("LSTM", dict(dtype="float64", init=True, outputs=("", "Y_h"))),
    ("GRU", dict(linear_before_reset=1, direction="bidirectional", seq_lens=[3, 2],
                 init=True)),
    ("GRU", dict(direction="reverse", clip=0.5, activations=["LeakyRelu", "Elu"],
                 activation_alpha=[0.2, 0.7])),
    ("GRU", dict(layout=1, init=True, linear_before_reset=1, seq_lens=[2, 3])),
    ("GRU", dict(opset=14, seq_lens=[0, 2])),
    ("RNN", dict(activations=["ThresholdedRelu"], activation_alpha=[0.1])),
    ("RNN", dict(direction="bidirectional", activations=["Softsign", "Softplus"],
                 seq_lens=[2, 3])),
    ("RNN", dict(activations=["Relu"], layout=1, init=True, outputs=("Y",))),
    ("RNN", dict(activations=["Sigmoid"], opset=7, bias=False)),
], ids=lambda v: v if isinstance(v, str) else "-".join(f"{k}={v[k]}" for k in v)[:60])
def test_recurrence_matches_onnx_runtime(op, kw):
    _check(op, **kw)


@pytest.mark.slow
def test_symbolic_batch():
    arrays = _arrays("LSTM", seq=3, batch=2, inp=3, hidden=4, num_dir=1, bias=True,
                     init=False, peep=False, seq_lens=None, seed=1)
    model, feeds = _model("LSTM", arrays, hidden=4, direction="forward", batch_name="n")
    assert 'R.Tensor((3, "n", 3)' in from_onnx(model).script()
    for g, w in zip(_irc(model, feeds), _ort(model, feeds)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


# -- a two-layer batch-first LSTM as torch.onnx.export (dynamo=False) writes it ----------

def _torch_style_lstm(seq=4, feat=5, hidden=8, batch="batch"):
    """torch.nn.LSTM(feat, hidden, num_layers=2, batch_first=True) as the TorchScript
    exporter writes it: Transpose to sequence-major, zero initial states built by
    Shape -> Gather -> Unsqueeze -> Concat -> Expand, one LSTM per layer (weights as
    initializers in ONNX's gate order), Squeeze of the direction axis, Transpose back,
    and the final states concatenated."""
    rng = np.random.default_rng(7)

    def init(name, *shape):
        return numpy_helper.from_array(rng.uniform(-0.3, 0.3, shape).astype("float32"), name)

    def const(name, value):
        return helper.make_node("Constant", [], [name],
                                value=numpy_helper.from_array(np.asarray(value)))

    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2])]
    inits = []
    layer_in, size = "xt", feat
    for k in range(2):
        p = f"l{k}_"
        nodes += [
            const(p + "zeros", np.zeros(1, "float32")),
            helper.make_node("Shape", [layer_in], [p + "shape"]),
            const(p + "one", np.asarray(1, "int64")),
            helper.make_node("Gather", [p + "shape", p + "one"], [p + "batch"], axis=0),
            const(p + "axes", np.asarray([0], "int64")),
            helper.make_node("Unsqueeze", [p + "batch", p + "axes"], [p + "batch1"]),
            const(p + "ndir", np.asarray([1], "int64")),
            const(p + "hid", np.asarray([hidden], "int64")),
            helper.make_node("Concat", [p + "ndir", p + "batch1", p + "hid"],
                             [p + "state_shape"], axis=0),
            helper.make_node("Expand", [p + "zeros", p + "state_shape"], [p + "h0"]),
            helper.make_node("Expand", [p + "zeros", p + "state_shape"], [p + "c0"]),
            helper.make_node("LSTM", [layer_in, p + "W", p + "R", p + "B", "", p + "h0",
                                      p + "c0"], [p + "Y", p + "Y_h", p + "Y_c"],
                             hidden_size=hidden),
            const(p + "sq", np.asarray([1], "int64")),
            helper.make_node("Squeeze", [p + "Y", p + "sq"], [p + "out"]),
        ]
        inits += [init(p + "W", 1, 4 * hidden, size), init(p + "R", 1, 4 * hidden, hidden),
                  init(p + "B", 1, 8 * hidden)]
        layer_in, size = p + "out", hidden
    nodes += [helper.make_node("Transpose", [layer_in], ["y"], perm=[1, 0, 2]),
              helper.make_node("Concat", ["l0_Y_h", "l1_Y_h"], ["h"], axis=0),
              helper.make_node("Concat", ["l0_Y_c", "l1_Y_c"], ["c"], axis=0)]
    graph = helper.make_graph(
        nodes, "torch_lstm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, feat])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, seq, hidden]),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [2, batch, hidden]),
         helper.make_tensor_value_info("c", TensorProto.FLOAT, [2, batch, hidden])],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _max_relative_error(got, want):
    return float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-3)))


def test_torch_style_two_layer_batch_first_lstm_matches_onnx_runtime():
    model = _torch_style_lstm()
    x = np.random.default_rng(3).standard_normal((3, 4, 5)).astype("float32")
    got = _irc(model, {"x": x})
    want = _ort(model, {"x": x})
    assert [g.shape for g in got] == [(3, 4, 8), (2, 3, 8), (2, 3, 8)]
    for g, w in zip(got, want):
        assert _max_relative_error(g, w) <= 1e-4


@pytest.mark.slow
def test_torch_exported_lstm_matches_onnx_runtime(tmp_path):
    torch = pytest.importorskip("torch")
    lstm = torch.nn.LSTM(6, 12, num_layers=2, batch_first=True)

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = lstm

        def forward(self, x):
            y, (h, c) = self.lstm(x)
            return y, h, c

    x = torch.randn(2, 5, 6)
    path = str(tmp_path / "lstm.onnx")
    with warnings.catch_warnings():  # the TorchScript exporter warns about itself
        warnings.simplefilter("ignore")
        torch.onnx.export(Model().eval(), (x,), path, dynamo=False, input_names=["x"],
                          dynamic_axes={"x": {0: "batch"}})
    model = onnx.load(path)
    for n in (2, 3):
        xs = np.random.default_rng(n).standard_normal((n, 5, 6)).astype("float32")
        for g, w in zip(_irc(model, {"x": xs}), _ort(model, {"x": xs})):
            assert _max_relative_error(g, w) <= 1e-4


# -- errors ------------------------------------------------------------------------------

def _lstm_model(seq=3, hidden=4, direction="forward", **attrs):
    arrays = _arrays("LSTM", seq=3, batch=2, inp=3, hidden=4, num_dir=1, bias=False,
                     init=False, peep=False, seq_lens=None, seed=0)
    model, _ = _model("LSTM", arrays, hidden=hidden, direction=direction, **attrs)
    if seq != 3:
        model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = seq
    return model


@pytest.mark.parametrize("kw,message", [
    (dict(seq="T"), "the sequence length must be static"),
    (dict(activations=["Sigmoid", "Gelu", "Tanh"]), "activation 'Gelu' is not one of"),
    (dict(activations=["Sigmoid", "Tanh"]), "activations lists 2 functions; LSTM with 1"),
    (dict(hidden=5), "hidden_size is 5 but R has shape (1, 16, 4)"),
    (dict(layout=1, opset=13), "layout is an attribute from opset 14 on"),
    (dict(direction="sideways"), "direction 'sideways' is not forward"),
])
def test_unsupported_forms_are_clear_errors(kw, message):
    model = _lstm_model(**kw)
    with pytest.raises(IRCError, match="LSTM") as err:
        from_onnx(model)
    assert message in str(err.value)


def test_a_dynamic_sequence_fixed_by_shape_dict_imports():
    model = _lstm_model(seq="T")
    mod = from_onnx(model, shape_dict={"T": 3})
    assert 'R.Tensor((3, 2, 3)' in mod.script()

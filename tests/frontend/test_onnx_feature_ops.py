"""ONNX operators converted as compositions of graph operators: ``TensorScatter``
(``ops_index.py``), ``MelWeightMatrix`` (``ops_signal.py``), opset 8's batched ``Scan``
(``ops_control.py``), ``TfIdfVectorizer`` (``ops_text.py``), ``FlexAttention``
(``ops_attention.py``, domain ai.onnx.preview) and the optional-value operators
(``ops_optional.py``): every node-test case passes, and other inputs match ONNX's
reference evaluator."""

import numpy as np
import pytest

import irc
from irc.core.diagnostics import IRCError

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from irc.frontend.onnx import from_onnx  # noqa: E402
from irc.testing.onnx_node_cases import cases_using, failures  # noqa: E402

RNG = np.random.default_rng(11)
OPS = ["TensorScatter", "MelWeightMatrix", "Scan", "TfIdfVectorizer", "FlexAttention",
       "OptionalHasElement", "OptionalGetElement"]


def _model(nodes, inputs, outputs, opset=24, extra_opsets=(), initializers=()):
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in outputs],
        initializer=list(initializers))
    imports = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v)
                                                 for d, v in extra_opsets]
    return helper.make_model(graph, opset_imports=imports)


def _irc(model, inputs):
    vm = irc.vm.VirtualMachine(irc.compile(from_onnx(model), "llvm"))
    out = vm["main"](*[irc.tensor(a) for a in inputs.values()])
    return [o.numpy() for o in out] if isinstance(out, (list, tuple)) else [out.numpy()]


def _check(model, inputs, rtol=1e-5, atol=1e-6):
    want = ReferenceEvaluator(model).run(None, inputs)
    got = _irc(model, inputs)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return got


@pytest.mark.parametrize("op", [pytest.param(op, marks=pytest.mark.slow) if op == "Scan"
                                else op for op in OPS])  # Scan's cases take 100 s
def test_every_node_case_passes(op):
    cases = [c for c in cases_using({op}).values()
             # graph inputs or outputs of sequence or optional type: not tensors to feed
             if all(vi.type.HasField("tensor_type")
                    for vi in list(c.model.graph.input) + list(c.model.graph.output))]
    assert cases
    assert failures(cases) == []


# -- TensorScatter ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["linear", "circular"])
@pytest.mark.parametrize("axis", [1, 2, -2])
def test_tensor_scatter_writes_each_batch_entry_from_its_index(mode, axis):
    shape = [3, 5, 6, 2]
    upd_shape = list(shape)
    upd_shape[axis] = 3
    cache = RNG.normal(size=shape).astype("float32")
    update = RNG.normal(size=upd_shape).astype("float32")
    length = shape[axis]
    starts = np.array([0, length - 3, 1] if mode == "linear" else [length - 1, 4, 2],
                      "int64")
    node = helper.make_node("TensorScatter", ["c", "u", "w"], ["y"], mode=mode, axis=axis)
    inputs = {"c": cache, "u": update, "w": starts}
    _check(_model([node], inputs, ["y"]), inputs)


def test_tensor_scatter_without_write_indices_writes_at_the_start():
    cache, update = np.zeros((2, 4, 3), "int32"), np.ones((2, 2, 3), "int32")
    node = helper.make_node("TensorScatter", ["c", "u"], ["y"])
    inputs = {"c": cache, "u": update}
    (y,) = _check(_model([node], inputs, ["y"]), inputs)
    assert y[:, :2].all() and not y[:, 2:].any()


def test_tensor_scatter_past_the_end_in_linear_mode_fails_at_run_time():
    node = helper.make_node("TensorScatter", ["c", "u", "w"], ["y"])
    inputs = {"c": np.zeros((2, 4, 3), "float32"), "u": np.ones((2, 2, 3), "float32"),
              "w": np.array([0, 3], "int64")}
    with pytest.raises(IRCError, match="write_indices_out_of_range"):
        _irc(_model([node], inputs, ["y"]), inputs)


# -- MelWeightMatrix ----------------------------------------------------------------------


@pytest.mark.parametrize("bins, dft, rate, lo, hi", [
    (8, 16, 8192, 0.0, 4096.0), (20, 512, 16000, 20.0, 7600.0), (3, 64, 22050, 300.0, 8000.0)])
def test_mel_weight_matrix_with_run_time_sizes(bins, dft, rate, lo, hi):
    node = helper.make_node("MelWeightMatrix", ["n", "d", "r", "lo", "hi"], ["y"])
    inputs = {"n": np.array(bins, "int32"), "d": np.array(dft, "int64"),
              "r": np.array(rate, "int32"), "lo": np.array(lo, "float32"),
              "hi": np.array(hi, "float32")}
    (y,) = _check(_model([node], inputs, ["y"], opset=17), inputs)
    assert y.shape == (dft // 2 + 1, bins)


def test_mel_weight_matrix_in_float64():
    node = helper.make_node("MelWeightMatrix", ["n", "d", "r", "lo", "hi"], ["y"],
                            output_datatype=TensorProto.DOUBLE)
    inputs = {"n": np.array(10, "int64"), "d": np.array(128, "int64"),
              "r": np.array(16000, "int64"), "lo": np.array(0, "float64"),
              "hi": np.array(8000, "float64")}
    (y,) = _check(_model([node], inputs, ["y"], opset=17), inputs)
    assert y.dtype == "float64"


# -- Scan at opset 8 ----------------------------------------------------------------------


def test_scan8_runs_the_body_per_batch_entry_with_reversed_inputs():
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
         helper.make_node("Mul", ["s_out", "x_t"], ["y_t"])],
        "body",
        [helper.make_tensor_value_info("s_in", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("x_t", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("y_t", TensorProto.FLOAT, [2])])
    node = helper.make_node("Scan", ["", "s0", "x"], ["s", "ys"], body=body,
                            num_scan_inputs=1, directions=[1])
    inputs = {"s0": RNG.normal(size=(3, 2)).astype("float32"),
              "x": RNG.normal(size=(3, 4, 2)).astype("float32")}
    s, ys = _irc(_model([node], inputs, ["s", "ys"], opset=8), inputs)
    # ONNX's reference evaluator lacks opset 8's Scan: the recurrence in numpy
    want_s = inputs["s0"].copy()
    want_ys = np.zeros((3, 4, 2), "float32")
    for t in range(4):  # the input read backwards, the outputs in step order
        x_t = inputs["x"][:, 3 - t]
        want_s = want_s + x_t
        want_ys[:, t] = want_s * x_t
    np.testing.assert_allclose(s, want_s, rtol=1e-6)
    np.testing.assert_allclose(ys, want_ys, rtol=1e-6)


def test_scan8_with_shorter_sequence_lengths_is_an_import_error():
    body = helper.make_graph(
        [helper.make_node("Identity", ["x_t"], ["y_t"])], "body",
        [helper.make_tensor_value_info("x_t", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y_t", TensorProto.FLOAT, [2])])
    node = helper.make_node("Scan", ["lens", "x"], ["ys"], body=body, num_scan_inputs=1)
    lens = numpy_helper.from_array(np.array([4, 2], "int64"), "lens")
    model = _model([node], {"x": np.zeros((2, 4, 2), "float32")}, ["ys"], opset=8,
                   initializers=[lens])
    with pytest.raises(IRCError, match="sequence_lens must be a constant 4"):
        from_onnx(model)


# -- TfIdfVectorizer ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
@pytest.mark.parametrize("grams, skip", [((1, 1), 0), ((1, 3), 2), ((2, 3), 1)])
def test_tfidf_vectorizer_counts_n_grams(mode, grams, skip):
    pool = [2, 3, 5, 4,  # unigrams
            5, 6, 7, 8, 6, 7, 2, 2,  # bigrams
            2, 3, 4, 6, 7, 8]  # trigrams
    indexes = list(range(10))[::-1]
    node = helper.make_node(
        "TfIdfVectorizer", ["x"], ["y"], mode=mode, min_gram_length=grams[0],
        max_gram_length=grams[1], max_skip_count=skip, ngram_counts=[0, 4, 12],
        ngram_indexes=indexes, pool_int64s=pool,
        weights=[float(w) for w in RNG.uniform(0.5, 2, 10)])
    x = RNG.integers(2, 9, (3, 12)).astype("int32")
    x[0, :4] = [2, 3, 4, 2]
    inputs = {"x": x}
    _check(_model([node], inputs, ["y"], opset=9), inputs)


def test_tfidf_vectorizer_of_one_row_and_without_weights():
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], mode="TFIDF", min_gram_length=1,
                            max_gram_length=2, max_skip_count=1, ngram_counts=[0, 2],
                            ngram_indexes=[0, 1, 2], pool_int64s=[1, 2, 1, 2])
    inputs = {"x": np.array([1, 2, 1, 1, 2], "int64")}
    # (ONNX's reference fails on TFIDF without weights.) Unigrams 1 and 2: 3 and 2;
    # the bigram (1, 2): twice adjacent, once with one token between.
    (y,) = _irc(_model([node], inputs, ["y"], opset=9), inputs)
    np.testing.assert_array_equal(y, np.array([3, 2, 3], "float32"))


def test_tfidf_vectorizer_over_strings_is_refused():
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], mode="TF", min_gram_length=1,
                            max_gram_length=1, max_skip_count=0, ngram_counts=[0],
                            ngram_indexes=[0], pool_strings=["a"])
    model = _model([node], {"x": np.zeros(3, "int64")}, ["y"], opset=9)
    with pytest.raises(IRCError, match="string tensors are not supported"):
        from_onnx(model)


# -- FlexAttention ------------------------------------------------------------------------


def _flex(q, k, v, opset=26, **attrs):
    node = helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], domain="ai.onnx.preview",
                            **attrs)
    inputs = {"q": q, "k": k, "v": v}
    return _model([node], inputs, ["y"], opset=opset,
                  extra_opsets=[("ai.onnx.preview", 1)]), inputs


def test_flex_attention_with_grouped_heads_and_a_score_modifier():
    mask = helper.make_graph(
        [helper.make_node("Mul", ["scores", "half"], ["out"])], "score_mod",
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.array(0.5, "float32"), "half")])
    q = RNG.normal(size=(2, 4, 5, 8)).astype("float32")
    k = RNG.normal(size=(2, 2, 7, 8)).astype("float32")
    v = RNG.normal(size=(2, 2, 7, 3)).astype("float32")
    model, inputs = _flex(q, k, v, scale=0.3, score_mod=mask)
    _check(model, inputs, rtol=1e-4, atol=1e-5)


def test_flex_attention_of_float16_inputs_softmax_in_float32():
    q, k, v = (RNG.normal(size=(1, 2, 4, 8)).astype("float16") for _ in range(3))
    model, inputs = _flex(q, k, v)
    _check(model, inputs, rtol=2e-3, atol=2e-3)


def test_flex_attention_with_heads_that_do_not_group_is_an_import_error():
    q = np.zeros((1, 3, 2, 4), "float32")
    k = v = np.zeros((1, 2, 2, 4), "float32")
    model, _ = _flex(q, k, v)
    with pytest.raises(IRCError, match="not a multiple"):
        from_onnx(model)


def test_an_operator_of_a_domain_the_model_does_not_import_is_unsupported():
    q = k = v = np.zeros((1, 1, 2, 4), "float32")
    node = helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], domain="ai.onnx.preview")
    model = _model([node], {"q": q, "k": k, "v": v}, ["y"], opset=26)
    with pytest.raises(irc.UnsupportedOperatorError, match="missing from the model"):
        from_onnx(model)


# -- optional values ----------------------------------------------------------------------


def test_an_optional_made_of_a_tensor_has_it():
    x = RNG.normal(size=(3,)).astype("float32")
    nodes = [helper.make_node("Optional", ["x"], ["o"]),
             helper.make_node("OptionalHasElement", ["o"], ["has"]),
             helper.make_node("OptionalGetElement", ["o"], ["y"])]
    has, y = _irc(_model(nodes, {"x": x}, ["has", "y"], opset=18), {"x": x})
    assert has.dtype == bool and bool(has)
    np.testing.assert_array_equal(y, x)


def test_an_empty_optional_node_is_an_import_error():
    tp = helper.make_tensor_type_proto(TensorProto.FLOAT, [2])
    nodes = [helper.make_node("Optional", [], ["o"], type=tp),
             helper.make_node("OptionalHasElement", ["o"], ["has"])]
    with pytest.raises(IRCError, match="empty optional"):
        from_onnx(_model(nodes, {}, ["has"], opset=18))

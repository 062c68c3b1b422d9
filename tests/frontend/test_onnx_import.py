"""The ONNX importer: models in, IRModules out that compile and match ONNX Runtime; symbolic
dimensions, parameters kept as inputs, import-time folding of shape arithmetic, and one
error listing every unsupported operator."""

import numpy as np
import pytest

import irc
from irc.core.diagnostics import IRCError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from irc.frontend.onnx import UnsupportedOperatorError, from_onnx, supported_ops  # noqa: E402


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _ort(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _irc(mod, *args):
    ex = irc.compile(mod, "llvm")
    out = irc.vm.VirtualMachine(ex)["main"](*[irc.tensor(a) for a in args])
    return [o.numpy() for o in out] if isinstance(out, (list, tuple)) else [out.numpy()]


def _mlp(batch="n"):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 4)).astype("float32")
    b = rng.standard_normal(4).astype("float32")
    nodes = [helper.make_node("MatMul", ["input.1", "w"], ["mm"]),
             helper.make_node("Add", ["mm", "b"], ["z"]),
             helper.make_node("Relu", ["z"], ["out"])]
    return _model(nodes,
                  [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [batch, 8])],
                  [helper.make_tensor_value_info("out", TensorProto.FLOAT, [batch, 4])],
                  [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])


def test_a_model_with_a_symbolic_batch_matches_onnx_runtime():
    model = _mlp()
    mod = from_onnx(model)
    text = mod.script()
    assert 'input_1: R.Tensor(("n", 8)' in text and "out: R.Tensor" in text  # names survive
    for n in (1, 5):
        x = np.random.default_rng(n).standard_normal((n, 8)).astype("float32")
        np.testing.assert_allclose(_irc(mod, x)[0], _ort(model, {"input.1": x})[0],
                                   rtol=1e-5, atol=1e-6)


def test_shape_dict_fixes_dimensions_and_keep_params_returns_them(tmp_path):
    model = _mlp()
    path = tmp_path / "mlp.onnx"
    onnx.save(model, str(path))
    mod, params = from_onnx(str(path), shape_dict={"n": 3}, keep_params_in_input=True)
    assert list(params) == ["w", "b"]
    assert [p.name_hint for p in mod["main"].params] == ["input_1", "w", "b"]
    assert 'R.Tensor((3, 8)' in mod.script()
    x = np.ones((3, 8), "float32")
    ex = irc.compile(mod, "llvm", params=params)
    got = irc.vm.VirtualMachine(ex)["main"](irc.tensor(x)).numpy()
    np.testing.assert_allclose(got, _ort(model, {"input.1": x})[0], rtol=1e-5, atol=1e-6)


def test_exporter_shape_arithmetic_folds_at_import():
    # Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as torch.onnx writes flatten.
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(
            np.asarray(0, "int64"))),
        helper.make_node("Gather", ["s", "zero"], ["n"]),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    inits = [numpy_helper.from_array(np.asarray([0], "int64"), "axes"),
             numpy_helper.from_array(np.asarray([-1], "int64"), "minus1")]
    for batch in (2, "b"):
        model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                             [batch, 3, 4])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
        mod = from_onnx(model)
        ops = [line.split("= R.")[1].split("(")[0] for line in mod.script().splitlines()
               if "= R." in line]
        assert ops == ["reshape"]  # the shape arithmetic left no computation
        x = np.arange(24, dtype="float32").reshape(2, 3, 4)
        np.testing.assert_array_equal(_irc(mod, x)[0], x.reshape(2, 12))


def test_every_unsupported_operator_is_listed_in_one_error():
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="r"),
             helper.make_node("FakeOpOne", ["a"], ["b"], name="f1"),
             helper.make_node("FakeOpOne", ["b"], ["c"], name="f2"),
             helper.make_node("FakeOpTwo", ["c"], ["y"], name="f3")]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(model)
    msg = str(info.value)
    assert "FakeOpOne (ai.onnx, opset 17): 2 nodes, first 'f1', 'f2'" in msg
    assert "FakeOpTwo (ai.onnx, opset 17): 1 node, first 'f3'" in msg
    assert "Relu" not in msg.split("\n", 1)[1]
    assert isinstance(info.value, irc.UnsupportedOperatorError)


@pytest.mark.parametrize("data,match", [
    (b"not a model", "not an ONNX model"),
    ("/no/such/model.onnx", "no such file"),
    (42, "expects an onnx.ModelProto"),
])
def test_bad_inputs_are_irc_errors(data, match):
    with pytest.raises(IRCError, match=match):
        from_onnx(data)


def test_a_node_reading_an_undefined_value_is_named():
    nodes = [helper.make_node("Relu", ["nowhere"], ["y"], name="lost")]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    with pytest.raises(IRCError, match="'lost' .*reads 'nowhere'"):
        from_onnx(model)


def test_a_node_error_names_the_node():
    nodes = [helper.make_node("Transpose", ["x"], ["y"], name="tr", perm=[0, 0])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])])
    with pytest.raises(IRCError, match=r"ONNX node 'tr' \(Transpose\): perm"):
        from_onnx(model)


def test_old_opsets_are_refused_with_a_hint():
    model = _mlp(2)
    model.opset_import[0].version = 6
    with pytest.raises(UnsupportedOperatorError,
                       match=r"(?s)Add \(ai.onnx, opset 6\).*convert_version"):
        from_onnx(model)


def test_supported_ops_lists_converters_with_their_opsets():
    table = supported_ops()
    assert table["Reshape"] == [5] and table["Conv"] == [1] and table["Add"] == [7]
    assert {"Relu", "MatMul", "Gemm", "Softmax", "Slice", "Gather"} <= set(table)


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


@pytest.mark.parametrize("op, x_shape, vec, out_names", [
    ("Unsqueeze", [2, 3], np.array([-1, 0], "int64"), ["y"]),
    ("Squeeze", [1, 3, 1], np.array([2, 0], "int64"), ["y"]),
    ("Split", [7, 2], np.array([3, 0, 4], "int64"), ["y", "y1", "y2"]),
])
def test_axes_and_sizes_known_only_at_run_time_match_onnx_runtime(op, x_shape, vec, out_names):
    node = helper.make_node(op, ["x", "v"], out_names)
    model = _model([node], [_vi("x", x_shape), _vi("v", [len(vec)], TensorProto.INT64)],
                   [_vi(n, None) for n in out_names], opset=18)
    x = np.random.default_rng(0).standard_normal(x_shape).astype("float32")
    for got, want in zip(_irc(from_onnx(model), x, vec), _ort(model, {"x": x, "v": vec})):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op, x_shape, vec, out_names, check", [
    ("Squeeze", [1, 3, 1], np.array([1, 0], "int64"), ["y"], "axis_not_1"),
    ("Unsqueeze", [2, 3], np.array([1, 1], "int64"), ["y"], "repeated_axis"),
    ("Split", [7, 2], np.array([3, 3], "int64"), ["y", "y1"], "sizes_do_not_add_up"),
])
def test_bad_run_time_axes_and_sizes_fail_naming_the_check(op, x_shape, vec, out_names, check):
    node = helper.make_node(op, ["x", "v"], out_names, name="n1")
    model = _model([node], [_vi("x", x_shape), _vi("v", [len(vec)], TensorProto.INT64)],
                   [_vi(n, None) for n in out_names], opset=18)
    x = np.zeros(x_shape, "float32")
    with pytest.raises(IRCError, match=f"n1_{check}"):
        _irc(from_onnx(model), x, vec)


def test_squeeze_without_axes_of_a_symbolic_dimension_checks_it_at_run_time():
    node = helper.make_node("Squeeze", ["x"], ["y"], name="sq")
    model = _model([node], [_vi("x", ["n", 1, 3])], [_vi("y", None)])
    mod = from_onnx(model)
    x = np.arange(6, dtype="float32").reshape(2, 1, 3)
    np.testing.assert_array_equal(_irc(mod, x)[0], _ort(model, {"x": x})[0])
    with pytest.raises(IRCError, match="sq_symbolic_unit_dim"):  # n == 1: rank would change
        _irc(mod, x[:1])


def test_loop_scan_outputs_have_a_run_time_length_and_declared_body_shapes():
    """The scan output's length is the number of iterations (a symbolic dimension), and a
    body output declared static but converted symbolic (a run-time slice) is checked."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Unsqueeze", ["i", "zero"], ["s"]),
         helper.make_node("Add", ["i", "one"], ["e1"]),
         helper.make_node("Unsqueeze", ["e1", "zero"], ["e"]),
         helper.make_node("Slice", ["table", "s", "e"], ["row"]),
         helper.make_node("Add", ["y_in", "row"], ["y_out"]),
         helper.make_node("Cast", ["y_out"], ["scan"], to=TensorProto.FLOAT16)],
        "body", [_vi("i", [], TensorProto.INT64), _vi("c_in", [], TensorProto.BOOL),
                 _vi("y_in", [1])],
        [_vi("c_out", [], TensorProto.BOOL), _vi("y_out", [1]),
         _vi("scan", [1], TensorProto.FLOAT16)],
        initializer=[numpy_helper.from_array(np.array([0], "int64"), "zero"),
                     numpy_helper.from_array(np.array(1, "int64"), "one")])
    table = np.arange(5, dtype="float32") * 1.5
    model = _model([helper.make_node("Loop", ["n", "", "y"], ["y_final", "ys"], body=body)],
                   [_vi("n", [], TensorProto.INT64), _vi("y", [1])],
                   [_vi("y_final", None), _vi("ys", None, TensorProto.FLOAT16)],
                   inits=[numpy_helper.from_array(table, "table")])
    mod = from_onnx(model)
    n, y = np.array(4, "int64"), np.array([1.0], "float32")
    for got, want in zip(_irc(mod, n, y), _ort(model, {"n": n, "y": y})):
        np.testing.assert_array_equal(got, want)


def test_run_time_slice_bounds_of_a_symbolic_input():
    node = helper.make_node("Slice", ["x", "s", "e"], ["y"])
    model = _model([node], [_vi("x", ["n", 4]), _vi("s", [1], TensorProto.INT64),
                            _vi("e", [1], TensorProto.INT64)], [_vi("y", None)])
    x = np.arange(24, dtype="float32").reshape(6, 4)
    s, e = np.array([-4], "int64"), np.array([100], "int64")
    np.testing.assert_array_equal(_irc(from_onnx(model), x, s, e)[0], x[-4:])


@pytest.mark.parametrize("attrs, length, complex_input", [
    (dict(), None, False), (dict(onesided=1), 12, False), (dict(inverse=1), 6, True),
    (dict(inverse=1, onesided=1), 9, True),
])
def test_dft_matches_numpy_fft(attrs, length, complex_input):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 8, 3, 2 if complex_input else 1)).astype("float64")
    inits = [numpy_helper.from_array(np.array(1, "int64"), "axis")]
    inputs = ["x", "", "axis"]
    if length is not None:
        inits.append(numpy_helper.from_array(np.array(length, "int64"), "n"))
        inputs[1] = "n"
    node = helper.make_node("DFT", inputs, ["y"], **attrs)
    model = _model([node], [_vi("x", list(x.shape), TensorProto.DOUBLE)], [_vi("y", None)],
                   inits, opset=20)
    signal = x[..., 0] + 1j * x[..., 1] if complex_input else x[..., 0]
    if attrs.get("inverse") and attrs.get("onesided"):
        want = np.fft.irfft(signal, n=length, axis=1)[..., None]
    else:
        fn = np.fft.ifft if attrs.get("inverse") else np.fft.fft
        full = fn(signal, n=length, axis=1)
        if attrs.get("onesided"):
            full = full[:, :length // 2 + 1]
        want = np.stack([full.real, full.imag], axis=-1)
    np.testing.assert_allclose(_irc(from_onnx(model), x)[0], want, atol=1e-9)


def test_nonzero_and_compress_have_lengths_known_only_at_run_time():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 5, 4)) > 0.3).astype("float32")
    cond = rng.standard_normal(7) > 0  # longer than the axis: the extra entries are ignored
    nodes = [helper.make_node("NonZero", ["x"], ["nz"]),
             helper.make_node("Compress", ["x", "c"], ["cx"], axis=1)]
    model = _model(nodes, [_vi("x", list(x.shape)), _vi("c", [7], TensorProto.BOOL)],
                   [_vi("nz", None, TensorProto.INT64), _vi("cx", None)])
    nz, cx = _irc(from_onnx(model), x, cond)
    np.testing.assert_array_equal(nz, np.array(np.nonzero(x)))
    np.testing.assert_array_equal(cx, np.compress(cond[:5], x, axis=1))
    none = _irc(from_onnx(model), np.zeros_like(x), np.zeros(7, bool))
    assert none[0].shape == (3, 0) and none[1].shape == (3, 0, 4)


def test_scan_with_reversed_input_and_output_axes_matches_onnx_runtime():
    # A running sum over axis 1 of x, read backwards; the partial sums stacked on axis 1.
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
         helper.make_node("Mul", ["s_out", "two"], ["y_t"])],
        "body", [_vi("s_in", [3]), _vi("x_t", [3])], [_vi("s_out", [3]), _vi("y_t", [3])],
        initializer=[numpy_helper.from_array(np.array(2, "float32"), "two")])
    node = helper.make_node("Scan", ["s0", "x"], ["s", "ys"], body=body, num_scan_inputs=1,
                            scan_input_axes=[1], scan_input_directions=[1],
                            scan_output_axes=[1])
    model = _model([node], [_vi("s0", [3]), _vi("x", [3, 5])], [_vi("s", [3]), _vi("ys", None)],
                   opset=16)
    rng = np.random.default_rng(0)
    s0, x = rng.standard_normal(3).astype("float32"), rng.standard_normal((3, 5)).astype("float32")
    for got, want in zip(_irc(from_onnx(model), s0, x), _ort(model, {"s0": s0, "x": x})):
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("run_time_step", [False, True])
def test_stft_with_a_window_matches_the_reference(run_time_step):
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 30, 1)).astype("float32")
    window = np.hanning(8).astype("float32")
    step = numpy_helper.from_array(np.array(5, "int64"), "step")
    node = helper.make_node("STFT", ["x", "step", "w"], ["y"])
    inputs = [_vi("x", [2, 30, 1]), _vi("w", [8])]
    if run_time_step:
        inputs.append(_vi("step", [], TensorProto.INT64))
    model = _model([node], inputs, [_vi("y", None)], [] if run_time_step else [step], opset=17)
    feeds = {"x": x, "w": window} | ({"step": np.array(5, "int64")} if run_time_step else {})
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    args = [x, window] + ([np.array(5, "int64")] if run_time_step else [])
    np.testing.assert_allclose(_irc(from_onnx(model), *args)[0], want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("parts, onesided", [
    (1, 1), pytest.param(2, 0, marks=pytest.mark.slow)])
def test_stft_with_a_run_time_frame_length_matches_the_reference(parts, onesided):
    """The frame count, the frequencies and the transform's size are bound when the model
    runs; a frame length past the signal is a run-time error naming the check."""
    from onnx.reference import ReferenceEvaluator

    x = np.random.default_rng(1).standard_normal((2, 40, parts)).astype("float32")
    node = helper.make_node("STFT", ["x", "step", "", "length"], ["y"], name="stft",
                            onesided=onesided)
    model = _model([node], [_vi("x", [2, 40, parts]), _vi("step", [], TensorProto.INT64),
                            _vi("length", [], TensorProto.INT64)], [_vi("y", None)],
                   opset=17)
    mod = from_onnx(model)
    for step, length in ((3, 10), (7, 16)):
        feeds = {"x": x, "step": np.array(step, "int64"), "length": np.array(length, "int64")}
        want = ReferenceEvaluator(model).run(None, feeds)[0]
        got = _irc(mod, *feeds.values())[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    with pytest.raises(IRCError, match="stft_frame_length_out_of_range"):
        _irc(mod, x, np.array(3, "int64"), np.array(41, "int64"))


def test_broadcast_of_two_symbolic_dimensions_is_resolved_at_run_time():
    """``(n, 4) + (m, 4)``: either may be 1 when the model runs; the shapes are compared
    and broadcast then, and shapes that do not broadcast are a run-time error."""
    node = helper.make_node("Add", ["a", "b"], ["y"], name="add")
    model = _model([node], [_vi("a", ["n", 4]), _vi("b", ["m", 4])], [_vi("y", None)])
    mod = from_onnx(model)
    rng = np.random.default_rng(0)
    for n, m in ((1, 3), (3, 1), (3, 3), (0, 1)):
        a = rng.standard_normal((n, 4)).astype("float32")
        b = rng.standard_normal((m, 4)).astype("float32")
        np.testing.assert_array_equal(_irc(mod, a, b)[0], a + b)
    with pytest.raises(IRCError, match="add_shapes_do_not_broadcast"):
        _irc(mod, np.zeros((2, 4), "float32"), np.zeros((3, 4), "float32"))


def test_expand_of_a_symbolic_input_to_a_run_time_shape():
    # Attention masks: an input of symbolic shape expanded to a shape computed at run
    # time (the target's 1s keep the input's dimensions, and the input's 1s broadcast).
    node = helper.make_node("Expand", ["x", "s"], ["y"], name="ex")
    model = _model([node], [_vi("x", ["n", 1, "m"]), _vi("s", [4], TensorProto.INT64)],
                   [_vi("y", None)])
    mod = from_onnx(model)
    x = np.arange(6, dtype="float32").reshape(2, 1, 3)
    for s in ([5, 2, 4, 3], [1, 1, 4, 1], [7, 1, 1, 1], [1, 2, 1, 3]):
        s = np.array(s, "int64")
        np.testing.assert_array_equal(_irc(mod, x, s)[0], _ort(model, {"x": x, "s": s})[0])
    with pytest.raises(IRCError, match="ex_broadcast"):
        _irc(mod, x, np.array([1, 3, 4, 3], "int64"))  # 2 cannot become 3


def test_matmul_of_unrelated_symbolic_dimensions():
    # Batch dimensions the types cannot equate broadcast at run time; the contraction
    # dimensions are matched at run time; the product's shape is known (a Shape of it,
    # as attention code takes, imports).
    nodes = [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")]
    model = _model(nodes, [_vi("a", ["p", "h", "m", "k"]), _vi("b", ["q", 2, "k2", 4])],
                   [_vi("y", None)])
    mod = from_onnx(model)
    assert mod["main"].ret_struct_info.shape is not None
    rng = np.random.default_rng(0)
    for pa, ha, pb in ((3, 2, 3), (1, 2, 3), (3, 1, 1)):
        a = rng.standard_normal((pa, ha, 5, 6)).astype("float32")
        b = rng.standard_normal((pb, 2, 6, 4)).astype("float32")
        got, want = _irc(mod, a, b), _ort(model, {"a": a, "b": b})
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    with pytest.raises(IRCError):  # contraction dimensions 6 and 7
        _irc(mod, np.zeros((1, 2, 5, 6), "float32"), np.zeros((1, 2, 7, 4), "float32"))


def test_gather_elements_of_indices_sliced_to_a_run_time_length():
    # Position ids: a constant sliced to the sequence's length (a dimension max(0, n) of
    # a shape variable n bound at run time), then gathered through: the kernel that
    # checks the indices takes n as a scalar, as no buffer's shape binds it.
    positions = numpy_helper.from_array(np.arange(16, dtype="int64").reshape(1, 16), "pos")
    table = numpy_helper.from_array(np.arange(32, dtype="float32").reshape(1, 32) * 0.5,
                                    "table")
    nodes = [helper.make_node("Shape", ["ids"], ["shape"]),
             helper.make_node("Slice", ["shape", "one", "two"], ["seq"]),
             helper.make_node("Slice", ["pos", "zero", "seq", "one"], ["idx"]),
             helper.make_node("GatherElements", ["table", "idx"], ["y"], axis=1)]
    consts = [numpy_helper.from_array(np.array([v], "int64"), name)
              for name, v in (("zero", 0), ("one", 1), ("two", 2))]
    model = _model(nodes, [_vi("ids", ["b", "s"], TensorProto.INT64)], [_vi("y", None)],
                   [positions, table, *consts])
    mod = from_onnx(model)
    for b, length in ((2, 7), (1, 16), (3, 1)):
        ids = np.zeros((b, length), "int64")
        np.testing.assert_array_equal(_irc(mod, ids)[0], _ort(model, {"ids": ids})[0])


def test_reshape_of_a_symbolic_input_to_a_run_time_shape():
    node = helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")
    model = _model([node], [_vi("x", ["n", 6]), _vi("s", [3], TensorProto.INT64)],
                   [_vi("y", None)])
    mod = from_onnx(model)
    x = np.arange(24, dtype="float32").reshape(4, 6)
    for s in ([0, 3, -1], [2, -1, 3]):
        s = np.array(s, "int64")
        np.testing.assert_array_equal(_irc(mod, x, s)[0], _ort(model, {"x": x, "s": s})[0])
    with pytest.raises(IRCError, match="rs_element_count"):
        _irc(mod, x, np.array([5, 5, 1], "int64"))

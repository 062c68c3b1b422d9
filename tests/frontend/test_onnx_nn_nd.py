"""ONNX's convolution, pooling and normalization family through irc: N-d (1-D, 3-D)
convolutions and pooling, ceil mode, MaxPool's indices, ConvTranspose's output_shape and
groups, LpPool, LRN, LpNormalization, LayerNormalization's statistics, DeformConv and
Einsum; node cases (a sample by default, every case of these operators in the slow run)
and the errors for what irc does not take. The default run checks small models against
ONNX Runtime; collecting ONNX's node cases alone takes ~15 s, so those tests
are slow ones."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import irc  # noqa: E402
from irc.core.diagnostics import IRCError  # noqa: E402
from irc.frontend.onnx import from_onnx  # noqa: E402
from irc.ir import ops  # noqa: E402
from irc.ir.block_builder import BlockBuilder  # noqa: E402
from irc.ir.expr import Var  # noqa: E402
from irc.ir.struct_info import TensorStructInfo  # noqa: E402
from irc.testing.onnx_node_cases import cases_using, failures, run_case  # noqa: E402

OPS = {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool",
       "GlobalMaxPool", "LpPool", "GlobalLpPool", "LRN", "LpNormalization",
       "LayerNormalization", "DeformConv", "Einsum"}
# One case per feature, for the default run.
SAMPLE = ["test_maxpool_3d_dilations", "test_averagepool_2d_ceil_last_window_starts_on_pad",
          "test_maxpool_with_argmax_2d_precomputed_strides", "test_convtranspose_output_shape",
          "test_convtranspose_group_2", "test_lppool_1d_default", "test_lrn",
          "test_layer_normalization_3d_axis1_epsilon", "test_basic_deform_conv_with_padding",
          "test_einsum_batch_diagonal"]


@pytest.fixture(scope="module")
def cases():
    return cases_using(OPS)


@pytest.mark.slow
@pytest.mark.parametrize("name", SAMPLE)
def test_a_sample_of_node_cases_passes(cases, name):
    r = run_case(cases[name])
    assert r.outcome == "pass", r.message


@pytest.mark.slow
def test_every_node_case_of_the_family_passes(cases):
    assert failures(cases.values()) == []


def _model(node, inputs, outputs, opset=19):
    graph = helper.make_graph([node], "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _run(model, *args):
    ex = irc.compile(from_onnx(model), "llvm")
    out = irc.vm.VirtualMachine(ex)["main"](*[irc.tensor(a) for a in args])
    return [o.numpy() for o in out] if isinstance(out, (list, tuple)) else [out.numpy()]


def _check_against_ort(node, arrays, opset=19):
    ort = pytest.importorskip("onnxruntime")
    names = [n for n in node.input if n]
    model = _model(node, [_vi(n, a.shape) for n, a in zip(names, arrays)],
                   [_vi(o, None, TensorProto.INT64 if o == "i" else TensorProto.FLOAT)
                    for o in node.output], opset)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, dict(zip(names, arrays)))
    got = _run(model, *arrays)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


_RNG = np.random.default_rng(7)
_X3 = _RNG.standard_normal((1, 2, 5, 6, 7)).astype("float32")


@pytest.mark.parametrize("node, arrays", [
    (helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 3, 2], strides=[2, 2, 3],
                      pads=[0, 1, 0, 1, 0, 1], ceil_mode=1), [_X3]),
    (helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], storage_order=1,
                      dilations=[1, 2]), [_X3[:, :, 0]]),
    (helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3], strides=[2], pads=[1, 1],
                      ceil_mode=1, count_include_pad=1), [_X3[0, :, 0, 0][None]]),
    (helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 2, 2], p=3), [_X3]),
    (helper.make_node("ConvTranspose", ["x", "w"], ["y"], group=2, strides=[2, 1, 2],
                      output_shape=[11, 7, 14]),
     [_X3, _RNG.standard_normal((2, 3, 2, 2, 3)).astype("float32")]),
    (helper.make_node("LRN", ["x"], ["y"], size=5, alpha=0.01, beta=0.6, bias=1.5),
     [_RNG.standard_normal((2, 6, 3, 2)).astype("float32")]),
    (helper.make_node("LayerNormalization", ["x", "g", "b"], ["y", "m", "r"], axis=-2),
     [_X3[0], _RNG.standard_normal((6, 7)).astype("float32"),
      _RNG.standard_normal((7,)).astype("float32")]),
    (helper.make_node("GlobalLpPool", ["x"], ["y"], p=2), [_X3]),
])
def test_small_models_match_onnx_runtime(node, arrays):
    _check_against_ort(node, arrays)


def test_conv3d_with_groups_matches_a_direct_sum():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 4, 5, 4, 3)).astype("float32")
    w = rng.standard_normal((2, 2, 2, 2, 2)).astype("float32")
    node = helper.make_node("Conv", ["x", "w"], ["y"], group=2, pads=[1, 0, 0, 0, 1, 1],
                            strides=[2, 1, 1])
    y, = _run(_model(node, [_vi("x", x.shape), _vi("w", w.shape)], [_vi("y", None)]), x, w)
    xp = np.pad(x, [(0, 0), (0, 0), (1, 0), (0, 1), (0, 1)])
    want = np.zeros((1, 2, 3, 4, 3), "float32")
    for o in range(2):
        g = o  # one output channel per group
        for d in range(3):
            for h in range(4):
                for v in range(3):
                    patch = xp[0, 2 * g:2 * g + 2, 2 * d:2 * d + 2, h:h + 2, v:v + 2]
                    want[0, o, d, h, v] = (patch * w[o]).sum()
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


def test_einsum_three_operands_with_implicit_output():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3)).astype("float32")
    b = rng.standard_normal((3, 4)).astype("float32")
    c = rng.standard_normal((4, 2)).astype("float32")
    node = helper.make_node("Einsum", ["a", "b", "c"], ["y"], equation="ij,jk,kl")
    y, = _run(_model(node, [_vi("a", a.shape), _vi("b", b.shape), _vi("c", c.shape)],
                     [_vi("y", None)], opset=12), a, b, c)
    np.testing.assert_allclose(y, np.einsum("ij,jk,kl", a, b, c), rtol=1e-4, atol=1e-5)


def test_einsum_trace_and_broadcast_ellipsis():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 3)).astype("float32")
    b = rng.standard_normal((2, 1, 3, 4)).astype("float32")
    c = rng.standard_normal((5, 4, 2)).astype("float32")
    node = helper.make_node("Einsum", ["a"], ["y"], equation="ii")
    y, = _run(_model(node, [_vi("a", a.shape)], [_vi("y", None)], opset=12), a)
    np.testing.assert_allclose(y, np.einsum("ii", a), rtol=1e-5)
    node = helper.make_node("Einsum", ["b", "c"], ["y"], equation="...ij,...jk->...ik")
    y, = _run(_model(node, [_vi("b", b.shape), _vi("c", c.shape)], [_vi("y", None)],
                     opset=12), b, c)
    np.testing.assert_allclose(y, np.einsum("...ij,...jk->...ik", b, c), rtol=1e-4,
                               atol=1e-5)


@pytest.mark.parametrize("node, inputs, message", [
    (helper.make_node("LpNormalization", ["x"], ["y"], p=3), [[2, 3]], "p must be 1 or 2"),
    (helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2], storage_order=2),
     [[1, 1, 4]], "storage_order must be 0 or 1"),
    (helper.make_node("ConvTranspose", ["x", "w"], ["y"], output_shape=[4, 4, 4]),
     [[1, 1, 3, 3], [1, 1, 2, 2]], "output_shape has 3 entries for 2 spatial axes"),
    (helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3]),
     [[1, 1, 4, 4], [1, 1, 2, 2]], "does not match the weight"),
    (helper.make_node("Einsum", ["x"], ["y"], equation="ij,jk->ik"), [[2, 2]],
     "2 operands, the node 1 inputs"),
    (helper.make_node("Einsum", ["x"], ["y"], equation="ij->iz"), [[2, 2]],
     "labels no operand has"),
    (helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2]), [[1, 4]],
     "rank 3 or more"),
])
def test_unsupported_or_malformed_nodes_are_irc_errors(node, inputs, message):
    names = list(node.input)
    model = _model(node, [_vi(n, s) for n, s in zip(names, inputs)], [_vi("y", None)])
    with pytest.raises(IRCError, match=message):
        from_onnx(model)


def _dims(expr):
    return [int(getattr(d, "value", d)) for d in expr.struct_info.shape]


def test_nd_operators_infer_shapes_and_reject_bad_attributes():
    x = Var(name_hint="x", struct_info=TensorStructInfo(shape=(1, 2, 7), dtype="float32"))
    bb = BlockBuilder()
    pooled = bb.normalize(ops.nn_nd.max_pool_nd(x, [2], [2], [0, 1], [1], ceil_mode=True))
    assert _dims(pooled) == [1, 2, 4]
    # The last window would start in the end padding: dropped.
    pooled = bb.normalize(ops.nn_nd.avg_pool_nd(x, [3], [3], [1, 2], [1], ceil_mode=True))
    assert _dims(pooled) == [1, 2, 3]
    with pytest.raises(IRCError, match="padding has 1 entries; 2 expected"):
        bb.normalize(ops.nn_nd.max_pool_nd(x, [2], [2], [0], [1]))
    w = Var(name_hint="w", struct_info=TensorStructInfo(shape=(2, 3, 2), dtype="float32"))
    up = bb.normalize(ops.nn_nd.conv_transpose_nd(x, w, [2], [-1, 0], [1], [1]))
    assert _dims(up) == [1, 3, 16]

"""The default CPU build's choices (issue 13): convolutions in NHWC and constant weights
packed once into the micro-kernels' panels, checked against ONNX Runtime on odd shapes
(prime extents, channels not divisible by the vector width, stride, dilation, groups,
depthwise), and the rules for when a weight may be packed."""

import numpy as np
import pytest

import irc
from irc import dlight as dl
from irc import passes, te
from irc.core.module import IRModule
from irc.ir import BlockBuilder, Var, ops, tensor_sinfo
from irc.ir.expr import Constant
from irc.target import Target
from irc.testing import ref
from irc.tir.stmt import PrimFunc

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import helper  # noqa: E402

from irc.frontend.onnx import from_onnx  # noqa: E402
from irc.testing.onnx_graphs import float_model  # noqa: E402


def _check_against_ort(model, feeds):
    """irc's default build of ``model`` matches ONNX Runtime (relative error 1e-4 of the
    largest output); returns the executable."""
    ex = irc.compile(from_onnx(model), "llvm")
    got = irc.vm.VirtualMachine(ex)["main"](*feeds.values()).numpy()
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    assert got.shape == want.shape
    err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
    assert err <= 1e-4, err
    return ex


def _packed(ex):
    """The constants of an executable that are packed weights (more than 4 dims)."""
    return [c for c in ex.constants if isinstance(c, np.ndarray) and c.ndim > 4]


# (id, in channels, out channels, height, width, kernel, stride, pad, dilation, groups)
CONVS = [
    ("prime_channels_odd_image", 3, 17, 13, 11, 3, 1, 1, 1, 1),
    ("stride2", 13, 29, 9, 9, 3, 2, 1, 1, 1),
    ("dilation2", 16, 24, 10, 10, 3, 1, 2, 2, 1),
    ("groups3", 12, 18, 8, 8, 3, 1, 1, 1, 3),
    ("depthwise", 24, 24, 9, 9, 3, 1, 1, 1, 24),
    ("depthwise_stride2", 40, 40, 11, 11, 3, 2, 1, 1, 40),
    ("stem7x7_stride2", 3, 20, 15, 15, 7, 2, 3, 1, 1),
    ("pointwise", 64, 48, 7, 7, 1, 1, 0, 1, 1),
    ("wide", 96, 128, 7, 7, 3, 1, 1, 1, 1),
]


@pytest.mark.parametrize("case", CONVS, ids=[c[0] for c in CONVS])
def test_conv_bias_relu_matches_onnxruntime(case):
    _, ci, co, h, w, k, s, p, d, g = case
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((co, ci // g, k, k)).astype("float32")
    bias = rng.standard_normal(co).astype("float32")
    model = float_model([helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k],
                                     strides=[s, s], pads=[p] * 4, dilations=[d, d], group=g),
                    helper.make_node("Relu", ["c"], ["y"])],
                   [("x", [1, ci, h, w])], "y", {"w": weight, "b": bias})
    _check_against_ort(model, {"x": rng.standard_normal((1, ci, h, w)).astype("float32")})


@pytest.mark.slow  # (CI time; the default run checks the smaller cases)
def test_residual_block_packs_its_weights_and_matches_onnxruntime():
    rng = np.random.default_rng(1)
    c = 32
    inits = {f"w{i}": (rng.standard_normal((c, c, 3, 3)) / 20).astype("float32")
             for i in (1, 2)}
    inits.update({f"b{i}": rng.standard_normal(c).astype("float32") for i in (1, 2)})
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1] * 4),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1] * 4),
             helper.make_node("Add", ["c2", "x"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    model = float_model(nodes, [("x", [1, c, 14, 14])], "y", inits)
    ex = _check_against_ort(model, {"x": rng.standard_normal((1, c, 14, 14)).astype(
        "float32")})
    # Both convolutions' weights are packed (into panels of the output-channel tile).
    assert len(_packed(ex)) == 2


@pytest.mark.parametrize("trans_b", [0, 1])
def test_gemm_with_constant_weight_matches_onnxruntime(trans_b):
    rng = np.random.default_rng(2)
    w = rng.standard_normal((23, 37) if trans_b else (37, 23)).astype("float32")
    b = rng.standard_normal(23).astype("float32")
    model = float_model([helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=trans_b)],
                   [("x", [5, 37])], "y", {"w": w, "b": b})
    _check_against_ort(model, {"x": rng.standard_normal((5, 37)).astype("float32")})


def test_batched_matmul_by_a_constant_matches_onnxruntime():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((20, 19)).astype("float32")
    model = float_model([helper.make_node("MatMul", ["x", "w"], ["y"])],
                   [("x", [3, 6, 20])], "y", {"w": w})
    _check_against_ort(model, {"x": rng.standard_normal((3, 6, 20)).astype("float32")})


def _matmul_func():
    a = te.placeholder((16, 32), name="A")
    b = te.placeholder((32, 48), name="B")
    k = te.reduce_axis((0, 32), name="k")
    c = te.compute((16, 48), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return te.create_prim_func([a, b, c], index_dtype_override="int64")


def _two_calls(second_weight_is_param: bool):
    """``main(x[, w2]) = matmul(matmul(x, W1)[:, :32], W2 or w2)``: one loop function,
    two call sites."""
    rng = np.random.default_rng(4)
    w1 = rng.standard_normal((32, 48)).astype("float32")
    w2 = rng.standard_normal((32, 48)).astype("float32")
    bb = BlockBuilder()
    gv = bb.add_func(_matmul_func(), "mm")
    x = Var(name_hint="x", struct_info=tensor_sinfo((16, 32)))
    y = Var(name_hint="y", struct_info=tensor_sinfo((16, 32)))
    params = [x, y]
    p2 = Var(name_hint="w2", struct_info=tensor_sinfo((32, 48)))
    if second_weight_is_param:
        params.append(p2)
    with bb.function("main", params):
        with bb.dataflow():
            a = bb.emit(ops.call_tir(gv, [x, Constant.from_numpy(w1)],
                                     tensor_sinfo((16, 48))))
            b = bb.emit(ops.call_tir(gv, [y, p2 if second_weight_is_param
                                          else Constant.from_numpy(w2)],
                                     tensor_sinfo((16, 48))))
            out = bb.emit_output(bb.emit(ops.add(a, b)))
        bb.emit_func_output(out)
    return bb.get(), w1, w2


@pytest.mark.parametrize("param", [False, True], ids=["both_constant", "one_param"])
def test_a_weight_is_packed_only_when_every_call_passes_a_constant(param):
    mod, w1, w2 = _two_calls(param)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((16, 32)).astype("float32")
    y = rng.standard_normal((16, 32)).astype("float32")
    with Target("llvm"):
        out = passes.get_pipeline("default")(mod)
    mm = next(f for gv, f in out.functions.items()
              if isinstance(f, PrimFunc) and gv.name_hint == "mm")
    weight_shape = [int(s) for s in mm.buffer_map[mm.params[1]].shape]
    assert (weight_shape == [32, 48]) == param
    assert "dlight.pack_weights" not in mm.attrs and "layout_rewrite" not in mm.attrs
    ex = irc.compile(mod, "llvm")
    args = [x, y] + ([w2] if param else [])
    got = irc.vm.VirtualMachine(ex)["main"](*args).numpy()
    np.testing.assert_allclose(got, x @ w1 + y @ w2, rtol=1e-4, atol=1e-4)


def test_default_rules_keep_a_layout_free_placeholder_in_its_layout():
    """Seed 002's layout-free weight is the tuner's to rewrite: a loop function built
    for irc.build keeps the layout its caller passes."""
    a = te.placeholder((16, 32), name="A")
    b = te.placeholder((32, 48), name="B")
    k = te.reduce_axis((0, 32), name="k")
    c = te.compute((16, 48), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C",
                   attrs={"layout_free_placeholders": [b]})
    func = te.create_prim_func([a, b, c])
    with Target("llvm"):
        out = dl.ApplyDefaultSchedule(dl.cpu.Matmul())(IRModule(functions={"main": func}))
    f = out["main"]
    assert [int(s) for s in f.buffer_map[f.params[1]].shape] == [32, 48]
    assert "layout_rewrite" not in f.attrs


def test_default_pipeline_runs_convolutions_in_nhwc_on_cpu_only():
    text = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 8, 10, 10), dtype="float32"),
             w: R.Tensor((16, 8, 3, 3), dtype="float32")) -> R.Tensor((1, 16, 10, 10),
                                                                      dtype="float32"):
        with R.dataflow():
            y = R.nn.relu(R.nn.conv2d(x, w, padding=[1, 1, 1, 1]))
            R.output(y)
        return y
'''
    mod = irc.parse(text)
    with Target("llvm"):
        cpu = passes.ConvertLayoutForTarget()(passes.Normalize()(mod))
    assert 'data_layout="NHWC"' in cpu.script()
    with Target("cuda"):
        gpu = passes.ConvertLayoutForTarget()(passes.Normalize()(mod))
    assert "NHWC" not in gpu.script()
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 8, 10, 10)).astype("float32")
    w = rng.standard_normal((16, 8, 3, 3)).astype("float32")
    got = irc.vm.VirtualMachine(irc.compile(mod, "llvm"))["main"](x, w).numpy()
    np.testing.assert_allclose(got, np.maximum(ref.conv2d_nchw(x, w, padding=1), 0),
                               rtol=1e-4, atol=1e-4)


def test_depthwise_nhwc_padding_is_read_through_a_guard_not_copied():
    """Regression: the padded input of an NHWC depthwise convolution was copied whole
    before the convolution (its read moves with the channel vector, which was taken for
    a guard varying along it); the guard depends on rows and columns only."""
    rng = np.random.default_rng(7)
    model = float_model([helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3],
                                     strides=[2, 2], pads=[1] * 4, group=32)],
                   [("x", [1, 32, 16, 16])], "y",
                   {"w": rng.standard_normal((32, 1, 3, 3)).astype("float32")})
    with Target("llvm"):
        opt = passes.get_pipeline("default")(from_onnx(model))
    convs = [f for f in opt.functions.values() if isinstance(f, PrimFunc)
             and "conv2d" in f.script()]
    assert convs and all("pad_temp = T.alloc_buffer" not in f.script() for f in convs)
    _check_against_ort(model, {"x": rng.standard_normal((1, 32, 16, 16)).astype("float32")})

"""bfloat16 arrays on the way in and out of irc: the VM takes ml_dtypes' ``bfloat16``
arrays and gives them back (``Tensor.numpy()``, ``np.asarray``), constants and saved
executables keep the dtype, and float16 is unaffected."""

import numpy as np
import pytest

import irc
from irc.runtime import cpu, tensor
from irc.vm.executable import Executable
from irc.vm.vm import VirtualMachine

ml_dtypes = pytest.importorskip("ml_dtypes")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from irc.frontend.onnx import from_onnx  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)


def _model(elem: int, with_constant: bool = False) -> onnx.ModelProto:
    """y = x + x (and, with ``with_constant``, a second output c + x for a constant c)."""
    nodes = [helper.make_node("Add", ["x", "x"], ["y"])]
    outputs = [helper.make_tensor_value_info("y", elem, [4])]
    inits = []
    if with_constant:
        np_dtype = BF16 if elem == TensorProto.BFLOAT16 else np.float16
        inits.append(numpy_helper.from_array(np.array([0.5, -1, 3, 1e30], np_dtype), "c"))
        nodes.append(helper.make_node("Add", ["c", "x"], ["z"]))
        outputs.append(helper.make_tensor_value_info("z", elem, [4]))
        nodes.append(helper.make_node("Identity", ["c"], ["c_out"]))
        outputs.append(helper.make_tensor_value_info("c_out", elem, [4]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", elem, [4])],
                              outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def _vm(model: onnx.ModelProto) -> VirtualMachine:
    return VirtualMachine(irc.compile(from_onnx(model), "llvm"), cpu())


def test_bfloat16_arrays_in_and_out_of_the_vm():
    vm = _vm(_model(TensorProto.BFLOAT16))
    x = np.array([1.5, -2.0, 3.25, 0.0078125], BF16)
    for arg in (x, tensor(x)):
        out = vm["main"](arg)
        assert out.dtype == "bfloat16"
        got = out.numpy()
        assert got.dtype == BF16
        np.testing.assert_array_equal(got.astype(np.float32), [3.0, -4.0, 6.5, 0.015625])
        assert np.asarray(out).dtype == BF16
        assert np.asarray(out, dtype=np.float32)[2] == 6.5  # values, not bits
    with pytest.raises(irc.RuntimeDTypeError, match="bfloat16"):
        vm["main"](x.view(np.uint16))  # bits are not a bfloat16 array


def test_float16_is_unaffected():
    vm = _vm(_model(TensorProto.FLOAT16))
    x = np.array([1.5, -2.0, 3.25, 1e-3], np.float16)
    got = vm["main"](x).numpy()
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, x + x)
    with pytest.raises(irc.RuntimeDTypeError, match="float16"):
        vm["main"](x.astype(np.float32))


def test_tensors_of_bfloat16_convert_values():
    t = irc.tensor(np.array([1.0, 2.5, -3.0], np.float32), dtype="bfloat16")
    assert t.numpy().dtype == BF16
    f = irc.tensor(t, dtype="float32")  # from the values, not the bits
    np.testing.assert_array_equal(f.numpy(), [1.0, 2.5, -3.0])
    t.copyfrom(np.array([4, 5, 6], BF16))
    np.testing.assert_array_equal(t.numpy().astype(np.float32), [4, 5, 6])


def test_bfloat16_constants_and_parameters_keep_their_dtype(tmp_path):
    model = _model(TensorProto.BFLOAT16, with_constant=True)
    x = np.array([1, 2, 3, 4], BF16)
    c = np.array([0.5, -1, 3, 1e30], BF16).astype(np.float32)
    ex = irc.compile(from_onnx(model), "llvm")
    path = str(tmp_path / "bf16.irc")
    ex.save(path)
    for exe in (ex, Executable.load(path)):
        y, z, c_out = VirtualMachine(exe, cpu())["main"](x)
        assert z.numpy().dtype == BF16 and c_out.numpy().dtype == BF16
        np.testing.assert_array_equal(c_out.numpy().astype(np.float32), c)
        np.testing.assert_array_equal(z.numpy().astype(np.float32),
                                      (c + x.astype(np.float32)).astype(BF16).astype(np.float32))
    mod, params = from_onnx(model, keep_params_in_input=True)
    assert params["c"].dtype == BF16
    y, z, c_out = VirtualMachine(irc.compile(mod, "llvm", params=params), cpu())["main"](x)
    np.testing.assert_array_equal(c_out.numpy().astype(np.float32), c)


def test_saved_executables_keep_float8_constants(tmp_path):
    from irc.ir import ops
    from irc.ir.block_builder import BlockBuilder
    from irc.ir.expr import Constant, Tuple, Var
    from irc.ir.struct_info import TensorStructInfo
    from irc.tir import expr as E

    data = np.array([448, -0.5, 0.0, 3], ml_dtypes.float8_e4m3fn)
    x = Var(name_hint="x", struct_info=TensorStructInfo(shape=(E.const(4, "int64"),),
                                                         dtype="float32"))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            c = Constant.from_numpy(data)
            s = bb.emit(ops.add(x, ops.astype(c, "float32")))
            out = bb.emit_output(Tuple(fields=(s, c)))
        bb.emit_func_output(out)
    path = str(tmp_path / "f8.irc")
    irc.compile(bb.get(), "llvm").save(path)
    s, c_out = VirtualMachine(Executable.load(path), cpu())["main"](np.ones(4, np.float32))
    assert c_out.numpy().dtype == data.dtype
    assert np.array_equal(c_out.numpy().view(np.uint8), data.view(np.uint8))
    np.testing.assert_array_equal(s.numpy(), data.astype(np.float32) + 1)


def test_random_inputs_of_bfloat16_and_float8_parameters_run():
    for elem, np_dtype in [(TensorProto.BFLOAT16, BF16),
                           (TensorProto.FLOAT8E4M3FN, np.dtype(ml_dtypes.float8_e4m3fn))]:
        graph = helper.make_graph(
            [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)], "g",
            [helper.make_tensor_value_info("x", elem, [8])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
        ex = irc.compile(from_onnx(model), "llvm")
        (x,) = ex.random_inputs("main")
        assert x.dtype == np_dtype
        values = x.astype(np.float32)
        assert ((values >= 0) & (values <= 1)).all() and len(np.unique(values)) > 1
        y = VirtualMachine(ex, cpu())["main"](x).numpy()
        np.testing.assert_array_equal(y, values)


def test_bfloat16_constants_made_from_values_hold_the_values():
    """Constants irc makes itself (Hardmax's one-hot values, ``nn`` constants and
    parameters, a Python number next to a bfloat16 operand in the text format) hold the
    values, not the values taken for bfloat16 bits (1 as the bits 0x0001 is 9.2e-41)."""
    graph = helper.make_graph(
        [helper.make_node("Hardmax", ["x"], ["y"], axis=-1)], "g",
        [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    x = np.array([[1, 3, 2], [-1, -2, -3]], BF16)
    y = _vm(model)["main"](x).numpy()
    np.testing.assert_array_equal(y.astype(np.float32), [[0, 1, 0], [1, 0, 0]])

    from irc.frontend import nn

    class Scaled(nn.Module):
        def __init__(self):
            self.w = nn.Parameter((3,), "bfloat16")

        def forward(self, v):
            return v * self.w + nn.Tensor.from_const(np.array([0.5, 1.5, -2]), "bfloat16")

    m = Scaled()
    m.w.data = np.array([2.0, -0.25, 3.0], np.float32)
    assert m.w.data.dtype == BF16
    np.testing.assert_array_equal(m.w.data.astype(np.float32), [2.0, -0.25, 3.0])
    mod, params = m.export_tvm({"forward": {"v": nn.spec.Tensor((3,), "bfloat16")}})
    vm = VirtualMachine(irc.compile(mod, "llvm"), cpu())
    weights = [p.data for _, p in m.named_parameters()]
    got = vm["forward"](np.array([1, 2, 4], BF16), *weights).numpy()
    np.testing.assert_array_equal(got.astype(np.float32), [2.5, 1.0, 10.0])
    m.w.to_dtype("float32")
    np.testing.assert_array_equal(m.w.data, [2.0, -0.25, 3.0])

    src = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3,), "bfloat16")) -> R.Tensor((3,), "bfloat16"):
        y = x * 2.5
        return y
'''
    ex = irc.compile(irc.parse(src), "llvm")
    got = VirtualMachine(ex, cpu())["main"](np.array([1, -2, 4], BF16)).numpy()
    np.testing.assert_array_equal(got.astype(np.float32), [2.5, -5, 10])


"""Exporting nn models: the seed-003 MLP (against a hand-built module and the seed's printed
text), symbolic dimensions, several methods, tuple outputs, debug spans."""

import textwrap

import numpy as np
import pytest

import irc
from irc.frontend import nn
from irc.ir import (
    BlockBuilder,
    PrimStructInfo,
    TensorStructInfo,
    TupleStructInfo,
    Var,
    assert_structural_equal,
    ops,
    tensor_sinfo,
)
from irc.tir import expr as E


class RelaxModel(nn.Module):
    def __init__(self):
        super(RelaxModel, self).__init__()
        self.fc1 = nn.Linear(784, 256)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(256, 10, bias=False)

    def forward(self, x):
        x = self.fc1(x)
        x = self.relu1(x)
        x = self.fc2(x)
        return x


SEED_003_TEXT = textwrap.dedent('''
    # from tvm.script import ir as I
    # from tvm.script import relax as R
    @I.ir_module
    class Module:
        @R.function
        def forward(x: R.Tensor((1, 784), dtype="float32"), fc1_weight: R.Tensor((256, 784), dtype="float32"), fc1_bias: R.Tensor((256,), dtype="float32"), fc2_weight: R.Tensor((10, 256), dtype="float32")) -> R.Tensor((1, 10), dtype="float32"):
            R.func_attr({"num_input": 1})
            with R.dataflow():
                permute_dims: R.Tensor((784, 256), dtype="float32") = R.permute_dims(fc1_weight, axes=None)
                matmul: R.Tensor((1, 256), dtype="float32") = R.matmul(x, permute_dims, out_dtype="void")
                add: R.Tensor((1, 256), dtype="float32") = R.add(matmul, fc1_bias)
                relu: R.Tensor((1, 256), dtype="float32") = R.nn.relu(add)
                permute_dims1: R.Tensor((256, 10), dtype="float32") = R.permute_dims(fc2_weight, axes=None)
                matmul1: R.Tensor((1, 10), dtype="float32") = R.matmul(relu, permute_dims1, out_dtype="void")
                gv: R.Tensor((1, 10), dtype="float32") = matmul1
                R.output(gv)
            return gv
''')  # noqa: E501 - the seed's lines


def export_seed_mlp():
    spec = {"forward": {"x": nn.spec.Tensor((1, 784), "float32")}}
    return RelaxModel().export_tvm(spec)


def hand_built_mlp():
    bb = BlockBuilder()
    x = Var(name_hint="x", struct_info=tensor_sinfo((1, 784)))
    w1 = Var(name_hint="fc1_weight", struct_info=tensor_sinfo((256, 784)))
    b1 = Var(name_hint="fc1_bias", struct_info=tensor_sinfo((256,)))
    w2 = Var(name_hint="fc2_weight", struct_info=tensor_sinfo((10, 256)))
    with bb.function("forward", [x, w1, b1, w2],
                     attrs={"num_input": 1, "global_symbol": "forward"}):
        with bb.dataflow():
            t1 = bb.emit(ops.permute_dims(w1), "permute_dims")
            m1 = bb.emit(ops.matmul(x, t1), "matmul")
            a1 = bb.emit(ops.add(m1, b1), "add")
            r1 = bb.emit(ops.nn.relu(a1), "relu")
            t2 = bb.emit(ops.permute_dims(w2), "permute_dims")
            m2 = bb.emit(ops.matmul(r1, t2), "matmul")
            gv = bb.emit_output(m2)
        bb.emit_func_output(gv)
    return bb.get()


def binding_names(func):
    return [b.var.name_hint for block in func.body.blocks for b in block.bindings]


def test_seed_mlp_equals_hand_built_module():
    mod, _ = export_seed_mlp()
    assert_structural_equal(mod, hand_built_mlp())


def test_seed_mlp_equals_seed_text():
    mod, _ = export_seed_mlp()
    assert_structural_equal(mod, irc.parse(SEED_003_TEXT))


def test_seed_mlp_names_attrs_and_printed_form():
    mod, params = export_seed_mlp()
    func = mod["forward"]
    assert [p.name_hint for p in func.params] == ["x", "fc1_weight", "fc1_bias", "fc2_weight"]
    assert binding_names(func) == ["permute_dims", "matmul", "add", "relu", "permute_dims1",
                                   "matmul1", "gv"]
    assert func.attrs["num_input"] == 1
    text = mod.script()
    assert "    @R.function\n    def forward(x: R.Tensor((1, 784)" in text
    assert 'R.matmul(x, permute_dims, out_dtype="void")' in text
    assert "R.permute_dims(fc1_weight, axes=None)" in text
    assert [n for n, _ in params] == ["fc1_weight", "fc1_bias", "fc2_weight"]
    assert [(p.shape, p.dtype) for _, p in params] == [
        ((256, 784), "float32"), ((256,), "float32"), ((10, 256), "float32")]
    # The printed module reads back to the same module.
    assert_structural_equal(irc.parse(text), mod)


def test_export_ir_and_export_tvm_agree():
    spec = {"forward": {"x": nn.spec.Tensor((1, 784), "float32")}}
    model = RelaxModel()
    assert_structural_equal(model.export_ir(spec)[0], model.export_tvm(spec)[0])


class TwoHeads(nn.Module):
    def __init__(self):
        self.body = nn.Linear(8, 16)
        self.cls = nn.Linear(16, 3)
        self.reg = nn.Linear(16, 1)

    def forward(self, x):
        h = nn.op.relu(self.body(x))
        return self.cls(h), self.reg(h)

    def embed(self, x, scale):
        return self.body(x) * scale


def test_symbolic_batch_shared_by_name_and_tuple_output():
    spec = {"forward": {"x": nn.spec.Tensor(("n", 8), "float32")}}
    mod, params = TwoHeads().export_ir(spec)
    func = mod["forward"]
    n = func.params[0].struct_info.shape[0]
    assert isinstance(n, E.Var) and n.dtype == "int64" and n.name == "n"
    ret = func.ret_struct_info
    assert isinstance(ret, TupleStructInfo)
    assert ret.fields[0].shape[0] is n and ret.fields[0].shape[1].value == 3
    assert ret.fields[1].shape[0] is n and ret.fields[1].shape[1].value == 1
    assert len(func.params) == 1 + len(params) == 7
    irc.ir.well_formed(mod)
    assert_structural_equal(irc.parse(mod.script()), mod)


def test_multiple_methods_each_get_inputs_then_all_parameters():
    spec = {
        "forward": {"x": nn.spec.Tensor(("n", 8), "float32")},
        "embed": {"x": nn.spec.Tensor(("b", 8), "float32"),
                  "scale": nn.spec.Tensor((), "float32")},
    }
    mod, params = TwoHeads().export_ir(spec)
    assert sorted(mod.names()) == ["embed", "forward"]
    embed = mod["embed"]
    assert embed.attrs["num_input"] == 2 and mod["forward"].attrs["num_input"] == 1
    names = [p.name_hint for p in embed.params]
    assert names == ["x", "scale"] + [n for n, _ in params]
    assert binding_names(embed) == ["permute_dims", "matmul", "add", "multiply", "gv"]
    b = embed.params[0].struct_info.shape[0]
    assert embed.ret_struct_info.shape[0] is b
    # Each method has its own symbolic variables.
    assert mod["forward"].params[0].struct_info.shape[0] is not b


def test_spec_int_is_an_int64_variable_shared_with_shapes():
    class Reshaper(nn.Module):
        def forward(self, x, n):
            return x.reshape(n, 4)

    spec = {"forward": {"x": nn.spec.Tensor(("n", 2, 2), "float32"), "n": nn.spec.Int()}}
    mod, params = Reshaper().export_ir(spec)
    func = mod["forward"]
    assert params == [] and func.attrs["num_input"] == 2
    n_sinfo = func.params[1].struct_info
    assert isinstance(n_sinfo, PrimStructInfo) and n_sinfo.dtype == "int64"
    n = func.params[0].struct_info.shape[0]
    assert n_sinfo.value is n
    assert func.ret_struct_info.shape[0] is n


def test_spec_order_follows_the_signature_and_defaults_may_be_left_out():
    class Model(nn.Module):
        def forward(self, a, b, c=None):
            return a + b if c is None else a + b + c

    spec = {"forward": {"b": nn.spec.Tensor((2,), "float32"),
                        "a": nn.spec.Tensor((2,), "float32")}}
    mod, _ = Model().export_ir(spec)
    assert [p.name_hint for p in mod["forward"].params] == ["a", "b"]


def test_tensor_operators_emit_named_bindings():
    class Model(nn.Module):
        def forward(self, x, y):
            z = (x + 1.0) * y - x / 2.0
            z = (z @ y.permute_dims()).reshape(4)
            return nn.op.concat([-z, z.astype("float32")], axis=0)

    spec = {"forward": {"x": nn.spec.Tensor((2, 2), "float32"),
                        "y": nn.spec.Tensor((2, 2), "float32")}}
    mod, _ = Model().export_ir(spec)
    func = mod["forward"]
    assert binding_names(func) == ["add", "multiply", "divide", "subtract", "permute_dims",
                                   "matmul", "reshape", "negative", "astype", "concat", "gv"]
    assert func.ret_struct_info.shape[0].value == 8
    add = func.body.blocks[0].bindings[0].value
    assert add.args[1].data.dtype == "float32" and float(add.args[1].data) == 1.0


def test_split_returns_tensors_and_from_const_embeds_arrays():
    class Model(nn.Module):
        def forward(self, x):
            a, b = nn.op.split(x, 2, axis=1)
            return a + nn.Tensor.from_const(np.ones((3, 2))), b

    mod, _ = Model().export_ir({"forward": {"x": nn.spec.Tensor((3, 4), "float32")}})
    func = mod["forward"]
    assert binding_names(func) == ["split", "split_0", "split_1", "add", "gv"]
    ret = func.ret_struct_info
    assert [tuple(d.value for d in f.shape) for f in ret.fields] == [(3, 2), (3, 2)]


def test_tensor_shape_and_dtype_seen_by_forward():
    seen = {}

    class Model(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(4, 6)

        def forward(self, x):
            y = self.fc(x)
            seen["x"] = (x.shape, x.ndim, x.dtype)
            seen["y"] = y.shape
            seen["w"] = self.fc.weight.shape
            return y

    Model().export_ir({"forward": {"x": nn.spec.Tensor(("n", 4), "float32")}})
    (n, four), ndim, dtype = seen["x"]
    assert isinstance(n, E.Var) and four == 4 and ndim == 2 and dtype == "float32"
    assert seen["y"][1] == 6 and seen["y"][0] is n
    assert seen["w"] == (6, 4)


def test_debug_records_model_source_lines_and_checks_well_formedness():
    class Model(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return nn.op.relu(self.fc(x))  # the relu line

    mod, _ = Model().export_ir({"forward": {"x": nn.spec.Tensor((1, 4), "float32")}},
                               debug=True)
    bindings = mod["forward"].body.blocks[0].bindings
    relu = bindings[3].value
    assert relu.span is not None and relu.span.source_name == __file__
    assert "the relu line" in relu.span.source.line(relu.span.line)
    # Linear's bindings point at the line that called the layer.
    assert bindings[0].value.span.line == relu.span.line
    plain, _ = Model().export_ir({"forward": {"x": nn.spec.Tensor((1, 4), "float32")}})
    assert plain["forward"].body.blocks[0].bindings[3].value.span is None
    assert_structural_equal(plain, mod)


def test_conv_net_struct_info():
    class ConvNet(nn.Module):
        def __init__(self):
            self.conv = nn.Conv2D(3, 8, kernel_size=3, stride=1, padding=1)
            self.bn = nn.BatchNorm2D(8)
            self.relu = nn.ReLU()
            self.pool = nn.MaxPool2D(2)
            self.flatten = nn.Flatten()
            self.fc = nn.Linear(8 * 16 * 16, 10)

        def forward(self, x):
            return self.fc(self.flatten(self.pool(self.relu(self.bn(self.conv(x))))))

    model = ConvNet()
    mod, params = model.export_ir({"forward": {"x": nn.spec.Tensor(("n", 3, 32, 32),
                                                                    "float32")}})
    func = mod["forward"]
    assert [n for n, _ in params] == ["conv_weight", "conv_bias", "bn_weight", "bn_bias",
                                      "bn_running_mean", "bn_running_var", "fc_weight",
                                      "fc_bias"]
    assert model.conv.weight.shape == (8, 3, 3, 3)
    sinfos = {b.var.name_hint: b.var.struct_info for b in func.body.blocks[0].bindings}
    n = func.params[0].struct_info.shape[0]

    def dims(name):
        return tuple(d if d is n else d.value for d in sinfos[name].shape)

    assert dims("conv2d") == (n, 8, 32, 32)
    assert dims("reshape") == (1, 8, 1, 1)
    assert dims("batch_norm") == (n, 8, 32, 32)
    assert dims("max_pool2d") == (n, 8, 16, 16)
    assert dims("reshape1") == (n, 2048)
    assert dims("gv") == (n, 10)
    assert isinstance(sinfos["lv"], TupleStructInfo)
    bn_call = func.body.blocks[0].bindings[3].value
    assert bn_call.attrs["training"] is False and bn_call.attrs["axis"] == 1
    assert all(isinstance(s, (TensorStructInfo, TupleStructInfo)) for s in sinfos.values())
    irc.ir.well_formed(mod)
    assert_structural_equal(irc.parse(mod.script()), mod)


def test_unused_parameters_are_still_function_parameters():
    class Model(nn.Module):
        def __init__(self):
            self.used = nn.Linear(2, 2)
            self.unused = nn.Parameter((5,), "float32")

        def forward(self, x):
            return self.used(x)

    mod, params = Model().export_ir({"forward": {"x": nn.spec.Tensor((1, 2), "float32")}})
    assert [p.name_hint for p in mod["forward"].params] == ["x", "used_weight", "used_bias",
                                                            "unused"]
    assert [n for n, _ in params] == ["used_weight", "used_bias", "unused"]


def test_dtype_conversion_reaches_the_exported_function():
    model = RelaxModel().to("float16")
    mod, params = model.export_ir({"forward": {"x": nn.spec.Tensor((1, 784), "float16")}})
    assert {p.dtype for _, p in params} == {"float16"}
    assert mod["forward"].ret_struct_info.dtype == "float16"


@pytest.mark.parametrize("method", ["forward"])
def test_export_twice_gives_equal_modules(method):
    model = RelaxModel()
    spec = {method: {"x": nn.spec.Tensor((1, 784), "float32")}}
    assert_structural_equal(model.export_ir(spec)[0], model.export_ir(spec)[0])

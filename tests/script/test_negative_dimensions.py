"""Negative shape dimensions are refused where they are written: in text at parse time
(an IRParseError at the dimension, with a caret), and when struct info or buffers are
built from Python (an IRTypeError), instead of failing at legalization. R.reshape's
target is the one place a -1 means something (the dimension it infers)."""

import numpy as np
import pytest
from script_helpers import assert_roundtrip, parse_error

import irc
from irc import tir
from irc.ir import BlockBuilder, TensorStructInfo, Var, ops
from irc.tir.expr import IntImm

HEADER = ("from irc.script import ir as I\nfrom irc.script import relax as R\n"
          "from irc.script import tir as T\n")


def _check_at(text, marker, message):
    """Parse ``text``; the error names ``message`` and points at the first occurrence of
    ``marker`` (file:line:col, and a caret under it)."""
    e = parse_error(HEADER + text)
    assert message in e.message, e.message
    lines = (HEADER + text).splitlines()
    line = next(k for k, s in enumerate(lines, 1) if marker in s)
    column = lines[line - 1].index(marker) + 1
    assert (e.span.line, e.span.column) == (line, column), str(e)
    rendered = str(e).split("\n")
    assert rendered[0].startswith(f"bad.ir:{line}:{column}: ")
    assert rendered[2].index("^") - rendered[1].index(lines[line - 1].strip()) == \
        column - 1 - (len(lines[line - 1]) - len(lines[line - 1].lstrip()))
    assert "hint:" in str(e)
    return e


@pytest.mark.parametrize("text, marker, message", [
    ('@R.function\ndef main(x: R.Tensor((-1, 4), "float32")):\n    return x\n',
     "-1", "R.Tensor: shape dimension 0 is -1"),
    ('@R.function\ndef main(x: R.Tensor(dtype="float32", shape=(2, -4))):\n    return x\n',
     "-4", "R.Tensor: shape dimension 1 is -4"),
    ('@R.function\ndef main(x: R.Tensor("float32", (2, -4))):\n    return x\n',
     "-4", "R.Tensor: shape dimension 1 is -4"),
    ('@R.function\ndef main(x: R.Tensor((2, 4), "float32")) -> R.Tensor((2, -8), '
     '"float32"):\n    return x\n', "-8", "R.Tensor: shape dimension 1 is -8"),
    ('@R.function\ndef main(x: R.Tensor((2, 4), "float32")):\n'
     '    y = R.match_cast(x, R.Tensor((-2, 4), "float32"))\n    return y\n',
     "-2", "R.Tensor: shape dimension 0 is -2"),
    ('@R.function\ndef main(x: R.Shape([3, -1])):\n    return x\n',
     "-1", "R.Shape: shape dimension 1 is -1"),
    ('@R.function\ndef main(x: R.Tensor((2, 4), "float32")):\n    s = R.shape([-1])\n'
     '    return s\n', "-1", "R.shape: shape dimension 0 is -1"),
    ('@R.function\ndef main(x: R.Tensor((2, 4), "float32")):\n'
     '    y = R.reshape(x, R.shape([-2, 4]))\n    return y\n',
     "-2", "R.shape: shape dimension 0 is -2"),
])
def test_graph_negative_dimensions_are_parse_errors(text, marker, message):
    _check_at(text, marker, message)


@pytest.mark.parametrize("text, marker, message", [
    ('@T.prim_func\ndef main(A: T.Buffer((-1, 4), "float32")):\n    T.evaluate(0)\n',
     "-1", "T.Buffer: shape dimension 0 is -1"),
    ('@T.prim_func\ndef main(A: T.Buffer(-8, "float32")):\n    T.evaluate(0)\n',
     "-8", "T.Buffer: shape dimension 0 is -8"),
    ('@T.prim_func\ndef main(A: T.Buffer(dtype="float32", shape=(1, -8))):\n'
     '    T.evaluate(0)\n', "-8", "T.Buffer: shape dimension 1 is -8"),
    ('@T.prim_func\ndef main(a: T.handle):\n    A = T.match_buffer(a, (4, -2), "float32")\n'
     '    T.evaluate(0)\n', "-2", "T.match_buffer: shape dimension 1 is -2"),
    ('@T.prim_func\ndef main(A: T.Buffer((8,), "float32")):\n'
     '    B = T.alloc_buffer((-3,), "float32")\n    T.evaluate(0)\n',
     "-3", "T.alloc_buffer: shape dimension 0 is -3"),
    ('@T.prim_func\ndef main(A: T.Buffer((8,), "float32")):\n'
     '    B = T.allocate([4, -4], "float32", "global")\n    T.evaluate(0)\n',
     "-4", "T.allocate: shape dimension 1 is -4"),
    ('@T.prim_func\ndef main(A: T.Buffer((8,), "float32")):\n    B = A.view(-2, 4)\n'
     '    T.evaluate(0)\n', "-2", "A.view: shape dimension 0 is -2"),
])
def test_loop_ir_negative_dimensions_are_parse_errors(text, marker, message):
    _check_at(text, marker, message)


def test_reshape_target_may_infer_one_dimension():
    # The input's shape is unknown: the -1 stays in the target until run time.
    x = Var(name_hint="x", struct_info=TensorStructInfo(dtype="float32", ndim=2))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(ops.reshape(x, (-1, 4))))
    mod = bb.get()
    assert "R.reshape(x, R.shape([-1, 4]))" in mod.script()
    assert_roundtrip(mod)
    # With a known input shape, the -1 is inferred when the module is parsed.
    mod = irc.parse(HEADER + RESHAPE_MODULE)
    assert 'y: R.Tensor((3, 4), dtype="float32") = R.reshape(x, R.shape([3, -1]))' in \
        mod.script()
    assert_roundtrip(mod)
    ex = irc.compile(mod, "llvm")
    x_np = np.arange(12, dtype="float32").reshape(2, 6)
    got = irc.vm.VirtualMachine(ex)["main"](irc.tensor(x_np))
    np.testing.assert_array_equal(got.numpy(), x_np.reshape(3, 4))


RESHAPE_MODULE = """@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 6), "float32")):
        y = R.reshape(x, R.shape([3, -1]))
        return y
"""


def test_tensor_struct_info_refuses_negative_dimensions():
    with pytest.raises(irc.IRTypeError, match=r"shape dimension 0 of \(-1, 4\) is -1"):
        TensorStructInfo(shape=(IntImm(dtype="int64", value=-1),
                                IntImm(dtype="int64", value=4)), dtype="float32")
    n = tir.var("n", "int64")
    with pytest.raises(irc.IRTypeError, match="shape dimension 1 .* is -3"):
        TensorStructInfo(shape=(n, IntImm(dtype="int64", value=-3)), dtype="float32")
    with pytest.raises(irc.IRTypeError, match="shape dimension 0 of \\(-2,\\) is -2"):
        TensorStructInfo(shape=(-2,), dtype="float32")
    with pytest.raises(irc.IRTypeError, match="shape dimension 0 is 'a'"):
        TensorStructInfo(shape=("a",), dtype="float32")
    with pytest.raises(irc.IRTypeError, match="dimensions cannot be negative"):
        irc.ir.tensor_sinfo((3, -1))
    zero = TensorStructInfo(shape=(IntImm(dtype="int64", value=0),), dtype="float32")
    assert zero.static_shape == (0,)


def test_tensor_struct_info_takes_python_ints():
    s = TensorStructInfo(shape=[2, np.int64(3)], dtype="float32")
    assert s.static_shape == (2, 3) and isinstance(s.shape, tuple)
    assert irc.ir.structural_equal(s, irc.ir.tensor_sinfo((2, 3), "float32"))
    assert 'R.Tensor((2, 3), dtype="float32")' == s.script().strip()


def test_buffers_refuse_negative_dimensions():
    with pytest.raises(irc.IRTypeError, match="buffer A: shape dimension 1 is -4"):
        tir.decl_buffer((4, -4), "float32", "A")
    assert tir.decl_buffer((0, 4), "float32", "B").shape[0].value == 0


def test_onnx_minus_one_dimension_is_symbolic():
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from irc.frontend.onnx import from_onnx

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    mod = from_onnx(model)
    (x,) = mod["main"].params
    first = x.struct_info.shape[0]
    assert isinstance(first, tir.Var) and x.struct_info.shape[1].value == 3
    assert_roundtrip(mod)
    with pytest.raises(irc.IRCError, match=r"shape_dict\['x'\] gives dimension 0 as -2"):
        from_onnx(model, shape_dict={"x": [-2, 3]})

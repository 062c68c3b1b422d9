"""What current Apache TVM (0.27) prints reads as the same IR as irc's canonical form."""

from pathlib import Path

import numpy as np
import pytest
from script_helpers import assert_roundtrip

import irc
from irc.ir import assert_structural_equal
from irc.tir import stmt as S

FIXTURES = Path(__file__).parent / "fixtures"
TVM027 = (FIXTURES / "tvm027_module.ir").read_text()
CANONICAL = (FIXTURES / "tvm027_canonical.ir").read_text()


def test_tvm027_text_parses_to_the_canonical_module():
    new = irc.parse(TVM027)
    canonical = irc.parse(CANONICAL)
    assert_structural_equal(new, canonical)
    assert new.script() == CANONICAL
    assert_roundtrip(new)


def test_tvm027_details():
    mod = irc.parse(TVM027)
    relu = mod["relu"]
    assert relu.attrs == {"op_pattern": 0, "tir.is_scheduled": True, "tir.noalias": True}
    assert relu.body.block.name == "root"
    assert relu.body.block.body.seq[0].body.body.block.annotations == {
        "meta_schedule.tiling_structure": "SSRSRS"}
    decl = mod["lowered"].body
    assert isinstance(decl, S.DeclBuffer) and decl.buffer.data is \
        mod["lowered"].buffer_map[mod["lowered"].params[0]].data
    call = mod["main"].body.blocks[0].bindings[0].value
    assert call.sinfo_args[0].dtype == "float32"


def test_view_as_other_dtype_and_decl_buffer():
    text = '''@T.prim_func(s_tir=True)
def f(A: T.Buffer((4, 8), "float16"), B: T.Buffer((4, 4), "float32")):
    A_words = A.view("uint32")
    D = T.decl_buffer((16,), "float32", data=B.data)
    E = T.decl_buffer((8,), "int8", scope="local")
    A_words[0, 0] = T.uint32(1)
    D[0] = T.float32(2.0)
    E[0] = T.int8(3)
'''
    f = irc.parse(text)
    decl = f.body
    assert [tuple(int(s) for s in decl.buffer.shape), decl.buffer.dtype] == [(4, 4), "uint32"]
    alloc = decl.body.body
    assert isinstance(alloc, S.Allocate) and alloc.scope == "local"
    assert_roundtrip(f)


def test_lowered_alloc_buffer_becomes_allocate():
    text = '''@T.prim_func
def f(A: T.Buffer((16,), "float32")):
    for i in range(4):
        tmp = T.alloc_buffer((4,), scope="local")
        tmp[0] = A[i]
        A[i] = tmp[0]
'''
    f = irc.parse(text)
    alloc = f.body.body
    assert isinstance(alloc, S.Allocate) and isinstance(alloc.body, S.DeclBuffer)
    assert_roundtrip(f)


def test_let_spellings():
    old = '''@T.prim_func
def f(A: T.Buffer((4,), "int32"), n: T.int32):
    x: T.int32 = n * 2
    A[0] = x
'''
    for spelling in ("x: T.let[T.int32] = n * 2", "x: T.let = n * 2", "x = n * 2"):
        assert_structural_equal(irc.parse(old), irc.parse(old.replace("x: T.int32 = n * 2",
                                                                      spelling)))


SYMBOLIC_RESHAPE = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 2, 3), dtype="float32")) -> R.Tensor(("n", 6), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            y = R.reshape(x, R.shape([n, 6]))
            z = R.nn.relu(y)
            R.output(z)
        return z
'''


def test_function_level_symbolic_declaration_and_reshape_to_it():
    """TVM prints ``n = T.int64()`` in a function's body after its parameters used
    ``"n"``; irc said "duplicate definition of 'n'". The reshape to the symbolic shape
    then compiles with the default pipeline and runs."""
    mod = irc.parse(SYMBOLIC_RESHAPE)
    assert_roundtrip(mod)
    without = irc.parse(SYMBOLIC_RESHAPE.replace("        n = T.int64()\n", ""))
    assert_structural_equal(mod, without)
    vm = irc.vm.VirtualMachine(irc.compile(mod, "llvm"))
    x = np.random.default_rng(0).random((5, 2, 3), dtype=np.float32)
    np.testing.assert_array_equal(vm["main"](x).numpy(), np.maximum(x.reshape(5, 6), 0))
    again = SYMBOLIC_RESHAPE.replace("n = T.int64()", "n = T.int32()")
    with pytest.raises(irc.IRCError, match="declares it again with another dtype"):
        irc.parse(again)


def test_several_symbolic_declarations_in_one_statement():
    """``m, n = T.int64(), T.int64()`` (TVM users write it) was refused."""
    text = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("m", "n"), dtype="float32")) -> R.Tensor(("n", "m"), dtype="float32"):
        m, n = T.int64(), T.int64()
        with R.dataflow():
            y = R.permute_dims(x, axes=[1, 0])
            z = R.reshape(y, R.shape([n, m]))
            R.output(z)
        return z
'''
    mod = irc.parse(text)
    assert_structural_equal(mod, irc.parse(text.replace("        m, n = T.int64(), T.int64()\n",
                                                        "")))
    vm = irc.vm.VirtualMachine(irc.compile(mod, "llvm"))
    x = np.random.default_rng(1).random((3, 5), dtype=np.float32)
    np.testing.assert_array_equal(vm["main"](x).numpy(), x.T)


def test_python_operators_on_graph_values():
    """``R.matmul(x, w) + b`` (TVM overloads the operators of graph values) was an error;
    a Python number becomes a scalar constant of the other operand's dtype."""
    text = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 4), dtype="float32"), w: R.Tensor((4, 3), dtype="float32"),
             b: R.Tensor((3,), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            y = R.matmul(x, w) + b
            z = y * 2.0 - b / b
            R.output(z)
        return z
'''
    explicit = text.replace("R.matmul(x, w) + b", "R.add(R.matmul(x, w), b)").replace(
        "y * 2.0 - b / b",
        'R.subtract(R.multiply(y, R.const(2.0, "float32")), R.divide(b, b))')
    mod = irc.parse(text)
    assert_structural_equal(mod, irc.parse(explicit))
    assert_roundtrip(mod)
    rng = np.random.default_rng(2)
    x, w = rng.random((2, 4), dtype=np.float32), rng.random((4, 3), dtype=np.float32)
    b = rng.random(3, dtype=np.float32) + 0.5
    vm = irc.vm.VirtualMachine(irc.compile(mod, "llvm"))
    np.testing.assert_allclose(vm["main"](x, w, b).numpy(), (x @ w + b) * 2 - 1, rtol=1e-5)
    with pytest.raises(irc.IRParseError, match="operator '%' does not apply to graph"):
        irc.parse(text.replace("y * 2.0 - b / b", "y % b"))


def test_tuple_unpacking_binds_each_field():
    """``a, b = R.split(x, 2)`` was refused ("a binding assigns one name")."""
    text = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 6), dtype="float32")) -> R.Tensor((2, 6), dtype="float32"):
        with R.dataflow():
            a, b = R.split(x, 2, axis=0)
            c = R.add(a, b)
            R.output(c)
        return c
'''
    mod = irc.parse(text)
    printed = mod.script()
    assert "a_b: R.Tuple(" in printed and "a: R.Tensor((2, 6)" in printed
    assert_roundtrip(mod)
    x = np.arange(24, dtype="float32").reshape(4, 6)
    vm = irc.vm.VirtualMachine(irc.compile(mod, "llvm"))
    np.testing.assert_array_equal(vm["main"](x).numpy(), x[:2] + x[2:])
    with pytest.raises(irc.IRCError, match="3 names are bound to a value"):
        irc.parse(text.replace("a, b = R.split", "a, b, d = R.split"))


def test_module_level_type_var_in_loop_function_buffers():
    """``n = TypeVar("n")`` at module level named dimensions of graph functions only;
    a loop function's ``T.Buffer((n, 4))`` was "a TypeVarDecl is not an integer"."""
    text = '''
n = TypeVar("n")

@I.ir_module
class Module:
    @T.prim_func
    def add_one(A: T.Buffer((n, 4), "float32"), B: T.Buffer((n, 4), "float32")):
        for i, j in T.grid(n, 4):
            B[i, j] = A[i, j] + T.float32(1)
'''
    mod = irc.parse(text)
    assert "n = T.int64()" in mod.script()
    assert_roundtrip(mod)
    a = np.random.default_rng(3).random((5, 4), dtype=np.float32)
    b = np.zeros_like(a)
    irc.build(mod, target="llvm")["add_one"](a, b)
    np.testing.assert_array_equal(b, a + 1)

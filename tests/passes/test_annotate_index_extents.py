"""AnnotateIndexExtents: which extent each integer parameter indexes, traced through the
operators that move values unchanged; and BindSymbolicVars, which sizes symbolic
dimensions."""

import pytest
from pass_helpers import check_pass, parse_module

import irc
from irc.passes import AnnotateIndexExtents, BindSymbolicVars, index_extents

BEFORE = '''
@I.ir_module
class Module:
    @R.function
    def main(ids: R.Tensor((2, 8), dtype="int32"), pos: R.Tensor((16,), dtype="int64"),
             cls: R.Tensor((4,), dtype="int64"), nd: R.Tensor((5, 2), dtype="int64"),
             shifted: R.Tensor((16,), dtype="int64"),
             table: R.Tensor((100, 6), dtype="float32")) -> R.Tensor((16, 6), dtype="float32"):
        R.func_attr({ATTRS})
        with R.dataflow():
            a = R.astype(ids, "int64")
            b = R.reshape(a, R.shape([16]))
            e = R.take(table, b, axis=0)
            short = R.strided_slice(table, axes=[0], begin=[0], end=[40])
            p = R.take(short, pos, axis=0)
            p2 = R.take(table, pos, axis=0)
            q = R.add(e, p)
            o = R.one_hot(cls, R.const([0, 1], "float32"), 10)
            g = R.gather_nd(R.zeros(R.shape([7, 30, 2]), "float32"), nd)
            s = R.add(shifted, R.const(1, "int64"))
            r = R.take(table, s, axis=0)
            R.output(q)
        return q
'''


def test_extents_through_casts_and_reshapes_smallest_wins():
    check_pass(AnnotateIndexExtents(), BEFORE.replace("ATTRS", '"num_input": 5'),
               BEFORE.replace("ATTRS", '"num_input": 5, "index_extents": {"ids": 100, '
                                       '"pos": 40, "cls": 10, "nd": 7}'))


def test_arithmetic_and_symbolic_extents_are_not_followed():
    mod = parse_module('''
        @R.function
        def main(i: R.Tensor((4,), dtype="int64"), t: R.Tensor(("n", 3), dtype="float32"),
                 j: R.Tensor((4,), dtype="int64")) -> R.Tensor((4, 3), dtype="float32"):
            with R.dataflow():
                k = R.multiply(j, R.const(2, "int64"))
                a = R.take(t, i, axis=0)
                b = R.take(R.ones(R.shape([9, 3]), "float32"), k, axis=0)
                c = R.add(a, b)
                R.output(c)
            return c
        ''')
    assert index_extents(mod["main"]) == {}
    assert AnnotateIndexExtents()(mod) is mod


def test_the_extents_reach_the_executable_and_its_random_inputs():
    mod = parse_module(BEFORE.replace("ATTRS", '"num_input": 5'))
    ex = irc.vm.compile(mod)
    assert ex.functions["main"].index_extents == {"ids": 100, "pos": 40, "cls": 10, "nd": 7}
    ids, pos, cls, nd, shifted, _ = ex.random_inputs("main", seed=1)
    assert 7 < ids.max() < 100 and 7 < pos.max() < 40 and 7 < cls.max() < 10
    assert nd.max() < 7 and shifted.max() < 8  # indexes nothing it reaches unchanged


SYMBOLIC = '''
@R.function
def main(x: R.Tensor(("n", "m"), dtype="float32"), y: R.Tensor(("n", "m"), dtype="float32")
         ) -> R.Tensor(("n * m",), dtype="float32"):
    n = T.int64()
    m = T.int64()
    with R.dataflow():
        z = R.add(x, y)
        f = R.reshape(z, R.shape([n * m]))
        R.output(f)
    return f
'''

SIZED = '''
@R.function
def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="float32")
         ) -> R.Tensor((6,), dtype="float32"):
    with R.dataflow():
        z = R.add(x, y)
        f = R.reshape(z, R.shape([6]))
        R.output(f)
    return f
'''


def test_bind_symbolic_vars():
    check_pass(BindSymbolicVars("main", {"n": 2, "m": 3}), SYMBOLIC, SIZED)


def test_bind_symbolic_vars_names_what_is_wrong():
    mod = parse_module(SYMBOLIC)
    with pytest.raises(irc.IRCError, match=r"N: main has no symbolic dimension of this name; "
                                           r"its parameters have n, m \(did you mean n\?\)"):
        BindSymbolicVars("main", {"N": 2})(mod)
    with pytest.raises(irc.IRCError, match="dimension n must be a positive integer, got 0"):
        BindSymbolicVars("main", {"n": 0})(mod)

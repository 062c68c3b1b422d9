"""FoldConstant: computations on constants evaluated at compile time."""

import numpy as np
from pass_helpers import check_pass, parse_module, prim_funcs, run_main

import irc
from irc import passes
from irc.ir import Constant

ADD_ONE = """
    @T.prim_func(private=True)
    def add_one(A: T.Buffer((T.int64(2), T.int64(3)), "float32"), B: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        for i, j in T.grid(T.int64(2), T.int64(3)):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1)

    @T.prim_func(private=True)
    def add(A: T.Buffer((T.int64(2), T.int64(3)), "float32"), B: T.Buffer((T.int64(2), T.int64(3)), "float32"), C: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        for i, j in T.grid(T.int64(2), T.int64(3)):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] + B[vi, vj]
"""  # noqa: E501 - IR text


def test_call_tir_chains_on_constants_are_evaluated():
    c = np.arange(6, dtype="float32").reshape(2, 3)
    before = "@I.ir_module\nclass Module:" + ADD_ONE + """
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        cls = Module
        with R.dataflow():
            lv0 = R.call_tir(cls.add_one, (metadata["relax.expr.Constant"][0],), out_sinfo=R.Tensor((2, 3), "float32"))
            lv1 = R.call_tir(cls.add_one, (lv0,), out_sinfo=R.Tensor((2, 3), "float32"))
            gv = R.call_tir(cls.add, (x, lv1), out_sinfo=R.Tensor((2, 3), "float32"))
            R.output(gv)
        return gv
"""  # noqa: E501 - IR text
    expected = "@I.ir_module\nclass Module:" + ADD_ONE + """
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        cls = Module
        with R.dataflow():
            lv0 = metadata["relax.expr.Constant"][1]
            lv1 = metadata["relax.expr.Constant"][2]
            gv = R.call_tir(cls.add, (x, metadata["relax.expr.Constant"][2]), out_sinfo=R.Tensor((2, 3), "float32"))
            R.output(gv)
        return gv
"""  # noqa: E501 - IR text
    out = check_pass(passes.FoldConstant(), before, expected, constants=[c, c + 1, c + 2])
    # after dead-code elimination only the add kernel remains
    cleaned = passes.DeadCodeElimination()(out)
    assert sorted(prim_funcs(cleaned)) == ["add"]
    np.testing.assert_allclose(run_main(cleaned, c), c + c + 2)


def test_graph_operators_tuples_and_projections_fold():
    w = np.arange(12, dtype="float32").reshape(3, 4)
    before = """
@R.function
def main(x: R.Tensor((2, 4), "float32")) -> R.Tensor((2, 3), "float32"):
    with R.dataflow():
        wt = R.permute_dims(metadata["relax.expr.Constant"][0], axes=[1, 0])
        t = (wt, metadata["relax.expr.Constant"][0])
        first = t[0]
        gv = R.matmul(x, first)
        R.output(gv)
    return gv
"""
    expected = """
@R.function
def main(x: R.Tensor((2, 4), "float32")) -> R.Tensor((2, 3), "float32"):
    with R.dataflow():
        wt = metadata["relax.expr.Constant"][1]
        t = (metadata["relax.expr.Constant"][1], metadata["relax.expr.Constant"][0])
        first = metadata["relax.expr.Constant"][1]
        gv = R.matmul(x, metadata["relax.expr.Constant"][1])
        R.output(gv)
    return gv
"""
    check_pass(passes.FoldConstant(), before, expected, constants=[w, w.T.copy()])


def test_size_limit_keeps_large_results_as_computations():
    text = """
@R.function
def main(x: R.Tensor((64, 64), "float32")) -> R.Tensor((64, 64), "float32"):
    with R.dataflow():
        z = R.ones(R.shape([64, 64]), "float32")
        gv = R.add(x, z)
        R.output(gv)
    return gv
"""
    mod = parse_module(text)
    assert passes.FoldConstant(size_limit=1000)(mod) is mod
    folded = passes.FoldConstant()(mod)
    value = folded["main"].body.blocks[0].bindings[0].value
    assert isinstance(value, Constant) and np.all(value.data == 1)


def test_large_foldings_are_compiled_and_match_numpy():
    w = np.random.default_rng(0).standard_normal((256, 160)).astype("float32")
    text = """
@R.function
def main(x: R.Tensor((2, 256), "float32")) -> R.Tensor((2, 160), "float32"):
    with R.dataflow():
        wt = R.permute_dims(metadata["relax.expr.Constant"][0], axes=[1, 0])
        w2 = R.permute_dims(wt, axes=[1, 0])
        gv = R.matmul(x, w2)
        R.output(gv)
    return gv
"""
    mod = passes.LegalizeOps()(parse_module(text, constants=[w]))
    folded = passes.DeadCodeElimination()(passes.FoldConstant()(passes.Normalize()(mod)))
    assert sorted(prim_funcs(folded)) == ["matmul"]
    (binding,) = folded["main"].body.blocks[0].bindings
    np.testing.assert_array_equal(binding.value.args[1].fields[1].data, w)


def test_bound_weights_lose_their_transposes_in_the_default_pipeline():
    text = """
@R.function
def main(x: R.Tensor((1, 16), "float32"), w: R.Tensor((10, 16), "float32")) -> R.Tensor((1, 10), "float32"):
    R.func_attr({"num_input": 1})
    with R.dataflow():
        wt = R.permute_dims(w, axes=None)
        gv = R.matmul(x, wt)
        R.output(gv)
    return gv
"""  # noqa: E501 - IR text
    w = np.random.default_rng(1).standard_normal((10, 16)).astype("float32")
    mod = passes.BindParams("main", {"w": w})(parse_module(text))
    # The function's struct info lists the parameters left, as the text reads back.
    assert [str(p) for p in mod["main"].struct_info.params] == \
        ['R.Tensor((1, 16), dtype="float32")']
    optimized = passes.get_pipeline("default")(mod)
    assert list(prim_funcs(optimized)) == ["matmul"]
    x = np.ones((1, 16), dtype="float32")
    np.testing.assert_allclose(run_main(optimized, x), x @ w.T, rtol=1e-5)
    assert irc.vm.VirtualMachine(irc.compile(mod))["main"](x).numpy().shape == (1, 10)

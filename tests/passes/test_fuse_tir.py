"""FuseTIR: each Primitive function becomes one loop function called by call_tir."""

import numpy as np
import pytest
from pass_helpers import check_pass, parse_module, prim_funcs, random_args, run_main

import irc
from irc import passes
from irc.ir import Function

PRIMS = """
    @T.prim_func(private=True)
    def matmul(A: T.Buffer((T.int64(4), T.int64(8)), "float32"), B: T.Buffer((T.int64(8), T.int64(4)), "float32"), T_matmul: T.Buffer((T.int64(4), T.int64(4)), "float32")):
        T.func_attr({"op_pattern": 4, "tir.noalias": True})
        for i, j, k in T.grid(T.int64(4), T.int64(4), T.int64(8)):
            with T.block("T_matmul"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    T_matmul[vi, vj] = T.float32(0)
                T_matmul[vi, vj] = T_matmul[vi, vj] + A[vi, vk] * B[vk, vj]

    @T.prim_func(private=True)
    def add(A: T.Buffer((T.int64(4), T.int64(4)), "float32"), B: T.Buffer((T.int64(4),), "float32"), T_add: T.Buffer((T.int64(4), T.int64(4)), "float32")):
        T.func_attr({"op_pattern": 0, "tir.noalias": True})
        for i, j in T.grid(T.int64(4), T.int64(4)):
            with T.block("T_add"):
                vi, vj = T.axis.remap("SS", [i, j])
                T_add[vi, vj] = A[vi, vj] + B[vj]

    @T.prim_func(private=True)
    def relu(A: T.Buffer((T.int64(4), T.int64(4)), "float32"), T_relu: T.Buffer((T.int64(4), T.int64(4)), "float32")):
        T.func_attr({"op_pattern": 0, "tir.noalias": True})
        for i, j in T.grid(T.int64(4), T.int64(4)):
            with T.block("T_relu"):
                vi, vj = T.axis.remap("SS", [i, j])
                T_relu[vi, vj] = T.max(A[vi, vj], T.float32(0))
"""  # noqa: E501 - IR text


def test_matmul_add_relu_becomes_one_loop_function():
    before = "@I.ir_module\nclass Module:" + PRIMS + """
    @R.function(private=True)
    def fused_matmul_add_relu(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 4), "float32"), b: R.Tensor((4,), "float32")) -> R.Tensor((4, 4), "float32"):
        R.func_attr({"Primitive": True})
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.matmul, (x, w), out_sinfo=R.Tensor((4, 4), "float32"))
            lv1 = R.call_tir(cls.add, (lv, b), out_sinfo=R.Tensor((4, 4), "float32"))
            gv = R.call_tir(cls.relu, (lv1,), out_sinfo=R.Tensor((4, 4), "float32"))
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 4), "float32"), b: R.Tensor((4,), "float32")) -> R.Tensor((4, 4), "float32"):
        cls = Module
        with R.dataflow():
            gv = cls.fused_matmul_add_relu(x, w, b)
            R.output(gv)
        return gv
"""  # noqa: E501 - IR text
    expected = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def fused_matmul_add_relu(p_x: T.Buffer((T.int64(4), T.int64(8)), "float32"), p_w: T.Buffer((T.int64(8), T.int64(4)), "float32"), p_b: T.Buffer((T.int64(4),), "float32"), T_relu: T.Buffer((T.int64(4), T.int64(4)), "float32")):
        T.func_attr({"tir.noalias": True})
        T_matmul_intermediate = T.alloc_buffer((T.int64(4), T.int64(4)))
        T_add_intermediate = T.alloc_buffer((T.int64(4), T.int64(4)))
        for i, j, k in T.grid(T.int64(4), T.int64(4), T.int64(8)):
            with T.block("T_matmul"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    T_matmul_intermediate[vi, vj] = T.float32(0)
                T_matmul_intermediate[vi, vj] = T_matmul_intermediate[vi, vj] + p_x[vi, vk] * p_w[vk, vj]
        for i, j in T.grid(T.int64(4), T.int64(4)):
            with T.block("T_add"):
                vi, vj = T.axis.remap("SS", [i, j])
                T_add_intermediate[vi, vj] = T_matmul_intermediate[vi, vj] + p_b[vj]
        for i, j in T.grid(T.int64(4), T.int64(4)):
            with T.block("T_relu"):
                vi, vj = T.axis.remap("SS", [i, j])
                T_relu[vi, vj] = T.max(T_add_intermediate[vi, vj], T.float32(0))

    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 4), "float32"), b: R.Tensor((4,), "float32")) -> R.Tensor((4, 4), "float32"):
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.fused_matmul_add_relu, (x, w, b), out_sinfo=R.Tensor((4, 4), "float32"))
            R.output(gv)
        return gv
"""  # noqa: E501 - IR text
    out = check_pass(passes.FuseTIR(), before, expected)
    args = random_args(out["main"])
    x, w, b = args
    np.testing.assert_allclose(run_main(out, *args), np.maximum(x @ w + b, 0), rtol=1e-5)


def test_a_loop_function_used_twice_is_copied_with_fresh_names():
    before = "@I.ir_module\nclass Module:" + PRIMS + """
    @R.function(private=True)
    def fused_relu_relu(x: R.Tensor((4, 4), "float32")) -> R.Tensor((4, 4), "float32"):
        R.func_attr({"Primitive": True})
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.relu, (x,), out_sinfo=R.Tensor((4, 4), "float32"))
            gv = R.call_tir(cls.relu, (lv,), out_sinfo=R.Tensor((4, 4), "float32"))
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4, 4), "float32")) -> R.Tensor((4, 4), "float32"):
        cls = Module
        with R.dataflow():
            gv = cls.fused_relu_relu(x)
            R.output(gv)
        return gv
"""
    mod = passes.FuseTIR()(parse_module(before))
    irc.ir.well_formed(mod)
    fused = prim_funcs(mod)["fused_relu_relu"]
    text = fused.script()
    assert 'T.block("T_relu")' in text and 'T.block("T_relu_1")' in text
    # print -> parse -> equal: names are unique enough to read back.
    again = irc.parse(mod.script())
    irc.ir.assert_structural_equal(mod, again)
    # relu (only used by the Primitive function) is gone with it; add and matmul were
    # never called and are left for DeadCodeElimination
    assert sorted(mod.names()) == ["add", "fused_relu_relu", "main", "matmul"]


def test_tuple_results_and_tuple_parameters_are_flattened():
    text = "@I.ir_module\nclass Module:" + PRIMS + """
    @R.function(private=True)
    def fused_pair(t: R.Tuple(R.Tensor((4, 4), "float32"), R.Tensor((4,), "float32"))) -> R.Tuple(R.Tensor((4, 4), "float32"), R.Tensor((4, 4), "float32")):
        R.func_attr({"Primitive": True})
        cls = Module
        with R.dataflow():
            a = t[0]
            lv = R.call_tir(cls.add, (a, t[1]), out_sinfo=R.Tensor((4, 4), "float32"))
            r = R.call_tir(cls.relu, (lv,), out_sinfo=R.Tensor((4, 4), "float32"))
            res = (lv, r)
            R.output(res)
        return res

    @R.function
    def main(x: R.Tensor((4, 4), "float32"), b: R.Tensor((4,), "float32")) -> R.Tuple(R.Tensor((4, 4), "float32"), R.Tensor((4, 4), "float32")):
        cls = Module
        with R.dataflow():
            t = (x, b)
            pair = cls.fused_pair(t)
            s = pair[0]
            r = pair[1]
            gv = R.call_tir(cls.add, (r, b), out_sinfo=R.Tensor((4, 4), "float32"))
            gv2 = R.call_tir(cls.add, (s, b), out_sinfo=R.Tensor((4, 4), "float32"))
            gv3 = R.call_tir(cls.relu, (gv2,), out_sinfo=R.Tensor((4, 4), "float32"))
            R.output(gv, gv3)
        return (gv, gv3)
"""  # noqa: E501 - IR text
    mod = passes.FuseTIR()(parse_module(text))
    irc.ir.well_formed(mod)
    fused = prim_funcs(mod)["fused_pair"]
    assert len(fused.params) == 4  # two inputs (the tuple's fields), two outputs
    main_calls = [b.value for blk in mod["main"].body.blocks for b in blk.bindings
                  if isinstance(b.value, irc.ir.Call) and b.value.args and
                  isinstance(b.value.args[0], irc.ir.GlobalVar)]
    assert main_calls[0].args[0].name_hint == "fused_pair"
    x = np.random.default_rng(0).standard_normal((4, 4)).astype("float32")
    b = np.arange(4, dtype="float32")
    ex = irc.vm.compile(mod, "llvm", pipeline=None)
    gv, gv3 = irc.vm.VirtualMachine(ex)["main"](x, b)
    np.testing.assert_allclose(gv.numpy(), np.maximum(x + b, 0) + b, rtol=1e-6)
    np.testing.assert_allclose(gv3.numpy(), np.maximum(x + 2 * b, 0), rtol=1e-6)


def test_symbolic_shapes_are_the_graph_variables():
    text = """
@R.function
def main(x: R.Tensor(("n", 8), "float32"), b: R.Tensor((8,), "float32")) -> R.Tensor(("n", 8), "float32"):
    with R.dataflow():
        lv = R.exp(x)
        lv1 = R.add(lv, b)
        gv = R.nn.relu(lv1)
        R.output(gv)
    return gv
"""  # noqa: E501 - IR text
    mod = parse_module(text)
    fused = irc.passes.get_pipeline("default")(mod)
    irc.ir.well_formed(fused)
    assert list(prim_funcs(fused)) == ["fused_exp_add_relu"]
    vm = irc.vm.VirtualMachine(irc.vm.compile(fused, "llvm", pipeline=None))
    b = np.linspace(-1, 1, 8).astype("float32")
    for n in (1, 5):
        x = np.random.default_rng(n).standard_normal((n, 8)).astype("float32")
        np.testing.assert_allclose(vm["main"](x, b).numpy(), np.maximum(np.exp(x) + b, 0),
                                   rtol=1e-5)


def test_unsupported_bodies_are_reported():
    text = "@I.ir_module\nclass Module:" + PRIMS + """
    @R.function(private=True)
    def fused_bad(x: R.Tensor((4, 4), "float32")) -> R.Tensor((4, 4), "float32"):
        R.func_attr({"Primitive": True})
        with R.dataflow():
            gv = R.exp(x)
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4, 4), "float32")) -> R.Tensor((4, 4), "float32"):
        cls = Module
        with R.dataflow():
            gv = cls.fused_bad(x)
            R.output(gv)
        return gv
"""
    with pytest.raises(irc.IRCError, match="fused_bad.*not a call_tir"):
        passes.FuseTIR()(parse_module(text))


def test_modules_without_primitive_functions_are_untouched():
    mod = parse_module("@I.ir_module\nclass Module:" + PRIMS)
    assert passes.FuseTIR()(mod) is mod
    assert not any(isinstance(f, Function) for f in mod.functions.values())


def test_identical_groups_share_one_kernel():
    group = """
    @R.function(private=True)
    def NAME(x: R.Tensor((4, 4), "float32")) -> R.Tensor((4, 4), "float32"):
        R.func_attr({"Primitive": True})
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.relu, (x,), out_sinfo=R.Tensor((4, 4), "float32"))
            gv = R.call_tir(cls.relu, (lv,), out_sinfo=R.Tensor((4, 4), "float32"))
            R.output(gv)
        return gv
"""
    text = "@I.ir_module\nclass Module:" + PRIMS + group.replace("NAME", "fused_relu_relu") + \
        group.replace("NAME", "fused_relu_relu1") + """
    @R.function
    def main(x: R.Tensor((4, 4), "float32")) -> R.Tensor((4, 4), "float32"):
        cls = Module
        with R.dataflow():
            a = cls.fused_relu_relu(x)
            gv = cls.fused_relu_relu1(a)
            R.output(gv)
        return gv
"""
    mod = passes.FuseTIR()(parse_module(text))
    irc.ir.well_formed(mod)
    assert sorted(prim_funcs(mod)) == ["add", "fused_relu_relu", "matmul"]
    x = np.linspace(-2, 2, 16, dtype="float32").reshape(4, 4)
    np.testing.assert_allclose(run_main(mod, x), np.maximum(x, 0))

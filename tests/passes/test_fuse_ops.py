"""FuseOps: call_tir bindings grouped into Primitive functions by the classic partition."""

from pass_helpers import check_pass, parse_module

from irc import passes
from irc.ir import Function

# Loop functions (with their op_pattern) shared by the Before/Expected modules.
PRIMS = """
    @T.prim_func(private=True)
    def matmul(A: T.Buffer((T.int64(4), T.int64(8)), "float32"), B: T.Buffer((T.int64(8), T.int64(4)), "float32"), C: T.Buffer((T.int64(4), T.int64(4)), "float32")):
        T.func_attr({"op_pattern": 4, "tir.noalias": True})
        for i, j, k in T.grid(T.int64(4), T.int64(4), T.int64(8)):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @T.prim_func(private=True)
    def add(A: T.Buffer((T.int64(4), T.int64(4)), "float32"), B: T.Buffer((T.int64(4),), "float32"), C: T.Buffer((T.int64(4), T.int64(4)), "float32")):
        T.func_attr({"op_pattern": 0, "tir.noalias": True})
        for i, j in T.grid(T.int64(4), T.int64(4)):
            with T.block("T_add"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] + B[vj]

    @T.prim_func(private=True)
    def relu(A: T.Buffer((T.int64(4), T.int64(4)), "float32"), B: T.Buffer((T.int64(4), T.int64(4)), "float32")):
        T.func_attr({"op_pattern": 0, "tir.noalias": True})
        for i, j in T.grid(T.int64(4), T.int64(4)):
            with T.block("T_relu"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T.max(A[vi, vj], T.float32(0))

    @T.prim_func(private=True)
    def transpose(A: T.Buffer((T.int64(4), T.int64(4)), "float32"), B: T.Buffer((T.int64(4), T.int64(4)), "float32")):
        T.func_attr({"op_pattern": 2, "tir.noalias": True})
        for i, j in T.grid(T.int64(4), T.int64(4)):
            with T.block("T_transpose"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vj, vi]

    @T.prim_func(private=True)
    def sum(A: T.Buffer((T.int64(4), T.int64(4)), "float32"), B: T.Buffer((T.int64(4),), "float32")):
        T.func_attr({"op_pattern": 3, "tir.noalias": True})
        for i, k in T.grid(T.int64(4), T.int64(4)):
            with T.block("A_red"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]
"""  # noqa: E501 - IR text


def _module(graph: str) -> str:
    return "@I.ir_module\nclass Module:" + PRIMS + graph


def test_matmul_takes_its_epilogue_and_a_reduction_its_elementwise_producer():
    before = _module("""
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 4), "float32"), b: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.matmul, (x, w), out_sinfo=R.Tensor((4, 4), "float32"))
            lv1 = R.call_tir(cls.add, (lv, b), out_sinfo=R.Tensor((4, 4), "float32"))
            lv2 = R.call_tir(cls.relu, (lv1,), out_sinfo=R.Tensor((4, 4), "float32"))
            lv3 = R.call_tir(cls.transpose, (lv2,), out_sinfo=R.Tensor((4, 4), "float32"))
            lv4 = R.call_tir(cls.relu, (lv3,), out_sinfo=R.Tensor((4, 4), "float32"))
            gv = R.call_tir(cls.sum, (lv4,), out_sinfo=R.Tensor((4,), "float32"))
            R.output(gv)
        return gv
""")  # noqa: E501 - IR text
    expected = _module("""
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

    @R.function(private=True)
    def fused_relu_sum(lv3: R.Tensor((4, 4), "float32")) -> R.Tensor((4,), "float32"):
        R.func_attr({"Primitive": True})
        cls = Module
        with R.dataflow():
            lv4 = R.call_tir(cls.relu, (lv3,), out_sinfo=R.Tensor((4, 4), "float32"))
            gv = R.call_tir(cls.sum, (lv4,), out_sinfo=R.Tensor((4,), "float32"))
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 4), "float32"), b: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Module
        with R.dataflow():
            lv2 = cls.fused_matmul_add_relu(x, w, b)
            lv3 = R.call_tir(cls.transpose, (lv2,), out_sinfo=R.Tensor((4, 4), "float32"))
            gv = cls.fused_relu_sum(lv3)
            R.output(gv)
        return gv
""")  # noqa: E501 - IR text
    check_pass(passes.FuseOps(), before, expected)


def test_diamonds_fuse_into_the_post_dominator_and_block_outputs_end_groups():
    before = _module("""
    @R.function
    def main(x: R.Tensor((4, 4), "float32"), b: R.Tensor((4,), "float32")) -> R.Tensor((4, 4), "float32"):
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.relu, (x,), out_sinfo=R.Tensor((4, 4), "float32"))
            lv1 = R.call_tir(cls.add, (lv, b), out_sinfo=R.Tensor((4, 4), "float32"))
            lv2 = R.call_tir(cls.transpose, (lv,), out_sinfo=R.Tensor((4, 4), "float32"))
            lv3 = R.call_tir(cls.relu, (lv2,), out_sinfo=R.Tensor((4, 4), "float32"))
            gv1 = R.call_tir(cls.relu, (lv1,), out_sinfo=R.Tensor((4, 4), "float32"))
            lv4 = R.call_tir(cls.add, (gv1, b), out_sinfo=R.Tensor((4, 4), "float32"))
            gv = R.call_tir(cls.add, (lv4, lv3), out_sinfo=R.Tensor((4, 4), "float32"))
            R.output(gv, gv1)
        return gv
""")  # noqa: E501 - IR text
    # lv feeds two branches, one of which ends at the block output gv1: it has no
    # post-dominator and stays alone; the rest forms two groups.
    expected = _module("""
    @R.function(private=True)
    def fused_add_relu(lv: R.Tensor((4, 4), "float32"), b: R.Tensor((4,), "float32")) -> R.Tensor((4, 4), "float32"):
        R.func_attr({"Primitive": True})
        cls = Module
        with R.dataflow():
            lv1 = R.call_tir(cls.add, (lv, b), out_sinfo=R.Tensor((4, 4), "float32"))
            gv1 = R.call_tir(cls.relu, (lv1,), out_sinfo=R.Tensor((4, 4), "float32"))
            R.output(gv1)
        return gv1

    @R.function(private=True)
    def fused_transpose_relu_add_add(lv: R.Tensor((4, 4), "float32"), gv1: R.Tensor((4, 4), "float32"), b: R.Tensor((4,), "float32")) -> R.Tensor((4, 4), "float32"):
        R.func_attr({"Primitive": True})
        cls = Module
        with R.dataflow():
            lv2 = R.call_tir(cls.transpose, (lv,), out_sinfo=R.Tensor((4, 4), "float32"))
            lv3 = R.call_tir(cls.relu, (lv2,), out_sinfo=R.Tensor((4, 4), "float32"))
            lv4 = R.call_tir(cls.add, (gv1, b), out_sinfo=R.Tensor((4, 4), "float32"))
            gv = R.call_tir(cls.add, (lv4, lv3), out_sinfo=R.Tensor((4, 4), "float32"))
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4, 4), "float32"), b: R.Tensor((4,), "float32")) -> R.Tensor((4, 4), "float32"):
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.relu, (x,), out_sinfo=R.Tensor((4, 4), "float32"))
            gv1 = cls.fused_add_relu(lv, b)
            gv = cls.fused_transpose_relu_add_add(lv, gv1, b)
            R.output(gv, gv1)
        return gv
""")  # noqa: E501 - IR text
    check_pass(passes.FuseOps(), before, expected)


CHAIN = _module("""
    @R.function
    def main(x: R.Tensor((4, 4), "float32")) -> R.Tensor((4, 4), "float32"):
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.relu, (x,), out_sinfo=R.Tensor((4, 4), "float32"))
            lv1 = R.call_tir(cls.relu, (lv,), out_sinfo=R.Tensor((4, 4), "float32"))
            lv2 = R.call_tir(cls.relu, (lv1,), out_sinfo=R.Tensor((4, 4), "float32"))
            lv3 = R.call_tir(cls.relu, (lv2,), out_sinfo=R.Tensor((4, 4), "float32"))
            gv = R.call_tir(cls.relu, (lv3,), out_sinfo=R.Tensor((4, 4), "float32"))
            R.output(gv)
        return gv
""")


def _group_sizes(mod) -> list[int]:
    return sorted(len(f.body.blocks[0].bindings) for f in mod.functions.values()
                  if isinstance(f, Function) and f.attrs.get("Primitive"))


def test_max_fuse_depth_bounds_groups():
    mod = parse_module(CHAIN)
    assert _group_sizes(passes.FuseOps()(mod)) == [5]
    # relu x5 with groups of at most two: (relu relu) (relu relu) relu
    assert _group_sizes(passes.FuseOps(max_fuse_depth=2)(mod)) == [2, 2]
    names = passes.FuseOps(max_fuse_depth=2)(mod).names()
    assert "fused_relu_relu" in names and "fused_relu_relu1" in names


def test_fusion_is_off_at_opt_level_0_and_without_patterns():
    mod = parse_module(CHAIN)
    with passes.PassContext(opt_level=0):
        assert passes.FuseOps()(mod) is mod
    no_patterns = parse_module(CHAIN.replace('"op_pattern": 0, ', ""))
    assert passes.FuseOps()(no_patterns) is no_patterns

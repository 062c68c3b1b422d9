"""LegalizeOps, Before/Expected: a graph operator becomes ``R.call_tir`` of the loop
function its topi rule defines (broadcasting, a reduction with its init, a symbolic
dimension bound by ``T.match_buffer``)."""

from pass_helpers import check_pass

from irc import passes

ADD_BEFORE = """
@R.function
def main(x: R.Tensor((4, 8), "float32"), y: R.Tensor((8,), "float32")) -> R.Tensor((4, 8), "float32"):
    z = R.add(x, y)
    return z
"""  # noqa: E501 - IR text

ADD_EXPECTED = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(p0: T.Buffer((T.int64(4), T.int64(8)), "float32"), p1: T.Buffer((T.int64(8),), "float32"), T_add: T.Buffer((T.int64(4), T.int64(8)), "float32")):
        T.func_attr({"tir.noalias": True})
        for ax0, ax1 in T.grid(T.int64(4), T.int64(8)):
            with T.block("T_add"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(p0[v_ax0, v_ax1], p1[v_ax1])
                T.writes(T_add[v_ax0, v_ax1])
                T_add[v_ax0, v_ax1] = p0[v_ax0, v_ax1] + p1[v_ax1]

    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32"), y: R.Tensor((8,), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        cls = Module
        z = R.call_tir(cls.add, (x, y), out_sinfo=R.Tensor((4, 8), dtype="float32"))
        return z
"""  # noqa: E501 - IR text

SUM_BEFORE = """
@R.function
def main(x: R.Tensor((4, 8), "float32")) -> R.Tensor((4,), "float32"):
    z = R.sum(x, axis=[1])
    return z
"""

SUM_EXPECTED = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def sum(p0: T.Buffer((T.int64(4), T.int64(8)), "float32"), p0_red: T.Buffer((T.int64(4),), "float32")):
        T.func_attr({"tir.noalias": True})
        for ax0, k1 in T.grid(T.int64(4), T.int64(8)):
            with T.block("p0_red"):
                v_ax0, v_k1 = T.axis.remap("SR", [ax0, k1])
                T.reads(p0[v_ax0, v_k1])
                T.writes(p0_red[v_ax0])
                with T.init():
                    p0_red[v_ax0] = T.float32(0.0)
                p0_red[v_ax0] = p0_red[v_ax0] + p0[v_ax0, v_k1]

    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        z = R.call_tir(cls.sum, (x,), out_sinfo=R.Tensor((4,), dtype="float32"))
        return z
"""  # noqa: E501 - IR text

RELU_BEFORE = """
@R.function
def main(x: R.Tensor(("n", 8), "float32")) -> R.Tensor(("n", 8), "float32"):
    n = T.int64()
    z = R.nn.relu(x)
    return z
"""

RELU_EXPECTED = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def relu(var_p0: T.handle, var_T_relu: T.handle):
        T.func_attr({"tir.noalias": True})
        n = T.int64()
        p0 = T.match_buffer(var_p0, (n, T.int64(8)), "float32")
        T_relu = T.match_buffer(var_T_relu, (n, T.int64(8)), "float32")
        for ax0, ax1 in T.grid(n, T.int64(8)):
            with T.block("T_relu"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(p0[v_ax0, v_ax1])
                T.writes(T_relu[v_ax0, v_ax1])
                T_relu[v_ax0, v_ax1] = T.max(p0[v_ax0, v_ax1], T.float32(0.0))

    @R.function
    def main(x: R.Tensor(("n", 8), dtype="float32")) -> R.Tensor(("n", 8), dtype="float32"):
        n = T.int64()
        cls = Module
        z = R.call_tir(cls.relu, (x,), out_sinfo=R.Tensor((n, 8), dtype="float32"))
        return z
"""


def test_broadcasting_add():
    check_pass(passes.LegalizeOps(), ADD_BEFORE, ADD_EXPECTED)


def test_reduction_with_its_init():
    check_pass(passes.LegalizeOps(), SUM_BEFORE, SUM_EXPECTED)


def test_symbolic_dimension_bound_by_match_buffer():
    check_pass(passes.LegalizeOps(), RELU_BEFORE, RELU_EXPECTED)

"""DeadCodeElimination: unused bindings and unreachable functions removed."""

from pass_helpers import check_pass, parse_module

from irc import passes


def test_unused_pure_bindings_go_in_every_block():
    before = """
@R.function
def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
    with R.dataflow():
        a = R.exp(x)
        b = R.log(a)
        gv = R.add(x, x)
        unused_out = R.multiply(x, x)
        R.output(gv, unused_out)
    c = R.nn.relu(gv)
    return gv
"""
    expected = """
@R.function
def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
    with R.dataflow():
        gv = R.add(x, x)
        R.output(gv)
    return gv
"""
    check_pass(passes.DeadCodeElimination(), before, expected)


def test_impure_calls_and_match_casts_are_kept():
    text = """
@R.function(pure=False)
def main(x: R.Tensor(ndim=1, dtype="float32")) -> R.Tensor(ndim=1, dtype="float32"):
    n = T.int64()
    y = R.match_cast(x, R.Tensor((n,), "float32"))
    z = R.call_packed("print_tensor", x, sinfo_args=R.Object)
    return x
"""
    mod = parse_module(text)
    out = passes.DeadCodeElimination()(mod)
    assert len(out["main"].body.blocks[0].bindings) == 2


def test_unreachable_functions_go_and_graph_functions_stay():
    before = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def used(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi] + T.float32(1)

    @T.prim_func(private=True)
    def unused(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi]

    @T.prim_func
    def public_kernel(A: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("A"):
                vi = T.axis.spatial(4, i)
                A[vi] = T.float32(0)

    @R.function(private=True)
    def dead_fused(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        R.func_attr({"Primitive": True})
        return x

    @R.function
    def helper(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        return x

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.used, (x,), out_sinfo=R.Tensor((4,), "float32"))
            R.output(gv)
        return gv
"""
    mod = parse_module(before)
    out = passes.DeadCodeElimination()(mod)
    assert sorted(out.names()) == ["helper", "main", "public_kernel", "used"]
    assert sorted(passes.DeadCodeElimination(["unused"])(mod).names()) == \
        ["helper", "main", "public_kernel", "unused", "used"]


def test_clean_module_is_returned_unchanged():
    text = """
@R.function
def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
    with R.dataflow():
        gv = R.exp(x)
        R.output(gv)
    return gv
"""
    mod = parse_module(text)
    assert passes.DeadCodeElimination()(mod) is mod

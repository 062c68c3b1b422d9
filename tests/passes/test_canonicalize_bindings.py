"""CanonicalizeBindings: trivial bindings removed, their values propagated."""

from pass_helpers import check_pass, parse_module

from irc import passes


def test_var_to_var_bindings_are_removed():
    before = """
@R.function
def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
    with R.dataflow():
        a = x
        b = a
        c = R.add(b, y)
        gv = R.multiply(c, a)
        R.output(gv)
    return gv
"""
    expected = """
@R.function
def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
    with R.dataflow():
        c = R.add(x, y)
        gv = R.multiply(c, x)
        R.output(gv)
    return gv
"""
    check_pass(passes.CanonicalizeBindings(), before, expected)


def test_block_output_aliasing_a_dataflow_var_binds_the_value_directly():
    before = """
@R.function
def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
    with R.dataflow():
        lv = R.exp(x)
        lv1 = R.log(lv)
        gv = lv1
        R.output(gv)
    return gv
"""
    expected = """
@R.function
def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
    with R.dataflow():
        lv = R.exp(x)
        gv = R.log(lv)
        R.output(gv)
    return gv
"""
    check_pass(passes.CanonicalizeBindings(), before, expected)


def test_projection_of_a_tuple_literal_and_trivial_match_cast():
    before = """
@R.function
def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
    with R.dataflow():
        t = (x, y)
        a = t[1]
        b = R.match_cast(a, R.Tensor((4,), "float32"))
        gv = R.add(b, t[0])
        R.output(gv)
    return gv
"""
    expected = """
@R.function
def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
    with R.dataflow():
        t = (x, y)
        gv = R.add(y, t[0])
        R.output(gv)
    return gv
"""
    check_pass(passes.CanonicalizeBindings(), before, expected)


def test_refining_bindings_are_kept():
    text = """
@R.function
def main(x: R.Tensor(("n",), "float32")) -> R.Tensor((4,), "float32"):
    with R.dataflow():
        a = R.match_cast(x, R.Tensor((4,), "float32"))
        gv: R.Tensor((4,), "float32") = R.exp(a)
        R.output(gv)
    return gv
"""
    mod = parse_module(text)
    assert passes.CanonicalizeBindings()(mod) is mod


def test_nothing_to_do_returns_the_same_module():
    text = """
@R.function
def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
    with R.dataflow():
        gv = R.exp(x)
        R.output(gv)
    return gv
"""
    mod = parse_module(text)
    assert passes.CanonicalizeBindings()(mod) is mod

"""The dataflow pattern language and the pattern tables (``irc.dispatch``): match and
no-match pairs written as IR text."""

import numpy as np
import pytest

import irc
from irc import passes
from irc.dispatch import (
    PatternCheckContext,
    PatternEntry,
    as_entry,
    external_uses,
    find_matches,
    get_pattern,
    get_patterns_with_prefix,
    is_const,
    is_op,
    is_tuple,
    is_tuple_get_item,
    match,
    register_patterns,
    wildcard,
)
from irc.ir import Constant, Function, IRCError, IRModule, IRTypeError, VarBinding

# Seed 003's model, as the nn frontend exports it.
SEED_003 = """
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
"""  # noqa: E501 - IR text

LINEAR = """
@R.function
def main(x: R.Tensor((1, 784), "float32"), w: R.Tensor((256, 784), "float32"), b: R.Tensor((256,), "float32")):
    with R.dataflow():
        lv0 = R.permute_dims(w, axes=None)
        lv1 = R.matmul(x, lv0, out_dtype="void")
        lv2 = R.add(lv1, b)
        gv = R.nn.relu(lv2)
        R.output(gv)
    return gv
"""  # noqa: E501 - IR text


def linear_pattern():
    """``add(matmul(x, permute_dims(w)), b)`` and its wildcards."""
    x, w, b = wildcard(), wildcard(), wildcard()
    return is_op("add")(is_op("matmul")(x, is_op("permute_dims")(w)), b), (x, w, b)


def relu(p):
    return is_op("nn.relu")(p)


def parse_func(text, name="main"):
    out = irc.parse(text)
    return out if isinstance(out, Function) else out[name]


def matches_in(func, pattern, **kwargs):
    """The matches of ``pattern`` in the first dataflow block of ``func``."""
    block = func.body.blocks[0]
    return find_matches(pattern, block, external_uses(func, block), **kwargs)


def names(vars_or_bindings):
    return [getattr(v, "var", v).name_hint for v in vars_or_bindings]


def binding_values(func):
    return {b.var: b.value for b in func.body.blocks[0].bindings if isinstance(b, VarBinding)}


def var_named(func, name):
    return next(b.var for b in func.body.blocks[0].bindings if b.var.name_hint == name)


# --- matching --------------------------------------------------------------------------


def test_seed_linear_relu_matches_with_inputs_in_first_use_order():
    func = parse_func(SEED_003, "forward")
    linear, (x, w, b) = linear_pattern()
    pattern = relu(linear)
    (m,) = matches_in(func, pattern)
    assert m.root.name_hint == "relu"
    assert names(m.bindings) == ["permute_dims", "matmul", "add", "relu"]
    # the order seed 003's cuBLAS call takes its arguments in
    assert names(m.inputs) == ["fc1_weight", "x", "fc1_bias"]
    assert m.matched[pattern] is m.root
    assert m.matched[linear] is var_named(func, "add")
    assert m.matched[w] is func.params[1] and m.matched[b] is func.params[2]
    assert m.value_of(linear).op.name == "add"
    # both layers have a transposed matmul; only the first has a bias and an activation
    transposed = is_op("matmul")(wildcard(), is_op("permute_dims")(wildcard()))
    assert [names(m.bindings) for m in matches_in(func, transposed)] == [
        ["permute_dims", "matmul"], ["permute_dims1", "matmul1"]]


def test_match_looks_through_bindings_and_a_wildcard_stops_at_the_variable():
    func = parse_func(LINEAR)
    values = binding_values(func)
    w, x, b = wildcard(), wildcard(), wildcard()
    mm = is_op("matmul")(w, x)
    pattern = is_op("add")(mm, b)
    got = match(pattern, var_named(func, "lv2"), values)
    assert got is not None
    assert got[mm] is var_named(func, "lv1")
    assert got[x] is var_named(func, "lv0")  # a wildcard does not look through lv0
    assert got[b] is func.params[2]
    # without the block's bindings lv1 is only a variable
    assert match(pattern, var_named(func, "lv2")) is None
    assert match(pattern, values[var_named(func, "lv2")], values) is not None
    assert match(is_op("nn.relu")(pattern), var_named(func, "lv2"), values) is None


def test_a_pattern_object_used_twice_must_meet_the_same_expression():
    func = parse_func("""
@R.function
def main(a: R.Tensor((4,), "float32"), b: R.Tensor((4,), "float32")):
    with R.dataflow():
        lv0 = R.add(a, a)
        gv = R.add(lv0, b)
        R.output(gv)
    return gv
""")
    values = binding_values(func)
    x = wildcard()
    same = is_op("add")(x, x)
    assert match(same, var_named(func, "lv0"), values) is not None
    assert match(same, var_named(func, "gv"), values) is None
    assert names(m.root for m in matches_in(func, same)) == ["lv0"]


def test_optional_relu_matches_the_longest_chain_else_the_shorter():
    linear, _ = linear_pattern()
    pattern = linear.optional(relu)
    (m,) = matches_in(parse_func(LINEAR), pattern)
    assert names(m.bindings) == ["lv0", "lv1", "lv2", "gv"]
    without = parse_func("""
@R.function
def main(x: R.Tensor((1, 784), "float32"), w: R.Tensor((256, 784), "float32"), b: R.Tensor((256,), "float32")):
    with R.dataflow():
        lv0 = R.permute_dims(w, axes=None)
        lv1 = R.matmul(x, lv0, out_dtype="void")
        gv = R.add(lv1, b)
        R.output(gv)
    return gv
""")  # noqa: E501 - IR text
    (m,) = matches_in(without, pattern)
    assert names(m.bindings) == ["lv0", "lv1", "gv"]
    assert pattern.left not in m.matched and m.matched[linear] is m.root


def test_optional_falls_back_when_the_longer_match_would_hide_a_used_value():
    func = parse_func("""
@R.function
def main(x: R.Tensor((1, 784), "float32"), w: R.Tensor((256, 784), "float32"), b: R.Tensor((256,), "float32")):
    with R.dataflow():
        lv0 = R.permute_dims(w, axes=None)
        lv1 = R.matmul(x, lv0, out_dtype="void")
        lv2 = R.add(lv1, b)
        lv3 = R.nn.relu(lv2)
        gv = R.multiply(lv3, lv2)
        R.output(gv)
    return gv
""")  # noqa: E501 - IR text
    linear, _ = linear_pattern()
    (m,) = matches_in(func, linear.optional(relu))
    assert m.root.name_hint == "lv2"
    assert names(m.bindings) == ["lv0", "lv1", "lv2"]


def test_alternatives_are_tried_in_order():
    text = """
@R.function
def main(x: R.Tensor((2, 8), "float32"), w: R.Tensor((8, 8), "float32")):
    with R.dataflow():
        lv0 = R.matmul(x, w, out_dtype="void")
        gv = R.nn.{act}(lv0)
        R.output(gv)
    return gv
"""
    mm = is_op("matmul")(wildcard(), wildcard())
    by_relu, by_silu = is_op("nn.relu")(mm), is_op("nn.silu")(mm)
    pattern = by_relu | by_silu
    (m,) = matches_in(parse_func(text.format(act="silu")), pattern)
    assert by_silu in m.matched and by_relu not in m.matched
    assert names(m.bindings) == ["lv0", "gv"]
    (m,) = matches_in(parse_func(text.format(act="relu")), pattern)
    assert by_relu in m.matched and by_silu not in m.matched
    assert matches_in(parse_func(text.format(act="gelu")), pattern) == []


def test_constants_match_after_bind_params():
    mod = IRModule(functions={"main": parse_func(LINEAR)})
    x = wildcard()
    weight = is_const()
    pattern = is_op("matmul")(x, is_op("permute_dims")(weight))
    assert matches_in(mod["main"], pattern) == []
    w = np.ones((256, 784), "float32")
    bound = passes.BindParams("main", {"w": w})(mod)["main"]
    (m,) = matches_in(bound, pattern)
    assert names(m.bindings) == ["lv0", "lv1"]
    assert isinstance(m.matched[weight], Constant)
    assert m.inputs[0] is m.matched[weight] and m.inputs[1] is bound.params[0]


CONV = """
@R.function
def main(x: R.Tensor(("n", 3, 8, 8), "float16"), w: R.Tensor((4, 3, 3, 3), "float16")):
    with R.dataflow():
        gv = R.nn.conv2d(x, w, strides=[1, 1], padding=[1, 1], out_dtype="float32")
        R.output(gv)
    return gv
"""


@pytest.mark.parametrize("constrain, found", [
    (lambda p: p.has_attr({"strides": [1, 1], "data_layout": "NCHW"}), True),
    (lambda p: p.has_attr({"strides": (2, 2)}), False),
    (lambda p: p.has_attr({"no_such_attribute": 1}), False),
    (lambda p: p.has_dtype("float32"), True),
    (lambda p: p.has_dtype("float16"), False),
    (lambda p: p.has_shape([None, 4, 8, 8]), True),
    (lambda p: p.has_shape([1, 4, 8, 8]), False),  # the batch is symbolic
    (lambda p: p.has_shape([None, 4, 8]), False),
    (lambda p: p.has_dtype("float32").has_shape([None, 4, None, 8]), True),
])
def test_attribute_dtype_and_shape_constraints_on_the_call(constrain, found):
    conv = is_op("relax.nn.conv2d")(wildcard(), wildcard())
    assert bool(matches_in(parse_func(CONV), constrain(conv))) == found


@pytest.mark.parametrize("operand, found", [
    (wildcard().has_dtype("float16"), True),
    (wildcard().has_dtype("float32"), False),
    (wildcard().has_shape([None, 3, 8, 8]), True),
    (wildcard().has_shape([4, 3, 3, 3]), False),
])
def test_constraints_on_an_input(operand, found):
    conv = is_op("nn.conv2d")(operand, wildcard().has_shape([4, 3, 3, 3]))
    assert bool(matches_in(parse_func(CONV), conv)) == found


SPLIT = """
@R.function
def main(x: R.Tensor((2, 8), "float32")):
    with R.dataflow():
        lv0 = R.split(x, indices_or_sections=2, axis=1)
        lv1 = lv0[0]
        gv = R.nn.relu(lv1)
        {more}
        R.output(gv)
    return gv
"""


@pytest.mark.parametrize("index, more, found", [
    (0, "", True),
    (None, "", True),
    (1, "", False),
    (0, "lv2 = lv0[1]", False),  # the split is read outside the match
])
def test_tuple_get_item(index, more, found):
    split = is_op("split")(wildcard())
    pattern = relu(is_tuple_get_item(split, index))
    got = matches_in(parse_func(SPLIT.format(more=more)), pattern)
    assert bool(got) == found
    if found:
        assert names(got[0].bindings) == ["lv0", "lv1", "gv"]


def test_tuple_of_fields():
    func = parse_func("""
@R.function
def main(x: R.Tensor((2, 8), "float32"), y: R.Tensor((2, 8), "float32")):
    with R.dataflow():
        gv = R.concat((x, x), axis=1)
        R.output(gv)
    return gv
""")
    a = wildcard()
    assert len(matches_in(func, is_op("concat")(is_tuple([a, a])))) == 1
    assert matches_in(func, is_op("concat")(is_tuple([a]))) == []
    assert matches_in(func, is_op("concat")(is_tuple([a, is_const()]))) == []


def test_an_intermediate_used_elsewhere_keeps_the_match_out():
    linear, _ = linear_pattern()
    used_by_a_binding = parse_func("""
@R.function
def main(x: R.Tensor((1, 784), "float32"), w: R.Tensor((256, 784), "float32"), b: R.Tensor((256,), "float32")):
    with R.dataflow():
        lv0 = R.permute_dims(w, axes=None)
        lv1 = R.matmul(x, lv0, out_dtype="void")
        lv2 = R.add(lv1, b)
        gv = R.multiply(lv2, lv1)
        R.output(gv)
    return gv
""")  # noqa: E501 - IR text
    assert matches_in(used_by_a_binding, linear) == []
    returned = parse_func("""
@R.function
def main(x: R.Tensor((1, 784), "float32"), w: R.Tensor((256, 784), "float32"), b: R.Tensor((256,), "float32")):
    with R.dataflow():
        lv0 = R.permute_dims(w, axes=None)
        gv0 = R.matmul(x, lv0, out_dtype="void")
        gv1 = R.add(gv0, b)
        R.output(gv0, gv1)
    return (gv0, gv1)
""")  # noqa: E501 - IR text
    block = returned.body.blocks[0]
    outside = external_uses(returned, block)
    assert id(var_named(returned, "gv0")) in outside
    assert id(var_named(returned, "lv0")) not in outside
    assert find_matches(linear, block, outside) == []
    # without knowing what is read after the block, the match would hide gv0
    assert len(find_matches(linear, block)) == 1
    # the root itself may be read anywhere
    assert names(m.root for m in matches_in(returned, is_op("matmul")(wildcard(), wildcard()))) \
        == ["gv0"]


def test_matches_do_not_overlap_and_come_in_block_order():
    func = parse_func("""
@R.function
def main(a: R.Tensor((4,), "float32"), b: R.Tensor((4,), "float32")):
    with R.dataflow():
        lv0 = R.add(a, b)
        lv1 = R.add(lv0, b)
        lv2 = R.add(lv1, b)
        gv = R.add(lv2, b)
        R.output(gv)
    return gv
""")
    pair = is_op("add")(is_op("add")(wildcard(), wildcard()), wildcard())
    found = matches_in(func, pair)
    assert [names(m.bindings) for m in found] == [["lv0", "lv1"], ["lv2", "gv"]]


def test_two_layers_give_two_matches():
    func = parse_func("""
@R.function
def main(x: R.Tensor((2, 8), "float32"), w1: R.Tensor((8, 8), "float32"), w2: R.Tensor((8, 8), "float32")):
    with R.dataflow():
        lv0 = R.matmul(x, w1, out_dtype="void")
        lv1 = R.nn.relu(lv0)
        lv2 = R.matmul(lv1, w2, out_dtype="void")
        gv = R.nn.relu(lv2)
        R.output(gv)
    return gv
""")  # noqa: E501 - IR text
    found = matches_in(func, relu(is_op("matmul")(wildcard(), wildcard())))
    assert [m.root.name_hint for m in found] == ["lv1", "gv"]
    assert names(found[1].inputs) == ["lv1", "w2"]


def test_accept_and_exclude_steer_the_search():
    func = parse_func(LINEAR)
    linear, _ = linear_pattern()
    pattern = linear.optional(relu)
    (m,) = matches_in(func, pattern, accept=lambda m: len(m.bindings) < 4)
    assert m.root.name_hint == "lv2"
    relu_binding = func.body.blocks[0].bindings[-1]
    (m,) = matches_in(func, pattern, exclude={id(relu_binding)})
    assert m.root.name_hint == "lv2"
    assert matches_in(func, pattern, accept=lambda m: False) == []


def test_a_wildcard_alone_matches_nothing_in_a_block():
    assert matches_in(parse_func(LINEAR), wildcard()) == []


def test_pattern_construction_errors():
    with pytest.raises(IRTypeError, match=r"unknown operator R.nn.rellu; did you mean "
                                          r"R.nn.relu"):
        is_op("relax.nn.rellu")
    with pytest.raises(IRCError, match="must be a pattern"):
        is_op("add")(wildcard(), "b")
    with pytest.raises(IRCError, match="list of ints and None"):
        wildcard().has_shape([1, "n"])
    with pytest.raises(IRTypeError, match="unknown dtype"):
        wildcard().has_dtype("float13")
    with pytest.raises(IRCError, match="dict of attribute names"):
        wildcard().has_attr([("strides", 1)])


def test_patterns_print_as_the_calls_that_build_them():
    linear, _ = linear_pattern()
    assert repr(relu(linear).has_dtype("float16")) == (
        "is_op('nn.relu')(is_op('add')(is_op('matmul')(wildcard(), is_op('permute_dims')("
        "wildcard())), wildcard())).has_dtype('float16')")
    assert repr(is_tuple_get_item(is_tuple([is_const()]), 0) | wildcard()) == \
        "(is_tuple_get_item(is_tuple([is_const()]), 0) | wildcard())"


# --- pattern tables --------------------------------------------------------------------

SEEN: list[tuple] = []


def _check_float32_weight(ctx: PatternCheckContext) -> bool:
    SEEN.append((ctx.dtype("lhs"), ctx.shape("lhs"), ctx.shape("rhs"),
                 ctx.value("root").op.name, ctx.dtype("relu")))
    return ctx.dtype("rhs") == "float32" and ctx.shape("lhs")[-1] % 8 == 0


_X, _W, _B = wildcard(), wildcard(), wildcard()
_MATMUL = is_op("matmul")(_X, is_op("permute_dims")(_W))
_LINEAR = is_op("add")(_MATMUL, _B)
_RELU = relu(_LINEAR)
TEST_ENTRIES = register_patterns([
    ("test_dispatch.matmul_bias_relu", _LINEAR.optional(lambda p: _RELU),
     {"lhs": _X, "rhs": _W, "bias": _B, "relu": _RELU}, _check_float32_weight),
    ("test_dispatch.matmul_bias", _LINEAR, {"lhs": _X, "rhs": _W, "bias": _B}),
    PatternEntry("test_dispatch.matmul", _MATMUL, {"lhs": _X, "rhs": _W}),
    ("test_dispatch_other.relu", relu(wildcard())),
])


def test_table_lookup_and_priority_order():
    assert get_pattern("test_dispatch.matmul_bias") is TEST_ENTRIES[1]
    assert [e.name for e in get_patterns_with_prefix("test_dispatch.")] == [
        "test_dispatch.matmul_bias_relu", "test_dispatch.matmul_bias", "test_dispatch.matmul"]
    assert [e.name for e in get_patterns_with_prefix("test_dispatch")][-1] == \
        "test_dispatch_other.relu"
    assert get_patterns_with_prefix("test_no_such_backend") == []
    entry = TEST_ENTRIES[2]
    assert entry.backend == "test_dispatch"
    assert entry.annotations["root"] is entry.pattern
    assert repr(entry) == "PatternEntry('test_dispatch.matmul')"


def test_registering_a_name_again_replaces_it_in_place():
    old = get_pattern("test_dispatch.matmul")
    (new,) = register_patterns([("test_dispatch.matmul", old.pattern, old.annotations)])
    try:
        assert get_pattern("test_dispatch.matmul") is new
        assert [e.name for e in get_patterns_with_prefix("test_dispatch.")][-1] == \
            "test_dispatch.matmul"
    finally:
        register_patterns([old])


def test_unknown_names_and_bad_entries_are_irc_errors():
    with pytest.raises(IRCError, match=r"no dispatch pattern named 'test_dispatch.matmul_bais'; "
                                       r"did you mean test_dispatch.matmul_bias"):
        get_pattern("test_dispatch.matmul_bais")
    with pytest.raises(IRCError, match="is the backend imported"):
        get_pattern("zzzz")
    with pytest.raises(IRCError, match="names no backend"):
        PatternEntry("matmul", _MATMUL).backend  # noqa: B018 - the property raises
    with pytest.raises(IRCError, match="the pattern must be a Pattern"):
        as_entry(("test_dispatch.bad", "add"))
    with pytest.raises(IRCError, match=r"a PatternEntry, a registered name or a tuple"):
        as_entry(42)
    with pytest.raises(IRCError, match="not the name"):
        register_patterns(["test_dispatch.matmul"])
    assert as_entry("test_dispatch.matmul") is get_pattern("test_dispatch.matmul")


def test_check_functions_see_dtypes_and_shapes():
    entry = get_pattern("test_dispatch.matmul_bias_relu")

    def check(m):
        return entry.check(PatternCheckContext(m, entry))

    SEEN.clear()
    (m,) = matches_in(parse_func(LINEAR), entry.pattern, accept=check)
    assert m.root.name_hint == "gv"
    assert SEEN == [("float32", (1, 784), (256, 784), "nn.relu", "float32")]

    ctx = PatternCheckContext(m, entry)
    assert ctx.annotated["bias"].name_hint == "b"
    assert ctx.struct_info("lhs") is m.inputs[1].struct_info
    with pytest.raises(IRCError, match="has no annotation 'rhss'; did you mean rhs"):
        ctx.dtype("rhss")

    float16 = parse_func(LINEAR.replace('(256, 784), "float32"', '(256, 784), "float16"')
                         .replace('(1, 784), "float32"', '(1, 784), "float16"')
                         .replace('(256,), "float32"', '(256,), "float16"'))
    SEEN.clear()
    assert matches_in(float16, entry.pattern, accept=check) == []
    # both the longer and the shorter alternative were checked and refused
    assert [s[3] for s in SEEN] == ["nn.relu", "add"]
    assert SEEN[1][4] is None  # no relu in the shorter match


def test_check_sees_symbolic_dimensions_as_none():
    entry = get_pattern("test_dispatch.matmul_bias_relu")
    func = parse_func(LINEAR.replace('x: R.Tensor((1, 784)', 'x: R.Tensor(("n", 784)'))
    SEEN.clear()
    (m,) = matches_in(func, entry.pattern,
                      accept=lambda m: entry.check(PatternCheckContext(m, entry)))
    assert SEEN[0][1] == (None, 784)

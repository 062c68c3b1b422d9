"""Pass infrastructure: decorators, Sequential, PassContext gating and instruments."""

import numpy as np
import pytest

import irc
from irc import passes, tir
from irc.ir import BlockBuilder, Constant, IRModule, Var, ops, tensor_sinfo


def _prim(value: int) -> tir.PrimFunc:
    buf = tir.decl_buffer((4,), "int32", "A")
    store = tir.BufferStore(buffer=buf, value=tir.const(value), indices=(tir.const(0),))
    handle = tir.var("A_handle", "handle")
    return tir.PrimFunc(params=(handle,), buffer_map={handle: buf}, body=store)


def _value(mod: IRModule, name: str = "main") -> int:
    return mod[name].body.value.value


@passes.prim_func_pass(opt_level=1, name="Increment")
def increment(func, mod, ctx):
    return func.with_body(func.body.replace(value=func.body.value + 1))


def test_prim_func_pass_applies_to_every_prim_func():
    mod = IRModule(functions={"main": _prim(1), "other": _prim(5)})
    out = increment(mod)
    assert _value(out) == 2 and _value(out, "other") == 6
    assert _value(mod) == 1  # the input module is unchanged


def test_module_pass_class_decorator_gives_a_factory():
    @passes.module_pass(opt_level=0, name="Rename")
    class Rename:
        def __init__(self, suffix):
            self.suffix = suffix

        def transform_module(self, mod, ctx):
            return IRModule(functions={gv.name_hint + self.suffix: f for gv, f in mod.items()})

    p = Rename("_x")
    assert p.info.name == "Rename"
    assert p(IRModule(functions={"main": _prim(0)})).names() == ["main_x"]


def test_sequential_respects_opt_level_required_and_disabled():
    mod = IRModule(functions={"main": _prim(0)})
    seq = passes.Sequential([increment, increment])
    with passes.PassContext(opt_level=0):
        assert _value(seq(mod)) == 0
    with passes.PassContext(opt_level=0, required_pass=["Increment"]):
        assert _value(seq(mod)) == 2
    with passes.PassContext(opt_level=3, disabled_pass=["Increment"]):
        assert _value(seq(mod)) == 0
    assert _value(seq(mod)) == 2  # default opt_level 2


def test_timing_instrument_records_each_pass():
    timing = passes.PassTimingInstrument()
    with passes.PassContext(instruments=[timing]):
        passes.Sequential([increment, increment], name="Two")(IRModule(
            functions={"main": _prim(0)}))
    names = [n for n, _ in timing.timings]
    assert names == ["Increment", "Increment", "Two"]
    assert "Increment" in timing.render()


def test_pass_on_non_module_is_a_clear_error():
    with pytest.raises(irc.IRCError, match="expects an IRModule"):
        increment(_prim(0))


def test_pass_returning_non_module_is_reported():
    bad = passes.module_pass(lambda mod, ctx: None, name="Bad")
    with pytest.raises(irc.IRCError, match="Bad returned NoneType"):
        bad(IRModule(functions={"main": _prim(0)}))


def test_sequential_rejects_entries_that_are_not_passes():
    with pytest.raises(irc.IRCError, match="entry #1 is a int, not a pass"):
        passes.Sequential([increment, 3])
    with pytest.raises(irc.IRCError, match="write LegalizeOps\\(\\) to make the pass"):
        passes.Sequential([passes.LegalizeOps])


def test_nested_equal_contexts_leave_in_order():
    outer = passes.PassContext(opt_level=1)
    inner = passes.PassContext(opt_level=1)  # equal options, a different context
    with outer:
        with inner:
            assert passes.PassContext.current() is inner
        assert passes.PassContext.current() is outer
    assert passes.PassContext.current() is not outer


def test_pass_context_checks_its_options():
    with pytest.raises(irc.IRCError, match="opt_level must be an int"):
        passes.PassContext(opt_level="3")
    with pytest.raises(irc.IRCError, match="disabled_pass must be a list of pass names"):
        passes.PassContext(disabled_pass=[1])
    with pytest.raises(irc.IRCError, match="instruments must be PassInstrument objects"):
        passes.PassContext(instruments=[print])
    # One name alone is one name, not a string of letters.
    assert passes.PassContext(disabled_pass="FuseOps").disabled_pass == ("FuseOps",)
    with pytest.raises(irc.IRCError, match="must be a list of pass names"):
        passes.PrintIR(only=3)


@pytest.mark.parametrize("make, message", [
    (lambda: passes.LegalizeOps({"matmul": 3}), "the rule for 'matmul' is a int"),
    (lambda: passes.LegalizeOps([]), "customize_legalize_map must be a dict"),
    (lambda: passes.FuseOps(fuse_opt_level="2"), "fuse_opt_level must be an int"),
    (lambda: passes.ConvertLayout(["NHWC"]), "desired_layouts must be a dict"),
    (lambda: passes.BindParams("main", [1, 2]), "params must be a dict"),
])
def test_pass_options_are_checked_when_the_pass_is_made(make, message):
    with pytest.raises(irc.IRCError, match=message):
        make()


def _prim_with_data_param(value: int) -> tir.PrimFunc:
    # The parameter is the buffer's own data pointer: the text format declares a handle
    # parameter and a buffer with a pointer of its own, so this cannot round-trip.
    buf = tir.decl_buffer((4,), "int32", "A")
    store = tir.BufferStore(buffer=buf, value=tir.const(value), indices=(tir.const(0),))
    return tir.PrimFunc(params=(buf.data,), buffer_map={buf.data: buf}, body=store)


def test_round_trip_instrument_names_the_pass_whose_output_does_not_read_back():
    make = passes.module_pass(
        lambda mod, ctx: IRModule(functions={"main": _prim_with_data_param(1)}),
        name="MakesUnprintableIR")
    inst = passes.RoundTripInstrument()
    with passes.PassContext(instruments=[inst]):
        out = increment(IRModule(functions={"main": _prim(1)}))
        assert inst.checked == 1
        assert increment(out) is not out and inst.checked == 2
        with pytest.raises(irc.IRCError, match="after pass MakesUnprintableIR: the printed "
                                               "module does not parse back to the same IR"):
            make(out)
    with passes.PassContext(instruments=[passes.RoundTripInstrument(skip=["MakesUnprintableIR"])]):
        make(out)


def test_round_trip_instrument_hands_large_constants_and_objects_to_the_parser():
    class CompiledLibrary:
        pass

    lib = CompiledLibrary()
    big = np.random.default_rng(0).random((512, 1024)).astype("float32")  # 2 MiB

    @passes.module_pass(opt_level=0, name="AddsWeightsAndLibrary")
    def add(mod, ctx):
        x = Var(name_hint="x", struct_info=tensor_sinfo((512, 1024)))
        bb = BlockBuilder()
        with bb.function("main", [x]):
            bb.emit_func_output(bb.emit(ops.add(x, Constant.from_numpy(big))))
        return bb.get().with_attrs(external_mods=[lib])

    for limit in (1 << 20, None):  # the data left out of the text, or written into it
        inst = passes.RoundTripInstrument(max_meta_bytes=limit)
        with passes.PassContext(instruments=[inst]):
            out = add(IRModule(functions={}))
        assert inst.checked == 1 and out.attrs["external_mods"] == [lib]


def test_round_trip_instrument_parses_a_text_once_and_compares_every_time(monkeypatch):
    parsed = []
    from_script = IRModule.from_script
    monkeypatch.setattr(IRModule, "from_script", staticmethod(
        lambda text, **kw: parsed.append(text) or from_script(text, **kw)))
    twice = passes.module_pass(lambda mod, ctx: IRModule(functions={"main": _prim(41)}),
                               opt_level=0, name="RebuildsTheSameModule")
    inst = passes.RoundTripInstrument()
    with passes.PassContext(instruments=[inst]):
        a = twice(IRModule(functions={}))
        b = twice(a)
    assert a is not b and inst.checked == 2  # both checked...
    assert len(parsed) == 1  # ...from one parse of their common text

    # Modules whose constants are left out of the text (bound weights) are parsed each
    # time, even with the very same constant: a cache would keep a model's weights alive.
    weight = Constant.from_numpy(np.full(64, 2.0, "float32"))

    @passes.module_pass(opt_level=0, name="BindsWeights")
    def bind(mod, ctx):
        x = Var(name_hint="x", struct_info=tensor_sinfo((64,)))
        bb = BlockBuilder()
        with bb.function("main", [x]):
            bb.emit_func_output(bb.emit(ops.add(x, weight)))
        return bb.get()

    parsed.clear()
    inst = passes.RoundTripInstrument(max_meta_bytes=0)
    with passes.PassContext(instruments=[inst]):
        bind(IRModule(functions={}))
        bind(IRModule(functions={}))
    assert inst.checked == 2 and len(parsed) == 2 and parsed[0] == parsed[1]

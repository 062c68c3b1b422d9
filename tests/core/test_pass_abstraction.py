"""The one Pass abstraction of irc.core: graph passes, loop-IR passes and the lowering
pipeline are frozen dataclasses with their options in repr; instruments see every pass,
lowering steps included; PrintIR is both a pass and an instrument."""

import dataclasses
import io

import pytest

import irc
from irc import passes, tir
from irc.codegen.llvm import is_block_form
from irc.core.instrument import PassTimingInstrument, PrintIR, RoundTripInstrument
from irc.core.transform import FunctionPass, Pass, PassContext, Sequential
from irc.ir import IRModule
from irc.tir import te
from irc.tir.transform import LOWER_TIR, LOWERING_PASSES, PrimFuncPass
from irc.tune import ms

GRAPH = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            y = R.add(x, x)
            z = R.nn.relu(y)
            R.output(z)
        return z
"""


def _matmul_module() -> IRModule:
    a = te.placeholder((8, 8), name="A")
    b = te.placeholder((8, 8), name="B")
    k = te.reduce_axis((0, 8), name="k")
    c = te.compute((8, 8), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return IRModule(functions={"main": te.create_prim_func([a, b, c])})


def test_passes_are_frozen_dataclasses_with_their_options_in_repr():
    fold = passes.FoldConstant(size_limit=128)
    assert dataclasses.is_dataclass(fold) and isinstance(fold, Pass)
    assert repr(fold) == "FoldConstant(size_limit=128)"
    assert fold.info.name == "FoldConstant" and fold.info.opt_level == 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        fold.size_limit = 3
    # Equal options, equal passes: a pipeline can be compared and deduplicated.
    assert passes.FuseOps(max_fuse_depth=4) == passes.FuseOps(max_fuse_depth=4)
    assert "max_fuse_depth=4" in repr(passes.FuseOps(max_fuse_depth=4))


def test_loop_ir_passes_are_passes_too():
    assert all(isinstance(p, PrimFuncPass) and isinstance(p, FunctionPass)
               for p in LOWERING_PASSES)
    assert isinstance(LOWER_TIR, Sequential) and LOWER_TIR.name == "LowerTIR"
    text = repr(LOWER_TIR)
    assert text.startswith("Sequential(name='LowerTIR'")
    assert "PlanAndUpdateBufferAllocationLocation(detect_regions=False)" in text


def test_graph_and_loop_passes_mix_in_one_sequential():
    mod = irc.parse(GRAPH)
    pipeline = Sequential([passes.LegalizeOps(), LOWER_TIR], name="legalize_and_lower")
    out = pipeline(mod)
    kernels = [f for f in out.functions.values() if isinstance(f, tir.PrimFunc)]
    assert kernels, "legalization made loop functions"
    assert not is_block_form(kernels[0])  # lowered: no blocks left


def test_instruments_see_each_lowering_step():
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        irc.lower(_matmul_module())
    names = [name for name, _ in timing.timings]
    assert names == [type(p).__name__ for p in LOWERING_PASSES] + ["LowerTIR"]


def test_lowering_respects_disabled_passes():
    mod = _matmul_module()
    with PassContext(disabled_pass=["VectorizeLoop", "UnrollLoop"]):
        out = irc.lower(mod)
    assert isinstance(out["main"], tir.PrimFunc)


def test_print_ir_is_a_pass_in_a_sequential():
    buf = io.StringIO()
    mod = irc.parse(GRAPH)
    out = Sequential([PrintIR("before legalize", file=buf), passes.LegalizeOps()])(mod)
    text = buf.getvalue()
    assert text.startswith("# before legalize\n")
    assert "R.nn.relu" in text and "T.prim_func" not in text  # printed before legalizing
    assert any(isinstance(f, tir.PrimFunc) for f in out.functions.values())


def test_print_ir_is_an_instrument():
    buf = io.StringIO()
    mod = irc.parse(GRAPH)
    with PassContext(instruments=[PrintIR(only=["LegalizeOps"], file=buf)]):
        passes.Sequential([passes.Normalize(), passes.LegalizeOps()])(mod)
    text = buf.getvalue()
    assert text.count("# after ") == 1 and "# after LegalizeOps" in text
    assert "T.prim_func" in text


def test_print_ir_checks_its_options():
    with pytest.raises(irc.IRCError, match="header must be a string"):
        PrintIR(header=3)


def test_round_trip_instrument_checks_every_pass_output():
    rt = RoundTripInstrument()
    with PassContext(instruments=[rt]):
        irc.compile(irc.parse(GRAPH), target="llvm")
    assert rt.checked >= 5  # graph passes and the default schedule, each checked


def test_graph_function_pass_decorator():
    seen = []

    @passes.function_pass(opt_level=1, name="Collect")
    def collect(func, mod, ctx):
        seen.append(type(func).__name__)
        return func

    mod = passes.LegalizeOps()(irc.parse(GRAPH))
    collect(mod)
    assert seen == ["Function"]  # graph functions only, not the legalized PrimFuncs
    assert collect.info.opt_level == 1 and collect.name == "Collect"


def test_prim_func_pass_class_decorator():
    @passes.prim_func_pass(name="Rename")
    class Rename:
        def __init__(self, symbol):
            self.symbol = symbol

        def transform_function(self, func, mod, ctx):
            return func.with_attr("global_symbol", self.symbol)

    out = Rename("kernel")(_matmul_module())
    assert out["main"].attrs["global_symbol"] == "kernel"


def test_tuning_passes_are_reachable_from_irc_passes():
    assert passes.MetaScheduleTuneTIR is ms.MetaScheduleTuneTIR
    assert passes.MetaScheduleApplyDatabase is ms.MetaScheduleApplyDatabase
    p = passes.MetaScheduleTuneTIR(work_dir="w", max_trials_global=4)
    assert isinstance(p, Pass) and "max_trials_global=4" in repr(p)
    with pytest.raises(AttributeError, match="no attribute 'NoSuchPass'"):
        _ = passes.NoSuchPass

"""ApplyDefaultSchedule: rule order, fallback on refusal, the target, the
``tir.is_scheduled`` mark, and the default pipeline's CPU step."""

import dataclasses
import logging

import pytest
from dlight_helpers import graph, kernels

import irc
from irc import dlight, passes
from irc import dlight as dl
from irc.core.diagnostics import IRCError, ScheduleError
from irc.target import Target
from irc.tir import Schedule

_KERNELS = kernels(graph({"x": (3, 50), "y": (3, 50)}, "gv = R.add(x, y)", (3, 50)))


def _module():
    return irc.IRModule(functions={"add": next(iter(_KERNELS.values()))})


class _Recorder(dl.ScheduleRule):
    """A rule that records its calls and returns a fixed answer."""

    target_keys = ("cpu",)

    def __init__(self, answer):
        self.answer = answer
        self.calls = 0

    def apply(self, func, target, tunable=False):
        self.calls += 1
        if self.answer == "raise":
            Schedule(func).get_block("no_such_block")  # a ScheduleError half way
        if self.answer == "schedule":
            return Schedule(func)
        return None


def test_first_applicable_rule_wins_and_marks_the_function():
    first, second, third = _Recorder(None), _Recorder("schedule"), _Recorder("schedule")
    with Target("llvm"):
        out = dl.ApplyDefaultSchedule(first, second, third)(_module())
    assert (first.calls, second.calls, third.calls) == (1, 1, 0)
    assert out["add"].attrs["tir.is_scheduled"] is True


def test_a_rule_failing_half_way_falls_back_to_the_next(caplog):
    failing, ok = _Recorder("raise"), _Recorder("schedule")
    with caplog.at_level(logging.WARNING, logger="irc.dlight"), Target("llvm"):
        out = dl.ApplyDefaultSchedule(failing, ok)(_module())
    assert failing.calls == 1 and ok.calls == 1
    assert out["add"].attrs["tir.is_scheduled"]
    # The failure is visible: the rule, the function and the error, at WARNING.
    [rec] = caplog.records
    assert rec.name == "irc.dlight.apply" and rec.levelno == logging.WARNING
    msg = rec.getMessage()
    assert msg.startswith("default schedule rule _Recorder failed on function add (trying "
                          "the next rule): ")
    assert "no_such_block" in msg


def test_apply_rules_reports_every_failure():
    first, second = _Recorder("raise"), _Recorder("raise")
    func = _module()["add"]
    outcome = dl.apply_rules(func, Target("llvm"), [first, second, _Recorder(None)], "add")
    assert outcome.schedule is None and outcome.rule is None
    assert [(f.rule, f.func) for f in outcome.failures] == [("_Recorder", "add")] * 2
    assert all(isinstance(f.error, ScheduleError) for f in outcome.failures)
    ok = _Recorder("schedule")
    outcome = dl.apply_rules(func, Target("llvm"), [first, ok])
    assert outcome.rule is ok and outcome.schedule is not None
    assert len(outcome.failures) == 1


def test_declining_rules_are_not_logged(caplog):
    with caplog.at_level(logging.DEBUG, logger="irc.dlight"), Target("llvm"):
        dl.ApplyDefaultSchedule(_Recorder(None), _Recorder("schedule"))(_module())
    assert not caplog.records


def test_no_rule_applies_leaves_the_function_alone():
    mod = _module()
    with Target("llvm"):
        out = dl.ApplyDefaultSchedule(_Recorder(None))(mod)
    assert out["add"] is mod["add"]


def test_scheduled_functions_are_skipped():
    mod = _module()
    mod = mod.with_function("add", mod["add"].with_attr("tir.is_scheduled", True))
    rule = _Recorder("schedule")
    with Target("llvm"):
        dl.ApplyDefaultSchedule(rule)(mod)
    assert rule.calls == 0


def test_rules_for_other_targets_are_skipped():
    rule = _Recorder("schedule")
    with Target("cuda"):
        out = dl.ApplyDefaultSchedule(rule)(_module())
    assert rule.calls == 0 and "tir.is_scheduled" not in out["add"].attrs


def test_a_target_is_required():
    with pytest.raises(IRCError, match="needs a target"):
        dl.ApplyDefaultSchedule(dl.cpu.Fallback())(_module())


def test_only_rules_are_accepted():
    with pytest.raises(IRCError, match="takes schedule rules"):
        dl.ApplyDefaultSchedule("Matmul")


def test_from_callable():
    rule = dl.ScheduleRule.from_callable("Mine", lambda f, t, tunable: Schedule(f), ("cpu",))
    assert rule.name == "Mine" and repr(rule) == "Mine()"
    with Target("llvm"):
        out = dl.ApplyDefaultSchedule(rule)(_module())
    assert out["add"].attrs["tir.is_scheduled"]


def test_schedule_error_is_an_irc_error():
    # ApplyDefaultSchedule logs irc errors of rules and goes on; ScheduleError is one.
    assert issubclass(ScheduleError, IRCError)


def test_default_pipeline_schedules_under_llvm_and_cuda():
    text = graph({"x": (3, 50), "y": (3, 50)}, "gv = R.add(x, y)", (3, 50))
    pipeline = passes.get_pipeline("default")
    assert pipeline.passes[-1].info.name == "DefaultScheduleForTarget"
    unscheduled = pipeline(irc.parse(text))
    with Target("cuda"):
        on_gpu = pipeline(irc.parse(text))
    with Target("llvm"):
        on_cpu = pipeline(irc.parse(text))
    for mod, expect in ((unscheduled, False), (on_gpu, True), (on_cpu, True)):
        prims = [f for f in mod.functions.values() if isinstance(f, irc.tir.PrimFunc)]
        assert prims and all(bool(f.attrs.get("tir.is_scheduled")) == expect for f in prims)


def test_dlight_is_importable_as_in_the_design():
    assert dlight is irc.dlight
    assert [r.name for r in dl.gpu.default_rules()] == [
        "Matmul", "GEMV", "Reduction", "GeneralReduction", "Fallback"]
    assert [r.name for r in dl.cpu.default_rules()] == [
        "WinogradTransform", "Matmul", "Reduction", "Elementwise", "Fallback"]


_APPLIED = []


class _Counted(dl.ScheduleRule):
    """A stateless rule (as the default ones are) that counts its calls elsewhere."""

    target_keys = ("cpu",)

    def apply(self, func, target, tunable=False):
        _APPLIED.append(func)
        return Schedule(func)


def test_a_function_scheduled_again_is_taken_from_the_memo():
    mod = _module()
    _APPLIED.clear()
    with passes.PassContext(), Target("llvm"):
        first = dl.ApplyDefaultSchedule(_Counted())(mod)
        again = dl.ApplyDefaultSchedule(_Counted())(mod)  # the same function object
        assert len(_APPLIED) == 1 and again["add"] is first["add"]
        copy = irc.IRModule(functions={"add": dataclasses.replace(mod["add"])})
        dl.ApplyDefaultSchedule(_Counted())(copy)  # an equal function, another object
        assert len(_APPLIED) == 2
        with Target("llvm -num-cores=1"):
            dl.ApplyDefaultSchedule(_Counted())(mod)  # another target
        assert len(_APPLIED) == 3
        other = _Recorder("schedule")
        dl.ApplyDefaultSchedule(other)(mod)  # another rule
        assert other.calls == 1
    with Target("llvm"):  # under the tests' instruments the rules always run
        dl.ApplyDefaultSchedule(_Counted())(mod)
    assert len(_APPLIED) == 4

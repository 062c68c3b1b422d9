"""Settings are checked by name: a misspelt pass name, config key, opt level or target kind
is an error listing the close matches, never a setting silently ignored."""

import subprocess
import sys
from dataclasses import dataclass

import pytest

import irc
from irc import passes
from irc.core.transform import Pass, PassContext, known_pass_names, register_pass_config
from irc.target import Target, TargetError


@pytest.mark.parametrize("kwargs, message", [
    (dict(disabled_pass=["WinogradConv2d"]),
     r"disabled_pass names 'WinogradConv2d', which is not a pass \(did you mean "
     r"'WinogradConv2D'\?\)"),
    (dict(required_pass="FuseOP"), r"required_pass names 'FuseOP'.*did you mean 'FuseOps'"),
    (dict(config={"winograd.tiles": 2}),
     r"unknown config key 'winograd.tiles' \(did you mean 'winograd.tile'\?\); the known "
     r"keys are .*winograd.tile"),
    (dict(config={"winograd.tile": 3}), r"config 'winograd.tile' must be 'auto' or 2 or 4, "
                                        r"got 3"),
    (dict(config={"winograd.tile": "2"}), r"config 'winograd.tile' must be .* got '2'"),
    (dict(config={3: 1}), "unknown config key 3"),
    (dict(opt_level=4), r"opt_level must be an int from 0 .* to 3 .*, got 4"),
    (dict(opt_level=-1), r"opt_level must be an int from 0 .* to 3 .*, got -1"),
    (dict(opt_level=True), "opt_level must be an int"),
])
def test_pass_context_refuses_unknown_names_and_values(kwargs, message):
    with pytest.raises(irc.IRCError, match=message):
        PassContext(**kwargs)


def test_known_names_and_values_are_accepted():
    ctx = PassContext(opt_level=0, disabled_pass=["WinogradConv2D", "LoopPartition"],
                      required_pass=["FoldConstant"], config={"winograd.tile": 2})
    assert ctx.disabled_pass == ("WinogradConv2D", "LoopPartition")
    PassContext(opt_level=3, config={"winograd.tile": "auto"})
    assert "winograd.tile" in PassContext.list_configs()


def test_passes_defined_by_users_count_once_defined():
    with pytest.raises(irc.IRCError, match="not a pass"):
        PassContext(disabled_pass=["SettingsTestPass"])

    @dataclass(frozen=True)
    class SettingsTestPass(Pass):
        def transform_module(self, mod, ctx):
            return mod

    @passes.module_pass(opt_level=1, name="SettingsTestModulePass")
    def _unused(mod, ctx):
        return mod

    ctx = PassContext(disabled_pass=["SettingsTestPass", "SettingsTestModulePass"])
    mod = irc.IRModule(functions={})
    with ctx:
        assert passes.Sequential([SettingsTestPass(), _unused])(mod) is mod
    assert {"SettingsTestPass", "SettingsTestModulePass"} <= set(known_pass_names())


def test_config_keys_registered_by_users_are_checked():
    register_pass_config("settings_test.level", int, doc="a test option")
    assert PassContext(config={"settings_test.level": 2}).config == {"settings_test.level": 2}
    with pytest.raises(irc.IRCError, match=r"'settings_test.level' must be int, got 2.5"):
        PassContext(config={"settings_test.level": 2.5})


def test_instrument_pass_names_are_checked_too():
    with pytest.raises(irc.IRCError, match=r"PrintIR\(only=...\) names 'FuseOp'"):
        passes.PrintIR(only=["FuseOp"])
    with pytest.raises(irc.IRCError, match=r"RoundTripInstrument\(skip=...\) names 'Lgalize"):
        passes.RoundTripInstrument(skip=["LgalizeOps"])
    with pytest.raises(irc.IRCError, match="opt_level must be an int from 0"):
        passes.module_pass(lambda mod, ctx: mod, opt_level=5, name="TooHigh")


def test_the_tuning_passes_are_known_before_irc_tune_is_imported():
    code = ("import sys, irc; from irc.core.transform import PassContext; "
            "PassContext(disabled_pass=['MetaScheduleTuneTIR', 'MetaScheduleApplyDatabase']); "
            "print('irc.tune' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("target, message", [
    ("c", r"unknown target kind 'c' in 'c': irc has no C source backend.*the target kinds "
          r"are llvm \(or cpu\), cuda"),
    ({"kind": "c"}, "unknown target kind 'c' in a target dict: irc has no C source backend"),
    ("llvn -mcpu=znver4", r"unknown target kind 'llvn'.*did you mean 'llvm'"),
])
def test_target_kinds_irc_does_not_have_are_refused(target, message):
    with pytest.raises(TargetError, match=message):
        Target(target)
    assert Target("cpu").kind.name == "llvm" and Target("gpu").kind.name == "cuda"

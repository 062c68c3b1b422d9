"""irc: a deep-learning compiler with template-free auto-tuning.

See README.md for a tour and ARCHITECTURE.md for the architecture (both in the
repository). Importing irc never imports optional heavy packages (xgboost, onnx, CUDA).
"""

from __future__ import annotations

import sys as _sys

from . import ir, passes, tir, vm
from .core import (
    BuildError,
    CodegenError,
    IRCError,
    IRModule,
    IRParseError,
    IRTypeError,
    IRWellFormedError,
    LegalizeError,
    LoweringError,
    MissingDependencyError,
    RuntimeArgumentCountError,
    RuntimeArgumentError,
    RuntimeArgumentTypeError,
    RuntimeDeviceError,
    RuntimeDTypeError,
    RuntimeReadOnlyError,
    RuntimeShapeError,
    ScheduleError,
    TuningError,
    UnsupportedOperatorError,
    VMError,
)
from .core.diagnostics import deprecated_aliases
from .core.settings import override as settings
from .core.version import __version__

# Deep expression trees (long elementwise chains) recurse in visitors and the printer.
if _sys.getrecursionlimit() < 10000:
    _sys.setrecursionlimit(10000)

# Runtime, targets and code generation (irc.build, irc.cpu(), irc.tensor(...)); frontends
# (irc.frontend.nn: build models in Python and export them); default schedule rules
# (from irc import dlight as dl).
from . import dispatch, dlight, frontend, runtime, target, te, topi
from .codegen import build
from .runtime import cpu, cuda, device, tensor

# The text format: irc.parse(text) -> IRModule or function (irc.IRModule.from_script).
from .script_parser import parse

# Lowering of loop-level functions and schedules (irc.lower(sch, args)).
from .tir.transform.lower import lower

# Graph-level compilation: irc.compile(mod, target) -> irc.vm.Executable.
from .vm import compile


def _tuning_pass(name: str):
    def load():
        from .tune import ms  # on first use: importing irc does not import the tuner

        return getattr(ms, name)

    return load


# The tuning passes are defined by irc.tune (above irc.passes in the layering) and reached
# as irc.passes.MetaScheduleTuneTIR / MetaScheduleApplyDatabase, as ARCHITECTURE.md says.
for _name in ("MetaScheduleTuneTIR", "MetaScheduleApplyDatabase"):
    passes.late_bind(_name, _tuning_pass(_name))


# UnsupportedOpError: a deprecated second name of UnsupportedOperatorError.
__getattr__ = deprecated_aliases("irc", {
    "UnsupportedOpError": ("irc.UnsupportedOperatorError", UnsupportedOperatorError)})

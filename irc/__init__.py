"""irc: a deep-learning compiler with template-free auto-tuning.

See README.md for a tour and DESIGN.md (in the repository's shared docs) for the
architecture. Importing irc never imports optional heavy packages (xgboost, onnx, CUDA).
"""

from __future__ import annotations

import sys as _sys

from . import ir, tir
from .ir import (
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
    RuntimeShapeError,
    ScheduleError,
    TuningError,
    UnsupportedOperatorError,
    VMError,
)

__version__ = "0.1.0"

# Deep expression trees (long elementwise chains) recurse in visitors and the printer.
if _sys.getrecursionlimit() < 10000:
    _sys.setrecursionlimit(10000)

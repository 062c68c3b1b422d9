"""The IR core every level shares: the node base class, dtypes, spans and diagnostics
(the exception hierarchy), structural equality and hashing, functors, ``GlobalVar`` and
``IRModule``, compilation targets, and the pass infrastructure (``Pass``,
``Sequential``, ``PassContext``, instruments).

This is the lowest layer of irc: it imports nothing else from irc. The levels above
plug into it by registration: ``irc.tir`` and ``irc.ir`` register the printers of their
nodes (:func:`~irc.core.node.register_printer`), ``irc.script_parser`` registers the
parser behind ``IRModule.from_script`` (:func:`~irc.core.module.register_parser`).
"""

from . import dtype
from .diagnostics import (
    BuildError,
    CodegenError,
    IRCError,
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
    SourceFile,
    Span,
    TuningError,
    UnsupportedOperatorError,
    VMError,
)
from .expr import BaseExpr, GlobalVar
from .functor import Mutator, Visitor, collect, post_order_visit
from .instrument import PassTimingInstrument, PrintIR, RoundTripInstrument
from .module import IRModule
from .node import Node
from .structural import (
    StructuralMismatchError,
    assert_structural_equal,
    structural_equal,
    structural_hash,
    structural_hash_hex,
)
from .target import Target, TargetError
from .transform import (
    FunctionPass,
    ModulePass,
    Pass,
    PassContext,
    PassInfo,
    PassInstrument,
    Sequential,
    module_pass,
)

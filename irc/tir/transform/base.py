"""The shape of a loop-IR pass: a small frozen dataclass that transforms one PrimFunc
(:class:`PrimFuncPass`), and :func:`prim_func_pass`, which makes a pass applying a
function ``(func, mod, ctx) -> func`` to every PrimFunc of a module.

Both are :class:`irc.core.transform.Pass` es: they run in a ``Sequential`` beside graph
passes and every instrument of the current ``PassContext`` sees them. A
:class:`PrimFuncPass` called on a single ``PrimFunc`` instead of a module transforms that
function; a ``prim_func_pass`` runs on modules only (its function sees the module).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...core.diagnostics import IRCError, LoweringError
from ...core.transform import FunctionPass, make_pass_decorator
from ..stmt import PrimFunc


@dataclass(frozen=True)
class PrimFuncPass(FunctionPass):
    """Base of the loop-IR passes: subclasses implement :meth:`transform_function`.
    On an IRModule every PrimFunc is transformed and graph-level functions are left
    alone."""

    function_type: ClassVar[type] = PrimFunc
    error_type: ClassVar[type[IRCError]] = LoweringError

    def transform_function(self, func: PrimFunc) -> PrimFunc:
        raise NotImplementedError(f"{type(self).__name__} must implement transform_function")


prim_func_pass = make_pass_decorator("function", PrimFunc)
prim_func_pass.__doc__ = """Make a pass applied to each PrimFunc of a module from a function
``(func, mod, ctx) -> func`` (None removes the function) or a class with
``transform_function(self, func, mod, ctx)``."""

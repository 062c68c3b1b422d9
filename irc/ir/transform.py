"""Passes over graph-level functions: :func:`function_pass` makes a pass applied to every
graph ``Function`` of a module from a function ``(func, mod, ctx) -> func`` (None
removes the function) or from a class with ``transform_function(self, func, mod, ctx)``.

The pass infrastructure itself is the core's (:mod:`irc.core.transform`); the loop-IR
counterpart is :func:`irc.tir.transform.prim_func_pass`.
"""

from __future__ import annotations

from ..core.transform import make_pass_decorator
from .expr import Function

function_pass = make_pass_decorator("function", Function)
function_pass.__doc__ = __doc__

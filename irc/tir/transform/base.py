"""The shape of a loop-IR pass: a small frozen dataclass that transforms one PrimFunc,
applied to every PrimFunc of a module when called on an IRModule."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, TypeVar

from ...ir.diagnostics import LoweringError
from ...ir.module import IRModule
from ..stmt import PrimFunc

T = TypeVar("T", PrimFunc, IRModule)


@dataclass(frozen=True)
class PrimFuncPass:
    """Base of the lowering passes: subclasses implement :meth:`transform_function`.
    Calling the pass on a PrimFunc transforms it; on an IRModule it transforms every
    PrimFunc and leaves graph-level functions alone."""

    name: ClassVar[str] = "PrimFuncPass"

    def transform_function(self, func: PrimFunc) -> PrimFunc:
        raise NotImplementedError(f"{type(self).__name__} must implement transform_function")

    def __call__(self, x: T) -> T:
        if isinstance(x, PrimFunc):
            return self.transform_function(x)
        if isinstance(x, IRModule):
            return x.map_functions(self.transform_function, PrimFunc)
        raise LoweringError(f"{self.name} applies to a PrimFunc or an IRModule, "
                            f"not {type(x).__name__}")

"""Input specifications for ``Module.export_ir``: what each argument of an exported method
is (``nn.spec.Tensor(shape, dtype)``, ``nn.spec.Int()``).

A string in a shape (``nn.spec.Tensor(("n", 784), "float32")``) is a symbolic dimension:
an int64 ``tir`` variable. Within one method's spec, the same name is the same variable
(``x: ("n", 784)`` and ``y: ("n", 10)`` share ``n``; an ``nn.spec.Int`` argument named
``n`` is that variable too). Each exported method gets its own variables.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...core import dtype as dt
from ...core.diagnostics import IRCError
from ...ir.expr import Var
from ...ir.struct_info import PrimStructInfo, TensorStructInfo
from ...tir import expr as E
from .core import NNError


class SymbolTable:
    """The symbolic dimensions of one method's spec, by name."""

    def __init__(self) -> None:
        self.vars: dict[str, E.Var] = {}

    def get(self, name: str) -> E.Var:
        """The int64 variable called ``name`` (created on first use)."""
        v = self.vars.get(name)
        if v is None:
            v = self.vars[name] = E.Var(name=name, dtype="int64")
        return v


class Tensor:
    """The spec of a tensor argument: ``shape`` (ints, or strings for symbolic
    dimensions) and ``dtype``."""

    def __init__(self, shape: Sequence[int | str], dtype: str = "float32"):
        if isinstance(shape, (int, str)):
            shape = (shape,)
        if not isinstance(shape, (tuple, list)):
            raise NNError(f"nn.spec.Tensor: shape must be a tuple of ints and names, got "
                          f"{shape!r}")
        dims: list[int | str] = []
        for d in shape:
            if isinstance(d, str):
                if not d.isidentifier():
                    raise NNError(f"nn.spec.Tensor: symbolic dimension {d!r} must be an "
                                  "identifier such as 'n' or 'batch'")
                dims.append(d)
            elif isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0:
                dims.append(int(d))
            else:
                raise NNError(f"nn.spec.Tensor: dimension {d!r} in {tuple(shape)!r} must be a "
                              "non-negative int or a name (a string) for a symbolic dimension")
        try:
            self.dtype = dt.check(dtype)
        except IRCError:
            raise NNError(f"nn.spec.Tensor: dtype must be a dtype such as 'float32', got "
                          f"{dtype!r}") from None
        self.shape = tuple(dims)

    def make_var(self, name: str, symbols: SymbolTable) -> Var:
        """The graph parameter ``name`` of this spec (symbolic dims from ``symbols``)."""
        dims = [symbols.get(d) if isinstance(d, str) else E.IntImm(dtype="int64", value=d)
                for d in self.shape]
        return Var(name_hint=name, struct_info=TensorStructInfo(shape=tuple(dims),
                                                                dtype=self.dtype))

    def __repr__(self) -> str:
        return f"nn.spec.Tensor({self.shape}, {self.dtype!r})"


class Int:
    """The spec of an int64 scalar argument. The method receives it as an int64 ``tir``
    variable (usable in shapes, e.g. ``x.reshape(n, 784)``); a symbolic dimension of the
    same name in another argument's spec is the same variable."""

    def __init__(self, dtype: str = "int64"):
        if dtype != "int64":
            raise NNError(f"nn.spec.Int supports dtype 'int64' only, got {dtype!r}")
        self.dtype = dtype

    def make_var(self, name: str, symbols: SymbolTable) -> Var:
        """The graph parameter ``name``: ``R.Prim(value=name)``."""
        return Var(name_hint=name, struct_info=PrimStructInfo(dtype="int64",
                                                              value=symbols.get(name)))

    def __repr__(self) -> str:
        return "nn.spec.Int()"


def check_spec_item(value: Any, method: str, arg: str) -> Tensor | Int:
    """``value`` as a spec item, or an error naming the method and argument."""
    if isinstance(value, (Tensor, Int)):
        return value
    raise NNError(f"spec of '{method}': argument {arg!r} must be nn.spec.Tensor(shape, dtype) "
                  f"or nn.spec.Int(), got {value!r}")


__all__ = ["Tensor", "Int", "SymbolTable"]

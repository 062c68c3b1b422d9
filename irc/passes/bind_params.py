"""BindParams: replace a graph function's weight parameters by constants.

Algorithm: parameters of function ``func_name`` whose names appear in ``params`` are
removed from the signature and every use is replaced by a ``Constant`` of the given
array (numpy array or irc Tensor). Symbolic dimensions of a bound parameter are bound to
the array's shape everywhere in the function.

Preconditions: the function exists; each array matches its parameter's dtype and shape
(else ``IRTypeError`` naming the parameter). Postconditions: ``num_input`` is unchanged
(bound parameters are the trailing weights).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..core import dtype as dt
from ..core.diagnostics import IRTypeError
from ..core.functor import Mutator
from ..core.module import IRModule
from ..core.transform import Pass, PassContext
from ..ir.block_builder import normalize
from ..ir.expr import Constant, Function, Var
from ..ir.struct_info import TensorStructInfo
from ..tir import expr as E


class _Substitute(Mutator):
    def __init__(self, var_map: dict[int, Any], sym_map: dict[int, Any]):
        super().__init__()
        self.var_map = var_map
        self.sym_map = sym_map

    def visit_Var(self, v: Any) -> Any:
        if id(v) in self.var_map:
            return self.var_map[id(v)]
        if id(v) in self.sym_map:
            return self.sym_map[id(v)]
        return self.generic_visit(v)

    visit_DataflowVar = visit_Var


def _as_array(value: Any) -> np.ndarray:
    if hasattr(value, "numpy"):
        value = value.numpy()
    return np.asarray(value)


@dataclass(frozen=True)
class BindParams(Pass):
    """Bind the parameters of ``func_name`` named in ``params`` to constant arrays."""

    func_name: str
    params: dict[str, Any] = field(repr=False, hash=False)

    def __post_init__(self) -> None:
        params = self.params
        if not isinstance(params, Mapping) or not all(isinstance(k, str) for k in params):
            raise IRTypeError("BindParams: params must be a dict of parameter name to array, "
                              f"got {type(params).__name__}")
        object.__setattr__(self, "params", dict(params))

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        func = mod[self.func_name]
        if not isinstance(func, Function):
            raise IRTypeError(f"BindParams: {self.func_name} is not a graph function")
        by_name = {p.name_hint: p for p in func.params}
        unknown = sorted(set(self.params) - set(by_name))
        if unknown:
            raise IRTypeError(f"BindParams: {self.func_name} has no parameter(s) "
                              f"{', '.join(unknown)}; it has {', '.join(by_name)}")
        var_map: dict[int, Any] = {}
        sym_map: dict[int, Any] = {}
        keep: list[Var] = []
        for p in func.params:
            if p.name_hint not in self.params:
                keep.append(p)
                continue
            arr = _as_array(self.params[p.name_hint])
            sinfo = p.struct_info
            if isinstance(sinfo, TensorStructInfo):
                if sinfo.dtype and dt.from_numpy(arr.dtype) != sinfo.dtype:
                    raise IRTypeError(f"BindParams: parameter {p.name_hint} is {sinfo.dtype} "
                                      f"but the array is {arr.dtype}")
                if sinfo.shape is not None:
                    if len(sinfo.shape) != arr.ndim:
                        raise IRTypeError(f"BindParams: parameter {p.name_hint} has rank "
                                          f"{len(sinfo.shape)} but the array has shape "
                                          f"{arr.shape}")
                    for d, n in zip(sinfo.shape, arr.shape):
                        if isinstance(d, E.IntImm) and d.value != n:
                            raise IRTypeError(f"BindParams: parameter {p.name_hint} expects "
                                              f"shape {sinfo.static_shape}, the array has "
                                              f"{arr.shape}")
                        if isinstance(d, E.Var):
                            sym_map[id(d)] = E.IntImm(dtype=d.dtype, value=int(n))
            var_map[id(p)] = Constant.from_numpy(arr)
        new = _Substitute(var_map, sym_map).visit(func.replace(params=tuple(keep)))
        # The function's struct info lists its parameters: recompute it for the new ones.
        new = normalize(new.replace(struct_info=None), mod)
        return mod.with_function(self.func_name, new)

"""DnnlModule: the library module of the ``dnnl`` dispatch backend.

Each function is one oneDNN primitive (a convolution or a matrix product with its bias
and post-ops, :mod:`irc.runtime.dnnl`). All primitives are created when the module is
made (at compile time) or loaded (``Executable.load``), never at a call; constant weights
are reordered once, then, into the layout oneDNN chose. Operands are the function's
parameters or constants kept in the module.

A function is called by the VM with its inputs then its output (CPU tensors), as
``R.call_dps_packed`` passes them. Serialized form: :func:`~irc.runtime.external.
pack_library` with the function specs as JSON and the constants (the weights in their
original layout: the packed form depends on the machine that loads them).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..core.diagnostics import IRCError
from .dnnl import plan_from_json
from .external import LibraryModule, aligned_copy, cpu_pointer, register_external_loader

MAGIC = b"IRCDNNL\x01"
_OPERANDS = ("data", "weight", "bias", "residual")


class DnnlModule(LibraryModule):
    """oneDNN primitives (see the module docstring). ``specs`` maps a symbol to
    ``{"plan": ConvPlan / MatmulPlan JSON, "data"/"weight"/"bias"/"residual":
    ["param", i] | ["const", key] | None, "num_params": n, "param_shapes": [[...], ...],
    "out_shape": [...], "dtype": "float32"}``; ``constants`` maps keys to arrays."""

    kind = "dnnl"
    magic = MAGIC
    library = "oneDNN"

    def __init__(self, specs: dict[str, dict], constants: dict[str, np.ndarray],
                 epilogues: Any = None):
        if epilogues is not None:
            raise IRCError("a oneDNN module has no kernel library (its post-ops run in "
                           "oneDNN)")
        super().__init__(specs, {k: aligned_copy(v) for k, v in constants.items()}, None)
        for name in specs:  # every primitive is created now, not at its first call
            self.get_function(name)

    @staticmethod
    def _load_kernels(blob: bytes) -> Any:
        raise IRCError("a oneDNN module carries no kernel library; the file is damaged")

    def _make(self, name: str, spec: dict) -> Callable[..., None]:
        for key in ("plan", "num_params", "out_shape", *_OPERANDS):
            if key not in spec:
                raise IRCError(f"oneDNN function {name}: its spec lacks {key!r}; the module "
                               "was written by another irc version or is damaged")
        plan = plan_from_json(spec["plan"])
        consts = self.constants
        weight_role = spec["weight"]
        packed = consts[weight_role[1]] if weight_role[0] == "const" else None
        primitive = plan.build(packed)
        n_params = int(spec["num_params"])
        out_shape = tuple(spec["out_shape"])
        param_shapes = [tuple(s) for s in spec.get("param_shapes", ())]

        def operand(role: list | None) -> Callable[[tuple], int]:
            if role is None:
                return lambda args: 0
            if role[0] == "const":
                ptr = consts[role[1]].ctypes.data
                return lambda args: ptr
            i = int(role[1])
            return lambda args: cpu_pointer(args[i], "oneDNN", name, i)

        data, weight, bias, residual = (operand(spec[k]) for k in _OPERANDS)
        if packed is not None:
            weight = operand(None)

        def run(*args: Any) -> None:
            out = self._check_call(name, args, n_params, out_shape, param_shapes)
            primitive(data(args), weight(args), bias(args), residual(args),
                      cpu_pointer(out, "oneDNN", name, n_params))
        run.__name__ = name
        run.implementation = primitive.implementation  # type: ignore[attr-defined]
        return run


register_external_loader(DnnlModule.kind, DnnlModule.deserialize)

"""BlasModule: the library module of the ``blas`` dispatch backend.

Each function is one OpenBLAS matrix product (:class:`~irc.runtime.blas.BlasGemmPlan`,
laid out once) followed, when the dispatched subgraph had one, by an epilogue (bias add
and activation) compiled by irc with LLVM into the module's own kernel library: the
product goes to a scratch buffer, the epilogue kernel writes the output. Operands are
the function's parameters or constants (weights bound into the dispatched function),
kept in the module.

A function is called by the VM with its inputs then its output (CPU tensors), as
``R.call_dps_packed`` passes them. Serialized form: :func:`~irc.runtime.module.pack_blob`
with the function specs as JSON and, as payload, an ``.npz`` archive of the constants
and the epilogue library's bytes.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..core.diagnostics import IRCError
from .blas import BlasGemmPlan
from .external import LibraryModule, aligned_copy, cpu_pointer, register_external_loader
from .module import Module
from .ndarray import aligned_empty

MAGIC = b"IRCBLAS\x01"


class BlasModule(LibraryModule):
    """Dispatched matrix products (see the module docstring). ``specs`` maps a symbol to
    ``{"plan": BlasGemmPlan JSON, "lhs"/"rhs"/"bias": ["param", i] | ["const", key] |
    None, "num_params": n, "out_shape": [...], "dtype": ..., "epilogue": name | None}``;
    ``constants`` maps keys to arrays; ``epilogues`` is the compiled epilogue library
    (None when no function has one)."""

    kind = "blas"
    magic = MAGIC
    library = "BLAS"

    def __init__(self, specs: dict[str, dict], constants: dict[str, np.ndarray],
                 epilogues: Module | None):
        super().__init__(specs, {k: aligned_copy(v) for k, v in constants.items()}, epilogues)

    @staticmethod
    def _load_kernels(blob: bytes) -> Module:
        return Module.deserialize(blob)

    def _make(self, name: str, spec: dict) -> Callable[..., None]:
        plan = BlasGemmPlan.from_json(spec["plan"])
        n_params = int(spec["num_params"])
        out_shape = tuple(spec["out_shape"])
        dtype = np.dtype(spec["dtype"])
        consts = self.constants

        def operand(role: list | None) -> Callable[[tuple], int] | None:
            if role is None:
                return None
            if role[0] == "const":
                ptr = consts[role[1]].ctypes.data
                return lambda args: ptr
            i = int(role[1])
            return lambda args: cpu_pointer(args[i], "BLAS", name, i)

        lhs, rhs = operand(spec["lhs"]), operand(spec["rhs"])
        epilogue = None
        if spec.get("epilogue"):
            if self.epilogues is None:
                raise IRCError(f"BLAS function {name}: its epilogue library is missing")
            epilogue = self.epilogues.get_function(spec["epilogue"])
            bias_role = spec.get("bias")
            bias = None if bias_role is None else (
                consts[bias_role[1]] if bias_role[0] == "const" else int(bias_role[1]))
            scratch = aligned_empty(out_shape, dtype)
            scratch_ptr = scratch.ctypes.data

        def run(*args: Any) -> None:
            out = self._check_call(name, args, n_params, out_shape)
            if epilogue is None:
                plan(lhs(args), rhs(args), cpu_pointer(out, "BLAS", name, n_params))
                return
            plan(lhs(args), rhs(args), scratch_ptr)
            if bias is None:
                epilogue(scratch, out)
            else:
                epilogue(scratch, args[bias] if isinstance(bias, int) else bias, out)
        run.__name__ = name
        return run


register_external_loader(BlasModule.kind, BlasModule.deserialize)

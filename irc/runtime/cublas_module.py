"""CublasModule: the library module of the ``cublas`` dispatch backend.

Each function is one cuBLAS product (:class:`~irc.runtime.cublas.CublasGemmPlan`) and,
when the dispatched subgraph had one, an epilogue (bias add, activation) that irc
compiled to a CUDA kernel (a :class:`~irc.runtime.cuda_program.CUDAProgramModule`): the
product goes to a scratch buffer on the GPU, the epilogue kernel writes the output.
Operands are the function's parameters (CUDA tensors, as the VM on ``irc.cuda(i)``
passes them) or constants kept in the module and copied to the GPU on first use.

Serialized form: :func:`~irc.runtime.module.pack_blob` with the specs as JSON and an
``.npz`` payload of the constants and the epilogue module's bytes.
"""

from __future__ import annotations

from typing import Any, Callable

from ..core.diagnostics import IRCError, RuntimeDeviceError
from .cublas import CublasGemmPlan
from .cuda_program import CUDAProgramModule
from .external import LibraryModule, register_external_loader
from .ndarray import Tensor, empty

MAGIC = b"IRCCUBL\x01"


class CublasModule(LibraryModule):
    """Dispatched GPU matrix products (see the module docstring). ``specs`` maps a symbol
    to ``{"plan": CublasGemmPlan JSON, "lhs"/"rhs"/"bias": ["param", i] | ["const", key]
    | None, "num_params": n, "out_shape": [...], "dtype": out dtype, "epilogue": name |
    None}``."""

    kind = "cublas"
    magic = MAGIC
    library = "cuBLAS"
    # Products and epilogues queue on the current stream; scratch and constants are kept.
    graph_capturable = True

    @staticmethod
    def _load_kernels(blob: bytes) -> CUDAProgramModule:
        return CUDAProgramModule.deserialize(blob)

    def _make(self, name: str, spec: dict) -> Callable[..., None]:
        plan = CublasGemmPlan.from_json(spec["plan"])
        n_params = int(spec["num_params"])
        out_shape = tuple(spec["out_shape"])
        epilogue = None
        if spec.get("epilogue"):
            if self.epilogues is None:
                raise IRCError(f"cuBLAS function {name}: its epilogue kernels are missing")
            epilogue = self.epilogues.get_function(spec["epilogue"])
        scratch: dict[int, Tensor] = {}

        def run(*args: Any) -> None:
            out = self._check_call(name, args, n_params, out_shape)
            if not isinstance(out, Tensor) or out.device.device_type != "cuda":
                raise RuntimeDeviceError(f"cuBLAS function {name}: the output must be a "
                                         "tensor on a CUDA GPU")
            dev = out.device
            lhs, rhs = (self.device_operand(spec[r], args, dev) for r in ("lhs", "rhs"))
            for i, t in enumerate((lhs, rhs)):
                if not isinstance(t, Tensor) or t.device != dev:
                    raise RuntimeDeviceError(f"cuBLAS function {name}: operand {i} must be "
                                             f"a tensor on {dev}")
            if epilogue is None:
                plan(dev.index, lhs.data_ptr, rhs.data_ptr, out.data_ptr)
                return
            tmp = scratch.get(dev.index)
            if tmp is None:
                tmp = scratch[dev.index] = empty(out_shape, plan.out_dtype, dev)
            plan(dev.index, lhs.data_ptr, rhs.data_ptr, tmp.data_ptr)
            bias = self.device_operand(spec.get("bias"), args, dev)
            if bias is None:
                epilogue(tmp, out)
            else:
                epilogue(tmp, bias, out)
        run.__name__ = name
        return run


register_external_loader(CublasModule.kind, CublasModule.deserialize)

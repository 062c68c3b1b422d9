"""CudnnModule: the library module of the ``cudnn`` dispatch backend.

Each function is one cuDNN convolution with its bias, residual add and ReLU
(:class:`~irc.runtime.cudnn.CudnnConvPlan`). Operands are the function's parameters (CUDA
tensors, as the VM on ``irc.cuda(i)`` passes them) or constants kept in the module and
copied to the GPU on first use. Calls queue on the current stream only, so the VM may
capture them into CUDA graphs.

Serialized form: :func:`~irc.runtime.module.pack_blob` with the specs as JSON and an
``.npz`` payload of the constants.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..core.diagnostics import RuntimeDeviceError
from .cudnn import CudnnConv, CudnnConvPlan
from .external import LibraryModule, register_external_loader
from .ndarray import Tensor

MAGIC = b"IRCCUDN\x01"


class CudnnModule(LibraryModule):
    """Dispatched GPU convolutions (see the module docstring). ``specs`` maps a symbol to
    ``{"plan": CudnnConvPlan JSON, "data"/"weight"/"bias"/"residual": ["param", i] |
    ["const", key] | None, "num_params": n, "param_shapes": [...], "out_shape": [...],
    "dtype": "float32"}``."""

    kind = "cudnn"
    magic = MAGIC
    library = "cuDNN"
    graph_capturable = True

    def __init__(self, specs: dict[str, dict], constants: dict[str, np.ndarray],
                 epilogues: Any = None):
        super().__init__(specs, constants, None)

    @staticmethod
    def _load_kernels(blob: bytes) -> Any:
        return None

    def _make(self, name: str, spec: dict) -> Callable[..., None]:
        conv = CudnnConv(CudnnConvPlan.from_json(spec["plan"]))
        n_params = int(spec["num_params"])
        out_shape = tuple(spec["out_shape"])
        param_shapes = [tuple(s) for s in spec.get("param_shapes", ())]
        library = self.library

        def run(*args: Any) -> None:
            out = self._check_call(name, args, n_params, out_shape, param_shapes)
            operands = [self.device_operand(spec.get(r), args, out.device)
                        for r in ("data", "weight", "bias", "residual")]
            for i, t in enumerate((*operands, out)):
                if t is None:
                    continue
                if not isinstance(t, Tensor) or t.device != out.device or \
                        t.device.device_type != "cuda" or t.dtype != "float32":
                    raise RuntimeDeviceError(f"{library} function {name}: operand {i} must "
                                             f"be a float32 tensor on a CUDA GPU, on the "
                                             f"output's device")
            x, w, b, r = operands
            conv(out.device.index, x.data_ptr, w.data_ptr, b.data_ptr if b is not None else 0,
                 r.data_ptr if r is not None else 0, out.data_ptr)
        run.__name__ = name
        return run


register_external_loader(CudnnModule.kind, CudnnModule.deserialize)

"""Runtime functions the VM's bytecode calls by name (registered in irc.runtime)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.diagnostics import VMError
from ..runtime.registry import register_func


@register_func("vm.builtin.shape_of")
def shape_of(x: np.ndarray) -> tuple[int, ...]:
    """The shape of a tensor as a tuple of ints (``R.shape_of``)."""
    return tuple(int(s) for s in x.shape)


@register_func("vm.builtin.tensor_to_shape")
def tensor_to_shape(x: Any) -> tuple[int, ...]:
    """The values of a 1-d integer tensor as a shape value: sizes that are run-time data
    (ONNX TopK's ``k``), bound to symbolic variables by a following ``R.match_cast``."""
    arr = x.numpy() if hasattr(x, "numpy") else np.asarray(x)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise VMError(f"vm.builtin.tensor_to_shape takes a 1-d integer tensor, got shape "
                      f"{arr.shape} and dtype {arr.dtype}")
    if (arr < 0).any():
        raise VMError(f"vm.builtin.tensor_to_shape: a size is negative ({arr.tolist()})")
    return tuple(int(v) for v in arr)

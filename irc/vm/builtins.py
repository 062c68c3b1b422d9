"""Runtime functions the VM's bytecode calls by name (registered in irc.runtime)."""

from __future__ import annotations

import numpy as np

from ..runtime.registry import register_func


@register_func("vm.builtin.shape_of")
def shape_of(x: np.ndarray) -> tuple[int, ...]:
    """The shape of a tensor as a tuple of ints (``R.shape_of``)."""
    return tuple(int(s) for s in x.shape)


@register_func("vm.builtin.tensor_to_shape")
def tensor_to_shape(x: np.ndarray) -> tuple[int, ...]:
    """The values of a 1-D integer tensor as a shape tuple (``R.tensor_to_shape``)."""
    arr = x.numpy() if hasattr(x, "numpy") else np.asarray(x)
    return tuple(int(v) for v in arr.reshape(-1))

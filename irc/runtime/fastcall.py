"""A per-kernel Python function for the common call: every buffer argument an irc CPU
Tensor (or, for the VM, a numpy array it keeps aligned and C-contiguous) of the right
dtype and shape.

The generated function checks exactly what the signature demands (dtype, rank, each
dimension, shape variables consistent between arguments, tensors the kernel writes not
read-only), reads the data pointers and
calls the native function; any other argument kind, or any mismatch, goes to the general
path (``Function.call_checked``), which stages numpy arrays and raises the precise
error. This keeps the overhead of a kernel call near that of ctypes itself.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..core import dtype as dt
from .ndarray import ALIGNMENT, Tensor, data_pointer
from .signature import eval_dim


def make_fast_call(function, arrays: bool = False) -> Callable[..., None]:
    """The fast entry point of ``function`` (an ``irc.runtime.Function``) for irc
    Tensors; with ``arrays``, for numpy arrays the caller guarantees to be 64-byte aligned
    and C-contiguous, and writeable where the kernel writes (the VM's registers: it makes
    every array it holds so, and refuses read-only arguments its kernels would write)."""
    sig = function.signature
    if any(b.strides is not None for b in sig.buffers) or function._dim_scalars:
        # Stride variables, or scalar parameters that are also dimensions: the general
        # path binds and checks them.
        return function.call_checked
    lines = []
    args = [f"a{k}" for k in range(sig.num_args)]
    lines.append(f"def fast({', '.join(args)}):")
    env: dict[str, str] = {}
    deferred = []
    ptrs = [""] * len(sig.buffers)
    scalars = [""] * len(sig.scalars)
    for pos, (kind, i) in enumerate(sig.order):
        a = f"a{pos}"
        if kind == "scalar":
            lines.append(f"    if isinstance({a}, (Tensor, ndarray)):")
            lines.append("        return slow(" + ", ".join(args) + ")")
            scalars[i] = f"c{i}"
            continue
        spec = sig.buffers[i]
        if arrays:
            lines.append(f"    if type({a}) is not ndarray or {a}.dtype != npdt{i}:")
            lines.append("        return slow(" + ", ".join(args) + ")")
        else:
            read_only = f" or {a}._read_only" if spec.written else ""
            lines.append(f"    if type({a}) is not Tensor or {a}.dtype != {spec.dtype!r} or "
                         f"{a}._array is None or {a}.data_ptr & {ALIGNMENT - 1}{read_only}:")
            lines.append("        return slow(" + ", ".join(args) + ")")
        lines.append(f"    s{pos} = {a}.shape")
        if all(type(d) is int for d in spec.shape):
            lines.append(f"    if s{pos} != {tuple(spec.shape)!r}:")
            lines.append("        return slow(" + ", ".join(args) + ")")
        else:
            lines.append(f"    if len(s{pos}) != {len(spec.shape)}:")
            lines.append("        return slow(" + ", ".join(args) + ")")
            for j, d in enumerate(spec.shape):
                if type(d) is int:
                    lines.append(f"    if s{pos}[{j}] != {d}:")
                    lines.append("        return slow(" + ", ".join(args) + ")")
                elif type(d) is str and d not in env:
                    env[d] = f"v_{len(env)}"
                    lines.append(f"    {env[d]} = s{pos}[{j}]")
                elif type(d) is str:
                    lines.append(f"    if s{pos}[{j}] != {env[d]}:")
                    lines.append("        return slow(" + ", ".join(args) + ")")
                else:
                    deferred.append((pos, j, d))
        ptrs[i] = f"data_pointer({a})" if arrays else f"{a}.data_ptr"
    consts: dict[str, Any] = {"Tensor": Tensor, "ndarray": np.ndarray,
                              "slow": function.call_checked, "cfunc": function.c_function,
                              "error": function._raise, "eval_dim": eval_dim,
                              "data_pointer": data_pointer}
    for i, spec in enumerate(sig.buffers):
        consts[f"npdt{i}"] = dt.to_numpy(spec.dtype)
    for k, cast in enumerate(function._scalar_casts):
        consts[f"cast{k}"] = cast
    if deferred:
        names = ", ".join(f"{n!r}: {v}" for n, v in env.items())
        lines.append(f"    env = {{{names}}}")
        for k, (pos, j, d) in enumerate(deferred):
            consts[f"dim{k}"] = d
            lines.append(f"    if eval_dim(dim{k}, env) != s{pos}[{j}]:")
            lines.append("        return slow(" + ", ".join(args) + ")")
    shape_vals = []
    for name, _ in sig.shape_vars:
        if name not in env:
            # Bound only through strides or not at all: the general path handles it.
            return function.call_checked
        shape_vals.append(env[name])
    if scalars:
        lines.append("    try:")
        for k in range(len(scalars)):
            lines.append(f"        c{k} = cast{k}(a{_scalar_pos(sig, k)})")
        lines.append("    except (TypeError, ValueError, OverflowError):")
        lines.append("        return slow(" + ", ".join(args) + ")")
    call_args = ptrs + shape_vals + scalars
    lines.append(f"    rc = cfunc({', '.join(call_args)})")
    lines.append("    if rc:")
    lines.append("        error(rc)")
    namespace = dict(consts)
    exec("\n".join(lines), namespace)  # noqa: S102 - generated from the signature only
    return namespace["fast"]


def _scalar_pos(sig, k: int) -> int:
    """The argument position of scalar parameter ``k``."""
    return next(pos for pos, (kind, i) in enumerate(sig.order) if kind == "scalar" and i == k)

"""Seeded random arguments of a VM function (``Executable.random_inputs``).

Shapes: a symbolic dimension takes its value from ``shapes`` (name -> int); dimensions
written as expressions of others (``n + 1``) are evaluated. Every symbolic dimension
without a value is named in one error, and so is a name in ``shapes`` that the function's
parameters do not have (with the close matches). Before anything is allocated, the bytes
the arrays need are compared with the memory available: too much is an error giving the
size, not a crash of the process.

Values: the first ``num_input`` tensors (all of them without that attribute) uniform in
[0, 1), the rest (weights) uniform in +-1/sqrt(fan-in); integers in [0, 8), or in
[0, extent) for a parameter whose values index an axis of that extent
(``VMFunction.index_extents``, from ``passes.AnnotateIndexExtents``).
"""

from __future__ import annotations

import difflib
import math
import os
from typing import Any

import numpy as np

from ..core import dtype as dt
from ..core.diagnostics import VMError
from .bytecode import VMFunction, format_expr

INTEGER_HIGH = 8  # integers that index nothing are drawn in [0, 8)


def random_arguments(fn: VMFunction, seed: int = 0, shapes: dict[str, int] | None = None,
                     available: int | None = None) -> list[np.ndarray]:
    """The random arguments of ``fn`` (see the module docstring). ``available`` is the
    memory they may take in bytes (default: what the machine has available)."""
    shapes = dict(shapes or {})
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise VMError(f"the seed of random inputs must be a whole number, 0 or more; got "
                      f"{seed!r}")
    specs = _shapes(fn, shapes)
    _check_memory(fn, specs, available if available is not None else available_memory())
    rng = np.random.default_rng(seed)
    n_in = len(fn.params) if fn.num_input is None else fn.num_input
    arrays = []
    try:
        for i, (name, (shape, np_dtype)) in enumerate(zip(fn.params, specs)):
            if dt.is_float(dt.from_numpy(np_dtype)):  # ml_dtypes' floats included
                if i < n_in:
                    arr = rng.random(shape)
                else:
                    fan_in = math.prod(shape[1:]) if len(shape) > 1 else (shape or [1])[0]
                    arr = rng.uniform(-1, 1, shape) / np.sqrt(max(fan_in, 1))
            else:
                arr = rng.integers(0, _integer_high(fn, name, np_dtype), shape)
            arrays.append(np.asarray(arr, dtype=np_dtype))
    except MemoryError:
        total = sum(math.prod(s) * np.dtype(d).itemsize for s, d in specs)
        raise VMError(f"out of memory making the random inputs of {fn.name}: they take "
                      f"{format_bytes(total)} ({_sizes(fn, specs)})") from None
    return arrays


def _shapes(fn: VMFunction, shapes: dict[str, int]) -> list[tuple[list[int], Any]]:
    """Per parameter: its shape under ``shapes`` and its numpy dtype."""
    where = f"{fn.name}'s parameters"
    names = _symbolic_names(fn)
    unknown = [n for n in shapes if n not in names]
    if unknown:
        has = ", ".join(names) if names else "none"
        lower = {n.lower(): n for n in names}
        close = sorted({lower[m] for n in unknown
                        for m in difflib.get_close_matches(n.lower(), list(lower))})
        raise VMError(f"{', '.join(unknown)}: no symbolic dimension of {where} has "
                      f"{'this name' if len(unknown) == 1 else 'these names'}; they have "
                      f"{has}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
    for name, value in shapes.items():
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise VMError(f"symbolic dimension {name} must be a positive whole number, got "
                          f"{value!r}")
    heap: dict[int, int] = {}
    missing: list[str] = []
    for chk in fn.param_checks:
        for d in chk.dims or ():
            if isinstance(d, list) and d[0] == "bind":
                name = fn.slot_names[d[1]]
                if name in shapes:
                    heap[d[1]] = int(shapes[name])
                elif name not in missing:
                    missing.append(name)
    if missing:
        raise VMError(f"{where} have symbolic dimension{'s' if len(missing) > 1 else ''} "
                      f"{', '.join(missing)} without a value: give "
                      f"{'them' if len(missing) > 1 else 'it'} "
                      f"(--shape {' --shape '.join(n + '=INT' for n in missing)} on the "
                      "command line)")
    out = []
    for name, chk in zip(fn.params, fn.param_checks):
        if chk.kind != "tensor" or chk.dims is None or not chk.dtype:
            raise VMError(f"cannot make a random value for parameter {name} of {fn.name}: "
                          "it is not a tensor of known rank and dtype")
        shape = []
        for k, d in enumerate(chk.dims):
            if isinstance(d, int):
                value = d
            elif d[0] == "bind":
                value = heap[d[1]]
            else:
                value = _evaluate(fn.exprs[d[1]], heap)
                if value < 0:
                    raise VMError(f"dimension {k} of parameter {name} of {fn.name} is "
                                  f"{format_expr(fn.exprs[d[1]], fn.slot_names)} = {value} "
                                  "with the dimensions given; give other values")
            shape.append(value)
        out.append((shape, dt.user_numpy(chk.dtype)))
    return out


def _symbolic_names(fn: VMFunction) -> list[str]:
    """The symbolic dimensions the parameters of ``fn`` bind, in order."""
    return [fn.slot_names[d[1]] for chk in fn.param_checks for d in chk.dims or ()
            if isinstance(d, list) and d[0] == "bind"]


def _evaluate(e: Any, heap: dict[int, int]) -> int:
    if isinstance(e, int):
        return e
    if e[0] == "var":
        return heap[e[1]]
    a, b = _evaluate(e[1], heap), _evaluate(e[2], heap)
    if e[0] in ("floordiv", "floormod") and b == 0:
        raise VMError("a dimension of the parameters divides by zero with the dimensions "
                      "given; give other values")
    return {"add": a + b, "sub": a - b, "mul": a * b, "min": min(a, b), "max": max(a, b),
            "floordiv": a // b if b else 0, "floormod": a % b if b else 0}[e[0]]


def _integer_high(fn: VMFunction, name: str, np_dtype: Any) -> int:
    if np_dtype == np.bool_:
        return 2
    high = fn.index_extents.get(name, INTEGER_HIGH)
    return max(1, min(high, int(np.iinfo(np_dtype).max) + 1))


def _check_memory(fn: VMFunction, specs: list[tuple[list[int], Any]],
                  available: int | None) -> None:
    sizes = [math.prod(s) for s, _ in specs]
    total = sum(n * np.dtype(d).itemsize for n, (_, d) in zip(sizes, specs))
    # Values are drawn as float64 / int64 and converted: the largest draw is alive twice.
    need = total + 16 * max(sizes, default=0)
    if available is not None and need > available:
        smaller = "smaller symbolic dimensions (--shape) or " if _symbolic_names(fn) else ""
        raise VMError(f"the random inputs of {fn.name} would take {format_bytes(total)} "
                      f"({_sizes(fn, specs)}), more than the {format_bytes(available)} of "
                      "memory available", hint=f"give {smaller}inputs from files")


def _sizes(fn: VMFunction, specs: list[tuple[list[int], Any]]) -> str:
    parts = sorted(((math.prod(s) * np.dtype(d).itemsize, name, s, d)
                    for name, (s, d) in zip(fn.params, specs)), reverse=True)
    text = ", ".join(f"{name} {tuple(s)} {np.dtype(d).name}: {format_bytes(b)}"
                     for b, name, s, d in parts[:3])
    return text + (f", and {len(parts) - 3} more" if len(parts) > 3 else "")


def format_bytes(n: int) -> str:
    """``n`` bytes in binary units: ``512 B``, ``3.00 GiB``, ``7.28 TiB``."""
    for unit, scale in (("EiB", 2 ** 60), ("PiB", 2 ** 50), ("TiB", 2 ** 40), ("GiB", 2 ** 30),
                        ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def available_memory() -> int | None:
    """Bytes of memory this process can still take: the machine's available memory, or
    less under a control group's limit; None where neither can be read."""
    found = []
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
                    break
    except (OSError, ValueError, IndexError):
        try:
            found.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        except (ValueError, OSError, AttributeError):
            pass
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        if limit.isdigit():
            with open("/sys/fs/cgroup/memory.current") as f:
                found.append(max(0, int(limit) - int(f.read().strip())))
    except (OSError, ValueError):
        pass
    return min(found) if found else None

"""The reference interpreter for loop IR: runs any PrimFunc on numpy arrays.

``run(func, a, b, out)`` executes ``func`` (block form or lowered form) with numpy
arrays for buffer parameters (outputs are written in place) and Python numbers for
scalar parameters; symbolic shapes are bound from the arrays. It is the oracle that
code generators are tested against, so it follows C/LLVM semantics: integer division
truncates (``Div``/``Mod``) or floors (``FloorDiv``/``FloorMod``), narrow integers wrap
around, float32 arithmetic rounds in float32, and every memory access is bounds-checked
(an :class:`InterpreterError` names the buffer and index). The function is translated
once into Python source (see ``codegen.py``) and cached.

GPU kernels run as on a GPU (SIMT, see ``simt.py``). A kernel is the subtree of a
``thread_extent`` attribute of a ``blockIdx``/``threadIdx`` axis met in host code; the
launches inside it give the grid and block dimensions (evaluated when the kernel starts).
Blocks run one after another; the threads of a block run in lock-step between barriers
(``T.tvm_storage_sync("shared")``): every thread runs to its next barrier, in reverse
thread order, before any goes on. ``shared`` memory is one array per block, ``local``
memory one per thread, both filled at allocation with values that show when read
before written (NaN, the largest integer). Errors: *data races* — an element of shared
or global memory that one thread writes and another thread of the block reads or writes
with no barrier in between, or that a thread of another block touches at any time of
the launch; *barrier divergence* — some threads of a block finish while others wait at
a barrier, or threads wait at different barriers; a global allocation inside a kernel.
A function with loops bound to ``blockIdx``/``threadIdx`` (block form or lowered) is
first lowered with :data:`irc.tir.transform.LOWER_TIR_GPU` (kernels in launch form with
the barriers ``ThreadSync`` places: what the CUDA code generator translates), so
GPU-scheduled IR always runs under these semantics. Host code and ``vthread`` attributes
run as sequential loops.

Limits: lock-step holds between barriers only, so warp-synchronous code (and
``T.tvm_storage_sync("warp")``) is not modeled; barriers are matched by statement, not
by loop iteration; accesses through a view that reinterprets memory as another dtype
are not checked for races; ``match_buffer`` views take the layout of their source.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core import dtype as dt
from ...core.functor import collect
from ..stmt import PrimFunc
from ..transform.lower import lower_primfunc, lower_primfunc_for_gpu
from ..transform.lower_narrow_dtypes import mentions_narrow as _mentions_narrow
from ..transform.lower_thread_binding import is_thread_loop
from .codegen import PythonGenerator
from .runtime import HELPERS, InterpreterError, bf16_round, storage_dtype
from .simt import SIMT_HELPERS

__all__ = ["run", "compile_func", "CompiledFunc", "InterpreterError"]


class CompiledFunc:
    """A PrimFunc translated to Python; call it like :func:`run` (without ``func``)."""

    def __init__(self, func: PrimFunc):
        self.func = func
        self.key = func  # the function as given (``func`` may be its GPU lowering)
        self.name = str(func.attrs.get("global_symbol", "main"))
        gen = PythonGenerator(func)
        self.source = gen.generate()
        namespace: dict[str, Any] = {**HELPERS, **SIMT_HELPERS}
        namespace["_K"] = gen.consts
        try:
            code = compile(self.source, f"<irc interpreter: {self.name}>", "exec")
        except (SyntaxError, RecursionError, MemoryError) as err:  # pragma: no cover
            raise InterpreterError(f"{self.name}: the interpreter could not compile its "
                                   f"translation of this function ({err}); the function is "
                                   "too large or too deeply nested for it") from None
        exec(code, namespace)  # noqa: S102 - source generated from IR by this module
        self._kernel = namespace["kernel"]
        self.free_vars = [(v.name, v.dtype) for v, _ in gen.free_vars]

    def __call__(self, *args: Any, **scalars: Any) -> None:
        func = self.func
        params = func.params
        if len(args) > len(params):
            raise InterpreterError(f"{self.name} takes {len(params)} arguments, got {len(args)}")
        values: list[Any] = []
        copies: list[tuple[np.ndarray, np.ndarray]] = []
        for j, p in enumerate(params):
            if j < len(args):
                value = args[j]
            elif p.name in scalars:
                value = scalars[p.name]
            else:
                raise InterpreterError(f"{self.name}: missing argument #{j} ({p.name}); it "
                                       f"takes {len(params)} arguments")
            buf = func.buffer_map.get(p)
            if buf is not None:
                value = self._array(buf, value, copies)
            else:
                value = _scalar(p.name, p.dtype, value)
            values.append(value)
        kw = {}
        for name, dtype in self.free_vars:
            if name not in scalars:
                raise InterpreterError(f"{self.name}: variable {name} is not bound by any "
                                       f"parameter; pass its value as run(..., {name}=...)")
            kw[name] = _scalar(name, dtype, scalars[name])
        try:
            with np.errstate(all="ignore"):
                self._kernel(values, kw)
        except ZeroDivisionError:
            raise InterpreterError(f"{self.name}: integer division by zero") from None
        except IndexError as err:
            raise InterpreterError(f"{self.name}: memory access outside a buffer's memory "
                                   f"(a buffer view larger than its allocation): {err}") from None
        for orig, copy in copies:
            orig[...] = copy

    def _array(self, buf: Any, value: Any, copies: list) -> np.ndarray:
        if not isinstance(value, np.ndarray):
            raise InterpreterError(f"{self.name}: parameter {buf.name} needs a numpy array, got "
                                   f"{type(value).__name__}")
        want = storage_dtype(dt.element_of(buf.dtype))
        if value.dtype != want:
            raise InterpreterError(f"{self.name}: parameter {buf.name} has dtype {buf.dtype} "
                                   f"but the array is {value.dtype}")
        if value.ndim != buf.ndim:
            raise InterpreterError(f"{self.name}: parameter {buf.name} has {buf.ndim} "
                                   f"dimensions but the array has {value.ndim}")
        if not value.flags.c_contiguous or not value.flags.writeable:
            copy = np.asarray(value, order="C").copy()
            if value.flags.writeable:
                copies.append((value, copy))
            return copy
        return value


def _scalar(name: str, dtype: str, value: Any) -> Any:
    if dtype == "handle":
        if not isinstance(value, np.ndarray):
            raise InterpreterError(f"parameter {name} is a pointer: pass a numpy array")
        return value.reshape(-1)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if dt.is_bool(dtype):
        return bool(value)
    if dt.is_integer(dtype):
        if isinstance(value, (float, np.floating)) or not isinstance(value, (int, np.integer)):
            raise InterpreterError(f"parameter {name} is {dtype}: pass an integer, got "
                                   f"{value!r}")
        v = int(value)
        if not dt.min_value(dtype) <= v <= dt.max_value(dtype):
            raise InterpreterError(f"parameter {name}: {v} does not fit in {dtype}")
        return v
    if dtype == "bfloat16":
        return bf16_round(value)
    return np.dtype(dtype).type(value)


_CACHE: dict[int, CompiledFunc] = {}
_CACHE_LIMIT = 64


def _has_thread_loops(func: PrimFunc) -> bool:
    return bool(collect(func.body, is_thread_loop))


def compile_func(func: PrimFunc) -> CompiledFunc:
    """Translate ``func`` once (cached by identity) and return the callable."""
    if not isinstance(func, PrimFunc):
        raise InterpreterError(f"the interpreter runs PrimFuncs, got {type(func).__name__}")
    hit = _CACHE.get(id(func))
    if hit is not None and hit.key is func:
        return hit
    # GPU-scheduled functions run as the GPU runs them: lowered to kernels in launch form,
    # with the barriers ThreadSync places (what the CUDA code generator translates).
    # Narrow dtypes (float8, int4, ...) run as compiled code runs them: lowered, so loads
    # decode bytes and stores round (LowerNarrowDTypes).
    if _has_thread_loops(func):
        body = lower_primfunc_for_gpu(func)
    elif _mentions_narrow(func):
        body = lower_primfunc(func)
    else:
        body = func
    compiled = CompiledFunc(body)
    compiled.key = func
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[id(func)] = compiled
    return compiled


def run(func: PrimFunc, *args: Any, **scalars: Any) -> None:
    """Execute ``func``: numpy arrays for buffer parameters (written in place), Python
    numbers for scalar parameters, keyword arguments for parameters or free variables by
    name. Raises :class:`InterpreterError` on out-of-bounds accesses, failed assertions,
    division by zero and bad arguments."""
    compile_func(func)(*args, **scalars)

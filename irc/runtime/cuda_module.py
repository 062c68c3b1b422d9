"""Loading cubins and launching their kernels through the CUDA driver API.

``CUDAModule(cubin, {"vadd": KernelSpec(("handle", "handle", "handle", "int32"))})``
holds a cubin (from :func:`irc.codegen.nvrtc.compile_cuda`) and the parameter dtypes of
its ``extern "C"`` kernels. It is loaded on a GPU the first time a kernel is launched
there (``cuModuleLoadData`` in the device's primary context, once per device), and

    mod.launch("vadd", grid=(n // 256, 1, 1), block=(256, 1, 1), args=[a, b, c, n])

launches a kernel asynchronously on a stream (the legacy default stream unless
``stream`` is given). **Arguments**, one per declared parameter, in order:

- ``"handle"`` (a device pointer): an irc :class:`~irc.runtime.Tensor` on the GPU, any
  object with ``__cuda_array_interface__`` (torch, cupy), or an int address;
- a scalar dtype (``int8`` ... ``int64``, ``uint8`` ... ``uint64``, ``bool``,
  ``float16``, ``bfloat16``, ``float32``, ``float64``): a Python or numpy number,
  checked to fit and passed by value with the C layout of that type (``float16`` and
  ``bfloat16`` as their 16 bits).

The driver receives ``kernelParams`` as an array of pointers to the values, so the
kernel's C signature must list exactly these parameters in this order (``float* a``,
``int n``, ...). Grid and block are checked against the device's limits and the
kernel's own (its registers bound the threads per block); dynamic shared memory above
48 KiB is enabled per kernel with ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``.

A kernel that faults (an out-of-bounds access) reports its error at the next
synchronization, and leaves the context unusable for the rest of the process (see
:mod:`irc.runtime.cuda_backend`); ``launch(..., synchronize=True)`` waits for the kernel
so the :class:`CUDAError` names it.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..core import dtype as dt
from ..core.diagnostics import (
    RuntimeArgumentCountError,
    RuntimeArgumentTypeError,
    RuntimeDeviceError,
)
from ..core.dtype import bfloat16_bits
from . import cuda_backend
from .cuda_backend import CUDAError, Stream
from .device import Device
from .ndarray import Tensor

# Without opting in, static plus dynamic shared memory of a block is at most 48 KiB.
DEFAULT_SHARED_LIMIT = 48 * 1024

_SCALAR_CTYPES: dict[str, Any] = {
    "bool": ctypes.c_bool, "int8": ctypes.c_int8, "int16": ctypes.c_int16,
    "int32": ctypes.c_int32, "int64": ctypes.c_int64, "uint8": ctypes.c_uint8,
    "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64,
    "float16": ctypes.c_uint16, "bfloat16": ctypes.c_uint16, "float32": ctypes.c_float,
    "float64": ctypes.c_double, "handle": ctypes.c_void_p,
}


@dataclass(frozen=True)
class KernelSpec:
    """What launching a kernel needs to know: the dtypes of its parameters
    (``"handle"`` for a device pointer, else a scalar dtype) and the dynamic shared
    memory (bytes) it is launched with unless a launch says otherwise."""

    params: tuple[str, ...]
    shared_bytes: int = 0

    def __post_init__(self):
        params = (self.params,) if isinstance(self.params, str) else tuple(self.params)
        for i, p in enumerate(params):
            if p not in _SCALAR_CTYPES:
                raise CUDAError(f"kernel parameter {i} has dtype {p!r}; a CUDA kernel "
                                f"takes 'handle' (a device pointer) or one of "
                                f"{', '.join(k for k in _SCALAR_CTYPES if k != 'handle')}")
        if not isinstance(self.shared_bytes, int) or self.shared_bytes < 0:
            raise CUDAError(f"shared_bytes must be a non-negative int, got "
                            f"{self.shared_bytes!r}")
        object.__setattr__(self, "params", params)


@dataclass
class _LoadedFunction:
    handle: Any
    max_threads_per_block: int
    static_shared_bytes: int
    max_dynamic_shared_bytes: int  # what the kernel may use now (opted in or by default)


@dataclass
class _LoadedModule:
    handle: Any
    driver: Any  # the driver module that loaded it (which unloads it)
    functions: dict[str, _LoadedFunction] = field(default_factory=dict)


def _device_index(device: Any) -> int:
    if isinstance(device, Device):
        if device.device_type != "cuda":
            raise CUDAError(f"CUDA kernels run on CUDA devices, not {device}")
        return device.index
    if isinstance(device, int) and not isinstance(device, bool) and device >= 0:
        return device
    raise CUDAError(f"device must be irc.cuda(i) or a GPU index, got {device!r}")


def _dims(value: Any, what: str, kernel: str) -> tuple[int, int, int]:
    dims = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(dims) <= 3 or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in dims):
        raise CUDAError(f"kernel '{kernel}': {what} must be 1 to 3 ints, got {value!r}")
    dims = tuple(int(v) for v in dims) + (1,) * (3 - len(dims))
    if min(dims) < 1:
        raise CUDAError(f"kernel '{kernel}': {what} {dims} has an empty dimension")
    return dims


def _handle_converter(kernel: str, pos: int) -> Callable[[Any, list], Any]:
    def convert(a: Any, devices: list) -> Any:
        if isinstance(a, Tensor):
            if a.device.device_type != "cuda":
                raise RuntimeDeviceError(
                    f"kernel '{kernel}': argument {pos} is a {a.device} tensor; CUDA "
                    "kernels take tensors on the GPU (.copyto(irc.cuda()))")
            devices.append(a.device.index)
            return ctypes.c_void_p(a.data_ptr)
        cai = getattr(a, "__cuda_array_interface__", None)
        if cai is not None:
            return ctypes.c_void_p(int(cai["data"][0]))
        if isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_)):
            if not 0 <= int(a) < 2**64:
                raise RuntimeArgumentTypeError(f"kernel '{kernel}': argument {pos} ({int(a)}) "
                                               "is not a device address")
            return ctypes.c_void_p(int(a))
        raise RuntimeArgumentTypeError(
            f"kernel '{kernel}': argument {pos} is a device pointer; pass a CUDA tensor or "
            f"an int address, not {type(a).__name__}")
    return convert


def _scalar_converter(kernel: str, pos: int, dtype: str) -> Callable[[Any, list], Any]:
    ctype = _SCALAR_CTYPES[dtype]
    where = f"kernel '{kernel}': argument {pos} ({dtype})"

    def bad(a: Any) -> RuntimeArgumentTypeError:
        return RuntimeArgumentTypeError(f"{where} takes a number, not {type(a).__name__} "
                                        f"{a!r}")

    if dtype == "bool":
        def convert(a: Any, devices: list) -> Any:
            if isinstance(a, (bool, np.bool_)) or (isinstance(a, (int, np.integer))
                                                   and int(a) in (0, 1)):
                return ctype(bool(a))
            raise bad(a)
    elif dt.is_integer(dtype):
        bits = dt.bits(dtype)
        lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1)) if dt.is_int(dtype) else (0, 2 ** bits)

        def convert(a: Any, devices: list) -> Any:
            if not isinstance(a, (int, np.integer)) or isinstance(a, (bool, np.bool_)):
                raise bad(a)
            if not lo <= int(a) < hi:
                raise RuntimeArgumentTypeError(f"{where}: {int(a)} does not fit in {dtype}")
            return ctype(int(a))
    elif dtype == "float16":
        def convert(a: Any, devices: list) -> Any:
            if not isinstance(a, (int, float, np.integer, np.floating)) \
                    or isinstance(a, (bool, np.bool_)):
                raise bad(a)
            return ctype(int(np.array(a, np.float16).view(np.uint16)))
    elif dtype == "bfloat16":
        def convert(a: Any, devices: list) -> Any:
            if not isinstance(a, (int, float, np.integer, np.floating)) \
                    or isinstance(a, (bool, np.bool_)):
                raise bad(a)
            return ctype(int(bfloat16_bits(np.array([a], np.float32))[0]))
    else:
        def convert(a: Any, devices: list) -> Any:
            if not isinstance(a, (int, float, np.integer, np.floating)) \
                    or isinstance(a, (bool, np.bool_)):
                raise bad(a)
            return ctype(float(a))
    return convert


class CUDAModule:
    """A cubin and the :class:`KernelSpec` of each kernel to launch from it (see the
    module docstring); loaded lazily on each GPU it is used on."""

    def __init__(self, cubin: bytes, functions: Mapping[str, KernelSpec]):
        if not isinstance(cubin, (bytes, bytearray)) or not bytes(cubin[:4]) == b"\x7fELF":
            raise CUDAError("CUDAModule takes a cubin (an ELF image from "
                            "irc.codegen.nvrtc.compile_cuda)")
        for name, spec in functions.items():
            if not isinstance(spec, KernelSpec):
                raise CUDAError(f"kernel '{name}': expected a KernelSpec, got "
                                f"{type(spec).__name__}")
        self.cubin = bytes(cubin)
        self.functions = dict(functions)
        self._converters = {
            name: [(_handle_converter(name, i) if p == "handle"
                    else _scalar_converter(name, i, p)) for i, p in enumerate(spec.params)]
            for name, spec in self.functions.items()}
        self._loaded: dict[int, _LoadedModule] = {}
        self._lock = threading.Lock()

    # -- loading ------------------------------------------------------------------------
    def _module(self, index: int) -> _LoadedModule:
        loaded = self._loaded.get(index)
        if loaded is not None:
            cuda_backend.context(index)
            return loaded
        with self._lock:
            loaded = self._loaded.get(index)
            if loaded is None:
                d = cuda_backend.driver()
                cuda_backend.context(index)
                image = np.frombuffer(self.cubin, np.uint8)
                err, handle = d.cuModuleLoadData(image.ctypes.data)
                if int(err) != 0:
                    name = cuda_backend.error_name(d, err)
                    major, minor = cuda_backend.compute_capability(index)
                    raise CUDAError(
                        f"cannot load the cubin on cuda({index}) (compute capability "
                        f"{major}.{minor}): {name}", code=name,
                        hint=f"compile for this GPU: Target('cuda -arch=sm_{major}{minor}')"
                        if name in ("CUDA_ERROR_NO_BINARY_FOR_GPU",
                                    "CUDA_ERROR_INVALID_IMAGE") else None)
                loaded = _LoadedModule(handle, d)
                self._loaded[index] = loaded
        return loaded

    def _function(self, name: str, index: int) -> _LoadedFunction:
        module = self._module(index)
        fn = module.functions.get(name)
        if fn is not None:
            return fn
        spec = self._spec(name)
        d = cuda_backend.driver()
        err, handle = d.cuModuleGetFunction(module.handle, name.encode())
        if int(err) != 0:
            raise CUDAError(f"the cubin has no kernel '{name}' "
                            f"({cuda_backend.error_name(d, err)})",
                            hint='declare it extern "C" __global__ so its name is not '
                                 "mangled")
        attr = d.CUfunction_attribute

        def get(a: str) -> int:
            err, value = d.cuFuncGetAttribute(getattr(attr, a), handle)
            cuda_backend.check(d, err, f"cuFuncGetAttribute({a})", kernel=name)
            return int(value)

        fn = _LoadedFunction(handle, get("CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK"),
                             get("CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES"), 0)
        fn.max_dynamic_shared_bytes = DEFAULT_SHARED_LIMIT - fn.static_shared_bytes
        self._enable_shared(name, fn, spec.shared_bytes, index)
        module.functions[name] = fn
        return fn

    def _enable_shared(self, name: str, fn: _LoadedFunction, nbytes: int, index: int) -> None:
        """Opt the kernel in to ``nbytes`` of dynamic shared memory when that is more than
        it may use already."""
        limit = cuda_backend.device_attributes(index).max_shared_memory_per_block_optin
        if nbytes + fn.static_shared_bytes > limit:
            raise CUDAError(
                f"kernel '{name}' needs {nbytes} bytes of dynamic shared memory plus "
                f"{fn.static_shared_bytes} static; cuda({index}) allows {limit} per block")
        if nbytes <= fn.max_dynamic_shared_bytes:
            return
        d = cuda_backend.driver()
        attr = d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        (err,) = d.cuFuncSetAttribute(fn.handle, attr, nbytes)
        cuda_backend.check(d, err, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                           kernel=name)
        fn.max_dynamic_shared_bytes = nbytes

    def _spec(self, name: str) -> KernelSpec:
        spec = self.functions.get(name)
        if spec is None:
            known = ", ".join(sorted(self.functions)) or "none"
            raise CUDAError(f"the module has no kernel '{name}' (kernels: {known})")
        return spec

    # -- launching ----------------------------------------------------------------------
    def pack_arguments(self, name: str, args: Sequence[Any]) -> tuple[Any, list, list[int]]:
        """``kernelParams`` for ``args`` (the address of an array of pointers to the
        converted values), the values (kept alive until the launch returns) and the GPUs
        of the tensor arguments; argument errors name the kernel and the position."""
        spec = self._spec(name)
        converters = self._converters[name]
        if len(args) != len(converters):
            raise RuntimeArgumentCountError(
                f"kernel '{name}' takes {len(converters)} arguments "
                f"({', '.join(spec.params)}), got {len(args)}")
        devices: list[int] = []
        values = [convert(a, devices) for convert, a in zip(converters, args)]
        pointers = (ctypes.c_void_p * max(1, len(values)))(
            *[ctypes.addressof(v) for v in values])
        return pointers, values, devices

    def launch(self, name: str, grid: Any, block: Any, args: Sequence[Any],
               shared_bytes: int | None = None, stream: Any = None, *,
               device: Any = None, synchronize: bool = False) -> None:
        """Launch kernel ``name`` on ``grid`` blocks of ``block`` threads (tuples of 1 to
        3 ints) with ``args`` (see the module docstring) and ``shared_bytes`` of dynamic
        shared memory (default: the KernelSpec's), on ``stream`` (a :class:`Stream`, a raw
        handle, or None for the legacy default stream).

        The GPU is ``device`` if given, else the stream's, else the tensor arguments'
        (which must agree), else GPU 0. The launch is asynchronous unless
        ``synchronize``, which waits for the kernel and reports a fault as its own.
        """
        spec = self._spec(name)
        grid3 = _dims(grid, "grid", name)
        block3 = _dims(block, "block", name)
        pointers, values, devices = self.pack_arguments(name, args)
        if device is not None:
            index = _device_index(device)
        elif isinstance(stream, Stream):
            index = stream.device
        else:
            index = devices[0] if devices else 0
        if isinstance(stream, Stream) and stream.device != index:
            raise CUDAError(f"kernel '{name}' launches on cuda({index}) but its stream "
                            f"belongs to cuda({stream.device})")
        if any(i != index for i in devices):
            raise RuntimeDeviceError(
                f"kernel '{name}' launches on cuda({index}) but takes tensors on "
                f"{', '.join(f'cuda({i})' for i in sorted(set(devices)))}")
        nbytes = spec.shared_bytes if shared_bytes is None else shared_bytes
        if not isinstance(nbytes, int) or nbytes < 0:
            raise CUDAError(f"kernel '{name}': shared_bytes must be a non-negative int, "
                            f"got {nbytes!r}")
        fn = self._function(name, index)
        self._check_config(name, fn, grid3, block3, index)
        self._enable_shared(name, fn, nbytes, index)
        d = cuda_backend.driver()
        handle = cuda_backend.stream_handle(stream)
        cuda_backend.note_launch(index, name)
        # ``values`` holds the argument values ``pointers`` points to until the driver
        # has copied them (during the call).
        (err,) = d.cuLaunchKernel(fn.handle, *grid3, *block3, nbytes, handle,
                                  ctypes.addressof(pointers), 0)
        cuda_backend.check(d, err, "cuLaunchKernel", kernel=name)
        if synchronize:
            (err,) = (d.cuStreamSynchronize(handle) if stream is not None
                      else d.cuCtxSynchronize())
            cuda_backend.check(d, err, "synchronizing after the launch", kernel=name)

    def _check_config(self, name: str, fn: _LoadedFunction, grid: tuple[int, int, int],
                      block: tuple[int, int, int], index: int) -> None:
        attrs = cuda_backend.device_attributes(index)
        for what, dims, limits in (("grid", grid, attrs.max_grid_dims),
                                   ("block", block, attrs.max_block_dims)):
            for axis, (v, lim) in enumerate(zip(dims, limits)):
                if v > lim:
                    raise CUDAError(f"kernel '{name}': {what} {dims} exceeds cuda({index})'s "
                                    f"limit {lim} in dimension {'xyz'[axis]}")
        threads = block[0] * block[1] * block[2]
        if threads > attrs.max_threads_per_block:
            raise CUDAError(f"kernel '{name}': block {block} has {threads} threads; "
                            f"cuda({index}) allows at most {attrs.max_threads_per_block}")
        if threads > fn.max_threads_per_block:
            raise CUDAError(f"kernel '{name}': block {block} has {threads} threads, but the "
                            f"kernel's register use allows at most {fn.max_threads_per_block}",
                            hint="launch fewer threads per block, or compile with "
                                 "-maxrregcount / __launch_bounds__")

    def function_attributes(self, name: str, device: Any = 0) -> dict[str, int]:
        """The compiled kernel's resource use on a GPU: registers per thread, static
        shared and local memory (bytes), and the largest block it can be launched with."""
        index = _device_index(device)
        fn = self._function(name, index)
        d = cuda_backend.driver()
        out = {}
        for key, attr in (("num_regs", "CU_FUNC_ATTRIBUTE_NUM_REGS"),
                          ("local_bytes", "CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES")):
            err, value = d.cuFuncGetAttribute(getattr(d.CUfunction_attribute, attr),
                                              fn.handle)
            cuda_backend.check(d, err, f"cuFuncGetAttribute({attr})", kernel=name)
            out[key] = int(value)
        out["static_shared_bytes"] = fn.static_shared_bytes
        out["max_threads_per_block"] = fn.max_threads_per_block
        return out

    def __del__(self):
        for index, loaded in list(getattr(self, "_loaded", {}).items()):
            cuda_backend.destroy(loaded.driver, index, loaded.driver.cuModuleUnload,
                                 loaded.handle)

    def __repr__(self) -> str:
        return (f"<irc CUDAModule kernels={sorted(self.functions)}, {len(self.cubin)} bytes "
                f"of cubin>")


"""CUDA device memory through the driver API of cuda-python (the ``cuda`` extra).

Only what tensors need: device count and capability, allocation in the device's primary
context, copies host<->device<->device, synchronization. Imported lazily: importing irc
never loads CUDA bindings. Without the package, or without a GPU, calls raise an irc
error that says so.
"""

from __future__ import annotations

import importlib
import threading

from ..core.diagnostics import IRCError, MissingDependencyError

_lock = threading.Lock()
_driver = None
_contexts: dict[int, object] = {}


class CUDAError(IRCError):
    """A CUDA driver call failed, or no GPU is available."""


def driver():
    """The cuda-python driver module, initialized (cuInit) once."""
    global _driver
    if _driver is not None:
        return _driver
    with _lock:
        if _driver is not None:
            return _driver
        mod = None
        for name in ("cuda.bindings.driver", "cuda.cuda"):
            try:
                mod = importlib.import_module(name)
                break
            except ImportError:
                continue
        if mod is None:
            raise MissingDependencyError(
                "CUDA tensors need the Python package 'cuda-python': pip install 'irc[cuda]'")
        try:
            (err,) = mod.cuInit(0)
        except Exception as exc:  # noqa: BLE001 - no driver library on this machine
            raise CUDAError(f"the CUDA driver cannot be loaded: {exc}",
                            hint="this machine needs an NVIDIA GPU and driver") from None
        _check(mod, err, "cuInit")
        _driver = mod
    return _driver


def _check(mod, err, what: str) -> None:
    if int(err) != 0:
        name = ""
        try:
            _, name = mod.cuGetErrorName(err)
            name = name.decode() if isinstance(name, bytes) else str(name)
        except Exception:  # noqa: BLE001 - best effort
            pass
        raise CUDAError(f"CUDA call {what} failed with error {int(err)} {name}".rstrip())


def device_count() -> int:
    """Number of GPUs (0 when the package, the driver or a GPU is missing)."""
    try:
        d = driver()
    except IRCError:
        return 0
    err, n = d.cuDeviceGetCount()
    return int(n) if int(err) == 0 else 0


def _context(index: int):
    """Make the primary context of GPU ``index`` current and return it."""
    d = driver()
    ctx = _contexts.get(index)
    if ctx is None:
        count = device_count()
        if index >= count:
            raise CUDAError(f"no CUDA device {index}: this machine has {count} GPU(s)",
                            hint="use irc.cpu() on a machine without a GPU")
        err, dev = d.cuDeviceGet(index)
        _check(d, err, "cuDeviceGet")
        err, ctx = d.cuDevicePrimaryCtxRetain(dev)
        _check(d, err, "cuDevicePrimaryCtxRetain")
        _contexts[index] = ctx
    (err,) = d.cuCtxSetCurrent(ctx)
    _check(d, err, "cuCtxSetCurrent")
    return ctx


def compute_capability(index: int) -> tuple[int, int]:
    """(major, minor) compute capability of GPU ``index``."""
    d = driver()
    _context(index)
    err, dev = d.cuDeviceGet(index)
    _check(d, err, "cuDeviceGet")
    attrs = d.CUdevice_attribute
    err, major = d.cuDeviceGetAttribute(attrs.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    _check(d, err, "cuDeviceGetAttribute")
    err, minor = d.cuDeviceGetAttribute(attrs.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
    _check(d, err, "cuDeviceGetAttribute")
    return int(major), int(minor)


def synchronize(index: int) -> None:
    """Wait for all work queued on GPU ``index``."""
    d = driver()
    _context(index)
    (err,) = d.cuCtxSynchronize()
    _check(d, err, "cuCtxSynchronize")


class DeviceMemory:
    """An allocation of ``nbytes`` on GPU ``index``, freed when garbage collected."""

    def __init__(self, nbytes: int, index: int):
        d = driver()
        _context(index)
        self.index = index
        self.nbytes = nbytes
        err, ptr = d.cuMemAlloc(max(1, nbytes))
        _check(d, err, f"cuMemAlloc({nbytes})")
        self.ptr = int(ptr)
        self._handle = ptr

    def __del__(self):
        d = _driver
        if d is not None and getattr(self, "_handle", None) is not None:
            try:
                _context(self.index)
                d.cuMemFree(self._handle)
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass


def copy_host_to_device(dst: DeviceMemory, host_ptr: int, nbytes: int) -> None:
    """Copy ``nbytes`` from host memory to the device."""
    d = driver()
    _context(dst.index)
    (err,) = d.cuMemcpyHtoD(dst.ptr, host_ptr, nbytes)
    _check(d, err, "cuMemcpyHtoD")


def copy_device_to_host(host_ptr: int, src: DeviceMemory, nbytes: int) -> None:
    """Copy ``nbytes`` from the device to host memory."""
    d = driver()
    _context(src.index)
    (err,) = d.cuMemcpyDtoH(host_ptr, src.ptr, nbytes)
    _check(d, err, "cuMemcpyDtoH")


def copy_device_to_device(dst: DeviceMemory, src: DeviceMemory, nbytes: int) -> None:
    """Copy ``nbytes`` between two allocations on one device."""
    d = driver()
    _context(dst.index)
    (err,) = d.cuMemcpyDtoD(dst.ptr, src.ptr, nbytes)
    _check(d, err, "cuMemcpyDtoD")

"""Tensors: n-dimensional arrays on a device.

On the CPU a :class:`Tensor` wraps a numpy array whose storage is 64-byte aligned and
C-contiguous (what compiled kernels assume). On CUDA it owns device memory (the ``cuda``
extra). Tensors speak DLPack both ways: ``np.from_dlpack(t)`` and
:func:`from_dlpack` (zero-copy when the producer's memory is aligned and contiguous).
``bfloat16`` data is held as its raw ``uint16`` bits.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any, Sequence

import numpy as np

from ..core import dtype as dt
from ..core.diagnostics import IRCError, RuntimeShapeError
from . import cuda_backend
from .device import DL_CPU, DL_CUDA, Device, DeviceError, cpu
from .device import device as as_device

ALIGNMENT = 64


def aligned_empty(shape: Sequence[int], np_dtype: Any) -> np.ndarray:
    """An uninitialized C-contiguous numpy array whose data is 64-byte aligned."""
    np_dtype = np.dtype(np_dtype)
    shape = tuple(int(s) for s in shape)
    count = 1
    for s in shape:
        if s < 0:
            raise RuntimeShapeError(f"negative dimension in shape {shape}")
        count *= s
    nbytes = count * np_dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT + np_dtype.itemsize, dtype=np.uint8)
    offset = (-raw.ctypes.data) % ALIGNMENT
    if nbytes == 0:
        # numpy may move the pointer of an empty slice; slice one element, then none.
        return raw[offset:offset + np_dtype.itemsize].view(np_dtype)[:0].reshape(shape)
    return raw[offset:offset + nbytes].view(np_dtype).reshape(shape)


def _probe_data_offset() -> int | None:
    """Offset of the data pointer inside a numpy array object (CPython + numpy ABI:
    ``PyObject_HEAD`` then ``char *data``), verified on sample arrays; None if it does
    not hold, then the slower ``arr.ctypes.data`` is used."""
    if sys.implementation.name != "cpython":
        return None
    off = 2 * ctypes.sizeof(ctypes.c_void_p)
    samples = [np.zeros(5), np.ones((3, 4), np.float32)[1:], np.arange(7, dtype=np.int8)[::2]]
    for arr in samples:
        if ctypes.c_void_p.from_address(id(arr) + off).value != arr.ctypes.data:
            return None
    return off


_DATA_OFFSET = _probe_data_offset()


def data_pointer(arr: np.ndarray) -> int:
    """The address of ``arr``'s first element (fast path of ``arr.ctypes.data``)."""
    if _DATA_OFFSET is not None:
        return ctypes.c_void_p.from_address(id(arr) + _DATA_OFFSET).value or 0
    return arr.ctypes.data


def is_aligned(arr: np.ndarray) -> bool:
    """True when ``arr``'s data is 64-byte aligned."""
    return data_pointer(arr) % ALIGNMENT == 0


def _dtype_of(arr: np.ndarray, dtype: str | None) -> str:
    if dtype is not None:
        return dt.check(dtype)
    if arr.dtype.name == "bfloat16":  # ml_dtypes
        return "bfloat16"
    try:
        return dt.from_numpy(arr.dtype)
    except IRCError:
        raise RuntimeShapeError(f"numpy dtype {arr.dtype} has no irc equivalent") from None


def _to_storage(arr: np.ndarray, dtype: str) -> np.ndarray:
    """``arr`` converted to the numpy storage dtype of irc dtype ``dtype``."""
    if dtype == "bfloat16":
        if arr.dtype == np.uint16 or arr.dtype.name == "bfloat16":
            return arr.view(np.uint16) if arr.dtype.itemsize == 2 else arr
        f = np.ascontiguousarray(arr, dtype=np.float32)
        bits = f.view(np.uint32).astype(np.uint64)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
        nan = np.isnan(f)
        if nan.any():
            rounded[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)
        return rounded
    return arr.astype(dt.to_numpy(dtype), copy=False)


class Tensor:
    """An array on a device: ``.shape``, ``.dtype``, ``.device``, ``.numpy()``."""

    __slots__ = ("_array", "_mem", "shape", "dtype", "device", "data_ptr", "__weakref__")

    def __init__(self, *, array: np.ndarray | None = None, mem: Any = None,
                 shape: tuple[int, ...] = (), dtype: str = "float32",
                 device: Device | None = None):
        self.device = device or cpu()
        self._array = array
        self._mem = mem
        if array is not None:
            self.shape = tuple(array.shape)
            self.data_ptr = array.ctypes.data
        else:
            self.shape = tuple(shape)
            self.data_ptr = mem.ptr if mem is not None else 0
        self.dtype = dtype

    # -- basic properties ---------------------------------------------------------------
    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        """Size of the data in bytes."""
        return self.size * dt.itemsize(self.dtype)

    @property
    def is_cpu(self) -> bool:
        """True for tensors in host memory."""
        return self.device.device_type == "cpu"

    # -- data movement ------------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """A numpy copy of the data (bfloat16 as its uint16 bits)."""
        if self._array is not None:
            return self._array.copy()
        out = aligned_empty(self.shape, dt.to_numpy(self.dtype))
        if self.nbytes:
            cuda_backend.copy_device_to_host(out.ctypes.data, self._mem, self.nbytes)
        return out

    asnumpy = numpy

    def copyfrom(self, source: Any) -> Tensor:
        """Overwrite the data with ``source`` (a numpy array, Tensor or sequence) of the
        same shape; converts dtype like numpy."""
        if isinstance(source, Tensor):
            if source.shape != self.shape or source.dtype != self.dtype:
                raise RuntimeShapeError(
                    f"copyfrom: tensor of shape {source.shape} {source.dtype} into "
                    f"{self.shape} {self.dtype}")
            if not self.is_cpu and not source.is_cpu:
                cuda_backend.copy_device_to_device(self._mem, source._mem, self.nbytes)
                return self
            source = source._array if source.is_cpu else source.numpy()
        arr = np.asarray(source)
        if arr.shape != self.shape:
            raise RuntimeShapeError(f"copyfrom: array of shape {arr.shape} into a tensor of "
                                    f"shape {self.shape}")
        arr = _to_storage(arr, self.dtype)
        if self._array is not None:
            np.copyto(self._array, arr, casting="unsafe")
        else:
            host = np.ascontiguousarray(arr, dtype=dt.to_numpy(self.dtype))
            if self.nbytes:
                cuda_backend.copy_host_to_device(self._mem, host.ctypes.data, self.nbytes)
        return self

    def copyto(self, target: Device | Tensor) -> Tensor:
        """Copy into another tensor, or to a new tensor on device ``target``."""
        if isinstance(target, Tensor):
            target.copyfrom(self)
            return target
        out = empty(self.shape, self.dtype, target)
        return out.copyfrom(self)

    def __array__(self, dtype=None, copy=None):
        arr = self._array if self._array is not None else self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    # -- DLPack -------------------------------------------------------------------------
    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None):
        """Export as a DLPack capsule (CPU tensors; shares memory)."""
        if self._array is None:
            raise DeviceError("DLPack export of CUDA tensors is not supported; copy to "
                              "the CPU first with .copyto(irc.cpu())")
        kwargs = {}
        if max_version is not None:
            kwargs["max_version"] = max_version
        if dl_device is not None:
            kwargs["dl_device"] = dl_device
        if copy is not None:
            kwargs["copy"] = copy
        try:
            return self._array.__dlpack__(**kwargs)
        except TypeError:
            return self._array.__dlpack__()

    def __dlpack_device__(self) -> tuple[int, int]:
        return (self.device.dlpack_type, self.device.index)

    def __repr__(self) -> str:
        if self._array is not None:
            return f"<irc.Tensor shape={self.shape}, {self.dtype}, {self.device}>\n{self._array}"
        return f"<irc.Tensor shape={self.shape}, {self.dtype}, {self.device}>"


def empty(shape: Sequence[int] | int, dtype: str = "float32",
          device: Device | str | None = None) -> Tensor:
    """An uninitialized tensor of ``shape`` and ``dtype`` on ``device`` (the CPU by default)."""
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    dt.check(dtype)
    if dt.lanes(dtype) != 1:
        raise RuntimeShapeError(f"tensors hold scalar dtypes, not {dtype}")
    device = cpu() if device is None else as_device(device)
    if device.device_type == "cpu":
        return Tensor(array=aligned_empty(shape, dt.to_numpy(dtype)), dtype=dtype, device=device)
    size = 1
    for s in shape:
        size *= s
    mem = cuda_backend.DeviceMemory(size * dt.itemsize(dtype), device.index)
    return Tensor(mem=mem, shape=shape, dtype=dtype, device=device)


def zeros(shape: Sequence[int] | int, dtype: str = "float32",
          device: Device | str | None = None) -> Tensor:
    """A zero-filled tensor."""
    t = empty(shape, dtype, device)
    if t._array is not None:
        t._array.fill(0)
    else:
        t.copyfrom(np.zeros(t.shape, dt.to_numpy(dtype)))
    return t


def tensor(data: Any, device: Device | str | None = None, dtype: str | None = None) -> Tensor:
    """A new tensor holding a copy of ``data`` (numpy array, Tensor, nested sequence or any
    DLPack producer) on ``device`` (the CPU by default)."""
    if isinstance(data, Tensor):
        if dtype is None or dtype == data.dtype:
            return data.copyto(device or data.device)
        data = data.numpy()
    if not isinstance(data, np.ndarray) and hasattr(data, "__dlpack__") and dtype is None:
        data = from_dlpack(data)._array
    arr = np.asarray(data)
    irc_dtype = _dtype_of(arr, dtype)
    out = empty(arr.shape, irc_dtype, device)
    return out.copyfrom(arr)


def from_dlpack(x: Any) -> Tensor:
    """A tensor viewing the memory of a DLPack producer (numpy arrays, torch tensors,
    ...); copied when it is not 64-byte aligned and C-contiguous."""
    if isinstance(x, Tensor):
        return x
    if hasattr(x, "__dlpack_device__"):
        dev_type, _ = x.__dlpack_device__()
        if int(dev_type) == DL_CUDA:
            raise DeviceError("importing CUDA memory through DLPack is not supported yet; "
                              "copy the data to the host first")
        if int(dev_type) != DL_CPU:
            raise DeviceError(f"cannot import DLPack memory of device type {int(dev_type)}")
    try:
        arr = np.from_dlpack(x)
    except (TypeError, BufferError, RuntimeError) as err:
        raise RuntimeShapeError(f"cannot import {type(x).__name__} through DLPack: {err}") \
            from None
    dtype = _dtype_of(arr, None)
    if arr.flags.c_contiguous and is_aligned(arr):
        return Tensor(array=arr, dtype=dtype, device=cpu())
    out = empty(arr.shape, dtype)
    np.copyto(out._array, arr)
    return out

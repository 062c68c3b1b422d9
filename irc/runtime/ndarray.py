"""Tensors: n-dimensional arrays on a device.

On the CPU a :class:`Tensor` wraps a numpy array whose storage is 64-byte aligned and
C-contiguous (what compiled kernels assume). On CUDA it owns device memory (the ``cuda``
extra), or views another library's. Tensors speak DLPack both ways, on both devices:
``np.from_dlpack(t)`` / ``torch.from_dlpack(t)`` / ``cupy.from_dlpack(t)`` share the
memory, and :func:`from_dlpack` views a producer's memory (zero-copy when it is 64-byte
aligned and contiguous, keeping the producer alive). CUDA memory is exchanged in order
with irc's work on the legacy default stream (see ``Tensor.__dlpack__``).
``bfloat16`` data is held as its raw ``uint16`` bits and given back (``numpy()``,
``np.asarray``) as ml_dtypes' ``bfloat16`` arrays (:func:`irc.core.dtype.user_numpy`).
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any, Sequence

import numpy as np

from ..core import dtype as dt
from ..core.diagnostics import (
    IRCError,
    RuntimeArgumentTypeError,
    RuntimeDeviceError,
    RuntimeDTypeError,
    RuntimeReadOnlyError,
    RuntimeShapeError,
)
from . import cuda_backend, dlpack
from .device import DL_CPU, DL_CUDA, Device, DeviceError, cpu, cuda
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
        raise RuntimeDTypeError(f"numpy dtype {arr.dtype} has no irc equivalent") from None


def _to_storage(arr: np.ndarray, dtype: str) -> np.ndarray:
    """``arr`` converted to the numpy storage dtype of irc dtype ``dtype``."""
    if dtype == "bfloat16":
        if arr.dtype == np.uint16 or arr.dtype.name == "bfloat16":
            return arr.view(np.uint16) if arr.dtype.itemsize == 2 else arr
        return dt.bfloat16_bits(arr)
    return arr.astype(dt.to_numpy(dtype), copy=False)


def _for_user(arr: np.ndarray, dtype: str) -> np.ndarray:
    """``arr`` (storage of irc dtype ``dtype``) viewed as the dtype users get back."""
    return arr.view(dt.user_numpy(dtype)) if dtype == "bfloat16" else arr


class Tensor:
    """An array on a device: ``.shape``, ``.dtype``, ``.device``, ``.numpy()``.

    A CPU tensor may view read-only memory (:func:`from_dlpack` of a read-only producer);
    compiled kernels then refuse it for a parameter they write.
    """

    __slots__ = ("_array", "_mem", "shape", "dtype", "device", "data_ptr", "_read_only",
                 "__weakref__")

    def __init__(self, *, array: np.ndarray | None = None, mem: Any = None,
                 shape: tuple[int, ...] = (), dtype: str = "float32",
                 device: Device | None = None):
        self.device = device or cpu()
        self._array = array
        self._mem = mem
        self._read_only = False
        if array is not None:
            self.shape = tuple(array.shape)
            self.data_ptr = array.ctypes.data
            self._read_only = not array.flags.writeable
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
        """A numpy copy of the data (bfloat16 as ml_dtypes' ``bfloat16``)."""
        if self._array is not None:
            return _for_user(self._array.copy(), self.dtype)
        out = aligned_empty(self.shape, dt.to_numpy(self.dtype))
        if self.nbytes:
            cuda_backend.copy_device_to_host(out.ctypes.data, self._mem, self.nbytes)
        return _for_user(out, self.dtype)

    asnumpy = numpy

    def copyfrom(self, source: Any) -> Tensor:
        """Overwrite the data with ``source`` (a numpy array, Tensor or sequence) of the
        same shape; converts dtype like numpy."""
        if isinstance(source, Tensor):
            if source.shape != self.shape or source.dtype != self.dtype:
                error = RuntimeShapeError if source.shape != self.shape else RuntimeDTypeError
                raise error(
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
            if not self._array.flags.writeable:
                raise RuntimeReadOnlyError(
                    "copyfrom: this tensor views read-only memory",
                    hint="copy into a new tensor: irc.tensor(source)")
            np.copyto(self._array, arr, casting="unsafe")
        else:
            host = np.asarray(arr, dtype=dt.to_numpy(self.dtype), order="C")
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
        arr = _for_user(self._array, self.dtype) if self._array is not None else self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    # -- DLPack -------------------------------------------------------------------------
    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None):
        """Export as a DLPack capsule that shares the memory (a copy's with ``copy=True``).

        For CUDA tensors ``stream`` is the consumer's stream (the protocol's codes: None
        or 1 the legacy default stream, 2 the per-thread default stream, another int a
        ``cudaStream_t``, -1 no ordering): irc queues its work on the legacy default
        stream, so for another stream the consumer's stream is made to wait for it.
        """
        if self._array is None:
            return self._cuda_dlpack(stream, max_version, dl_device, copy)
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

    def _cuda_dlpack(self, stream: Any, max_version: Any, dl_device: Any, copy: Any):
        here = (DL_CUDA, self.device.index)
        if dl_device is not None and tuple(int(v) for v in dl_device) != here:
            raise dlpack.DLPackError(f"a {self.device} tensor cannot be exported to DLPack "
                                     f"device {tuple(dl_device)} without a copy; use "
                                     ".copyto() first")
        if copy:
            return self.copyto(self.device).__dlpack__(stream=stream, max_version=max_version)
        _order_for_consumer(self.device.index, stream)
        versioned = max_version is not None and int(max_version[0]) >= 1
        return dlpack.export_capsule(self, self.data_ptr, self.shape, self.dtype, here,
                                     versioned)

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
        raise RuntimeDTypeError(f"tensors hold scalar dtypes, not {dtype}")
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
        imported = from_dlpack(data)
        if not imported.is_cpu:
            return imported.copyto(imported.device if device is None else as_device(device))
        data = imported._array
    arr = np.asarray(data)
    irc_dtype = _dtype_of(arr, dtype)
    out = empty(arr.shape, irc_dtype, device)
    return out.copyfrom(arr)


def from_dlpack(x: Any) -> Tensor:
    """A tensor viewing the memory of a DLPack producer (numpy arrays, torch and cupy
    tensors on the CPU or a GPU, ...), keeping the producer alive; copied when it is not
    64-byte aligned and C-contiguous (on a GPU, a non-contiguous tensor is an error)."""
    if isinstance(x, Tensor):
        return x
    if hasattr(x, "__dlpack_device__"):
        dev_type, dev_id = x.__dlpack_device__()
        if int(dev_type) == DL_CUDA:
            return _from_cuda_dlpack(x, int(dev_id))
        if int(dev_type) != DL_CPU:
            raise DeviceError(f"cannot import DLPack memory of device type {int(dev_type)}")
    arr = host_array(x)
    dtype = _dtype_of(arr, None)
    if arr.flags.c_contiguous and is_aligned(arr):
        return Tensor(array=arr, dtype=dtype, device=cpu())
    out = empty(arr.shape, dtype)
    np.copyto(out._array, arr)
    return out


def host_array(x: Any, what: str = "") -> np.ndarray:
    """A numpy array viewing the host memory of DLPack producer ``x`` without a copy, so
    writes reach the producer (read-only memory gives a read-only array); ``what`` names
    the value in errors."""
    what = what or type(x).__name__
    if hasattr(x, "__dlpack_device__"):
        dev_type, dev_id = x.__dlpack_device__()
        if int(dev_type) != DL_CPU:
            raise RuntimeDeviceError(
                f"{what} is in the memory of DLPack device ({int(dev_type)}, {int(dev_id)}), "
                "not host memory; copy it to the CPU first")
    try:
        return np.from_dlpack(x)
    except (TypeError, BufferError, RuntimeError) as err:
        raise RuntimeArgumentTypeError(f"cannot import {what} ({type(x).__name__}) through "
                                       f"DLPack: {err}") from None


def _order_for_consumer(index: int, stream: Any) -> None:
    """Make the consumer's ``stream`` (a DLPack stream code) wait for the work irc
    queued on the legacy default stream of GPU ``index``."""
    if stream is None or stream in (-1, 1):
        return  # the legacy default stream itself, or the consumer orders nothing
    if not isinstance(stream, int) or isinstance(stream, bool) or stream == 0:
        raise dlpack.DLPackError(f"invalid DLPack stream {stream!r} for a CUDA tensor: "
                                 "None, -1, 1, 2 or a cudaStream_t handle")
    # The driver's handles 1 and 2 are the legacy and per-thread default streams, as in
    # DLPack, so the code is the handle.
    event = cuda_backend.Event(index, timing=False).record(None)
    cuda_backend.wait_event(index, stream, event)


def _row_major(shape: tuple[int, ...], strides: tuple[int, ...] | None) -> bool:
    if strides is None:
        return True
    step = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != step:
            return False
        step *= size
    return True


def _from_cuda_dlpack(x: Any, index: int) -> Tensor:
    """A tensor viewing the GPU memory of DLPack producer ``x`` (zero-copy)."""
    try:
        capsule = x.__dlpack__(stream=1)  # irc works on the legacy default stream
    except TypeError:
        capsule = x.__dlpack__()
    info = dlpack.import_capsule(capsule)
    try:
        if info.device != (DL_CUDA, index):
            raise DeviceError(f"DLPack producer {type(x).__name__} said its memory is on "
                              f"cuda({index}) but exported device {info.device}")
        if not _row_major(info.shape, info.strides):
            raise DeviceError(f"cannot import a non-contiguous CUDA {type(x).__name__} "
                              f"(shape {info.shape}, strides {info.strides}) through DLPack; "
                              "make it contiguous first (.contiguous() in torch)")
        dt.check(info.dtype)
    except BaseException:
        info.release()
        raise
    size = 1
    for s in info.shape:
        size *= s
    nbytes = size * dt.itemsize(info.dtype)
    mem = cuda_backend.BorrowedMemory(info.ptr, nbytes, index, owner=x, release=info.release)
    view = Tensor(mem=mem, shape=info.shape, dtype=info.dtype, device=cuda(index))
    if info.ptr % ALIGNMENT == 0 and not info.read_only:
        return view
    out = empty(info.shape, info.dtype, cuda(index))
    if nbytes:
        cuda_backend.copy_device_to_device(out._mem, mem, nbytes)
        # The copy runs asynchronously; the producer may reuse its memory once ``view``
        # is collected and its deleter runs.
        cuda_backend.synchronize(index)
    return out

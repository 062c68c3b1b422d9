"""DLPack capsules for GPU memory, made and read with ctypes.

numpy makes and reads DLPack capsules of host memory only, and nothing installed with
irc does it for device memory, so this module implements the protocol's C structures
(``DLManagedTensor``, DLPack 0.x, capsule name ``"dltensor"``, and
``DLManagedTensorVersioned``, DLPack 1.x, ``"dltensor_versioned"``):

- :func:`export_capsule` wraps a CUDA tensor's memory in a capsule; the capsule (and
  after it the consumer, through the ``deleter``) keeps the tensor alive; a capsule
  nobody consumed deletes itself when collected.
- :func:`import_capsule` reads a producer's capsule, renames it ``"used_dltensor"`` as the
  protocol requires, and returns the memory with a ``release`` function that calls the
  producer's deleter (:class:`~irc.runtime.cuda_backend.BorrowedMemory` calls it when
  the importing tensor is collected).
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Any, Callable

from ..core.diagnostics import IRCError

# DLDeviceType codes (dlpack.h).
DL_CPU = 1
DL_CUDA = 2
# DLDataTypeCode codes.
_CODE_NAMES = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 6: "bool"}
_NAME_CODES = {v: k for k, v in _CODE_NAMES.items()}
_FLAG_READ_ONLY = 1
_DLPACK_VERSION = (1, 0)

_LEGACY = b"dltensor"
_VERSIONED = b"dltensor_versioned"
_USED_LEGACY = b"used_dltensor"
_USED_VERSIONED = b"used_dltensor_versioned"


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _Deleter)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _Deleter), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


# Private prototypes of the capsule API (setting argtypes on ctypes.pythonapi's shared
# function objects would change them for every other user). The destructor gets the
# capsule while it is being freed, so it must not touch its reference count: those
# calls take the raw pointer.
_api = ctypes.pythonapi
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_void_p)(("PyCapsule_New", _api))
_capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_capsule_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_capsule_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_SetName", _api))
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_raw_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))

_lock = threading.Lock()
# What an exported capsule keeps alive, by the address of its managed tensor: the
# ctypes structures, the shape and strides arrays, and the tensor itself.
_exports: dict[int, tuple] = {}


@_Deleter
def _deleter(address: int) -> None:
    with _lock:
        entry = _exports.pop(address, None)
    # The tensor is freed here, outside the lock: freeing it may release memory it
    # imported through DLPack, which can call back into this deleter.
    del entry


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule: int) -> None:
    # A consumer renames the capsule ("used_..."); one nobody consumed still owns the
    # tensor and deletes it here.
    for name in (_LEGACY, _VERSIONED):
        if _raw_is_valid(capsule, name):
            _deleter(_raw_get_pointer(capsule, name))
            return


_DESTRUCTOR_ADDRESS = ctypes.cast(_capsule_destructor, ctypes.c_void_p).value


class DLPackError(IRCError, BufferError):
    """Memory that cannot be exchanged through DLPack (device, dtype, layout)."""


def dtype_code(dtype: str) -> tuple[int, int]:
    """The DLPack (type code, bits) of a scalar irc dtype."""
    if dtype == "bool":
        return _NAME_CODES["bool"], 8
    for name, code in _NAME_CODES.items():
        if dtype.startswith(name) and dtype[len(name):].isdigit():
            return code, int(dtype[len(name):])
    raise DLPackError(f"dtype {dtype} has no DLPack equivalent")


def export_capsule(tensor: Any, ptr: int, shape: tuple[int, ...], dtype: str,
                   device: tuple[int, int], versioned: bool) -> Any:
    """A DLPack capsule viewing ``ptr`` (row-major, ``shape``, ``dtype``) on ``device``
    (a DLPack (type, id) pair) that keeps ``tensor`` alive until it is deleted."""
    code, bits = dtype_code(dtype)
    ndim = len(shape)
    shape_arr = (ctypes.c_int64 * max(1, ndim))(*shape)
    strides = []
    step = 1
    for s in reversed(shape):
        strides.append(step)
        step *= max(1, s)
    strides_arr = (ctypes.c_int64 * max(1, ndim))(*reversed(strides))
    managed = DLManagedTensorVersioned() if versioned else DLManagedTensor()
    dl = managed.dl_tensor
    dl.data = ptr
    dl.device = DLDevice(*device)
    dl.ndim = ndim
    dl.dtype = DLDataType(code, bits, 1)
    dl.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
    dl.strides = ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64))
    dl.byte_offset = 0
    address = ctypes.addressof(managed)
    managed.deleter = _deleter  # finds what to free by the address (manager_ctx unused)
    if versioned:
        managed.version = DLPackVersion(*_DLPACK_VERSION)
        managed.flags = 0
    with _lock:
        _exports[address] = (managed, shape_arr, strides_arr, tensor)
    return _capsule_new(address, _VERSIONED if versioned else _LEGACY, _DESTRUCTOR_ADDRESS)


@dataclass
class ImportedMemory:
    """What a consumed capsule describes; ``release()`` hands it back to the producer
    (exactly once)."""

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None  # in elements; None means row-major
    dtype: str
    device: tuple[int, int]
    read_only: bool
    release: Callable[[], None]


def _dtype_name(code: int, bits: int, lanes: int) -> str:
    name = _CODE_NAMES.get(code)
    if name is None or lanes != 1:
        raise DLPackError(f"DLPack dtype (code {code}, {bits} bits, {lanes} lanes) has no "
                          "irc equivalent")
    return "bool" if name == "bool" else f"{name}{bits}"


def import_capsule(capsule: Any) -> ImportedMemory:
    """Consume a DLPack capsule (legacy or versioned); the caller must call
    ``release()`` when it no longer uses the memory."""
    if _capsule_is_valid(capsule, _LEGACY):
        name, used, cls = _LEGACY, _USED_LEGACY, DLManagedTensor
    elif _capsule_is_valid(capsule, _VERSIONED):
        name, used, cls = _VERSIONED, _USED_VERSIONED, DLManagedTensorVersioned
    else:
        raise DLPackError("not a DLPack capsule, or one that was consumed already")
    address = _capsule_get_pointer(capsule, name)
    managed = cls.from_address(address)
    if cls is DLManagedTensorVersioned and managed.version.major > _DLPACK_VERSION[0]:
        raise DLPackError(f"DLPack {managed.version.major}.{managed.version.minor} is newer "
                          "than irc understands (1.x)")
    dl = managed.dl_tensor
    shape = tuple(int(dl.shape[i]) for i in range(dl.ndim))
    strides = (tuple(int(dl.strides[i]) for i in range(dl.ndim)) if dl.strides else None)
    dtype = _dtype_name(dl.dtype.code, dl.dtype.bits, dl.dtype.lanes)
    read_only = cls is DLManagedTensorVersioned and bool(managed.flags & _FLAG_READ_ONLY)
    deleter = managed.deleter
    _capsule_set_name(capsule, used)
    released = []

    def release() -> None:
        if not released and deleter:
            released.append(True)
            deleter(address)

    return ImportedMemory((dl.data or 0) + int(dl.byte_offset), shape, strides, dtype,
                          (int(dl.device.device_type), int(dl.device.device_id)), read_only,
                          release)

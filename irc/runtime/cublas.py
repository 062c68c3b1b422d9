"""cuBLAS matrix products on NVIDIA GPUs, called with ctypes.

The library comes from NVIDIA's ``nvidia-cublas`` wheel (or a CUDA toolkit), found by
``cuda-pathfinder`` (a dependency of ``cuda-bindings``, the ``cuda`` extra); it is loaded
on first use. One cuBLAS handle per GPU is created in the GPU's primary context (the one
irc's runtime uses) and kept, with a 32 MiB workspace. Products run on the thread's current
stream: the legacy default stream, where irc launches its kernels, so they are ordered with
them; a graph's capturing stream while a VM captures one.

:class:`CublasGemmPlan` is a row-major product ``C = op(A) · op(B)`` (``A`` as
``[batch, m, k]``, ``B`` as ``[batch or 1, k, n]`` or, with ``trans_b``, ``[.., n, k]``)
laid out once and called with raw device pointers: cuBLAS is column-major, so the plan
computes ``Cᵀ = op(B)ᵀ · Aᵀ``, which in memory is the row-major ``C``.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Any, ClassVar

from ..core.diagnostics import IRCError, MissingDependencyError, require
from . import cuda_backend
from .external import JsonPlan

# cudaDataType_t and cublasComputeType_t values (library_types.h, cublas_api.h).
_CUDA_TYPES = {"float32": 0, "float16": 2, "bfloat16": 14, "int8": 3, "int32": 10}
_COMPUTE_32F = 68
_COMPUTE_32I = 72
_OP_N, _OP_T = 0, 1
_GEMM_DEFAULT = -1

_lock = threading.Lock()
_lib: Any = None
_handles: dict[int, ctypes.c_void_p] = {}
_workspaces: dict[int, Any] = {}
_streams: dict[int, int] = {}  # the stream each handle was last pointed at (0: default)
# cuBLAS's recommendation for Hopper (smaller GPUs need less): its fastest kernels for
# large products need this much scratch memory.
_WORKSPACE_BYTES = 32 << 20


class CublasError(IRCError):
    """A cuBLAS call failed (its status is in the message)."""


def load_nvidia_library(name: str, library: str, install: str) -> ctypes.CDLL:
    """NVIDIA's shared library ``name`` (``"cublas"``, ``"cudnn"``) from its wheel or a
    CUDA toolkit, found by cuda-pathfinder (the cuda extra); a MissingDependencyError says
    how to install what is missing (``install``)."""
    pathfinder = require("cuda.pathfinder", purpose=f"finding {library}",
                         package="cuda-pathfinder", install=f"pip install 'irc[cuda]'; {install}")
    try:
        return ctypes.CDLL(pathfinder.load_nvidia_dynamic_lib(name).abs_path)
    except Exception as err:  # noqa: BLE001 - pathfinder's and the loader's errors
        raise MissingDependencyError(f"cannot load {library}: {err}", hint=install) from None


def _load() -> Any:
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        lib = load_nvidia_library("cublas", "cuBLAS", "pip install nvidia-cublas")
        lib.cublasCreate_v2.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        lib.cublasCreate_v2.restype = ctypes.c_int
        lib.cublasSetWorkspace_v2.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                              ctypes.c_size_t]
        lib.cublasSetWorkspace_v2.restype = ctypes.c_int
        lib.cublasSetStream_v2.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.cublasSetStream_v2.restype = ctypes.c_int
        i, p, ll = ctypes.c_int, ctypes.c_void_p, ctypes.c_longlong
        lib.cublasGemmEx.argtypes = [p, i, i, i, i, i, p, p, i, i, p, i, i, p, p, i, i, i, i]
        lib.cublasGemmEx.restype = ctypes.c_int
        lib.cublasGemmStridedBatchedEx.argtypes = [p, i, i, i, i, i, p, p, i, i, ll, p, i, i,
                                                   ll, p, p, i, i, ll, i, i, i]
        lib.cublasGemmStridedBatchedEx.restype = ctypes.c_int
        _lib = lib
        return lib


def _check(status: int, what: str) -> None:
    if status != 0:
        raise CublasError(f"{what} failed with cuBLAS status {status}",
                          hint="status 7 is an unsupported configuration (dtypes, "
                               "alignment); 13 a failed kernel launch")


def handle(device_index: int) -> ctypes.c_void_p:
    """The cuBLAS handle of GPU ``device_index`` (created once, in its primary context)."""
    h = _handles.get(device_index)
    if h is None:
        lib = _load()
        cuda_backend.context(device_index)
        h = ctypes.c_void_p()
        _check(lib.cublasCreate_v2(ctypes.byref(h)), "cublasCreate")
        ws = cuda_backend.DeviceMemory(_WORKSPACE_BYTES, device_index)
        _check(lib.cublasSetWorkspace_v2(h, ws.ptr, _WORKSPACE_BYTES), "cublasSetWorkspace")
        _workspaces[device_index] = ws
        _handles[device_index] = h
    return h


def _use_current_stream(lib: Any, h: ctypes.c_void_p, device_index: int) -> None:
    """Point handle ``h`` at the thread's current stream (a graph's capturing stream, else
    the legacy default). cublasSetStream resets the workspace to cuBLAS's own pool, which
    allocates during a capture, so irc's workspace is set again after it."""
    stream = cuda_backend.current_stream()
    ptr = stream.ptr if stream is not None else 0
    if _streams.get(device_index) == ptr:
        return
    _check(lib.cublasSetStream_v2(h, ptr or None), "cublasSetStream")
    _check(lib.cublasSetWorkspace_v2(h, _workspaces[device_index].ptr, _WORKSPACE_BYTES),
           "cublasSetWorkspace")
    _streams[device_index] = ptr


@dataclass(frozen=True)
class CublasGemmPlan(JsonPlan):
    """A row-major ``[batch] (m x k) · (k x n)`` product on GPU pointers (see the module
    docstring): ``in_dtype`` of A and B, ``out_dtype`` of C (float16/bfloat16 inputs
    accumulate in float32 and may write float32; int8 inputs write int32)."""

    in_dtype: str
    out_dtype: str
    m: int
    n: int
    k: int
    trans_b: bool = False
    batch: int = 1
    b_broadcast: bool = False
    error: ClassVar[type[IRCError]] = CublasError
    label: ClassVar[str] = "cuBLAS plan"

    def __post_init__(self) -> None:
        if self.in_dtype not in _CUDA_TYPES or self.out_dtype not in _CUDA_TYPES:
            raise CublasError(f"cuBLAS plan: unsupported dtypes {self.in_dtype} -> "
                              f"{self.out_dtype}")
        for f in ("m", "n", "k", "batch"):
            v = getattr(self, f)
            if not isinstance(v, int) or v < 1 or v >= 2 ** 31:
                raise CublasError(f"cuBLAS plan: {f}={v!r} must be a positive 32-bit int")

    def __call__(self, device_index: int, a_ptr: int, b_ptr: int, c_ptr: int) -> None:
        lib = _load()
        h = handle(device_index)
        cuda_backend.context(device_index)
        _use_current_stream(lib, h, device_index)
        integer = self.in_dtype == "int8"
        scalar = ctypes.c_int32 if integer else ctypes.c_float
        one, zero = scalar(1), scalar(0)
        compute = _COMPUTE_32I if integer else _COMPUTE_32F
        ti, to = _CUDA_TYPES[self.in_dtype], _CUDA_TYPES[self.out_dtype]
        m, n, k = self.m, self.n, self.k
        op_b = _OP_T if self.trans_b else _OP_N
        ldb = k if self.trans_b else n
        if self.batch == 1:
            status = lib.cublasGemmEx(h, op_b, _OP_N, n, m, k, ctypes.byref(one), b_ptr, ti,
                                      ldb, a_ptr, ti, k, ctypes.byref(zero), c_ptr, to, n,
                                      compute, _GEMM_DEFAULT)
            _check(status, "cublasGemmEx")
            return
        stride_b = 0 if self.b_broadcast else n * k
        status = lib.cublasGemmStridedBatchedEx(
            h, op_b, _OP_N, n, m, k, ctypes.byref(one), b_ptr, ti, ldb, stride_b, a_ptr, ti,
            k, m * k, ctypes.byref(zero), c_ptr, to, n, m * n, self.batch, compute,
            _GEMM_DEFAULT)
        _check(status, "cublasGemmStridedBatchedEx")

"""cuDNN convolutions on NVIDIA GPUs, called with ctypes.

The library comes from NVIDIA's ``nvidia-cudnn-cu13`` wheel (the ``cudnn`` extra), found
by ``cuda-pathfinder`` and loaded on first use. One cuDNN handle per GPU is created in its
primary context and kept, with a workspace of :data:`WORKSPACE_BYTES`; calls run on the
thread's current stream (the legacy default stream where irc launches its kernels, or a
graph's capturing stream), so a VM can capture them into a CUDA graph.

:class:`CudnnConvPlan` is ``act(conv2d(x, w) + bias + residual)`` in float32 on NCHW or
NHWC data, through cuDNN's convolution API: ``cudnnConvolutionForward`` for a bare
convolution, ``cudnnConvolutionBiasActivationForward`` when there is a bias, a residual
or a ReLU (a missing bias is a zero vector the plan keeps). Arithmetic is plain float32
(``CUDNN_FMA_MATH``: no TF32), NaN propagates through the ReLU. The algorithm is cuDNN's
own heuristic choice (``cudnnGetConvolutionForwardAlgorithm_v7``, as PyTorch without
``cudnn.benchmark``) among those whose workspace fits; without an activation the fused
call needs ``IMPLICIT_PRECOMP_GEMM``. Descriptors and the algorithm are made once per GPU,
at the first call.
"""

from __future__ import annotations

import ctypes
import importlib
import threading
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..core.diagnostics import IRCError
from . import cuda_backend
from .cublas import load_nvidia_library
from .device import cuda
from .external import JsonPlan
from .ndarray import tensor

INSTALL = "pip install 'irc[cudnn]' (NVIDIA's nvidia-cudnn-cu13 wheel)"
WORKSPACE_BYTES = 64 << 20

# cudnn.h values.
_FLOAT = 0
_FORMATS = {"NCHW": 0, "NHWC": 1}
_CROSS_CORRELATION = 1
_FMA_MATH = 3
_RELU, _IDENTITY = 1, 5
_PROPAGATE_NAN = 1
_IMPLICIT_PRECOMP_GEMM = 1
_ALGOS = 8

_lock = threading.Lock()
_lib: Any = None
_handles: dict[int, ctypes.c_void_p] = {}
_workspaces: dict[int, Any] = {}
_streams: dict[int, int] = {}


class CudnnError(IRCError):
    """A cuDNN call failed (its status name is in the message)."""


class _AlgoPerf(ctypes.Structure):
    _fields_ = [("algo", ctypes.c_int), ("status", ctypes.c_int), ("time", ctypes.c_float),
                ("memory", ctypes.c_size_t), ("determinism", ctypes.c_int),
                ("mathType", ctypes.c_int), ("reserved", ctypes.c_int * 3)]


def available() -> bool:
    """Whether the cuDNN wheel is installed (checked without loading it)."""
    return importlib.util.find_spec("nvidia.cudnn") is not None


def _load() -> Any:
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        lib = load_nvidia_library("cudnn", "cuDNN", INSTALL)
        p, i, vp = ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)
        sigs = {
            "cudnnCreate": [vp], "cudnnSetStream": [p, p], "cudnnGetErrorString": [i],
            "cudnnCreateTensorDescriptor": [vp], "cudnnSetTensor4dDescriptor": [p, i, i, i, i,
                                                                                 i, i],
            "cudnnCreateFilterDescriptor": [vp], "cudnnSetFilter4dDescriptor": [p, i, i, i, i,
                                                                                 i, i],
            "cudnnCreateConvolutionDescriptor": [vp],
            "cudnnSetConvolution2dDescriptor": [p, i, i, i, i, i, i, i, i],
            "cudnnSetConvolutionGroupCount": [p, i], "cudnnSetConvolutionMathType": [p, i],
            "cudnnCreateActivationDescriptor": [vp],
            "cudnnSetActivationDescriptor": [p, i, i, ctypes.c_double],
            "cudnnGetConvolution2dForwardOutputDim": [p, p, p] + [ctypes.POINTER(i)] * 4,
            "cudnnGetConvolutionForwardAlgorithm_v7": [p, p, p, p, p, i, ctypes.POINTER(i),
                                                       ctypes.POINTER(_AlgoPerf)],
            "cudnnConvolutionForward": [p, p, p, p, p, p, p, i, p, ctypes.c_size_t, p, p, p],
            "cudnnConvolutionBiasActivationForward": [p, p, p, p, p, p, p, i, p,
                                                      ctypes.c_size_t, p, p, p, p, p, p, p, p],
        }
        for name, argtypes in sigs.items():
            fn = getattr(lib, name)
            fn.argtypes = argtypes
            fn.restype = ctypes.c_char_p if name == "cudnnGetErrorString" else ctypes.c_int
        _lib = lib
        return lib


def _check(status: int, what: str) -> None:
    if status != 0:
        name = _lib.cudnnGetErrorString(status).decode() if _lib is not None else status
        raise CudnnError(f"{what} failed with {name}")


def handle(device_index: int) -> ctypes.c_void_p:
    """The cuDNN handle of GPU ``device_index`` (made once, with its workspace), pointed at
    the thread's current stream."""
    lib = _load()
    h = _handles.get(device_index)
    if h is None:
        cuda_backend.context(device_index)
        h = ctypes.c_void_p()
        _check(lib.cudnnCreate(ctypes.byref(h)), "cudnnCreate")
        _workspaces[device_index] = cuda_backend.DeviceMemory(WORKSPACE_BYTES, device_index)
        _handles[device_index] = h
    stream = cuda_backend.current_stream()
    ptr = stream.ptr if stream is not None else 0
    if _streams.get(device_index) != ptr:
        _check(lib.cudnnSetStream(h, ptr or None), "cudnnSetStream")
        _streams[device_index] = ptr
    return h


def _new(lib: Any, kind: str) -> ctypes.c_void_p:
    d = ctypes.c_void_p()
    _check(getattr(lib, f"cudnnCreate{kind}Descriptor")(ctypes.byref(d)),
           f"cudnnCreate{kind}Descriptor")
    return d


@dataclass(frozen=True)
class CudnnConvPlan(JsonPlan):
    """A float32 convolution ``act(conv2d(x, w) + bias + residual)``: ``layout`` NCHW
    (weights OIHW) or NHWC (weights OHWI), the data's ``n, c, h, w``, ``k`` output
    channels of an ``r x s`` kernel over ``c // groups`` input channels, symmetric
    ``pad``, ``stride``, ``dilation`` as ``(h, w)`` pairs, and the epilogue: ``bias``
    (one value per output channel), ``residual`` (the output's shape), ``activation``
    (``"relu"`` or None)."""

    layout: str
    n: int
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    pad: tuple[int, int] = (0, 0)
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    bias: bool = False
    residual: bool = False
    activation: str | None = None
    error: ClassVar[type[IRCError]] = CudnnError
    label: ClassVar[str] = "cuDNN plan"

    def __post_init__(self) -> None:
        if self.layout not in _FORMATS:
            raise CudnnError(f"cuDNN plan: layout {self.layout!r} is not NCHW or NHWC")
        if self.activation not in (None, "relu"):
            raise CudnnError(f"cuDNN plan: activation {self.activation!r} is not fused "
                             "(only relu is)")
        for f in ("pad", "stride", "dilation"):
            object.__setattr__(self, f, tuple(int(v) for v in getattr(self, f)))
        if self.groups < 1 or self.c % self.groups or self.k % self.groups:
            raise CudnnError(f"cuDNN plan: {self.groups} groups do not divide {self.c} input "
                             f"and {self.k} output channels")

    @property
    def out_hw(self) -> tuple[int, int]:
        """The output's height and width."""
        oh = (self.h + 2 * self.pad[0] - self.dilation[0] * (self.r - 1) - 1) // \
            self.stride[0] + 1
        ow = (self.w + 2 * self.pad[1] - self.dilation[1] * (self.s - 1) - 1) // \
            self.stride[1] + 1
        return oh, ow

    @property
    def fused(self) -> bool:
        """Whether the call is cuDNN's fused convolution-bias-activation."""
        return self.bias or self.residual or self.activation is not None


class CudnnConv:
    """A :class:`CudnnConvPlan` ready to run on one GPU: its descriptors and algorithm,
    made at the first call there. ``conv(device_index, x, w, bias, residual, y)`` takes
    device pointers (``bias``/``residual`` 0 when the plan has none)."""

    def __init__(self, plan: CudnnConvPlan):
        self.plan = plan
        self._ready: dict[int, tuple] = {}
        self._zeros: dict[int, Any] = {}

    def _prepare(self, index: int) -> tuple:
        lib, p = _load(), self.plan
        h = handle(index)
        fmt = _FORMATS[p.layout]
        x, y, b = (_new(lib, "Tensor") for _ in range(3))
        f, conv = _new(lib, "Filter"), _new(lib, "Convolution")
        _check(lib.cudnnSetTensor4dDescriptor(x, fmt, _FLOAT, p.n, p.c, p.h, p.w),
               "cudnnSetTensor4dDescriptor (data)")
        _check(lib.cudnnSetFilter4dDescriptor(f, _FLOAT, fmt, p.k, p.c // p.groups, p.r,
                                              p.s), "cudnnSetFilter4dDescriptor")
        _check(lib.cudnnSetConvolution2dDescriptor(conv, p.pad[0], p.pad[1], p.stride[0],
                                                   p.stride[1], p.dilation[0],
                                                   p.dilation[1], _CROSS_CORRELATION,
                                                   _FLOAT), "cudnnSetConvolution2dDescriptor")
        _check(lib.cudnnSetConvolutionGroupCount(conv, p.groups),
               "cudnnSetConvolutionGroupCount")
        _check(lib.cudnnSetConvolutionMathType(conv, _FMA_MATH), "cudnnSetConvolutionMathType")
        dims = [ctypes.c_int() for _ in range(4)]
        _check(lib.cudnnGetConvolution2dForwardOutputDim(conv, x, f,
                                                         *[ctypes.byref(d) for d in dims]),
               "cudnnGetConvolution2dForwardOutputDim")
        want = (p.n, p.k, *p.out_hw)
        if tuple(d.value for d in dims) != want:
            raise CudnnError(f"cuDNN computes an output of {[d.value for d in dims]} for "
                             f"this convolution, irc {list(want)}")
        _check(lib.cudnnSetTensor4dDescriptor(y, fmt, _FLOAT, *want),
               "cudnnSetTensor4dDescriptor (output)")
        _check(lib.cudnnSetTensor4dDescriptor(b, _FORMATS["NCHW"], _FLOAT, 1, p.k, 1, 1),
               "cudnnSetTensor4dDescriptor (bias)")
        act = _new(lib, "Activation")
        _check(lib.cudnnSetActivationDescriptor(act, _RELU if p.activation else _IDENTITY,
                                                _PROPAGATE_NAN, 0.0),
               "cudnnSetActivationDescriptor")
        algo = self._algorithm(lib, h, x, f, conv, y)
        if p.fused and not p.bias:
            self._zeros[index] = tensor(np.zeros(p.k, np.float32), cuda(index))
        return (x, y, b, f, conv, act, algo)

    def _algorithm(self, lib: Any, h: Any, x: Any, f: Any, conv: Any, y: Any) -> int:
        if self.plan.fused and self.plan.activation is None:
            return _IMPLICIT_PRECOMP_GEMM  # the fused call's only algorithm without ReLU
        perf = (_AlgoPerf * _ALGOS)()
        count = ctypes.c_int()
        _check(lib.cudnnGetConvolutionForwardAlgorithm_v7(h, x, f, conv, y, _ALGOS,
                                                          ctypes.byref(count), perf),
               "cudnnGetConvolutionForwardAlgorithm_v7")
        for i in range(count.value):
            if perf[i].status == 0 and perf[i].memory <= WORKSPACE_BYTES:
                return int(perf[i].algo)
        raise CudnnError("cuDNN has no algorithm for this convolution within its "
                         f"{WORKSPACE_BYTES >> 20} MiB workspace")

    def __call__(self, index: int, x_ptr: int, w_ptr: int, bias_ptr: int,
                 residual_ptr: int, y_ptr: int) -> None:
        lib = _load()
        ready = self._ready.get(index)
        if ready is None:
            ready = self._ready[index] = self._prepare(index)
        x, y, b, f, conv, act, algo = ready
        h = handle(index)
        cuda_backend.context(index)
        ws = _workspaces[index]
        one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
        p = self.plan
        if not p.fused:
            _check(lib.cudnnConvolutionForward(h, ctypes.byref(one), x, x_ptr, f, w_ptr, conv,
                                               algo, ws.ptr, WORKSPACE_BYTES,
                                               ctypes.byref(zero), y, y_ptr),
                   "cudnnConvolutionForward")
            return
        alpha2 = one if p.residual else zero
        z_ptr = residual_ptr if p.residual else y_ptr
        bias = bias_ptr if p.bias else self._zeros[index].data_ptr
        _check(lib.cudnnConvolutionBiasActivationForward(
            h, ctypes.byref(one), x, x_ptr, f, w_ptr, conv, algo, ws.ptr, WORKSPACE_BYTES,
            ctypes.byref(alpha2), y, z_ptr, b, bias, act, y, y_ptr),
            "cudnnConvolutionBiasActivationForward")

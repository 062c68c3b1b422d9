"""The runtime: devices, tensors, compiled modules and kernel calls, timing.

``irc.cpu()``, ``irc.cuda()``, ``irc.device("cpu")``; ``irc.tensor(np_array, device)``,
``empty(shape, dtype, device)``, ``from_dlpack(x)``; ``Module`` (``mod[name](*args)``,
``time_evaluator``, ``export_library``) and ``load_module(path)``; on NVIDIA GPUs
``CUDAModule`` (a cubin's kernels, launched with ``launch``), ``KernelSpec``,
``Stream``, ``Event`` and ``CUDAError``.
"""

from .cuda_backend import CUDAError, DeviceAttributes, Event, Stream
from .cuda_module import CUDAModule, KernelSpec
from .device import DL_CPU, DL_CUDA, Device, DeviceError, cpu, cuda, device
from .module import Function, KernelAssertionError, Module, load_module
from .ndarray import Tensor, aligned_empty, empty, from_dlpack, tensor, zeros
from .signature import BufferParamSpec, KernelSignature, ScalarParamSpec
from .timer import BenchmarkResult, TimeEvaluator, time_evaluator

# TVM-style spellings used by the seeds (``tvm.nd.array``/``tvm.nd.empty``).
array = tensor

__all__ = [
    "DL_CPU", "DL_CUDA", "BenchmarkResult", "BufferParamSpec", "CUDAError", "CUDAModule",
    "Device", "DeviceAttributes", "DeviceError", "Event", "Function",
    "KernelAssertionError", "KernelSignature", "KernelSpec", "Module", "ScalarParamSpec",
    "Stream", "Tensor", "TimeEvaluator", "aligned_empty", "array", "cpu", "cuda", "device",
    "empty", "from_dlpack", "load_module", "tensor", "time_evaluator", "zeros",
]
# Register the loaders of the BLAS and cuBLAS library modules (executables with
# dispatched matmuls); neither loads its library, which happens on the first call.
from . import blas_module, cublas_module
from .registry import get_global_func, list_global_funcs, register_func

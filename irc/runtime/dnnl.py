"""oneDNN primitives on the CPU, called with ctypes through oneDNN's C API (the ``dnnl``
extra).

Two oneDNN wheels are understood, the first one installed being used:

- ``onednn-cpu-gomp`` (what the extra installs): oneDNN 3.2 built with GNU OpenMP. Its
  primitives run on the same libgomp thread team as irc's own parallel loops, so a library
  call and an irc kernel never fight over the cores (two thread pools on two cores: the
  idle one spins while the other works), and a call costs about 10 µs of overhead.
- ``onednn``: Intel's current oneDNN (3.9 with the 2025.3 release), built with the SYCL CPU
  runtime only. Its CPU engine needs the SYCL CPU device of ``dpcpp-cpp-rt`` and
  ``intel-opencl-rt`` (pinned to 2025.3: the 2026 releases dropped the OpenCL adapter, and
  oneDNN then finds no CPU device); each call is a SYCL submission (about 40 µs), and its
  TBB workers compete with libgomp's. Used when it is the one installed.

The libraries sit in the installation's ``lib`` directory, not on the loader's path, so
:func:`load_dnnl` loads ``libdnnl`` and whatever it needs from there (for the SYCL build it
also points the OpenCL loader at the CPU runtime with ``OCL_ICD_FILENAMES``, unless the user
already did). Nothing is loaded at import.

- :class:`ConvPlan` / :class:`MatmulPlan`: one convolution or matrix product (sizes,
  layouts, bias, residual add, activation), plain data that saves as JSON;
- :class:`DnnlPrimitive` (``plan.build(weights)``): the oneDNN primitive of a plan,
  created once, with its weights reordered once into the layout oneDNN chose when they
  are constants, and the reorders between the caller's plain layouts and the primitive's
  own built once too; called with raw data pointers.

Only float32 is supported; oneDNN's bf16/int8 paths are not wired up.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import re
import threading
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.diagnostics import IRCError, MissingDependencyError
from .engine import bounded_openmp_wait
from .external import JsonPlan
from .ndarray import aligned_empty

INSTALL = "pip install 'irc[dnnl]'"

# oneDNN C API constants (dnnl_types.h / dnnl_common_types.h, stable across 3.x).
_SUCCESS = 0
_STATUS = {1: "out of memory", 2: "invalid arguments", 3: "unimplemented",
           5: "last implementation reached", 6: "runtime error", 7: "not required",
           8: "invalid graph", 9: "invalid graph op", 10: "invalid shape",
           11: "invalid data type"}
_CPU_ENGINE = 1
_STREAM_IN_ORDER = 1
_F32 = 3
_FORMAT_ANY = 1
_FORWARD_INFERENCE = 96
_CONV_DIRECT = 1
_QUERY_IMPL_INFO = 8
_QUERY_SRC_MD = 129
_QUERY_WEIGHTS_MD = 131
_QUERY_DST_MD = 133
_ARG_SRC = 1
_ARG_DST = 17
_ARG_WEIGHTS = 33
_ARG_BIAS = 41
_BINARY_ADD = 0x1FFF0
# The second source of post-op 0 (DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1).
_ARG_POST_OP0_SRC1 = 32768 * 1 | 2
_MAX_NDIMS = 12
# eltwise algorithm, alpha, beta: how each activation irc fuses becomes a post-op. ReLU is
# oneDNN's elu with alpha 0 (s if s > 0, else 0 * (exp(s) - 1) = -0.0): its relu with a zero
# slope is a max instruction that turns NaN into 0, where ReLU keeps NaN (numpy, ONNX).
ACTIVATIONS = {"relu": (34, 0.0, 0.0), "gelu": (49, 0.0, 0.0), "gelu_tanh": (43, 0.0, 0.0),
               "silu": (44, 1.0, 0.0)}

_Dims = ctypes.c_int64 * _MAX_NDIMS
_vp = ctypes.c_void_p


class DnnlError(IRCError):
    """oneDNN refused or failed an operation; the message names the call and the cause."""


class _ExecArg(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_int), ("memory", _vp)]


# name -> (restype, argtypes); every function returns a dnnl_status_t unless given.
_P = ctypes.POINTER(_vp)
_SIGNATURES: dict[str, tuple[Any, list]] = {
    "dnnl_engine_create": (ctypes.c_int, [_P, ctypes.c_int, ctypes.c_size_t]),
    "dnnl_engine_destroy": (ctypes.c_int, [_vp]),
    "dnnl_stream_create": (ctypes.c_int, [_P, _vp, ctypes.c_uint]),
    "dnnl_stream_wait": (ctypes.c_int, [_vp]),
    "dnnl_stream_destroy": (ctypes.c_int, [_vp]),
    "dnnl_memory_desc_create_with_strides": (ctypes.c_int,
                                             [_P, ctypes.c_int, _Dims, ctypes.c_int, _Dims]),
    "dnnl_memory_desc_create_with_tag": (ctypes.c_int,
                                         [_P, ctypes.c_int, _Dims, ctypes.c_int, ctypes.c_int]),
    "dnnl_memory_desc_clone": (ctypes.c_int, [_P, _vp]),
    "dnnl_memory_desc_destroy": (ctypes.c_int, [_vp]),
    "dnnl_memory_desc_equal": (ctypes.c_int, [_vp, _vp]),
    "dnnl_memory_desc_get_size": (ctypes.c_size_t, [_vp]),
    "dnnl_memory_create": (ctypes.c_int, [_P, _vp, _vp, _vp]),
    "dnnl_memory_set_data_handle": (ctypes.c_int, [_vp, _vp]),
    "dnnl_memory_destroy": (ctypes.c_int, [_vp]),
    "dnnl_primitive_attr_create": (ctypes.c_int, [_P]),
    "dnnl_primitive_attr_destroy": (ctypes.c_int, [_vp]),
    "dnnl_primitive_attr_set_post_ops": (ctypes.c_int, [_vp, _vp]),
    "dnnl_post_ops_create": (ctypes.c_int, [_P]),
    "dnnl_post_ops_destroy": (ctypes.c_int, [_vp]),
    "dnnl_post_ops_append_eltwise": (ctypes.c_int, [_vp, ctypes.c_int, ctypes.c_float,
                                                    ctypes.c_float]),
    "dnnl_post_ops_append_sum": (ctypes.c_int, [_vp, ctypes.c_float, ctypes.c_int32,
                                                ctypes.c_int]),
    "dnnl_post_ops_append_binary": (ctypes.c_int, [_vp, ctypes.c_int, _vp]),
    "dnnl_convolution_forward_primitive_desc_create": (
        ctypes.c_int, [_P, _vp, ctypes.c_int, ctypes.c_int, _vp, _vp, _vp, _vp,
                       _Dims, _Dims, _Dims, _Dims, _vp]),
    "dnnl_matmul_primitive_desc_create": (ctypes.c_int, [_P, _vp, _vp, _vp, _vp, _vp, _vp]),
    "dnnl_reorder_primitive_desc_create": (ctypes.c_int, [_P, _vp, _vp, _vp, _vp, _vp]),
    "dnnl_primitive_desc_query_md": (_vp, [_vp, ctypes.c_int, ctypes.c_int]),
    "dnnl_primitive_desc_query": (ctypes.c_int, [_vp, ctypes.c_int, ctypes.c_int, _vp]),
    "dnnl_primitive_desc_destroy": (ctypes.c_int, [_vp]),
    "dnnl_primitive_create": (ctypes.c_int, [_P, _vp]),
    "dnnl_primitive_execute": (ctypes.c_int, [_vp, _vp, ctypes.c_int,
                                              ctypes.POINTER(_ExecArg)]),
    "dnnl_primitive_destroy": (ctypes.c_int, [_vp]),
}


class _VersionStruct(ctypes.Structure):
    _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("patch", ctypes.c_int),
                ("hash", ctypes.c_char_p), ("cpu_runtime", ctypes.c_uint),
                ("gpu_runtime", ctypes.c_uint)]


class OneDNN:
    """The loaded library: its functions (attributes named as in C, argument types set),
    one CPU engine and one in-order stream."""

    def __init__(self, path: str, lib: ctypes.CDLL):
        self.path = path
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise MissingDependencyError(f"{path} has no function {name}; install the "
                                             f"version irc supports: {INSTALL}") from None
            fn.restype, fn.argtypes = restype, argtypes
            setattr(self, name, fn)
        lib.dnnl_version.restype = ctypes.POINTER(_VersionStruct)
        v = lib.dnnl_version().contents
        self.version = f"{v.major}.{v.minor}.{v.patch}"
        if v.major != 3:
            raise MissingDependencyError(f"{path} is oneDNN {self.version}; irc speaks the "
                                         f"oneDNN 3 C API: {INSTALL}")
        self.engine = _vp()
        status = self.dnnl_engine_create(ctypes.byref(self.engine), _CPU_ENGINE, 0)
        if status != _SUCCESS:
            raise DnnlError(f"oneDNN {self.version} ({path}) cannot create a CPU engine "
                            f"({_STATUS.get(status, status)})",
                            hint="the SYCL build of oneDNN (the 'onednn' wheel) needs the SYCL "
                                 "CPU device of the Intel OpenCL runtime; install the OpenMP "
                                 f"build the extra pins instead: {INSTALL}")
        self.stream = _vp()
        self.check(self.dnnl_stream_create(ctypes.byref(self.stream), self.engine,
                                           _STREAM_IN_ORDER), "creating a stream")

    def check(self, status: int, what: str) -> None:
        """Raise a :class:`DnnlError` naming ``what`` unless ``status`` is success."""
        if status != _SUCCESS:
            raise DnnlError(f"oneDNN failed {what}: {_STATUS.get(status, f'status {status}')}")


_lock = threading.Lock()
_library: OneDNN | None = None


# The wheels that ship libdnnl.so.3, in order of preference (see the module docstring).
DISTRIBUTIONS = ("onednn-cpu-gomp", "onednn")


def library_dir() -> str | None:
    """The directory holding ``libdnnl.so.3`` of the first installed oneDNN wheel of
    :data:`DISTRIBUTIONS`, or None when none is (found without loading anything)."""
    for name in DISTRIBUTIONS:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for f in dist.files or ():
            if f.name == "libdnnl.so.3":
                path = str(dist.locate_file(f))
                if os.path.exists(path):
                    return os.path.dirname(path)
    return None


def available() -> bool:
    """Whether a oneDNN wheel is installed (it is only loaded at the first use)."""
    return library_dir() is not None


def _load_with_dependencies(directory: str, name: str) -> ctypes.CDLL:
    """``directory/name`` loaded globally, after loading from ``directory`` each library
    the dynamic loader reports missing (the wheels carry no search path to each other)."""
    loaded: set[str] = set()
    while True:
        try:
            return ctypes.CDLL(os.path.join(directory, name), mode=ctypes.RTLD_GLOBAL)
        except OSError as err:
            m = re.search(r"([\w.+-]+\.so[\w.]*): cannot open shared object file", str(err))
            missing = m.group(1) if m else None
            if missing is None or missing in loaded or not os.path.exists(
                    os.path.join(directory, missing)):
                raise MissingDependencyError(
                    f"cannot load oneDNN from {directory} ({err}); reinstall it: "
                    f"pip install --force-reinstall 'irc[dnnl]'") from None
            _load_with_dependencies(directory, missing)
            loaded.add(missing)


def load_dnnl() -> OneDNN:
    """oneDNN from the installed wheel (:func:`library_dir`), loaded once (thread-safe),
    with its CPU engine; :class:`~irc.MissingDependencyError` when none is installed."""
    global _library
    if _library is not None:
        return _library
    with _lock:
        if _library is not None:
            return _library
        directory = library_dir()
        if directory is None:
            raise MissingDependencyError(f"the dnnl backend needs oneDNN (the "
                                         f"'onednn-cpu-gomp' wheel): {INSTALL}")
        cpu_runtime = os.path.join(directory, "libintelocl.so")
        if os.path.exists(cpu_runtime):
            os.environ.setdefault("OCL_ICD_FILENAMES", cpu_runtime)
        with bounded_openmp_wait():  # libdnnl loads libgomp when irc has not yet
            lib = _load_with_dependencies(directory, "libdnnl.so.3")
        _library = OneDNN(os.path.join(directory, "libdnnl.so.3"), lib)
        return _library


# -- memory descriptors and handles ---------------------------------------------------------

class _Owned:
    """A oneDNN object destroyed with ``destroy`` when this wrapper is collected."""

    def __init__(self, handle: _vp, destroy: Any):
        self.handle = handle
        weakref.finalize(self, destroy, handle)  # alive in weakref's registry until then


def _strides(shape: tuple[int, ...], layout: str, canonical: str) -> tuple[int, ...]:
    """Strides of the ``canonical``-ordered dimensions of an array stored as ``layout``
    with ``shape`` (in ``layout`` order)."""
    dense = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        dense[i] = dense[i + 1] * shape[i + 1]
    return tuple(dense[layout.index(c)] for c in canonical)


def _md(lib: OneDNN, dims: tuple[int, ...], strides: tuple[int, ...] | None) -> _Owned:
    """A float32 memory descriptor: plain with ``strides``, or "any" layout when None."""
    md = _vp()
    if strides is None:
        status = lib.dnnl_memory_desc_create_with_tag(ctypes.byref(md), len(dims), _Dims(*dims),
                                                      _F32, _FORMAT_ANY)
    else:
        status = lib.dnnl_memory_desc_create_with_strides(ctypes.byref(md), len(dims),
                                                          _Dims(*dims), _F32, _Dims(*strides))
    lib.check(status, f"describing a float32 tensor of dims {list(dims)}")
    return _Owned(md, lib.dnnl_memory_desc_destroy)


def _dense_md(lib: OneDNN, dims: tuple[int, ...]) -> _Owned:
    """A row-major float32 descriptor of ``dims``."""
    strides = [1] * len(dims)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = strides[i + 1] * dims[i + 1]
    return _md(lib, dims, tuple(strides))


class _Memory:
    """A memory object of a descriptor, its data pointer set at each call (or owning a
    buffer when ``buffer`` is given)."""

    def __init__(self, lib: OneDNN, md: Any, buffer: np.ndarray | None = None):
        self.lib = lib
        handle = _vp()
        lib.check(lib.dnnl_memory_create(ctypes.byref(handle), md, lib.engine,
                                         _vp(buffer.ctypes.data if buffer is not None else 0)),
                  "creating a memory object")
        self.owned = _Owned(handle, lib.dnnl_memory_destroy)
        self.handle = handle
        self.buffer = buffer

    def point(self, ptr: int) -> None:
        self.lib.dnnl_memory_set_data_handle(self.handle, ptr)


class _Primitive:
    """A primitive and its argument array, created from a primitive descriptor."""

    def __init__(self, lib: OneDNN, pd: _Owned, args: list[tuple[int, _Memory]], what: str):
        self.lib = lib
        handle = _vp()
        lib.check(lib.dnnl_primitive_create(ctypes.byref(handle), pd.handle),
                  f"creating the {what} primitive")
        self.owned = _Owned(handle, lib.dnnl_primitive_destroy)
        self.handle = handle
        self.what = what
        self.memories = [m for _, m in args]  # kept alive with the primitive
        self.args = (_ExecArg * len(args))(*(_ExecArg(a, m.handle) for a, m in args))
        self.nargs = len(args)

    def run(self) -> None:
        status = self.lib.dnnl_primitive_execute(self.handle, self.lib.stream, self.nargs,
                                                 self.args)
        if status != _SUCCESS:
            self.lib.check(status, f"running the {self.what} primitive")


def _query_md(lib: OneDNN, pd: _Owned, what: int) -> _Owned:
    """A copy of the memory descriptor ``what`` of a primitive descriptor."""
    md = _vp()
    lib.check(lib.dnnl_memory_desc_clone(ctypes.byref(md),
                                         lib.dnnl_primitive_desc_query_md(pd.handle, what, 0)),
              "reading the chosen memory layout")
    return _Owned(md, lib.dnnl_memory_desc_destroy)


def _same(lib: OneDNN, a: _Owned, b: _Owned) -> bool:
    return bool(lib.dnnl_memory_desc_equal(a.handle, b.handle))


def _buffer(lib: OneDNN, md: _Owned) -> np.ndarray:
    size = int(lib.dnnl_memory_desc_get_size(md.handle))
    return aligned_empty(((size + 3) // 4,), "float32")


class _Reorder:
    """A reorder from memory ``src`` (layout ``src_md``) to ``dst``."""

    def __init__(self, lib: OneDNN, src_md: _Owned, src: _Memory, dst_md: _Owned,
                 dst: _Memory, what: str):
        pd = _vp()
        lib.check(lib.dnnl_reorder_primitive_desc_create(ctypes.byref(pd), src_md.handle,
                                                         lib.engine, dst_md.handle,
                                                         lib.engine, None),
                  f"planning the reorder of {what}")
        owned = _Owned(pd, lib.dnnl_primitive_desc_destroy)
        self.primitive = _Primitive(lib, owned, [(_ARG_SRC, src), (_ARG_DST, dst)],
                                    f"reorder of {what}")

    def run(self) -> None:
        self.primitive.run()


def _attr(lib: OneDNN, residual: _Owned | bool | None, activation: str | None) -> _Owned:
    """Primitive attributes with the post-ops: the residual add, then the activation. The
    residual is a binary add reading it where it is (``residual`` its memory descriptor),
    or, with ``residual=True``, a sum adding what was copied into the destination."""
    attr = _vp()
    lib.check(lib.dnnl_primitive_attr_create(ctypes.byref(attr)), "creating attributes")
    owned = _Owned(attr, lib.dnnl_primitive_attr_destroy)
    if not residual and activation is None:
        return owned
    po = _vp()
    lib.check(lib.dnnl_post_ops_create(ctypes.byref(po)), "creating post-ops")
    post_ops = _Owned(po, lib.dnnl_post_ops_destroy)
    if isinstance(residual, _Owned):
        lib.check(lib.dnnl_post_ops_append_binary(po, _BINARY_ADD, residual.handle),
                  "adding the residual post-op")
    elif residual:
        lib.check(lib.dnnl_post_ops_append_sum(po, 1.0, 0, 0), "adding the residual post-op")
    if activation is not None:
        if activation not in ACTIVATIONS:
            raise DnnlError(f"the dnnl backend has no activation {activation!r} (it fuses "
                            f"{', '.join(ACTIVATIONS)})")
        alg, alpha, beta = ACTIVATIONS[activation]
        lib.check(lib.dnnl_post_ops_append_eltwise(po, alg, alpha, beta),
                  f"adding the {activation} post-op")
    lib.check(lib.dnnl_primitive_attr_set_post_ops(attr, po), "setting post-ops")
    del post_ops  # the attributes keep their own copy
    return owned


def _impl_name(lib: OneDNN, pd: _Owned) -> str:
    info = ctypes.c_char_p()
    if lib.dnnl_primitive_desc_query(pd.handle, _QUERY_IMPL_INFO, 0, ctypes.byref(info)):
        return "?"
    return (info.value or b"?").decode("ascii", "replace")


# -- plans ----------------------------------------------------------------------------------

def _ints(v: Any) -> tuple[int, ...]:
    return tuple(int(x) for x in v)


class _Plan(JsonPlan):
    """What the plans share: JSON form (their fields) and construction from it."""

    error = DnnlError
    label = "oneDNN plan"


@dataclass(frozen=True)
class ConvPlan(_Plan):
    """A float32 2-D convolution ``act(conv(data, weight) + bias + residual)``. Shapes are
    in the tensors' own layouts (``data_layout`` a permutation of NCHW, ``kernel_layout``
    of OIHW with I the input channels per group, ``out_layout`` of NCHW); ``padding`` is
    (top, left, bottom, right); ``dilation`` as in irc (1: none)."""

    data_shape: tuple[int, ...]
    data_layout: str
    weight_shape: tuple[int, ...]
    kernel_layout: str
    out_shape: tuple[int, ...]
    out_layout: str
    strides: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    bias: bool = False
    residual: bool = False
    activation: str | None = None

    def __post_init__(self) -> None:
        for name in ("data_shape", "weight_shape", "out_shape", "strides", "padding",
                     "dilation"):
            object.__setattr__(self, name, _ints(getattr(self, name)))
        for name, canonical in (("data_layout", "NCHW"), ("kernel_layout", "OIHW"),
                                ("out_layout", "NCHW")):
            if sorted(getattr(self, name)) != sorted(canonical):
                raise DnnlError(f"ConvPlan: {name} {getattr(self, name)!r} is not a "
                                f"permutation of {canonical}")

    def dims(self) -> dict[str, int]:
        """Canonical sizes: n, ci, h, w, co, kh, kw, oh, ow."""
        d = dict(zip(self.data_layout, self.data_shape))
        k = dict(zip(self.kernel_layout, self.weight_shape))
        o = dict(zip(self.out_layout, self.out_shape))
        return {"n": d["N"], "ci": d["C"], "h": d["H"], "w": d["W"], "co": k["O"],
                "kh": k["H"], "kw": k["W"], "oh": o["H"], "ow": o["W"]}

    @property
    def flops(self) -> int:
        d = self.dims()
        return 2 * d["n"] * d["co"] * d["oh"] * d["ow"] * (d["ci"] // self.groups) * \
            d["kh"] * d["kw"]

    def build(self, weight: np.ndarray | None = None) -> DnnlPrimitive:
        """The primitive; ``weight`` (the constant weights, in ``kernel_layout``) is
        reordered once into oneDNN's layout, else weights are passed at each call."""
        return _ConvPrimitive(self, weight)


@dataclass(frozen=True)
class MatmulPlan(_Plan):
    """A float32 matrix product ``act(a @ b + bias)``: ``a`` is ``[batch, m, k]`` (batch 1:
    a matrix; leading dimensions folded into m by the caller), ``b`` is ``[k, n]`` or, with
    ``trans_b``, ``[n, k]`` (``[batch or 1, k, n]`` for a batch product); ``bias_shape``
    the bias's shape broadcast to the output ``[batch, m, n]`` (1 where broadcast), or
    None."""

    m: int
    n: int
    k: int
    batch: int = 1
    b_batch: int = 1
    trans_b: bool = False
    bias_shape: tuple[int, int, int] | None = None
    activation: str | None = None

    def __post_init__(self) -> None:
        if self.bias_shape is not None:
            object.__setattr__(self, "bias_shape", _ints(self.bias_shape))

    @property
    def flops(self) -> int:
        return 2 * self.batch * self.m * self.n * self.k

    def build(self, weight: np.ndarray | None = None) -> DnnlPrimitive:
        """The primitive; ``weight`` (the constant ``b``) is reordered once."""
        return _MatmulPrimitive(self, weight)


class DnnlPrimitive:
    """A built plan: ``primitive(data, weight, bias, residual, out)`` with data pointers
    (0 for absent operands; ``weight`` is ignored when it was given at build time).
    ``implementation`` names the kernel oneDNN picked (``brg_conv_fwd:avx2``)."""

    implementation: str

    def __call__(self, data: int, weight: int, bias: int, residual: int, out: int) -> None:
        raise NotImplementedError


class _Operand:
    """An operand as the caller passes it (plain layout ``user_md``) and as the primitive
    reads or writes it (``md``): when the two differ, a buffer in the primitive's layout
    and a reorder between them, built once."""

    def __init__(self, lib: OneDNN, user_md: _Owned, md: _Owned, what: str, output: bool):
        self.user = _Memory(lib, user_md.handle)
        if _same(lib, user_md, md):
            self.memory, self.reorder = self.user, None
            return
        self.memory = _Memory(lib, md.handle, _buffer(lib, md))
        self.reorder = (_Reorder(lib, md, self.memory, user_md, self.user, what) if output
                        else _Reorder(lib, user_md, self.user, md, self.memory, what))

    def bind(self, ptr: int) -> None:
        self.user.point(ptr)

    def feed(self, ptr: int) -> None:
        """Point an input at ``ptr`` and reorder it into the primitive's layout if
        needed."""
        self.user.point(ptr)
        if self.reorder is not None:
            self.reorder.run()


def _weights(lib: OneDNN, user_md: _Owned, md: _Owned, weight: np.ndarray | None,
             what: str) -> tuple[_Memory, _Operand | None]:
    """The weights' memory: reordered once now from ``weight``, or an operand passed at
    each call."""
    if weight is None:
        op = _Operand(lib, user_md, md, what, output=False)
        return op.memory, op
    src = np.asarray(weight, dtype=np.float32, order="C")
    packed = _Memory(lib, md.handle, _buffer(lib, md))
    user = _Memory(lib, user_md.handle, src)
    _Reorder(lib, user_md, user, md, packed, what).run()
    lib.check(lib.dnnl_stream_wait(lib.stream), f"reordering {what}")
    return packed, None


class _ConvPrimitive(DnnlPrimitive):
    def __init__(self, plan: ConvPlan, weight: np.ndarray | None):
        lib = load_dnnl()
        self.lib, self.plan = lib, plan
        d = plan.dims()
        g = plan.groups
        src_dims = (d["n"], d["ci"], d["h"], d["w"])
        dst_dims = (d["n"], d["co"], d["oh"], d["ow"])
        user_src = _md(lib, src_dims, _strides(plan.data_shape, plan.data_layout, "NCHW"))
        user_dst = _md(lib, dst_dims, _strides(plan.out_shape, plan.out_layout, "NCHW"))
        kstrides = _strides(plan.weight_shape, plan.kernel_layout, "OIHW")
        if g == 1:
            w_dims: tuple[int, ...] = (d["co"], d["ci"], d["kh"], d["kw"])
            w_strides = kstrides
        else:  # [G, O/G, I/G, H, W]: the group is the outer part of O
            w_dims = (g, d["co"] // g, d["ci"] // g, d["kh"], d["kw"])
            w_strides = (kstrides[0] * (d["co"] // g),) + kstrides
        user_w = _md(lib, w_dims, w_strides)
        bias_md = _dense_md(lib, (d["co"],)) if plan.bias else None
        # Kept in variables: a descriptor is destroyed when its wrapper is collected.
        any_src, any_w, any_dst = (_md(lib, src_dims, None), _md(lib, w_dims, None),
                                   _md(lib, dst_dims, None))

        def describe(src: _Owned, dst: _Owned, attr: _Owned) -> _Owned:
            pd = _vp()
            lib.check(lib.dnnl_convolution_forward_primitive_desc_create(
                ctypes.byref(pd), lib.engine, _FORWARD_INFERENCE, _CONV_DIRECT,
                src.handle, any_w.handle,
                bias_md.handle if bias_md else None, dst.handle,
                _Dims(*plan.strides), _Dims(*(x - 1 for x in plan.dilation)),
                _Dims(*plan.padding[:2]), _Dims(*plan.padding[2:]), attr.handle),
                f"planning the convolution {_describe_conv(plan)}")
            return _Owned(pd, lib.dnnl_primitive_desc_destroy)

        # The caller's layouts as they are when oneDNN has a direct kernel for them
        # (channels-last: its brgemm and depthwise kernels read NHWC), which saves the
        # reorders, and the residual read where it is (a binary add post-op); otherwise
        # (NCHW: only its im2col gemm) the layouts oneDNN prefers, the residual copied
        # into the destination in that layout and added by a sum post-op.
        pd_owned = describe(user_src, user_dst, _attr(
            lib, user_dst if plan.residual else None, plan.activation))
        # Implementation names: "brg_conv_fwd:avx2", "x64:gemm:jit", "ref:any", ...
        self.plain = not re.search(r"(^|:)(gemm|ref)(:|$)", _impl_name(lib, pd_owned))
        if not self.plain:
            pd_owned = describe(any_src, any_dst, _attr(lib, plan.residual, plan.activation))
        self.implementation = _impl_name(lib, pd_owned)
        self.src = _Operand(lib, user_src, _query_md(lib, pd_owned, _QUERY_SRC_MD),
                            "the convolution's input", output=False)
        dst_md = _query_md(lib, pd_owned, _QUERY_DST_MD)
        self.dst = _Operand(lib, user_dst, dst_md, "the convolution's output", output=True)
        w_mem, self.w = _weights(lib, user_w, _query_md(lib, pd_owned, _QUERY_WEIGHTS_MD),
                                 weight, "the convolution's weights")
        self.bias = _Memory(lib, bias_md.handle) if bias_md else None
        # The residual: read by the binary post-op on the plain path; else copied
        # (reordered) into the destination, where the sum post-op adds it.
        self.residual: tuple[_Memory, _Reorder | None] | None = None
        if plan.residual:
            user = _Memory(lib, user_dst.handle)
            self.residual = (user, None) if self.plain else \
                (user, _Reorder(lib, user_dst, user, dst_md, self.dst.memory, "the residual"))
        args = [(_ARG_SRC, self.src.memory), (_ARG_WEIGHTS, w_mem), (_ARG_DST, self.dst.memory)]
        if self.bias is not None:
            args.append((_ARG_BIAS, self.bias))
        if self.residual is not None and self.plain:
            args.append((_ARG_POST_OP0_SRC1, self.residual[0]))
        self.conv = _Primitive(lib, pd_owned, args, "convolution")

    def __call__(self, data: int, weight: int, bias: int, residual: int, out: int) -> None:
        self.src.feed(data)
        if self.w is not None:
            self.w.feed(weight)
        if self.bias is not None:
            self.bias.point(bias)
        self.dst.bind(out)
        if self.residual is not None:
            self.residual[0].point(residual)
            if self.residual[1] is not None:
                self.residual[1].run()
        self.conv.run()
        if self.dst.reorder is not None:
            self.dst.reorder.run()
        self.lib.check(self.lib.dnnl_stream_wait(self.lib.stream), "the convolution")


def _describe_conv(p: ConvPlan) -> str:
    return (f"{p.data_layout} {list(p.data_shape)} * {p.kernel_layout} "
            f"{list(p.weight_shape)} (strides {list(p.strides)}, padding {list(p.padding)}, "
            f"dilation {list(p.dilation)}, groups {p.groups})")


class _MatmulPrimitive(DnnlPrimitive):
    def __init__(self, plan: MatmulPlan, weight: np.ndarray | None):
        lib = load_dnnl()
        self.lib, self.plan = lib, plan
        m, n, k, b = plan.m, plan.n, plan.k, plan.batch
        a_dims, o_dims = (b, m, k), (b, m, n)
        w_dims = (plan.b_batch, k, n)
        w_strides = (k * n, 1, k) if plan.trans_b else (k * n, n, 1)
        user_a, user_o = _dense_md(lib, a_dims), _dense_md(lib, o_dims)
        user_w = _md(lib, w_dims, w_strides)
        bias_md = _dense_md(lib, plan.bias_shape) if plan.bias_shape else None
        # Constant weights take the layout oneDNN prefers (packed once); passed ones stay.
        w_any = _md(lib, w_dims, None) if weight is not None else user_w
        attr = _attr(lib, False, plan.activation)
        pd = _vp()
        lib.check(lib.dnnl_matmul_primitive_desc_create(
            ctypes.byref(pd), lib.engine, user_a.handle, w_any.handle,
            bias_md.handle if bias_md else None, user_o.handle, attr.handle),
            f"planning the matrix product [{b}, {m}, {k}] x [{plan.b_batch}, {k}, {n}]")
        pd_owned = _Owned(pd, lib.dnnl_primitive_desc_destroy)
        self.implementation = _impl_name(lib, pd_owned)
        self.a = _Memory(lib, user_a.handle)
        self.out = _Memory(lib, user_o.handle)
        w_mem, self.w = _weights(lib, user_w, _query_md(lib, pd_owned, _QUERY_WEIGHTS_MD),
                                 weight, "the product's right-hand side")
        self.bias = _Memory(lib, bias_md.handle) if bias_md else None
        args = [(_ARG_SRC, self.a), (_ARG_WEIGHTS, w_mem), (_ARG_DST, self.out)]
        if self.bias is not None:
            args.append((_ARG_BIAS, self.bias))
        self.matmul = _Primitive(lib, pd_owned, args, "matrix product")

    def __call__(self, data: int, weight: int, bias: int, residual: int, out: int) -> None:
        self.a.point(data)
        if self.w is not None:
            self.w.feed(weight)
        if self.bias is not None:
            self.bias.point(bias)
        self.out.point(out)
        self.matmul.run()
        self.lib.check(self.lib.dnnl_stream_wait(self.lib.stream), "the matrix product")


def plan_from_json(d: dict[str, Any]) -> ConvPlan | MatmulPlan:
    """The plan a spec's ``{"op": "conv2d" | "matmul", ...}`` JSON describes."""
    d = dict(d)
    op = d.pop("op", None)
    if op == "conv2d":
        return ConvPlan.from_json(d)
    if op == "matmul":
        return MatmulPlan.from_json(d)
    raise DnnlError(f"unknown oneDNN plan kind {op!r} (expected conv2d or matmul)")


def plan_to_json(plan: ConvPlan | MatmulPlan) -> dict[str, Any]:
    """``plan`` as JSON for :func:`plan_from_json`."""
    return {"op": "conv2d" if isinstance(plan, ConvPlan) else "matmul", **plan.to_json()}


__all__ = ["ConvPlan", "MatmulPlan", "DnnlPrimitive", "DnnlError", "OneDNN", "load_dnnl",
           "available", "library_dir", "plan_from_json", "plan_to_json", "ACTIVATIONS",
           "INSTALL"]

"""OpenBLAS matrix products on the CPU, through the ``scipy-openblas32`` wheel (the ``blas``
extra), called with ctypes.

``scipy-openblas32`` is the OpenBLAS build packaged for Python use (numpy and scipy ship
it): a shared library with a C ABI, so no compiler is needed; its symbols carry the prefix
``scipy_`` (``scipy_cblas_sgemm``) and its integers are 32-bit. The library is loaded on
first use, not at import.

- :func:`gemm` / :func:`batch_gemm` take numpy arrays or CPU :class:`~irc.runtime.Tensor`
  objects, check them and make one cblas call per matrix (row-major);
- :class:`BlasGemmPlan` is the cheapest path, for compiled executables: checked and laid
  out once from the sizes, then called with raw data pointers; it saves as plain JSON;
- :func:`set_num_threads` / :func:`get_num_threads` control OpenBLAS's thread pool.

Example::

    c = np.empty((m, n), np.float32)
    blas.gemm(a, b, c, trans_b=True)       # c = a @ b.T
"""

from __future__ import annotations

import ctypes
import importlib
import os
import sys
import threading
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from ..core.diagnostics import MissingDependencyError, RuntimeShapeError
from .ndarray import Tensor, data_pointer

_INSTALL = "pip install 'irc[blas]'"
# The wheel is built with -DBLAS_SYMBOL_PREFIX=scipy_ (see its get_pkg_config()), so its
# symbols never clash with another BLAS loaded in the process (numpy's own, for one).
SYMBOL_PREFIX = "scipy_"
# The 32 in scipy-openblas32: dimensions and leading dimensions are C ints.
_INT_MAX = 2**31 - 1

# CBLAS enumerations (cblas.h), as ctypes values: prebuilt ctypes objects convert faster
# than Python ints at each call.
_ROW_MAJOR = ctypes.c_int(101)
_NO_TRANS = ctypes.c_int(111)
_TRANS = ctypes.c_int(112)

_ITEMSIZE = {"float32": 4, "float64": 8}


class BlasError(RuntimeShapeError):
    """An argument the BLAS backend cannot take: wrong shape, dtype, layout or device."""


@dataclass(frozen=True, slots=True)
class OpenBLAS:
    """The loaded OpenBLAS library and its ctypes functions, argument types set."""

    path: str
    sgemm: Any
    dgemm: Any
    set_num_threads: Any
    get_num_threads: Any

    def gemm_function(self, dtype: str) -> Any:
        """``cblas_sgemm`` for float32, ``cblas_dgemm`` for float64."""
        return self.sgemm if dtype == "float32" else self.dgemm


_lock = threading.Lock()
_library: OpenBLAS | None = None


def _library_path(package: Any) -> str:
    lib_dir = package.get_lib_dir()
    if sys.platform == "win32":
        # get_library() names the import library (.lib) there; the code is in the DLL.
        dlls = sorted(name for name in os.listdir(lib_dir) if name.endswith(".dll"))
        if dlls:
            return os.path.join(lib_dir, dlls[0])
    return os.path.join(lib_dir, package.get_library(fullname=True))


def _symbol(lib: ctypes.CDLL, path: str, name: str, restype: Any, argtypes: list) -> Any:
    try:
        function = getattr(lib, SYMBOL_PREFIX + name)
    except AttributeError:
        raise MissingDependencyError(
            f"{path} has no symbol {SYMBOL_PREFIX + name}; upgrade scipy-openblas32: "
            f"pip install -U 'irc[blas]'") from None
    function.restype = restype
    function.argtypes = argtypes
    return function


def load_openblas() -> OpenBLAS:
    """The OpenBLAS of the ``scipy-openblas32`` wheel, loaded once (thread-safe); raises
    :class:`~irc.MissingDependencyError` when the wheel is not installed."""
    global _library
    if _library is not None:
        return _library
    with _lock:
        if _library is not None:
            return _library
        try:
            package = importlib.import_module("scipy_openblas32")
        except ImportError:
            raise MissingDependencyError(
                f"the BLAS backend needs the package 'scipy-openblas32': {_INSTALL}") from None
        path = _library_path(package)
        try:
            lib = ctypes.CDLL(path)
        except OSError as err:
            raise MissingDependencyError(
                f"cannot load OpenBLAS from {path} ({err}); reinstall it: "
                f"pip install --force-reinstall 'irc[blas]'") from None
        c_int, ptr = ctypes.c_int, ctypes.c_void_p

        def gemm_argtypes(scalar: Any) -> list:
            # order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc
            return [c_int] * 6 + [scalar, ptr, c_int, ptr, c_int, scalar, ptr, c_int]

        _library = OpenBLAS(
            path=path,
            sgemm=_symbol(lib, path, "cblas_sgemm", None, gemm_argtypes(ctypes.c_float)),
            dgemm=_symbol(lib, path, "cblas_dgemm", None, gemm_argtypes(ctypes.c_double)),
            set_num_threads=_symbol(lib, path, "openblas_set_num_threads", None, [c_int]),
            get_num_threads=_symbol(lib, path, "openblas_get_num_threads", c_int, []),
        )
        return _library


def set_num_threads(n: int) -> None:
    """Use ``n`` threads in OpenBLAS calls (OpenBLAS caps it at the number it was built
    for)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise BlasError(f"set_num_threads: n must be a positive int, not {n!r}")
    load_openblas().set_num_threads(min(int(n), _INT_MAX))


def get_num_threads() -> int:
    """The number of threads OpenBLAS calls use."""
    return int(load_openblas().get_num_threads())


# -- checking arguments -----------------------------------------------------------------------

# Keyed by numpy dtype, so byte-swapped arrays ('>f4') are not taken for native ones.
_NUMPY_DTYPES = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64"}


def _operand(x: Any, name: str, op: str, *, output: bool = False
             ) -> tuple[int, tuple[int, ...], str]:
    """(data pointer, shape, irc dtype) of a gemm argument, checked for what BLAS needs."""
    if isinstance(x, np.ndarray):
        dtype = _NUMPY_DTYPES.get(x.dtype)
        if dtype is None:
            raise BlasError(f"{op}: {name} has dtype {x.dtype}; BLAS gemm takes float32 or "
                            "float64 in native byte order")
        if not x.flags.c_contiguous:
            raise BlasError(f"{op}: {name} is not C-contiguous (shape {x.shape}, strides "
                            f"{x.strides})", hint=f"pass np.ascontiguousarray({name})")
        if output and not x.flags.writeable:
            raise BlasError(f"{op}: {name} is read-only; the result is written into it")
        return data_pointer(x), x.shape, dtype
    if isinstance(x, Tensor):
        if not x.is_cpu:
            raise BlasError(f"{op}: {name} is on {x.device}; the BLAS backend runs on the CPU",
                            hint=f"copy it first: {name}.copyto(irc.cpu())")
        if x.dtype not in _ITEMSIZE:
            raise BlasError(f"{op}: {name} has dtype {x.dtype}; BLAS gemm takes float32 or "
                            "float64")
        return x.data_ptr, x.shape, x.dtype
    raise BlasError(f"{op}: {name} must be a numpy array or an irc Tensor, not "
                    f"{type(x).__name__}")


def _check_dtypes(op: str, a: str, b: str, c: str) -> None:
    if b != a or c != a:
        name, dtype = ("b", b) if b != a else ("c", c)
        raise BlasError(f"{op}: {name} has dtype {dtype} but a has {a}; a, b and c must "
                        "have one dtype")


def _shape_error(op: str, name: str, want: tuple, got: tuple[int, ...]) -> BlasError:
    text = "(" + ", ".join(str(w) for w in want) + ")"
    return BlasError(f"{op}: {name} must have shape {text}; got {tuple(got)}")


def _check_int32(op: str, **sizes: int) -> None:
    if max(sizes.values()) <= _INT_MAX:
        return
    for name, value in sizes.items():
        if value > _INT_MAX:
            raise BlasError(f"{op}: {name} = {value} exceeds the 32-bit BLAS interface's "
                            f"limit {_INT_MAX}", hint="split the product into smaller ones")


def _matmul_shapes(op: str, a: tuple[int, ...], b: tuple[int, ...], c: tuple[int, ...],
                   trans_a: bool, trans_b: bool, batched: bool) -> tuple[int, int, int, int, bool]:
    """(batch, m, n, k, b_broadcast) of c = op(a) @ op(b), the shapes checked."""
    rank = 3 if batched else 2
    if len(a) != rank:
        form = ("k", "m") if trans_a else ("m", "k")
        raise _shape_error(op, "a (trans_a=True)" if trans_a else "a",
                           ("batch", *form) if batched else form, a)
    batch = a[0] if batched else 1
    m, k = (a[-1], a[-2]) if trans_a else (a[-2], a[-1])
    b_broadcast = batched and len(b) == 3 and b[0] == 1 and batch != 1
    n = (b[-2] if trans_b else b[-1]) if len(b) >= 2 else 0
    want_b = (n, k) if trans_b else (k, n)
    if batched:
        want_b = (1 if b_broadcast else batch, *want_b)
    if tuple(b) != want_b:
        if batched and len(b) == 3 and b[0] not in (1, batch):
            raise BlasError(f"{op}: b must have batch {batch} (as a) or 1; got shape "
                            f"{tuple(b)}")
        form = ("n", k) if trans_b else (k, "n")
        raise _shape_error(op, "b (trans_b=True)" if trans_b else "b",
                           (want_b[0], *form) if batched else form, b)
    want_c = (batch, m, n) if batched else (m, n)
    if tuple(c) != want_c:
        raise _shape_error(op, "c", want_c, c)
    _check_int32(op, m=m, n=n, k=k)
    return batch, m, n, k, b_broadcast


# -- the call ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class BlasGemmPlan:
    """One (batched) gemm ``c = alpha * op(a) @ op(b) + beta * c`` on row-major arrays of
    fixed sizes, laid out once; ``plan(a_ptr, b_ptr, c_ptr)`` takes raw data pointers
    (ints) and makes the cblas calls, nothing else.

    ``a`` is (batch, m, k) — (batch, k, m) with ``trans_a`` — ``b`` is (batch, k, n) —
    (batch, n, k) with ``trans_b`` — or, with ``b_broadcast``, one matrix for every batch;
    ``c`` is (batch, m, n). The caller vouches for the pointers: nothing is checked at the
    call. Saved by :meth:`to_json`, rebuilt by :meth:`from_json`.

    Example::

        plan = BlasGemmPlan(dtype="float32", m=64, n=32, k=128, trans_b=True)
        plan(a.ctypes.data, b.ctypes.data, c.ctypes.data)
    """

    dtype: str
    m: int
    n: int
    k: int
    trans_a: bool = False
    trans_b: bool = False
    batch: int = 1
    b_broadcast: bool = False
    alpha: float = 1.0
    beta: float = 0.0
    # Derived: the leading dimensions (elements) and the batch strides (bytes).
    lda: int = field(init=False)
    ldb: int = field(init=False)
    ldc: int = field(init=False)
    stride_a: int = field(init=False)
    stride_b: int = field(init=False)
    stride_c: int = field(init=False)
    # The ctypes values of the arguments before a's pointer, and between the pointers.
    _head: tuple = field(init=False, repr=False, compare=False)
    _lda: Any = field(init=False, repr=False, compare=False)
    _ldb: Any = field(init=False, repr=False, compare=False)
    _tail: tuple = field(init=False, repr=False, compare=False)
    _function: Any = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        if self.dtype not in _ITEMSIZE:
            raise BlasError(f"BlasGemmPlan: dtype must be float32 or float64, not "
                            f"{self.dtype!r}")
        for name in ("m", "n", "k", "batch"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise BlasError(f"BlasGemmPlan: {name} must be an int >= 0, not {value!r}")
        for name in ("trans_a", "trans_b", "b_broadcast"):
            if not isinstance(getattr(self, name), bool):
                raise BlasError(f"BlasGemmPlan: {name} must be a bool, not "
                                f"{getattr(self, name)!r}")
        for name in ("alpha", "beta"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise BlasError(f"BlasGemmPlan: {name} must be a number, not {value!r}")
            object.__setattr__(self, name, float(value))
        _check_int32("BlasGemmPlan", m=self.m, n=self.n, k=self.k)
        m, n, k, size = self.m, self.n, self.k, _ITEMSIZE[self.dtype]
        # Row-major: the leading dimension is the stored row length; BLAS wants it >= 1
        # even for empty matrices.
        derived = {
            "lda": max(1, m if self.trans_a else k),
            "ldb": max(1, k if self.trans_b else n),
            "ldc": max(1, n),
            "stride_a": m * k * size,
            "stride_b": 0 if self.b_broadcast else k * n * size,
            "stride_c": m * n * size,
        }
        for name, value in derived.items():
            object.__setattr__(self, name, value)
        scalar = ctypes.c_float if self.dtype == "float32" else ctypes.c_double
        c_int = ctypes.c_int
        head = (_ROW_MAJOR, _TRANS if self.trans_a else _NO_TRANS,
                _TRANS if self.trans_b else _NO_TRANS, c_int(m), c_int(n), c_int(k),
                scalar(self.alpha))
        object.__setattr__(self, "_head", head)
        object.__setattr__(self, "_lda", c_int(derived["lda"]))
        object.__setattr__(self, "_ldb", c_int(derived["ldb"]))
        object.__setattr__(self, "_tail", (scalar(self.beta), c_int(derived["ldc"])))

    @property
    def is_empty(self) -> bool:
        """True when the product has no elements (nothing to compute)."""
        return self.m == 0 or self.n == 0 or self.batch == 0

    def _bind(self) -> Any:
        function = load_openblas().gemm_function(self.dtype)
        object.__setattr__(self, "_function", function)
        return function

    def __call__(self, a_ptr: int, b_ptr: int, c_ptr: int) -> None:
        if self.is_empty:
            return
        function = self._function or self._bind()
        head, lda, ldb, (beta, ldc) = self._head, self._lda, self._ldb, self._tail
        if self.batch == 1:
            function(*head, a_ptr, lda, b_ptr, ldb, beta, c_ptr, ldc)
            return
        stride_a, stride_b, stride_c = self.stride_a, self.stride_b, self.stride_c
        for _ in range(self.batch):
            function(*head, a_ptr, lda, b_ptr, ldb, beta, c_ptr, ldc)
            a_ptr += stride_a
            b_ptr += stride_b
            c_ptr += stride_c

    _SAVED = ("dtype", "m", "n", "k", "trans_a", "trans_b", "batch", "b_broadcast", "alpha",
              "beta")

    def to_json(self) -> dict[str, Any]:
        """The plan as a dict of plain values (str, int, bool, float)."""
        return {name: getattr(self, name) for name in self._SAVED}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BlasGemmPlan:
        """The plan :meth:`to_json` saved."""
        if not isinstance(data, dict):
            raise BlasError(f"BlasGemmPlan.from_json: expected a dict, not "
                            f"{type(data).__name__}")
        init = {f.name for f in fields(cls) if f.init}
        unknown = sorted(set(data) - init)
        missing = [name for name in ("dtype", "m", "n", "k") if name not in data]
        if unknown or missing:
            raise BlasError(f"BlasGemmPlan.from_json: unknown keys {unknown}, missing keys "
                            f"{missing}")
        return cls(**data)


def gemm(a: np.ndarray | Tensor, b: np.ndarray | Tensor, c: np.ndarray | Tensor, *,
         trans_a: bool = False, trans_b: bool = False, alpha: float = 1.0,
         beta: float = 0.0) -> np.ndarray | Tensor:
    """``c = alpha * op(a) @ op(b) + beta * c`` in place, ``op`` transposing when asked;
    C-contiguous float32 or float64 numpy arrays or CPU Tensors, all of one dtype. With
    ``beta=0`` c's old values (NaN included) are ignored. Returns ``c``.

    Example: ``gemm(x, w, y, trans_b=True)`` is ``y[...] = x @ w.T``.
    """
    a_ptr, a_shape, dtype = _operand(a, "a", "gemm")
    b_ptr, b_shape, b_dtype = _operand(b, "b", "gemm")
    c_ptr, c_shape, c_dtype = _operand(c, "c", "gemm", output=True)
    _check_dtypes("gemm", dtype, b_dtype, c_dtype)
    _, m, n, k, _ = _matmul_shapes("gemm", a_shape, b_shape, c_shape, trans_a, trans_b,
                                   batched=False)
    if m == 0 or n == 0:
        return c
    function = load_openblas().gemm_function(dtype)
    function(_ROW_MAJOR, _TRANS if trans_a else _NO_TRANS, _TRANS if trans_b else _NO_TRANS,
             m, n, k, float(alpha), a_ptr, max(1, m if trans_a else k), b_ptr,
             max(1, k if trans_b else n), float(beta), c_ptr, n)
    return c


def batch_gemm(a: np.ndarray | Tensor, b: np.ndarray | Tensor, c: np.ndarray | Tensor, *,
               trans_a: bool = False, trans_b: bool = False, alpha: float = 1.0,
               beta: float = 0.0) -> np.ndarray | Tensor:
    """:func:`gemm` over a batch: a (batch, m, k), b (batch, k, n) or (1, k, n) — one
    matrix for every batch — and c (batch, m, n), as one cblas call per batch. Returns
    ``c``."""
    a_ptr, a_shape, dtype = _operand(a, "a", "batch_gemm")
    b_ptr, b_shape, b_dtype = _operand(b, "b", "batch_gemm")
    c_ptr, c_shape, c_dtype = _operand(c, "c", "batch_gemm", output=True)
    _check_dtypes("batch_gemm", dtype, b_dtype, c_dtype)
    batch, m, n, k, b_broadcast = _matmul_shapes("batch_gemm", a_shape, b_shape, c_shape,
                                                 trans_a, trans_b, batched=True)
    plan = BlasGemmPlan(dtype=dtype, m=m, n=n, k=k, trans_a=trans_a, trans_b=trans_b,
                        batch=batch, b_broadcast=b_broadcast, alpha=float(alpha),
                        beta=float(beta))
    plan(a_ptr, b_ptr, c_ptr)
    return c

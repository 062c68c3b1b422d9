"""Compiled modules and their callable functions.

A :class:`Module` holds the object code of compiled kernels (linked into the process on
first use) and their signatures. ``mod[name]`` is a :class:`Function`: calling it with
Tensors or numpy arrays checks every argument against the signature (count, dtype, rank,
shape, strides), binds symbolic shape variables from the arrays' shapes, and only then
enters native code. numpy arrays that are not 64-byte aligned or not contiguous are
staged through an aligned copy (copied back afterwards where the kernel writes). A
read-only array is accepted for a buffer the kernel only reads and refused
(``RuntimeReadOnlyError``) for one it writes (``BufferParamSpec.written``).

Files: ``mod.save(path)`` / ``mod.export_library(path)`` writes the object file at
``path`` and a JSON sidecar ``path + ".json"`` (signatures, messages, target);
:func:`load_module` reads both. ``serialize``/``deserialize`` do the same in one blob.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import struct
import threading
import warnings
from typing import Any

import numpy as np

from ..core import dtype as dt
from ..core.diagnostics import (
    BuildError,
    IRCError,
    RuntimeArgumentCountError,
    RuntimeArgumentTypeError,
    RuntimeDeviceError,
    RuntimeDTypeError,
    RuntimeReadOnlyError,
    RuntimeShapeError,
    VMError,
)
from ..core.target import Target
from ..tir.intrin import format_error_message
from .engine import (
    LoadedObject,
    check_externals,
    emit_assembly,
    load_object,
    mark_openmp_used,
    take_error_values,
)
from .fastcall import make_fast_call
from .ndarray import ALIGNMENT, Tensor, aligned_empty, data_pointer, host_array
from .signature import KernelSignature, eval_dim, format_dim, kernel_symbol
from .timer import time_evaluator

FORMAT = "irc-llvm-module/1"
_MAGIC = b"IRCMOD01"


class KernelAssertionError(VMError):
    """A run-time check inside a compiled kernel failed (an ``assert`` of the loop IR)."""


_CTYPES = {
    "bool": ctypes.c_int8, "int8": ctypes.c_int8, "int16": ctypes.c_int16,
    "int32": ctypes.c_int32, "int64": ctypes.c_int64, "uint8": ctypes.c_uint8,
    "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64,
    "float16": ctypes.c_float, "bfloat16": ctypes.c_float, "float32": ctypes.c_float,
    "float64": ctypes.c_double, "handle": ctypes.c_void_p,
}


def _np_dtype(dtype: str) -> np.dtype:
    return dt.to_numpy(dtype)


class _BufferPlan:
    """Precomputed checks of one buffer parameter."""

    __slots__ = ("spec", "np_dtype", "ndim", "static_shape", "binds", "checks", "strides",
                 "alt_dtypes", "written")

    def __init__(self, spec):
        self.spec = spec
        self.np_dtype = _np_dtype(spec.dtype)
        # bfloat16 arrays from ml_dtypes are accepted as their bits.
        self.alt_dtypes = ("bfloat16",) if spec.dtype == "bfloat16" else ()
        self.ndim = len(spec.shape)
        if all(type(d) is int for d in spec.shape):
            self.static_shape = tuple(spec.shape)
        else:
            self.static_shape = None
        self.binds = [(i, d) for i, d in enumerate(spec.shape) if type(d) is str]
        self.checks = [(i, d) for i, d in enumerate(spec.shape) if type(d) is not str]
        self.strides = spec.strides
        self.written = spec.written


class Function:
    """A compiled kernel callable from Python: ``f(*tensors_or_arrays_and_scalars)``.

    ``f.signature`` describes the parameters; ``f.c_function`` is the raw ctypes function
    (ABI in ``irc/codegen/llvm.py``) for callers that pack arguments themselves.
    """

    def __init__(self, module: Module, signature: KernelSignature, address: int):
        self.module = module
        self.signature = signature
        self.name = signature.name
        argtypes = ([ctypes.c_void_p] * len(signature.buffers)
                    + [ctypes.c_int64] * len(signature.shape_vars)
                    + [_CTYPES[s.dtype] for s in signature.scalars])
        self.c_function = ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)(address)
        self.address = address
        self._plans = [_BufferPlan(b) for b in signature.buffers]
        self._shape_var_names = [n for n, _ in signature.shape_vars]
        self._order = signature.order
        self._nargs = len(signature.order)
        self._scalar_casts = [_scalar_cast(s.dtype) for s in signature.scalars]
        dim_names = {d for p in self._plans for d in _dim_names(p.spec)}
        self._dim_scalars = {i for i, sc in enumerate(signature.scalars)
                             if sc.name in dim_names}
        self._fast = make_fast_call(self)
        self._fast_arrays: Any = None

    @property
    def num_args(self) -> int:
        """Number of arguments the kernel takes."""
        return self._nargs

    def __repr__(self) -> str:
        return f"<irc.runtime.Function {self.name}({', '.join(self.signature.param_names())})>"

    # -- argument preparation -----------------------------------------------------------
    def prepare(self, args: tuple) -> tuple[list, list]:
        """Check ``args`` and return (native arguments, staged copies to write back)."""
        if len(args) != self._nargs:
            raise RuntimeArgumentCountError(
                f"{self.name} takes {self._nargs} arguments "
                f"({', '.join(self.signature.param_names())}), got {len(args)}")
        n_buf = len(self._plans)
        ptrs: list[Any] = [0] * n_buf
        scalars: list[Any] = [0] * len(self._scalar_casts)
        env: dict[str, int] = {}
        staged: list = []
        pending: list = []
        for pos, (kind, i) in enumerate(self._order):
            if kind == "scalar":
                scalars[i] = self._scalar_arg(i, args[pos], pos)
                if self._dim_scalars and i in self._dim_scalars:
                    # A scalar parameter that is also a dimension of some buffer.
                    env[self.signature.scalars[i].name] = scalars[i]
        for pos, (kind, i) in enumerate(self._order):
            if kind == "buffer":
                ptrs[i] = self._buffer_arg(self._plans[i], args[pos], env, staged, pos,
                                           pending)
        for plan, shape in pending:
            self._check_exprs(plan, shape, env)
        shape_vals = []
        for name in self._shape_var_names:
            v = env.get(name)
            if v is None:
                raise RuntimeShapeError(f"{self.name}: cannot determine shape variable {name}")
            shape_vals.append(v)
        return ptrs + shape_vals + scalars, staged

    def _buffer_arg(self, plan: _BufferPlan, a: Any, env: dict, staged: list, pos: int,
                    pending: list) -> int:
        spec = plan.spec
        if type(a) is Tensor:
            if a._array is None:
                raise RuntimeDeviceError(
                    f"{self.name}: parameter {spec.name} is a {a.device} tensor, but this "
                    "kernel runs on the CPU; copy it with .copyto(irc.cpu())")
            arr = a._array
            # A Tensor built around foreign memory may be misaligned: stage it below.
            ptr = a.data_ptr if a.data_ptr % ALIGNMENT == 0 else None
            tensor_dtype = a.dtype
        elif isinstance(a, np.ndarray):
            arr = a
            ptr = None
            tensor_dtype = None
        elif hasattr(a, "__dlpack__"):
            # A view of the producer's memory, staged below like a numpy array when it is
            # not aligned, so that what the kernel writes reaches the producer.
            arr = host_array(a, f"{self.name}: parameter {spec.name}")
            ptr = None
            tensor_dtype = None
        else:
            raise RuntimeArgumentTypeError(
                f"{self.name}: parameter {spec.name} (#{pos}) expects a tensor of "
                f"{spec.dtype} {spec.shape_text()}, got {type(a).__name__}")
        if tensor_dtype is not None:
            if tensor_dtype != spec.dtype:
                raise RuntimeDTypeError(
                    f"{self.name}: parameter {spec.name} expects dtype {spec.dtype}, got "
                    f"{tensor_dtype}")
        elif arr.dtype != plan.np_dtype and arr.dtype.name not in plan.alt_dtypes:
            raise RuntimeDTypeError(
                f"{self.name}: parameter {spec.name} expects dtype {spec.dtype}, got "
                f"{arr.dtype}")
        if plan.written and not arr.flags.writeable:
            raise self._read_only_error(spec.name, pos)
        shape = arr.shape
        if plan.static_shape is not None:
            if shape != plan.static_shape:
                self._shape_error(plan, shape)
        else:
            if len(shape) != plan.ndim:
                self._shape_error(plan, shape)
            for i, name in plan.binds:
                got = shape[i]
                have = env.get(name)
                if have is None:
                    env[name] = got
                elif have != got:
                    raise RuntimeShapeError(
                        f"{self.name}: parameter {spec.name} dimension {i} is {got}, but "
                        f"shape variable {name} is already {have} from an earlier argument")
            if plan.checks:
                pending.append((plan, shape))
        if plan.strides is not None:
            self._bind_strides(plan, arr, env)
            if ptr is None:
                ptr = data_pointer(arr)
            if ptr % dt.itemsize(spec.dtype):
                raise RuntimeShapeError(f"{self.name}: parameter {spec.name} is misaligned")
            return ptr
        if ptr is None:
            ptr = data_pointer(arr)
            if ptr % ALIGNMENT or not arr.flags.c_contiguous:
                copy = aligned_empty(shape, arr.dtype)
                np.copyto(copy, arr)
                if plan.written:
                    staged.append((arr, copy))
                ptr = data_pointer(copy)
                staged.append((None, copy))  # keep the copy alive during the call
        return ptr

    def _bind_strides(self, plan: _BufferPlan, arr: np.ndarray, env: dict) -> None:
        item = arr.dtype.itemsize
        for i, (d, s) in enumerate(zip(plan.strides, arr.strides)):
            if s % item:
                raise RuntimeShapeError(f"{self.name}: parameter {plan.spec.name} has a "
                                        f"stride of {s} bytes, not a multiple of its items")
            got = s // item
            if type(d) is str:
                have = env.setdefault(d, got)
                if have != got and arr.shape[i] > 1:
                    raise RuntimeShapeError(
                        f"{self.name}: parameter {plan.spec.name} stride {i} is {got}, but "
                        f"{d} is already {have}")
            else:
                want = eval_dim(d, env)
                if want is not None and want != got and arr.shape[i] > 1:
                    raise RuntimeShapeError(
                        f"{self.name}: parameter {plan.spec.name} expects stride {want} in "
                        f"dimension {i} (elements), got {got}")

    def _check_exprs(self, plan: _BufferPlan, shape: tuple, env: dict) -> None:
        """Check dimensions given as constants or expressions once variables are bound."""
        for i, d in plan.checks:
            want = eval_dim(d, env)
            if want is None:
                raise RuntimeShapeError(
                    f"{self.name}: cannot check dimension {i} of {plan.spec.name} "
                    f"({format_dim(d)}): a shape variable is not bound by any argument")
            if want != shape[i]:
                raise RuntimeShapeError(
                    f"{self.name}: parameter {plan.spec.name} expects shape "
                    f"{plan.spec.shape_text()} ({plan.spec.dtype}); dimension {i} must be "
                    f"{format_dim(d)} = {want}, got {shape[i]} (shape {tuple(shape)})")

    def _read_only_error(self, param: str, pos: int) -> RuntimeReadOnlyError:
        return RuntimeReadOnlyError(
            f"{self.name}: parameter {param} (#{pos}) is not writeable (a read-only array, "
            "such as np.load(..., mmap_mode='r') or one with flags.writeable False), but "
            "the kernel writes it",
            hint="pass a writeable array for it, e.g. np.empty_like(x) or np.array(x); a "
                 "module saved without the record of which buffers its kernels write counts "
                 "every buffer as written (build it again to record them)")

    def _shape_error(self, plan: _BufferPlan, shape: tuple) -> None:
        raise RuntimeShapeError(
            f"{self.name}: parameter {plan.spec.name} expects shape {plan.spec.shape_text()}"
            f" ({plan.spec.dtype}), got {tuple(shape)}")

    def _scalar_arg(self, i: int, a: Any, pos: int):
        spec = self.signature.scalars[i]
        if isinstance(a, (Tensor, np.ndarray)) and spec.dtype != "handle":
            raise RuntimeArgumentTypeError(f"{self.name}: parameter {spec.name} (#{pos}) is "
                                           f"a scalar {spec.dtype}, got an array")
        try:
            return self._scalar_casts[i](a)
        except (TypeError, ValueError, OverflowError) as err:
            raise RuntimeArgumentTypeError(f"{self.name}: parameter {spec.name} expects a "
                                           f"{spec.dtype} scalar, got {a!r} ({err})") from None

    # -- calling ------------------------------------------------------------------------
    def __call__(self, *args: Any) -> None:
        if len(args) != self._nargs:
            return self.call_checked(*args)
        return self._fast(*args)

    @property
    def _vm_call(self):
        """The call the VM makes: numpy arguments it guarantees 64-byte aligned and
        C-contiguous; a dtype or shape mismatch still takes the checked path and raises."""
        if self._fast_arrays is None:
            self._fast_arrays = make_fast_call(self, arrays=True)
        return self._fast_arrays

    def call_checked(self, *args: Any) -> None:
        """Call with the general argument handling (numpy arrays, DLPack producers,
        staging of unaligned or strided arrays) and precise errors."""
        native, staged = self.prepare(args)
        rc = self.c_function(*native)
        if staged:
            for orig, copy in staged:
                if orig is not None:
                    np.copyto(orig, copy)
        if rc:
            raise self.module._error(self.name, rc)

    def _raise(self, rc: int) -> None:
        raise self.module._error(self.name, rc)


def _dim_names(spec) -> set[str]:
    """Names of the shape variables in a buffer parameter's dimensions and strides."""
    out: set[str] = set()

    def walk(d):
        if type(d) is str:
            out.add(d)
        elif type(d) is list:
            walk(d[1])
            walk(d[2])

    for d in spec.shape:
        walk(d)
    for d in spec.strides or ():
        walk(d)
    return out


def _scalar_cast(dtype: str):
    if dtype == "handle":
        def to_ptr(a):
            if isinstance(a, Tensor):
                return a.data_ptr
            if isinstance(a, np.ndarray):
                return a.ctypes.data
            return int(a) if a is not None else None
        return to_ptr
    if dtype == "bool":
        return lambda a: 1 if bool(a) else 0
    if dt.is_float(dtype):
        return float
    lo, hi = dt.min_value(dtype), dt.max_value(dtype)

    def to_int(a):
        if isinstance(a, float) and a != int(a):
            raise ValueError("not an integer")
        v = int(a)
        if not lo <= v <= hi:
            raise OverflowError(f"out of range for {dtype}")
        return v
    return to_int


class FunctionTable:
    """What every compiled module offers (the CPU :class:`Module` and the CUDA
    ``CUDAProgramModule``): ``mod[name]``, ``name in mod``, ``mod(*args)`` for the entry
    function, ``function_names`` and ``time_evaluator``. Subclasses give
    ``get_function``, ``_names`` and ``entry_name``."""

    entry_name: str

    def get_function(self, name: str) -> Any:
        raise NotImplementedError

    def _names(self) -> list[str]:
        raise NotImplementedError

    def __getitem__(self, name: str) -> Any:
        return self.get_function(name)

    def __contains__(self, name: str) -> bool:
        return name in self._names()

    def __call__(self, *args: Any) -> None:
        return self.get_function(self.entry_name)(*args)

    @property
    def function_names(self) -> list[str]:
        """Names of the module's functions."""
        return list(self._names())

    def time_evaluator(self, name: str, dev: Any = None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0, cooldown_interval_ms: float = 0,
                       repeats_to_cooldown: int = 1):
        """A callable timing function ``name``; see :func:`irc.runtime.timer.time_evaluator`
        (CUDA events on a GPU)."""
        return time_evaluator(self.get_function(name), dev, number=number, repeat=repeat,
                              min_repeat_ms=min_repeat_ms,
                              cooldown_interval_ms=cooldown_interval_ms,
                              repeats_to_cooldown=repeats_to_cooldown)


class Module(FunctionTable):
    """Compiled kernels for one target: ``mod[name]`` or ``mod(*args)`` for the entry."""

    def __init__(self, object_code: bytes | list[bytes],
                 signatures: dict[str, KernelSignature],
                 messages: list[str] | dict[int, str], target: str,
                 entry_name: str | None = None, externals: list[str] | None = None,
                 llvm_ir: str = "", kernel_messages: dict[str, Any] | None = None):
        # One object file, or several when the module was compiled in parts (in parallel,
        # see irc.codegen.llvm_compile.compile_sources) or kernel by kernel; they are
        # linked together on load.
        self.objects = ([bytes(object_code)] if isinstance(object_code, (bytes, bytearray))
                        else [bytes(o) for o in object_code])
        self.signatures = dict(signatures)
        # A kernel's nonzero return code -> its message (a list: codes 1, 2, ...), for
        # every kernel; or per kernel, for kernels compiled one by one (each numbering
        # its own from 1), which take precedence.
        self.messages = message_table(messages)
        self.kernel_messages = {str(n): message_table(m)
                                for n, m in (kernel_messages or {}).items()}
        self.target = target
        self.externals = list(externals or [])
        self.llvm_ir = llvm_ir
        names = list(self.signatures)
        if entry_name is None:
            entry_name = "main" if "main" in self.signatures else (names[0] if names else "")
        elif entry_name not in self.signatures:
            raise BuildError(f"entry function {entry_name!r} is not in the module "
                             f"({', '.join(names)})")
        self.entry_name = entry_name
        self._loaded: LoadedObject | None = None
        self._functions: dict[str, Function] = {}
        self._lock = threading.Lock()

    # -- functions ----------------------------------------------------------------------
    def _load(self) -> LoadedObject:
        if self._loaded is None:
            with self._lock:
                if self._loaded is None:
                    if self.externals:
                        check_externals(self.externals)
                        if "GOMP_parallel" in self.externals:
                            mark_openmp_used()
                    self._loaded = load_object(self.objects, tuple(
                        kernel_symbol(n) for n in self.signatures))
        return self._loaded

    def get_function(self, name: str) -> Function:
        """The callable kernel ``name``."""
        fn = self._functions.get(name)
        if fn is not None:
            return fn
        sig = self.signatures.get(name)
        if sig is None:
            raise IRCError(f"module has no function {name!r}; it has "
                           f"{', '.join(self.signatures) or 'none'}")
        fn = Function(self, sig, self._load().address(kernel_symbol(name)))
        self._functions[name] = fn
        return fn

    def _names(self) -> list[str]:
        return list(self.signatures)

    def _error(self, name: str, code: int) -> IRCError:
        own = self.kernel_messages.get(name)
        message = own.get(code) if own is not None else self.messages.get(code)
        values = take_error_values()
        if message is not None:
            return KernelAssertionError(f"{name}: {format_error_message(message, values)}")
        return KernelAssertionError(f"{name}: kernel failed with code {code}")

    def __repr__(self) -> str:
        return f"<irc.runtime.Module {self.target!r}: {', '.join(self.signatures)}>"

    # -- sources and files ----------------------------------------------------------------
    def get_source(self, fmt: str = "ll") -> str:
        """The optimized LLVM IR (``"ll"``), the assembly (``"asm"``/``"s"``) or the
        signatures as JSON (``"json"``)."""
        if fmt in ("ll", "llvm", ""):
            if not self.llvm_ir:
                raise IRCError("this module was loaded without its LLVM IR")
            return self.llvm_ir
        if fmt in ("asm", "s"):
            text = self.get_source("ll")
            # A module compiled in parts has one LLVM module per part, one after the other.
            starts = [m.start() for m in re.finditer(r"^; ModuleID = ", text, re.MULTILINE)]
            if len(starts) <= 1:
                return emit_assembly(text, self.target)
            bounds = [*starts[1:], len(text)]
            return "".join(emit_assembly(text[a:b], self.target)
                           for a, b in zip(starts, bounds))
        if fmt == "json":
            return json.dumps(self._metadata(), indent=1)
        raise IRCError(f"unknown source format {fmt!r}; use 'll', 'asm' or 'json'")

    @property
    def object_code(self) -> bytes:
        """The object code: one object file, or the concatenation of the module's parts
        (their sizes are in the metadata's ``objects``)."""
        return self.objects[0] if len(self.objects) == 1 else b"".join(self.objects)

    def _metadata(self, with_ir: bool = True) -> dict:
        meta = {"format": FORMAT, "target": self.target, "entry": self.entry_name,
                "functions": [s.to_json() for s in self.signatures.values()],
                "messages": _messages_json(self.messages), "externals": self.externals,
                "llvm_ir": self.llvm_ir if with_ir else ""}
        if self.kernel_messages:
            meta["kernel_messages"] = {n: _messages_json(m)
                                       for n, m in self.kernel_messages.items()}
        if len(self.objects) > 1:
            meta["objects"] = [len(o) for o in self.objects]
        return meta

    def save(self, path: str) -> None:
        """Write the object code to ``path`` (an object file; a module compiled in parts
        writes its object files one after the other) and the signatures to
        ``path + ".json"``."""
        try:
            with open(path, "wb") as f:
                f.write(self.object_code)
            with open(path + ".json", "w") as f:
                json.dump(self._metadata(), f)
        except OSError as err:
            raise BuildError(f"cannot write module file {path}: {err.strerror}",
                             hint="check that the directory exists and is writable") from None

    export_library = save

    def serialize(self) -> bytes:
        """The module as one byte string (see :meth:`deserialize`)."""
        return pack_blob(_MAGIC, self._metadata(), self.object_code)

    @staticmethod
    def deserialize(blob: bytes) -> Module:
        """The module written by :meth:`serialize`."""
        meta, obj = unpack_blob(blob, _MAGIC, "irc module")
        return _from_metadata(meta, obj)


def pack_blob(magic: bytes, meta: dict, payload: bytes) -> bytes:
    """A serialized module: ``magic`` (8 bytes), the lengths of the JSON metadata and of
    the binary payload (two little-endian u64), the metadata, the payload."""
    text = json.dumps(meta).encode()
    return magic + struct.pack("<QQ", len(text), len(payload)) + text + payload


def unpack_blob(blob: bytes, magic: bytes, what: str) -> tuple[dict, bytes]:
    """``(metadata, payload)`` of a blob written by :func:`pack_blob`; a wrong magic or a
    truncated blob is a BuildError naming ``what``."""
    if blob[:8] != magic:
        raise BuildError(f"not a serialized {what}")
    n_meta, n_bin = struct.unpack("<QQ", blob[8:24])
    meta = json.loads(blob[24:24 + n_meta])
    payload = bytes(blob[24 + n_meta:24 + n_meta + n_bin])
    if len(payload) != n_bin:
        raise BuildError(f"the serialized {what} is truncated")
    return meta, payload


def message_table(messages: Any) -> dict[int, str]:
    """Kernel return code -> message, from a dict or a list (codes 1, 2, ... in order:
    how a module compiled as one piece numbers them)."""
    if isinstance(messages, dict):
        return {int(code): str(text) for code, text in messages.items()}
    return {i + 1: str(text) for i, text in enumerate(messages)}


def _messages_json(messages: dict[int, str]) -> list[str] | dict[str, str]:
    """The message table for the JSON sidecar: a list when the codes are 1..n (every
    module compiled as one piece), else an object keyed by code."""
    if sorted(messages) == list(range(1, len(messages) + 1)):
        return [messages[code] for code in range(1, len(messages) + 1)]
    return {str(code): text for code, text in messages.items()}


def _from_metadata(meta: dict, obj: bytes) -> Module:
    if meta.get("format") != FORMAT:
        raise BuildError(f"unknown module format {meta.get('format')!r}; expected {FORMAT}")
    sigs = {d["name"]: KernelSignature.from_json(d) for d in meta["functions"]}
    sizes = meta.get("objects")
    if sizes is not None:
        if (not isinstance(sizes, list) or not all(isinstance(n, int) and n > 0 for n in sizes)
                or sum(sizes) != len(obj)):
            raise BuildError(f"the module's object sizes {sizes!r} do not add up to its "
                             f"{len(obj)} bytes of object code (a damaged file)")
        parts, at = [], 0
        for n in sizes:
            parts.append(obj[at:at + n])
            at += n
        obj = parts
    messages = meta.get("messages", [])
    if not isinstance(messages, (list, dict)):
        raise BuildError(f"the module's message table is a {type(messages).__name__}, not a "
                         "list or an object (a damaged file)")
    scoped = meta.get("kernel_messages", {})
    if not isinstance(scoped, dict) or not all(isinstance(m, (list, dict))
                                               for m in scoped.values()):
        raise BuildError("the module's per-kernel message tables are not an object of lists "
                         "or objects (a damaged file)")
    try:
        messages = message_table(messages)
        scoped = {n: message_table(m) for n, m in scoped.items()}
    except ValueError:
        raise BuildError("the module's message table has a code that is not a whole number "
                         "(a damaged file)") from None
    return Module(obj, sigs, messages, meta["target"],
                  entry_name=meta.get("entry") or None, externals=meta.get("externals", []),
                  llvm_ir=meta.get("llvm_ir", ""), kernel_messages=scoped)


def load_module(path: str) -> Module:
    """Load a module written by ``Module.save``/``export_library`` (``path`` and its
    ``.json`` sidecar)."""
    if not os.path.exists(path):
        raise BuildError(f"no module file at {path}")
    side = path + ".json"
    if not os.path.exists(side):
        raise BuildError(f"module file {path} has no sidecar {side}; it was not written by "
                         "irc's Module.save")
    with open(path, "rb") as f:
        obj = f.read()
    with open(side) as f:
        meta = json.load(f)
    mod = _from_metadata(meta, obj)
    host = Target.canon("llvm")
    t = Target.canon(mod.target)
    if t.kind.name == "llvm" and t.mcpu != host.mcpu:
        # Code for another CPU may use instructions this one lacks; say so, then try.
        warnings.warn(f"module {path} was compiled for -mcpu={t.mcpu}, this machine is "
                      f"{host.mcpu}", stacklevel=2)
    return mod

"""External runtime modules: library code an executable carries beside its kernels.

``RunCodegen`` (library dispatch, ``irc.dispatch``) turns each composite function into a
function of an :class:`ExternalModule` (e.g. a BLAS call with its epilogue); the graph
calls it as ``R.call_dps_packed("<symbol>", ...)``. The module travels with the
executable: ``Executable.save`` writes ``kind`` and :meth:`ExternalModule.serialize`,
``Executable.load`` gives them to the loader registered for the kind
(:func:`register_external_loader`), and the VM looks a packed call's name up in the
executable's external modules before the global registry (``irc.runtime.registry``).
"""

from __future__ import annotations

import io
from dataclasses import fields
from typing import Any, Callable, ClassVar

import numpy as np

from ..core.diagnostics import (
    IRCError,
    RuntimeArgumentCountError,
    RuntimeArgumentTypeError,
    RuntimeDeviceError,
    RuntimeReadOnlyError,
    RuntimeShapeError,
)
from .module import pack_blob, unpack_blob
from .ndarray import Tensor, aligned_empty, tensor


class JsonPlan:
    """What library plans (frozen dataclasses of plain values, stored in a module's specs)
    share: their JSON form, read back with unknown fields refused (``error``, naming
    ``label``) and lists as tuples."""

    error: ClassVar[type[IRCError]] = IRCError
    label: ClassVar[str] = "library plan"

    def to_json(self) -> dict[str, Any]:
        """The plan as plain values (:meth:`from_json` reads it back)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Any:
        """The plan :meth:`to_json` wrote."""
        names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        unknown = set(data) - names
        if unknown:
            raise cls.error(f"{cls.label}: unknown fields {sorted(unknown)}")
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


class ExternalModule:
    """Functions provided by a library, by symbol name. Subclasses set ``kind`` (the
    loader's key), implement :meth:`get_function`, :attr:`function_names`,
    :meth:`serialize`, and register a loader for ``kind``."""

    kind = "external"
    # How printed IR refers to the module: ``metadata["runtime.Module"][0]``.
    metadata_kind = "runtime.Module"
    # True when every function only queues work on the thread's current CUDA stream (no
    # waiting for the GPU, no host-side effects, memory it keeps for later calls), so a VM
    # may capture its calls into a CUDA graph (irc.vm.cuda_graph).
    graph_capturable = False

    @property
    def function_names(self) -> list[str]:
        """The symbols this module provides."""
        raise NotImplementedError

    def get_function(self, name: str) -> Callable[..., Any]:
        """The function ``name``: called with the inputs then the output tensors."""
        raise NotImplementedError

    def serialize(self) -> bytes:
        """The module as bytes for :func:`load_external`."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<irc external module {self.kind}: {', '.join(self.function_names)}>"


_LOADERS: dict[str, Callable[[bytes], ExternalModule]] = {}


def register_external_loader(kind: str, loader: Callable[[bytes], ExternalModule]) -> None:
    """Make :func:`load_external` read modules of ``kind`` with ``loader(blob)``."""
    _LOADERS[kind] = loader


def load_external(kind: str, blob: bytes) -> ExternalModule:
    """The module of ``kind`` serialized as ``blob``; an unknown kind is an IRCError."""
    loader = _LOADERS.get(kind)
    if loader is None:
        raise IRCError(f"no loader for external modules of kind {kind!r} (known: "
                       f"{', '.join(sorted(_LOADERS)) or 'none'})",
                       hint="import the package that provides it, or install its extra")
    return loader(blob)


def pack_library(magic: bytes, specs: dict, constants: dict[str, np.ndarray],
                 kernels: bytes | None) -> bytes:
    """A library module's bytes: its function ``specs`` as JSON and, as payload, an
    ``.npz`` archive of its ``constants`` and its compiled ``kernels`` (epilogues)."""
    buf = io.BytesIO()
    arrays = dict(constants)
    if kernels is not None:
        arrays["__kernels__"] = np.frombuffer(kernels, np.uint8)
    np.savez(buf, **arrays)
    return pack_blob(magic, {"specs": specs}, buf.getvalue())


def unpack_library(blob: bytes, magic: bytes, what: str
                   ) -> tuple[dict, dict[str, np.ndarray], bytes | None]:
    """``(specs, constants, kernels)`` of bytes written by :func:`pack_library`."""
    meta, payload = unpack_blob(blob, magic, what)
    with np.load(io.BytesIO(payload), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    kernels = arrays.pop("__kernels__", None)
    return meta["specs"], arrays, None if kernels is None else kernels.tobytes()


class LibraryModule(ExternalModule):
    """An external module of library calls described by ``specs`` (one JSON-able dict per
    function symbol), with ``constants`` (arrays the calls read) and ``epilogues`` (irc's
    compiled kernels around the calls, or None). Subclasses set ``kind``, ``magic`` and
    ``library`` (the name in messages), implement ``_make(name, spec)`` (the callable of a
    function) and ``_load_kernels(blob)``."""

    magic = b""
    library = "library"

    def __init__(self, specs: dict[str, dict], constants: dict[str, np.ndarray],
                 epilogues: Any):
        self.specs = specs
        self.constants = constants
        self.epilogues = epilogues
        self._functions: dict[str, Callable[..., None]] = {}
        # Constants copied to a GPU, by (key, GPU index): see device_operand.
        self._on_device: dict[tuple[str, int], Tensor] = {}

    @property
    def function_names(self) -> list[str]:
        return list(self.specs)

    def get_function(self, name: str) -> Callable[..., None]:
        fn = self._functions.get(name)
        if fn is None:
            spec = self.specs.get(name)
            if spec is None:
                raise IRCError(f"the {self.library} module has no function {name!r}; it has "
                               f"{', '.join(self.specs) or 'none'}")
            fn = self._functions[name] = self._make(name, spec)
        return fn

    def _make(self, name: str, spec: dict) -> Callable[..., None]:
        raise NotImplementedError

    def device_operand(self, role: list | None, args: tuple, device: Any) -> Any:
        """The operand a spec's ``role`` names for a call on a GPU: argument ``i``
        (``["param", i]``), a constant copied to ``device`` once and kept
        (``["const", key]``), or None."""
        if role is None:
            return None
        if role[0] != "const":
            return args[int(role[1])]
        key = (role[1], device.index)
        t = self._on_device.get(key)
        if t is None:
            t = self._on_device[key] = tensor(self.constants[role[1]], device)
        return t

    def _check_call(self, name: str, args: tuple, n_params: int, out_shape: tuple,
                    param_shapes: list[tuple] = ()) -> Any:
        """Check a call of function ``name``: ``n_params`` inputs (of ``param_shapes``
        when given) then an output of ``out_shape``; returns the output."""
        if len(args) != n_params + 1:
            raise RuntimeArgumentCountError(f"{self.library} function {name} takes {n_params} "
                                            f"inputs and an output, got {len(args)} arguments")
        for i, shape in enumerate(param_shapes):
            if tuple(getattr(args[i], "shape", ())) != shape:
                raise RuntimeShapeError(f"{self.library} function {name}: input #{i} has "
                                        f"shape {list(getattr(args[i], 'shape', ()))}, "
                                        f"expected {list(shape)}")
        out = args[-1]
        if tuple(getattr(out, "shape", ())) != out_shape:
            raise RuntimeShapeError(f"{self.library} function {name}: the output has shape "
                                    f"{list(getattr(out, 'shape', ()))}, expected "
                                    f"{list(out_shape)}")
        if (out._read_only if isinstance(out, Tensor) else
                isinstance(out, np.ndarray) and not out.flags.writeable):
            raise RuntimeReadOnlyError(f"{self.library} function {name}: the output (argument "
                                       f"#{len(args) - 1}) is a read-only array",
                                       hint="pass a writeable array for it")
        return out

    @staticmethod
    def _load_kernels(blob: bytes) -> Any:
        raise NotImplementedError

    def serialize(self) -> bytes:
        kernels = self.epilogues.serialize() if self.epilogues is not None else None
        return pack_library(self.magic, self.specs, self.constants, kernels)

    @classmethod
    def deserialize(cls, blob: bytes) -> LibraryModule:
        """The module :meth:`serialize` wrote."""
        specs, constants, kernels = unpack_library(blob, cls.magic, f"irc {cls.library} "
                                                                    "module")
        return cls(specs, constants, cls._load_kernels(kernels) if kernels else None)


def aligned_copy(a: np.ndarray) -> np.ndarray:
    """``a`` copied into a 64-byte aligned C-contiguous array (library operands)."""
    out = aligned_empty(a.shape, a.dtype)
    out[...] = a
    return out


def cpu_pointer(x: Any, library: str, name: str, i: int) -> int:
    """The data pointer of argument ``i`` of the library function ``name``: a CPU tensor
    or a C-contiguous numpy array; anything else is a RuntimeArgumentError."""
    if isinstance(x, Tensor):
        if x.device.device_type != "cpu":
            raise RuntimeDeviceError(f"{library} function {name}: argument #{i} is on "
                                     f"{x.device}; the {library} backend runs on the CPU")
        return x.data_ptr
    if isinstance(x, np.ndarray) and x.flags.c_contiguous:
        return x.ctypes.data
    raise RuntimeArgumentTypeError(f"{library} function {name}: argument #{i} must be a "
                                   f"contiguous CPU tensor, got {type(x).__name__}")

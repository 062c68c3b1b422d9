"""Executable: VM bytecode + constants + the compiled kernel library, savable to one file.

The file is a zip archive: ``bytecode.json`` (functions, target, format version, and
each kernel's floating-point operations per call where known),
``constants.npz`` (tensor constants; those of ml_dtypes' types, which numpy's format
cannot name, as their bytes with the dtype in ``bytecode.json``) with ``constants.json``
(scalar and string constants), ``kernels.bin`` (the serialized kernel library: for the CPU a runtime
Module, object code and signatures; for CUDA a CUDAProgramModule, cubin, source and host
plans), and ``external.json`` with ``external/<i>.bin`` (the library modules of
dispatched subgraphs, :mod:`irc.runtime.external`). ``Executable.load(path)`` reads it
back; no compilation happens on load.
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import numpy as np

from ..core import dtype as dt
from ..core.diagnostics import DAMAGED_FILE_ERRORS, IRCError, VMError
from ..runtime import Module
from ..runtime.cuda_program import MAGIC as CUDA_MAGIC
from ..runtime.cuda_program import CUDAProgramModule
from ..runtime.external import ExternalModule, load_external
from .bytecode import VMFunction
from .random_inputs import random_arguments

FORMAT = "irc-vm-executable/1"
# The dtypes of ml_dtypes, saved as their bytes (numpy's file format has no name for them).
_ML_DTYPES = frozenset(("bfloat16", *dt.FLOAT_FORMATS, *dt.NARROW_INTS))


class Executable:
    """The result of ``irc.compile``: run it with ``irc.vm.VirtualMachine(ex, irc.cpu())``
    (or ``irc.cuda(0)`` when compiled for ``cuda``)."""

    def __init__(self, functions: dict[str, VMFunction], constants: list[Any],
                 lib: Module | CUDAProgramModule,
                 target: str, external: list[ExternalModule] | None = None,
                 kernel_flops: dict[str, float] | None = None):
        self.functions = functions
        self.constants = constants
        self.lib = lib
        self.target = target
        # Library modules made by RunCodegen (irc.dispatch), called by packed calls.
        self.external = list(external or [])
        # Floating-point operations of one call of each kernel (by name) whose count is
        # known: the VM's profile reports their GFLOPS.
        self.kernel_flops = dict(kernel_flops or {})

    def __repr__(self) -> str:
        return (f"<irc.vm.Executable target={self.target!r} functions="
                f"{list(self.functions)} kernels={len(self.lib.function_names)}>")

    def as_text(self) -> str:
        """The bytecode of every function, human readable."""
        return "\n\n".join(f.as_text() for f in self.functions.values())

    def stats(self) -> dict[str, Any]:
        """Counts: functions, instructions, kernels, constants and their bytes."""
        return {
            "functions": len(self.functions),
            "instructions": sum(len(f.code) for f in self.functions.values()),
            "kernels": len(self.lib.function_names),
            "constants": len(self.constants),
            "constant_bytes": int(sum(c.nbytes for c in self.constants
                                      if isinstance(c, np.ndarray))),
        }

    def random_inputs(self, function: str = "main", seed: int = 0,
                      shapes: dict[str, int] | None = None) -> list[np.ndarray]:
        """Seeded random arguments for ``function``: its first ``num_input`` tensors (all
        of them without that attribute) uniform in [0, 1), the rest (weights) uniform in
        +-1/sqrt(fan-in), integers in [0, 8) or, where they index an axis, within its
        extent. A symbolic dimension takes its value from ``shapes`` (name -> int);
        missing or unknown names, and inputs too large for the memory available, are
        errors (:mod:`irc.vm.random_inputs`)."""
        fn = self.functions.get(function)
        if fn is None:
            raise VMError(f"the executable has no function {function!r}; it has "
                          f"{', '.join(self.functions) or 'none'}")
        return random_arguments(fn, seed, shapes)

    # -- files ------------------------------------------------------------------------------
    def save(self, path: str) -> None:
        """Write the executable to ``path`` (see the module docstring for the format)."""
        arrays = {}
        others = {}
        dtypes = {}
        for i, c in enumerate(self.constants):
            if isinstance(c, np.ndarray):
                if c.dtype.name in _ML_DTYPES:
                    dtypes[str(i)] = c.dtype.name
                    c = c.view(f"u{c.dtype.itemsize}")
                arrays[f"c{i}"] = c
            elif isinstance(c, (str, int, float, bool)):
                others[str(i)] = c
            else:
                raise VMError(f"constant #{i} of type {type(c).__name__} cannot be saved")
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        meta = {"format": FORMAT, "target": self.target, "num_constants": len(self.constants),
                "functions": [f.to_json() for f in self.functions.values()],
                "kernel_flops": self.kernel_flops, "constant_dtypes": dtypes}
        try:
            with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
                z.writestr("bytecode.json", json.dumps(meta))
                z.writestr("constants.npz", buf.getvalue())
                z.writestr("constants.json", json.dumps(others))
                z.writestr("kernels.bin", self.lib.serialize())
                z.writestr("external.json", json.dumps([m.kind for m in self.external]))
                for i, m in enumerate(self.external):
                    z.writestr(f"external/{i}.bin", m.serialize())
        except OSError as err:
            raise VMError(f"cannot write executable {path!r}: {err.strerror}",
                          hint="check that the directory exists and is writable") from None

    export_library = save

    @staticmethod
    def load(path: str) -> Executable:
        """Read an executable written by :meth:`save`. A file that cannot be read, is
        empty, truncated or corrupt, is not an irc executable or has another format
        version raises :class:`~irc.VMError` naming the file and the cause."""
        try:
            with open(path, "rb") as f:
                head = f.read(4)
        except OSError as err:
            raise VMError(f"cannot read executable {path!r}: {err.strerror or err}") from None
        if not head:
            raise VMError(f"cannot read executable {path!r}: the file is empty",
                          hint=_RECOMPILE)
        if head != _ZIP_MAGIC:
            raise VMError(f"cannot read executable {path!r}: not an irc executable (an irc "
                          "executable is a zip archive; this file is something else)",
                          hint="pass a file written by irc.vm.Executable.save or "
                               "`irc compile`")
        try:
            with zipfile.ZipFile(path) as z:
                return _read_archive(z, path)
        except VMError:
            raise
        except (*DAMAGED_FILE_ERRORS, IRCError) as err:
            # A damaged archive fails deep inside zipfile, json, numpy or the kernel
            # library's reader; name the file and the cause rather than that stack.
            raise VMError(f"cannot read executable {path!r}: it is truncated or corrupt "
                          f"({_cause(err)})", hint=_RECOMPILE) from None


_ZIP_MAGIC = b"PK\x03\x04"
_RECOMPILE = "compile the model again (irc compile, or irc.compile(...).save(path))"
_MEMBERS = ("bytecode.json", "constants.npz", "constants.json", "kernels.bin")


def _cause(err: BaseException) -> str:
    if isinstance(err, KeyError):
        return f"missing entry {err}"
    if isinstance(err, IRCError):
        return err.message
    text = str(err)
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _read_archive(z: zipfile.ZipFile, path: str) -> Executable:
    names = set(z.namelist())
    missing = [m for m in _MEMBERS if m not in names]
    if missing:
        raise VMError(f"cannot read executable {path!r}: not an irc executable (a zip "
                      f"archive without {', '.join(missing)})",
                      hint="pass a file written by irc.vm.Executable.save or `irc compile`")
    meta = json.loads(z.read("bytecode.json"))
    version = meta.get("format") if isinstance(meta, dict) else None
    if version != FORMAT:
        raise VMError(f"cannot read executable {path!r}: it has format {version!r}; this "
                      f"irc reads {FORMAT}", hint=_RECOMPILE + " with this version of irc")
    with np.load(io.BytesIO(z.read("constants.npz")), allow_pickle=False) as arrays:
        others = json.loads(z.read("constants.json"))
        constants: list[Any] = []
        for i in range(meta["num_constants"]):
            key = f"c{i}"
            constants.append(arrays[key] if key in arrays.files else others[str(i)])
        for i, name in meta.get("constant_dtypes", {}).items():
            constants[int(i)] = constants[int(i)].view(dt.user_numpy(name))
    blob = z.read("kernels.bin")
    lib = CUDAProgramModule.deserialize(blob) if blob[:8] == CUDA_MAGIC \
        else Module.deserialize(blob)
    functions = {d["name"]: VMFunction.from_json(d) for d in meta["functions"]}
    kinds = json.loads(z.read("external.json")) if "external.json" in names else []
    external = [load_external(kind, z.read(f"external/{i}.bin")) for i, kind in enumerate(kinds)]
    flops = meta.get("kernel_flops")
    return Executable(functions, constants, lib, meta["target"], external,
                      flops if isinstance(flops, dict) else None)


def load_executable(path: str) -> Executable:
    """Shorthand for :meth:`Executable.load`."""
    return Executable.load(path)

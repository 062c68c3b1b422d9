"""Executable: VM bytecode + constants + the compiled kernel library, savable to one file.

The file is a zip archive: ``bytecode.json`` (functions, target, format version),
``constants.npz`` (tensor constants) with ``constants.json`` (scalar and string
constants), and ``kernels.bin`` (the serialized runtime Module: object code and
signatures). ``Executable.load(path)`` reads it back; no compilation happens on load.
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import numpy as np

from ..core.diagnostics import VMError
from ..runtime import Module
from .bytecode import VMFunction

FORMAT = "irc-vm-executable/1"


class Executable:
    """The result of ``irc.compile``: run it with ``irc.vm.VirtualMachine(ex, irc.cpu())``."""

    def __init__(self, functions: dict[str, VMFunction], constants: list[Any], lib: Module,
                 target: str):
        self.functions = functions
        self.constants = constants
        self.lib = lib
        self.target = target

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

    # -- files ------------------------------------------------------------------------------
    def save(self, path: str) -> None:
        """Write the executable to ``path`` (see the module docstring for the format)."""
        arrays = {}
        others = {}
        for i, c in enumerate(self.constants):
            if isinstance(c, np.ndarray):
                arrays[f"c{i}"] = c
            elif isinstance(c, (str, int, float, bool)):
                others[str(i)] = c
            else:
                raise VMError(f"constant #{i} of type {type(c).__name__} cannot be saved")
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        meta = {"format": FORMAT, "target": self.target, "num_constants": len(self.constants),
                "functions": [f.to_json() for f in self.functions.values()]}
        try:
            with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
                z.writestr("bytecode.json", json.dumps(meta))
                z.writestr("constants.npz", buf.getvalue())
                z.writestr("constants.json", json.dumps(others))
                z.writestr("kernels.bin", self.lib.serialize())
        except OSError as err:
            raise VMError(f"cannot write executable {path!r}: {err.strerror}",
                          hint="check that the directory exists and is writable") from None

    export_library = save

    @staticmethod
    def load(path: str) -> Executable:
        """Read an executable written by :meth:`save`."""
        try:
            z = zipfile.ZipFile(path)
        except (OSError, zipfile.BadZipFile) as err:
            raise VMError(f"cannot read executable {path!r}: {err}") from None
        with z:
            try:
                meta = json.loads(z.read("bytecode.json"))
                arrays = np.load(io.BytesIO(z.read("constants.npz")))
                others = json.loads(z.read("constants.json"))
                lib = Module.deserialize(z.read("kernels.bin"))
            except KeyError as err:
                raise VMError(f"{path!r} is not an irc executable (missing {err})") from None
            if meta.get("format") != FORMAT:
                raise VMError(f"{path!r} has format {meta.get('format')!r}; this irc reads "
                              f"{FORMAT}")
            constants: list[Any] = []
            for i in range(meta["num_constants"]):
                key = f"c{i}"
                constants.append(arrays[key] if key in arrays.files else others[str(i)])
        functions = {d["name"]: VMFunction.from_json(d) for d in meta["functions"]}
        return Executable(functions, constants, lib, meta["target"])


def load_executable(path: str) -> Executable:
    """Shorthand for :meth:`Executable.load`."""
    return Executable.load(path)

"""Loading what the ``irc`` command is given: a model in irc's text format (``.ir``), an
ONNX model (``.onnx``), a Python-defined module (``module:attribute`` or
``file.py:attribute``), or a compiled executable (``.ircx``); and the inputs of a run
(``.npy`` / ``.npz`` files)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import time
from typing import Any, Sequence

import numpy as np

from ..core.diagnostics import DAMAGED_FILE_ERRORS, IRCError
from ..core.module import IRModule


def read_text(path: str) -> str:
    """The UTF-8 text of ``path``; a missing file or other bytes are irc errors."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise IRCError(f"cannot read {path}: {err.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        raise IRCError(f"{path} is not UTF-8 text: byte 0x{data[err.start]:02x} at line "
                       f"{line} (offset {err.start})",
                       hint="irc's text format is UTF-8; was a binary file given?") from None


def is_executable(path: str) -> bool:
    """True for a compiled executable file (``.ircx``)."""
    return path.endswith(".ircx")


def load_model(spec: str) -> IRModule:
    """The IRModule named by ``spec`` (see the module docstring)."""
    if spec.endswith(".ir"):
        from ..script_parser import parse

        mod = parse(read_text(spec), source_name=spec)
        return mod if isinstance(mod, IRModule) else IRModule(functions={"main": mod})
    if spec.endswith(".onnx"):
        if not os.path.isfile(spec):
            raise IRCError(f"no ONNX model at {spec}")
        from ..frontend.onnx import from_onnx

        return from_onnx(spec)
    if is_executable(spec):
        raise IRCError(f"{spec} is a compiled executable; this command needs a model "
                       "(.ir, .onnx or module:attribute)")
    if ":" in spec:
        return _python_model(spec)
    if not os.path.exists(spec):
        raise IRCError(f"no such file: {spec}")
    raise IRCError(f"cannot tell what kind of model {spec} is",
                   hint="give a .ir file, a .onnx file, a compiled .ircx executable, or a "
                        "Python module and attribute as module:attribute")


def _python_model(spec: str) -> IRModule:
    """``module:attribute`` / ``path/file.py:attribute``: an IRModule, or a function of no
    arguments returning one (or an ``irc.frontend.nn`` export's ``(mod, params)``)."""
    where, _, attr = spec.rpartition(":")
    if not where or not attr:
        raise IRCError(f"a Python model is named module:attribute, got {spec!r}")
    try:
        if where.endswith(".py"):
            if not os.path.isfile(where):
                raise IRCError(f"no such file: {where}")
            name = "_irc_model_" + os.path.splitext(os.path.basename(where))[0]
            loader = importlib.util.spec_from_file_location(name, where)
            module = importlib.util.module_from_spec(loader)
            sys.modules[name] = module
            loader.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except IRCError:
        raise
    except ImportError as err:
        raise IRCError(f"cannot import {where}: {err}") from None
    except Exception as err:  # noqa: BLE001 - the user's module failed; say where
        raise IRCError(f"importing {where} failed: {type(err).__name__}: {err}") from None
    value = getattr(module, attr, None)
    if value is None:
        raise IRCError(f"{where} has no attribute {attr!r}")
    if callable(value) and not isinstance(value, IRModule):
        try:
            value = value()
        except IRCError:
            raise
        except Exception as err:  # noqa: BLE001 - the user's function failed
            raise IRCError(f"{spec}() failed: {type(err).__name__}: {err}") from None
    if isinstance(value, tuple) and value and isinstance(value[0], IRModule):
        value = value[0]
    if not isinstance(value, IRModule):
        raise IRCError(f"{spec} is a {type(value).__name__}, not an IRModule (or a function "
                       "returning one)")
    return value


def load_executable(spec: str, target: str, pipeline: str, records: str | None = None,
                    check_bounds: bool = False) -> tuple[Any, float]:
    """``(executable, compile seconds)``: a ``.ircx`` file loaded, or the model compiled
    (with the best schedules of the tuning records ``records``, when given; with
    run-time index checks when ``check_bounds``)."""
    from .. import vm

    if is_executable(spec):
        if records or check_bounds:
            raise IRCError(f"--{'records' if records else 'check-bounds'} applies when "
                           f"compiling a model, not to a compiled executable ({spec})")
        return vm.Executable.load(spec), 0.0
    mod = load_model(spec)
    start = time.perf_counter()
    if records:
        from ..tune import ms

        if not os.path.exists(records):
            raise IRCError(f"no tuning records at {records}")
        if pipeline != "default":
            raise IRCError("--records builds with the default pipeline; leave --pipeline out")
        if check_bounds:
            raise IRCError("--check-bounds and --records: check the default build first")
        ex = ms.compile_relax(records, mod, target)
    else:
        ex = vm.compile(mod, target, pipeline=pipeline, check_bounds=check_bounds)
    return ex, time.perf_counter() - start


def parse_bindings(items: Sequence[str], what: str = "--shape") -> dict[str, int]:
    """``NAME=INT`` items as a dict."""
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        if not name or not value.lstrip("-").isdigit():
            raise IRCError(f"{what} expects NAME=INT, got {item!r}")
        out[name] = int(value)
    return out


def read_inputs(items: Sequence[str], params: Sequence[str]) -> dict[str, np.ndarray]:
    """Arrays by parameter name from ``--input`` items: ``NAME=file.npy``, ``NAME=file.npz``
    (its only array, or the one called NAME), or ``file.npz`` (arrays by name)."""
    out: dict[str, np.ndarray] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep:
            name, path = "", item
        arrays = _read_arrays(path)
        if name:
            if len(arrays) == 1:
                out[name] = next(iter(arrays.values()))
            elif name in arrays:
                out[name] = arrays[name]
            else:
                raise IRCError(f"{path} holds {', '.join(arrays)}; none is called {name!r}")
        else:
            if not path.endswith(".npz"):
                raise IRCError(f"--input {item}: name the parameter (NAME={item}); only an "
                               ".npz file gives arrays by name")
            out.update(arrays)
    unknown = [n for n in out if n not in params]
    if unknown:
        raise IRCError(f"--input names {', '.join(unknown)}, which the function does not "
                       f"take; its parameters are {', '.join(params) or 'none'}")
    return out


def _read_arrays(path: str) -> dict[str, np.ndarray]:
    if not os.path.isfile(path):
        raise IRCError(f"no input file {path}")
    try:
        if path.endswith(".npz"):
            with np.load(path, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        return {"": np.load(path, allow_pickle=False)}
    except DAMAGED_FILE_ERRORS as err:
        raise IRCError(f"cannot read {path} as a numpy file (.npy/.npz): {err}") from None

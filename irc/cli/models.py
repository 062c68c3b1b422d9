"""Loading what the ``irc`` command is given: a model in irc's text format (``.ir``), an
ONNX model (``.onnx``), a Python-defined module (``module:attribute`` or
``file.py:attribute``), or a compiled executable (``.ircx``); and the inputs of a run
(``.npy`` / ``.npz`` files)."""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import os
import sys
import time
from typing import Any, Sequence

import numpy as np

from .. import vm
from ..core.diagnostics import DAMAGED_FILE_ERRORS, IRCError
from ..core.module import IRModule
from ..ir.expr import Function
from ..script_parser import parse


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
    if not spec.strip():
        raise IRCError("no model given (an empty name)",
                       hint="give a .ir file, a .onnx file, or a Python module and "
                            "attribute as module:attribute")
    if spec.endswith(".ir"):
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
            # As ``python file.py`` does: the file's directory is on the path.
            _on_path(os.path.dirname(os.path.abspath(where)))
            name = "_irc_model_" + os.path.splitext(os.path.basename(where))[0]
            loader = importlib.util.spec_from_file_location(name, where)
            module = importlib.util.module_from_spec(loader)
            sys.modules[name] = module
            loader.loader.exec_module(module)
        else:
            _on_path(os.getcwd())  # as ``python -m``: modules of the current directory
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


def _on_path(directory: str) -> None:
    if directory not in sys.path and os.path.abspath(directory) not in \
            (os.path.abspath(p or os.curdir) for p in sys.path):
        sys.path.insert(0, directory)


def graph_functions(mod: IRModule) -> list[str]:
    """The names of the graph functions of ``mod`` a user may run (not the fused or
    offloaded pieces the compiler makes)."""
    return [gv.name_hint for gv, f in mod.functions.items()
            if isinstance(f, Function) and not f.attrs.get("Primitive")
            and not f.attrs.get("Codegen")]


def choose_function(names: Sequence[str], requested: str | None, where: str) -> str:
    """The function to run: ``requested`` (``--function``) when given, else ``main``,
    else the only graph function there is."""
    if requested is not None:
        if requested not in names:
            close = difflib.get_close_matches(requested, names)
            raise IRCError(f"{where} has no function {requested!r}; it has "
                           f"{', '.join(names) or 'none'}"
                           + (f" (did you mean {close[0]!r}?)" if close else ""))
        return requested
    if "main" in names:
        return "main"
    if len(names) == 1:
        return names[0]
    if not names:
        raise IRCError(f"{where} has no graph function to run (only loop functions)",
                       hint="a module of loop functions is built with irc.build, or tuned "
                            "with irc tune")
    raise IRCError(f"{where} has no function 'main' but several others: "
                   f"{', '.join(names)}", hint="choose one with --function NAME")


def load_executable_file(spec: str) -> Any:
    """The compiled executable in the ``.ircx`` file ``spec``."""
    if not os.path.isfile(spec):
        raise IRCError(f"no compiled executable at {spec}" if not os.path.exists(spec)
                       else f"{spec} is not a file")
    return vm.Executable.load(spec)


def compile_model(mod: IRModule, target: Any, pipeline: str, records: str | None,
                  check_bounds: bool) -> tuple[Any, float]:
    """``(executable, compile seconds)`` of ``mod``, with the best schedules of the
    tuning records ``records`` when given."""
    start = time.perf_counter()
    if records:
        from ..tune import ms

        ex = ms.compile_relax(records, mod, target)
    else:
        ex = vm.compile(mod, target, pipeline=pipeline, check_bounds=check_bounds)
    return ex, time.perf_counter() - start


def check_records(records: str | None, pipeline: str | None, check_bounds: bool) -> None:
    """Refuse ``--records`` that cannot be read or that conflict with the other build
    options (before anything is compiled)."""
    if not records:
        return
    from ..tune.database.reader import open_for_reading

    if pipeline not in (None, "default"):
        raise IRCError("--records builds with the default pipeline; leave --pipeline out")
    if check_bounds:
        raise IRCError("--check-bounds and --records: check the default build first")
    with open_for_reading(records):
        pass


def read_inputs(items: Sequence[str]) -> dict[str, np.ndarray]:
    """Arrays by parameter name from ``--input`` items: ``NAME=file.npy``, ``NAME=file.npz``
    (its only array, or the one called NAME), or ``file.npz`` (arrays by name). A name
    given twice is an error naming both places."""
    out: dict[str, np.ndarray] = {}
    source: dict[str, str] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep:
            name, path = "", item
        if sep and not name:
            raise IRCError(f"--input {item!r}: give NAME=FILE (the parameter's name before "
                           "the =), or an .npz file of arrays named after the parameters")
        if not path.endswith(".npz") and not name:
            raise IRCError(f"--input {item}: name the parameter (NAME={item}); only an "
                           ".npz file gives arrays by name")
        arrays = _read_arrays(path)
        if name:
            if len(arrays) == 1:
                found = {name: next(iter(arrays.values()))}
            elif name in arrays:
                found = {name: arrays[name]}
            else:
                raise IRCError(f"{path} holds {', '.join(arrays) or 'no arrays'}; none is "
                               f"called {name!r}")
        else:
            found = arrays
        for key, value in found.items():
            if key in out:
                raise IRCError(f"--input gives {key} twice ({source[key]} and {path}); give "
                               "each input once")
            out[key] = value
            source[key] = path
    return out


def check_input_names(given: dict[str, Any], params: Sequence[str], function: str) -> None:
    """Every input names a parameter of ``function``."""
    unknown = [n for n in given if n not in params]
    if unknown:
        raise IRCError(f"--input names {', '.join(unknown)}, which {function} does not "
                       f"take; its parameters are {', '.join(params) or 'none'}")


def _read_arrays(path: str) -> dict[str, np.ndarray]:
    if not os.path.isfile(path):
        raise IRCError(f"no input file {path}" if not os.path.exists(path) else
                       f"--input {path} is not a file")
    try:
        if path.endswith(".npz"):
            with np.load(path, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        return {"": np.load(path, allow_pickle=False)}
    except DAMAGED_FILE_ERRORS as err:
        raise IRCError(f"cannot read {path} as a numpy file (.npy/.npz): {err}") from None

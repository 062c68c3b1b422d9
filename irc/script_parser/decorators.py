"""``@I.ir_module``, ``@R.function`` and ``@T.prim_func`` for IR written in Python source.

The decorated object is never executed: its source (``inspect.getsource``) is parsed with
the same grammar as ``irc.parse``. Line numbers in errors are those of the Python file.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from ..core.diagnostics import IRParseError
from . import parse


def _source_of(obj: Any, decorator: str) -> tuple[str, str]:
    """The text of ``obj`` placed at its own line numbers in its file, with its decorator
    lines replaced by the canonical ``decorator`` line."""
    try:
        lines, start = inspect.getsourcelines(obj)
        filename = inspect.getsourcefile(obj) or "<unknown>"
    except (OSError, TypeError) as e:
        raise IRParseError(f"cannot read the source of {getattr(obj, '__name__', obj)!r} "
                           f"({e}); write the script as text and call irc.parse(text)") from None
    head = next((i for i, line in enumerate(lines)
                 if line.lstrip().startswith(("def ", "class "))), None)
    if head is None:
        raise IRParseError(f"{getattr(obj, '__name__', obj)!r} is not a class or function "
                           "definition")
    indent = lines[head][:len(lines[head]) - len(lines[head].lstrip())]
    body = ["\n"] * head + lines[head:]
    if head > 0:
        body[head - 1] = f"{indent}{decorator}\n"
        prefix = ["\n"] * (start - 1)
    else:
        # No decorator line to reuse: the canonical one takes the line above the
        # definition (one line earlier than the file when the definition is on line 1).
        body = [f"{indent}{decorator}\n"] + body
        prefix = ["\n"] * max(start - 2, 0)
    return "".join(prefix + body), filename


def _options(kwargs: dict[str, Any], allowed: tuple[str, ...], name: str) -> str:
    for k, v in kwargs.items():
        if k not in allowed:
            raise IRParseError(f"@{name} has no option '{k}' (options: {', '.join(allowed)})")
        if not isinstance(v, bool):
            raise IRParseError(f"@{name}: option '{k}' must be True or False")
    if not kwargs:
        return f"@{name}"
    return f"@{name}(" + ", ".join(f"{k}={v}" for k, v in kwargs.items()) + ")"


def _in_class_body(depth: int) -> bool:
    """True when the caller ``depth`` frames up is executing a class body (a method of an
    ``@I.ir_module`` class being defined): the module decorator parses it later."""
    frame = inspect.currentframe()
    try:
        for _ in range(depth + 1):
            if frame is None:
                return False
            frame = frame.f_back
        return frame is not None and "__module__" in frame.f_locals and \
            "__qualname__" in frame.f_locals
    finally:
        del frame


def _decorator(name: str, allowed: tuple[str, ...]) -> Callable[..., Any]:
    def deco(obj: Any = None, **kwargs: Any) -> Any:
        def apply(target: Any, depth: int) -> Any:
            options = _options(kwargs, allowed, name)
            if name != "I.ir_module" and _in_class_body(depth + 1):
                return target
            text, filename = _source_of(target, options)
            return parse(text, source_name=filename)

        if obj is None:
            return lambda target: apply(target, 1)
        return apply(obj, 1)


    deco.__name__ = name.split(".")[-1]
    deco.__doc__ = (f"``@{name}`` / ``@{name}(...)``: parse the decorated definition's source "
                    "as irc script (the body is not executed).")
    return deco


class _Inert:
    """What any other ``T.x``/``R.x`` evaluates to in Python: Python evaluates parameter
    annotations (``A: T.Buffer((16,), "float32")``) when it defines a function, and they
    must not fail; their meaning comes from the parsed text."""

    def __getattr__(self, name: str) -> _Inert:
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> _Inert:
        return self

    def __getitem__(self, item: Any) -> _Inert:
        return self

    def __repr__(self) -> str:
        return "<irc.script annotation>"


_INERT = _Inert()


class ScriptNamespace:
    """One of ``I``, ``R``, ``T``: holds the decorator of its dialect; other attributes
    are inert placeholders for annotations."""

    def __init__(self, prefix: str, decorators: dict[str, Callable[..., Any]]):
        self._prefix = prefix
        for k, v in decorators.items():
            setattr(self, k, v)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _INERT

    def __repr__(self) -> str:
        return f"<irc.script namespace {self._prefix}>"


I = ScriptNamespace("I", {"ir_module": _decorator("I.ir_module",  # noqa: E741 - TVM's name
                                                   ("s_tir", "check_well_formed"))})
R = ScriptNamespace("R", {"function": _decorator("R.function",
                                                 ("private", "pure", "check_well_formed"))})
T = ScriptNamespace("T", {"prim_func": _decorator("T.prim_func",
                                                  ("private", "s_tir", "check_well_formed"))})

__all__ = ["I", "R", "T", "ScriptNamespace"]

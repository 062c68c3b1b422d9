"""The global registry of runtime functions callable by name from compiled graphs.

``R.call_dps_packed("name", ...)`` / ``R.call_pure_packed("name", ...)`` in graph IR call
the function registered under ``name``. Library backends (CPU BLAS, cuBLAS) and the VM's
builtins (``irc.vm.builtins``, imported with ``irc.vm``) register themselves here when
they are imported.

    @irc.runtime.register_func("my.add_one")
    def add_one(x, out):
        np.add(x, 1, out=out)
"""

from __future__ import annotations

import difflib
from typing import Any, Callable

from ..core.diagnostics import IRCError

_FUNCS: dict[str, Callable[..., Any]] = {}


def register_func(name: str, func: Callable[..., Any] | None = None, override: bool = False):
    """Register ``func`` under ``name`` (usable as a decorator)."""

    def deco(f: Callable[..., Any]) -> Callable[..., Any]:
        if name in _FUNCS and not override and _FUNCS[name] is not f:
            raise IRCError(f"runtime function {name!r} is already registered; pass "
                           "override=True to replace it")
        _FUNCS[name] = f
        return f

    return deco(func) if func is not None else deco


def get_global_func(name: str, allow_missing: bool = False) -> Callable[..., Any] | None:
    """The function registered under ``name`` (None if missing and ``allow_missing``)."""
    f = _FUNCS.get(name)
    if f is None and not allow_missing:
        close = difflib.get_close_matches(name, list(_FUNCS), n=3)
        hint = f"; similar names: {', '.join(close)}" if close else ""
        raise IRCError(f"no runtime function named {name!r} is registered{hint}")
    return f


def list_global_funcs() -> list[str]:
    """The names of every registered runtime function, sorted."""
    return sorted(_FUNCS)

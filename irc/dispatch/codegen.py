"""Backend code generators for dispatched subgraphs: ``RunCodegen`` hands each backend
(``blas``, ...) its composite functions and gets back an
:class:`~irc.runtime.external.ExternalModule` providing them by symbol name.

    @register_codegen("mylib")
    def mylib_codegen(funcs: list[tuple[str, Function]]) -> ExternalModule: ...
"""

from __future__ import annotations

import difflib
from typing import Callable

from ..core.diagnostics import IRCError
from ..ir.expr import Function
from ..runtime.external import ExternalModule

Codegen = Callable[[list[tuple[str, Function]]], ExternalModule]
_CODEGENS: dict[str, Codegen] = {}


def register_codegen(backend: str, fn: Codegen | None = None):
    """Register ``fn`` as the code generator of ``backend`` (usable as a decorator)."""

    def deco(f: Codegen) -> Codegen:
        _CODEGENS[backend] = f
        return f

    return deco(fn) if fn is not None else deco


def get_codegen(backend: str) -> Codegen:
    """The code generator of ``backend``; an IRCError naming the known ones if none."""
    fn = _CODEGENS.get(backend)
    if fn is None:
        close = difflib.get_close_matches(backend, list(_CODEGENS), n=3)
        raise IRCError(f"no code generator for the dispatch backend {backend!r} (known: "
                       f"{', '.join(sorted(_CODEGENS)) or 'none'})"
                       + (f"; did you mean {', '.join(close)}?" if close else ""))
    return fn

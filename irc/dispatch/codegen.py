"""Backend code generators for dispatched subgraphs: ``RunCodegen`` hands each backend
(``blas``, ...) its composite functions and gets back an
:class:`~irc.runtime.external.ExternalModule` providing them by symbol name.

    @register_codegen("mylib", device_type="cpu")
    def mylib_codegen(funcs: list[tuple[str, Function]]) -> ExternalModule: ...

A backend registered with the ``device_type`` its library runs on (``"cpu"`` for
``blas`` and ``dnnl``, ``"cuda"`` for ``cublas``) is refused for a target of another
device (:func:`check_backend_target`) when the module is compiled, not when it runs.
"""

from __future__ import annotations

import difflib
from typing import Callable

from ..core.diagnostics import BuildError, IRCError
from ..core.target import Target
from ..ir.expr import Function
from ..runtime.external import ExternalModule

Codegen = Callable[[list[tuple[str, Function]]], ExternalModule]
_CODEGENS: dict[str, Codegen] = {}
_DEVICE_TYPES: dict[str, str] = {}
# Where a device type's libraries run, and the target kind that compiles for it.
_DEVICES = {"cpu": ("the CPU", "llvm"), "cuda": ("NVIDIA GPUs", "cuda")}


def register_codegen(backend: str, fn: Codegen | None = None, *,
                     device_type: str | None = None):
    """Register ``fn`` as the code generator of ``backend`` (usable as a decorator);
    ``device_type`` (``"cpu"``/``"cuda"``) is where the backend's library runs, None for
    any."""

    def deco(f: Codegen) -> Codegen:
        _CODEGENS[backend] = f
        if device_type is not None:
            _DEVICE_TYPES[backend] = device_type
        return f

    return deco(fn) if fn is not None else deco


def check_backend_target(backend: str, target: Target | str, where: str) -> None:
    """A BuildError naming ``where`` when ``backend``'s library runs on another device
    than ``target``'s (cuBLAS for an llvm target, BLAS or oneDNN for cuda)."""
    want = _DEVICE_TYPES.get(backend)
    t = Target.canon(target)
    have = t.kind.device_type
    if want is None or want == have:
        return
    same = sorted(b for b, d in _DEVICE_TYPES.items() if d == have)
    device, kind = _DEVICES.get(want, (want, want))
    raise BuildError(f"{where}: the dispatch backend {backend!r} runs on {device} ("
                     f"{kind} targets), but the target is {t}",
                     hint=(f"for {t.kind.name} dispatch to {' or '.join(map(repr, same))}"
                           if same else f"no dispatch backend runs on {t.kind.name}")
                     + f", or compile for target {kind!r}")


def get_codegen(backend: str) -> Codegen:
    """The code generator of ``backend``; an IRCError naming the known ones if none."""
    fn = _CODEGENS.get(backend)
    if fn is None:
        close = difflib.get_close_matches(backend, list(_CODEGENS), n=3)
        raise IRCError(f"no code generator for the dispatch backend {backend!r} (known: "
                       f"{', '.join(sorted(_CODEGENS)) or 'none'})"
                       + (f"; did you mean {', '.join(close)}?" if close else ""))
    return fn

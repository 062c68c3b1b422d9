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

from typing import Any, Callable

from ..core.diagnostics import IRCError


class ExternalModule:
    """Functions provided by a library, by symbol name. Subclasses set ``kind`` (the
    loader's key), implement :meth:`get_function`, :attr:`function_names`,
    :meth:`serialize`, and register a loader for ``kind``."""

    kind = "external"
    # How printed IR refers to the module: ``metadata["runtime.Module"][0]``.
    metadata_kind = "runtime.Module"

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

"""IRModule: the unit every pass takes and returns.

It maps global names to functions of both levels (graph ``Function`` and loop
``PrimFunc``) and carries module attributes. Modules are immutable: ``with_function``,
``without_function`` and ``with_attrs`` return new modules.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from .diagnostics import IRCError
from .node import Node, node


@node
class IRModule(Node):
    """A collection of named functions. ``mod["main"]`` returns a function;
    ``mod.get_global_var("main")`` its ``GlobalVar``."""

    functions: dict[Any, Any] = None  # type: ignore[assignment]  # GlobalVar -> function
    attrs: dict[str, Any] = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        from .expr import GlobalVar

        funcs = self.functions or {}
        norm: dict[Any, Any] = {}
        names = set()
        for key, fn in funcs.items():
            gv = GlobalVar(name_hint=key) if isinstance(key, str) else key
            if not isinstance(gv, GlobalVar):
                raise IRCError(f"IRModule keys must be names or GlobalVars, got {key!r}")
            if gv.name_hint in names:
                raise IRCError(f"IRModule has two functions named {gv.name_hint!r}")
            names.add(gv.name_hint)
            norm[gv] = fn
        object.__setattr__(self, "functions", norm)
        if self.attrs is None:
            object.__setattr__(self, "attrs", {})

    # -- lookup -------------------------------------------------------------------
    def get_global_var(self, name: str):
        for gv in self.functions:
            if gv.name_hint == name:
                return gv
        raise IRCError(f"IRModule has no function named {name!r}; it has "
                       f"{', '.join(sorted(self.names())) or 'no functions'}")

    def __getitem__(self, key: Any) -> Any:
        from .expr import GlobalVar

        if isinstance(key, GlobalVar):
            if key in self.functions:
                return self.functions[key]
            key = key.name_hint
        return self.functions[self.get_global_var(key)]

    def __contains__(self, key: Any) -> bool:
        name = key if isinstance(key, str) else getattr(key, "name_hint", None)
        return any(gv.name_hint == name for gv in self.functions)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.functions)

    def __len__(self) -> int:
        return len(self.functions)

    def names(self) -> list[str]:
        return [gv.name_hint for gv in self.functions]

    def items(self):
        return self.functions.items()

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default

    # -- functional updates -------------------------------------------------------
    def with_function(self, name_or_gv: Any, func: Any) -> IRModule:
        """A module with ``func`` added or replaced under ``name_or_gv``."""
        from .expr import GlobalVar

        name = name_or_gv if isinstance(name_or_gv, str) else name_or_gv.name_hint
        funcs = dict(self.functions)
        existing = next((gv for gv in funcs if gv.name_hint == name), None)
        if existing is not None:
            funcs[existing] = func
        else:
            gv = name_or_gv if isinstance(name_or_gv, GlobalVar) else GlobalVar(name_hint=name)
            funcs[gv] = func
        return IRModule(functions=funcs, attrs=self.attrs)

    def with_functions(self, updates: Mapping[Any, Any]) -> IRModule:
        mod = self
        for k, v in updates.items():
            mod = mod.with_function(k, v)
        return mod

    def without_function(self, name: str) -> IRModule:
        gv = self.get_global_var(name)
        return IRModule(functions={k: v for k, v in self.functions.items() if k is not gv},
                        attrs=self.attrs)

    def with_attrs(self, **attrs: Any) -> IRModule:
        return IRModule(functions=self.functions, attrs={**self.attrs, **attrs})

    def unique_name(self, base: str) -> str:
        """``base`` if no function has that name, else ``base1``, ``base2``, ..."""
        taken = set(self.names())
        if base not in taken:
            return base
        i = 1
        while f"{base}{i}" in taken:
            i += 1
        return f"{base}{i}"

    # -- text -----------------------------------------------------------------------
    @staticmethod
    def from_script(text: str, source_name: str = "<string>") -> IRModule:
        """Parse irc script text (``@I.ir_module class ...``)."""
        from ..script_parser import parse

        return parse(text, source_name=source_name)

"""IRModule: the unit every pass takes and returns.

It maps global names to functions of both levels (graph ``Function`` and loop
``PrimFunc``) and carries module attributes. Modules are immutable: ``with_function``,
``without_function`` and ``with_attrs`` return new modules.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping

from .diagnostics import IRCError
from .expr import GlobalVar
from .node import Node, node


def unique_name(base: str, taken: set[str] | frozenset[str], sep: str = "",
                start: int = 1) -> str:
    """``base`` if it is not in ``taken``, else the first free ``base{sep}1``,
    ``base{sep}2``, ... (the one rule every name supply of irc follows); ``start`` skips
    suffixes a caller knows are taken."""
    if base not in taken:
        return base
    i = start
    while f"{base}{sep}{i}" in taken:
        i += 1
    return f"{base}{sep}{i}"


@node
class IRModule(Node):
    """A collection of named functions. ``mod["main"]`` returns a function;
    ``mod.get_global_var("main")`` its ``GlobalVar``."""

    functions: dict[GlobalVar, Any] = None  # type: ignore[assignment]
    attrs: dict[str, Any] = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
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
    def get_global_var(self, name: str) -> GlobalVar:
        """The ``GlobalVar`` of function ``name`` (an IRCError naming the functions there
        are when it is missing)."""
        for gv in self.functions:
            if gv.name_hint == name:
                return gv
        raise IRCError(f"IRModule has no function named {name!r}; it has "
                       f"{', '.join(sorted(self.names())) or 'no functions'}")

    def __getitem__(self, key: Any) -> Any:
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
        """The names of the module's functions, in order."""
        return [gv.name_hint for gv in self.functions]

    def items(self):
        """``(GlobalVar, function)`` pairs, in order."""
        return self.functions.items()

    def get(self, name: str, default: Any = None) -> Any:
        """The function named ``name``, or ``default`` when there is none."""
        return self[name] if name in self else default

    # -- functional updates -------------------------------------------------------
    def with_function(self, name_or_gv: Any, func: Any) -> IRModule:
        """A module with ``func`` added or replaced under ``name_or_gv``."""
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
        """A module with every ``name -> function`` of ``updates`` added or replaced."""
        mod = self
        for k, v in updates.items():
            mod = mod.with_function(k, v)
        return mod

    def without_function(self, name: str) -> IRModule:
        """A module without function ``name``."""
        gv = self.get_global_var(name)
        return IRModule(functions={k: v for k, v in self.functions.items() if k is not gv},
                        attrs=self.attrs)

    def with_attrs(self, **attrs: Any) -> IRModule:
        """A module with ``attrs`` added to (or replacing) its attributes."""
        return IRModule(functions=self.functions, attrs={**self.attrs, **attrs})

    def map_functions(self, fn: Callable[[Any], Any], kind: type | tuple[type, ...] = object,
                      where: Callable[[Any], bool] | None = None) -> IRModule:
        """A module with ``fn(func)`` in place of every function that is an instance of
        ``kind`` (and satisfies ``where``, when given); a None result removes the function.
        Returns this module itself when ``fn`` changed nothing."""
        funcs: dict[Any, Any] = {}
        changed = False
        for gv, func in self.functions.items():
            if isinstance(func, kind) and (where is None or where(func)):
                new = fn(func)
                changed |= new is not func
                if new is None:
                    continue
                func = new
            funcs[gv] = func
        return IRModule(functions=funcs, attrs=self.attrs) if changed else self

    def unique_name(self, base: str) -> str:
        """``base`` if no function has that name, else ``base1``, ``base2``, ..."""
        return unique_name(base, set(self.names()))

    # -- text -----------------------------------------------------------------------
    def __str__(self) -> str:
        # print(mod) shows the IR text, as print(irc.lower(sch, args)) in the seeds does;
        # repr(mod) stays a one-line summary.
        return self.script()

    @staticmethod
    def from_script(text: str, source_name: str = "<string>",
                    metadata: dict[str, list[Any]] | None = None) -> IRModule:
        """Parse irc script text (``@I.ir_module class ...``) with the parser that
        ``irc.script_parser`` registers (:func:`register_parser`). ``metadata`` supplies
        what ``metadata["kind"][i]`` refers to where the text does not hold it (as for
        :func:`irc.parse`)."""
        if _PARSER is None:
            raise IRCError("no text parser is registered; import irc (irc.script_parser "
                           "registers it)")
        return _PARSER(text, source_name, metadata)


_PARSER: Callable[[str, str, Any], Any] | None = None


def register_parser(parse: Callable[[str, str, Any], Any]) -> None:
    """Install the text parser behind :meth:`IRModule.from_script` (``irc.script_parser``
    calls this when it is imported: the core cannot import the layers above it)."""
    global _PARSER
    _PARSER = parse

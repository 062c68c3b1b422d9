"""The pass infrastructure: passes over IRModules, sequences of them, and the context
they run in (what TVM keeps in ``tvm.ir.transform``).

A pass is a small frozen dataclass: its fields are its options (visible in ``repr``), its
class gives its name (the class name unless a ``name`` field says otherwise) and its
``opt_level``. Graph passes (``irc.passes``), loop-IR passes (``irc.tir.transform``) and
the scheduling and tuning passes all derive from :class:`Pass`, so one ``Sequential``
holds any mix of them and every :class:`~irc.core.instrument.PassInstrument` of the
current :class:`PassContext` sees each one run.

``Sequential`` runs passes in order, skipping those above the context's ``opt_level``
unless listed in ``required_pass``, never running those in ``disabled_pass``.
``PassContext`` carries options explicitly (no environment variables) and instruments,
and checks them when it is made: ``opt_level`` is 0 to 3, every pass name is the name of
a pass defined so far (:func:`known_pass_names`: each ``Pass`` class, each pass made by
the decorators, each named ``Sequential``), every ``config`` key is declared with
:func:`register_pass_config` and its value has the declared type. A misspelt name is an
error listing the close matches, not a setting silently ignored.

Decorators make passes from functions or classes::

    @passes.module_pass(opt_level=0, name="CublasDispatch")
    class CublasDispatch:
        def transform_module(self, mod, ctx): ...

    @passes.prim_func_pass(opt_level=1)
    def double(func, mod, ctx): ...

A pass written as a class::

    @dataclass(frozen=True)
    class FoldConstant(Pass):
        size_limit: int | None = 1 << 24

        def transform_module(self, mod, ctx): ...
"""

from __future__ import annotations

import functools
import inspect
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Sequence

from .diagnostics import IRCError, did_you_mean
from .module import IRModule

OPT_LEVELS = range(4)


def check_opt_level(what: str, opt_level: Any) -> None:
    """An IRCError naming ``what`` unless ``opt_level`` is an int from 0 to 3."""
    if (not isinstance(opt_level, int) or isinstance(opt_level, bool)
            or opt_level not in OPT_LEVELS):
        raise IRCError(f"{what}: opt_level must be an int from 0 (no optional passes) to 3 "
                       f"(all of them), got {opt_level!r}")

# Names of the passes defined so far (see register_pass_name).
_PASS_NAMES: set[str] = set()


def register_pass_name(name: str) -> None:
    """Count ``name`` as the name of a pass, which ``PassContext``'s ``required_pass`` and
    ``disabled_pass`` may then name. ``Pass`` classes, the passes ``module_pass`` /
    ``function_pass`` / ``prim_func_pass`` make and named ``Sequential`` pipelines register
    themselves; a layer that defines passes on first use registers their names up front."""
    _PASS_NAMES.add(name)


def known_pass_names() -> list[str]:
    """The names of the passes defined so far, sorted."""
    return sorted(_PASS_NAMES)


@dataclass(frozen=True)
class PassConfigOption:
    """A ``PassContext`` config key: its values are instances of ``value_type`` (a type
    or a tuple of types; ``bool`` does not count as an ``int``), one of ``choices`` when
    they are given; ``doc`` says what it does."""

    name: str
    value_type: type | tuple[type, ...]
    choices: tuple[Any, ...] = ()
    doc: str = ""

    def check(self, value: Any) -> None:
        """An IRCError unless ``value`` is a valid value of this option."""
        types = self.value_type if isinstance(self.value_type, tuple) else (self.value_type,)
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
        if ok and self.choices:
            ok = any(type(value) is type(c) and value == c for c in self.choices)
        if not ok:
            want = (" or ".join(repr(c) for c in self.choices) if self.choices else
                    " or ".join(t.__name__ for t in types))
            raise IRCError(f"PassContext: config {self.name!r} must be {want}, got {value!r}",
                           hint=self.doc or None)


_PASS_CONFIG: dict[str, PassConfigOption] = {}


def register_pass_config(name: str, value_type: type | tuple[type, ...], *,
                         choices: Sequence[Any] = (), doc: str = "") -> None:
    """Declare the ``PassContext`` config key ``name`` (what TVM's
    ``register_pass_config`` does): the pass that reads it with
    ``ctx.config.get(name, default)`` declares it where it is defined, and ``PassContext``
    refuses keys no one declared and values not of ``value_type`` (or not among
    ``choices``)."""
    _PASS_CONFIG[name] = PassConfigOption(name, value_type, tuple(choices), doc)


@dataclass(frozen=True)
class PassInfo:
    """Metadata of a pass: its name, the minimum opt level at which it runs and the
    names of the passes it requires."""

    opt_level: int
    name: str
    required: tuple[str, ...] = ()


class PassInstrument:
    """Observes passes. Override any of the hooks; ``should_run`` may veto a pass. The
    instruments irc provides are in :mod:`irc.core.instrument`."""

    def enter_pass_ctx(self) -> None:
        """Called when a PassContext holding this instrument is entered."""

    def exit_pass_ctx(self) -> None:
        """Called when that PassContext is left."""

    def should_run(self, mod: IRModule, info: PassInfo) -> bool:
        """False skips the pass (the module passes through unchanged)."""
        return True

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Called with the module a pass is about to transform."""

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Called with the module a pass returned."""


@dataclass
class PassContext:
    """Options for a pipeline run: ``opt_level`` (0 to 3, default 2), ``required_pass`` /
    ``disabled_pass`` by name (names of passes defined so far: define a pass of your own
    before the context that names it), ``config`` (pass-specific options declared with
    :func:`register_pass_config`, such as ``{"winograd.tile": 2}``; see
    :meth:`list_configs`) and ``instruments``. Unknown names and wrong values are
    IRCErrors listing the close matches.

    Use as a context manager; ``PassContext.current()`` returns the innermost one entered
    by the calling thread (each thread has its own stack, so a context entered in one
    thread never changes how another thread's passes run).
    """

    opt_level: int = 2
    required_pass: Sequence[str] = ()
    disabled_pass: Sequence[str] = ()
    config: dict[str, Any] = field(default_factory=dict)
    instruments: Sequence[PassInstrument] = ()

    _local: ClassVar[threading.local] = threading.local()

    def __post_init__(self) -> None:
        check_opt_level("PassContext", self.opt_level)
        self.required_pass = pass_names(self.required_pass, "PassContext: required_pass",
                                        known=True)
        self.disabled_pass = pass_names(self.disabled_pass, "PassContext: disabled_pass",
                                        known=True)
        if not isinstance(self.config, dict):
            raise IRCError(f"PassContext: config must be a dict of option name to value, got "
                           f"{type(self.config).__name__}")
        for key, value in self.config.items():
            option = _PASS_CONFIG.get(key) if isinstance(key, str) else None
            if option is None:
                known = ", ".join(sorted(_PASS_CONFIG)) or "none"
                raise IRCError(f"PassContext: unknown config key {key!r}"
                               f"{did_you_mean(str(key), _PASS_CONFIG)}; the known keys "
                               f"are {known}",
                               hint="PassContext.list_configs() describes them")
            option.check(value)
        self.instruments = tuple(self.instruments)
        for inst in self.instruments:
            if not isinstance(inst, PassInstrument):
                raise IRCError(f"PassContext: instruments must be PassInstrument objects, "
                               f"got {type(inst).__name__}")

    @staticmethod
    def _stack() -> list[PassContext]:
        stack = getattr(PassContext._local, "stack", None)  # threading.local: per thread
        if stack is None:
            stack = PassContext._local.stack = []
        return stack

    def __enter__(self) -> PassContext:
        stack = PassContext._stack()
        stack.append(self)
        entered: list[PassInstrument] = []
        try:
            for inst in self.instruments:
                inst.enter_pass_ctx()
                entered.append(inst)
        except BaseException:
            # An instrument that fails to start leaves no context half entered.
            for inst in reversed(entered):
                inst.exit_pass_ctx()
            self._remove_from(stack)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            for inst in self.instruments:
                inst.exit_pass_ctx()
        finally:
            self._remove_from(PassContext._stack())

    def _remove_from(self, stack: list[PassContext]) -> None:
        # By identity: two contexts with equal options compare equal as dataclasses.
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is self:
                del stack[i]
                break

    @staticmethod
    def list_configs() -> dict[str, PassConfigOption]:
        """The config keys declared so far (see :func:`register_pass_config`), by name."""
        return dict(sorted(_PASS_CONFIG.items()))

    @staticmethod
    def current() -> PassContext:
        """The innermost context the calling thread entered (a default one when it
        entered none)."""
        stack = PassContext._stack()
        return stack[-1] if stack else _DEFAULT_CONTEXT

    def pass_enabled(self, info: PassInfo) -> bool:
        """Whether a pass with ``info`` runs in this context (see the class docstring)."""
        if info.name in self.disabled_pass:
            return False
        if info.name in self.required_pass:
            return True
        return info.opt_level <= self.opt_level


def pass_names(value: Any, what: str, known: bool = False) -> tuple[str, ...]:
    """Pass names as a tuple (one name alone is accepted too); an IRCError naming
    ``what`` for anything else, and with ``known`` for a name that is not the name of a
    pass defined so far (:func:`known_pass_names`)."""
    if isinstance(value, str):
        names: tuple | None = (value,)
    else:
        try:
            names = tuple(value)
        except TypeError:
            names = None
    if names is None or not all(isinstance(n, str) for n in names):
        raise IRCError(f"{what} must be a list of pass names, got {value!r}")
    for n in names if known else ():
        if n not in _PASS_NAMES:
            raise IRCError(f"{what} names {n!r}, which is not a pass"
                           f"{did_you_mean(n, _PASS_NAMES)}",
                           hint="irc.core.transform.known_pass_names() lists the passes; a "
                                "pass of your own counts once it is defined (its class, or "
                                "module_pass/function_pass/prim_func_pass)")
    return names


_DEFAULT_CONTEXT = PassContext()


@dataclass(frozen=True)
class Pass:
    """Base class of passes: a frozen dataclass whose fields are the pass's options.
    Subclasses implement ``transform_module(mod, ctx)``; calling the pass runs it under
    the current :class:`PassContext`, observed by its instruments."""

    # Class-level defaults, not annotated: subclasses may make them dataclass fields
    # (Sequential does), and an annotation here would fix their position in __init__.
    opt_level = 0
    required = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__name__.startswith("_"):  # irc's internal wrappers are not named
            register_pass_name(cls.__name__)
            default_name = cls.__dict__.get("name")  # a ``name`` field's default
            if isinstance(default_name, str) and default_name:
                register_pass_name(default_name)

    @property
    def name(self) -> str:
        """The pass's name (its class name unless the pass says otherwise)."""
        return type(self).__name__

    @property
    def info(self) -> PassInfo:
        """Name, opt level and required passes, as ``PassContext`` and instruments see
        them."""
        return PassInfo(opt_level=self.opt_level, name=self.name,
                        required=tuple(self.required))

    @info.setter
    def info(self, value: Any) -> None:
        raise IRCError(f"{type(self).__name__}: a pass's info is not assigned; an irc pass "
                       "is a frozen dataclass named after its class, with class attributes "
                       "opt_level (and required) and its options as fields",
                       hint="see irc.core.transform, or make it with passes.module_pass")

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        raise NotImplementedError(f"{type(self).__name__} does not implement transform_module")

    def __call__(self, mod: IRModule) -> IRModule:
        """Run this pass under the current PassContext."""
        if not isinstance(mod, IRModule):
            raise IRCError(f"pass {self.name} expects an IRModule, got "
                           f"{type(mod).__name__}; wrap a function with "
                           "irc.IRModule(functions={'main': func})")
        return run_pass(self, mod, PassContext.current())


def run_pass(p: Pass, mod: IRModule, ctx: PassContext) -> IRModule:
    """Run ``p`` on ``mod`` with ``ctx``'s instruments around it (any instrument's
    ``should_run`` may skip it)."""
    instruments = ctx.instruments
    if not instruments:
        return _checked(p, p.transform_module(mod, ctx))
    info = p.info
    for inst in instruments:
        if not inst.should_run(mod, info):
            return mod
    for inst in instruments:
        inst.run_before_pass(mod, info)
    out = _checked(p, p.transform_module(mod, ctx))
    for inst in instruments:
        inst.run_after_pass(out, info)
    return out


def _checked(p: Pass, out: Any) -> IRModule:
    if not isinstance(out, IRModule):
        raise IRCError(f"pass {p.name} returned {type(out).__name__}, not an IRModule")
    return out


@dataclass(frozen=True)
class Sequential(Pass):
    """Run ``passes`` in order (a pipeline is itself a pass). Plain functions
    ``IRModule -> IRModule`` are accepted as passes too."""

    passes: tuple[Pass, ...] = ()
    opt_level: int = 0
    name: str = "Sequential"
    required: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.passes, Pass) or callable(self.passes):
            raise IRCError("Sequential takes a list of passes, not one pass: write "
                           "Sequential([p])")
        if not isinstance(self.passes, (list, tuple)):
            raise IRCError(f"Sequential takes a list of passes, got "
                           f"{type(self.passes).__name__}")
        check_pass_options("Sequential", self.name, self.opt_level)
        register_pass_name(self.name)
        object.__setattr__(self, "passes",
                           tuple(_as_pass(p, i) for i, p in enumerate(self.passes)))
        object.__setattr__(self, "required", pass_names(self.required, "required"))

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        for p in self.passes:
            if ctx.pass_enabled(p.info):
                mod = run_pass(p, mod, ctx)
        return mod

    def __repr__(self) -> str:
        inner = ", ".join(repr(p) for p in self.passes)
        level = f", opt_level={self.opt_level}" if self.opt_level else ""
        required = f", required={list(self.required)}" if self.required else ""
        return f"Sequential(name={self.name!r}{level}{required}, passes=[{inner}])"


def check_pass_options(what: str, name: Any, opt_level: Any) -> None:
    """An IRCError unless ``name`` is a non-empty string and ``opt_level`` an int from 0
    to 3."""
    if not isinstance(name, str) or not name:
        raise IRCError(f"{what}: a pass name must be a non-empty string, got {name!r}")
    check_opt_level(f"{what} {name}", opt_level)


def _as_pass(p: Any, index: int) -> Pass:
    if isinstance(p, Pass):
        return p
    if callable(p) and not inspect.isclass(p):
        return _CallablePass(fn=p, name=getattr(p, "__name__", type(p).__name__))
    hint = (f"; {p.__name__} is a class, write {p.__name__}() to make the pass"
            if inspect.isclass(p) else "")
    raise IRCError(f"Sequential: entry #{index} is a {type(p).__name__}, not a pass or a "
                   f"function IRModule -> IRModule{hint}")


@dataclass(frozen=True)
class _CallablePass(Pass):
    """A plain function ``IRModule -> IRModule`` in a Sequential."""

    fn: Callable[[IRModule], IRModule] = field(default=None, repr=False)  # type: ignore
    name: str = "<function>"

    def __post_init__(self) -> None:
        register_pass_name(self.name)

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return self.fn(mod)


@dataclass(frozen=True)
class ModulePass(Pass):
    """A pass from a function ``(mod, ctx) -> mod`` (what :func:`module_pass` makes)."""

    fn: Callable[[IRModule, PassContext], IRModule] = field(default=None,  # type: ignore
                                                             repr=False)
    name: str = "ModulePass"
    opt_level: int = 0
    required: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        register_pass_name(self.name)

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return self.fn(mod, ctx)


@dataclass(frozen=True)
class FunctionPass(Pass):
    """A pass that rewrites each function of one kind on its own: subclasses set
    ``function_type`` (``irc.tir.PrimFunc``, ``irc.ir.Function``) and implement
    ``transform_function(func)``; a None result removes the function. Called on a single
    function instead of a module, the pass transforms that function."""

    function_type: ClassVar[type | tuple[type, ...]] = object
    error_type: ClassVar[type[IRCError]] = IRCError  # raised for an argument of a wrong type

    def transform_function(self, func: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement transform_function")

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return mod.map_functions(self.transform_function, self.function_type)

    def __call__(self, x: Any) -> Any:
        if not isinstance(x, IRModule) and isinstance(x, self.function_type):
            return self.transform_function(x)
        if not isinstance(x, IRModule):
            raise self.error_type(f"{self.name} applies to a {_kind_name(self.function_type)} "
                                  f"or an IRModule, not {type(x).__name__}")
        return super().__call__(x)


def _kind_name(kinds: type | tuple[type, ...]) -> str:
    if isinstance(kinds, tuple):
        return " or a ".join(k.__name__ for k in kinds)
    return kinds.__name__


@dataclass(frozen=True)
class PerFunctionPass(Pass):
    """A pass applying ``fn(func, mod, ctx) -> func`` to every function of ``kinds`` in a
    module (what ``function_pass`` / ``prim_func_pass`` make); a None result removes the
    function. It runs on modules only, since ``fn`` sees the module of the function."""

    fn: Callable[[Any, IRModule, PassContext], Any] = field(default=None,  # type: ignore
                                                             repr=False)
    kinds: type | tuple[type, ...] = field(default=object, repr=False)
    name: str = "FunctionPass"
    opt_level: int = 0
    required: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        register_pass_name(self.name)

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return mod.map_functions(lambda func: self.fn(func, mod, ctx), self.kinds)


def make_pass_decorator(kind: str, function_type: type | tuple[type, ...] | None = None,
                        ) -> Callable[..., Any]:
    """The decorator behind :func:`module_pass` (``kind="module"``) and the function-pass
    decorators of each IR level (``kind="function"`` with the ``function_type`` the pass
    applies to): decorating a function gives a pass, decorating a class gives a factory
    of passes whose instances hold the class's object."""
    method = "transform_module" if kind == "module" else "transform_function"

    def decorator(pass_func: Any = None, *, opt_level: int = 0, name: str | None = None,
                  required: Sequence[str] = ()) -> Any:
        def make(fn: Callable[..., Any], pname: str) -> Pass:
            check_pass_options(f"{kind}_pass", pname, opt_level)
            req = pass_names(required, "required")
            if kind == "module":
                return ModulePass(fn=fn, name=pname, opt_level=opt_level, required=req)
            return PerFunctionPass(fn=fn, kinds=function_type or object, name=pname,
                                   opt_level=opt_level, required=req)

        def deco(obj: Any) -> Any:
            pname = name or getattr(obj, "__name__", "pass")
            check_pass_options(f"{kind}_pass", pname, opt_level)
            register_pass_name(pname)
            if inspect.isclass(obj):
                if not hasattr(obj, method):
                    raise IRCError(f"{kind}_pass class {obj.__name__} must define {method}")

                @functools.wraps(obj, updated=())
                def factory(*args: Any, **kwargs: Any) -> Pass:
                    return make(getattr(obj(*args, **kwargs), method), pname)

                factory.__doc__ = obj.__doc__
                return factory
            if not callable(obj):
                raise IRCError(f"{kind}_pass decorates a function or a class, not "
                               f"{type(obj).__name__}")
            return make(obj, pname)

        return deco(pass_func) if pass_func is not None else deco

    return decorator


module_pass = make_pass_decorator("module")
module_pass.__doc__ = """Make a module pass from a function ``(mod, ctx) -> mod`` or a class
with ``transform_module(self, mod, ctx)``; decorating a class gives a factory of passes."""

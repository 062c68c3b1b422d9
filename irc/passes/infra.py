"""Pass infrastructure: passes over IRModules, sequences of them, and the context they
run in.

A pass is a callable ``IRModule -> IRModule`` with a ``PassInfo`` (name, opt level,
required passes). ``Sequential`` runs passes in order, skipping those above the context's
``opt_level`` unless listed in ``required_pass``, never running those listed in
``disabled_pass``. ``PassContext`` carries options explicitly (no environment variables) and
instruments that observe every pass (timing, printing IR, checking well-formedness).

Decorators make passes from functions or classes::

    @passes.module_pass(opt_level=0, name="CublasDispatch")
    class CublasDispatch:
        def transform_module(self, mod, ctx): ...

    @passes.function_pass(opt_level=1)
    def double(func, mod, ctx): ...
"""

from __future__ import annotations

import functools
import inspect
import time
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Sequence

from ..ir.diagnostics import IRCError
from ..ir.module import IRModule


@dataclass(frozen=True)
class PassInfo:
    """Metadata of a pass: its name, the minimum opt level at which it runs and the
    names of the passes it requires."""

    opt_level: int
    name: str
    required: tuple[str, ...] = ()


class PassInstrument:
    """Observes passes. Override any of the hooks; ``should_run`` may veto a pass."""

    def enter_pass_ctx(self) -> None:
        pass

    def exit_pass_ctx(self) -> None:
        pass

    def should_run(self, mod: IRModule, info: PassInfo) -> bool:
        return True

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        pass

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        pass


@dataclass
class PassContext:
    """Options for a pipeline run: ``opt_level`` (default 2), ``required_pass`` /
    ``disabled_pass`` by name, ``config`` (pass-specific options such as
    ``{"relax.backend.use_cuda_graph": False}``) and ``instruments``.

    Use as a context manager; ``PassContext.current()`` returns the innermost one.
    """

    opt_level: int = 2
    required_pass: Sequence[str] = ()
    disabled_pass: Sequence[str] = ()
    config: dict[str, Any] = field(default_factory=dict)
    instruments: Sequence[PassInstrument] = ()

    _stack: ClassVar[list[PassContext]] = []

    def __post_init__(self) -> None:
        if not isinstance(self.opt_level, int) or isinstance(self.opt_level, bool):
            raise IRCError(f"PassContext: opt_level must be an int (0-3), got "
                           f"{self.opt_level!r}")
        self.required_pass = _names(self.required_pass, "required_pass")
        self.disabled_pass = _names(self.disabled_pass, "disabled_pass")
        if not isinstance(self.config, dict):
            raise IRCError(f"PassContext: config must be a dict of option name to value, got "
                           f"{type(self.config).__name__}")
        self.instruments = tuple(self.instruments)
        for inst in self.instruments:
            if not isinstance(inst, PassInstrument):
                raise IRCError(f"PassContext: instruments must be PassInstrument objects, "
                               f"got {type(inst).__name__}")

    def __enter__(self) -> PassContext:
        PassContext._stack.append(self)
        for inst in self.instruments:
            inst.enter_pass_ctx()
        return self

    def __exit__(self, *exc: object) -> None:
        for inst in self.instruments:
            inst.exit_pass_ctx()
        # By identity: two contexts with equal options compare equal as dataclasses.
        stack = PassContext._stack
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is self:
                del stack[i]
                break

    @staticmethod
    def current() -> PassContext:
        """The innermost entered context (a default one when none is entered)."""
        if PassContext._stack:
            return PassContext._stack[-1]
        return _DEFAULT_CONTEXT

    def pass_enabled(self, info: PassInfo) -> bool:
        """Whether a pass with ``info`` runs in this context (see the class docstring)."""
        if info.name in self.disabled_pass:
            return False
        if info.name in self.required_pass:
            return True
        return info.opt_level <= self.opt_level


def _names(value: Any, what: str) -> tuple[str, ...]:
    """Pass names as a tuple (one name alone is accepted too)."""
    if isinstance(value, str):
        return (value,)
    try:
        names = tuple(value)
    except TypeError:
        names = None
    if names is None or not all(isinstance(n, str) for n in names):
        raise IRCError(f"{what} must be a list of pass names, got {value!r}")
    return names


_DEFAULT_CONTEXT = PassContext()


class Pass:
    """Base class of passes. Subclasses implement ``transform_module(mod, ctx)``."""

    info: PassInfo = PassInfo(opt_level=0, name="Pass")

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        raise NotImplementedError(f"{type(self).__name__} does not implement transform_module")

    def __call__(self, mod: IRModule) -> IRModule:
        """Run this pass under the current PassContext."""
        if not isinstance(mod, IRModule):
            raise IRCError(f"pass {self.info.name} expects an IRModule, got "
                           f"{type(mod).__name__}; wrap a function with "
                           "irc.IRModule({'main': func})")
        ctx = PassContext.current()
        return _run_instrumented(self, mod, ctx)

    def __repr__(self) -> str:
        return f"<pass {self.info.name} opt_level={self.info.opt_level}>"


def _run_instrumented(p: Pass, mod: IRModule, ctx: PassContext) -> IRModule:
    for inst in ctx.instruments:
        if not inst.should_run(mod, p.info):
            return mod
    for inst in ctx.instruments:
        inst.run_before_pass(mod, p.info)
    out = p.transform_module(mod, ctx)
    if not isinstance(out, IRModule):
        raise IRCError(f"pass {p.info.name} returned {type(out).__name__}, not an IRModule")
    for inst in ctx.instruments:
        inst.run_after_pass(out, p.info)
    return out


class Sequential(Pass):
    """Run ``passes`` in order (a pipeline is itself a pass)."""

    def __init__(self, passes: Sequence[Pass | Callable[[IRModule], IRModule]],
                 opt_level: int = 0, name: str = "Sequential",
                 required: Sequence[str] = ()):
        self.passes = [_as_pass(p, i) for i, p in enumerate(passes)]
        self.info = PassInfo(opt_level=opt_level, name=name, required=tuple(required))

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        for p in self.passes:
            if not ctx.pass_enabled(p.info):
                continue
            mod = _run_instrumented(p, mod, ctx)
        return mod

    def __repr__(self) -> str:
        inner = ", ".join(p.info.name for p in self.passes)
        return f"<Sequential {self.info.name}: {inner}>"


def _as_pass(p: Any, index: int) -> Pass:
    if isinstance(p, Pass):
        return p
    if callable(p) and not inspect.isclass(p):
        return _wrap_callable(p)
    hint = (f"; {p.__name__} is a class, write {p.__name__}() to make the pass"
            if inspect.isclass(p) else "")
    raise IRCError(f"Sequential: entry #{index} is a {type(p).__name__}, not a pass or a "
                   f"function IRModule -> IRModule{hint}")


def _wrap_callable(fn: Callable[[IRModule], IRModule]) -> Pass:
    name = getattr(fn, "__name__", type(fn).__name__)

    class _Callable(Pass):
        info = PassInfo(opt_level=0, name=name)

        def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
            return fn(mod)

    return _Callable()


class ModulePass(Pass):
    """A pass from a function ``(mod, ctx) -> mod``."""

    def __init__(self, fn: Callable[[IRModule, PassContext], IRModule], info: PassInfo):
        self._fn = fn
        self.info = info

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return self._fn(mod, ctx)


class FunctionPass(Pass):
    """A pass applying ``fn(func, mod, ctx) -> func`` to every function of a kind
    (graph ``Function`` or ``PrimFunc``) in the module; returning None removes it."""

    def __init__(self, fn: Callable[[Any, IRModule, PassContext], Any], info: PassInfo,
                 kind: str = "graph"):
        if kind not in ("graph", "tir"):
            raise IRCError(f"function_pass kind must be 'graph' or 'tir', got {kind!r}")
        self._fn = fn
        self.kind = kind
        self.info = info

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        from ..ir.expr import Function
        from ..tir.stmt import PrimFunc

        want = Function if self.kind == "graph" else PrimFunc
        return mod.map_functions(lambda func: self._fn(func, mod, ctx), want)


def _make_decorator(kind: str, opt_level: int, name: str | None,
                    required: Sequence[str], fn_kind: str = "graph"):
    def deco(obj: Any) -> Any:
        pname = name or getattr(obj, "__name__", "pass")
        info = PassInfo(opt_level=opt_level, name=pname, required=tuple(required))
        if inspect.isclass(obj):
            method = "transform_module" if kind == "module" else "transform_function"
            if not hasattr(obj, method):
                raise IRCError(f"{kind}_pass class {obj.__name__} must define {method}")

            @functools.wraps(obj, updated=())
            def factory(*args: Any, **kwargs: Any) -> Pass:
                inst = obj(*args, **kwargs)
                if kind == "module":
                    return ModulePass(inst.transform_module, info)
                return FunctionPass(inst.transform_function, info, fn_kind)

            factory.__doc__ = obj.__doc__
            return factory
        if kind == "module":
            return ModulePass(obj, info)
        return FunctionPass(obj, info, fn_kind)

    return deco


def module_pass(pass_func: Any = None, *, opt_level: int = 0, name: str | None = None,
                required: Sequence[str] = ()) -> Any:
    """Make a module pass from a function ``(mod, ctx) -> mod`` or a class with
    ``transform_module(self, mod, ctx)``; decorating a class gives a factory of passes."""
    deco = _make_decorator("module", opt_level, name, required)
    return deco(pass_func) if pass_func is not None else deco


def function_pass(pass_func: Any = None, *, opt_level: int = 0, name: str | None = None,
                  required: Sequence[str] = ()) -> Any:
    """Make a pass applied to each graph-level Function: ``(func, mod, ctx) -> func``."""
    deco = _make_decorator("function", opt_level, name, required, "graph")
    return deco(pass_func) if pass_func is not None else deco


def prim_func_pass(pass_func: Any = None, *, opt_level: int = 0, name: str | None = None,
                   required: Sequence[str] = ()) -> Any:
    """Make a pass applied to each PrimFunc: ``(func, mod, ctx) -> func``."""
    deco = _make_decorator("function", opt_level, name, required, "tir")
    return deco(pass_func) if pass_func is not None else deco


class PassTimingInstrument(PassInstrument):
    """Records the wall time of every pass; ``render()`` gives a table."""

    def __init__(self) -> None:
        self.timings: list[tuple[str, float]] = []
        self._start: list[float] = []

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        self._start.append(time.perf_counter())

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        self.timings.append((info.name, time.perf_counter() - self._start.pop()))

    def render(self) -> str:
        lines = [f"{name:<40} {secs * 1e3:9.2f} ms" for name, secs in self.timings]
        return "\n".join(lines)


class PrintIR(PassInstrument):
    """Prints the module after each pass (or only after the named ones)."""

    def __init__(self, only: Sequence[str] = ()):
        self.only = set(_names(only, "PrintIR(only=...)"))

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        if not self.only or info.name in self.only:
            print(f"# after {info.name}")
            print(mod.script())


class WellFormedInstrument(PassInstrument):
    """Checks well-formedness after every pass and names the pass that broke it."""

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        from ..ir.well_formed import well_formed

        try:
            well_formed(mod)
        except IRCError as err:
            raise type(err)(f"after pass {info.name}: {err.message}", span=err.span,
                            node=err.node) from err

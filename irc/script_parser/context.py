"""Shared machinery of the builders: name scopes, error helpers and argument checks.

Every check here raises an irc error located at the syntax node it is about, so the
builders never let a Python exception (KeyError, TypeError, ...) escape on bad input.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from ..core import dtype as dt
from ..core.diagnostics import IRCError, IRParseError, IRTypeError, Span
from ..core.node import Node
from ..ir.printer import MetadataRef
from ..tir.expr import IntImm
from . import syntax as syn


class Namespace:
    """The value of the names ``T``, ``R`` and ``I`` in a script."""

    __slots__ = ("prefix",)

    def __init__(self, prefix: str):
        self.prefix = prefix

    def __repr__(self) -> str:
        return f"<namespace {self.prefix}>"


NAMESPACES = {"T": Namespace("T"), "R": Namespace("R"), "I": Namespace("I")}


class DTypeMarker:
    """The value of ``T.float32`` (a dtype used as an annotation or a constructor)."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: str):
        self.dtype = dtype


def span_of(node: Any) -> Span | None:
    """The span of a syntax node (None for anything else)."""
    return getattr(node, "span", None)


class TypeVarDecl:
    """A module-level ``n = TypeVar("n")``: a symbolic dimension name for signatures
    (graph functions' and loop functions' alike)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


def parse_error(message: str, node: Any, hint: str | None = None) -> IRParseError:
    """An IRParseError located at syntax ``node``."""
    return IRParseError(message, span=span_of(node), hint=hint)


def type_error(message: str, node: Any, hint: str | None = None) -> IRTypeError:
    """An IRTypeError located at syntax ``node``."""
    return IRTypeError(message, span=span_of(node), hint=hint)


@contextmanager
def located(node: Any) -> Iterator[None]:
    """Give irc errors raised inside (by IR constructors, the operator registry, ...) the
    location of ``node`` when they have none."""
    try:
        yield
    except IRCError as e:
        if e.span is None and span_of(node) is not None:
            e.span = span_of(node)
            e.args = (e._render(),)
        raise


def describe(value: Any) -> str:
    """A short description of an evaluated value for messages."""
    if isinstance(value, bool):
        return f"the bool {value}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if value is None:
        return "None"
    if isinstance(value, Namespace):
        return f"the namespace {value.prefix}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    if isinstance(value, Node):
        return f"a {type(value).__name__}"
    if isinstance(value, SuppliedObject):
        return describe(value.value)
    return f"a {type(value).__name__}"


# ---------------------------------------------------------------------------------
# Scopes
# ---------------------------------------------------------------------------------


class Scopes:
    """A stack of name tables. ``function_base`` marks where the current function's
    scopes start: a name may not be defined twice within one function (shadowing a
    name of an enclosing loop or block would make the text ambiguous)."""

    def __init__(self, globals_: dict[str, Any]):
        self.frames: list[dict[str, Any]] = [dict(globals_)]
        self.function_base = 1
        # Names whose scope has ended with a hint why (a dataflow block's own variables),
        # with the function's outermost frame they belonged to.
        self._ended: dict[str, tuple[int, str]] = {}

    def end(self, name: str, hint: str) -> None:
        """Remember that ``name`` went out of scope, and why (for undefined-name errors
        later in the same function)."""
        if len(self.frames) > self.function_base:
            self._ended[name] = (id(self.frames[self.function_base]), hint)

    def undefined(self, name: str, node: Any) -> Exception:
        """The IRParseError of an undefined ``name`` (with a hint when it is a name whose
        scope ended earlier in this function)."""
        ended = self._ended.get(name)
        hint = None
        if ended is not None and len(self.frames) > self.function_base and \
                ended[0] == id(self.frames[self.function_base]):
            hint = ended[1]
        return parse_error(f"undefined name '{name}'", node, hint=hint)

    def lookup(self, name: str, node: Any) -> Any:
        """The value of ``name``; IRParseError ``undefined name`` if none."""
        for frame in reversed(self.frames):
            if name in frame:
                return frame[name]
        raise self.undefined(name, node)

    def get(self, name: str, default: Any = None) -> Any:
        """The value of ``name`` or ``default``."""
        for frame in reversed(self.frames):
            if name in frame:
                return frame[name]
        return default

    def defined_in_function(self, name: str) -> bool:
        """Whether ``name`` is visible in the current function's scopes."""
        return any(name in f for f in self.frames[self.function_base:])

    def define(self, name: str, value: Any, node: Any, *, allow_redefine: bool = False) -> None:
        """Bind ``name`` in the innermost scope (duplicates raise unless allowed)."""
        if name in NAMESPACES or name in ("True", "False", "None"):
            raise parse_error(f"cannot use the reserved name '{name}' for a variable", node)
        if not allow_redefine and self.defined_in_function(name):
            raise parse_error(f"duplicate definition of '{name}'", node,
                              hint="every variable, buffer and loop name must be unique "
                                   "within a function")
        self.frames[-1][name] = value

    @contextmanager
    def scope(self) -> Iterator[dict[str, Any]]:
        """A nested scope for the duration of the ``with``."""
        self.frames.append({})
        try:
            yield self.frames[-1]
        finally:
            self.frames.pop()

    @contextmanager
    def function(self) -> Iterator[None]:
        """The scope of one function (duplicate checks stop at its start)."""
        saved = self.function_base
        self.frames.append({})
        self.function_base = len(self.frames) - 1
        try:
            yield
        finally:
            self.frames.pop()
            self.function_base = saved


# ---------------------------------------------------------------------------------
# Argument binding and checks
# ---------------------------------------------------------------------------------


def bind_args(call: syn.Call, fname: str, params: list[str], required: int,
              values: list[Any] | None = None, kw: dict[str, Any] | None = None,
              *, variadic: bool = False) -> dict[str, Any]:
    """Match the (already evaluated) arguments of ``call`` to ``params``: the first
    ``required`` are mandatory. With ``variadic`` the extra positional values are
    returned under ``"*"``. Raises IRParseError for wrong arity or unknown keywords."""
    values = list(values or [])
    kw = dict(kw or {})
    out: dict[str, Any] = {}
    if len(values) > len(params) and not variadic:
        raise parse_error(f"{fname} takes at most {len(params)} argument(s) "
                          f"({', '.join(params)}), got {len(values)}", call)
    for name, v in zip(params, values):
        out[name] = v
    if variadic:
        out["*"] = values[len(params):]
    for key, v in kw.items():
        if key not in params:
            raise parse_error(f"{fname} has no argument '{key}' (arguments: "
                              f"{', '.join(params) or 'none'})", call)
        if key in out:
            raise parse_error(f"{fname} got argument '{key}' twice", call)
        out[key] = v
    missing = [p for p in params[:required] if p not in out]
    if missing:
        raise parse_error(f"{fname} is missing argument(s) {', '.join(missing)} "
                          f"(expects {', '.join(params)})", call)
    return out


def arg_syntax(call: syn.Call, params: list[str], name: str, skip: int = 0) -> Any:
    """The syntax of the argument of ``call`` bound to parameter ``name`` (by keyword, or
    by position after ``skip`` leading positional arguments); ``call`` when it is absent."""
    for key, value, _ in call.kwargs:
        if key == name:
            return value
    i = params.index(name) + skip
    return call.args[i] if i < len(call.args) else call


def item_syntax(node: Any, index: int, count: int) -> Any:
    """The syntax of item ``index`` of a tuple or list literal of ``count`` items; ``node``
    itself when it is not such a literal (a name bound to a tuple, say)."""
    if isinstance(node, (syn.TupleExpr, syn.ListExpr)) and len(node.elts) == count:
        return node.elts[index]
    return node


def check_dimension(dim: Any, index: int, what: str, node: Any, hint: str) -> None:
    """An IRParseError at ``node`` when shape dimension ``index`` is a negative constant
    (it would otherwise parse and fail only when the operator is legalized or run)."""
    if isinstance(dim, IntImm) and dim.value < 0:
        raise parse_error(f"{what}: shape dimension {index} is {dim.value}; dimensions cannot "
                          "be negative", node, hint=hint)


def expect_str(value: Any, what: str, node: Any) -> str:
    """``value`` if it is a string, else an IRParseError naming ``what``."""
    if not isinstance(value, str):
        raise parse_error(f"{what} must be a string, got {describe(value)}", node)
    return value


def expect_dtype(value: Any, what: str, node: Any) -> str:
    """A valid dtype string (``T.float32`` written as a dtype object is accepted too)."""
    if isinstance(value, DTypeMarker):
        value = value.dtype
    if not isinstance(value, str):
        raise parse_error(f"{what} must be a dtype string such as \"float32\", got "
                          f"{describe(value)}", node)
    try:
        dt.check(value)
    except IRTypeError as e:
        raise type_error(e.message, node) from None
    return value


def expect_int(value: Any, what: str, node: Any) -> int:
    """``value`` as a Python int (an integer immediate is accepted)."""
    if isinstance(value, IntImm) and value.dtype != "bool":
        return value.value
    if isinstance(value, bool) or not isinstance(value, int):
        raise parse_error(f"{what} must be an integer constant, got {describe(value)}", node)
    return value


def expect_bool(value: Any, what: str, node: Any) -> bool:
    """``value`` if it is True or False."""
    if not isinstance(value, bool):
        raise parse_error(f"{what} must be True or False, got {describe(value)}", node)
    return value


def expect_name(node: Any, what: str) -> str:
    """The identifier of a plain-name syntax node."""
    if not isinstance(node, syn.Name):
        raise parse_error(f"{what} must be a plain name", node)
    return node.id


def target_names(node: Any, what: str) -> list[tuple[str, Any]]:
    """The (name, node) pairs of an assignment or loop target: a name or a tuple of names."""
    if isinstance(node, syn.Name):
        return [(node.id, node)]
    if isinstance(node, (syn.TupleExpr, syn.ListExpr)):
        out = []
        for e in node.elts:
            out.append((expect_name(e, what), e))
        return out
    raise parse_error(f"{what} must be a name or a tuple of names", node)


class SuppliedObject:
    """An object that ``metadata["kind"][i]`` names and ``irc.parse(metadata=...)``
    supplies (e.g. a compiled module in module attributes): kept as is in attributes."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


def attr_value(value: Any, node: Any, what: str = "attribute value") -> Any:
    """Check a Python-level attribute value (func_attr, block_attr, annotations): only
    None, bools, numbers, strings, IR nodes, objects supplied as metadata and lists/dicts
    of them are kept."""
    if value is None or isinstance(value, (bool, int, float, str, Node)):
        return value
    if isinstance(value, SuppliedObject):
        return value.value
    if isinstance(value, (list, tuple)):
        return [attr_value(v, node, what) for v in value]
    if isinstance(value, dict):
        return {attr_key(k, node): attr_value(v, node, what) for k, v in value.items()}
    if isinstance(value, MetadataRef):
        return value
    raise parse_error(f"{what} cannot be {describe(value)}", node)


def attr_key(key: Any, node: Any) -> str:
    """An attribute name, with TVM 0.27's ``tirx.`` prefix mapped to ``tir.``."""
    if not isinstance(key, str):
        raise parse_error(f"attribute names must be strings, got {describe(key)}", node)
    if key.startswith("tirx."):
        # TVM 0.27 spells the loop-IR attribute namespace "tirx"; irc keeps "tir".
        key = "tir." + key[len("tirx."):]
    return key

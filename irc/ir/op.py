"""The operator registry.

Each graph operator is declared once with :func:`register_op`: its name (``"add"``,
``"nn.conv2d"``; printed as ``R.add``, ``R.nn.conv2d``), its operand names, its
attributes (name, default, converter that validates and canonicalizes a value), its
struct-info inference and, later, its legalization to loop IR and its fusion pattern.

``make_call(name, *operands, **attrs)`` builds a ``Call`` with the attributes checked
and defaults filled in; the parser, the BlockBuilder helpers (``irc.ir.op_builders``) and
the frontends all build calls through it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..core import dtype as dt
from ..core.diagnostics import IRTypeError
from ..tir.expr import FloatImm, IntImm
from .expr import Call, Expr, Op, Tuple, unknown_operator
from .struct_info import StructInfo

# Op patterns (fusion kinds), ordered as TVM orders them.
ELEMWISE = 0
BROADCAST = 1
INJECTIVE = 2
COMM_REDUCE = 3
OUT_ELEMWISE_FUSABLE = 4
TUPLE = 7
OPAQUE = 8

_MISSING = object()


@dataclass(frozen=True)
class AttrSpec:
    """One attribute: ``convert(value, op_name, attr_name)`` validates and returns the
    canonical value. ``sinfo=True`` marks struct-info arguments (e.g. ``out_sinfo``) which
    go to ``Call.sinfo_args`` rather than ``Call.attrs``."""

    name: str
    default: Any = _MISSING
    convert: Callable[[Any, str, str], Any] | None = None
    sinfo: bool = False

    @property
    def required(self) -> bool:
        return self.default is _MISSING


@dataclass
class OpDef:
    """The registry entry of one operator."""

    name: str
    operands: tuple[str, ...]
    attrs: tuple[AttrSpec, ...] = ()
    infer: Callable[..., Any] | None = None
    legalize: Callable[..., Any] | None = None
    pattern: int = OPAQUE
    variadic: bool = False  # the last operand takes the remaining positional arguments
    pure: bool = True
    optional: tuple[str, ...] = ()  # trailing operands that may be left out (or given as None)
    doc: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def attr(self, name: str) -> AttrSpec | None:
        for a in self.attrs:
            if a.name == name:
                return a
        return None


_OPS: dict[str, OpDef] = {}


def register_op(name: str, operands: Sequence[str], attrs: Sequence[AttrSpec] = (), *,
                pattern: int = OPAQUE, variadic: bool = False, pure: bool = True,
                doc: str = "", optional: Sequence[str] = (),
                extra: dict[str, Any] | None = None) -> \
        Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare operator ``name``; decorates its struct-info inference function
    ``infer(call, ctx) -> StructInfo``. ``optional`` names trailing operands that may be
    omitted; ``extra["canonicalize"]``, when given, is called by :func:`make_call` as
    ``canonicalize(operands, attrs, sinfo_args) -> (operands, attrs, sinfo_args)`` to
    bring Python-level arguments to one canonical form (e.g. a shape tuple to a
    ``ShapeExpr``)."""

    def deco(infer: Callable[..., Any]) -> Callable[..., Any]:
        if name in _OPS:
            raise ValueError(f"operator {name!r} registered twice")
        _OPS[name] = OpDef(name=name, operands=tuple(operands), attrs=tuple(attrs),
                           infer=infer, pattern=pattern, variadic=variadic, pure=pure,
                           doc=doc or (infer.__doc__ or ""), optional=tuple(optional),
                           extra=dict(extra or {}))
        Op._REGISTRY[name] = Op(name=name)
        return infer

    return deco


def get_op_def(name: str) -> OpDef:
    """The registry entry of ``name``; an unknown name raises with close matches."""
    opdef = _OPS.get(name)
    if opdef is None:
        raise unknown_operator(name, _OPS)
    return opdef


def has_op(name: str) -> bool:
    """True when operator ``name`` is registered."""
    return name in _OPS


def list_ops() -> list[str]:
    """The names of every registered operator, sorted."""
    return sorted(_OPS)


def bind_call_args(name: str, args: Sequence[Any], kwargs: dict[str, Any]) -> \
        tuple[list[Any], dict[str, Any], list[Any]]:
    """Split Python-level call arguments into (operands, attrs, sinfo_args), checking
    arity, unknown keywords and attribute values. Errors name the operator."""
    opdef = get_op_def(name)
    n_ops = len(opdef.operands)
    operands: list[Any] = []
    attrs_in: dict[str, Any] = {}
    positional = list(args)
    if opdef.variadic:
        fixed = n_ops - 1
        if len(positional) < fixed:
            raise IRTypeError(f"R.{name} expects at least {fixed} operands "
                              f"({', '.join(opdef.operands)}), got {len(positional)}")
        operands = positional[:fixed] + [list(positional[fixed:])]
        positional = []
    else:
        operands = positional[:n_ops]
        extra = positional[n_ops:]
        # Extra positional arguments fill attributes in declaration order.
        for spec, value in zip(opdef.attrs, extra):
            attrs_in[spec.name] = value
        if len(extra) > len(opdef.attrs):
            raise IRTypeError(f"R.{name} takes {n_ops} operands and {len(opdef.attrs)} "
                              f"attributes, got {len(args)} positional arguments")
    for key, value in kwargs.items():
        if key in opdef.operands:
            idx = opdef.operands.index(key)
            while len(operands) <= idx:
                operands.append(_MISSING)
            if operands[idx] is not _MISSING:
                raise IRTypeError(f"R.{name}: operand {key!r} given twice")
            operands[idx] = value
            continue
        if opdef.attr(key) is None:
            known = [a.name for a in opdef.attrs] + list(opdef.operands)
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise IRTypeError(f"R.{name} has no argument {key!r}{hint} (arguments: "
                              f"{', '.join(known) or 'none'})")
        if key in attrs_in:
            raise IRTypeError(f"R.{name}: attribute {key!r} given twice")
        attrs_in[key] = value
    n_required = n_ops
    if opdef.optional:
        # Trailing optional operands may be left out or given as None.
        n_required = n_ops - len(opdef.optional)
        while len(operands) > n_required and (operands[-1] is _MISSING or operands[-1] is None):
            operands.pop()
    missing = [n for n, v in zip(opdef.operands, operands) if v is _MISSING]
    if len(operands) < n_required:
        missing += list(opdef.operands[len(operands):n_required])
    if missing:
        raise IRTypeError(f"R.{name} is missing operand(s) {', '.join(missing)} "
                          f"(expects {', '.join(opdef.operands)})")
    attrs: dict[str, Any] = {}
    sinfo_args: list[Any] = []
    for spec in opdef.attrs:
        if spec.name in attrs_in:
            value = attrs_in[spec.name]
            if spec.convert is not None:
                value = spec.convert(value, name, spec.name)
        elif spec.required:
            raise IRTypeError(f"R.{name} needs the attribute {spec.name!r}")
        else:
            value = spec.default
        if spec.sinfo:
            if value is None:
                continue
            sinfo_args.extend(value if isinstance(value, (list, tuple)) else [value])
        else:
            attrs[spec.name] = value
    return operands, attrs, sinfo_args


# ---------------------------------------------------------------------------------
# Attribute converters: (value, op_name, attr_name) -> canonical value
# ---------------------------------------------------------------------------------


def _err(op: str, attr: str, what: str, value: Any) -> IRTypeError:
    return IRTypeError(f"R.{op}: attribute {attr} must be {what}, got {value!r}")


def _py_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, IntImm):
        return value.value
    try:
        if isinstance(value, np.integer):
            return int(value)
    except ImportError:  # pragma: no cover
        pass
    return None


def conv_int(value: Any, op: str, attr: str) -> int:
    """An int attribute."""
    v = _py_int(value)
    if v is None:
        raise _err(op, attr, "an integer", value)
    return v


def conv_float(value: Any, op: str, attr: str) -> float:
    """A float attribute (ints accepted)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if isinstance(value, (FloatImm, IntImm)):
            return float(value.value)
        raise _err(op, attr, "a number", value)
    return float(value)


def conv_bool(value: Any, op: str, attr: str) -> bool:
    """A bool attribute."""
    if isinstance(value, bool):
        return value
    if _py_int(value) in (0, 1):
        return bool(_py_int(value))
    raise _err(op, attr, "True or False", value)


def conv_str(value: Any, op: str, attr: str) -> str:
    """A string attribute."""
    if not isinstance(value, str):
        raise _err(op, attr, "a string", value)
    return value


def conv_opt_str(value: Any, op: str, attr: str) -> str | None:
    """A string attribute or None."""
    return None if value is None else conv_str(value, op, attr)


def conv_dtype(value: Any, op: str, attr: str) -> str:
    """A dtype string; ``None``, ``""`` and ``"void"`` mean "same as the input" and are
    stored as ``"void"`` (the printed spelling)."""
    if value is None or value == "" or value == "void":
        return "void"
    if not isinstance(value, str):
        raise _err(op, attr, "a dtype string", value)
    try:
        dt.check(value)
    except IRTypeError:
        raise _err(op, attr, "a dtype such as 'float32'", value) from None
    return value


def conv_choice(*choices: str) -> Callable[[Any, str, str], str]:
    """A converter accepting one of ``choices``."""
    def conv(value: Any, op: str, attr: str) -> str:
        if value not in choices:
            raise _err(op, attr, f"one of {', '.join(map(repr, choices))}", value)
        return value

    return conv


def conv_layout(value: Any, op: str, attr: str) -> str:
    """A layout string such as ``NCHW``."""
    if not isinstance(value, str) or not value.isalnum():
        raise _err(op, attr, "a layout string such as 'NCHW'", value)
    return value


def conv_sinfo(value: Any, op: str, attr: str) -> Any:
    """A struct info value."""
    items = value if isinstance(value, (list, tuple)) else [value]
    for v in items:
        if not isinstance(v, StructInfo):
            raise _err(op, attr, "struct info such as R.Tensor((1, 4), 'float32')", v)
    return list(items)


def make_call(name: str, *args: Any, span: Any = None, **kwargs: Any):
    """Build ``Call(Op.get(name), ...)`` from operands and attributes (not normalized:
    ``struct_info`` is filled in by ``BlockBuilder.normalize``)."""
    operands, attrs, sinfo_args = bind_call_args(name, args, kwargs)
    canonicalize = get_op_def(name).extra.get("canonicalize")
    if canonicalize is not None:
        operands, attrs, sinfo_args = canonicalize(list(operands), attrs, list(sinfo_args))
    exprs = []
    for opname, value in zip(get_op_def(name).operands, operands):
        if isinstance(value, list):
            bad = next((v for v in value if not isinstance(v, Expr)), None)
            if bad is not None:
                raise IRTypeError(f"R.{name}: operand {opname} must be a tuple of graph "
                                  f"expressions, got {type(bad).__name__} {bad!r} in it",
                                  span=span)
            value = Tuple(fields=tuple(value))
        if not isinstance(value, Expr):
            raise IRTypeError(f"R.{name}: operand {opname} must be a graph expression, got "
                              f"{type(value).__name__} {value!r}", span=span)
        exprs.append(value)
    return Call(op=Op.get(name), args=tuple(exprs), attrs=attrs,
                sinfo_args=tuple(sinfo_args), span=span)

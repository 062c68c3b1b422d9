"""Graph-level expressions (Relax style): variables, calls of operators and functions,
tuples, shapes, constants, control flow, binding blocks and functions.

A normalized expression carries its ``struct_info`` (see ``struct_info.py``);
``BlockBuilder`` fills it in. Graph variables are compared by binding position.
"""

from __future__ import annotations

import difflib
from typing import Any, ClassVar, Iterable

import numpy as np

from ..core import dtype as dt
from ..core.diagnostics import IRTypeError
from ..core.expr import BaseExpr, GlobalVar
from ..core.node import Node, node
from ..tir.expr import PrimExpr
from .struct_info import (
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
    shape_of,
)

# The base of graph expressions and GlobalVar live in the core (an IRModule is keyed by
# GlobalVars whatever level its functions are); the graph IR calls the base ``Expr``.
Expr = BaseExpr


@node
class Var(Expr):
    """A graph variable (function parameter or binding target)."""

    name_hint: str
    _sequal_ignore: ClassVar[frozenset[str]] = frozenset({"span", "name_hint"})
    _sequal_binding: ClassVar[bool] = True


@node
class DataflowVar(Var):
    """A variable bound inside a dataflow block and not visible outside it."""


def _name_and_struct_info_by_position(cls: type) -> None:
    """Let ``cls(name_hint, struct_info)`` be written positionally, as TVM's
    ``relax.Var("x", R.Tensor((2, 3), "float32"))`` is; every field stays a keyword."""
    init = cls.__init__

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if len(args) > 2:
            raise IRTypeError(f"{cls.__name__}(name_hint, struct_info, ...) takes at most 2 "
                              f"positional arguments, got {len(args)}; give the others by "
                              "keyword")
        for key, value in zip(("name_hint", "struct_info"), args):
            if key in kwargs:
                raise IRTypeError(f"{cls.__name__}: {key} given both by position and by "
                                  "keyword")
            kwargs[key] = value
        sinfo = kwargs.get("struct_info")
        if sinfo is not None and not isinstance(sinfo, StructInfo):
            raise IRTypeError(f"{cls.__name__} {kwargs.get('name_hint')!r}: struct_info must "
                              f"be a StructInfo (irc.ir.TensorStructInfo(...), "
                              f"irc.ir.tensor_sinfo(shape, dtype), ...), got "
                              f"{type(sinfo).__name__} {sinfo!r}")
        init(self, **kwargs)

    __init__.__doc__ = init.__doc__
    cls.__init__ = __init__  # type: ignore[misc]


_name_and_struct_info_by_position(Var)
_name_and_struct_info_by_position(DataflowVar)


@node
class Op(Expr):
    """A registered operator, e.g. ``Op.get("nn.conv2d")``; one object per name."""

    name: str

    _REGISTRY: ClassVar[dict[str, Op]] = {}

    @staticmethod
    def get(name: str) -> Op:
        """The operator named ``name`` (registered by ``irc.ir.op.register_op``); an
        unknown name raises with the closest registered names."""
        op = Op._REGISTRY.get(name)
        if op is None:
            raise unknown_operator(name, Op._REGISTRY)
        return op


def unknown_operator(name: str, known: Iterable[str]) -> IRTypeError:
    """The error for an operator name that is not registered, with close matches."""
    close = difflib.get_close_matches(name, list(known), n=3)
    hint = f"; did you mean {', '.join('R.' + c for c in close)}?" if close else ""
    return IRTypeError(f"unknown operator R.{name}{hint}")


@node
class ExternFunc(Expr):
    """A function provided by the runtime or a library, called by its symbol name."""

    global_symbol: str


@node
class Constant(Expr):
    """A constant tensor (weights, folded values)."""

    data: np.ndarray

    @staticmethod
    def from_numpy(array: Any, dtype: str | None = None) -> Constant:
        """A constant of ``array`` converted to ``dtype`` (default: the array's). bfloat16
        data is held as its uint16 bits: a uint16 array (or ml_dtypes' bfloat16) given
        for bfloat16 is taken as those bits, other arrays are rounded to bfloat16."""
        arr = np.asarray(array)
        if dtype == "bfloat16" or (dtype is None and arr.dtype.name == "bfloat16"):
            bits = arr.view(np.uint16) if arr.dtype.name in ("uint16", "bfloat16") else \
                dt.bfloat16_bits(arr)
            return Constant(data=bits, struct_info=TensorStructInfo(shape=shape_of(bits.shape),
                                                                    dtype="bfloat16"))
        if dtype is not None:
            arr = arr.astype(dt.to_numpy(dtype))
        sinfo = TensorStructInfo(shape=shape_of(arr.shape), dtype=dt.from_numpy(arr.dtype))
        return Constant(data=arr, struct_info=sinfo)


@node
class Tuple(Expr):
    """A tuple of values: ``(a, b)``."""

    fields: tuple[Expr, ...]


@node
class TupleGetItem(Expr):
    """Field ``index`` of a tuple: ``t[0]``."""

    tuple_value: Expr
    index: int


@node
class ShapeExpr(Expr):
    """A shape value built from integer expressions."""

    values: tuple[PrimExpr, ...]


@node
class PrimValue(Expr):
    """A scalar loop-IR value used at graph level."""

    value: PrimExpr


@node
class StringImm(Expr):
    """A string constant (``R.str(...)``)."""

    value: str


@node
class DataTypeImm(Expr):
    """A dtype constant (``R.dtype(...)``)."""

    value: str


@node
class Call(Expr):
    """A call of an operator (``Op``), a module function (``GlobalVar``), an external
    function (``ExternFunc``) or a function value. ``attrs`` are the operator's
    attributes (declared in its registry entry); ``sinfo_args`` are struct-info arguments
    (``out_sinfo`` of ``call_tir``)."""

    op: Expr
    args: tuple[Expr, ...]
    attrs: dict[str, Any] = None  # type: ignore[assignment]
    sinfo_args: tuple[StructInfo, ...] = ()

    def __post_init__(self) -> None:
        if self.attrs is None:
            object.__setattr__(self, "attrs", {})


@node
class If(Expr):
    """``true_branch`` when ``cond`` holds, else ``false_branch``."""

    cond: Expr
    true_branch: Expr
    false_branch: Expr


@node
class Binding(Node):
    """Base of bindings: what defines ``var``."""

    var: Var


@node
class VarBinding(Binding):
    """``var = value``."""

    value: Expr


@node
class MatchCast(Binding):
    """``var = R.match_cast(value, struct_info)``: checks ``value`` at run time and binds
    the symbolic variables of ``struct_info``."""

    value: Expr
    struct_info: StructInfo


@node
class BindingBlock(Node):
    """A sequence of bindings (outside dataflow)."""

    bindings: tuple[Binding, ...]


@node
class DataflowBlock(BindingBlock):
    """Bindings without side effects (``with R.dataflow():``)."""


@node
class SeqExpr(Expr):
    """Binding blocks followed by a result expression."""

    blocks: tuple[BindingBlock, ...]
    body: Expr


@node
class Function(Expr):
    """A graph-level function. ``attrs`` include e.g. ``num_input`` (parameters after
    the first ``num_input`` are weights), ``global_symbol``, ``Primitive``, ``Codegen``."""

    params: tuple[Var, ...]
    body: Expr
    ret_struct_info: StructInfo
    is_pure: bool = True
    attrs: dict[str, Any] = None  # type: ignore[assignment]

    _sequal_scope: ClassVar[bool] = True  # its variables are its own (closures see outer ones)

    def __post_init__(self) -> None:
        if self.attrs is None:
            object.__setattr__(self, "attrs", {})

    def with_attr(self, key: str, value: Any) -> Function:
        return self.replace(attrs={**self.attrs, key: value})


def const(value: Any, dtype: str | None = None) -> Constant:
    """A constant tensor from a Python number, list or numpy array."""
    if dtype is None and isinstance(value, float):
        dtype = "float32"
    if dtype is None and isinstance(value, bool):
        dtype = "bool"
    elif dtype is None and isinstance(value, int):
        dtype = "int64"
    return Constant.from_numpy(value, dtype)


def sinfo_of_value(value: Any) -> StructInfo:
    """Struct info of a Python-level constant description (used by the parser)."""
    if isinstance(value, np.ndarray):
        return TensorStructInfo(shape=shape_of(value.shape), dtype=dt.from_numpy(value.dtype))
    if isinstance(value, (tuple, list)):
        return TupleStructInfo(fields=tuple(sinfo_of_value(v) for v in value))
    return ObjectStructInfo()


__all__ = [
    "Expr", "Var", "DataflowVar", "GlobalVar", "Op", "ExternFunc", "Constant", "Tuple",
    "TupleGetItem", "ShapeExpr", "PrimValue", "StringImm", "DataTypeImm", "Call", "If",
    "Binding", "VarBinding", "MatchCast", "BindingBlock", "DataflowBlock", "SeqExpr",
    "Function", "const", "PrimStructInfo", "ShapeStructInfo",
]

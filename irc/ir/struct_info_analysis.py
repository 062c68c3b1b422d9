"""Analyses of struct info: base-of relation, least common ancestor, symbolic variables,
and the names shape inference uses for symbolic arithmetic.

Dimensions are int64 loop-IR expressions compared with the polynomial normal form of
:mod:`irc.tir.arith.polynomial` (re-exported here: ``simplify`` is its ``normalize``,
with ``prove_equal``, ``prove_not_equal``, ``const_value``, ``exact_divide`` and
``shape_product``). Two dimensions are *provably equal* when their difference normalizes
to zero, *provably different* when it is a non-zero constant; everything in between is
"unknown": inference trusts the program and leaves the check to run time.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

from ..core.node import Node, node_fields
from ..tir import expr as E
from ..tir.arith.polynomial import (
    const_value,
    exact_divide,
    prove_equal,
    prove_not_equal,
    shape_product,
)
from ..tir.arith.polynomial import normalize as simplify
from ..tir.expr import IntImm, PrimExpr
from .struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)

# ---------------------------------------------------------------------------------
# Substitution of symbolic variables
# ---------------------------------------------------------------------------------


def substitute(e: PrimExpr, mapping: Mapping[E.Var, PrimExpr]) -> PrimExpr:
    """``e`` with variables replaced by ``mapping`` (keys compared by identity), rebuilt
    with the folding operators of :mod:`irc.tir.expr`."""
    if not mapping:
        return e
    by_id = {id(k): v for k, v in mapping.items()}
    return _subst(e, by_id)


_REBUILD: dict[type, Callable[[Any, Any], PrimExpr]] = {
    E.Add: E.add, E.Sub: E.sub, E.Mul: E.mul, E.FloorDiv: E.floordiv,
    E.FloorMod: E.floormod, E.Min: E.min_, E.Max: E.max_, E.Div: E.div,
    E.Mod: E.truncmod,
}


def _subst(e: PrimExpr, by_id: dict[int, PrimExpr]) -> PrimExpr:
    if isinstance(e, E.Var):
        return by_id.get(id(e), e)
    if isinstance(e, (IntImm, E.FloatImm, E.StringImm)):
        return e
    rebuild = _REBUILD.get(type(e))
    if rebuild is not None:
        a, b = _subst(e.a, by_id), _subst(e.b, by_id)
        return e if (a is e.a and b is e.b) else rebuild(a, b)
    if isinstance(e, E.Cast):
        v = _subst(e.value, by_id)
        return e if v is e.value else E.cast(v, e.dtype)
    changes = {}
    for f in node_fields(type(e)):
        v = getattr(e, f)
        if isinstance(v, PrimExpr):
            nv = _subst(v, by_id)
            if nv is not v:
                changes[f] = nv
        elif isinstance(v, tuple) and v and all(isinstance(x, PrimExpr) for x in v):
            nt = tuple(_subst(x, by_id) for x in v)
            if any(x is not y for x, y in zip(nt, v)):
                changes[f] = nt
    return e.replace(**changes) if changes else e


# ---------------------------------------------------------------------------------
# Formatting for messages
# ---------------------------------------------------------------------------------

_INFIX = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.FloorDiv: "//", E.FloorMod: "%",
          E.Div: "/"}


def format_dim(e: PrimExpr | int) -> str:
    """A short human-readable form of a dimension: ``256``, ``n``, ``n * 4 + 1``."""
    if isinstance(e, int):
        return str(e)
    if isinstance(e, IntImm):
        return str(e.value)
    if isinstance(e, E.Var):
        return e.name
    op = _INFIX.get(type(e))
    if op is not None:
        return f"{_paren(e.a)} {op} {_paren(e.b)}"
    if isinstance(e, (E.Min, E.Max)):
        return f"{type(e).__name__.lower()}({format_dim(e.a)}, {format_dim(e.b)})"
    if isinstance(e, E.Cast):
        return format_dim(e.value)
    if isinstance(e, E.FloatImm):
        return repr(e.value)
    return type(e).__name__


def _paren(e: PrimExpr) -> str:
    s = format_dim(e)
    return f"({s})" if type(e) in _INFIX else s


def format_shape(shape: Sequence[PrimExpr | int] | None) -> str:
    """``(1, 256)``, ``(10,)``, ``(n, 784)``; ``?`` for an unknown shape."""
    if shape is None:
        return "?"
    parts = [format_dim(d) for d in shape]
    if len(parts) == 1:
        return f"({parts[0]},)"
    return "(" + ", ".join(parts) + ")"


def format_sinfo(s: StructInfo | None) -> str:
    """Struct info in the script's notation, for error messages."""
    if s is None:
        return "<no struct info>"
    if isinstance(s, TensorStructInfo):
        dtype = f', "{s.dtype}"' if s.dtype else ""
        if s.shape is not None:
            return f"R.Tensor({format_shape(s.shape)}{dtype})"
        if s.ndim >= 0:
            return f"R.Tensor(ndim={s.ndim}{dtype})"
        return f"R.Tensor({s.dtype and repr(s.dtype)})"
    if isinstance(s, TupleStructInfo):
        return "R.Tuple(" + ", ".join(format_sinfo(f) for f in s.fields) + ")"
    if isinstance(s, ShapeStructInfo):
        if s.values is not None:
            return "R.Shape([" + ", ".join(format_dim(v) for v in s.values) + "])"
        return f"R.Shape(ndim={s.ndim})"
    if isinstance(s, PrimStructInfo):
        if s.value is not None:
            return f"R.Prim(value={format_dim(s.value)})"
        return f'R.Prim("{s.dtype}")'
    if isinstance(s, FuncStructInfo):
        return "R.Callable"
    return "R.Object"


# ---------------------------------------------------------------------------------
# Struct-info relations
# ---------------------------------------------------------------------------------


def broadcast_dims(shapes: Sequence[Sequence[PrimExpr]]) -> tuple[PrimExpr | None, ...] | None:
    """Numpy broadcasting of several shapes, right-aligned; None when two dimensions are
    provably different and neither is 1.

    Per output dimension: provably equal dimensions give that dimension; a constant 1
    gives the other; a symbolic dimension against a constant ``c != 1`` gives ``c`` (the
    only outcomes that pass the run-time check are ``1`` and ``c``, both giving ``c``).
    Two different symbolic dimensions give ``None`` (unknown: either may be 1 at run
    time).
    """
    ndim = max(len(s) for s in shapes)
    out: list[PrimExpr | None] = []
    for k in range(ndim):
        dims = [s[len(s) - ndim + k] for s in shapes if len(s) - ndim + k >= 0]
        non_one = [d for d in dims if const_value(d) != 1]
        constants = {const_value(d) for d in non_one} - {None}
        if len(constants) > 1 or (len(constants) == 1 and any(
                prove_not_equal(d, next(iter(constants))) and prove_not_equal(d, 1)
                for d in non_one)):
            return None
        if constants:
            out.append(E.const(constants.pop(), "int64"))
        elif not non_one:
            out.append(E.const(1, "int64"))
        elif all(prove_equal(non_one[0], d) for d in non_one[1:]):
            out.append(non_one[0])
        else:
            out.append(None)
    return tuple(out)


def _dims_equal(a: Sequence[PrimExpr] | None, b: Sequence[PrimExpr] | None) -> bool:
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(prove_equal(x, y) for x, y in zip(a, b))


def is_base_of(base: StructInfo, derived: StructInfo) -> bool:
    """True when every value described by ``derived`` is also described by ``base``:
    ``R.Tensor(ndim=2)`` is a base of ``R.Tensor((1, 256), "float32")`` and
    ``R.Object`` of anything. Dimensions must be provably equal."""
    if isinstance(base, ObjectStructInfo):
        return True
    if type(base) is not type(derived):
        return False
    if isinstance(base, TensorStructInfo):
        if base.dtype and base.dtype != derived.dtype:
            return False
        if base.ndim >= 0 and base.ndim != derived.ndim:
            return False
        if base.vdevice is not None and base.vdevice != derived.vdevice:
            return False
        if base.shape is not None:
            return derived.shape is not None and _dims_equal(base.shape, derived.shape)
        return True
    if isinstance(base, ShapeStructInfo):
        if base.ndim >= 0 and base.ndim != derived.ndim:
            return False
        if base.values is not None:
            return derived.values is not None and _dims_equal(base.values, derived.values)
        return True
    if isinstance(base, PrimStructInfo):
        if base.dtype != derived.dtype:
            return False
        if base.value is None:
            return True
        return derived.value is not None and prove_equal(base.value, derived.value)
    if isinstance(base, TupleStructInfo):
        return len(base.fields) == len(derived.fields) and all(
            is_base_of(b, d) for b, d in zip(base.fields, derived.fields))
    if isinstance(base, FuncStructInfo):
        if base.purity and not derived.purity:
            return False
        if not is_base_of(base.ret, derived.ret):
            return False
        if base.params is None:
            return True
        if derived.params is None or len(base.params) != len(derived.params):
            return False
        # Parameters are contravariant: the derived function accepts at least as much.
        return all(is_base_of(d, b) for b, d in zip(base.params, derived.params))
    return False


def may_match(a: StructInfo, b: StructInfo) -> bool:
    """False only when no value can be described by both ``a`` and ``b`` (different kinds,
    ranks, dtypes, or provably different dimensions); used to reject impossible casts."""
    if isinstance(a, ObjectStructInfo) or isinstance(b, ObjectStructInfo):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, TensorStructInfo):
        if a.dtype and b.dtype and a.dtype != b.dtype:
            return False
        if a.ndim >= 0 and b.ndim >= 0 and a.ndim != b.ndim:
            return False
        if a.shape is not None and b.shape is not None:
            return not any(prove_not_equal(x, y) for x, y in zip(a.shape, b.shape))
        return True
    if isinstance(a, ShapeStructInfo):
        if a.ndim >= 0 and b.ndim >= 0 and a.ndim != b.ndim:
            return False
        if a.values is not None and b.values is not None:
            return not any(prove_not_equal(x, y) for x, y in zip(a.values, b.values))
        return True
    if isinstance(a, PrimStructInfo):
        return a.dtype == b.dtype
    if isinstance(a, TupleStructInfo):
        return len(a.fields) == len(b.fields) and all(
            may_match(x, y) for x, y in zip(a.fields, b.fields))
    return True


def struct_info_lca(a: StructInfo, b: StructInfo) -> StructInfo:
    """The most specific struct info that is a base of both ``a`` and ``b`` (what the
    result of ``if c: a else: b`` is known to be)."""
    if type(a) is not type(b) or isinstance(a, ObjectStructInfo):
        return ObjectStructInfo()
    if isinstance(a, TensorStructInfo):
        dtype = a.dtype if a.dtype == b.dtype else ""
        ndim = a.ndim if a.ndim == b.ndim else -1
        shape = a.shape if (a.shape is not None and _dims_equal(a.shape, b.shape)) else None
        vdevice = a.vdevice if a.vdevice == b.vdevice else None
        if dtype == a.dtype and ndim == a.ndim and shape is a.shape and vdevice == a.vdevice:
            return a
        return TensorStructInfo(shape=shape, dtype=dtype, ndim=ndim, vdevice=vdevice)
    if isinstance(a, ShapeStructInfo):
        if a.ndim != b.ndim:
            return ShapeStructInfo(ndim=-1)
        if a.values is not None and _dims_equal(a.values, b.values):
            return a
        return ShapeStructInfo(ndim=a.ndim)
    if isinstance(a, PrimStructInfo):
        if a.dtype != b.dtype:
            return ObjectStructInfo()
        if a.value is not None and b.value is not None and prove_equal(a.value, b.value):
            return a
        return PrimStructInfo(dtype=a.dtype)
    if isinstance(a, TupleStructInfo):
        if len(a.fields) != len(b.fields):
            return ObjectStructInfo()
        fields = tuple(struct_info_lca(x, y) for x, y in zip(a.fields, b.fields))
        if all(f is x for f, x in zip(fields, a.fields)):
            return a
        return TupleStructInfo(fields=fields)
    if isinstance(a, FuncStructInfo):
        if is_base_of(a, b):
            return a
        if is_base_of(b, a):
            return b
        return FuncStructInfo(params=None, ret=struct_info_lca(a.ret, b.ret),
                              purity=a.purity and b.purity)
    return ObjectStructInfo()


# ---------------------------------------------------------------------------------
# Symbolic variables
# ---------------------------------------------------------------------------------


def _collect_vars(e: Any, out: dict[int, E.Var]) -> None:
    if isinstance(e, E.Var):
        out.setdefault(id(e), e)
        return
    if isinstance(e, Node):
        for f in node_fields(type(e)):
            if f != "span":
                _collect_vars(getattr(e, f), out)
    elif isinstance(e, (tuple, list)):
        for x in e:
            _collect_vars(x, out)


def expr_vars(e: PrimExpr) -> list[E.Var]:
    """The loop-IR variables in ``e``, in order of first appearance."""
    out: dict[int, E.Var] = {}
    _collect_vars(e, out)
    return list(out.values())


def _sinfo_exprs(s: StructInfo) -> list[PrimExpr]:
    if isinstance(s, TensorStructInfo):
        return list(s.shape or ())
    if isinstance(s, ShapeStructInfo):
        return list(s.values or ())
    if isinstance(s, PrimStructInfo):
        return [s.value] if s.value is not None else []
    if isinstance(s, TupleStructInfo):
        return [e for f in s.fields for e in _sinfo_exprs(f)]
    if isinstance(s, FuncStructInfo):
        out = [e for p in (s.params or ()) for e in _sinfo_exprs(p)]
        return out + _sinfo_exprs(s.ret)
    return []


def get_shape_vars(sinfo: StructInfo) -> list[E.Var]:
    """The symbolic variables used in ``sinfo`` (shapes, shape values, prim values), in
    order of first appearance, without repeats."""
    out: dict[int, E.Var] = {}
    for e in _sinfo_exprs(sinfo):
        _collect_vars(e, out)
    return list(out.values())


def get_defining_shape_vars(sinfo: StructInfo) -> list[E.Var]:
    """The symbolic variables that ``sinfo`` *defines* when matched against a value:
    those that appear as a whole dimension (``n`` in ``(n, 4)``, not in ``(n * 2,)``)."""
    out: dict[int, E.Var] = {}
    for e in _sinfo_exprs(sinfo):
        if isinstance(e, E.Var):
            out.setdefault(id(e), e)
    return list(out.values())


def static_shape(sinfo: StructInfo) -> tuple[int, ...] | None:
    """The shape of a tensor (or the values of a shape) as Python ints when all are
    constants, else None."""
    dims = None
    if isinstance(sinfo, TensorStructInfo):
        dims = sinfo.shape
    elif isinstance(sinfo, ShapeStructInfo):
        dims = sinfo.values
    if dims is None:
        return None
    out = []
    for d in dims:
        v = const_value(d)
        if v is None:
            return None
        out.append(v)
    return tuple(out)


def erase_to_well_defined(sinfo: StructInfo, defined: Callable[[E.Var], bool] | Iterable[E.Var]) \
        -> StructInfo:
    """``sinfo`` with every shape (or prim value) that mentions a variable not ``defined``
    forgotten (keeping rank and dtype), so it is meaningful outside the variable's scope."""
    if callable(defined):
        is_defined = defined
    else:
        ids = {id(v) for v in defined}
        is_defined = lambda v: id(v) in ids

    def ok(exprs: Iterable[PrimExpr]) -> bool:
        return all(is_defined(v) for e in exprs for v in expr_vars(e))

    if isinstance(sinfo, TensorStructInfo):
        if sinfo.shape is not None and not ok(sinfo.shape):
            return TensorStructInfo(dtype=sinfo.dtype, ndim=sinfo.ndim, vdevice=sinfo.vdevice)
        return sinfo
    if isinstance(sinfo, ShapeStructInfo):
        if sinfo.values is not None and not ok(sinfo.values):
            return ShapeStructInfo(ndim=sinfo.ndim)
        return sinfo
    if isinstance(sinfo, PrimStructInfo):
        if sinfo.value is not None and not ok([sinfo.value]):
            return PrimStructInfo(dtype=sinfo.dtype)
        return sinfo
    if isinstance(sinfo, TupleStructInfo):
        fields = tuple(erase_to_well_defined(f, is_defined) for f in sinfo.fields)
        if all(a is b for a, b in zip(fields, sinfo.fields)):
            return sinfo
        return TupleStructInfo(fields=fields)
    if isinstance(sinfo, FuncStructInfo):
        ret = erase_to_well_defined(sinfo.ret, is_defined)
        return sinfo if ret is sinfo.ret else sinfo.replace(ret=ret)
    return sinfo


def substitute_sinfo(sinfo: StructInfo, mapping: Mapping[E.Var, PrimExpr]) -> StructInfo:
    """``sinfo`` with symbolic variables replaced by ``mapping`` (dimensions simplified)."""
    if not mapping:
        return sinfo

    def sub(dims: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        return tuple(simplify(substitute(d, mapping)) for d in dims)

    if isinstance(sinfo, TensorStructInfo):
        return sinfo if sinfo.shape is None else sinfo.replace(shape=sub(sinfo.shape))
    if isinstance(sinfo, ShapeStructInfo):
        return sinfo if sinfo.values is None else sinfo.replace(values=sub(sinfo.values))
    if isinstance(sinfo, PrimStructInfo):
        if sinfo.value is None:
            return sinfo
        return sinfo.replace(value=simplify(substitute(sinfo.value, mapping)))
    if isinstance(sinfo, TupleStructInfo):
        return TupleStructInfo(fields=tuple(substitute_sinfo(f, mapping) for f in sinfo.fields))
    if isinstance(sinfo, FuncStructInfo):
        params = None if sinfo.params is None else tuple(
            substitute_sinfo(p, mapping) for p in sinfo.params)
        return FuncStructInfo(params=params, ret=substitute_sinfo(sinfo.ret, mapping),
                              purity=sinfo.purity)
    return sinfo


def bind_shape_vars(param: StructInfo, arg: StructInfo, mapping: dict[E.Var, PrimExpr]) -> \
        str | None:
    """Match a parameter's struct info against an argument's, recording in ``mapping``
    the value of every symbolic variable the parameter defines. Returns a reason string
    when they provably cannot match, else None."""
    if isinstance(param, ObjectStructInfo):
        return None
    if type(param) is not type(arg):
        if isinstance(arg, ObjectStructInfo):
            return None
        return f"expected {format_sinfo(param)}, got {format_sinfo(arg)}"
    if isinstance(param, TensorStructInfo):
        if param.dtype and arg.dtype and param.dtype != arg.dtype:
            return f"expected dtype {param.dtype}, got {arg.dtype}"
        if param.ndim >= 0 and arg.ndim >= 0 and param.ndim != arg.ndim:
            return f"expected rank {param.ndim}, got rank {arg.ndim}"
        return _bind_dims(param.shape, arg.shape, mapping)
    if isinstance(param, ShapeStructInfo):
        if param.ndim >= 0 and arg.ndim >= 0 and param.ndim != arg.ndim:
            return f"expected a shape of {param.ndim} values, got {arg.ndim}"
        return _bind_dims(param.values, arg.values, mapping)
    if isinstance(param, PrimStructInfo):
        if param.dtype != arg.dtype:
            return f"expected a {param.dtype} scalar, got {arg.dtype}"
        if param.value is not None and arg.value is not None:
            return _bind_dims((param.value,), (arg.value,), mapping)
        return None
    if isinstance(param, TupleStructInfo):
        if len(param.fields) != len(arg.fields):
            return f"expected a tuple of {len(param.fields)} fields, got {len(arg.fields)}"
        for p, a in zip(param.fields, arg.fields):
            why = bind_shape_vars(p, a, mapping)
            if why:
                return why
    return None


def _bind_dims(params: Sequence[PrimExpr] | None, args: Sequence[PrimExpr] | None,
               mapping: dict[E.Var, PrimExpr]) -> str | None:
    if params is None or args is None:
        return None
    for p, a in zip(params, args):
        if isinstance(p, E.Var) and p not in mapping:
            mapping[p] = a
            continue
        expected = simplify(substitute(p, mapping))
        if prove_not_equal(expected, a):
            return (f"expected shape {format_shape(params)}, got {format_shape(args)} "
                    f"({format_dim(expected)} != {format_dim(a)})")
    return None


__all__ = [
    "simplify", "prove_equal", "prove_not_equal", "const_value", "shape_product",
    "exact_divide", "substitute", "format_dim", "format_shape", "format_sinfo", "is_base_of",
    "may_match", "struct_info_lca", "expr_vars", "get_shape_vars", "get_defining_shape_vars",
    "static_shape", "erase_to_well_defined", "substitute_sinfo", "bind_shape_vars",
]

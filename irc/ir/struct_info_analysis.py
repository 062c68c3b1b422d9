"""Analyses of struct info: base-of relation, least common ancestor, symbolic variables,
and the small symbolic arithmetic that shape inference needs.

Dimensions are int64 loop-IR expressions. Two dimensions are *provably equal* when their
difference normalizes to zero as a polynomial over the symbolic variables (floor
division and modulo by constants, ``min``/``max`` and other operators are treated as
opaque atoms whose operands are normalized too), and *provably different* when that
difference is a non-zero constant. Everything in between is "unknown": inference
trusts the program and leaves the check to run time.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

from ..core import dtype as dt
from ..core.node import Node, node_fields
from ..tir import expr as te
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
# Polynomial normal form of integer expressions
# ---------------------------------------------------------------------------------

# A polynomial maps a monomial (a sorted tuple of atom keys, repeated for powers) to its
# integer coefficient. Atom keys are tuples that sort deterministically: variables by
# name, then by order of first appearance, so rebuilt expressions print the same on every
# run.
_Poly = dict

class _Canon:
    """Converts expressions to polynomials and back, remembering each atom's expression."""

    def __init__(self) -> None:
        self.atoms: dict[tuple, PrimExpr] = {}
        self.var_index: dict[int, int] = {}

    def _var_key(self, v: te.Var) -> tuple:
        index = self.var_index.setdefault(id(v), len(self.var_index))
        return ("", v.name, index)  # "" sorts variables before other atoms

    # -- to polynomial --------------------------------------------------------------
    def poly(self, e: PrimExpr) -> _Poly:
        if isinstance(e, IntImm):
            return {(): e.value} if e.value else {}
        if isinstance(e, te.Var):
            key = self._var_key(e)
            self.atoms[key] = e
            return {(key,): 1}
        if isinstance(e, te.Add):
            return _padd(self.poly(e.a), self.poly(e.b))
        if isinstance(e, te.Sub):
            return _padd(self.poly(e.a), _pscale(self.poly(e.b), -1))
        if isinstance(e, te.Mul):
            return _pmul(self.poly(e.a), self.poly(e.b))
        if isinstance(e, te.Cast) and dt.is_integer(e.dtype) and dt.is_integer(e.value.dtype):
            return self.poly(e.value)
        if isinstance(e, (te.FloorDiv, te.FloorMod, te.Min, te.Max)):
            return self._opaque_binary(e)
        key = ("x", id(e))
        self.atoms[key] = e
        return {(key,): 1}

    def _opaque_binary(self, e: Any) -> _Poly:
        pa, pb = self.poly(e.a), self.poly(e.b)
        ca, cb = _pconst(pa), _pconst(pb)
        if ca is not None and cb is not None:
            if isinstance(e, te.FloorDiv) and cb != 0:
                return _pc(ca // cb)
            if isinstance(e, te.FloorMod) and cb != 0:
                return _pc(ca % cb)
            if isinstance(e, te.Min):
                return _pc(min(ca, cb))
            if isinstance(e, te.Max):
                return _pc(max(ca, cb))
        if isinstance(e, (te.FloorDiv, te.FloorMod)) and cb is not None and cb > 0:
            # (cb * q + rest) // cb == q + rest // cb, and the same rest is left modulo cb.
            q: _Poly = {}
            rest: _Poly = {}
            for m, c in pa.items():
                if m == ():
                    q = _padd(q, _pc(c // cb))
                    rest = _padd(rest, _pc(c % cb))
                elif c % cb == 0:
                    q[m] = c // cb
                else:
                    rest[m] = c
            if rest and _pconst(rest) is None:
                if not q:
                    pa = rest  # nothing to take out: keep the opaque atom below
                else:
                    inner = self._atom(type(e), rest, pb)
                    return _padd(q, inner) if isinstance(e, te.FloorDiv) else inner
            else:
                return q if isinstance(e, te.FloorDiv) else rest
        if isinstance(e, (te.Min, te.Max)) and pa == pb:
            return pa
        return self._atom(type(e), pa, pb)

    def _atom(self, cls: type, pa: _Poly, pb: _Poly) -> _Poly:
        fa, fb = _freeze(pa), _freeze(pb)
        if cls in (te.Min, te.Max) and fb < fa:
            fa, fb = fb, fa
            pa, pb = pb, pa
        key = (cls.__name__, fa, fb)
        if key not in self.atoms:
            rebuild = {"FloorDiv": te.floordiv, "FloorMod": te.floormod,
                       "Min": te.min_, "Max": te.max_}[cls.__name__]
            self.atoms[key] = rebuild(self.expr(pa), self.expr(pb))
        return {(key,): 1}

    # -- back to an expression ----------------------------------------------------
    def expr(self, p: _Poly) -> PrimExpr:
        # Positive terms first (``n - m`` rather than ``-1 * m + n``), higher degree first.
        terms = sorted((m for m in p if m), key=lambda m: (p[m] < 0, -len(m), m))
        result: PrimExpr | None = None
        const = p.get((), 0)
        if terms and p[terms[0]] < 0 and const > 0:
            result = _i64(const)
            const = 0
        for m in terms:
            c = p[m]
            mono: PrimExpr = self.atoms[m[0]]
            for k in m[1:]:
                mono = mono * self.atoms[k]
            if result is None:
                result = mono if c == 1 else mono * _i64(c)
            elif c > 0:
                result = result + (mono if c == 1 else mono * _i64(c))
            else:
                result = result - (mono if c == -1 else mono * _i64(-c))
        if result is None:
            return _i64(const)
        if const > 0:
            return result + _i64(const)
        if const < 0:
            return result - _i64(-const)
        return result


def _i64(v: int) -> PrimExpr:
    return IntImm(dtype="int64", value=v)


def _pc(v: int) -> _Poly:
    return {(): v} if v else {}


def _pconst(p: _Poly) -> int | None:
    if not p:
        return 0
    if len(p) == 1 and () in p:
        return p[()]
    return None


def _padd(a: _Poly, b: _Poly) -> _Poly:
    out = dict(a)
    for m, c in b.items():
        v = out.get(m, 0) + c
        if v:
            out[m] = v
        else:
            out.pop(m, None)
    return out


def _pscale(a: _Poly, k: int) -> _Poly:
    return {m: c * k for m, c in a.items()} if k else {}


def _pmul(a: _Poly, b: _Poly) -> _Poly:
    out: _Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            out = _padd(out, {tuple(sorted(ma + mb)): ca * cb})
    return out


def _freeze(p: _Poly) -> tuple:
    return tuple(sorted(p.items()))


def _as_expr(value: PrimExpr | int) -> PrimExpr:
    return _i64(value) if isinstance(value, int) else value


def simplify(e: PrimExpr | int) -> PrimExpr:
    """``e`` rebuilt from its polynomial normal form (constants folded, like terms
    collected, exact divisions by constants carried out): ``(n + 2 - 3) // 1 + 1`` is
    ``n``. Non-integer expressions are returned unchanged."""
    e = _as_expr(e)
    if isinstance(e, (IntImm, te.Var)) or not dt.is_integer(e.dtype):
        return e
    canon = _Canon()
    out = canon.expr(canon.poly(e))
    if out.dtype != e.dtype and isinstance(out, IntImm):
        return IntImm(dtype=e.dtype, value=out.value)
    return out


def _difference(a: PrimExpr, b: PrimExpr) -> _Poly:
    canon = _Canon()
    return _padd(canon.poly(a), _pscale(canon.poly(b), -1))


def prove_equal(a: PrimExpr | int, b: PrimExpr | int) -> bool:
    """True when the integer expressions ``a`` and ``b`` are equal for every value of their
    symbolic variables (as far as the polynomial normal form shows)."""
    a, b = _as_expr(a), _as_expr(b)
    if a is b:
        return True
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value == b.value
    return not _difference(a, b)


def prove_not_equal(a: PrimExpr | int, b: PrimExpr | int) -> bool:
    """True when ``a`` and ``b`` provably differ (their difference is a non-zero constant)."""
    a, b = _as_expr(a), _as_expr(b)
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value != b.value
    if a is b:
        return False
    c = _pconst(_difference(a, b))
    return c is not None and c != 0


def const_value(e: PrimExpr | int) -> int | None:
    """The integer value of ``e`` when it is a constant after normalization, else None."""
    if isinstance(e, int):
        return e
    if isinstance(e, IntImm):
        return e.value
    if not dt.is_integer(e.dtype):
        return None
    return _pconst(_Canon().poly(e))


def shape_product(dims: Iterable[PrimExpr | int]) -> PrimExpr:
    """The product of ``dims`` as a simplified int64 expression (1 for no dimensions)."""
    result: PrimExpr = _i64(1)
    for d in dims:
        result = result * _as_expr(d)
    return simplify(result)


def exact_divide(a: PrimExpr | int, b: PrimExpr | int) -> PrimExpr | None:
    """``a / b`` when the division is exact as polynomials (``4*n*784 / 784`` is ``4*n``),
    else None. Division by zero gives None."""
    canon = _Canon()
    pa, pb = canon.poly(_as_expr(a)), canon.poly(_as_expr(b))
    if len(pb) != 1:
        return None
    ((mb, cb),) = pb.items()
    out: _Poly = {}
    for m, c in pa.items():
        rest = list(m)
        for k in mb:
            if k not in rest:
                return None
            rest.remove(k)
        if c % cb:
            return None
        out[tuple(rest)] = c // cb
    return canon.expr(out)


def substitute(e: PrimExpr, mapping: Mapping[te.Var, PrimExpr]) -> PrimExpr:
    """``e`` with variables replaced by ``mapping`` (keys compared by identity), rebuilt
    with the folding operators of :mod:`irc.tir.expr`."""
    if not mapping:
        return e
    by_id = {id(k): v for k, v in mapping.items()}
    return _subst(e, by_id)


_REBUILD: dict[type, Callable[[Any, Any], PrimExpr]] = {
    te.Add: te.add, te.Sub: te.sub, te.Mul: te.mul, te.FloorDiv: te.floordiv,
    te.FloorMod: te.floormod, te.Min: te.min_, te.Max: te.max_, te.Div: te.div,
    te.Mod: te.truncmod,
}


def _subst(e: PrimExpr, by_id: dict[int, PrimExpr]) -> PrimExpr:
    if isinstance(e, te.Var):
        return by_id.get(id(e), e)
    if isinstance(e, (IntImm, te.FloatImm, te.StringImm)):
        return e
    rebuild = _REBUILD.get(type(e))
    if rebuild is not None:
        a, b = _subst(e.a, by_id), _subst(e.b, by_id)
        return e if (a is e.a and b is e.b) else rebuild(a, b)
    if isinstance(e, te.Cast):
        v = _subst(e.value, by_id)
        return e if v is e.value else te.cast(v, e.dtype)
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

_INFIX = {te.Add: "+", te.Sub: "-", te.Mul: "*", te.FloorDiv: "//", te.FloorMod: "%",
          te.Div: "/"}


def format_dim(e: PrimExpr | int) -> str:
    """A short human-readable form of a dimension: ``256``, ``n``, ``n * 4 + 1``."""
    if isinstance(e, int):
        return str(e)
    if isinstance(e, IntImm):
        return str(e.value)
    if isinstance(e, te.Var):
        return e.name
    op = _INFIX.get(type(e))
    if op is not None:
        return f"{_paren(e.a)} {op} {_paren(e.b)}"
    if isinstance(e, (te.Min, te.Max)):
        return f"{type(e).__name__.lower()}({format_dim(e.a)}, {format_dim(e.b)})"
    if isinstance(e, te.Cast):
        return format_dim(e.value)
    if isinstance(e, te.FloatImm):
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


def _collect_vars(e: Any, out: dict[int, te.Var]) -> None:
    if isinstance(e, te.Var):
        out.setdefault(id(e), e)
        return
    if isinstance(e, Node):
        for f in node_fields(type(e)):
            if f != "span":
                _collect_vars(getattr(e, f), out)
    elif isinstance(e, (tuple, list)):
        for x in e:
            _collect_vars(x, out)


def expr_vars(e: PrimExpr) -> list[te.Var]:
    """The loop-IR variables in ``e``, in order of first appearance."""
    out: dict[int, te.Var] = {}
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


def get_shape_vars(sinfo: StructInfo) -> list[te.Var]:
    """The symbolic variables used in ``sinfo`` (shapes, shape values, prim values), in
    order of first appearance, without repeats."""
    out: dict[int, te.Var] = {}
    for e in _sinfo_exprs(sinfo):
        _collect_vars(e, out)
    return list(out.values())


def get_defining_shape_vars(sinfo: StructInfo) -> list[te.Var]:
    """The symbolic variables that ``sinfo`` *defines* when matched against a value:
    those that appear as a whole dimension (``n`` in ``(n, 4)``, not in ``(n * 2,)``)."""
    out: dict[int, te.Var] = {}
    for e in _sinfo_exprs(sinfo):
        if isinstance(e, te.Var):
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


def erase_to_well_defined(sinfo: StructInfo, defined: Callable[[te.Var], bool] | Iterable[te.Var]) \
        -> StructInfo:
    """``sinfo`` with every shape (or prim value) that mentions a variable not ``defined``
    forgotten (keeping rank and dtype), so it is meaningful outside the variable's scope."""
    if callable(defined):
        is_defined = defined
    else:
        ids = {id(v) for v in defined}
        is_defined = lambda v: id(v) in ids  # noqa: E731 - a one-line predicate

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


def substitute_sinfo(sinfo: StructInfo, mapping: Mapping[te.Var, PrimExpr]) -> StructInfo:
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


def bind_shape_vars(param: StructInfo, arg: StructInfo, mapping: dict[te.Var, PrimExpr]) -> \
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
               mapping: dict[te.Var, PrimExpr]) -> str | None:
    if params is None or args is None:
        return None
    for p, a in zip(params, args):
        if isinstance(p, te.Var) and p not in mapping:
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

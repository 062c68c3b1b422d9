"""Shared helpers of the LLVM code generator: dtype to LLVM type mapping, intrinsic name
mangling, and small analyses of index expressions (known multiples, ramp matching).

Every irc dtype has two LLVM representations:

- the *value* type, used for SSA values in registers: ``bool`` is ``i1``; ``float16`` and
  ``bfloat16`` are computed in ``float`` (rounded back to 16 bits after each operation);
- the *storage* type, used in memory: ``bool`` is ``i8``, ``float16`` is ``half`` and
  ``bfloat16`` is ``i16`` (its raw bits).
"""

from __future__ import annotations

import math
from functools import lru_cache

from ..core import dtype as dt
from ..core.diagnostics import CodegenError
from ..core.functor import Visitor
from ..tir import expr as E
from .llvm_builder import elem_type, lanes_of, vec

_SCALAR_VALUE = {
    "bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "i8", "uint16": "i16", "uint32": "i32", "uint64": "i64",
    "float16": "float", "bfloat16": "float", "float32": "float", "float64": "double",
    "handle": "ptr",
}
_SCALAR_STORAGE = {**_SCALAR_VALUE, "bool": "i8", "float16": "half", "bfloat16": "i16"}


@lru_cache(maxsize=None)
def value_type(dtype: str) -> str:
    """LLVM type of a value of ``dtype`` in registers."""
    if dtype == "void":
        return "void"
    d = dt.parse(dtype)
    scalar = _SCALAR_VALUE.get(dt.element_of(dtype) if d.lanes > 1 else dtype)
    if scalar is None:
        raise CodegenError(f"the LLVM code generator does not support dtype {dtype!r}")
    return vec(scalar, d.lanes)


@lru_cache(maxsize=None)
def storage_type(dtype: str) -> str:
    """LLVM type of a value of ``dtype`` in memory."""
    d = dt.parse(dtype)
    scalar = _SCALAR_STORAGE.get(dt.element_of(dtype) if d.lanes > 1 else dtype)
    if scalar is None:
        raise CodegenError(f"the LLVM code generator does not support dtype {dtype!r}")
    return vec(scalar, d.lanes)


def is_half(dtype: str) -> bool:
    """float16 or bfloat16 (computed in float32, rounded after each operation)."""
    e = dt.element_of(dtype)
    return e == "float16" or e == "bfloat16"


@lru_cache(maxsize=None)
def mangle(ty: str) -> str:
    """The overload suffix of an LLVM intrinsic for type ``ty`` (``f32``, ``v16f32``...)."""
    e = elem_type(ty)
    base = {"float": "f32", "double": "f64", "half": "f16", "ptr": "p0"}.get(e, e)
    n = lanes_of(ty)
    return base if n == 1 else f"v{n}{base}"


# -- index analysis -------------------------------------------------------------------------

_BIG = 1 << 20


def known_multiple(e: E.PrimExpr, env: dict[int, int]) -> int:
    """The largest integer known to divide ``e`` (``env`` gives it for bound variables)."""
    t = type(e)
    if t is E.IntImm:
        return abs(e.value) if e.value != 0 else _BIG
    if t is E.Var:
        return env.get(id(e), 1)
    if t is E.Add or t is E.Sub or t is E.Min or t is E.Max:
        return math.gcd(known_multiple(e.a, env), known_multiple(e.b, env))
    if t is E.Mul:
        return min(_BIG, known_multiple(e.a, env) * known_multiple(e.b, env))
    if t is E.Cast:
        return known_multiple(e.value, env)
    if t is E.Select:
        return math.gcd(known_multiple(e.true_value, env), known_multiple(e.false_value, env))
    if t is E.Let:
        return known_multiple(e.body, {**env, id(e.var): known_multiple(e.value, env)})
    if t is E.Call and e.op == "shift_left":
        shift = E.as_int(e.args[1])
        if shift is not None and 0 <= shift < 20:
            return min(_BIG, known_multiple(e.args[0], env) << shift)
    return 1


def pow2_alignment(multiple: int, itemsize: int, cap: int) -> int:
    """The alignment in bytes of an element index known to be a multiple of ``multiple``
    in a buffer aligned to ``cap`` bytes."""
    nbytes = multiple * itemsize
    align = nbytes & -nbytes  # largest power of two dividing nbytes
    return max(1, min(cap, align))


def as_ramp(e: E.PrimExpr) -> tuple[E.PrimExpr, E.PrimExpr, int] | None:
    """``(base, stride, lanes)`` when the vector index ``e`` is affine in the lane number
    (a Ramp, a Broadcast, or sums/products of those with scalars), else None."""
    t = type(e)
    if t is E.Ramp:
        return e.base, e.stride, e.lanes
    if t is E.Broadcast:
        return e.value, E.const(0, e.value.dtype), e.lanes
    if t is E.Add or t is E.Sub:
        a, b = as_ramp(e.a), as_ramp(e.b)
        if a is None or b is None or a[2] != b[2]:
            return None
        if t is E.Add:
            return E.add(a[0], b[0]), E.add(a[1], b[1]), a[2]
        return E.sub(a[0], b[0]), E.sub(a[1], b[1]), a[2]
    if t is E.Mul:
        a, b = as_ramp(e.a), as_ramp(e.b)
        if a is None or b is None or a[2] != b[2]:
            return None
        # Only a ramp times a broadcast stays affine.
        if _is_zero(b[1]):
            return E.mul(a[0], b[0]), E.mul(a[1], b[0]), a[2]
        if _is_zero(a[1]):
            return E.mul(a[0], b[0]), E.mul(b[1], a[0]), a[2]
    return None


def _is_zero(e: E.PrimExpr) -> bool:
    return isinstance(e, E.IntImm) and e.value == 0


def flat_index(buffer, indices: tuple[E.PrimExpr, ...]) -> E.PrimExpr:
    """The element offset of ``buffer[indices]`` from the buffer's data pointer.

    Lowered IR indexes 1-D buffers, so this is ``indices[0]`` (plus the element offset);
    N-D accesses are flattened here with the buffer's strides (row-major when it has
    none), keeping a vector index affine so it still becomes a vector load.
    """
    if any(not isinstance(i, E.PrimExpr) for i in indices):
        indices = tuple(E.convert(i, "int32") for i in indices)
    if len(indices) == 1:
        flat = indices[0]
    elif len(indices) == 0:
        flat = E.const(0, "int32")
    else:
        strides = buffer.strides or _row_major_strides(buffer.shape)
        flat = None
        for idx, stride in zip(indices, strides):
            term = _scale(idx, stride)
            flat = term if flat is None else _add(flat, term)
    if buffer.elem_offset is not None and not _is_zero(buffer.elem_offset):
        flat = _add(flat, buffer.elem_offset)
    return flat


def _row_major_strides(shape):
    strides = []
    acc = None
    for s in reversed(shape):
        strides.append(E.const(1, s.dtype) if acc is None else acc)
        acc = s if acc is None else E.mul(acc, s)
    return list(reversed(strides))


def _scale(idx: E.PrimExpr, stride: E.PrimExpr) -> E.PrimExpr:
    if E.is_const_int(stride, 1):
        return idx
    if dt.lanes(idx.dtype) > 1:
        r = as_ramp(idx)
        if r is not None:
            return E.Ramp(dtype=idx.dtype, base=E.mul(r[0], stride), stride=E.mul(r[1], stride),
                          lanes=r[2])
        return E.mul(idx, E.Broadcast(dtype=idx.dtype, value=E.cast(stride, dt.element_of(
            idx.dtype)), lanes=dt.lanes(idx.dtype)))
    return E.mul(idx, stride)


def _add(a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
    la, lb = dt.lanes(a.dtype), dt.lanes(b.dtype)
    if la == 1 and lb == 1:
        return E.add(a, b)
    ra = as_ramp(a) if la > 1 else (a, E.const(0, a.dtype), lb)
    rb = as_ramp(b) if lb > 1 else (b, E.const(0, b.dtype), la)
    if ra is not None and rb is not None and ra[2] == rb[2]:
        return E.Ramp(dtype=dt.with_lanes(E.add(ra[0], rb[0]).dtype, ra[2]),
                      base=E.add(ra[0], rb[0]), stride=E.add(ra[1], rb[1]), lanes=ra[2])
    return E.add(a, b)


_SCALAR_BYTES = {"i1": 1, "i8": 1, "i16": 2, "half": 2, "i32": 4, "float": 4, "i64": 8,
                 "double": 8, "ptr": 8}


def natural_align(ty: str) -> int:
    """The ABI alignment of an LLVM type (vectors: their size, up to 64 bytes)."""
    n = lanes_of(ty)
    size = _SCALAR_BYTES[elem_type(ty)]
    if n == 1:
        return size
    total = size * n
    return min(64, total & -total)


class _VarCollector(Visitor):
    def __init__(self) -> None:
        self.seen: dict[int, E.Var] = {}

    def visit_Var(self, v: E.Var) -> None:
        if id(v) not in self.seen:
            self.seen[id(v)] = v


def referenced_vars(node) -> list[E.Var]:
    """Every variable referenced under ``node`` (buffer data pointers included), in
    traversal order."""
    c = _VarCollector()
    c.visit(node)
    return list(c.seen.values())

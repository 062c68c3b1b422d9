"""Helpers to write lowered loop IR by hand in codegen/runtime tests."""

from __future__ import annotations

import numpy as np

import irc
from irc import tir
from irc.ir import dtype as dt
from irc.tir import expr as E
from irc.tir import stmt as S


def buf(name: str, shape, dtype: str = "float32", strides=()) -> tir.Buffer:
    """A buffer with a fresh data pointer (shape entries: ints or Vars)."""
    return tir.decl_buffer(shape, dtype, name, strides=strides)


def func(params, body: S.Stmt, *, name: str = "main", noalias: bool = True) -> S.PrimFunc:
    """A PrimFunc whose parameters are buffers (by handle) and scalar Vars, in order."""
    vars_, bmap = [], {}
    for p in params:
        if isinstance(p, tir.Buffer):
            h = tir.var(p.name + "_handle", "handle")
            vars_.append(h)
            bmap[h] = p
        else:
            vars_.append(p)
    attrs = {"global_symbol": name}
    if noalias:
        attrs["tir.noalias"] = True
    return S.PrimFunc(params=tuple(vars_), buffer_map=bmap, body=body, attrs=attrs)


def loop(var: E.Var, extent, body: S.Stmt, kind: str = "serial", start=0, **kw) -> S.For:
    return S.For(loop_var=var, min=tir.convert(start, var.dtype),
                 extent=tir.convert(extent, var.dtype), kind=kind, body=body, **kw)


def store(b: tir.Buffer, index, value) -> S.BufferStore:
    idx = index if isinstance(index, tuple) else (index,)
    idx = tuple(tir.convert(x, "int32") for x in idx)
    return S.BufferStore(buffer=b, value=tir.convert(value, b.dtype), indices=idx)


def ramp(base, lanes: int, stride=1) -> E.Ramp:
    base = tir.convert(base, "int32")
    return E.Ramp(dtype=dt.with_lanes(base.dtype, lanes), base=base,
                  stride=tir.convert(stride, base.dtype), lanes=lanes)


def bcast(value, lanes: int) -> E.Broadcast:
    value = tir.convert(value)
    return E.Broadcast(dtype=dt.with_lanes(value.dtype, lanes), value=value, lanes=lanes)


def run(f: S.PrimFunc, *args, target="llvm"):
    """Build ``f`` and call it on numpy arrays (modified in place); returns the module."""
    mod = irc.build(f, target=target)
    mod[f.attrs["global_symbol"]](*args)
    return mod


def rand(shape, dtype: str, rng=None, low=-4, high=4) -> np.ndarray:
    """Random test data of an irc dtype (bfloat16 as raw bits of rounded floats)."""
    rng = rng or np.random.default_rng(0)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "bfloat16":
        return to_bf16_bits(rng.uniform(low, high, shape).astype(np.float32))
    npd = np.dtype(dtype)
    if npd.kind in "iu":
        info = np.iinfo(npd)
        lo, hi = max(info.min, low * 8), min(info.max, high * 8)
        return rng.integers(lo, hi + 1, shape).astype(npd)
    return rng.uniform(low, high, shape).astype(npd)


def to_bf16_bits(x: np.ndarray) -> np.ndarray:
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(b: np.ndarray) -> np.ndarray:
    return (b.astype(np.uint32) << 16).view(np.float32)

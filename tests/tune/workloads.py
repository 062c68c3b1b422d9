"""Small workloads for the tuning tests, and hand-tiled schedules built directly as loop
IR (the tests of the tuning infrastructure do not depend on the schedule language)."""

from __future__ import annotations

import math

from irc import te, tir
from irc.tir import stmt as S
from irc.tir.expr import Var, const


def matmul(n: int = 64, m: int | None = None, k: int | None = None,
           dtype: str = "float32") -> tir.PrimFunc:
    """``C = A @ B`` as a block-form PrimFunc."""
    m = n if m is None else m
    k = n if k is None else k
    a = te.placeholder((n, k), name="A", dtype=dtype)
    b = te.placeholder((k, m), name="B", dtype=dtype)
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    return te.create_prim_func([a, b, c])


def matmul_add(n: int = 64) -> tir.PrimFunc:
    """Seed 002's ``matmul_add``: ``out = A @ B + C``."""
    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    c = te.placeholder((n, n), name="C")
    r = te.reduce_axis((0, n), name="k")
    mm = te.compute((n, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="matmul")
    out = te.compute((n, n), lambda i, j: mm[i, j] + c[i, j], name="out")
    return te.create_prim_func([a, b, c, out])


def add_one(n: int = 64, value: float = 1.0) -> tir.PrimFunc:
    """``B = A + value``."""
    a = te.placeholder((n,), name="A")
    b = te.compute((n,), lambda i: a[i] + value, name="B")
    return te.create_prim_func([a, b])


def _nest(names_extents_kinds, body: S.Stmt, annotations: dict | None = None) -> S.Stmt:
    for idx, (var, extent, kind) in reversed(list(enumerate(names_extents_kinds))):
        ann = annotations if idx == 0 and annotations else {}
        body = S.For(loop_var=var, min=const(0), extent=const(extent), kind=kind, body=body,
                     annotations=dict(ann))
    return body


def tiled_matmul(n: int = 512, tile_i=(8, 4, 4, 4), tile_j=(8, 2, 2, 16), tile_k=(128, 4),
                 parallel: bool = True, vectorize: bool = True, unroll_step: int = 16
                 ) -> tir.PrimFunc:
    """A matmul with an SSRSRS tiling (``i0 j0 i1 j1 k0 i2 j2 k1 i3 j3``), the outer loop
    parallel and the inner loop vectorized: what a 3-level tiled schedule produces."""
    if math.prod(tile_i) != n or math.prod(tile_j) != n or math.prod(tile_k) != n:
        raise ValueError("tile sizes must multiply to n")
    base = matmul(n)
    root = base.body
    loop = root.block.body
    realize = loop.body.body.body
    iv = {name: [Var(name=f"{name}{t}", dtype="int32") for t in range(len(tiles))]
          for name, tiles in (("i", tile_i), ("j", tile_j), ("k", tile_k))}

    def binding(vars_, tiles):
        expr = const(0)
        for v, t in zip(vars_, tiles):
            expr = expr * t + v
        return expr

    bound = realize.replace(iter_values=(binding(iv["i"], tile_i), binding(iv["j"], tile_j),
                                         binding(iv["k"], tile_k)))
    i, j, k = iv["i"], iv["j"], iv["k"]
    order = [(i[0], tile_i[0], "parallel" if parallel else "serial"), (j[0], tile_j[0], "serial"),
             (i[1], tile_i[1], "serial"), (j[1], tile_j[1], "serial"),
             (k[0], tile_k[0], "serial"), (i[2], tile_i[2], "serial"),
             (j[2], tile_j[2], "serial"), (k[1], tile_k[1], "serial"),
             (i[3], tile_i[3], "serial"),
             (j[3], tile_j[3], "vectorized" if vectorize else "serial")]
    ann = {"pragma_auto_unroll_max_step": unroll_step} if unroll_step else None
    body = _nest(order, bound, ann)
    return base.replace(body=root.replace(block=root.block.replace(body=body)))


def perfect_tiles(n: int, parts: int, rng) -> tuple[int, ...]:
    """A random factorization of ``n`` into ``parts`` factors (a sampled perfect tile)."""
    factors = []
    rest = n
    for _ in range(parts - 1):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0]
        d = int(rng.choice(divisors))
        factors.append(d)
        rest //= d
    factors.append(rest)
    rng.shuffle(factors)
    return tuple(factors)

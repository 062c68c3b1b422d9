"""Small workloads for the tuning tests, and hand-tiled schedules built directly as loop
IR (the tests of the tuning infrastructure do not depend on the schedule language)."""

from __future__ import annotations

import math

from irc import te, tir
from irc.tir import stmt as S
from irc.tir.expr import Var, const
from irc.tir.schedule import Schedule


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


# ---------------------------------------------------------------------------------------
# Candidates that misbehave
# ---------------------------------------------------------------------------------------


def _extern(name: str) -> S.Stmt:
    return S.Evaluate(value=tir.Call(dtype="int32", op="call_extern",
                                     args=(tir.StringImm(value=name),)))


def calls_abort(func: tir.PrimFunc) -> tir.PrimFunc:
    """``func`` preceded by a call to libc's ``abort`` (the process dies of SIGABRT)."""
    return func.replace(body=S.seq(_extern("abort"), func.body))


def writes_out_of_bounds(func: tir.PrimFunc) -> tir.PrimFunc:
    """``func`` preceded by a store far outside its first buffer (a segfault)."""
    buf = func.buffers[0]
    far = S.BufferStore(buffer=buf, value=tir.const(1.0, buf.dtype),
                        indices=tuple(tir.const(1 << 40, "int64") for _ in buf.shape))
    return func.replace(body=S.seq(far, func.body))


def hangs(func: tir.PrimFunc) -> tir.PrimFunc:
    """``func`` preceded by ``while True: pass``."""
    loop = S.While(condition=tir.const(True), body=S.Evaluate(value=tir.const(0)))
    return func.replace(body=S.seq(loop, func.body))


def calls_missing_function(func: tir.PrimFunc) -> tir.PrimFunc:
    """``func`` calling an external function no library provides (fails to build)."""
    return func.replace(body=S.seq(_extern("irc_test_no_such_function"), func.body))


def replace_with_add_two(func: tir.PrimFunc, target) -> tir.PrimFunc:
    """A builder postprocessor (``"tune_workloads:replace_with_add_two"``) that swaps the
    function for ``B = A + 2`` of the same size."""
    n = int(func.buffers[0].shape[0])
    return add_one(n, 2.0)


def tiling_trace(func: tir.PrimFunc, seed: int = 0, block: str = "C") -> list:
    """The JSON trace of a random SSRSRS tiling of ``block`` (parallel outer loop,
    vectorized inner loop) sampled with ``irc.tir.Schedule``."""
    sch = Schedule(func, seed=seed)
    b = sch.get_block(block)
    i, j, k = sch.get_loops(b)
    i_t = sch.split(i, sch.sample_perfect_tile(i, 4))
    j_t = sch.split(j, sch.sample_perfect_tile(j, 4, max_innermost_factor=16))
    k_t = sch.split(k, sch.sample_perfect_tile(k, 2))
    sch.reorder(i_t[0], j_t[0], i_t[1], j_t[1], k_t[0], i_t[2], j_t[2], k_t[1], i_t[3], j_t[3])
    sch.parallel(i_t[0])
    sch.vectorize(j_t[3])
    return sch.trace.to_json()


def slow_add_one(n: int = 64, reps: int = 1_000_000) -> tir.PrimFunc:
    """``B = A + 1`` computed ``reps`` times over (``B[i] = B[i] * 0 + A[i] + 1`` cannot be
    optimized away): a workload whose unscheduled function is slow while ``add_one`` is a
    fast, correct candidate for it. Written directly in lowered form."""
    base = add_one(n)
    a, b = base.buffers
    i = Var(name="i", dtype="int32")
    r = Var(name="r", dtype="int32")
    value = b[i] * tir.const(0.0, "float32") + a[i] + tir.const(1.0, "float32")
    body = S.For(loop_var=i, min=const(0), extent=const(n), kind="serial",
                 body=S.For(loop_var=r, min=const(0), extent=const(reps), kind="serial",
                            body=S.BufferStore(buffer=b, value=value, indices=(i,))))
    return base.replace(body=body)

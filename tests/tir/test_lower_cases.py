"""Block-form functions built with irc.tir constructors, shared by the lowering tests
(and checked here to be well-formed block IR)."""

from __future__ import annotations

from irc import tir
from irc.ir import collect
from irc.tir import (
    Block,
    BlockRealize,
    BufferStore,
    For,
    IterVar,
    PrimFunc,
    Range,
    const,
    decl_buffer,
    seq,
    var,
)
from irc.tir.analysis import detect_block_access_regions, undefined_vars

TRUE = const(True)


def loop(v, extent, body, kind="serial", annotations=None, start=0):
    """``for v in range(start, start + extent)``."""
    return For(loop_var=v, min=const(start, v.dtype), extent=const(extent, v.dtype), kind=kind,
               body=body, annotations=annotations or {})


def block(name, iters, body_fn, init_fn=None, alloc=(), predicate=TRUE):
    """A BlockRealize; ``iters`` is a list of ``(name, "S" | "R", extent, binding)``;
    ``body_fn``/``init_fn`` receive the block's iteration variables. Regions are detected
    (as the parser does when ``T.reads``/``T.writes`` are omitted)."""
    ivs = []
    for n, kind, extent, _ in iters:
        v = var(n)
        ivs.append(IterVar(var=v, dom=Range.from_min_extent(0, extent),
                           iter_type="spatial" if kind == "S" else "reduce"))
    vs = [iv.var for iv in ivs]
    b = Block(name=name, iter_vars=tuple(ivs), reads=(), writes=(), body=body_fn(*vs),
              init=None if init_fn is None else init_fn(*vs), alloc_buffers=tuple(alloc))
    reads, writes = detect_block_access_regions(b)
    b = b.replace(reads=tuple(reads), writes=tuple(writes))
    return BlockRealize(iter_values=tuple(const(x) if isinstance(x, int) else x
                                          for _, _, _, x in iters),
                        predicate=predicate, block=b)


def func(params, body, alloc=()):
    """A PrimFunc over buffer parameters with a root block."""
    root = Block(name="root", iter_vars=(), reads=(), writes=(), body=body,
                 alloc_buffers=tuple(alloc))
    handles = [var(b.name, "handle") for b in params]
    return PrimFunc(params=tuple(handles), buffer_map=dict(zip(handles, params)),
                    body=BlockRealize(iter_values=(), predicate=TRUE, block=root),
                    attrs={"global_symbol": "main", "tir.noalias": True})


def matmul(n=16, m=12, k=8):
    """``C = A @ B`` in plain block form (one block, init)."""
    A = decl_buffer((n, k), "float32", "A")
    B = decl_buffer((k, m), "float32", "B")
    C = decl_buffer((n, m), "float32", "C")
    i, j, r = var("i"), var("j"), var("k")
    b = block("C", [("vi", "S", n, i), ("vj", "S", m, j), ("vk", "R", k, r)],
              lambda vi, vj, vk: BufferStore(buffer=C, indices=(vi, vj),
                                             value=C[vi, vj] + A[vi, vk] * B[vk, vj]),
              lambda vi, vj, vk: BufferStore(buffer=C, indices=(vi, vj),
                                             value=const(0.0, "float32")))
    return func([A, B, C], loop(i, n, loop(j, m, loop(r, k, b))))


def tiled_matmul_add(n=64, m=64, k=32, ti=16, tj=16, tk=4, unroll=16, vectorize=True):
    """``out = A @ B + C`` scheduled like seed 002: i/j outer tiles fused into a parallel
    loop, the matmul stage computed at that loop into an intermediate buffer, reduction
    split, inner j loops vectorized, an auto-unroll pragma on the tile loop."""
    A = decl_buffer((n, k), "float32", "A")
    B = decl_buffer((k, m), "float32", "B")
    C = decl_buffer((n, m), "float32", "C")
    out = decl_buffer((n, m), "float32", "out")
    mm = decl_buffer((n, m), "float32", "matmul")
    nj = m // tj
    f, ko, ii, ki, ji = var("i_j_fused"), var("k_outer"), var("i_inner"), var("k_inner"), \
        var("j_inner")
    ii2, ji2 = var("i_inner_1"), var("j_inner_1")
    inner_kind = "vectorized" if vectorize else "serial"
    mm_block = block(
        "matmul",
        [("vi", "S", n, f // nj * ti + ii), ("vj", "S", m, f % nj * tj + ji),
         ("vk", "R", k, ko * tk + ki)],
        lambda vi, vj, vk: BufferStore(buffer=mm, indices=(vi, vj),
                                       value=mm[vi, vj] + A[vi, vk] * B[vk, vj]),
        lambda vi, vj, vk: BufferStore(buffer=mm, indices=(vi, vj), value=const(0.0)))
    out_block = block(
        "out", [("vi", "S", n, f // nj * ti + ii2), ("vj", "S", m, f % nj * tj + ji2)],
        lambda vi, vj: BufferStore(buffer=out, indices=(vi, vj), value=mm[vi, vj] + C[vi, vj]))
    reduction = loop(ko, k // tk, loop(ii, ti, loop(ki, tk, loop(ji, tj, mm_block,
                                                                 kind=inner_kind))),
                     annotations={"pragma_auto_unroll_max_step": unroll} if unroll else None)
    epilogue = loop(ii2, ti, loop(ji2, tj, out_block, kind=inner_kind))
    body = loop(f, (n // ti) * nj, seq(reduction, epilogue), kind="parallel")
    return func([A, B, C, out], body, alloc=[mm])


def test_builders_make_closed_block_functions():
    for f in (matmul(), tiled_matmul_add()):
        assert undefined_vars(f) == []
        assert isinstance(f.body, BlockRealize) and f.body.block.name == "root"


def test_tiled_matmul_block_regions():
    f = tiled_matmul_add()
    blocks = [n for n in tir_blocks(f.body) if n.name == "matmul"]
    (mm,) = blocks
    assert [r.buffer.name for r in mm.reads] == ["A", "B"]
    assert [r.buffer.name for r in mm.writes] == ["matmul"]


def tir_blocks(stmt):
    return collect(stmt, lambda x: type(x) is tir.Block)



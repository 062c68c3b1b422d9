"""Layout primitives: transform_layout and layout_rewrite of a weight.

transform_layout gives a buffer a new shape through an index map that must be a
bijection of the old shape onto the new one (affine in the indices: checked with the
iteration-map detector); every load, store and region of the buffer in the function
follows. Rewriting a parameter changes the function's signature.

layout_rewrite (seed 002's ``layout_free_placeholders``) does the same for a weight
parameter marked layout-free (``attrs["layout_free_buffers"]``), and records the
rewrite in the function attribute ``layout_rewrite``: a list of
``{"param": index, "original_shape": [...], "index_map": "lambda ..."}``. The caller
packs the weight once, outside the kernel, with :func:`pack_weight` (numpy) or the
block-form function :func:`layout_rewrite_preproc`. Without an index map, the new layout
lists the loop digits that index the weight in loop order (outer first), so the
innermost loops walk it contiguously.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ...core.diagnostics import ScheduleError
from ...core.functor import Mutator
from ..arith import Analyzer
from ..buffer import Buffer, BufferRegion
from ..expr import (
    Add,
    BufferLoad,
    FloorDiv,
    FloorMod,
    IntImm,
    IterVar,
    Mul,
    PrimExpr,
    Range,
    Sub,
    Var,
    const,
)
from ..stmt import Block, BlockRealize, BufferStore, For, PrimFunc
from .analysis import fail, loop_domains
from .index_map import IndexMap
from .iter_map import AffineForm, detect, is_bijective
from .rewrite import loads_of, substitute_vars, with_detected_regions
from .state import FuncIndex

REWRITE_ATTR = "layout_rewrite"


def _resolve_buffer(P: str, block: Block, buffer: Any) -> tuple[list, Buffer]:
    """``(["read" | "write", index], buffer)`` for the buffer argument."""
    if isinstance(buffer, (tuple, list)) and len(buffer) == 2 and buffer[0] in ("read",
                                                                                 "write"):
        kind, i = buffer
        regions = block.reads if kind == "read" else block.writes
        if not isinstance(i, int) or not 0 <= i < len(regions):
            fail(P, f"block {block.name!r} has {len(regions)} {kind} buffers; index {i!r} is "
                 "out of range")
        return [kind, i], regions[i].buffer
    for kind, regions in (("write", block.writes), ("read", block.reads)):
        for i, reg in enumerate(regions):
            if reg.buffer is buffer or (isinstance(buffer, str) and reg.buffer.name == buffer):
                return [kind, i], reg.buffer
    fail(P, f"block {block.name!r} does not access buffer {buffer!r}; pass ('read', i), "
         "('write', i), a buffer name or the Buffer")


def _new_shape(P: str, buf: Buffer, imap: IndexMap) -> list[int]:
    """The shape the map gives ``buf``, after checking it is a bijection."""
    shape = []
    for s in buf.shape:
        if type(s) is not IntImm:
            fail(P, f"buffer {buf.name!r} has the symbolic shape {list(buf.shape)}; layout "
                 "transformations need constant shapes")
        shape.append(s.value)
    doms = {id(p): (p, 0, n) for p, n in zip(imap.params, shape)}
    forms = detect(imap.outputs, doms)
    if forms is None:
        fail(P, f"index map {imap.text()} is not affine in the indices of {buf.name!r} (use "
             "+, -, * and // or % by constants that divide the dimensions)")
    extents = []
    for f in forms:
        lo, hi = f.bounds()
        if lo != 0:
            fail(P, f"index map {imap.text()} produces indices starting at {lo}, not 0")
        extents.append(hi + 1)
    if not is_bijective(forms, doms, extents):
        fail(P, f"index map {imap.text()} is not a one-to-one map of the shape {shape} of "
             f"buffer {buf.name!r} onto the shape {extents}",
             hint="every element must keep exactly one place (no padding, no overlap)")
    return extents


class _Relayout(Mutator):
    """Every access to ``old`` goes to ``new`` at the mapped indices; blocks touching it
    get their regions recomputed."""

    def __init__(self, old: Buffer, new: Buffer, imap: IndexMap, simplify: Callable):
        super().__init__()
        self.old, self.new, self.imap, self.simplify = old, new, imap, simplify

    def visit_Buffer(self, b: Buffer) -> Buffer:
        return self.new if b is self.old else b

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        idx = tuple(self.visit(i) for i in e.indices)
        if e.buffer is not self.old:
            return e if all(a is b for a, b in zip(idx, e.indices)) else e.replace(indices=idx)
        return BufferLoad(dtype=e.dtype, buffer=self.new,
                          indices=tuple(self.imap.apply(idx, self.simplify)))

    def visit_BufferStore(self, s: BufferStore):
        value = self.visit(s.value)
        idx = tuple(self.visit(i) for i in s.indices)
        if s.buffer is not self.old:
            return s.replace(value=value, indices=idx)
        return BufferStore(buffer=self.new, value=value,
                           indices=tuple(self.imap.apply(idx, self.simplify)))

    def visit_Block(self, b: Block) -> Block:
        touched = any(r.buffer is self.old for r in b.reads + b.writes)
        if not touched:
            return self.generic_visit(b)
        # Regions of the old buffer have the old rank: drop them before the generic
        # visit and recompute them from the body afterwards, in the declared order.
        like = b
        b = b.replace(reads=tuple(r for r in b.reads if r.buffer is not self.old),
                      writes=tuple(r for r in b.writes if r.buffer is not self.old))
        return with_detected_regions(self.generic_visit(b), like, {id(self.old): self.new})

    def visit_BufferRegion(self, r: BufferRegion) -> BufferRegion:
        if r.buffer is self.old:
            raise ScheduleError(f"transform_layout: buffer {self.old.name!r} is used in a "
                                "match_buffer region, which layout transformations do not "
                                "support")
        return self.generic_visit(r)


def relayout(func: PrimFunc, old: Buffer, shape: list[int], imap: IndexMap,
             simplify: Callable) -> tuple[PrimFunc, Buffer]:
    """``func`` with ``old`` replaced by a buffer of ``shape`` accessed through ``imap``."""
    dtype = old.shape[0].dtype if old.shape else "int32"
    new = Buffer(name=old.name, shape=tuple(const(n, dtype) for n in shape), dtype=old.dtype,
                 data=Var(name=old.name, dtype="handle"), scope=old.scope)
    return _Relayout(old, new, imap, simplify).visit(func), new


def transform_layout(index: FuncIndex, r: BlockRealize, buffer: Any, index_map: Any,
                     analyzer: Analyzer) -> tuple[PrimFunc, list, str]:
    """Rewrite the layout of a buffer of ``r``; returns the function, the buffer spec
    and the index map text (for the trace)."""
    P = "transform_layout"
    spec, buf = _resolve_buffer(P, r.block, buffer)
    imap = IndexMap.of(index_map, len(buf.shape), _index_dtype(buf))
    shape = _new_shape(P, buf, imap)
    func, _ = relayout(index.func, buf, shape, imap, analyzer.simplify)
    return func, spec, imap.text()


def _index_dtype(buf: Buffer) -> str:
    return buf.shape[0].dtype if buf.shape else "int32"


# ---------------------------------------------------------------------------------
# layout_rewrite
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class LayoutRewrite:
    """One rewritten parameter: its position, its shape before, and the index map."""

    param: int
    original_shape: tuple[int, ...]
    index_map: str


def layout_rewrites(func: PrimFunc) -> list[LayoutRewrite]:
    """The layout rewrites recorded on ``func`` (empty when none)."""
    return [LayoutRewrite(int(e["param"]), tuple(int(x) for x in e["original_shape"]),
                          str(e["index_map"])) for e in func.attrs.get(REWRITE_ATTR, [])]


def layout_rewrite(index: FuncIndex, r: BlockRealize, read_index: int, index_map: Any,
                   analyzer: Analyzer) -> tuple[PrimFunc, str]:
    """Rewrite the layout of the layout-free weight ``r`` reads at ``read_index``."""
    P = "layout_rewrite"
    block = r.block
    if not isinstance(read_index, int) or not 0 <= read_index < len(block.reads):
        fail(P, f"block {block.name!r} reads {len(block.reads)} buffers; read index "
             f"{read_index!r} is out of range")
    buf = block.reads[read_index].buffer
    func = index.func
    pidx = next((k for k, p in enumerate(func.params) if func.buffer_map.get(p) is buf), None)
    if pidx is None:
        fail(P, f"buffer {buf.name!r} is not a function parameter; layout_rewrite rewrites "
             "weights passed in", hint="use transform_layout for intermediate buffers")
    if pidx not in list(func.attrs.get("layout_free_buffers", [])):
        fail(P, f"parameter {buf.name!r} is not layout-free, so callers rely on its layout",
             hint="declare it with attrs={'layout_free_placeholders': [weight]} in te.compute "
                  "or list it in the function attribute layout_free_buffers")
    for other in index.blocks.values():
        if any(w.buffer is buf for w in other.block.writes):
            fail(P, f"block {other.block.name!r} writes {buf.name!r}; only read-only weights "
                 "can be rewritten")
    if any(e.get("param") == pidx for e in func.attrs.get(REWRITE_ATTR, [])):
        fail(P, f"parameter {buf.name!r} was already rewritten")
    dtype = _index_dtype(buf)
    if index_map is None:
        imap = _derived_map(P, index, r, buf, dtype)
    else:
        imap = IndexMap.of(index_map, len(buf.shape), dtype)
    shape = _new_shape(P, buf, imap)
    new_func, _ = relayout(func, buf, shape, imap, analyzer.simplify)
    entry = {"param": pidx, "original_shape": [int(s.value) for s in buf.shape],
             "index_map": imap.text()}
    new_func = new_func.with_attr(REWRITE_ATTR, list(func.attrs.get(REWRITE_ATTR, [])) + [entry])
    return new_func, imap.text()


def _derived_map(P: str, index: FuncIndex, r: BlockRealize, buf: Buffer, dtype: str
                 ) -> IndexMap:
    """The layout in which the block's loops walk ``buf`` in order (see module doc)."""
    block = r.block
    loads = loads_of(block.body, buf)
    if not loads:
        fail(P, f"block {block.name!r} does not load {buf.name!r} in its body")
    idx = loads[0].indices
    vmap = {id(iv.var): v for iv, v in zip(block.iter_vars, r.iter_values)}
    exprs = [substitute_vars(i, vmap) for i in idx]
    loops = index.loops_above(r)
    doms = loop_domains(loops)
    forms = detect(exprs, doms) if doms is not None else None
    if forms is None:
        fail(P, f"the indices of {buf.name!r} in block {block.name!r} are not affine in its "
             "loops; pass an index_map")
    order = {id(lp.loop_var): k for k, lp in enumerate(loops)}
    params = [Var(name=f"i{d}", dtype=dtype) for d in range(len(buf.shape))]
    pieces: list[tuple[int, int, PrimExpr]] = []
    for d, (f, dim) in enumerate(zip(forms, buf.shape)):
        _check_dim_form(P, f, dim, buf, d)
        for dg in f.digits:
            e: PrimExpr = params[d]
            if dg.scale != 1:
                e = e // dg.scale
            if dg.scale * dg.extent < dim.value:
                e = e % dg.extent
            pieces.append((order[id(dg.var)], -dg.lower, e))
    pieces.sort(key=lambda p: (p[0], p[1]))
    outputs = [p[2] for p in pieces] or [const(0, dtype)]
    return IndexMap(params, outputs)


def _check_dim_form(P: str, f: AffineForm, dim: PrimExpr, buf: Buffer, d: int) -> None:
    lo, hi = f.bounds()
    ok = f.base == 0 and lo == 0 and type(dim) is IntImm and hi == dim.value - 1
    scales = sorted(dg.scale for dg in f.digits)
    expect = 1
    for dg in sorted(f.digits, key=lambda x: x.scale):
        ok = ok and dg.scale == expect
        expect *= dg.extent
    if not ok or scales and scales[0] != 1:
        fail(P, f"the loops do not walk dimension {d} of {buf.name!r} one to one (the block "
             "reads a part of it, or with a stride); pass an index_map")


# ---------------------------------------------------------------------------------
# packing the weight
# ---------------------------------------------------------------------------------


def _np_eval(e: PrimExpr, env: dict[int, np.ndarray]) -> np.ndarray:
    t = type(e)
    if t is Var:
        return env[id(e)]
    if t is IntImm:
        return np.int64(e.value)
    a, b = _np_eval(e.a, env), _np_eval(e.b, env)
    if t is Add:
        return a + b
    if t is Sub:
        return a - b
    if t is Mul:
        return a * b
    if t is FloorDiv:
        return a // b
    if t is FloorMod:
        return a % b
    raise ScheduleError(f"cannot evaluate {t.__name__} in an index map")


def pack_weight(func: PrimFunc, param: int, array: np.ndarray) -> np.ndarray:
    """``array`` (in the original layout of parameter ``param``) in the layout the
    scheduled ``func`` expects."""
    for rw in layout_rewrites(func):
        if rw.param == param:
            if tuple(array.shape) != rw.original_shape:
                raise ScheduleError(f"pack_weight: parameter {param} had the shape "
                                    f"{list(rw.original_shape)}, got an array of shape "
                                    f"{list(array.shape)}")
            imap = IndexMap.parse(rw.index_map)
            new_shape = [int(s.value) for s in func.buffer_map[func.params[param]].shape]
            moved = _split_transpose(imap, array, new_shape)
            return moved if moved is not None else _scatter(imap, array, new_shape)
    return array


def _scatter(imap: IndexMap, array: np.ndarray, new_shape: list[int]) -> np.ndarray:
    """``array`` moved by ``imap`` (a bijection of its shape onto ``new_shape``): each
    element stored at the new indices the map computes from its own.

    The index grids are sparse: each new index is computed on the dimensions it uses,
    then broadcast to the array's shape (a view, no copy; full grids would take ndim
    int64 copies of the weight's size). The broadcast matters where a map's indices use
    no dimension at all (the constant ``0`` of a one-element weight, whose unit
    dimensions no loop walks): numpy would read scalar indices as one element's address
    and fail to store the whole array there."""
    grids = np.indices(array.shape, dtype=np.int64, sparse=True)
    env = {id(p): g for p, g in zip(imap.params, grids)}
    new_idx = tuple(np.broadcast_to(_np_eval(o, env), array.shape) for o in imap.outputs)
    out = np.empty(new_shape, dtype=array.dtype)
    out[new_idx] = array
    return out


def _digit(e: PrimExpr) -> tuple[Var, int, int | None] | None:
    """``(v, d, m)`` when ``e`` is ``v // d % m`` (``m`` None: no modulo) of one index
    variable, else None."""
    if type(e) is Var:
        return e, 1, None
    if type(e) in (FloorDiv, FloorMod) and type(e.b) is IntImm and e.b.value > 0:
        inner = _digit(e.a)
        if inner is None:
            return None
        v, d, m = inner
        c = e.b.value
        if type(e) is FloorDiv:
            if m is None:
                return v, d * c, None
            return (v, d * c, m // c) if m % c == 0 else None
        return (v, d, c) if m is None or m % c == 0 else None
    return None


def _split_transpose(imap: IndexMap, array: np.ndarray, new_shape: list[int]
                     ) -> np.ndarray | None:
    """``array`` moved by ``imap`` as a reshape and a transpose, when every new index is
    one digit (``v // d % m``) of a mixed-radix split of one old dimension and the digits
    tile each dimension exactly (the micro-kernel panels of the CPU rules); None
    otherwise (padding, other index arithmetic). Much faster than a scatter."""
    digits = [_digit(o) for o in imap.outputs]
    if any(x is None for x in digits):
        return None
    split_shape: list[int] = []
    axis_of: dict[tuple[int, int], int] = {}
    for k, (p, extent) in enumerate(zip(imap.params, array.shape)):
        mine = sorted(((d, m) for v, d, m in digits if v is p), key=lambda x: -x[0])
        if not mine:
            if extent != 1:
                return None
            continue
        covered = 1  # digits from the innermost (d = 1) outwards
        sizes = []
        for d, m in reversed(mine):
            if d != covered:
                return None
            size = m if m is not None else (extent // d if extent % d == 0 else 0)
            if size <= 0:
                return None
            sizes.append(size)
            covered *= size
        if covered != extent or any(m is None for _, m in mine[1:]):
            return None
        for (d, _), size in zip(mine, reversed(sizes)):
            axis_of[(k, d)] = len(split_shape)
            split_shape.append(size)
    index = {id(p): k for k, p in enumerate(imap.params)}
    perm = [axis_of.get((index[id(v)], d), -1) for v, d, _ in digits]
    if sorted(perm) != list(range(len(split_shape))):
        return None
    if [split_shape[a] for a in perm] != list(new_shape):
        return None
    return coalesced_transpose(array, split_shape, perm)


def coalesced_transpose(array: np.ndarray, shape: list[int], perm: list[int]) -> np.ndarray:
    """``array.reshape(shape).transpose(perm)`` as a new C-contiguous array, with the
    axes that stay next to each other in the same order merged first: numpy's copy runs
    its innermost loop along the last axis, and a panel's digits (2 x 8 lanes) would
    make that loop a few elements long (ResNet-50's weights packed 1.5x faster). When the
    last merged axis stays last, its rows move as single items (viewed as raw bytes of
    the row's size): numpy then copies one item per row instead of looping over its
    elements (another 1.5-2x on ResNet-50's weights)."""
    groups: list[list[int]] = []
    for a in perm:
        if groups and groups[-1][-1] + 1 == a:
            groups[-1].append(a)
        else:
            groups.append([a])
    order = sorted(range(len(groups)), key=lambda g: groups[g][0])  # source order
    merged = [int(np.prod([shape[a] for a in groups[g]])) for g in order]
    rank = {g: k for k, g in enumerate(order)}
    axes = [rank[g] for g in range(len(groups))]
    src = np.asarray(array, order="C").reshape(merged)
    if len(merged) > 1 and axes[-1] == len(merged) - 1 and src.size and not src.dtype.hasobject:
        rows = src.view(np.dtype((np.void, merged[-1] * src.itemsize)))
        moved = np.asarray(rows.transpose(axes), order="C").view(src.dtype)
    else:
        moved = np.asarray(src.transpose(axes), order="C")
    return moved.reshape([shape[a] for a in perm])


def pack_params(func: PrimFunc, *arrays: np.ndarray) -> list[np.ndarray]:
    """All arguments of ``func`` with the rewritten weights packed."""
    return [pack_weight(func, k, a) for k, a in enumerate(arrays)]


def layout_rewrite_preproc(func: PrimFunc, param: int) -> PrimFunc:
    """A block-form function ``(src, dst)`` that packs parameter ``param`` from its
    original layout into the one ``func`` expects (run once, e.g. on constant weights)."""
    rw = next((x for x in layout_rewrites(func) if x.param == param), None)
    if rw is None:
        raise ScheduleError(f"parameter {param} of the function has no layout rewrite")
    new_buf = func.buffer_map[func.params[param]]
    dtype = new_buf.shape[0].dtype if new_buf.shape else "int32"
    src = Buffer(name=f"{new_buf.name}_src", shape=tuple(const(n, dtype)
                                                          for n in rw.original_shape),
                 dtype=new_buf.dtype, data=Var(name=f"{new_buf.name}_src", dtype="handle"))
    dst = Buffer(name=new_buf.name, shape=new_buf.shape, dtype=new_buf.dtype,
                 data=Var(name=new_buf.name, dtype="handle"))
    imap = IndexMap.parse(rw.index_map, dtype)
    ivs = [IterVar(var=Var(name=f"v{d}", dtype=dtype), dom=Range(min=const(0, dtype),
                                                                 extent=const(n, dtype)))
           for d, n in enumerate(rw.original_shape)]
    loops = [Var(name=f"ax{d}", dtype=dtype) for d in range(len(ivs))]
    idx = tuple(iv.var for iv in ivs)
    an = Analyzer()
    store = BufferStore(buffer=dst, value=BufferLoad(dtype=src.dtype, buffer=src, indices=idx),
                        indices=tuple(imap.apply(idx, an.simplify)))
    block = with_detected_regions(Block(name="layout_rewrite", iter_vars=tuple(ivs), reads=(),
                                        writes=(), body=store))
    stmt = BlockRealize(iter_values=tuple(loops), predicate=const(True), block=block)
    for lv, n in reversed(list(zip(loops, rw.original_shape))):
        stmt = For(loop_var=lv, min=const(0, dtype), extent=const(n, dtype), kind="serial",
                   body=stmt)
    root = Block(name="root", iter_vars=(), reads=(), writes=(), body=stmt)
    body = BlockRealize(iter_values=(), predicate=const(True), block=root)
    p_src, p_dst = Var(name="src", dtype="handle"), Var(name="dst", dtype="handle")
    return PrimFunc(params=(p_src, p_dst), buffer_map={p_src: src, p_dst: dst}, body=body,
                    attrs={"global_symbol": "layout_rewrite_preproc", "tir.noalias": True})

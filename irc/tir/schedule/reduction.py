"""Reduction primitives: decompose_reduction and rfactor.

decompose_reduction moves a reduction block's ``init`` into a block of its own, placed
before a chosen loop, over copies of the loops below it that the spatial indices use.
rfactor splits ``C[s] = C[s] + f(s, r)`` over a reduction loop ``k`` into a block that
accumulates partial results ``C_rf[.., k, ..]`` (one per iteration of ``k``, so ``k`` is
now spatial and can run in parallel) and a block that reduces them into ``C``. The
reducers recognized are ``+``, ``*``, ``max`` and ``min``.
"""

from __future__ import annotations

from ...core.structural import structural_equal
from ..buffer import Buffer
from ..expr import (
    Add,
    BufferLoad,
    IntImm,
    IterVar,
    Max,
    Min,
    Mul,
    PrimExpr,
    Range,
    Var,
    conjuncts,
    const,
    max_,
    min_,
)
from ..stmt import Block, BlockRealize, BufferStore, For, PrimFunc, Stmt, seq
from ..te.create_prim_func import reduction_identity
from .analysis import fail, is_reduction, loop_iter_types, loop_name
from .rewrite import (
    Simplify,
    and_predicate,
    loads_of,
    substitute_vars,
    with_detected_regions,
)
from .state import FuncIndex, buffer_names, child_blocks, fresh_name, var_ids

_REDUCERS = {Add: "sum", Mul: "prod", Max: "max", Min: "min"}


def _predicate_over(p: PrimExpr, loops: list[For], allowed: set[int],
                    vmap: dict[int, PrimExpr]) -> PrimExpr:
    """The conjuncts of ``p`` whose variables among the ``loops`` are all in ``allowed``
    (ids), substituted by ``vmap``: a guard that also reads a shape variable (``i < n``
    of a symbolic split) is kept."""
    dropped = {id(lp.loop_var) for lp in loops} - allowed
    out: PrimExpr = const(True)
    for c in conjuncts(p):
        if not var_ids(c) & dropped:
            out = and_predicate(out, substitute_vars(c, vmap))
    return out


def add_alloc(func: PrimFunc, scope_name: str, buf: Buffer) -> PrimFunc:
    """``func`` with ``buf`` allocated by block ``scope_name``."""
    index = FuncIndex(func)
    block = index.blocks[scope_name].block
    return index.rebuild({id(block): block.replace(alloc_buffers=block.alloc_buffers + (buf,))})


# ---------------------------------------------------------------------------------
# decompose_reduction
# ---------------------------------------------------------------------------------


def decompose_reduction(index: FuncIndex, r: BlockRealize, loop: For, simplify: Simplify
                        ) -> tuple[PrimFunc, str]:
    """Split the init of reduction block ``r`` into a block placed before ``loop``."""
    P = "decompose_reduction"
    block = r.block
    if block.init is None:
        fail(P, f"block {block.name!r} has no init statement to decompose")
    loops = index.loops_above(r)
    pos = next((k for k, lp in enumerate(loops) if lp is loop), None)
    if pos is None:
        fail(P, f"loop {loop_name(loop)} does not enclose block {block.name!r} in its scope")
    kinds = loop_iter_types(r)
    for lp in loops[:pos]:
        if "reduce" in kinds.get(id(lp.loop_var), set()):
            fail(P, f"loop {loop_name(lp)} above loop {loop_name(loop)} feeds a reduction "
                 f"variable of block {block.name!r}; the init would run once per iteration "
                 "of the reduction", hint=f"decompose at loop {loop_name(lp)} or above it")
    spatial = [(iv, v) for iv, v in zip(block.iter_vars, r.iter_values)
               if iv.iter_type == "spatial"]
    spatial_vars: set[int] = set()
    for _, v in spatial:
        var_ids(v, spatial_vars)
    loop_map: dict[int, PrimExpr] = {}
    new_loops: list[For] = []
    for lp in loops[pos:]:
        if id(lp.loop_var) in spatial_vars:
            nv = Var(name=f"{lp.loop_var.name}_init", dtype=lp.loop_var.dtype)
            loop_map[id(lp.loop_var)] = nv
            new_loops.append(lp.replace(loop_var=nv))
    iv_map: dict[int, PrimExpr] = {}
    new_ivs = []
    values = []
    for iv, v in spatial:
        nv = Var(name=f"{iv.var.name}_init", dtype=iv.var.dtype)
        iv_map[id(iv.var)] = nv
        new_ivs.append(IterVar(var=nv, dom=iv.dom, iter_type="spatial"))
        values.append(simplify(substitute_vars(v, loop_map)))
    taken = index.all_names()
    name = fresh_name(f"{block.name}_init", taken)
    init_body = substitute_vars(block.init, iv_map)
    init_block = with_detected_regions(block.replace(
        name=name, iter_vars=tuple(new_ivs), reads=(), writes=substitute_vars(block.writes,
                                                                              iv_map),
        body=init_body, init=None, annotations={}))
    allowed = {id(lp.loop_var) for lp in loops[:pos]} | set(loop_map)
    realize = BlockRealize(iter_values=tuple(values),
                           predicate=_predicate_over(r.predicate, loops, allowed, loop_map),
                           block=init_block)
    nest: Stmt = realize
    for lp in reversed(new_loops):
        nest = For(loop_var=lp.loop_var, min=lp.min, extent=lp.extent, kind=lp.kind,
                   body=nest, thread_tag=lp.thread_tag, annotations=dict(lp.annotations))
    update = with_detected_regions(block.replace(init=None))
    func = index.rebuild({id(block): update})
    new_index = FuncIndex(func)
    new_loop = new_index.loops[id(loop.loop_var)]
    func = new_index.rebuild({id(new_loop): seq(nest, new_loop)})
    return func, name


# ---------------------------------------------------------------------------------
# rfactor
# ---------------------------------------------------------------------------------


def _reducer(P: str, r: BlockRealize) -> tuple[str, BufferStore, PrimExpr]:
    """``(kind, store, rhs)`` of a block ``C[i] = C[i] op rhs``."""
    block = r.block
    store = block.body
    init = block.init
    if type(store) is not BufferStore or type(init) is not BufferStore:
        fail(P, f"block {block.name!r} is not a single store with a single-store init")
    value = store.value
    kind = _REDUCERS.get(type(value))
    if kind is None:
        fail(P, f"block {block.name!r} does not combine with +, *, max or min")

    def is_self(e: PrimExpr) -> bool:
        return (type(e) is BufferLoad and e.buffer is store.buffer
                and structural_equal(e.indices, store.indices))

    if is_self(value.a) and not _loads(value.b, store.buffer):
        rhs = value.b
    elif is_self(value.b) and not _loads(value.a, store.buffer):
        rhs = value.a
    else:
        fail(P, f"block {block.name!r} is not of the form C[i] = C[i] op value")
    if init.buffer is not store.buffer or not structural_equal(init.indices, store.indices):
        fail(P, f"the init of block {block.name!r} does not store to the reduced element")
    return kind, store, rhs


def _check_no_empty_slice(P: str, block: Block, r: BlockRealize, loops: list[For],
                          loop: For, reduce_ids: set[int], simplify: Simplify) -> None:
    """Refuse when a guard over the reduction loops (a split whose factors overshoot the
    extent) masks a whole slice of the factored loop: that slice's partial result would
    never be initialized, yet the write-back reads it. Split guards grow with every loop
    variable, so the last slice with the other reduction loops at their minimum is the
    emptiest point the init can see."""
    probe_map: dict[int, PrimExpr] = {id(lp.loop_var): lp.min for lp in loops
                                      if id(lp.loop_var) in reduce_ids and lp is not loop}
    probe_map[id(loop.loop_var)] = simplify(loop.min + loop.extent - 1)
    watched = set(probe_map)
    for c in conjuncts(r.predicate):
        if not var_ids(c) & watched:
            continue
        probe = simplify(substitute_vars(c, probe_map))
        if type(probe) is IntImm and probe.value == 0:
            fail(P, f"block {block.name!r} has a guard over its reduction loops that masks "
                 f"every iteration of the last slice of loop {loop_name(loop)} (a split "
                 "whose factors overshoot the extent); that partial result would stay "
                 "uninitialized", hint="split the reduction loop with factors whose "
                 "product is the extent, or use None for one factor")


def _loads(e: PrimExpr, buf: Buffer) -> bool:
    return bool(loads_of(e, buf))


def _combine(kind: str, a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if kind == "sum":
        return a + b
    if kind == "prod":
        return a * b
    return max_(a, b) if kind == "max" else min_(a, b)


def rfactor(index: FuncIndex, loop: For, factor_axis: int, simplify: Simplify
            ) -> tuple[PrimFunc, str]:
    """Factor the reduction over ``loop``; returns the new function and the name of the
    block computing partial results."""
    P = "rfactor"
    blocks = child_blocks(loop)
    if len(blocks) != 1:
        fail(P, f"loop {loop_name(loop)} holds {len(blocks)} blocks; rfactor needs exactly "
             "one reduction block under it")
    r = blocks[0]
    block = r.block
    if not is_reduction(block):
        fail(P, f"block {block.name!r} is not a reduction block (spatial and reduction "
             "variables with an init)")
    kind, store, rhs = _reducer(P, r)
    kinds = loop_iter_types(r)
    lk = kinds.get(id(loop.loop_var), set())
    if "reduce" not in lk:
        fail(P, f"loop {loop_name(loop)} is not a reduction loop of block {block.name!r}",
             hint="rfactor a loop that feeds a reduction variable")
    loops = index.loops_above(r)
    for lp in loops:
        k = kinds.get(id(lp.loop_var), set())
        if "reduce" in k and "spatial" in k:
            fail(P, f"loop {loop_name(lp)} feeds both spatial and reduction variables of "
                 f"block {block.name!r}")
    top = loops[0]
    chain_ok = all(a.body is b for a, b in zip(loops, loops[1:])) and loops[-1].body is r
    if not chain_ok:
        fail(P, f"the loops above block {block.name!r} also hold other statements; rfactor "
             "needs a loop nest holding only the block")
    buf = store.buffer
    ndim = len(buf.shape)
    if not -(ndim + 1) <= factor_axis <= ndim:
        fail(P, f"factor_axis {factor_axis} is out of range for the {ndim + 1}-dimensional "
             "factored buffer")
    if factor_axis < 0:
        factor_axis += ndim + 1
    taken_buf = buffer_names(index.func) | index.all_names()
    rf_name = fresh_name(f"{buf.name}_rf", taken_buf)
    rf_shape = list(buf.shape)
    rf_shape.insert(factor_axis, loop.extent)
    rf_buf = Buffer(name=rf_name, shape=tuple(rf_shape), dtype=buf.dtype,
                    data=Var(name=rf_name, dtype="handle"), scope=buf.scope)
    # The partial-result block: the rfactor loop becomes a spatial variable.
    reduce_ids: set[int] = set()
    for iv, v in zip(block.iter_vars, r.iter_values):
        if iv.iter_type == "reduce":
            var_ids(v, reduce_ids)
    _check_no_empty_slice(P, block, r, loops, loop, reduce_ids, simplify)
    rf_iv = IterVar(var=Var(name=f"v{loop.loop_var.name}", dtype=loop.loop_var.dtype),
                    dom=Range(min=loop.min, extent=loop.extent), iter_type="spatial")
    ivs = [rf_iv]
    values: list[PrimExpr] = [loop.loop_var]
    loop_to_iv: dict[int, PrimExpr] = {id(loop.loop_var): rf_iv.var}
    old_to_new: dict[int, PrimExpr] = {}
    for iv, v in zip(block.iter_vars, r.iter_values):
        if iv.iter_type == "spatial":
            nv = Var(name=iv.var.name, dtype=iv.var.dtype)
            old_to_new[id(iv.var)] = nv
            ivs.append(IterVar(var=nv, dom=iv.dom, iter_type="spatial"))
            values.append(v)
    for lp in loops:
        if id(lp.loop_var) in reduce_ids and lp is not loop:
            nv = Var(name=f"v{lp.loop_var.name}", dtype=lp.loop_var.dtype)
            loop_to_iv[id(lp.loop_var)] = nv
            ivs.append(IterVar(var=nv, dom=Range(min=lp.min, extent=lp.extent),
                               iter_type="reduce"))
            values.append(lp.loop_var)
    for iv, v in zip(block.iter_vars, r.iter_values):
        if iv.iter_type == "reduce":
            old_to_new[id(iv.var)] = simplify(substitute_vars(v, loop_to_iv))
    rf_idx = [substitute_vars(i, old_to_new) for i in store.indices]
    rf_idx.insert(factor_axis, rf_iv.var)
    rf_load = BufferLoad(dtype=buf.dtype, buffer=rf_buf, indices=tuple(rf_idx))
    rf_body = BufferStore(buffer=rf_buf, indices=tuple(rf_idx),
                          value=_combine(kind, rf_load, substitute_vars(rhs, old_to_new)))
    rf_init = BufferStore(buffer=rf_buf, indices=tuple(rf_idx),
                          value=reduction_identity(kind, buf.dtype))
    rf_block_name = fresh_name(f"{block.name}_rf", index.all_names())
    rf_block = with_detected_regions(block.replace(
        name=rf_block_name, iter_vars=tuple(ivs), reads=(), writes=(), body=rf_body,
        init=rf_init))
    rf_realize = BlockRealize(iter_values=tuple(values), predicate=r.predicate, block=rf_block)
    rf_nest: Stmt = rf_realize
    for lp in reversed(loops):
        rf_nest = lp.replace(body=rf_nest)
    # The write-back block: the original block reduces the partial results.
    spatial_loop_ids: set[int] = set()
    for iv, v in zip(block.iter_vars, r.iter_values):
        if iv.iter_type == "spatial":
            var_ids(v, spatial_loop_ids)
    copy_map: dict[int, PrimExpr] = {}
    wb_loops: list[For] = []
    for lp in loops:
        if id(lp.loop_var) in spatial_loop_ids or lp is loop:
            nv = Var(name=lp.loop_var.name, dtype=lp.loop_var.dtype)
            copy_map[id(lp.loop_var)] = nv
            kind_ = "serial" if lp is loop else lp.kind
            wb_loops.append(For(loop_var=nv, min=lp.min, extent=lp.extent, kind=kind_,
                                body=lp.body, thread_tag=lp.thread_tag if lp is not loop
                                else "", annotations={} if lp is loop else
                                dict(lp.annotations)))
    wb_iv = IterVar(var=Var(name=f"v{loop.loop_var.name}", dtype=loop.loop_var.dtype),
                    dom=Range(min=loop.min, extent=loop.extent), iter_type="reduce")
    spatial_ivs = [iv for iv in block.iter_vars if iv.iter_type == "spatial"]
    wb_values = [simplify(substitute_vars(v, copy_map))
                 for iv, v in zip(block.iter_vars, r.iter_values) if iv.iter_type == "spatial"]
    wb_values.append(copy_map[id(loop.loop_var)])
    wb_idx = list(store.indices)
    wb_idx.insert(factor_axis, wb_iv.var)
    wb_load = BufferLoad(dtype=buf.dtype, buffer=rf_buf, indices=tuple(wb_idx))
    self_load = BufferLoad(dtype=buf.dtype, buffer=buf, indices=store.indices)
    wb_body = store.replace(value=_combine(kind, self_load, wb_load))
    wb_block = with_detected_regions(block.replace(
        iter_vars=tuple(spatial_ivs) + (wb_iv,), reads=(), body=wb_body))
    allowed = set(copy_map)
    wb_realize = BlockRealize(iter_values=tuple(wb_values),
                              predicate=_predicate_over(r.predicate, loops, allowed,
                                                        copy_map),
                              block=wb_block)
    wb_nest: Stmt = wb_realize
    for lp in reversed(wb_loops):
        wb_nest = lp.replace(body=wb_nest)
    scope_name = index.scope_realize(r).block.name
    func = index.rebuild({id(top): seq(rf_nest, wb_nest)})
    func = add_alloc(func, scope_name, rf_buf)
    return func, rf_block_name

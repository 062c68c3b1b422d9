"""Compute-location primitives: compute_at, reverse_compute_at, compute_inline and
reverse_compute_inline.

compute_at moves a producer under a loop of its consumers. The region of the produced
buffer that the consumers under the loop read (loops inside the loop relaxed to their
ranges, outer loop variables kept symbolic, except the thread-bound loops whose threads
share the buffer's storage scope: ``threadIdx`` for ``shared``, all for ``global``)
decides the producer's new iteration
domain: a fresh loop per iteration variable that is not a single point, clamped to the
variable's original domain, with a predicate when the extent is not constant.
reverse_compute_at does the same for a consumer from the region its producers under
the loop write, which must be exact (each point written once per iteration).
"""

from __future__ import annotations

from ...core.diagnostics import ScheduleError
from ..arith import Analyzer
from ..buffer import Buffer, BufferRegion
from ..expr import BufferLoad, IntImm, PrimExpr, Range, Var, const, max_, min_
from ..stmt import Block, BlockRealize, For, PrimFunc, SeqStmt, Stmt
from .analysis import (
    check_order,
    fail,
    is_complete,
    is_output_block,
    is_reduction,
    is_trivial_predicate,
    loop_domains,
    loop_iter_types,
    loop_name,
    producers,
    store_of,
    writers,
)
from .iter_map import detect, is_injective
from .rewrite import (
    and_predicate,
    is_var_tuple,
    loads_of,
    replace_loads,
    substitute_vars,
    with_detected_regions,
)
from .state import FuncIndex, child_blocks, var_ids

# ---------------------------------------------------------------------------------
# shared pieces
# ---------------------------------------------------------------------------------


def _check_location(index: FuncIndex, r: BlockRealize, loop: For, P: str) -> BlockRealize:
    scope = index.scope_realize(r)
    if index.scope_realize(loop) is not scope:
        fail(P, f"block {r.block.name!r} and loop {loop_name(loop)} are in different scopes "
             "(one is inside another block)")
    if index.is_ancestor(loop, r):
        fail(P, f"loop {loop_name(loop)} already encloses block {r.block.name!r}",
             hint="pick a loop of another block (the consumer or producer)")
    return scope


def _analyzer_at(index: FuncIndex, loop: For) -> Analyzer:
    """An analyzer that knows the ranges of ``loop`` and the loops around it."""
    an = Analyzer()
    for lp in index.loops_above(loop) + [loop]:
        an.bind(lp.loop_var, _range(lp), allow_override=True)
    return an


def _range(lp: For):
    return Range(min=lp.min, extent=lp.extent)


def _inner_loops(index: FuncIndex, r: BlockRealize, loop: For) -> list[For]:
    """The loops strictly between ``loop`` and ``r``."""
    loops = index.loops_above(r)
    for k, lp in enumerate(loops):
        if lp is loop:
            return loops[k + 1:]
    return loops


def _threads_sharing(index: FuncIndex, loop: For, scope: str) -> list[For]:
    """The thread-bound loops at and around ``loop`` whose threads all see one buffer of
    storage ``scope``: ``threadIdx`` loops for ``shared`` memory (one per GPU block),
    every thread-bound loop for ``global``. A buffer they share must hold what all of
    them read, so compute_at relaxes them like the loops inside the target loop."""
    if scope.startswith("shared"):
        def shares(tag: str) -> bool:
            return tag.startswith("threadIdx")
    elif scope == "global":
        def shares(tag: str) -> bool:
            return bool(tag)
    else:
        return []
    around = [lp for lp in index.loops_above(loop) + [loop]]
    return [lp for lp in around if lp.kind == "thread_binding" and shares(lp.thread_tag)]


def relaxed_region(an: Analyzer, r: BlockRealize, region: BufferRegion, inner: list[For]
                    ) -> list[tuple[PrimExpr | None, PrimExpr | None]]:
    """``(lo, hi)`` per dimension of a block's region, in terms of loops outside
    ``inner`` (whose variables are relaxed to their ranges)."""
    vmap = {id(iv.var): v for iv, v in zip(r.block.iter_vars, r.iter_values)}
    dom = {lp.loop_var: _range(lp) for lp in inner}
    out = []
    for rg in region.region:
        lo = substitute_vars(rg.min, vmap)
        hi = lo + substitute_vars(rg.extent, vmap) - 1
        if dom:
            lo_s = an.int_set(lo, dom).min_value
            hi_s = an.int_set(hi, dom).max_value
        else:
            lo_s, hi_s = an.simplify(lo), an.simplify(hi)
        out.append((lo_s, hi_s))
    return out


def _union(an: Analyzer, a, b):
    if a[0] is None or b[0] is None or a[1] is None or b[1] is None:
        return (None, None)
    return (_pick(an, a[0], b[0], min_), _pick(an, a[1], b[1], max_))


def _pick(an: Analyzer, x: PrimExpr, y: PrimExpr, fn) -> PrimExpr:
    if fn is min_:
        if an.can_prove(x <= y):
            return x
        if an.can_prove(y <= x):
            return y
    else:
        if an.can_prove(x >= y):
            return x
        if an.can_prove(y >= x):
            return y
    return an.simplify(fn(x, y))


def rebind_block(P: str, an: Analyzer, r: BlockRealize, ranges: dict[int, tuple],
                 preserve_unit_loops: bool) -> Stmt:
    """The block re-bound over ``ranges`` (``id(iter var) -> (lo, hi)`` inclusive, None
    for the full domain), inside new loops ``ax0, ax1, ...``. Where the range may leave
    the variable's domain, a predicate keeps the block inside it."""
    block = r.block
    bindings: list[PrimExpr] = []
    loops: list[tuple[Var, PrimExpr]] = []
    guards: list[PrimExpr] = []
    for iv in block.iter_vars:
        dmin = an.simplify(iv.dom.min)
        dmax = an.simplify(iv.dom.min + iv.dom.extent - 1)
        lo, hi = ranges.get(id(iv.var), (None, None))
        if lo is None or hi is None:
            lo, hi = dmin, dmax
        extent = an.simplify(hi - lo + 1)
        limit = None  # a non-constant extent becomes a guard on a constant loop
        if type(extent) is not IntImm:
            lo2, hi2 = _pick(an, lo, dmin, max_), _pick(an, hi, dmax, min_)
            ext2 = an.simplify(hi2 - lo2 + 1)
            if type(ext2) is IntImm:
                lo, hi, extent = lo2, hi2, ext2
            else:
                bound = an.const_int_bound(extent).max_value
                if not isinstance(bound, int) or bound > 2**31:
                    fail(P, f"cannot bound the range of variable {iv.var.name} of block "
                         f"{block.name!r} (extent {extent})")
                limit, extent = extent, const(bound, iv.var.dtype)
        if extent.value <= 0:
            fail(P, f"block {block.name!r} would have an empty range for its variable "
                 f"{iv.var.name}")
        if extent.value == 1 and limit is None and not preserve_unit_loops:
            value = lo
        else:
            ax = Var(name=f"ax{len(loops)}", dtype=iv.var.dtype)
            loops.append((ax, extent))
            value = ax if _is_zero(lo) else an.simplify(lo + ax)
            if limit is not None:
                guards.append(ax < limit)
        bindings.append(value)
        if not an.can_prove(lo >= dmin):
            guards.append(an.simplify(value >= dmin))
        if not an.can_prove(hi <= dmax):
            guards.append(an.simplify(value < dmax + 1))
    predicate: PrimExpr = _carried_predicate(P, r, bindings)
    for g in guards:
        predicate = and_predicate(predicate, g)
    realize = BlockRealize(iter_values=tuple(bindings), predicate=predicate, block=block)
    body: Stmt = realize
    for ax, ext in reversed(loops):
        body = For(loop_var=ax, min=const(0, ax.dtype), extent=ext, kind="serial", body=body)
    return body


def _carried_predicate(P: str, r: BlockRealize, bindings: list[PrimExpr]) -> PrimExpr:
    """The block's old predicate (e.g. ``T.where`` from a split that does not divide)
    rewritten over the new bindings, so the moved block still skips the points it
    skipped before. The predicate's loop variables must each be bound directly to an
    iteration variable; otherwise the predicate cannot follow the block."""
    old = r.predicate
    if is_trivial_predicate(old):
        return const(True)
    vmap: dict[int, PrimExpr] = {}
    for value, new in zip(r.iter_values, bindings):
        if type(value) is Var:
            vmap[id(value)] = new
    if not var_ids(old) <= set(vmap):
        fail(P, f"block {r.block.name!r} has the predicate {old}, over loops that are not "
             "bound directly to its iteration variables; moving the block would lose it",
             hint="split by a factor that divides the extent, or move the block before "
                  "splitting")
    return substitute_vars(old, vmap)


def _is_zero(e: PrimExpr) -> bool:
    return type(e) is IntImm and e.value == 0


def _insert(index: FuncIndex, loop: For, new: Stmt, before: list[BlockRealize],
            after: list[BlockRealize], early: bool, P: str) -> For:
    """``loop`` with ``new`` inserted into its body after every statement holding a
    block of ``after`` and before the first holding a block of ``before`` (as early or
    as late as that allows)."""
    body = loop.body
    items = list(body.seq) if type(body) is SeqStmt else [body]

    def holds(item: Stmt, blocks: list[BlockRealize]) -> bool:
        return any(b is item or index.is_ancestor(item, b) for b in blocks)

    lo = 0
    hi = len(items)
    for k, item in enumerate(items):
        if holds(item, after):
            lo = k + 1
    for k, item in enumerate(items):
        if holds(item, before):
            hi = k
            break
    if lo > hi:
        fail(P, f"under loop {loop_name(loop)} the block would have to run after a block it "
             "depends on and before a block that depends on it, which the statements there "
             "do not allow", hint="pick a loop where producers and consumers are separate")
    items.insert(hi if not early else lo, new)
    return loop.replace(body=SeqStmt(seq=tuple(items)))


def _finish(index: FuncIndex, r: BlockRealize, loop: For, new_loop: For, scope_name: str,
            P: str) -> PrimFunc:
    rm = index.removal_root(r)
    func = index.rebuild({id(rm): None, id(loop): new_loop})
    new_index = FuncIndex(func)
    check_order(new_index, new_index.blocks[scope_name], P)
    return func


def _write_dims(P: str, block: Block, region: BufferRegion) -> dict[int, int]:
    """``id(iter var) -> dimension`` for a region whose dimensions are single points at
    iteration variables (or constants)."""
    ivs = {id(iv.var) for iv in block.iter_vars}
    out: dict[int, int] = {}
    for d, rg in enumerate(region.region):
        if type(rg.extent) is not IntImm or rg.extent.value != 1:
            fail(P, f"block {block.name!r} accesses buffer {region.buffer.name!r} in a "
                 f"range along dimension {d}, not at one index per iteration")
        m = rg.min
        if type(m) is Var and id(m) in ivs:
            if id(m) in out:
                fail(P, f"block {block.name!r} uses iteration variable {m.name} in two "
                     f"dimensions of buffer {region.buffer.name!r}")
            out[id(m)] = d
        elif var_ids(m) & ivs:
            fail(P, f"block {block.name!r} accesses buffer {region.buffer.name!r} at the "
                 f"index {m} along dimension {d}; only plain iteration variables are "
                 "supported there")
    return out


# ---------------------------------------------------------------------------------
# compute_at
# ---------------------------------------------------------------------------------


def compute_at(index: FuncIndex, r: BlockRealize, loop: For, preserve_unit_loops: bool
               ) -> PrimFunc:
    """Move producer ``r`` under ``loop``; see the module docstring."""
    P = "compute_at"
    block = r.block
    scope = _check_location(index, r, loop, P)
    if not (is_complete(block) or is_reduction(block)):
        fail(P, f"block {block.name!r} is neither a complete block (spatial variables only, "
             "no init) nor a reduction block")
    if is_output_block(index, r):
        fail(P, f"block {block.name!r} writes an output buffer of its scope; moving it "
             "would compute only the part its consumers under the loop need",
             hint="compute_at works on producers of intermediate buffers; move the "
                  "consumer instead with reverse_compute_at")
    if len(block.writes) != 1:
        fail(P, f"block {block.name!r} writes {len(block.writes)} buffers; compute_at needs "
             "a block writing one buffer")
    buf = block.writes[0].buffer
    blocks = child_blocks(scope)
    if writers(blocks, buf) != [r]:
        fail(P, f"buffer {buf.name!r} has more than one writer block; compute_at needs "
             f"block {block.name!r} to be its only writer")
    cons = [b for b in blocks if b is not r and any(x.buffer is buf for x in b.block.reads)]
    if not cons:
        fail(P, f"block {block.name!r} has no consumer, so nothing tells which region to "
             "compute under the loop")
    for c in cons:
        if not index.is_ancestor(loop, c):
            fail(P, f"consumer {c.block.name!r} of block {block.name!r} is not under loop "
                 f"{loop_name(loop)}; every consumer must be under the target loop",
                 hint="pick a loop that encloses all consumers")
    an = _analyzer_at(index, loop)
    shared_by = _threads_sharing(index, loop, buf.scope)
    need: list | None = None
    for c in cons:
        inner = shared_by + _inner_loops(index, c, loop)
        for reg in c.block.reads:
            if reg.buffer is not buf:
                continue
            rel = relaxed_region(an, c, reg, inner)
            need = rel if need is None else [_union(an, a, b) for a, b in zip(need, rel)]
    dims = _write_dims(P, block, block.writes[0])
    ranges = {}
    for vid, d in dims.items():
        lo, hi = need[d] if need is not None else (None, None)
        ranges[vid] = (lo, hi) if lo is not None and hi is not None else (None, None)
    nest = rebind_block(P, an, r, ranges, preserve_unit_loops)
    prods = [p for p in producers(index, r) if index.is_ancestor(loop, p)]
    new_loop = _insert(index, loop, nest, cons, prods, False, P)
    return _finish(index, r, loop, new_loop, scope.block.name, P)


# ---------------------------------------------------------------------------------
# reverse_compute_at
# ---------------------------------------------------------------------------------


def reverse_compute_at(index: FuncIndex, r: BlockRealize, loop: For,
                       preserve_unit_loops: bool) -> PrimFunc:
    """Move consumer ``r`` under ``loop``; see the module docstring."""
    P = "reverse_compute_at"
    block = r.block
    scope = _check_location(index, r, loop, P)
    if not is_complete(block):
        fail(P, f"block {block.name!r} is not a complete block (spatial variables only, no "
             "init, no buffer both read and written)")
    prods = [p for p in producers(index, r) if index.is_ancestor(loop, p)]
    if not prods:
        fail(P, f"no producer of block {block.name!r} is under loop {loop_name(loop)}",
             hint="pick a loop of the block that produces what it reads")
    blocks = child_blocks(scope)
    an = _analyzer_at(index, loop)
    ranges: dict[int, tuple] = {}
    outer = index.loops_above(loop) + [loop]
    for p in prods:
        kinds = loop_iter_types(p)
        for lp in outer:
            if "reduce" in kinds.get(id(lp.loop_var), set()):
                fail(P, f"loop {loop_name(lp)} feeds a reduction variable of producer "
                     f"{p.block.name!r}; under loop {loop_name(loop)} block {block.name!r} "
                     "would read partial reductions",
                     hint="pick a loop outside the producer's reduction loops")
        for w in p.block.writes:
            buf = w.buffer
            reads = [x for x in block.reads if x.buffer is buf]
            if not reads:
                continue
            if writers(blocks, buf) != [p]:
                fail(P, f"buffer {buf.name!r} has more than one writer block; "
                     "reverse_compute_at needs one producer per buffer")
            inner = _inner_loops(index, p, loop)
            produced = relaxed_region(an, p, w, inner)
            _check_exact(P, an, index, p, loop, inner, produced, buf)
            for reg in reads:
                dims = _write_dims(P, block, reg)
                for vid, d in dims.items():
                    if vid in ranges and ranges[vid] != produced[d]:
                        fail(P, f"block {block.name!r} reads two produced buffers along one "
                             "variable; only one producer may decide its range")
                    ranges[vid] = produced[d]
    nest = rebind_block(P, an, r, ranges, preserve_unit_loops)
    cons = [c for c in child_blocks(loop)
            if any(x.buffer is w.buffer for w in block.writes for x in c.block.reads)]
    new_loop = _insert(index, loop, nest, cons, prods, True, P)
    return _finish(index, r, loop, new_loop, scope.block.name, P)


def _check_exact(P: str, an: Analyzer, index: FuncIndex, p: BlockRealize, loop: For,
                 inner: list[For], produced: list, buf: Buffer) -> None:
    """The region written under one iteration of ``loop`` must be exactly the points the
    producer writes then, so the consumer never reads a point not yet produced."""
    what = (f"the region of buffer {buf.name!r} that block {p.block.name!r} writes in one "
            f"iteration of loop {loop_name(loop)}")
    volume = 1
    for lo, hi in produced:
        if lo is None or hi is None:
            fail(P, f"cannot bound {what}")
        ext = an.simplify(hi - lo + 1)
        if type(ext) is not IntImm:
            fail(P, f"{what} has the non-constant extent {ext}")
        volume *= ext.value
    loops = index.loops_above(p)
    doms = loop_domains(loops)
    spatial = [v for iv, v in zip(p.block.iter_vars, p.iter_values) if iv.iter_type == "spatial"]
    forms = detect(spatial, doms) if doms is not None else None
    inner_ids = {id(lp.loop_var) for lp in inner}
    if forms is None:
        fail(P, f"cannot prove that {what} is written exactly (the bindings of block "
             f"{p.block.name!r} are not affine)")
    used = set()
    for f in forms:
        used.update(id(d.var) for d in f.digits)
    count = 1
    for lp in inner:
        if id(lp.loop_var) in used:
            count *= doms[id(lp.loop_var)][2]
    if not is_injective(forms, doms, inner_ids & used) or count != volume:
        fail(P, f"{what} is not exact: it covers {volume} points but the block writes "
             f"{count} there, so the consumer could read values not yet produced",
             hint="move the consumer under a loop where the producer writes a rectangle")


# ---------------------------------------------------------------------------------
# compute_inline
# ---------------------------------------------------------------------------------


def _inline_checks(index: FuncIndex, r: BlockRealize, P: str):
    block = r.block
    store = store_of(block)
    if store is None:
        fail(P, f"the body of block {block.name!r} is not a single buffer store")
    if not is_complete(block) or block.alloc_buffers or block.match_buffers:
        fail(P, f"block {block.name!r} is not an elementwise producer (it reduces, has "
             "opaque variables, allocates, or reads what it writes)")
    ivs = {id(iv.var): iv.var for iv in block.iter_vars}
    if not is_var_tuple(store.indices, ivs):
        fail(P, f"block {block.name!r} stores to {store.buffer.name!r} at indices that are "
             "not distinct iteration variables, so the stored value cannot be substituted")
    stored = {id(i) for i in store.indices}
    if not (var_ids(store.value) & set(ivs)) <= stored:
        fail(P, f"the value block {block.name!r} stores uses an iteration variable that is "
             "not one of the store's indices")
    buf = store.buffer
    if id(buf) in index.param_buffer_ids() or is_output_block(index, r):
        fail(P, f"block {block.name!r} writes {buf.name!r}, an output buffer; only "
             "intermediate buffers can be inlined")
    if any(x.buffer is buf for x in block.reads):
        fail(P, f"block {block.name!r} reads the buffer it writes")
    for other in index.blocks.values():
        if other is not r and any(w.buffer is buf for w in other.block.writes):
            fail(P, f"buffer {buf.name!r} is also written by block {other.block.name!r}; "
                 "only a buffer with a single writer can be inlined")
        # A view's accesses are not loads of the buffer, so the stored value cannot be
        # substituted into them (and the buffer's allocation would go while still viewed).
        view = next((m.buffer for m in other.block.match_buffers
                     if m.source.buffer is buf), None)
        if view is not None:
            fail(P, f"block {other.block.name!r} accesses {buf.name!r} through the view "
                 f"{view.name!r} (match_buffer); the value block {block.name!r} stores "
                 f"can replace loads of {buf.name!r} but not a view of it",
                 hint=f"inline block {block.name!r} before blockize or tensorize makes "
                      f"the view of {buf.name!r}")
    return store


def can_inline(index: FuncIndex, r: BlockRealize) -> bool:
    """True when compute_inline would accept the block."""
    try:
        _inline_checks(index, r, "compute_inline")
    except ScheduleError:
        return False
    return True


def compute_inline(index: FuncIndex, r: BlockRealize) -> PrimFunc:
    """Substitute the value ``r`` stores into every load of its buffer and remove it."""
    P = "compute_inline"
    store = _inline_checks(index, r, P)
    buf = store.buffer
    ivs = [i for i in store.indices]

    def inline(load: BufferLoad) -> PrimExpr | None:
        if load.buffer is not buf:
            return None
        return substitute_vars(store.value, {id(v): i for v, i in zip(ivs, load.indices)})

    repl: dict[int, Stmt | None] = {id(index.removal_root(r)): None}
    for other in index.blocks.values():
        b = other.block
        if other is r or not any(x.buffer is buf for x in b.reads):
            continue
        repl[id(b)] = with_detected_regions(replace_loads(b, inline), b,
                                            {id(buf): [x.buffer for x in r.block.reads]})
    func = index.rebuild(repl)
    return remove_alloc(func, buf)


def remove_alloc(func: PrimFunc, buf: Buffer) -> PrimFunc:
    """``func`` without ``buf`` in the ``alloc_buffers`` of the block allocating it."""
    return change_alloc(func, lambda bufs: tuple(b for b in bufs if b is not buf)
                        if any(b is buf for b in bufs) else None)


def change_alloc(func: PrimFunc, fn) -> PrimFunc:
    """Apply ``fn(alloc_buffers) -> new tuple or None (no change)`` to the first block
    (root first) for which it returns a tuple."""
    root = func.body
    if type(root) is BlockRealize:
        new = fn(root.block.alloc_buffers)
        if new is not None:
            return func.replace(body=root.replace(block=root.block.replace(alloc_buffers=new)))
    index = FuncIndex(func)
    for realize in index.blocks.values():
        new = fn(realize.block.alloc_buffers)
        if new is not None:
            return index.rebuild({id(realize.block):
                                  realize.block.replace(alloc_buffers=new)})
    return func


# ---------------------------------------------------------------------------------
# reverse_compute_inline
# ---------------------------------------------------------------------------------


def reverse_compute_inline(index: FuncIndex, r: BlockRealize) -> PrimFunc:
    """Fold consumer ``r`` into the store of its only producer and remove it."""
    P = "reverse_compute_inline"
    block = r.block
    store = store_of(block)
    if store is None:
        fail(P, f"the body of block {block.name!r} is not a single buffer store")
    if not is_complete(block) or block.alloc_buffers or block.match_buffers:
        fail(P, f"block {block.name!r} is not an elementwise consumer (it reduces, has "
             "opaque variables, allocates, or reads what it writes)")
    if not is_trivial_predicate(r.predicate):
        fail(P, f"block {block.name!r} has a predicate; it must cover its whole domain")
    prods = producers(index, r)
    if len(prods) != 1:
        fail(P, f"block {block.name!r} has {len(prods)} producer blocks; it can be inlined "
             "only into a single producer")
    p = prods[0]
    pstore = store_of(p.block)
    if pstore is None or not is_complete(p.block) or p.block.alloc_buffers:
        fail(P, f"producer {p.block.name!r} of block {block.name!r} is not an elementwise "
             "block with a single store")
    buf = pstore.buffer
    pivs = {id(iv.var): iv for iv in p.block.iter_vars}
    if not is_var_tuple(pstore.indices, pivs) or len(pstore.indices) != len(pivs):
        fail(P, f"producer {p.block.name!r} does not store to {buf.name!r} at its own "
             "iteration variables, one per dimension")
    if id(buf) in index.param_buffer_ids() or is_output_block(index, p):
        fail(P, f"buffer {buf.name!r} is an output; it cannot be removed")
    for other in index.blocks.values():
        if other is r or other is p:
            continue
        if any(x.buffer is buf for x in other.block.reads) or \
                any(x.buffer is buf for x in other.block.writes):
            fail(P, f"buffer {buf.name!r} is also used by block {other.block.name!r}; only "
                 "its single consumer can be inlined")
    loads = loads_of(store.value, buf)
    civs = {id(iv.var): iv for iv in block.iter_vars}
    if not loads:
        fail(P, f"block {block.name!r} does not load buffer {buf.name!r} in its value")
    first = loads[0].indices
    for ld in loads:
        if not all(a is b for a, b in zip(ld.indices, first)):
            fail(P, f"block {block.name!r} loads {buf.name!r} at different indices")
    if not is_var_tuple(first, civs) or len(first) != len(civs):
        fail(P, f"block {block.name!r} loads {buf.name!r} at indices that are not its "
             "iteration variables, one per dimension, so it cannot be mapped onto the "
             "producer's iterations")
    an = Analyzer()
    for d, (cv, pw) in enumerate(zip(first, pstore.indices)):
        civ, piv = civs[id(cv)], pivs[id(pw)]
        for iv in (civ, piv):
            if not (an.can_prove_equal(iv.dom.min, 0)
                    and an.can_prove_equal(iv.dom.extent, buf.shape[d])):
                fail(P, f"block {iv.var.name} does not range over the whole dimension {d} of "
                     f"{buf.name!r}; the producer and consumer must cover the same domain")
    vmap = {id(cv): pw for cv, pw in zip(first, pstore.indices)}
    value = replace_loads(store.value,
                          lambda ld: pstore.value if ld.buffer is buf else None)
    value = substitute_vars(value, vmap)
    new_store = store.replace(value=value,
                              indices=tuple(substitute_vars(i, vmap) for i in store.indices))
    new_block = with_detected_regions(p.block.replace(body=new_store,
                                                      reads=p.block.reads + block.reads,
                                                      writes=block.writes))
    func = index.rebuild({id(index.removal_root(r)): None, id(p.block): new_block})
    return remove_alloc(func, buf)


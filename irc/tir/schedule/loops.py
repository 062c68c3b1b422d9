"""Loop primitives: split, fuse, reorder, loop kinds (parallel, vectorize, unroll, bind)
and annotations.

Each function takes the :class:`FuncIndex` of the current function and the resolved
nodes, checks the primitive's preconditions (raising :class:`ScheduleError` that names
the rule, the loop and the block) and returns the new function (and the new loop
variables where the primitive creates loops).
"""

from __future__ import annotations

from math import prod
from typing import Any

from ...core.functor import collect
from ..expr import IntImm, PrimExpr, Var, const, floordiv, floormod
from ..stmt import THREAD_TAGS, Block, BlockRealize, For, PrimFunc, SeqStmt
from .analysis import fail, loop_domains, loop_iter_types, loop_name
from .iter_map import covers, detect, used_digits
from .rewrite import Simplify, rewrite_bindings
from .state import FuncIndex, child_blocks, var_ids

_KIND_WORD = {"parallel": "parallel", "vectorized": "vectorized", "unrolled": "unrolled",
              "thread_binding": "bound to a thread axis"}


def _need_serial(primitive: str, loop: For) -> None:
    if loop.kind != "serial":
        fail(primitive, f"loop {loop_name(loop)} is {_KIND_WORD.get(loop.kind, loop.kind)}; "
             f"{primitive} works on serial loops",
             hint=f"apply {primitive} before changing the loop kind")


# ---------------------------------------------------------------------------------
# split
# ---------------------------------------------------------------------------------


def split(index: FuncIndex, loop: For, factors: list[int | None], preserve_unit_iters: bool,
          simplify: Simplify, analyzer) -> tuple[PrimFunc, list[Var]]:
    """Split ``loop`` into ``len(factors)`` nested loops; one factor may be None
    (inferred). A product larger than the extent adds a predicate to the blocks."""
    P = "split"
    _need_serial(P, loop)
    if not factors:
        fail(P, f"no factors given for loop {loop_name(loop)}")
    n_none = sum(f is None for f in factors)
    if n_none > 1:
        fail(P, f"factors {factors} of loop {loop_name(loop)} have more than one None; at "
             "most one factor can be inferred")
    for f in factors:
        if f is not None and (not isinstance(f, int) or f <= 0):
            fail(P, f"factor {f!r} of loop {loop_name(loop)} is not a positive integer")
    dtype = loop.loop_var.dtype
    known = prod(f for f in factors if f is not None)
    ext = loop.extent
    values: list[PrimExpr]
    if type(ext) is IntImm:
        total_ext = ext.value
        fs = [(-(-total_ext // known) if f is None else f) for f in factors]
        total = prod(fs)
        if total < total_ext:
            fail(P, f"factors {fs} multiply to {total}, less than the extent {total_ext} of "
                 f"loop {loop_name(loop)}: the split would drop iterations",
                 hint="give factors whose product covers the extent, or None for one of them")
        need_predicate = total != total_ext
        values = [const(f, dtype) for f in fs]
    else:
        if n_none == 0:
            if not analyzer.can_prove_equal(const(known, dtype), ext):
                fail(P, f"loop {loop_name(loop)} has the symbolic extent {ext}; the factors "
                     f"{factors} cannot be proven to cover it",
                     hint="give one factor as None to infer it from the extent")
            values = [const(f, dtype) for f in factors]
            need_predicate = False
        else:
            inferred = simplify(floordiv(ext + (known - 1), known))
            values = [inferred if f is None else const(f, dtype) for f in factors]
            need_predicate = known != 1
    base = loop.loop_var.name
    new_vars = [Var(name=f"{base}_{k}", dtype=dtype) for k in range(len(factors))]
    fused: PrimExpr | None = None
    for k, v in enumerate(new_vars):
        if not preserve_unit_iters and type(values[k]) is IntImm and values[k].value == 1:
            continue
        stride = _product(values[k + 1:], dtype)
        term = v if (type(stride) is IntImm and stride.value == 1) else v * stride
        fused = term if fused is None else fused + term
    if fused is None:
        fused = const(0, dtype)
    value = fused if _is_zero(loop.min) else loop.min + fused
    predicate = None
    if need_predicate:
        predicate = fused < ext
    body = rewrite_bindings(loop.body, {id(loop.loop_var): value}, simplify, predicate)
    for v, extent in zip(reversed(new_vars), reversed(values)):
        body = For(loop_var=v, min=const(0, dtype), extent=extent, kind="serial", body=body)
    return index.rebuild({id(loop): body}), new_vars


def _product(values: list[PrimExpr], dtype: str) -> PrimExpr:
    out: PrimExpr = const(1, dtype)
    for v in values:
        if type(v) is IntImm and type(out) is IntImm:
            out = const(out.value * v.value, dtype)
        elif type(out) is IntImm and out.value == 1:
            out = v
        else:
            out = out * v
    return out


def _is_zero(e: PrimExpr) -> bool:
    return type(e) is IntImm and e.value == 0


# ---------------------------------------------------------------------------------
# fuse
# ---------------------------------------------------------------------------------


def fuse(index: FuncIndex, loops: list[For], preserve_unit_iters: bool,
         simplify: Simplify) -> tuple[PrimFunc, Var]:
    """Fuse directly nested loops (outermost first) into one loop."""
    P = "fuse"
    if not loops:
        fail(P, "no loops given")
    for lp in loops:
        _need_serial(P, lp)
    for outer, inner in zip(loops, loops[1:]):
        if outer is inner:
            fail(P, f"loop {loop_name(outer)} is given twice")
        if outer.body is not inner:
            if index.is_ancestor(inner, outer):
                fail(P, f"loops are not given outermost first: loop {loop_name(inner)} "
                     f"encloses loop {loop_name(outer)}")
            if type(outer.body) is SeqStmt and index.is_ancestor(outer, inner):
                fail(P, f"loop {loop_name(outer)} holds more than one statement, so loops "
                     f"{loop_name(outer)} and {loop_name(inner)} are not perfectly nested")
            fail(P, f"loops {loop_name(outer)} and {loop_name(inner)} are not adjacent: fuse "
                 "needs each loop to be the only statement in the body of the previous one")
    outer_ids: set[int] = set()
    for lp in loops:
        if not outer_ids.isdisjoint(var_ids((lp.min, lp.extent))):
            fail(P, f"the bounds of loop {loop_name(lp)} depend on an outer loop being fused; "
                 "fuse needs a rectangular loop nest")
        outer_ids.add(id(lp.loop_var))
    dtype = loops[0].loop_var.dtype
    for lp in loops:
        if lp.loop_var.dtype != dtype:
            fail(P, f"loop {loop_name(lp)} has dtype {lp.loop_var.dtype} but loop "
                 f"{loop_name(loops[0])} has {dtype}")
    extents = [lp.extent for lp in loops]
    name = "_".join(lp.loop_var.name for lp in loops) + "_fused"
    fused = Var(name=name, dtype=dtype)
    vmap: dict[int, PrimExpr] = {}
    for k, lp in enumerate(loops):
        inner = _product(extents[k + 1:], dtype)
        ext = extents[k]
        if not preserve_unit_iters and type(ext) is IntImm and ext.value == 1:
            value: PrimExpr = const(0, dtype)
        else:
            value = fused
            if not (type(inner) is IntImm and inner.value == 1):
                value = floordiv(value, inner)
            if k > 0:
                value = floormod(value, ext)
        if not _is_zero(lp.min):
            value = lp.min + value
        vmap[id(lp.loop_var)] = value
    body = rewrite_bindings(loops[-1].body, vmap, simplify)
    new_loop = For(loop_var=fused, min=const(0, dtype), extent=simplify(_product(extents, dtype)),
                   kind="serial", body=body)
    return index.rebuild({id(loops[0]): new_loop}), fused


# ---------------------------------------------------------------------------------
# reorder
# ---------------------------------------------------------------------------------


def reorder(index: FuncIndex, loops: list[For]) -> PrimFunc:
    """Permute loops of one perfectly nested chain into the given order."""
    P = "reorder"
    ids = [id(lp) for lp in loops]
    if len(set(ids)) != len(ids):
        fail(P, "a loop is given twice")
    if len(loops) < 2:
        return index.func
    depth = {id(lp): len(index.loops_above(lp)) for lp in loops}
    ordered = sorted(loops, key=lambda lp: depth[id(lp)])
    top, bottom = ordered[0], ordered[-1]
    for lp in ordered[:-1]:
        if not index.is_ancestor(lp, bottom):
            fail(P, f"loops {loop_name(lp)} and {loop_name(bottom)} are not in one chain: "
                 "neither encloses the other")
    if index.scope_realize(top) is not index.scope_realize(bottom):
        fail(P, f"loops {loop_name(top)} and {loop_name(bottom)} are in different blocks")
    chain = [top]
    while chain[-1] is not bottom:
        cur = chain[-1]
        nxt = cur.body
        if type(nxt) is not For:
            what = "more than one statement" if type(nxt) is SeqStmt else \
                f"a {type(nxt).__name__}"
            fail(P, f"loop {loop_name(cur)} holds {what} before loop {loop_name(bottom)}; "
                 "reorder needs the loops between the outermost and innermost given loop "
                 "to be perfectly nested")
        chain.append(nxt)
    given = set(ids)
    moved_ids = {id(lp.loop_var) for lp in loops}
    for r in child_blocks(bottom):
        kinds = loop_iter_types(r)
        for lp in loops:
            k = kinds.get(id(lp.loop_var), set())
            if "opaque" in k or "ordered" in k:
                fail(P, f"loop {loop_name(lp)} is bound to an opaque iteration variable of "
                     f"block {r.block.name!r}, whose iterations must run in order")
    slots = [i for i, lp in enumerate(chain) if id(lp) in given]
    new_chain = list(chain)
    for pos, lp in zip(slots, loops):
        new_chain[pos] = lp
    for k, lp in enumerate(new_chain):
        inner_ids = {id(x.loop_var) for x in new_chain[k + 1:]}
        used = var_ids((lp.min, lp.extent)) & moved_ids
        if not used.isdisjoint(inner_ids):
            fail(P, f"the bounds of loop {loop_name(lp)} depend on a loop that would be "
                 "moved inside it")
    body = bottom.body
    for lp in reversed(new_chain):
        body = lp.replace(body=body)
    return index.rebuild({id(top): body})


# ---------------------------------------------------------------------------------
# loop kinds
# ---------------------------------------------------------------------------------


def set_kind(index: FuncIndex, loop: For, kind: str, thread: str = "") -> PrimFunc:
    """Make ``loop`` parallel, vectorized, unrolled or bound to ``thread``."""
    P = {"parallel": "parallel", "vectorized": "vectorize", "unrolled": "unroll",
         "thread_binding": "bind"}[kind]
    if kind == "thread_binding" and thread not in THREAD_TAGS:
        fail(P, f"unknown thread axis {thread!r}; use one of {', '.join(THREAD_TAGS)}")
    if loop.kind != "serial":
        if loop.kind == kind and kind != "thread_binding":
            return index.func
        if loop.kind == "thread_binding":
            fail(P, f"loop {loop_name(loop)} is already bound to {loop.thread_tag}; a loop "
                 "can be bound only once")
        fail(P, f"loop {loop_name(loop)} is already {_KIND_WORD[loop.kind]}")
    if kind != "unrolled":
        _check_parallelizable(index, loop, kind, P)
    if kind == "vectorized" and type(loop.extent) is not IntImm:
        fail(P, f"loop {loop_name(loop)} has the symbolic extent {loop.extent}; only loops "
             "with a constant extent can be vectorized", hint="split it by a constant first")
    if kind == "thread_binding":
        # A loop inside a loop bound to the same threadIdx axis shares its thread index:
        # the block's threads split the inner loop's work (a cooperative shared-memory
        # copy). That keeps the meaning of the loops only when the inner work does not
        # depend on the enclosing thread index (every thread would do all of it; they
        # share it instead). Other repeated bindings have no meaning on a GPU.
        around = {id(a) for a in index.ancestors(loop)}
        for other in _enclosing_and_enclosed(index, loop):
            if other.kind != "thread_binding" or other.thread_tag != thread:
                continue
            if id(other) in around and thread.startswith("threadIdx"):
                if _uses_var(loop, other.loop_var):
                    fail(P, f"loop {loop_name(loop)} depends on the variable of loop "
                         f"{loop_name(other)}, which is already bound to {thread}; a loop "
                         f"inside it may be bound to {thread} only when its work does not "
                         "depend on that thread index (as a cooperative copy)")
                continue
            fail(P, f"loop {loop_name(other)} around or inside loop {loop_name(loop)} is "
                 f"already bound to {thread}")
    if kind == "parallel":
        for other in _enclosing_and_enclosed(index, loop):
            if other.kind == "parallel":
                fail(P, f"loop {loop_name(other)} around or inside loop {loop_name(loop)} is "
                     "already parallel; nested parallel loops are not supported",
                     hint="fuse the loops and parallelize the fused loop")
    new = loop.replace(kind=kind, thread_tag=thread if kind == "thread_binding" else "")
    return index.rebuild({id(loop): new})


def _uses_var(loop: For, v: Var) -> bool:
    """Whether ``v`` occurs in ``loop`` (its extent, blocks' bindings and predicates)."""
    return any(x is v for x in collect(loop, lambda x: type(x) is Var))


def _enclosing_and_enclosed(index: FuncIndex, loop: For) -> list[For]:
    out = [a for a in index.ancestors(loop) if type(a) is For]
    stack = [loop.body]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is For:
            out.append(x)
            stack.append(x.body)
        elif t is SeqStmt:
            stack.extend(x.seq)
        elif t is BlockRealize:
            stack.append(x.block)
        elif t is Block:
            stack.append(x.body)
    return out


def _check_parallelizable(index: FuncIndex, loop: For, kind: str, P: str) -> None:
    """The loop's iterations must be independent: its variable may only feed spatial
    iteration variables, and a block that does not depend on it must not write memory
    shared across iterations."""
    if isinstance(loop.extent, IntImm) and loop.extent.value == 1:
        return  # one iteration: nothing runs concurrently
    lv = id(loop.loop_var)
    what = {"parallel": "a parallel", "vectorized": "a vectorized",
            "thread_binding": "a thread-bound"}[kind]
    blocks = child_blocks(loop)
    for r in blocks:
        kinds = loop_iter_types(r).get(lv, set())
        if "reduce" in kinds:
            hint = ("parallelize a spatial loop, or use rfactor to make the reduction "
                    "parallel")
            if kind == "thread_binding":
                hint = ("irc does not lower cross-thread reductions; rfactor the loop and "
                        "bind the factored (spatial) loop")
            fail(P, f"loop {loop_name(loop)} feeds a reduction variable of block "
                 f"{r.block.name!r}: {what} loop cannot carry a reduction dependence",
                 hint=hint)
        if kinds - {"spatial"}:
            fail(P, f"loop {loop_name(loop)} feeds an opaque iteration variable of block "
                 f"{r.block.name!r}, whose iterations must run in order")
        if kind == "vectorized":
            continue
        if not kinds or not _covers_loop(index, r, loop):
            for w in r.block.writes:
                if _shared_outside(index, loop, w.buffer):
                    fail(P, f"every iteration of loop {loop_name(loop)} runs block "
                         f"{r.block.name!r} on the same part of buffer {w.buffer.name!r}, "
                         "which is shared across iterations: a data race",
                         hint="parallelize a loop that the block's spatial indices use")


def _covers_loop(index: FuncIndex, r: BlockRealize, loop: For) -> bool:
    """True when distinct values of the loop variable give distinct spatial indices."""
    loops = index.loops_above(r)
    doms = loop_domains(loops)
    spatial = [v for iv, v in zip(r.block.iter_vars, r.iter_values) if iv.iter_type == "spatial"]
    if doms is None:
        return True  # symbolic loops: the variable feeds spatial indices (checked above)
    forms = detect(spatial, doms)
    if forms is None:
        return True
    lid = id(loop.loop_var)
    ext = doms[lid][2]
    if ext == 1:
        return True
    return covers(used_digits(forms).get(lid, []), ext)


def _shared_outside(index: FuncIndex, loop: For, buf) -> bool:
    """True when ``buf`` is a parameter or is accessed by a block outside ``loop``."""
    if id(buf) in index.param_buffer_ids():
        return True
    inside = {id(r) for r in child_blocks(loop)}
    for r in index.blocks.values():
        if id(r) in inside or r is index.root:
            continue
        if index.is_ancestor(loop, r):
            continue
        b = r.block
        if any(x.buffer is buf for x in b.reads) or any(x.buffer is buf for x in b.writes):
            return True
    return False


def add_unit_loop(index: FuncIndex, target) -> tuple[PrimFunc, Var]:
    """Wrap a loop (For) or a block (BlockRealize) in a new loop of extent 1."""
    if target is index.root:
        fail("add_unit_loop", "the root block cannot be wrapped in a loop")
    dtype = target.loop_var.dtype if type(target) is For else "int32"
    u = Var(name="u", dtype=dtype)
    loop = For(loop_var=u, min=const(0, dtype), extent=const(1, dtype), kind="serial",
               body=target)
    return index.rebuild({id(target): loop}), u


# ---------------------------------------------------------------------------------
# annotations
# ---------------------------------------------------------------------------------

_ANNOTATION_TYPES = (int, float, str, bool)


def check_annotation_value(value: Any, P: str) -> Any:
    """Annotation values are numbers, strings, bools and (nested) lists of them."""
    if isinstance(value, _ANNOTATION_TYPES):
        return value
    if isinstance(value, (list, tuple)):
        return [check_annotation_value(v, P) for v in value]
    fail(P, f"annotation value {value!r} has type {type(value).__name__}; use a number, a "
         "string, a bool or a list of them")


def annotate(index: FuncIndex, target, key: str, value: Any) -> PrimFunc:
    """Set ``annotations[key] = value`` on a loop (For) or a block (BlockRealize)."""
    P = "annotate"
    if not isinstance(key, str) or not key:
        fail(P, f"annotation key {key!r} must be a non-empty string")
    value = check_annotation_value(value, P)
    if type(target) is For:
        new = target.replace(annotations={**target.annotations, key: value})
        return index.rebuild({id(target): new})
    block = target.block
    new_block = block.replace(annotations={**block.annotations, key: value})
    return index.rebuild({id(block): new_block})


def unannotate(index: FuncIndex, target, key: str) -> PrimFunc:
    """Remove annotation ``key`` from a loop or a block."""
    P = "unannotate"
    node = target if type(target) is For else target.block
    if key not in node.annotations:
        what = f"loop {loop_name(node)}" if type(node) is For else f"block {node.name!r}"
        fail(P, f"{what} has no annotation {key!r}; it has "
             f"{sorted(node.annotations) or 'none'}")
    ann = {k: v for k, v in node.annotations.items() if k != key}
    return index.rebuild({id(node): node.replace(annotations=ann)})


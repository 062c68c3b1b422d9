"""blockize and tensorize, with a small registry of tensor intrinsics.

blockize wraps the subtree of a loop (a chain of loops over one block) in an outer
block. Each binding of the inner block is divided into an outer part (loops outside) and
an inner part (loops inside) with the iteration-map detector: ``v = vo * c + vi``, where
``vi`` enumerates ``[0, c)`` over the inner loops. Reductions whose variables are split
across the boundary move their init to the outer block.

tensorize matches a block (after blockize, for a loop) against the description of a
registered intrinsic and replaces its body with the implementation. Matching views every
buffer region the block accesses as a buffer of the region's shape (``match_buffer``)
and compares the viewed body with the description's body structurally.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.diagnostics import ScheduleError
from ...core.functor import Mutator
from ...core.structural import structural_equal
from ..arith import Analyzer
from ..buffer import Buffer, BufferRegion, MatchBufferRegion, decl_buffer
from ..expr import BufferLoad, IntImm, IterVar, PrimExpr, Range, Var, const, max_, min_
from ..stmt import Block, BlockRealize, BufferStore, For, PrimFunc, Stmt
from .analysis import fail, is_trivial_predicate, loop_domains, loop_name
from .iter_map import AffineForm, Digit, detect, is_mixed_radix, to_expr
from .rewrite import substitute_vars, with_detected_regions
from .state import FuncIndex, child_blocks, fresh_name


def blockize(index: FuncIndex, loop: For, preserve_unit_iters: bool, analyzer: Analyzer
             ) -> tuple[PrimFunc, str]:
    """Wrap the subtree of ``loop`` in a new block; returns its name."""
    P = "blockize"
    blocks = child_blocks(loop)
    if len(blocks) != 1:
        fail(P, f"loop {loop_name(loop)} holds {len(blocks)} blocks; blockize supports a "
             "loop nest over exactly one block")
    r = blocks[0]
    block = r.block
    all_loops = index.loops_above(r)
    pos = next(k for k, lp in enumerate(all_loops) if lp is loop)
    inner_loops = all_loops[pos:]
    if not all(a.body is b for a, b in zip(inner_loops, inner_loops[1:])) or \
            inner_loops[-1].body is not r:
        fail(P, f"the loops under loop {loop_name(loop)} are not a simple nest over block "
             f"{block.name!r}")
    if not is_trivial_predicate(r.predicate):
        fail(P, f"block {block.name!r} has a predicate (from a split that does not divide); "
             "blockize needs a block without one")
    doms = loop_domains(all_loops)
    forms = detect(r.iter_values, doms) if doms is not None else None
    if forms is None:
        fail(P, f"the bindings of block {block.name!r} are not affine in constant loops")
    inner_ids = {id(lp.loop_var) for lp in inner_loops}
    outer_ivs: list[IterVar] = []
    outer_values: list[PrimExpr] = []
    inner_ivs: list[IterVar] = []
    inner_values: list[PrimExpr] = []
    subst: dict[int, PrimExpr] = {}
    for iv, f in zip(block.iter_vars, forms):
        dtype = iv.var.dtype
        inner = AffineForm(tuple(d for d in f.digits if id(d.var) in inner_ids), 0)
        outer = [d for d in f.digits if id(d.var) not in inner_ids]
        if not is_mixed_radix(inner):
            fail(P, f"the inner loops do not enumerate variable {iv.var.name} of block "
                 f"{block.name!r} contiguously")
        c = 1
        for d in inner.digits:
            c *= d.extent
        if any(d.scale % c for d in outer) or f.base % c:
            fail(P, f"variable {iv.var.name} of block {block.name!r} cannot be divided into "
                 f"an outer part and an inner part of extent {c}")
        if type(iv.dom.min) is not IntImm or iv.dom.min.value != 0 or \
                type(iv.dom.extent) is not IntImm or iv.dom.extent.value % c:
            fail(P, f"the domain of variable {iv.var.name} of block {block.name!r} is not a "
                 f"multiple of the inner extent {c}")
        outer_form = AffineForm(tuple(Digit(d.var, d.lower, d.extent, d.scale // c)
                                      for d in outer), f.base // c)
        vo = Var(name=f"{iv.var.name}_o", dtype=dtype)
        o_ext = iv.dom.extent.value // c
        keep_outer = o_ext > 1 or preserve_unit_iters or c == 1
        value: PrimExpr
        if keep_outer:
            outer_ivs.append(IterVar(var=vo, dom=Range(min=const(0, dtype),
                                                       extent=const(o_ext, dtype)),
                                     iter_type=iv.iter_type))
            outer_values.append(analyzer.simplify(to_expr(outer_form, dtype, doms)))
            value = vo
        else:
            value = const(0, dtype)
        if c > 1:
            vi = Var(name=f"{iv.var.name}_i", dtype=dtype)
            inner_ivs.append(IterVar(var=vi, dom=Range(min=const(0, dtype),
                                                       extent=const(c, dtype)),
                                     iter_type=iv.iter_type))
            inner_values.append(analyzer.simplify(to_expr(inner, dtype, doms)))
            value = vi if not keep_outer else value * c + vi
        subst[id(iv.var)] = value
    outer_reduce = any(iv.iter_type == "reduce" and type(iv.dom.extent) is IntImm
                       and iv.dom.extent.value > 1 for iv in outer_ivs)
    inner_block = substitute_vars(block.replace(iter_vars=tuple(inner_ivs)), subst)
    outer_init = None
    if block.init is not None and outer_reduce:
        outer_init = _init_nest(block, inner_ivs, subst,
                                fresh_name(f"{block.name}_init", index.all_names()))
        inner_block = with_detected_regions(inner_block.replace(init=None), inner_block)
    inner_realize = BlockRealize(iter_values=tuple(inner_values), predicate=const(True),
                                 block=inner_block)
    body: Stmt = inner_realize
    for lp in reversed(inner_loops):
        body = lp.replace(body=body)
    name = fresh_name(f"{block.name}_o", index.all_names())
    outer = with_detected_regions(Block(name=name, iter_vars=tuple(outer_ivs), reads=(),
                                        writes=(), body=body, init=outer_init), block)
    # irc's block form does not let a block use the variables of an enclosing block, so
    # the inner block reads and writes views of the outer block's regions (match_buffer)
    # with indices relative to the region's start.
    outer = _with_views(P, outer, {id(iv.var) for iv in outer_ivs}, analyzer)
    realize = BlockRealize(iter_values=tuple(outer_values), predicate=const(True), block=outer)
    return index.rebuild({id(loop): realize}), name


def _init_nest(block: Block, inner_ivs: list[IterVar], subst: dict[int, PrimExpr],
               name: str) -> Stmt:
    """The outer block's init: the original init over the inner spatial variables."""
    ivs = []
    loops = []
    vmap: dict[int, PrimExpr] = {}
    for iv in inner_ivs:
        if iv.iter_type != "spatial":
            continue
        nv = Var(name=f"{iv.var.name}_init", dtype=iv.var.dtype)
        lv = Var(name=f"{iv.var.name}_l", dtype=iv.var.dtype)
        ivs.append(IterVar(var=nv, dom=iv.dom, iter_type="spatial"))
        loops.append((lv, iv.dom.extent))
        vmap[id(iv.var)] = nv
    init = substitute_vars(substitute_vars(block.init, subst), vmap)
    init_block = with_detected_regions(Block(name=name, iter_vars=tuple(ivs),
                                             reads=(), writes=(), body=init))
    stmt: Stmt = BlockRealize(iter_values=tuple(lv for lv, _ in loops), predicate=const(True),
                              block=init_block)
    for lv, ext in reversed(loops):
        stmt = For(loop_var=lv, min=const(0, lv.dtype), extent=ext, kind="serial", body=stmt)
    return stmt


# ---------------------------------------------------------------------------------
# tensor intrinsics
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorIntrin:
    """A computation (``desc``) and its replacement (``impl``): block-form PrimFuncs
    with the same parameters; the root block body of ``desc`` is what a tensorized block
    must compute, that of ``impl`` replaces it."""

    name: str
    desc: PrimFunc
    impl: PrimFunc

    @staticmethod
    def register(name: str, desc: PrimFunc, impl: PrimFunc, override: bool = False) -> None:
        """Register an intrinsic under ``name``."""
        if name in _INTRINSICS and not override:
            raise ScheduleError(f"tensor intrinsic {name!r} is already registered")
        if len(desc.params) != len(impl.params):
            raise ScheduleError(f"tensor intrinsic {name!r}: desc and impl take different "
                                "numbers of parameters")
        for f in (desc, impl):
            if type(f.body) is not BlockRealize:
                raise ScheduleError(f"tensor intrinsic {name!r}: desc and impl must be in "
                                    "block form")
        _INTRINSICS[name] = TensorIntrin(name, desc, impl)

    @staticmethod
    def get(name: str) -> TensorIntrin:
        """The intrinsic registered under ``name``."""
        _register_builtins()
        intrin = _INTRINSICS.get(name)
        if intrin is None:
            raise ScheduleError(f"no tensor intrinsic named {name!r}; registered: "
                                f"{sorted(_INTRINSICS)}")
        return intrin


_INTRINSICS: dict[str, TensorIntrin] = {}


def tensorize(index: FuncIndex, node, intrin_name: str, analyzer: Analyzer) -> PrimFunc:
    """Replace the body of a blockized block (or of the subtree of a loop, blockized
    first) with an intrinsic's implementation."""
    P = "tensorize"
    intrin = TensorIntrin.get(intrin_name)
    if type(node) is For:
        func, name = blockize(index, node, True, analyzer)
        index = FuncIndex(func)
        node = index.blocks[name]
    block = node.block
    if not block.match_buffers:
        fail(P, f"block {block.name!r} was not made by blockize (it has no views of the "
             "regions it accesses)", hint="tensorize the loop, or blockize it first")
    desc_body = intrin.desc.body.block.body
    if not structural_equal(_rename_blocks(block.body), _rename_blocks(desc_body)):
        fail(P, f"block {block.name!r} does not compute what intrinsic {intrin_name!r} "
             "describes (loops, block variables, indices and operations must match)")
    # Both bodies have the same shape, so buffers first met at the same place correspond.
    by_desc = {id(d): v for d, v in zip(_buffer_order(desc_body), _buffer_order(block.body))}
    params = [intrin.desc.buffer_map[p] for p in intrin.desc.params]
    impl_params = [intrin.impl.buffer_map[p] for p in intrin.impl.params]
    bmap = {}
    for dp, ip in zip(params, impl_params):
        if id(dp) not in by_desc:
            fail(P, f"intrinsic {intrin_name!r} has a parameter its description never uses")
        bmap[id(ip)] = by_desc[id(dp)]
    impl_body = _fresh_copy(intrin.impl.body.block.body, bmap)
    new_block = block.replace(body=impl_body)
    return index.rebuild({id(block): new_block})


def _with_views(P: str, outer: Block, outer_vars: set[int], an: Analyzer) -> Block:
    """``outer`` with a match_buffer view per region it accesses; the statements inside
    (body and init) use the views at indices relative to the region's start."""
    regions: dict[int, BufferRegion] = {}
    for reg in outer.reads + outer.writes:
        old = regions.get(id(reg.buffer))
        if old is None:
            regions[id(reg.buffer)] = reg
        else:  # read and written: view the hull of both
            regions[id(reg.buffer)] = _hull(an, old, reg)
    views: dict[int, Buffer] = {}
    matches = []
    taken: set[str] = set()
    for reg in regions.values():
        shape = tuple(an.simplify(rg.extent) for rg in reg.region)
        if not all(type(x) is IntImm for x in shape):
            fail(P, f"block {outer.name!r} accesses a region of {reg.buffer.name!r} whose "
                 "shape is not constant")
        name = fresh_name(f"{reg.buffer.name}_view", taken)
        view = Buffer(name=name, shape=shape, dtype=reg.buffer.dtype,
                      data=Var(name=name, dtype="handle"), scope=reg.buffer.scope)
        views[id(reg.buffer)] = view
        matches.append(MatchBufferRegion(buffer=view, source=BufferRegion(
            buffer=reg.buffer, region=tuple(Range(min=rg.min, extent=ext)
                                             for rg, ext in zip(reg.region, shape)))))
    starts = {k: [rg.min for rg in reg.region] for k, reg in regions.items()}

    def shift(buf: Buffer, idx) -> tuple:
        return tuple(an.simplify(i - s) for i, s in zip(idx, starts[id(buf)]))

    class _ToView(Mutator):
        def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
            e = self.generic_visit(e)
            if id(e.buffer) not in views:
                return e
            return BufferLoad(dtype=e.dtype, buffer=views[id(e.buffer)],
                              indices=shift(e.buffer, e.indices))

        def visit_BufferStore(self, st: BufferStore):
            st = self.generic_visit(st)
            if id(st.buffer) not in views:
                return st
            return BufferStore(buffer=views[id(st.buffer)], value=st.value,
                               indices=shift(st.buffer, st.indices))

        def visit_BufferRegion(self, reg: BufferRegion) -> BufferRegion:
            if id(reg.buffer) not in views:
                return reg
            return BufferRegion(buffer=views[id(reg.buffer)], region=tuple(
                Range(min=m, extent=rg.extent)
                for m, rg in zip(shift(reg.buffer, [r.min for r in reg.region]),
                                 reg.region)))

    tv = _ToView()
    body = tv.visit(outer.body)
    init = None if outer.init is None else tv.visit(outer.init)
    if not outer_vars.isdisjoint(_used_vars(body)) or \
            (init is not None and not outer_vars.isdisjoint(_used_vars(init))):
        fail(P, f"the accesses inside block {outer.name!r} do not separate into an offset "
             "chosen by the outer iteration and an index chosen by the inner loops")
    return outer.replace(body=body, init=init, match_buffers=tuple(matches))


def _hull(an: Analyzer, a: BufferRegion, b: BufferRegion) -> BufferRegion:
    out = []
    for x, y in zip(a.region, b.region):
        if structural_equal(x, y):
            out.append(x)
            continue
        lo = an.simplify(min_(x.min, y.min))
        hi = an.simplify(max_(x.min + x.extent, y.min + y.extent))
        out.append(Range(min=lo, extent=an.simplify(hi - lo)))
    return BufferRegion(buffer=a.buffer, region=tuple(out))


def _used_vars(node) -> set[int]:
    out: set[int] = set()

    class _V(Mutator):
        def visit_Var(self, v: Var) -> Var:
            out.add(id(v))
            return v

    _V().visit(node)
    return out


def _rename_blocks(s: Stmt) -> Stmt:
    """``s`` with every block named ``_`` (names do not take part in matching)."""

    class _R(Mutator):
        def visit_Block(self, b: Block) -> Block:
            return self.generic_visit(b).replace(name="_", annotations={})

    return _R().visit(s)


def _buffer_order(s: Stmt) -> list[Buffer]:
    """Buffers in order of first access (stores and loads, body order)."""
    out: list[Buffer] = []
    seen: set[int] = set()

    class _C(Mutator):
        def visit_Buffer(self, b: Buffer) -> Buffer:
            if id(b) not in seen:
                seen.add(id(b))
                out.append(b)
            return b

    _C().visit(s)
    return out


def _fresh_copy(s: Stmt, bmap: dict[int, Buffer]) -> Stmt:
    """``s`` with buffers replaced and every loop and block variable renewed (so one
    implementation can be inserted many times)."""

    class _F(Mutator):
        def __init__(self) -> None:
            super().__init__()
            self.vars: dict[int, Var] = {}

        def visit_Buffer(self, b: Buffer) -> Buffer:
            return bmap.get(id(b), b)

        def visit_Var(self, v: Var) -> Var:
            return self.vars.get(id(v), v)

        def visit_For(self, f: For):
            self.vars[id(f.loop_var)] = Var(name=f.loop_var.name, dtype=f.loop_var.dtype)
            return self.generic_visit(f)

        def visit_IterVar(self, iv: IterVar):
            self.vars[id(iv.var)] = Var(name=iv.var.name, dtype=iv.var.dtype)
            return self.generic_visit(iv)

    return _F().visit(s)


_BUILTINS_DONE = False


def _register_builtins() -> None:
    """irc's own intrinsics: ``irc.fma_f32x4`` / ``irc.fma_f32x8`` (``C[i] += A[i] *
    B[i]`` over 4 or 8 lanes, implemented as a vectorized loop)."""
    global _BUILTINS_DONE
    if _BUILTINS_DONE:
        return
    _BUILTINS_DONE = True
    for lanes in (4, 8):
        TensorIntrin.register(f"irc.fma_f32x{lanes}", _fma(lanes, "serial"),
                              _fma(lanes, "vectorized"), override=True)


def _fma(lanes: int, kind: str) -> PrimFunc:
    bufs = [decl_buffer((lanes,), "float32", n) for n in ("A", "B", "C")]
    a, b, c = bufs
    i = Var(name="i", dtype="int32")
    vi = Var(name="vi", dtype="int32")
    iv = IterVar(var=vi, dom=Range(min=const(0), extent=const(lanes)), iter_type="spatial")
    value = c[vi] + a[vi] * b[vi]
    store = BufferStore(buffer=c, value=value, indices=(vi,))
    point = lambda buf: BufferRegion.from_indices(buf, (vi,))
    block = Block(name="update", iter_vars=(iv,), reads=(point(c), point(a), point(b)),
                  writes=(point(c),), body=store)
    loop = For(loop_var=i, min=const(0), extent=const(lanes), kind=kind,
               body=BlockRealize(iter_values=(i,), predicate=const(True), block=block))
    root = Block(name="root", iter_vars=(), reads=(), writes=(), body=loop)
    params = tuple(Var(name=n, dtype="handle") for n in ("a", "b", "c"))
    return PrimFunc(params=params, buffer_map=dict(zip(params, bufs)),
                    body=BlockRealize(iter_values=(), predicate=const(True), block=root))

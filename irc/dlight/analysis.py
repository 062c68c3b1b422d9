"""Block analysis for the default rules: which loops are spatial or reduction, how
buffers are indexed, and which blocks can be inlined.

A function is *normalized* when every block of the root scope sits under its own loop
nest and every loop feeds exactly one iteration variable, bound to the loop variable
itself (what legalization and ``te.create_prim_func`` produce). Then each loop has a kind
— ``"S"`` (spatial), ``"R"`` (reduction) or ``"O"`` (anything else) — and a block's
*dom kind* is the string of its loops' kinds, e.g. ``"SSR"`` for a matmul or
``"SSSSRRR"`` for a conv2d. Rules compare dom kinds and read access strides (how far a
buffer access moves in memory when one iteration variable steps by one) to decide what
to vectorize, what to keep in registers and what to parallelize.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.diagnostics import ScheduleError
from ..core.node import Node, node_fields
from ..core.structural import structural_equal
from ..tir.analysis.buffer_access import collect_buffer_accesses
from ..tir.buffer import Buffer
from ..tir.expr import (
    Add,
    BufferLoad,
    Call,
    Cast,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    Sub,
    Var,
)
from ..tir.schedule import BlockRV, LoopRV, Schedule
from ..tir.schedule.state import FuncIndex, child_blocks, var_ids
from ..tir.stmt import Block, BlockRealize, BufferStore, For

# ---------------------------------------------------------------------------------
# Loop and block kinds
# ---------------------------------------------------------------------------------


@dataclass
class IterInfo:
    """One loop above a block: its kind (``"S"``, ``"R"`` or ``"O"``), the block
    iteration variable it feeds (None for ``"O"`` loops and unused loops), its extent
    and its handle."""

    kind: str
    var: Var | None
    extent: PrimExpr
    loop_rv: LoopRV

    @property
    def const_extent(self) -> int | None:
        """The extent when it is a constant."""
        return self.extent.value if type(self.extent) is IntImm else None


@dataclass
class BlockInfo:
    """A block of the root scope with its loops classified (see the module docstring)."""

    name: str
    block_rv: BlockRV
    block: Block
    realize: BlockRealize
    iters: list[IterInfo] = field(default_factory=list)

    def dom_kind(self) -> str:
        """The kinds of the block's loops, outermost first (e.g. ``"SSR"``)."""
        return "".join(it.kind for it in self.iters)

    def is_reduction(self) -> bool:
        """A reduction block: it has an init and at least one reduction loop, and all its
        loops are spatial or reduction loops."""
        kinds = self.dom_kind()
        return self.block.init is not None and "R" in kinds and "O" not in kinds

    def is_injective(self) -> bool:
        """Only spatial loops and no init (elementwise, broadcast, transpose, ...)."""
        return self.block.init is None and all(it.kind == "S" for it in self.iters) \
            and all(iv.iter_type == "spatial" for iv in self.block.iter_vars)

    def has_trivial_predicate(self) -> bool:
        """True when the block runs on its whole domain (no ``T.where``)."""
        p = self.realize.predicate
        return type(p) is IntImm and p.value == 1

    def spatial(self) -> list[IterInfo]:
        """The spatial loops, outermost first."""
        return [it for it in self.iters if it.kind == "S"]

    def reduction(self) -> list[IterInfo]:
        """The reduction loops, outermost first."""
        return [it for it in self.iters if it.kind == "R"]

    def iter_of(self, var: Var) -> IterInfo | None:
        """The loop feeding block iteration variable ``var``."""
        return next((it for it in self.iters if it.var is var), None)


def root_block_rv(sch: Schedule) -> BlockRV:
    """The handle of the function's root block."""
    index = FuncIndex(sch.func)
    return sch.get_block(index.root.block.name)


def _classify(realize: BlockRealize, loops: list[For]) -> list[tuple[str, Var | None]]:
    block = realize.block
    users: dict[int, list[int]] = {}
    for k, value in enumerate(realize.iter_values):
        for lp in loops:
            if _uses(value, lp.loop_var):
                users.setdefault(id(lp.loop_var), []).append(k)
    out: list[tuple[str, Var | None]] = []
    for lp in loops:
        ks = users.get(id(lp.loop_var), [])
        if not ks:
            out.append(("S" if _is_one(lp.extent) else "O", None))
            continue
        if len(ks) != 1 or realize.iter_values[ks[0]] is not lp.loop_var:
            out.append(("O", None))
            continue
        iv = block.iter_vars[ks[0]]
        kind = {"spatial": "S", "reduce": "R"}.get(iv.iter_type, "O")
        out.append((kind, iv.var))
    return out


def _uses(e: PrimExpr, v: Var) -> bool:
    return id(v) in var_ids(e)


def _is_one(e: PrimExpr) -> bool:
    return type(e) is IntImm and e.value == 1


def get_block_infos(sch: Schedule) -> list[BlockInfo] | None:
    """The blocks of the root scope of the schedule's current function, in execution
    order, with classified loops; None when the function is not in block form."""
    index = FuncIndex(sch.func)
    try:
        root = index.root
    except ScheduleError:
        return None
    return [_info(sch, index, r) for r in child_blocks(root)]


def loop_users(sch: Schedule, name: str) -> list[tuple[LoopRV, list]]:
    """For each loop above block ``name`` (outermost first, up to its enclosing block):
    its handle and the block's iteration variables (``IterVar``) whose bindings use it.
    Unlike the loop kinds of :class:`BlockInfo`, bindings may be any expressions, such as
    ``bx * 4 + tx`` after a split."""
    index = FuncIndex(sch.func)
    r = index.blocks[name]
    loops = index.loops_above(r)
    rvs = sch.get_loops(sch.get_block(name))
    out = []
    for lp, rv in zip(loops, rvs):
        users = [iv for iv, v in zip(r.block.iter_vars, r.iter_values) if _uses(v, lp.loop_var)]
        out.append((rv, users))
    return out


def _info(sch: Schedule, index: FuncIndex, r: BlockRealize) -> BlockInfo:
    rv = sch.get_block(r.block.name)
    loops = index.loops_above(r)
    loop_rvs = sch.get_loops(rv)
    kinds = _classify(r, loops)
    iters = [IterInfo(kind=k, var=v, extent=lp.extent, loop_rv=lrv)
             for (k, v), lp, lrv in zip(kinds, loops, loop_rvs)]
    return BlockInfo(name=r.block.name, block_rv=rv, block=r.block, realize=r, iters=iters)


def is_normalized(infos: list[BlockInfo]) -> bool:
    """True when every loop of every block maps to one iteration variable (or is a unit
    loop): no ``"O"`` loops."""
    return all("O" not in b.dom_kind() for b in infos)


# ---------------------------------------------------------------------------------
# Index analysis
# ---------------------------------------------------------------------------------


def linear_form(e: PrimExpr) -> tuple[dict[int, int], int] | None:
    """``e`` as ``sum(coef * var) + const`` with integer coefficients (keys: variable
    ids), or None when it is not of that form."""
    t = type(e)
    if t is IntImm:
        return {}, e.value
    if t is Var:
        return {id(e): 1}, 0
    if t is Cast:
        return linear_form(e.value) if _is_int_dtype(e.dtype) else None
    if t is Add or t is Sub:
        a, b = linear_form(e.a), linear_form(e.b)
        if a is None or b is None:
            return None
        sign = 1 if t is Add else -1
        coeffs = dict(a[0])
        for k, c in b[0].items():
            coeffs[k] = coeffs.get(k, 0) + sign * c
        return {k: c for k, c in coeffs.items() if c}, a[1] + sign * b[1]
    if t is Mul:
        a, b = linear_form(e.a), linear_form(e.b)
        if a is None or b is None:
            return None
        if not a[0]:
            a, b = b, a
        if b[0]:
            return None
        k = b[1]
        return {v: c * k for v, c in a[0].items() if c * k}, a[1] * k
    if t is FloorDiv or t is FloorMod:
        a, b = linear_form(e.a), linear_form(e.b)
        if a is None or b is None or b[0] or b[1] <= 0:
            return None
        k = b[1]
        if k == 1:  # x // 1 == x and x % 1 == 0 (grouped convs with one channel a group)
            return (a[0], a[1]) if t is FloorDiv else ({}, 0)
        if not a[0]:
            return {}, (a[1] // k if t is FloorDiv else a[1] % k)
    return None


def _is_int_dtype(dtype: str) -> bool:
    return dtype.startswith("int") or dtype.startswith("uint")


def const_shape(buf: Buffer) -> list[int] | None:
    """The buffer's shape as integers (None when a dimension is symbolic)."""
    out = []
    for s in buf.shape:
        if type(s) is not IntImm:
            return None
        out.append(s.value)
    return out


def flat_strides(buf: Buffer, indices: tuple[PrimExpr, ...]) -> dict[int, int] | None:
    """How far (in elements) the access ``buf[indices]`` moves in row-major memory when
    a variable steps by one, per variable id (absent: 0). None when an index is not
    linear or the shape is symbolic."""
    shape = const_shape(buf)
    if shape is None or len(shape) != len(indices):
        return None
    out: dict[int, int] = {}
    stride = 1
    for dim, idx in zip(reversed(shape), reversed(indices)):
        form = linear_form(idx)
        if form is None:
            return None
        for v, c in form[0].items():
            out[v] = out.get(v, 0) + c * stride
        stride *= dim
    return {k: c for k, c in out.items() if c}


@dataclass
class Access:
    """A load or store of a block with its strides (see :func:`flat_strides`)."""

    buffer: Buffer
    indices: tuple[PrimExpr, ...]
    kind: str
    strides: dict[int, int] | None

    def stride(self, var: Var | None) -> int | None:
        """The stride of ``var`` (0 when the access does not use it; None when the
        access is not linear)."""
        if self.strides is None:
            return None
        if var is None:
            return 0
        return self.strides.get(id(var), 0)


def block_accesses(block: Block, include_init: bool = False) -> list[Access]:
    """The loads and stores of the block's body (and init, if asked), in order."""
    nodes = [block.body] + ([block.init] if include_init and block.init is not None else [])
    out = []
    for n in nodes:
        for a in collect_buffer_accesses(n, into_blocks=False):
            out.append(Access(a.buffer, a.indices, a.kind, flat_strides(a.buffer, a.indices)))
    return out


def loads(block: Block) -> list[Access]:
    """The loads of the block's body, excluding the reduction's own accumulator."""
    store = block.body if type(block.body) is BufferStore else None
    out = []
    for a in block_accesses(block):
        if a.kind != "read":
            continue
        if store is not None and block.init is not None and a.buffer is store.buffer:
            continue
        out.append(a)
    return out


def store_of(block: Block) -> BufferStore | None:
    """The block's body when it is a single buffer store."""
    return block.body if type(block.body) is BufferStore else None


def innermost_spatial_var(block: Block) -> Var | None:
    """The iteration variable along which the block's store is contiguous (stride one
    in row-major memory), the one with the largest domain when several are (dimensions
    of size one do not count: ``[1, C, 1, 1]`` is contiguous along ``C``)."""
    store = store_of(block)
    if store is None or not store.indices:
        return None
    strides = flat_strides(store.buffer, store.indices)
    if strides is None:
        last = store.indices[-1]
        if type(last) is Var and not any(_uses(i, last) for i in store.indices[:-1]):
            return last
        return None
    best, best_ext = None, 0
    for iv in block.iter_vars:
        if iv.iter_type != "spatial" or strides.get(id(iv.var)) != 1:
            continue
        if not any(i is iv.var for i in store.indices):
            continue
        ext = iv.dom.extent.value if type(iv.dom.extent) is IntImm else 1 << 30
        if ext > best_ext:
            best, best_ext = iv.var, ext
    return best


# ---------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------

_REDUCERS = {Add: "sum", Mul: "prod", Max: "max", Min: "min"}


@dataclass
class ReductionInfo:
    """A reduction block ``C[s] = C[s] op rhs``: the store, the reducer kind (``sum``,
    ``prod``, ``max``, ``min``) and ``rhs``."""

    store: BufferStore
    kind: str
    rhs: PrimExpr


def match_reduction(block: Block) -> ReductionInfo | None:
    """Recognize ``C[s] = C[s] op rhs`` with an init storing to ``C[s]``."""
    store = store_of(block)
    if store is None or type(block.init) is not BufferStore:
        return None
    value = store.value
    kind = _REDUCERS.get(type(value))
    if kind is None:
        return None

    def is_self(e: PrimExpr) -> bool:
        return (type(e) is BufferLoad and e.buffer is store.buffer
                and structural_equal(e.indices, store.indices))

    if is_self(value.a):
        rhs = value.b
    elif is_self(value.b):
        rhs = value.a
    else:
        return None
    if any(a.buffer is store.buffer for a in collect_buffer_accesses(rhs)):
        return None
    return ReductionInfo(store=store, kind=kind, rhs=rhs)


def multiply_operands(rhs: PrimExpr) -> tuple[PrimExpr, PrimExpr] | None:
    """The two factors when ``rhs`` is a product (through casts), e.g. ``A[i, k] *
    B[k, j]`` or ``cast(A) * cast(B)``."""
    while type(rhs) is Cast:
        rhs = rhs.value
    if type(rhs) is not Mul:
        return None
    return rhs.a, rhs.b


def has_guard(e: PrimExpr) -> bool:
    """True when ``e`` contains ``if_then_else`` (a padding guard)."""
    stack = [e]
    while stack:
        x = stack.pop()
        if type(x) is Call and x.op == "if_then_else":
            return True
        if isinstance(x, Node) and not isinstance(x, Buffer):
            for f in node_fields(type(x)):
                if f in ("span", "dtype"):
                    continue
                v = getattr(x, f)
                if isinstance(v, tuple):
                    stack.extend(v)
                elif v is not None:
                    stack.append(v)
    return False


# ---------------------------------------------------------------------------------
# Inlining
# ---------------------------------------------------------------------------------


def try_compute_inline(sch: Schedule, block: BlockRV) -> bool:
    """Inline a producer into its consumers; False (and nothing changed) when the
    schedule refuses."""
    try:
        sch.compute_inline(block)
    except ScheduleError:
        return False
    return True


def try_reverse_compute_inline(sch: Schedule, block: BlockRV) -> bool:
    """Inline a consumer into its producer; False (and nothing changed) when refused."""
    try:
        sch.reverse_compute_inline(block)
    except ScheduleError:
        return False
    return True


def is_output_block(sch: Schedule, info: BlockInfo) -> bool:
    """True when the block writes a parameter buffer of the function."""
    params = {id(b) for b in sch.func.buffer_map.values()}
    return any(id(w.buffer) in params for w in info.block.writes)


def inline_injective_producers(sch: Schedule, keep: set[str] = frozenset()) -> None:
    """Inline every injective block that does not write a function output into its
    consumers (repeatedly, so chains collapse), except the blocks named in ``keep``."""
    changed = True
    while changed:
        changed = False
        infos = get_block_infos(sch)
        if infos is None:
            return
        for info in infos:
            if info.name in keep or not info.is_injective() or is_output_block(sch, info):
                continue
            if try_compute_inline(sch, info.block_rv):
                changed = True
                break


# ---------------------------------------------------------------------------------
# Rows shared by several blocks
# ---------------------------------------------------------------------------------


def _consumers(infos: list[BlockInfo], b: BlockInfo) -> list[BlockInfo]:
    written = {id(w.buffer) for w in b.block.writes}
    return [c for c in infos if c is not b
            and any(id(r.buffer) in written for r in c.block.reads)]


def inline_single_use(sch: Schedule) -> None:
    """Inline injective intermediate blocks read by exactly one block (a value read by
    several blocks is computed once and stored)."""
    while True:
        infos = get_block_infos(sch)
        if infos is None:
            return
        for b in infos:
            if not b.is_injective() or is_output_block(sch, b):
                continue
            if len(_consumers(infos, b)) != 1:
                continue
            if try_compute_inline(sch, b.block_rv):
                break
        else:
            return


def row_depth(infos: list[BlockInfo]) -> int:
    """How many leading loops all blocks share as aligned rows: spatial loops of equal
    constant extents whose variables index, in order, the leading dimensions of every
    store and of every load of an intermediate buffer."""
    last = infos[-1]
    produced = {id(w.buffer) for b in infos[:-1] for w in b.block.writes}
    depth = 0
    while True:
        d = depth
        ok = True
        for b in infos:
            if len(b.iters) <= d or b.iters[d].kind != "S" or b.iters[d].var is None:
                ok = False
                break
            if b.iters[d].const_extent is None or \
                    b.iters[d].const_extent != last.iters[d].const_extent:
                ok = False
                break
            lead = [it.var for it in b.iters[:d + 1]]
            for a in block_accesses(b.block):
                if a.kind == "write" or id(a.buffer) in produced:
                    if not _leading(a.indices, lead):
                        ok = False
                        break
            if not ok:
                break
        if not ok:
            return depth
        depth += 1


def _leading(indices, lead: list[Var]) -> bool:
    if len(indices) < len(lead):
        return False
    return all(i is v for i, v in zip(indices, lead))

"""Block analysis for schedule rules: what the default rules (:mod:`irc.dlight`) and the
tuning space (:mod:`irc.tune.space`) ask about the blocks and loops of a function being
scheduled. Nothing here changes a schedule or records instructions in its trace.

- **Lookups** through a schedule: :func:`index_of` (the schedule's cached lookup tables
  of its current function), :func:`realize_of`, :func:`has_block`.
- **Block kinds** (defined in :mod:`~irc.tir.schedule.analysis`, where the primitives
  check them, and re-exported here): :func:`store_of` (a body that is one buffer store),
  :func:`is_complete` (a *spatial* block: only spatial iteration variables, no init,
  nothing both read and written), :func:`is_reduction` (spatial and reduction variables,
  an init, the written indices free of reduction variables), and :func:`is_output`
  (the block writes a buffer its scope does not allocate: for a block of the root scope,
  a parameter of the function).
- **Loop kinds**, two views of the loops above a block. :func:`loop_kinds` takes any
  bindings: ``"S"`` when a loop feeds only spatial iteration variables, ``"R"`` only
  reduction ones, ``"U"`` none, ``"O"`` both or opaque ones. :func:`get_block_infos`
  classifies the blocks of a *normalized* function (every block of the root scope under
  its own loop nest, every loop feeding one iteration variable bound to the loop variable
  itself, as legalization and ``te.create_prim_func`` produce): each loop is ``"S"``,
  ``"R"`` or ``"O"`` (anything else) and a block's *dom kind* is the string of its loops'
  kinds, e.g. ``"SSR"`` for a matmul or ``"SSSSRRR"`` for a conv2d.
- **Strides**: how far an access moves in row-major memory when an iteration variable
  (:func:`flat_strides`, :class:`Access`) or a loop (:func:`store_strides`) steps by one,
  from the exact affine forms of :mod:`irc.tir.arith.affine`; :func:`const_shape`,
  :func:`innermost_spatial_var`, :func:`is_elementwise_store`.
- **Reductions**: :func:`match_reduction` recognizes ``C[s] = C[s] op rhs``;
  :func:`multiply_operands` splits a product.
- **Guards**: :func:`has_if_then_else` finds padding guards in stored values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Union

from ...core.diagnostics import ScheduleError
from ...core.node import Node, node_fields
from ...core.structural import structural_equal
from ..analysis.buffer_access import collect_buffer_accesses
from ..arith.affine import row_major_strides
from ..buffer import Buffer
from ..expr import (
    Add,
    BufferLoad,
    Call,
    Cast,
    IntImm,
    IterVar,
    Max,
    Min,
    Mul,
    PrimExpr,
    Select,
    Var,
)
from ..stmt import Block, BlockRealize, BufferStore, For
from .analysis import (
    is_complete,
    is_output_block,
    is_reduction,
    loop_iter_types,
    store_of,
)
from .instruction import BlockRV, LoopRV
from .rewrite import substitute_vars
from .state import FuncIndex, child_blocks, var_ids

if TYPE_CHECKING:
    from .schedule import Schedule

BlockRef = Union[BlockRV, str]  # a block handle or a block name

# ---------------------------------------------------------------------------------
# Lookups through a schedule
# ---------------------------------------------------------------------------------


def index_of(sch: Schedule) -> FuncIndex:
    """The lookup tables of the schedule's current function (the schedule's own cached
    index, rebuilt by every primitive that changes the function)."""
    return sch._indexed(sch._current)


def realize_of(sch: Schedule, block: BlockRef) -> BlockRealize:
    """The BlockRealize of a block handle or block name in the current function."""
    name = block if isinstance(block, str) else sch.get(block).name
    r = index_of(sch).blocks.get(name)
    if r is None:
        raise ScheduleError(f"the schedule has no block named {name!r}")
    return r


def has_block(sch: Schedule, name: str) -> bool:
    """True when the current function has a block called ``name``."""
    return name in index_of(sch).blocks


def is_output(sch: Schedule, block: BlockRef) -> bool:
    """True when the block writes a buffer its scope does not allocate (a parameter of
    the function, for a block of the root scope)."""
    return is_output_block(index_of(sch), realize_of(sch, block))


# ---------------------------------------------------------------------------------
# Loop kinds for any bindings
# ---------------------------------------------------------------------------------


def loop_kinds(r: BlockRealize, loops: list[For]) -> list[str]:
    """For each loop: "S" when it feeds only spatial iteration variables of ``r``, "R"
    only reduction ones, "U" none, "O" anything else (opaque, or both kinds)."""
    kinds = loop_iter_types(r)
    out = []
    for lp in loops:
        k = kinds.get(id(lp.loop_var), set())
        if not k:
            out.append("U")
        elif k == {"spatial"}:
            out.append("S")
        elif k == {"reduce"}:
            out.append("R")
        else:
            out.append("O")
    return out


def has_simple_bindings(r: BlockRealize, loops: list[For]) -> bool:
    """True when each iteration variable is bound to at most one loop variable (plain
    ``v = i``-style bindings, possibly offset) and each loop feeds one variable: the
    loops can be tiled per dimension."""
    loop_ids = {id(lp.loop_var) for lp in loops}
    used: set[int] = set()
    for value in r.iter_values:
        ids = var_ids(value) & loop_ids
        if len(ids) > 1 or ids & used:
            return False
        used |= ids
    return True


def loop_users(sch: Schedule, name: str) -> list[tuple[LoopRV, list[IterVar]]]:
    """For each loop above block ``name`` (outermost first, up to its enclosing block):
    its handle and the block's iteration variables whose bindings use it. Unlike the
    loop kinds of :class:`BlockInfo`, bindings may be any expressions, such as
    ``bx * 4 + tx`` after a split."""
    index = index_of(sch)
    r = realize_of(sch, name)
    loops = index.loops_above(r)
    rvs = sch.get_loops(sch.get_block(name))
    out = []
    for lp, rv in zip(loops, rvs):
        users = [iv for iv, v in zip(r.block.iter_vars, r.iter_values) if _uses(v, lp.loop_var)]
        out.append((rv, users))
    return out


def _uses(e: PrimExpr, v: Var) -> bool:
    return id(v) in var_ids(e)


# ---------------------------------------------------------------------------------
# Blocks of a normalized function
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
        return const_int(self.extent)


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
        """A reduction block (:func:`is_reduction`) with at least one reduction loop,
        all its loops spatial or reduction loops."""
        kinds = self.dom_kind()
        return "R" in kinds and "O" not in kinds and is_reduction(self.block)

    def is_injective(self) -> bool:
        """A spatial block (:func:`is_complete`) under spatial loops only: elementwise,
        broadcast, transpose, ..."""
        return all(it.kind == "S" for it in self.iters) and is_complete(self.block)

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


def _classify(realize: BlockRealize, loops: list[For]) -> list[tuple[str, Var | None]]:
    """The kind of each loop of a normalized block and the iteration variable it feeds."""
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
            out.append(("S" if const_int(lp.extent) == 1 else "O", None))
            continue
        if len(ks) != 1 or realize.iter_values[ks[0]] is not lp.loop_var:
            out.append(("O", None))
            continue
        iv = block.iter_vars[ks[0]]
        kind = {"spatial": "S", "reduce": "R"}.get(iv.iter_type, "O")
        out.append((kind, iv.var))
    return out


def get_block_infos(sch: Schedule) -> list[BlockInfo] | None:
    """The blocks of the root scope of the schedule's current function, in execution
    order, with classified loops; None when the function is not in block form."""
    index = index_of(sch)
    try:
        root = index.root
    except ScheduleError:
        return None
    out = []
    for r in child_blocks(root):
        rv = sch.get_block(r.block.name)
        loops = index.loops_above(r)
        iters = [IterInfo(kind=k, var=v, extent=lp.extent, loop_rv=lrv)
                 for (k, v), lp, lrv in zip(_classify(r, loops), loops, sch.get_loops(rv))]
        out.append(BlockInfo(name=r.block.name, block_rv=rv, block=r.block, realize=r,
                             iters=iters))
    return out


def is_normalized(infos: list[BlockInfo]) -> bool:
    """True when every loop of every block maps to one iteration variable (or is a unit
    loop): no ``"O"`` loops."""
    return all("O" not in b.dom_kind() for b in infos)


# ---------------------------------------------------------------------------------
# Constants, accesses and strides
# ---------------------------------------------------------------------------------


def const_int(e: PrimExpr) -> int | None:
    """The value of an integer constant expression (None otherwise)."""
    return e.value if type(e) is IntImm else None


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
    affine or the shape is symbolic."""
    shape = const_shape(buf)
    if shape is None:
        return None
    return row_major_strides(shape, indices)


def store_strides(r: BlockRealize, loops: list[For]) -> list[int | None] | None:
    """For each loop, its stride in the flattened index of the block's store (the
    store's buffer in its declared shape, bindings substituted); None for the whole list
    when the block has no single store or its shape is not constant, None for every loop
    when an index is not affine."""
    store = store_of(r.block)
    if store is None:
        return None
    shape = const_shape(store.buffer)
    if shape is None:
        return None
    vmap = {id(iv.var): v for iv, v in zip(r.block.iter_vars, r.iter_values)}
    strides = row_major_strides(shape, [substitute_vars(i, vmap) for i in store.indices])
    if strides is None:
        return [None] * len(loops)
    return [strides.get(id(lp.loop_var), 0) for lp in loops]


@dataclass
class Access:
    """A load or store of a block with its strides (see :func:`flat_strides`)."""

    buffer: Buffer
    indices: tuple[PrimExpr, ...]
    kind: Literal["read", "write"]
    strides: dict[int, int] | None

    def stride(self, var: Var | None) -> int | None:
        """The stride of ``var`` (0 when the access does not use it; None when the
        access is not affine)."""
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
    store = store_of(block)
    out = []
    for a in block_accesses(block):
        if a.kind != "read":
            continue
        if store is not None and block.init is not None and a.buffer is store.buffer:
            continue
        out.append(a)
    return out


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
        if not any(i is iv.var or _minor_term(i, iv) for i in store.indices):
            continue
        ext = iv.dom.extent.value if type(iv.dom.extent) is IntImm else 1 << 30
        if ext > best_ext:
            best, best_ext = iv.var, ext
    return best


def _minor_term(index: PrimExpr, iv: IterVar) -> bool:
    """Whether ``index`` is ``x * K + v`` (either order) with ``v`` the iteration
    variable ``iv`` and its extent at most ``K``: ``v`` the minor digit of a merged
    dimension (a grouped convolution's channel within its group)."""
    if type(index) is not Add or type(iv.dom.extent) is not IntImm:
        return False
    for minor, major in ((index.b, index.a), (index.a, index.b)):
        if minor is iv.var and type(major) is Mul and type(major.b) is IntImm \
                and major.b.value >= iv.dom.extent.value and not _uses(major, iv.var):
            return True
    return False


def is_elementwise_store(block: Block) -> bool:
    """True when the block stores at exactly its iteration variables, in order (every
    iteration writes its own element)."""
    store = store_of(block)
    if store is None:
        return False
    ivs = [iv.var for iv in block.iter_vars]
    return len(store.indices) == len(ivs) and all(i is v for i, v in zip(store.indices, ivs))


# ---------------------------------------------------------------------------------
# Reductions and guards
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


def has_if_then_else(e: PrimExpr, include_select: bool = False) -> bool:
    """True when ``e`` contains an ``if_then_else`` call (a padding guard), or a
    ``Select`` when ``include_select``; indices of loads are searched too."""
    stack: list[object] = [e]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is Call and x.op == "if_then_else":
            return True
        if t is Select and include_select:
            return True
        if isinstance(x, Node) and not isinstance(x, Buffer):
            for f in node_fields(t):
                if f in ("span", "dtype"):
                    continue
                v = getattr(x, f)
                if isinstance(v, tuple):
                    stack.extend(v)
                elif v is not None:
                    stack.append(v)
    return False


__all__ = [
    "Access",
    "BlockInfo",
    "BlockRef",
    "IterInfo",
    "ReductionInfo",
    "block_accesses",
    "const_int",
    "const_shape",
    "flat_strides",
    "get_block_infos",
    "has_block",
    "has_if_then_else",
    "has_simple_bindings",
    "index_of",
    "innermost_spatial_var",
    "is_complete",
    "is_elementwise_store",
    "is_normalized",
    "is_output",
    "is_reduction",
    "loads",
    "loop_kinds",
    "loop_users",
    "match_reduction",
    "multiply_operands",
    "realize_of",
    "store_of",
    "store_strides",
]

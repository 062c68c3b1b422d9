"""AnnotateTIROpPattern: classify each loop function for fusion (attribute ``op_pattern``).

Algorithm: every block of a block-form PrimFunc (the root block aside) is classified from
its single ``BufferStore`` and the ``BufferLoad``s of its body (``init`` excluded):

- each load is compared with the store: *elementwise* when it uses the same index
  variables in the same order, *broadcast* when its indices are store variables in
  increasing store position (unit dimensions indexed by 0 skipped), *injective* when its
  indices use no variable other than the store's; the block takes the largest of these,
  except that one elementwise load makes a broadcast block elementwise
  (``C[i, j] = A[i, j] + B[j]``);
- otherwise, a block with reduction iteration variables is *out-elementwise-fusable* when
  its body is a multiply-accumulate whose two operands each miss a store variable
  (matmul, convolution), or when some load indexes a reduction variable inside a larger
  expression (pooling windows); else *comm-reduce*; without reduction variables (or
  with several stores, or none) it is *opaque*.

The function's pattern is the largest over its blocks (ELEMWISE=0 < BROADCAST=1 <
INJECTIVE=2 < COMM_REDUCE=3 < OUT_ELEMWISE_FUSABLE=4 < OPAQUE=8, ``irc.ir.op``).

Preconditions: none; functions in lowered form (no blocks) are opaque.
Postconditions: every PrimFunc has an integer ``op_pattern`` attribute; a function that
already had one keeps it (so a hand-set pattern wins).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.functor import Visitor
from ..core.module import IRModule
from ..core.transform import Pass, PassContext
from ..ir.op import BROADCAST, COMM_REDUCE, ELEMWISE, INJECTIVE, OPAQUE, OUT_ELEMWISE_FUSABLE
from ..tir import expr as E
from ..tir.stmt import Block, BlockRealize, BufferStore, PrimFunc


class _BodyAccesses(Visitor):
    """Stores and loads of one block body, not descending into nested blocks."""

    def __init__(self) -> None:
        self.stores: list[BufferStore] = []
        self.loads: list[E.BufferLoad] = []

    def visit_Block(self, b: Block) -> None:
        return None

    def visit_BufferStore(self, s: BufferStore) -> None:
        self.stores.append(s)
        self.generic_visit(s)

    def visit_BufferLoad(self, load: E.BufferLoad) -> None:
        self.loads.append(load)
        self.generic_visit(load)


class _BlockCollector(Visitor):
    def __init__(self) -> None:
        self.blocks: list[Block] = []

    def visit_Block(self, b: Block) -> None:
        self.blocks.append(b)
        self.generic_visit(b)


def _vars_in(e: Any) -> set[int]:
    found: set[int] = set()

    class _V(Visitor):
        def visit_Var(self, v: E.Var) -> None:
            found.add(id(v))

    _V().visit(e)
    return found


def _same(a: E.PrimExpr, b: E.PrimExpr) -> bool:
    # Identity, as index variables are shared objects; equal constants also match.
    return a is b or (isinstance(a, E.IntImm) and isinstance(b, E.IntImm) and
                      a.value == b.value)


def _is_elemwise(store: BufferStore, load: E.BufferLoad) -> bool:
    return len(store.indices) == len(load.indices) and all(
        _same(a, b) for a, b in zip(store.indices, load.indices))


def _is_broadcast(store: BufferStore, load: E.BufferLoad) -> bool:
    j = 0
    n = len(store.indices)
    for dim, idx in zip(load.buffer.shape, load.indices):
        if E.is_const_int(dim, 1) and E.is_const_int(idx, 0):
            continue
        while j < n and store.indices[j] is not idx:
            j += 1
        if j == n:
            return False
        j += 1
    return True


def _is_injective(store: BufferStore, load: E.BufferLoad) -> bool:
    if not all(isinstance(i, E.Var) for i in store.indices):
        return False
    allowed = {id(i) for i in store.indices}
    return all(_vars_in(i) <= allowed for i in load.indices)


def _strip_cast(e: E.PrimExpr) -> E.PrimExpr:
    while isinstance(e, E.Cast):
        e = e.value
    return e


def _misses_a_store_var(store: BufferStore, load: Any) -> bool:
    if not isinstance(load, E.BufferLoad) or not all(isinstance(i, E.Var)
                                                     for i in store.indices):
        return False
    covered = _vars_in(load.indices)
    return any(id(i) not in covered for i in store.indices)


def _is_multiply_accumulate(store: BufferStore) -> bool:
    value = store.value
    if not isinstance(value, E.Add):
        return False
    acc, prod = value.a, _strip_cast(value.b)
    if not isinstance(prod, E.Mul):
        acc, prod = value.b, _strip_cast(value.a)
    if not (isinstance(acc, E.BufferLoad) and isinstance(prod, E.Mul)):
        return False
    if acc.buffer is not store.buffer or not _is_elemwise(store, acc):
        return False
    return _misses_a_store_var(store, _strip_cast(prod.a)) and \
        _misses_a_store_var(store, _strip_cast(prod.b))


def _is_pure_reduce(reduce_vars: set[int], indices: tuple[E.PrimExpr, ...]) -> bool:
    for e in indices:
        if _vars_in(e) & reduce_vars and not (isinstance(e, E.Var) and id(e) in reduce_vars):
            return False
    return True


def block_pattern(block: Block) -> int:
    """The fusion pattern of one block (see the module docstring)."""
    acc = _BodyAccesses()
    acc.visit(block.body)
    if len(acc.stores) != 1:
        return OPAQUE
    store = acc.stores[0]
    kind = ELEMWISE
    has_elemwise = False
    for load in acc.loads:
        if _is_elemwise(store, load):
            has_elemwise = True
        elif _is_broadcast(store, load):
            kind = max(kind, BROADCAST)
        elif _is_injective(store, load):
            kind = max(kind, INJECTIVE)
        else:
            kind = OPAQUE
            break
    if kind != OPAQUE:
        if kind == BROADCAST and has_elemwise:
            kind = ELEMWISE
        return kind
    reduce_vars = {id(iv.var) for iv in block.iter_vars if iv.iter_type == "reduce"}
    if not reduce_vars:
        return OPAQUE
    if _is_multiply_accumulate(store):
        return OUT_ELEMWISE_FUSABLE
    if any(not _is_pure_reduce(reduce_vars, load.indices) for load in acc.loads):
        return OUT_ELEMWISE_FUSABLE
    return COMM_REDUCE


def analyze_op_pattern(func: PrimFunc) -> int:
    """The fusion pattern of a loop function: the largest over its blocks; OPAQUE for a
    function without blocks (lowered form) or with work outside blocks."""
    c = _BlockCollector()
    c.visit(func.body)
    blocks = [b for b in c.blocks if not (b.name == "root" and b is _root_block(func))]
    if not blocks:
        return OPAQUE
    kind = ELEMWISE
    for b in blocks:
        kind = max(kind, block_pattern(b))
        if kind == OPAQUE:
            break
    return kind


def _root_block(func: PrimFunc) -> Block | None:
    body = func.body
    return body.block if isinstance(body, BlockRealize) else None


@dataclass(frozen=True)
class AnnotateTIROpPattern(Pass):
    """Set the ``op_pattern`` attribute of every PrimFunc that has none."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        funcs: dict[Any, Any] = {}
        changed = False
        for gv, f in mod.functions.items():
            if isinstance(f, PrimFunc) and "op_pattern" not in f.attrs:
                f = f.with_attr("op_pattern", analyze_op_pattern(f))
                changed = True
            funcs[gv] = f
        return IRModule(functions=funcs, attrs=mod.attrs) if changed else mod


__all__ = ["AnnotateTIROpPattern", "analyze_op_pattern", "block_pattern"]

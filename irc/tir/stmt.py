"""Loop-IR statements, blocks and functions.

Two forms share these nodes:

- **block form** (what ``te.create_prim_func``, the legalizer and the parser of
  ``T.block`` produce; what schedules transform): the function body is a root
  ``BlockRealize`` whose block owns the intermediate ``alloc_buffers``; every computation
  sits in a ``Block`` with iteration variables, read/write regions and optional ``init``.
- **lowered form** (after ``irc.tir.transform`` lowering; what code generators take): no
  blocks; buffers are flat (1-D) and intermediate memory is an ``Allocate``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..core.diagnostics import IRTypeError
from ..core.node import Node, node
from .buffer import Buffer, BufferRegion, MatchBufferRegion
from .expr import IntImm, IterVar, PrimExpr, Var

FOR_KINDS = ("serial", "parallel", "vectorized", "unrolled", "thread_binding")
THREAD_TAGS = (
    "blockIdx.x", "blockIdx.y", "blockIdx.z",
    "threadIdx.x", "threadIdx.y", "threadIdx.z",
    "vthread", "vthread.x", "vthread.y", "vthread.z",
)


@node
class Stmt(Node):
    """Base of loop-IR statements."""


@node
class BufferStore(Stmt):
    """``buffer[indices] = value``."""

    buffer: Buffer
    value: PrimExpr
    indices: tuple[PrimExpr, ...]


@node
class Evaluate(Stmt):
    """Evaluate an expression for its side effect (e.g. an extern call)."""

    value: PrimExpr


@node
class SeqStmt(Stmt):
    """Statements executed in order (at least two; use :func:`seq` to build)."""

    seq: tuple[Stmt, ...]


@node
class For(Stmt):
    """``for loop_var in [min, min + extent)`` of a ``kind`` in :data:`FOR_KINDS`.

    ``thread_tag`` names the GPU axis when kind is ``thread_binding``; ``annotations``
    carries hints such as ``pragma_auto_unroll_max_step``.
    """

    loop_var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: str
    body: Stmt
    thread_tag: str = ""
    annotations: dict[str, Any] = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.kind not in FOR_KINDS:
            raise IRTypeError(f"unknown loop kind {self.kind!r}; use one of {FOR_KINDS}")
        if self.kind == "thread_binding" and self.thread_tag not in THREAD_TAGS:
            raise IRTypeError(
                f"thread_binding loop needs a thread tag from {THREAD_TAGS}, got "
                f"{self.thread_tag!r}"
            )
        if self.annotations is None:
            object.__setattr__(self, "annotations", {})


@node
class While(Stmt):
    """``while condition: body``."""

    condition: PrimExpr
    body: Stmt


@node
class IfThenElse(Stmt):
    """``then_case`` when ``condition`` holds, else ``else_case``."""

    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None


@node
class LetStmt(Stmt):
    """``var = value`` scoped over ``body``."""

    var: Var
    value: PrimExpr
    body: Stmt


@node
class AssertStmt(Stmt):
    """Check ``condition`` at run time, failing with ``message``; then run ``body``."""

    condition: PrimExpr
    message: str
    body: Stmt


@node
class AttrStmt(Stmt):
    """An attribute ``key = value`` on ``node`` scoped over ``body`` (e.g. thread extents,
    pragmas)."""

    node: Any
    key: str
    value: PrimExpr
    body: Stmt


@node
class Allocate(Stmt):
    """Allocate ``extents`` elements of ``dtype`` in ``scope`` at pointer ``buffer_var``
    for the duration of ``body`` (lowered form)."""

    buffer_var: Var
    dtype: str
    extents: tuple[PrimExpr, ...]
    scope: str
    body: Stmt
    condition: PrimExpr | None = None
    annotations: dict[str, Any] = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.annotations is None:
            object.__setattr__(self, "annotations", {})


@node
class DeclBuffer(Stmt):
    """Declare ``buffer`` (a view of existing memory) for the statements in ``body``."""

    buffer: Buffer
    body: Stmt


@node
class Block(Stmt):
    """A unit of computation with iteration variables and declared data access.

    ``iter_vars`` are the block's own variables (spatial or reduce) bound by the enclosing
    ``BlockRealize``; ``reads``/``writes`` are the accessed regions in terms of them;
    ``init`` runs before the first reduction iteration; ``alloc_buffers`` live for the
    block's duration.
    """

    name: str
    iter_vars: tuple[IterVar, ...]
    reads: tuple[BufferRegion, ...]
    writes: tuple[BufferRegion, ...]
    body: Stmt
    init: Stmt | None = None
    alloc_buffers: tuple[Buffer, ...] = ()
    match_buffers: tuple[MatchBufferRegion, ...] = ()
    annotations: dict[str, Any] = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.annotations is None:
            object.__setattr__(self, "annotations", {})


@node
class BlockRealize(Stmt):
    """Execute ``block`` with its iter vars bound to ``iter_values`` where ``predicate``
    holds."""

    iter_values: tuple[PrimExpr, ...]
    predicate: PrimExpr
    block: Block

    def __post_init__(self) -> None:
        if len(self.iter_values) != len(self.block.iter_vars):
            raise IRTypeError(
                f"block {self.block.name!r} has {len(self.block.iter_vars)} iteration variables "
                f"but is bound to {len(self.iter_values)} values"
            )


@node
class PrimFunc(Node):
    """A loop-level function.

    ``params`` are scalar Vars or handle Vars; each handle param has a Buffer in
    ``buffer_map``. ``attrs`` hold e.g. ``global_symbol``, ``tir.noalias``,
    ``op_pattern`` and ``layout_free_buffers``.
    """

    params: tuple[Var, ...]
    buffer_map: dict[Var, Buffer]
    body: Stmt
    attrs: dict[str, Any] = None  # type: ignore[assignment]
    ret_dtype: str = "void"

    _sequal_ignore: ClassVar[frozenset[str]] = frozenset({"span"})
    _sequal_scope: ClassVar[bool] = True  # its variables are its own

    def __post_init__(self) -> None:
        if self.attrs is None:
            object.__setattr__(self, "attrs", {})
        params = {id(p) for p in self.params}  # by identity: == on variables builds an EQ
        for p in self.buffer_map:
            if id(p) not in params:
                raise IRTypeError("PrimFunc buffer_map has a key that is not a parameter")
        ordered = [p for p in self.params if p in self.buffer_map]
        if list(self.buffer_map) != ordered:
            # One order, the parameters', whatever order a pass inserted them in:
            # structural equality and hashing compare the map in order.
            object.__setattr__(self, "buffer_map", {p: self.buffer_map[p] for p in ordered})

    @property
    def buffers(self) -> tuple[Buffer, ...]:
        """The parameter buffers in parameter order."""
        return tuple(self.buffer_map[p] for p in self.params if p in self.buffer_map)

    def with_attr(self, key: str, value: Any) -> PrimFunc:
        return self.replace(attrs={**self.attrs, key: value})

    def with_body(self, body: Stmt) -> PrimFunc:
        return self.replace(body=body)


def seq(*stmts: Stmt | None) -> Stmt:
    """Sequence of statements, flattening nested sequences and dropping None/no-ops."""
    flat: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, SeqStmt):
            flat.extend(s.seq)
        elif isinstance(s, (list, tuple)):
            inner = seq(*s)
            if isinstance(inner, SeqStmt):
                flat.extend(inner.seq)
            elif not is_no_op(inner):
                flat.append(inner)
        elif not is_no_op(s):
            flat.append(s)
    if not flat:
        return no_op()
    if len(flat) == 1:
        return flat[0]
    return SeqStmt(seq=tuple(flat))


def no_op() -> Stmt:
    """The empty statement (``T.evaluate(0)``)."""
    return Evaluate(value=IntImm(dtype="int32", value=0))


def is_no_op(s: Stmt) -> bool:
    """True for the empty statement (``Evaluate`` of a constant)."""
    return isinstance(s, Evaluate) and isinstance(s.value, IntImm)

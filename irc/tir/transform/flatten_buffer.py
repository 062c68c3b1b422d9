"""FlattenBuffer: make every buffer access one-dimensional.

Algorithm: each multi-dimensional (or strided, or offset) buffer gets a flat view: a 1-D
buffer of the same name, dtype, scope and data pointer whose extent is the element count
(``shape[0] * strides[0]`` when strided). Every load and store of the original becomes a
load/store of the view at ``sum(index_k * stride_k) + elem_offset`` (row-major strides
when none are given; vector indices such as ramps combine by vector arithmetic).
``Allocate`` extents become the flat element count and ``DeclBuffer`` declares the view.
Parameter buffers keep their N-d entry in ``buffer_map``; the body starts with a
``DeclBuffer`` of each accessed parameter's flat view (TVM prints it as
``A_1 = T.Buffer((1048576,), data=A.data)``).

Preconditions: no blocks (LowerOpaqueBlock has run); buffers have no axis separators.
Postconditions: every BufferLoad/BufferStore accesses a 1-D buffer without strides or
element offset, whose data is a parameter buffer's data or an Allocate's buffer_var.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.diagnostics import LoweringError
from ..buffer import Buffer
from ..expr import BufferLoad, IntImm, PrimExpr
from ..functor.rewriter import IRRewriter
from ..stmt import Allocate, Block, BlockRealize, BufferStore, DeclBuffer, PrimFunc, Stmt
from .base import PrimFuncPass


def _is_flat(b: Buffer) -> bool:
    return (len(b.shape) == 1 and not b.strides
            and (b.elem_offset is None or (type(b.elem_offset) is IntImm
                                           and b.elem_offset.value == 0)))


def _strides(b: Buffer) -> list[PrimExpr]:
    if b.strides:
        return list(b.strides)
    out: list[PrimExpr] = []
    acc: PrimExpr | None = None
    for dim in reversed(b.shape):
        out.insert(0, IntImm(dtype=dim.dtype, value=1) if acc is None else acc)
        acc = dim if acc is None else acc * dim
    return out


def flat_size(b: Buffer) -> PrimExpr:
    """Number of elements the flat view of ``b`` spans."""
    if not b.shape:
        return IntImm(dtype="int32", value=1)
    if b.strides:
        return b.shape[0] * b.strides[0]
    size = b.shape[0]
    for dim in b.shape[1:]:
        size = size * dim
    return size


class _Flatten(IRRewriter):
    def __init__(self) -> None:
        super().__init__()
        self.flat: dict[int, Buffer] = {}
        self.used: set[int] = set()

    def flat_of(self, b: Buffer) -> Buffer:
        if _is_flat(b):
            return b
        hit = self.flat.get(id(b))
        if hit is None:
            if b.axis_separators:
                raise LoweringError(f"buffer {b.name} has axis separators; flattening to "
                                    "several dimensions is not supported", node=b)
            hit = Buffer(name=b.name, shape=(flat_size(b),), dtype=b.dtype, data=b.data,
                         scope=b.scope)
            self.flat[id(b)] = hit
        return hit

    def index(self, b: Buffer, indices) -> tuple[PrimExpr, ...]:
        if _is_flat(b):
            return tuple(indices)
        if not indices:
            return (IntImm(dtype="int32", value=0),)
        strides = _strides(b)
        flat: PrimExpr | None = None
        for i, s in zip(indices, strides):
            term = i if (type(s) is IntImm and s.value == 1) else i * s
            flat = term if flat is None else flat + term
        if b.elem_offset is not None and not (type(b.elem_offset) is IntImm
                                              and b.elem_offset.value == 0):
            flat = flat + b.elem_offset
        return (flat,)

    def rewrite_buffer(self, b: Buffer) -> Buffer:
        return b

    def load(self, e: BufferLoad, buffer: Buffer, indices: tuple):
        self.used.add(id(buffer))
        if _is_flat(buffer):
            return super().load(e, buffer, indices)
        return BufferLoad(dtype=e.dtype, buffer=self.flat_of(buffer),
                          indices=self.index(buffer, indices))

    def store(self, s: BufferStore, buffer: Buffer, value: PrimExpr, indices: tuple):
        self.used.add(id(buffer))
        if _is_flat(buffer):
            return super().store(s, buffer, value, indices)
        return BufferStore(buffer=self.flat_of(buffer), value=value,
                           indices=self.index(buffer, indices))

    def stmt_DeclBuffer(self, d: DeclBuffer):
        body = self.stmt(d.body)
        buf = self.flat_of(d.buffer)
        if buf is d.buffer and body is d.body:
            return d
        return DeclBuffer(buffer=buf, body=body)

    def stmt_Allocate(self, a: Allocate):
        body = self.stmt(a.body)
        decl = a.body if type(a.body) is DeclBuffer and a.body.buffer.data is a.buffer_var \
            else None
        if decl is not None:
            extents = (flat_size(decl.buffer),) if not _is_flat(decl.buffer) else a.extents
        elif len(a.extents) != 1:
            size = a.extents[0]
            for e in a.extents[1:]:
                size = size * e
            extents = (size,)
        else:
            extents = a.extents
        if body is a.body and all(x is y for x, y in zip(extents, a.extents)) \
                and len(extents) == len(a.extents):
            return a
        return a.replace(extents=tuple(extents), body=body)

    def stmt_Block(self, b: Block):
        raise LoweringError(f"FlattenBuffer needs a function without blocks, found block "
                            f"{b.name!r}; run LowerOpaqueBlock first", node=b)

    def stmt_BlockRealize(self, r: BlockRealize):
        return self.stmt_Block(r.block)


@dataclass(frozen=True)
class FlattenBuffer(PrimFuncPass):
    """Flatten all buffer accesses to 1-D; parameter buffers get flat DeclBuffer views."""


    def transform_function(self, func: PrimFunc) -> PrimFunc:
        fl = _Flatten()
        body: Stmt = fl.stmt(func.body)
        for p in reversed(func.params):
            b = func.buffer_map.get(p)
            if b is not None and id(b) in fl.used and not _is_flat(b):
                body = DeclBuffer(buffer=fl.flat_of(b), body=body)
        return func.with_body(body)


def flatten_buffer(func: PrimFunc) -> PrimFunc:
    """Functional form of :class:`FlattenBuffer`."""
    return FlattenBuffer()(func)

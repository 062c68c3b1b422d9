"""LowerMatchBuffer: replace ``match_buffer`` views inside blocks by direct accesses to
the matched region of the source buffer.

Algorithm: for each block's ``match_buffers`` entry ``view = source[r_0, ..., r_n]``, the
view's dimensions correspond to the last ``view.ndim`` dimensions of the source region
(leading source dimensions must have extent 1). Every load/store ``view[i...]`` becomes
``source[r_0.min, ..., r_k.min + i_k, ...]``; symbolic shape variables of the view are
replaced by the region's extents. The block's ``match_buffers`` become empty.

Preconditions: block form; match buffers index with the default (compact) layout.
Postconditions: no block has ``match_buffers``. A view whose rank or strides cannot be
mapped this way raises LoweringError naming the block and buffer.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.diagnostics import LoweringError
from ..buffer import Buffer, BufferRegion
from ..expr import BufferLoad, IntImm, Var
from ..functor.rewriter import IRRewriter
from ..functor.substitute import substitute
from ..stmt import Block, BufferStore, PrimFunc
from .base import PrimFuncPass


class _Lower(IRRewriter):
    def __init__(self) -> None:
        super().__init__()
        self.views: dict[int, tuple[Buffer, tuple]] = {}  # view id -> (source, mins)

    def stmt_Block(self, block: Block) -> Block:
        if not block.match_buffers:
            return super().stmt_Block(block)
        shape_map: dict[Var, object] = {}
        for mb in block.match_buffers:
            view, src = mb.buffer, mb.source
            lead = len(src.region) - view.ndim
            if lead < 0 or any(not (type(r.extent) is IntImm and r.extent.value == 1)
                               for r in src.region[:lead]):
                raise LoweringError(
                    f"block {block.name!r}: match_buffer {view.name} has {view.ndim} "
                    f"dimensions but its source region {src.buffer.name} cannot be viewed "
                    "that way (leading dimensions must have extent 1)", node=block)
            if view.strides or view.elem_offset is not None and not (
                    type(view.elem_offset) is IntImm and view.elem_offset.value == 0):
                raise LoweringError(
                    f"block {block.name!r}: match_buffer {view.name} declares strides or an "
                    "element offset; only compact views can be lowered", node=block)
            for dim, r in zip(view.shape, src.region[lead:]):
                if type(dim) is Var:
                    shape_map[dim] = r.extent
            self.views[id(view)] = (src.buffer, tuple(r.min for r in src.region), lead)
        body = substitute(block.body, shape_map) if shape_map else block.body
        init = block.init
        if init is not None and shape_map:
            init = substitute(init, shape_map)
        block = block.replace(match_buffers=(), body=body, init=init)
        return super().stmt_Block(block)

    def _map(self, buf: Buffer, indices):
        hit = self.views.get(id(buf))
        if hit is None:
            return None
        src, mins, lead = hit
        idx = list(mins[:lead]) + [i if _is_zero(m) else m + i
                                   for m, i in zip(mins[lead:], indices)]
        return src, tuple(idx)

    def rewrite_buffer(self, b: Buffer) -> Buffer:
        return b

    def load(self, e: BufferLoad, buffer: Buffer, indices: tuple):
        hit = self._map(buffer, indices)
        if hit is None:
            return super().load(e, buffer, indices)
        return BufferLoad(dtype=e.dtype, buffer=hit[0], indices=hit[1])

    def store(self, s: BufferStore, buffer: Buffer, value, indices: tuple):
        hit = self._map(buffer, indices)
        if hit is None:
            return super().store(s, buffer, value, indices)
        return BufferStore(buffer=hit[0], value=value, indices=hit[1])

    def region(self, r: BufferRegion) -> BufferRegion:
        hit = self.views.get(id(r.buffer))
        if hit is None:
            return super().region(r)
        r = super().region(r)
        src, mins, lead = hit
        region = [type(r.region[0])(min=m, extent=IntImm(dtype=m.dtype, value=1))
                  for m in mins[:lead]] if lead else []
        for m, rg in zip(mins[lead:], r.region):
            region.append(type(rg)(min=rg.min if _is_zero(m) else m + rg.min, extent=rg.extent))
        return BufferRegion(buffer=src, region=tuple(region))


def _is_zero(e) -> bool:
    return type(e) is IntImm and e.value == 0


@dataclass(frozen=True)
class LowerMatchBuffer(PrimFuncPass):
    """Replace match_buffer views by accesses to their source regions."""


    def transform_function(self, func: PrimFunc) -> PrimFunc:
        return func.with_body(_Lower().stmt(func.body))


def lower_match_buffer(func: PrimFunc) -> PrimFunc:
    """Functional form of :class:`LowerMatchBuffer`."""
    return LowerMatchBuffer()(func)

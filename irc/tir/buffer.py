"""Buffers: typed multi-dimensional views of memory, and regions of them."""

from __future__ import annotations

from typing import ClassVar

from ..core import dtype as dt
from ..core.diagnostics import IRTypeError
from ..core.node import Node, node
from .expr import BufferLoad, ExprLike, IntImm, PrimExpr, Ramp, Range, Var, convert

STORAGE_SCOPES = ("global", "shared", "shared.dyn", "local", "warp", "global.texture")


@node
class Buffer(Node):
    """A ``shape``-d array of ``dtype`` stored at pointer ``data`` (a handle Var).

    ``strides`` is empty for a compact row-major buffer; ``elem_offset`` counts elements
    from ``data``; ``scope`` is the storage scope (global, shared, local, ...).
    Buffers are compared by binding position: a buffer is defined where it is declared
    (a function's buffer map, ``alloc_buffer``, ``DeclBuffer``).
    """

    name: str
    shape: tuple[PrimExpr, ...]
    dtype: str
    data: Var
    strides: tuple[PrimExpr, ...] = ()
    elem_offset: PrimExpr | None = None
    scope: str = "global"
    axis_separators: tuple[int, ...] = ()

    _sequal_ignore: ClassVar[frozenset[str]] = frozenset({"span", "name"})
    _sequal_binding: ClassVar[bool] = True

    def __post_init__(self) -> None:
        dt.check(self.dtype)
        if self.data.dtype != "handle":
            raise IRTypeError(f"buffer {self.name}: data must be a handle Var, got "
                              f"{self.data.dtype}")
        for i, d in enumerate(self.shape):
            if isinstance(d, IntImm) and d.value < 0:
                raise IRTypeError(f"buffer {self.name}: shape dimension {i} is {d.value}; "
                                  "dimensions cannot be negative (a dimension known only at "
                                  "run time is a tir.Var)")
        if self.strides and len(self.strides) != len(self.shape):
            raise IRTypeError(
                f"buffer {self.name}: {len(self.strides)} strides for {len(self.shape)} dimensions"
            )

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices):
        """``buf[i, j]`` loads an element; ``buf[0:4, j]`` makes a BufferRegion."""
        if not isinstance(indices, tuple):
            indices = (indices,)
        if any(isinstance(i, slice) for i in indices):
            return BufferRegion.from_indices(self, indices)
        return load(self, indices)

    def vload(self, indices) -> PrimExpr:
        return load(self, indices)

    def __repr__(self) -> str:
        shape = ", ".join(str(s) for s in self.shape)
        return f"Buffer({self.name}, ({shape}), {self.dtype!r}, scope={self.scope!r})"


def load(buffer: Buffer, indices) -> BufferLoad:
    """A BufferLoad of ``buffer`` at ``indices`` (vector dtype when an index is a Ramp)."""
    idx = tuple(convert(i, "int32") for i in indices)
    if len(idx) != buffer.ndim and not (buffer.ndim == 0 and idx == ()):
        raise IRTypeError(
            f"buffer {buffer.name} has {buffer.ndim} dimensions but is indexed with {len(idx)}"
        )
    lanes = 1
    for i in idx:
        if dt.lanes(i.dtype) > 1:
            lanes = dt.lanes(i.dtype)
    dtype = buffer.dtype if lanes == 1 else dt.with_lanes(buffer.dtype, lanes)
    return BufferLoad(dtype=dtype, buffer=buffer, indices=idx)


def decl_buffer(shape, dtype: str = "float32", name: str = "buffer", *, data: Var | None = None,
                strides=(), elem_offset: ExprLike | None = None, scope: str = "global",
                index_dtype: str = "int32") -> Buffer:
    """A new buffer (with a fresh data pointer unless ``data`` is given)."""
    if isinstance(shape, (int, PrimExpr)):
        shape = (shape,)
    shape_e = tuple(convert(s, index_dtype) for s in shape)
    if data is None:
        data = Var(name=name, dtype="handle")
    offset = None if elem_offset is None else convert(elem_offset, index_dtype)
    return Buffer(name=name, shape=shape_e, dtype=dt.check(dtype), data=data,
                  strides=tuple(convert(s, index_dtype) for s in strides),
                  elem_offset=offset, scope=scope)


@node
class BufferRegion(Node):
    """A rectangular region of a buffer, one Range per dimension."""

    buffer: Buffer
    region: tuple[Range, ...]

    @staticmethod
    def full(buffer: Buffer) -> BufferRegion:
        zero = [IntImm(dtype=s.dtype, value=0) for s in buffer.shape]
        return BufferRegion(buffer=buffer, region=tuple(
            Range(min=z, extent=s) for z, s in zip(zero, buffer.shape)))

    @staticmethod
    def from_indices(buffer: Buffer, indices) -> BufferRegion:
        """Region from a mix of points and ``start:stop`` slices."""
        if len(indices) != buffer.ndim:
            raise IRTypeError(
                f"buffer {buffer.name} has {buffer.ndim} dimensions but the region has "
                f"{len(indices)}"
            )
        ranges = []
        for i, dim in zip(indices, buffer.shape):
            if isinstance(i, slice):
                if i.step not in (None, 1):
                    raise IRTypeError(f"buffer region of {buffer.name} cannot have a step")
                start = convert(0 if i.start is None else i.start, dim.dtype)
                stop = dim if i.stop is None else convert(i.stop, dim.dtype)
                ranges.append(Range.from_min_extent(start, stop - start))
            elif isinstance(i, Ramp):
                ranges.append(Range.from_min_extent(i.base, i.lanes * convert(i.stride)))
            else:
                e = convert(i, dim.dtype)
                ranges.append(Range.from_min_extent(e, IntImm(dtype=e.dtype, value=1)))
        return BufferRegion(buffer=buffer, region=tuple(ranges))


@node
class MatchBufferRegion(Node):
    """``buffer`` declared as a view of ``source`` (``T.match_buffer`` inside a block)."""

    buffer: Buffer
    source: BufferRegion

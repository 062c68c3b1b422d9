"""Padding, and the padding arguments of convolution and pooling."""

from __future__ import annotations

from typing import Any, Sequence

from ....core.diagnostics import IRTypeError
from ...expr import PrimExpr, all, const, convert, floormod, if_then_else, max_, min_
from ...te.tensor import Tensor, compute
from ..utils import INJECTIVE, as_index, const_int, index_dtype

PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(data: Tensor, pad_before: Sequence[Any], pad_after: Sequence[Any] | None = None,
        pad_value: Any = 0.0, name: str = "PadInput", attrs: dict | None = None, *,
        axis_names: Sequence[str] | None = None, mode: str = "constant") -> Tensor:
    """``data`` with ``pad_before[d]`` / ``pad_after[d]`` elements added before / after
    each dimension ``d``: ``pad_value`` (``mode="constant"``), the mirror image without
    the edge element (``"reflect"``: ``[2, 1 | 0, 1, 2]``), the edge element repeated
    (``"replicate"``) or the other end's elements (``"circular"``). A negative amount
    removes elements from that end first (ONNX's cropping), and the padding then applies
    to what is left: a reflect pad is at most its length - 1, a replicate or circular
    pad needs at least one element (checked when the lengths are constants). In constant
    mode the padded value is read with ``if_then_else`` so out-of-range input is never
    read; only padded dimensions get a bounds condition or an index mapping."""
    if not isinstance(data, Tensor):
        raise IRTypeError(f"topi.nn.pad takes a tensor, got {type(data).__name__}")
    if mode not in PAD_MODES:
        raise IRTypeError(f"topi.nn.pad: mode {mode!r} is not one of {', '.join(PAD_MODES)}")
    n = data.ndim
    pad_after = list(pad_after) if pad_after is not None else list(pad_before)
    pad_before = list(pad_before)
    if len(pad_before) != n or len(pad_after) != n:
        raise IRTypeError(f"topi.nn.pad: {len(pad_before)}/{len(pad_after)} padding entries "
                          f"for a tensor of rank {n}")
    idt = index_dtype(data)
    axes = [_PadAxis(d, as_index(data.shape[d], idt), as_index(b, idt), as_index(a, idt),
                     mode, idt) for d, (b, a) in enumerate(zip(pad_before, pad_after))]
    shape = tuple(ax.out for ax in axes)
    value = pad_value if isinstance(pad_value, PrimExpr) else convert(pad_value, data.dtype)
    if value.dtype != data.dtype:
        value = const(pad_value, data.dtype) if not isinstance(pad_value, PrimExpr) else \
            value.astype(data.dtype)

    def fn(*idx: PrimExpr) -> PrimExpr:
        conds: list[PrimExpr] = []
        src = [ax.source(i, conds) for ax, i in zip(axes, idx)]
        if not conds:
            return data[tuple(src)]
        return if_then_else(all(*conds), data[tuple(src)], value)

    return compute(shape, fn, name=name, tag=INJECTIVE, attrs=attrs, axis_names=axis_names)


class _PadAxis:
    """One dimension of :func:`pad`: ``crop_before`` / ``crop_after`` elements removed
    (negative amounts), then ``before`` / ``after`` added to the ``length`` left."""

    def __init__(self, axis: int, extent: PrimExpr, before: PrimExpr, after: PrimExpr,
                 mode: str, idt: str):
        self.mode = mode
        b, a = const_int(before), const_int(after)
        # Symbolic amounts are taken as non-negative (the padding of a convolution).
        self.before = before if b is None or b >= 0 else const(0, idt)
        self.after = after if a is None or a >= 0 else const(0, idt)
        self.crop_before = -b if b is not None and b < 0 else 0
        crop_after = -a if a is not None and a < 0 else 0
        self.length = extent - self.crop_before - crop_after \
            if self.crop_before or crop_after else extent
        self.out = extent + before + after if b != 0 or a != 0 else extent
        self.pads = const_int(self.before) != 0 or const_int(self.after) != 0
        self.static_length = const_int(self.length)
        length = self.static_length
        if length is not None and length < 0:
            raise IRTypeError(f"topi.nn.pad: axis {axis} of length {const_int(extent)} "
                              f"cannot lose {self.crop_before + crop_after} elements")
        if length is not None and self.pads and mode != "constant":
            most = max(const_int(self.before) or 0, const_int(self.after) or 0)
            if mode == "reflect" and most > length - 1:
                raise IRTypeError(f"topi.nn.pad: reflect padding of axis {axis} by {most} "
                                  f"needs more than {most} elements, it has {length}")
            if length == 0:
                raise IRTypeError(f"topi.nn.pad: {mode} padding of the empty axis {axis}")

    def source(self, i: PrimExpr, conds: list[PrimExpr]) -> PrimExpr:
        """The input index that output index ``i`` reads (bounds added to ``conds`` in
        constant mode)."""
        j = i - self.before if const_int(self.before) != 0 else i
        if self.pads:
            last = self.length - 1
            if self.mode == "constant":
                if const_int(self.before) != 0:
                    conds.append(i >= self.before)
                if const_int(self.after) != 0:
                    conds.append(i < self.length + self.before)
            elif self.mode == "replicate":
                j = min_(max_(j, 0), last)
            elif self.mode == "circular":
                j = floormod(j, self.length if self.static_length is not None
                             else max_(self.length, 1))
            else:  # reflect: |j| mirrored at the last element
                mag = max_(j, -j)
                j = min_(mag, last * 2 - mag)
                if self.static_length is None:  # lengths checked at run time only
                    j = min_(max_(j, 0), max_(last, 0))
        return j + self.crop_before if self.crop_before else j


def pair(value: Any, what: str) -> tuple[int, int]:
    """An int or a pair of ints as a pair."""
    if isinstance(value, (list, tuple)):
        if len(value) == 1:
            return (int(value[0]), int(value[0]))
        if len(value) != 2:
            raise IRTypeError(f"{what} must be an int or a pair, got {value!r}")
        return (int(value[0]), int(value[1]))
    return (int(value), int(value))


def get_pad_tuple(padding: Any, kernel: tuple[int, int],
                  dilation: tuple[int, int] = (1, 1)) -> tuple[int, int, int, int]:
    """Padding as (top, left, bottom, right) from an int, a pair (symmetric), a 4-tuple
    (top, left, bottom, right), or "VALID"/"SAME"."""
    if isinstance(padding, str):
        if padding.upper() == "VALID":
            return (0, 0, 0, 0)
        if padding.upper() == "SAME":
            ph = (kernel[0] - 1) * dilation[0]
            pw = (kernel[1] - 1) * dilation[1]
            return (ph // 2, pw // 2, ph - ph // 2, pw - pw // 2)
        raise IRTypeError(f"padding must be VALID, SAME or numbers, got {padding!r}")
    if isinstance(padding, (list, tuple)):
        p = [int(x) for x in padding]
        if len(p) == 1:
            return (p[0], p[0], p[0], p[0])
        if len(p) == 2:
            return (p[0], p[1], p[0], p[1])
        if len(p) == 4:
            return (p[0], p[1], p[2], p[3])
        raise IRTypeError(f"padding must have 1, 2 or 4 entries, got {padding!r}")
    p0 = int(padding)
    return (p0, p0, p0, p0)

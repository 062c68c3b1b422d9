"""Padding, and the padding arguments of convolution and pooling."""

from __future__ import annotations

from typing import Any, Sequence

from ....core.diagnostics import IRTypeError
from ...expr import PrimExpr, all, const, convert, if_then_else
from ...te.tensor import Tensor, compute
from ..utils import INJECTIVE, as_index, const_int, index_dtype


def pad(data: Tensor, pad_before: Sequence[Any], pad_after: Sequence[Any] | None = None,
        pad_value: Any = 0.0, name: str = "PadInput", attrs: dict | None = None, *,
        axis_names: Sequence[str] | None = None) -> Tensor:
    """``data`` with ``pad_before[d]`` / ``pad_after[d]`` elements of ``pad_value`` added
    before / after each dimension ``d``. Only padded dimensions get a bounds condition;
    the padded value is read with ``if_then_else`` so out-of-range input is never read."""
    if not isinstance(data, Tensor):
        raise IRTypeError(f"topi.nn.pad takes a tensor, got {type(data).__name__}")
    n = data.ndim
    pad_after = list(pad_after) if pad_after is not None else list(pad_before)
    pad_before = list(pad_before)
    if len(pad_before) != n or len(pad_after) != n:
        raise IRTypeError(f"topi.nn.pad: {len(pad_before)}/{len(pad_after)} padding entries "
                          f"for a tensor of rank {n}")
    idt = index_dtype(data)
    before = [as_index(p, idt) for p in pad_before]
    after = [as_index(p, idt) for p in pad_after]
    for p in before + after:
        if const_int(p) is not None and const_int(p) < 0:
            raise IRTypeError(f"topi.nn.pad: negative padding {const_int(p)}")
    shape = tuple(as_index(s, idt) + b + a for s, b, a in zip(data.shape, before, after))
    value = pad_value if isinstance(pad_value, PrimExpr) else convert(pad_value, data.dtype)
    if value.dtype != data.dtype:
        value = const(pad_value, data.dtype) if not isinstance(pad_value, PrimExpr) else \
            value.astype(data.dtype)

    def fn(*idx: PrimExpr) -> PrimExpr:
        conds, src = [], []
        for d in range(n):
            b, a = before[d], after[d]
            i = idx[d]
            if const_int(b) != 0:
                conds.append(i >= b)
                i = i - b
            if const_int(a) != 0:
                conds.append(idx[d] < as_index(data.shape[d], idt) + b)
            src.append(i)
        if not conds:
            return data[tuple(src)]
        return if_then_else(all(*conds), data[tuple(src)], value)

    return compute(shape, fn, name=name, tag=INJECTIVE, attrs=attrs, axis_names=axis_names)


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

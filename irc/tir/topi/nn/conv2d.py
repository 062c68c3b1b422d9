"""2-D convolution: NCHW / NHWC data, OIHW / HWIO (or any O/I/H/W order) kernels,
strides, padding, dilation and groups; depthwise convolution; transposed convolution.

A convolution is two stages: ``pad_temp`` (a copy of the input with the padding, as
schedules expect a separate padding stage) and the reduction, e.g.
``conv2d_nhwc(nn, yy, xx, ff) += pad_temp[nn, yy*2 + ry, xx*2 + rx, rc] * W[ry, rx, rc, ff]``.

The products are summed in the accumulator dtype of the result (``out_dtype``, else the
data's): float32 for floats narrower than 32 bits (``accumulator_dtype``), whose sums are
then rounded to the result's dtype in a ``T_cast`` stage.
"""

from __future__ import annotations

from typing import Any

from ....core.diagnostics import IRTypeError
from ...expr import PrimExpr, cast, const, floordiv, floormod, if_then_else
from ...te import tensor as te
from ...te.tensor import Tensor, compute
from ..utils import accumulator_dtype, as_index, const_int, get_const_int, index_dtype, round_to
from .pad import get_pad_tuple, pad, pair


def _layout(layout: str, letters: str, what: str) -> dict[str, int]:
    if sorted(layout) != sorted(letters) or len(layout) != len(letters):
        raise IRTypeError(f"{what} layout {layout!r} is not supported; use a permutation of "
                          f"{letters!r} (e.g. {letters})")
    return {c: layout.index(c) for c in letters}


def _term(i: PrimExpr, scale: int) -> PrimExpr:
    return i if scale == 1 else i * scale


def _read(t: Tensor, dtype: str, idx: list[PrimExpr]) -> PrimExpr:
    return cast(t[tuple(idx)], dtype)


def _dtypes(data: Tensor, out_dtype: str | None) -> tuple[str, str]:
    """The result's dtype and the dtype its sums accumulate in."""
    out = out_dtype or data.dtype
    return out, accumulator_dtype(out)


def conv2d(data: Tensor, kernel: Tensor, strides: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1, data_layout: str = "NCHW",
           kernel_layout: str | None = None, out_dtype: str | None = None,
           name: str | None = None) -> Tensor:
    """2-D convolution of ``data`` with ``kernel`` (``kernel_layout`` defaults to OIHW for
    NCHW data and HWIO for NHWC data; I is ``in_channels // groups``)."""
    if not isinstance(data, Tensor) or not isinstance(kernel, Tensor):
        raise IRTypeError("topi.nn.conv2d takes two tensors")
    if data.ndim != 4 or kernel.ndim != 4:
        raise IRTypeError(f"topi.nn.conv2d needs 4-d data and kernel, got ranks {data.ndim} "
                          f"and {kernel.ndim}")
    if kernel_layout is None:
        kernel_layout = "OIHW" if data_layout == "NCHW" else "HWIO"
    dl = _layout(data_layout, "NCHW", "data")
    kl = _layout(kernel_layout, "OIHW", "kernel")
    sh, sw = pair(strides, "strides")
    dh, dw = pair(dilation, "dilation")
    kh = get_const_int(kernel.shape[kl["H"]], "kernel height")
    kw = get_const_int(kernel.shape[kl["W"]], "kernel width")
    pt, pl, pb, pr = get_pad_tuple(padding, (kh, kw), (dh, dw))
    groups = int(groups)
    idt = index_dtype(data, kernel)
    in_c = data.shape[dl["C"]]
    out_c = kernel.shape[kl["O"]]
    k_in = kernel.shape[kl["I"]]
    ci, co, kin = const_int(in_c), const_int(out_c), const_int(k_in)
    if groups < 1 or (ci is not None and ci % groups) or (co is not None and co % groups):
        raise IRTypeError(f"topi.nn.conv2d: groups={groups} must divide the input ({ci}) and "
                          f"output ({co}) channels")
    if ci is not None and kin is not None and ci // groups != kin:
        raise IRTypeError(f"topi.nn.conv2d: the kernel has {kin} input channels but the data "
                          f"has {ci} channels in {groups} group(s)")

    before = [0, 0, 0, 0]
    after = [0, 0, 0, 0]
    before[dl["H"]], before[dl["W"]] = pt, pl
    after[dl["H"]], after[dl["W"]] = pb, pr
    padded = pad(data, before, after, 0.0, name="pad_temp")
    out, acc = _dtypes(data, out_dtype)

    h, w = as_index(data.shape[dl["H"]], idt), as_index(data.shape[dl["W"]], idt)
    out_h = floordiv(h + pt + pb - ((kh - 1) * dh + 1), sh) + 1
    out_w = floordiv(w + pl + pr - ((kw - 1) * dw + 1), sw) + 1
    shape: list[PrimExpr] = [const(0, idt)] * 4
    shape[dl["N"]] = as_index(data.shape[dl["N"]], idt)
    shape[dl["C"]] = as_index(out_c, idt)
    shape[dl["H"]], shape[dl["W"]] = out_h, out_w
    names = [""] * 4
    for letter, var in zip("NCHW", ("nn", "ff", "yy", "xx")):
        names[dl[letter]] = var

    rc = te.reduce_axis((const(0, idt), as_index(k_in, idt)), name="rc")
    ry = te.reduce_axis((const(0, idt), const(kh, idt)), name="ry")
    rx = te.reduce_axis((const(0, idt), const(kw, idt)), name="rx")
    per_group_out = floordiv(as_index(out_c, idt), groups) if groups > 1 else None
    order = [rc, ry, rx] if data_layout.index("C") < data_layout.index("H") else [ry, rx, rc]

    if name is None:
        prefix = "group_conv2d" if groups > 1 else "conv2d"
        name = f"{prefix}_{data_layout.lower()}"
    if groups > 1 and data_layout == "NHWC" and kin is not None and kin > 1:
        return round_to(_grouped_nhwc(padded, kernel, kl, groups, shape, (sh, sw),
                                      (dh, dw), (rc, ry, rx), acc, name), out)

    def fn(*idx: PrimExpr) -> PrimExpr:
        n, f, y, x = (idx[dl[c]] for c in "NCHW")
        chan = rc.var
        if groups > 1:
            chan = floordiv(f, per_group_out) * as_index(k_in, idt) + rc.var
        d_idx: list[PrimExpr] = [n] * 4
        d_idx[dl["N"]], d_idx[dl["C"]] = n, chan
        d_idx[dl["H"]] = _term(y, sh) + _term(ry.var, dh)
        d_idx[dl["W"]] = _term(x, sw) + _term(rx.var, dw)
        k_idx: list[PrimExpr] = [f] * 4
        k_idx[kl["O"]], k_idx[kl["I"]], k_idx[kl["H"]], k_idx[kl["W"]] = f, rc.var, ry.var, rx.var
        return te.sum(_read(padded, acc, d_idx) * _read(kernel, acc, k_idx), axis=order)

    return round_to(compute(tuple(shape), fn, name=name, tag=name, axis_names=names), out)


def _grouped_nhwc(padded: Tensor, kernel: Tensor, kl: dict[str, int], groups: int,
                  shape: list[PrimExpr], strides: tuple[int, int], dilation: tuple[int, int],
                  axes: tuple[Any, Any, Any], acc: str, name: str) -> Tensor:
    """A grouped NHWC convolution with the group as an axis of its own: the sums are
    computed over ``(N, OH, OW, groups, C_out / groups)`` and the result is that array
    read as ``(N, OH, OW, C_out)`` (the same bytes). Along the innermost axis, a group's
    output channels, the input is one value (a broadcast) and the kernel contiguous, so
    the CPU rules give it the register-blocked tile of a dense NHWC convolution; with
    the group folded into the channel index, the input's channel ``f // width * kin +
    rc`` is no affine function of ``f``, and the loop stays scalar."""
    (sh, sw), (dh, dw) = strides, dilation
    rc, ry, rx = axes
    idt = shape[0].dtype
    k_in = kernel.shape[kl["I"]]
    per_group = floordiv(shape[3], groups)
    width = const_int(per_group)
    inner = (*shape[:3], const(groups, idt), per_group)

    def fn(n: PrimExpr, y: PrimExpr, x: PrimExpr, g: PrimExpr, c: PrimExpr) -> PrimExpr:
        d_idx = (n, _term(y, sh) + _term(ry.var, dh), _term(x, sw) + _term(rx.var, dw),
                 g * as_index(k_in, idt) + rc.var)
        k_idx: list[PrimExpr] = [c] * 4
        k_idx[kl["O"]] = g * per_group + c
        k_idx[kl["I"]], k_idx[kl["H"]], k_idx[kl["W"]] = rc.var, ry.var, rx.var
        return te.sum(_read(padded, acc, list(d_idx)) * _read(kernel, acc, k_idx),
                      axis=[ry, rx, rc])

    sums = compute(inner, fn, name=f"{name}_groups", tag=name,
                   axis_names=["nn", "yy", "xx", "gg", "cc"])
    return compute(tuple(shape),
                   lambda n, y, x, f: sums[n, y, x, floordiv(f, width), floormod(f, width)],
                   name=name, tag="injective", axis_names=["nn", "yy", "xx", "ff"])


def conv2d_nchw(data: Tensor, kernel: Tensor, stride: Any, padding: Any, dilation: Any = 1,
                out_dtype: str | None = None) -> Tensor:
    """Convolution of NCHW ``data`` with an OIHW ``kernel``."""
    return conv2d(data, kernel, stride, padding, dilation, 1, "NCHW", "OIHW", out_dtype)


def conv2d_nhwc(data: Tensor, kernel: Tensor, stride: Any, padding: Any, dilation: Any = 1,
                out_dtype: str | None = None) -> Tensor:
    """Convolution of NHWC ``data`` with an HWIO ``kernel``."""
    return conv2d(data, kernel, stride, padding, dilation, 1, "NHWC", "HWIO", out_dtype)


def group_conv2d_nchw(data: Tensor, kernel: Tensor, stride: Any, padding: Any,
                      dilation: Any, groups: int, out_dtype: str | None = None) -> Tensor:
    """Grouped convolution of NCHW ``data`` with an OIHW kernel (I = C / groups)."""
    return conv2d(data, kernel, stride, padding, dilation, groups, "NCHW", "OIHW", out_dtype)


def group_conv2d_nhwc(data: Tensor, kernel: Tensor, stride: Any, padding: Any,
                      dilation: Any, groups: int, out_dtype: str | None = None) -> Tensor:
    """Grouped convolution of NHWC ``data`` with an HWIO kernel (I = C / groups)."""
    return conv2d(data, kernel, stride, padding, dilation, groups, "NHWC", "HWIO", out_dtype)


def depthwise_conv2d_nchw(data: Tensor, kernel: Tensor, stride: Any, padding: Any,
                          dilation: Any = 1, out_dtype: str | None = None) -> Tensor:
    """Depthwise convolution: NCHW ``data``, kernel (C, M, KH, KW); output channel
    ``c * M + m`` filters input channel ``c``."""
    return _depthwise(data, kernel, stride, padding, dilation, out_dtype, "NCHW")


def depthwise_conv2d_nhwc(data: Tensor, kernel: Tensor, stride: Any, padding: Any,
                          dilation: Any = 1, out_dtype: str | None = None) -> Tensor:
    """Depthwise convolution: NHWC ``data``, kernel (KH, KW, C, M)."""
    return _depthwise(data, kernel, stride, padding, dilation, out_dtype, "NHWC")


def _depthwise(data: Tensor, kernel: Tensor, stride: Any, padding: Any, dilation: Any,
               out_dtype: str | None, layout: str) -> Tensor:
    dl = _layout(layout, "NCHW", "data")
    kl = {"C": 0, "M": 1, "H": 2, "W": 3} if layout == "NCHW" else \
        {"H": 0, "W": 1, "C": 2, "M": 3}
    sh, sw = pair(stride, "strides")
    dh, dw = pair(dilation, "dilation")
    kh = get_const_int(kernel.shape[kl["H"]], "kernel height")
    kw = get_const_int(kernel.shape[kl["W"]], "kernel width")
    pt, pl, pb, pr = get_pad_tuple(padding, (kh, kw), (dh, dw))
    idt = index_dtype(data, kernel)
    before, after = [0] * 4, [0] * 4
    before[dl["H"]], before[dl["W"]], after[dl["H"]], after[dl["W"]] = pt, pl, pb, pr
    padded = pad(data, before, after, 0.0, name="PaddedInput")
    out, acc = _dtypes(data, out_dtype)
    mult = as_index(kernel.shape[kl["M"]], idt)
    h, w = as_index(data.shape[dl["H"]], idt), as_index(data.shape[dl["W"]], idt)
    shape: list[PrimExpr] = [const(0, idt)] * 4
    shape[dl["N"]] = as_index(data.shape[dl["N"]], idt)
    shape[dl["C"]] = as_index(data.shape[dl["C"]], idt) * mult
    shape[dl["H"]] = floordiv(h + pt + pb - ((kh - 1) * dh + 1), sh) + 1
    shape[dl["W"]] = floordiv(w + pl + pr - ((kw - 1) * dw + 1), sw) + 1
    names = [""] * 4
    for letter, var in zip("NCHW", ("b", "c", "i", "j")):
        names[dl[letter]] = var
    di = te.reduce_axis((const(0, idt), const(kh, idt)), name="di")
    dj = te.reduce_axis((const(0, idt), const(kw, idt)), name="dj")

    def fn(*idx: PrimExpr) -> PrimExpr:
        b, c, i, j = (idx[dl[x]] for x in "NCHW")
        cin = c if const_int(mult) == 1 else floordiv(c, mult)
        m = const(0, idt) if const_int(mult) == 1 else floormod(c, mult)
        d_idx: list[PrimExpr] = [b] * 4
        d_idx[dl["C"]] = cin
        d_idx[dl["H"]] = _term(i, sh) + _term(di.var, dh)
        d_idx[dl["W"]] = _term(j, sw) + _term(dj.var, dw)
        k_idx: list[PrimExpr] = [cin] * 4
        k_idx[kl["C"]], k_idx[kl["M"]], k_idx[kl["H"]], k_idx[kl["W"]] = cin, m, di.var, dj.var
        return te.sum(_read(padded, acc, d_idx) * _read(kernel, acc, k_idx), axis=[di, dj])

    name = "DepthwiseConv2d"
    return round_to(compute(tuple(shape), fn, name=name,
                            tag=f"depthwise_conv2d_{layout.lower()}", axis_names=names), out)


def conv2d_transpose_nchw(data: Tensor, kernel: Tensor, strides: Any, padding: Any,
                          out_dtype: str | None = None, output_padding: Any = (0, 0),
                          dilation: Any = 1) -> Tensor:
    """Transposed convolution (the gradient of conv2d with respect to its input): NCHW
    ``data``, kernel (in_channels, out_channels, KH, KW). The output has height
    ``(H - 1) * stride - pad_top - pad_bottom + dilation * (KH - 1) + 1 +
    output_padding``. Built as: dilate the input by the strides, pad it, and convolve with
    the flipped kernel."""
    if data.ndim != 4 or kernel.ndim != 4:
        raise IRTypeError("topi.nn.conv2d_transpose_nchw needs 4-d data and kernel")
    sh, sw = pair(strides, "strides")
    oph, opw = pair(output_padding, "output_padding")
    dh, dw = pair(dilation, "dilation")
    kh = get_const_int(kernel.shape[2], "kernel height")
    kw = get_const_int(kernel.shape[3], "kernel width")
    pt, pl, pb, pr = get_pad_tuple(padding, (kh, kw))
    if oph >= max(sh, dh) or opw >= max(sw, dw):
        raise IRTypeError("topi.nn.conv2d_transpose_nchw: output_padding must be smaller "
                          "than the stride")
    idt = index_dtype(data, kernel)
    if const_int(data.shape[1]) is not None and const_int(kernel.shape[0]) is not None \
            and const_int(data.shape[1]) != const_int(kernel.shape[0]):
        raise IRTypeError(f"topi.nn.conv2d_transpose_nchw: data has {const_int(data.shape[1])}"
                          f" channels but the kernel expects {const_int(kernel.shape[0])}")
    dilated = data
    if sh > 1 or sw > 1:
        n, c, h, w = (as_index(s, idt) for s in data.shape)
        dshape = (n, c, (h - 1) * sh + 1, (w - 1) * sw + 1)

        def dilate(b: PrimExpr, ch: PrimExpr, y: PrimExpr, x: PrimExpr) -> PrimExpr:
            ok = (floormod(y, sh) == 0) & (floormod(x, sw) == 0)
            zero = const(0, data.dtype)
            return if_then_else(ok, data[b, ch, floordiv(y, sh), floordiv(x, sw)], zero)

        dilated = compute(dshape, dilate, name="data_dilate", tag="injective",
                          axis_names=["i0", "i1", "i2", "i3"])
    ekh, ekw = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    bt, bl = ekh - 1 - pt, ekw - 1 - pl
    bb, br = ekh - 1 - pb + oph, ekw - 1 - pr + opw
    if min(bt, bl, bb, br) < 0:
        raise IRTypeError("topi.nn.conv2d_transpose_nchw: padding larger than the kernel is "
                          "not supported")
    padded = pad(dilated, [0, 0, bt, bl], [0, 0, bb, br], 0.0, name="data_pad")
    in_c, out_c = kernel.shape[0], kernel.shape[1]
    flipped = compute((as_index(out_c, idt), as_index(in_c, idt), const(kh, idt), const(kw, idt)),
                      lambda o, i, hh, ww: kernel[i, o, kh - 1 - hh, kw - 1 - ww],
                      name="kernel_transform", tag="injective")
    n = as_index(data.shape[0], idt)
    out_h = padded.shape[2] - ekh + 1
    out_w = padded.shape[3] - ekw + 1
    out, acc = _dtypes(data, out_dtype)
    dc = te.reduce_axis((const(0, idt), as_index(in_c, idt)), name="dc")
    dy = te.reduce_axis((const(0, idt), const(kh, idt)), name="dh")
    dx = te.reduce_axis((const(0, idt), const(kw, idt)), name="dw")

    def fn(b: PrimExpr, c: PrimExpr, h: PrimExpr, w: PrimExpr) -> PrimExpr:
        return te.sum(
            _read(padded, acc, [b, dc.var, h + _term(dy.var, dh), w + _term(dx.var, dw)])
            * _read(flipped, acc, [c, dc.var, dy.var, dx.var]), axis=[dc, dy, dx])

    return round_to(compute((n, as_index(out_c, idt), out_h, out_w), fn,
                            name="conv2d_transpose_nchw", tag="conv2d_transpose_nchw"), out)

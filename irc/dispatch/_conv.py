"""What the convolution backends (``dnnl``, ``cudnn``) share: the pattern entries of the
conv2d family, ``relu(conv2d(x, w) + bias + residual)`` (most specific first), the float32
check of a match, and the reading of a composite function into its parts.

A backend gives :func:`conv_entries` its name and a check function (usually
:func:`check_conv2d` and its own constraints), and builds its runtime plan from a
:class:`ConvFunction`.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..ir.expr import Call, Function
from ._gemm import CompositeFunction, _static_shape, static_shape
from .pattern import Pattern, is_op, wildcard
from .table import PatternCheckContext

CONV_CHAINS = ("conv2d_bias_add_relu", "conv2d_bias_add", "conv2d_bias_relu", "conv2d_bias",
               "conv2d_add_relu", "conv2d_add", "conv2d_relu", "conv2d")


def bias_fits(bias: tuple[int, ...], out: tuple[int, ...], channel_axis: int) -> bool:
    """Whether ``bias`` broadcasts to ``out`` along the channel axis only (one value per
    output channel)."""
    if len(bias) > len(out):
        return False
    padded = (1,) * (len(out) - len(bias)) + bias
    return all(b == (out[i] if i == channel_axis else 1) for i, b in enumerate(padded))


def check_conv2d(ctx: PatternCheckContext) -> bool:
    """Whether a float32 convolution library runs the matched convolution: float32
    throughout (``out_dtype`` void or float32), static shapes, a bias with one value per
    output channel, a residual of the output's shape."""
    conv = ctx.value("conv")
    if not isinstance(conv, Call):
        return False
    if conv.attrs.get("out_dtype") not in (None, "void", "float32"):
        return False
    names = ["data", "weight", "conv", "root"] + [n for n in ("bias", "residual")
                                                  if n in ctx.annotated]
    if any(ctx.dtype(n) != "float32" for n in names):
        return False
    shapes = {n: _static_shape(ctx, n) for n in names}
    if any(s is None for s in shapes.values()):
        return False
    out = shapes["conv"]
    if "bias" in shapes:
        layout = conv.attrs.get("out_layout") or conv.attrs.get("data_layout", "NCHW")
        if not bias_fits(shapes["bias"], out, layout.index("C")):
            return False
    if "residual" in shapes and shapes["residual"] != out:
        return False
    return shapes["root"] == out


def conv_entries(backend: str, check: Callable[[PatternCheckContext], bool]) -> list[tuple]:
    """The pattern entries ``<backend>.conv2d[_bias][_add][_relu]`` (see
    :data:`CONV_CHAINS`), each checked by ``check``."""
    data, weight, bias, residual = wildcard(), wildcard(), wildcard(), wildcard()
    conv = is_op("nn.conv2d")(data, weight)

    def add(a: Pattern, b: Pattern) -> Pattern:
        return is_op("add")(a, b) | is_op("add")(b, a)

    with_bias = add(conv, bias)
    notes = {"data": data, "weight": weight, "conv": conv}
    relu = is_op("nn.relu")
    chains = {
        "conv2d_bias_add_relu": (relu(add(with_bias, residual)), ("bias", "residual")),
        "conv2d_bias_add": (add(with_bias, residual), ("bias", "residual")),
        "conv2d_bias_relu": (relu(with_bias), ("bias",)),
        "conv2d_bias": (with_bias, ("bias",)),
        "conv2d_add_relu": (relu(add(conv, residual)), ("residual",)),
        "conv2d_add": (add(conv, residual), ("residual",)),
        "conv2d_relu": (relu(conv), ()),
        "conv2d": (conv, ()),
    }
    parts = {"bias": bias, "residual": residual}
    return [(f"{backend}.{name}", chains[name][0],
             {**notes, **{p: parts[p] for p in chains[name][1]}}, check)
            for name in CONV_CHAINS]


class ConvFunction(CompositeFunction):
    """A composite function of the conv2d family: ``data``, ``weight``, ``bias``,
    ``residual``, ``activation`` and the convolution's attributes."""

    def __init__(self, backend: str, symbol: str, func: Function,
                 constants: dict[str, np.ndarray]):
        super().__init__(backend, symbol, func, constants)
        e = self._call(self.result)
        self.activation = None
        if e.op.name == "nn.relu":
            self.activation = "relu"
            e = self._call(e.args[0])
        self.bias: Any = None
        self.residual: Any = None
        while e.op.name == "add":
            a, b = e.args
            inner, other = (a, b) if self._leads_to_conv(a) else (b, a)
            shape = static_shape(other.struct_info, self)
            if shape == self.out_shape and self.residual is None:
                self.residual = other
            elif self.bias is None:
                self.bias = other
            else:
                raise self.error("more than one bias or residual add")
            e = self._call(inner)
        if e.op.name != "nn.conv2d":
            raise self.error(f"expected a conv2d, found {e.op.name}")
        self.conv = e
        self.data, self.weight = e.args

    def _leads_to_conv(self, e: Any) -> bool:
        return self._is_call(e, "nn.conv2d") or self._is_call(e, "add")

    def bias_role(self) -> list | None:
        """The bias's role with a constant bias stored flat (one value per channel)."""
        if self.bias is None:
            return None
        data = self.constant(self.bias)
        return self.role(self.bias, None if data is None else np.reshape(data, -1))

"""The ``dnnl`` dispatch backend: convolutions and matrix products on oneDNN (the
``onednn-cpu-gomp`` wheel, extra ``irc[dnnl]``; see ``irc.runtime.dnnl``), their bias,
residual add and activation done by oneDNN itself (bias and post-ops), float32.

Patterns (most specific first, so a longer match wins):

- ``dnnl.conv2d_bias_add_relu``, ``dnnl.conv2d_bias_add``, ``dnnl.conv2d_bias_relu``,
  ``dnnl.conv2d_bias``, ``dnnl.conv2d_add_relu``, ``dnnl.conv2d_add``,
  ``dnnl.conv2d_relu``, ``dnnl.conv2d``: ``relu(conv2d(x, w) + bias + residual)`` in
  any data / kernel / output layout (NCHW, NHWC, ...), with strides, padding, dilation and
  groups (depthwise included). ``bias`` broadcasts along the output channels only
  (``[1, C, 1, 1]`` in NCHW, ``[C]`` in NHWC); ``residual`` has the output's shape (a
  ResNet shortcut). The residual becomes oneDNN's binary-add post-op (read where it is)
  on channels-last data, its sum post-op otherwise; the activation an eltwise post-op.
  Channels-last (NHWC) data runs on oneDNN's direct kernels as it is; NCHW data is
  reordered to oneDNN's blocked layout around each call (oneDNN has only an im2col gemm
  for plain NCHW), so ``irc.compile`` converts convolutions to NHWC before dispatching
  them (see there).
- ``dnnl.matmul_transposed_bias_{relu,gelu,gelu_tanh,silu}``, ``..._bias``,
  ``dnnl.matmul_transposed``, the same without ``_transposed``, ``dnnl.batch_matmul``:
  the dense layer / matmul family of ``blas`` (see ``irc.dispatch.blas``), here with the
  bias and activation fused by oneDNN.

The patterns are registered only when a oneDNN wheel is installed (checked without
loading it); otherwise asking for them says how to install it. The code generator
(:func:`dnnl_codegen`) turns each composite function into a
:class:`~irc.runtime.dnnl.ConvPlan` or :class:`~irc.runtime.dnnl.MatmulPlan`; the
:class:`~irc.runtime.dnnl_module.DnnlModule` creates their primitives once when it is
made or loaded, with constant weights reordered once into the layout oneDNN chose.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.expr import Call, Function
from ..runtime import dnnl as onednn
from ..runtime.dnnl_module import DnnlModule
from . import _conv
from ._gemm import CompositeFunction, GemmFunction, _static_shape, gemm_entries, static_shape
from .codegen import register_codegen
from .table import PatternCheckContext, mark_unavailable, register_patterns

ACTIVATIONS = list(onednn.ACTIVATIONS)


def _folded_bias(bias: tuple[int, ...], out: tuple[int, ...], batch: bool
                 ) -> tuple[int, int, int] | None:
    """The bias's dims against the product's ``[batch, m, n]`` (leading dimensions of a
    non-batch product folded into m), or None when oneDNN cannot broadcast it so."""
    if len(bias) > len(out):
        return None
    padded = (1,) * (len(out) - len(bias)) + bias
    if padded[-1] not in (1, out[-1]):
        return None
    if batch:
        if any(b not in (1, o) for b, o in zip(padded, out)):
            return None
        return padded  # type: ignore[return-value]
    lead, lead_out = padded[:-1], out[:-1]
    if all(b == 1 for b in lead):
        return (1, 1, padded[-1])
    if lead == lead_out:
        return (1, int(np.prod(lead_out)), padded[-1])
    return None


def _check_matmul_bias(ctx: PatternCheckContext) -> bool:
    if "bias" not in ctx.annotated:
        return True
    bias, out = _static_shape(ctx, "bias"), _static_shape(ctx, "root")
    return bias is not None and out is not None and \
        _folded_bias(bias, out, len(out) == 3 and ctx.entry.name.endswith("batch_matmul")) \
        is not None


def _register() -> None:
    if not onednn.available():
        mark_unavailable("dnnl", f"the dnnl backend needs oneDNN (the 'onednn-cpu-gomp' wheel): "
                                 f"{onednn.INSTALL}")
        return
    register_patterns(_conv.conv_entries("dnnl", _conv.check_conv2d))
    register_patterns(gemm_entries("dnnl", ACTIVATIONS,
                                   lambda i, o: i == o == "float32", _check_matmul_bias))


_register()


class ConvFunction(_conv.ConvFunction):
    """A composite function of the conv2d family, as a oneDNN :class:`ConvPlan`."""

    def __init__(self, symbol: str, func: Function, constants: dict[str, np.ndarray]):
        super().__init__("dnnl", symbol, func, constants)

    def plan(self) -> onednn.ConvPlan:
        attrs = self.conv.attrs
        layout = attrs.get("data_layout", "NCHW")
        return onednn.ConvPlan(
            data_shape=static_shape(self.data.struct_info, self), data_layout=layout,
            weight_shape=static_shape(self.weight.struct_info, self),
            kernel_layout=attrs.get("kernel_layout", "OIHW"),
            out_shape=self.out_shape, out_layout=attrs.get("out_layout") or layout,
            strides=tuple(attrs.get("strides", (1, 1))),
            padding=tuple(attrs.get("padding", (0, 0, 0, 0))),
            dilation=tuple(attrs.get("dilation", (1, 1))), groups=int(attrs.get("groups", 1)),
            bias=self.bias is not None, residual=self.residual is not None,
            activation=self.activation)

    def spec(self) -> dict[str, Any]:
        plan = self.plan()
        bias = self.bias_role()
        return {"plan": onednn.plan_to_json(plan), "data": self.role(self.data),
                "weight": self.role(self.weight), "bias": bias,
                "residual": None if self.residual is None else self.role(self.residual),
                "num_params": len(self.func.params), "out_shape": list(self.out_shape),
                "dtype": self.dtype}


def _matmul_spec(f: GemmFunction) -> dict[str, Any]:
    d = f.dims()
    bias_shape = None
    if f.bias is not None:
        bias_shape = _folded_bias(static_shape(f.bias.struct_info, f), f.out_shape,
                                  len(static_shape(f.rhs.struct_info, f)) == 3)
        if bias_shape is None:
            raise f.error("its bias does not broadcast over the product's rows")
    rhs = static_shape(f.rhs.struct_info, f)
    plan = onednn.MatmulPlan(m=d["m"], n=d["n"], k=d["k"], batch=d["batch"],
                             b_batch=rhs[0] if len(rhs) == 3 else 1, trans_b=d["trans_b"],
                             bias_shape=bias_shape, activation=f.activation)
    return {"plan": onednn.plan_to_json(plan), "data": f.role(f.lhs), "weight": f.role(f.rhs),
            "bias": None if f.bias is None else f.role(f.bias), "residual": None,
            "num_params": len(f.func.params), "out_shape": list(f.out_shape),
            "dtype": f.dtype}


def _is_conv(func: Function) -> bool:
    """Whether a composite function is of the conv2d family: by its pattern's name, or
    (a function made by hand) by a convolution anywhere in its body."""
    name = str(func.attrs.get("Composite", ""))
    if name.startswith("dnnl."):
        return name.startswith("dnnl.conv2d")
    found: list[bool] = []

    def visit(e: Any) -> None:
        if isinstance(e, Call):
            if getattr(e.op, "name", "") == "nn.conv2d":
                found.append(True)
            for a in e.args:
                visit(a)

    for blk in getattr(func.body, "blocks", ()):
        for b in blk.bindings:
            visit(b.value)
    return bool(found)


@register_codegen("dnnl", device_type="cpu")
def dnnl_codegen(funcs: list[tuple[str, Function]]) -> DnnlModule:
    """A :class:`DnnlModule` with one function per ``(symbol, composite function)``."""
    constants: dict[str, np.ndarray] = {}
    specs: dict[str, dict] = {}
    for symbol, func in funcs:
        f: CompositeFunction
        if _is_conv(func):
            f = ConvFunction(symbol, func, constants)
            specs[symbol] = f.spec()
        else:
            f = GemmFunction("dnnl", symbol, func, constants)
            if f.dtype != "float32" or f.in_dtype != "float32":
                raise f.error(f"dtype {f.in_dtype} -> {f.dtype} (the dnnl backend takes "
                              "float32)")
            specs[symbol] = _matmul_spec(f)
        specs[symbol]["param_shapes"] = [list(static_shape(p.struct_info, f))
                                         for p in func.params]
    return DnnlModule(specs, constants)

"""The ``cudnn`` dispatch backend: float32 convolutions on cuDNN (NVIDIA GPUs; the
``nvidia-cudnn-cu13`` wheel, extra ``irc[cudnn]``), their bias, residual add and ReLU
fused by cuDNN (``cudnnConvolutionBiasActivationForward``).

Patterns, most specific first: ``cudnn.conv2d_bias_add_relu``, ``cudnn.conv2d_bias_add``,
``cudnn.conv2d_bias_relu``, ``cudnn.conv2d_bias``, ``cudnn.conv2d_add_relu``,
``cudnn.conv2d_add``, ``cudnn.conv2d_relu``, ``cudnn.conv2d``. Beyond the float32 checks
of the conv2d family (static shapes, a bias per output channel, a residual of the
output's shape), cuDNN takes NCHW data with OIHW weights or NHWC data with OHWI weights
(the output in the data's layout), symmetric padding, and any strides, dilation and
groups (depthwise included).

The patterns are registered only when the cuDNN wheel is installed (checked without
loading it); otherwise asking for them says how to install it. The code generator
(:func:`cudnn_codegen`) turns each composite function into a
:class:`~irc.runtime.cudnn.CudnnConvPlan`; the result is a
:class:`~irc.runtime.cudnn_module.CudnnModule`, run by the VM on ``irc.cuda(i)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.expr import Call, Function
from ..runtime import cudnn
from ..runtime.cudnn_module import CudnnModule
from ._conv import ConvFunction, check_conv2d, conv_entries
from ._gemm import static_shape
from .codegen import register_codegen
from .table import PatternCheckContext, mark_unavailable, register_patterns

LAYOUTS = {("NCHW", "OIHW"), ("NHWC", "OHWI")}


def _cudnn_form(conv: Any) -> str | None:
    """Why cuDNN cannot run convolution call ``conv`` (None when it can)."""
    attrs = conv.attrs
    data = attrs.get("data_layout", "NCHW")
    kernel = attrs.get("kernel_layout", "OIHW")
    if (data, kernel) not in LAYOUTS or (attrs.get("out_layout") or data) != data:
        return f"layouts {data}/{kernel}"
    top, left, bottom, right = tuple(attrs.get("padding", (0, 0, 0, 0)))
    if (top, left) != (bottom, right):
        return "asymmetric padding"
    return None


def check_cudnn_conv2d(ctx: PatternCheckContext) -> bool:
    """:func:`~irc.dispatch._conv.check_conv2d` and cuDNN's own limits (see the module
    docstring)."""
    conv = ctx.value("conv")
    return check_conv2d(ctx) and isinstance(conv, Call) and _cudnn_form(conv) is None


def _register() -> None:
    if not cudnn.available():
        mark_unavailable("cudnn", f"the cudnn backend needs cuDNN: {cudnn.INSTALL}")
        return
    register_patterns(conv_entries("cudnn", check_cudnn_conv2d))


_register()


def conv_plan(f: ConvFunction) -> cudnn.CudnnConvPlan:
    """The cuDNN plan of a composite function of the conv2d family."""
    attrs = f.conv.attrs
    why = _cudnn_form(f.conv)
    if why is not None:
        raise f.error(f"cuDNN does not take its {why}")
    if f.dtype != "float32":
        raise f.error(f"dtype {f.dtype} (the cudnn backend takes float32)")
    layout = attrs.get("data_layout", "NCHW")
    d = dict(zip(layout, static_shape(f.data.struct_info, f)))
    k = dict(zip(attrs.get("kernel_layout", "OIHW"), static_shape(f.weight.struct_info, f)))
    pad = tuple(attrs.get("padding", (0, 0, 0, 0)))
    plan = cudnn.CudnnConvPlan(
        layout=layout, n=d["N"], c=d["C"], h=d["H"], w=d["W"], k=k["O"], r=k["H"], s=k["W"],
        pad=(pad[0], pad[1]), stride=tuple(attrs.get("strides", (1, 1))),
        dilation=tuple(attrs.get("dilation", (1, 1))), groups=int(attrs.get("groups", 1)),
        bias=f.bias is not None, residual=f.residual is not None, activation=f.activation)
    out = dict(zip(layout, f.out_shape))
    if (out["N"], out["C"], out["H"], out["W"]) != (plan.n, plan.k, *plan.out_hw):
        raise f.error(f"its output {list(f.out_shape)} is not the convolution's")
    return plan


@register_codegen("cudnn", device_type="cuda")
def cudnn_codegen(funcs: list[tuple[str, Function]]) -> CudnnModule:
    """A :class:`CudnnModule` with one function per ``(symbol, composite function)``."""
    constants: dict[str, np.ndarray] = {}
    specs: dict[str, dict] = {}
    for symbol, func in funcs:
        f = ConvFunction("cudnn", symbol, func, constants)
        plan = conv_plan(f)
        specs[symbol] = {
            "plan": plan.to_json(), "data": f.role(f.data), "weight": f.role(f.weight),
            "bias": f.bias_role(),
            "residual": None if f.residual is None else f.role(f.residual),
            "num_params": len(func.params), "out_shape": list(f.out_shape),
            "param_shapes": [list(static_shape(p.struct_info, f)) for p in func.params],
            "dtype": f.dtype}
    return CudnnModule(specs, constants)

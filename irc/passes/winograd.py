"""WinogradConv2D: run 3 x 3 convolutions of stride 1 or 2 as Winograd F(m x m, 3 x 3).

Algorithm: every ``R.nn.conv2d`` of float32 NHWC data with a constant HWIO 3 x 3 kernel,
stride 1 or 2 (the same along both axes), dilation 1, one group and a static shape
(after ``ConvertLayout``, which puts CPU convolutions in NHWC, the kernel is a constant
or a ``permute_dims`` of one) is replaced by ::

    v = R.call_tir(winograd_input_transform, (x,))     # [a, a, P, Ci]
    u = <constant>                                       # [a, a, Ci, Co], G g G^T
    y = R.call_tir(winograd_output_transform, (R.matmul(v, u),))   # [N, H, W, Co]

with P the number of ``m x m`` output tiles and ``a`` the input span of a tile:
``m + 2`` at stride 1, ``2m + 1`` at stride 2, where the transforms are the polyphase
split of ``topi.nn.winograd_matrices`` (F(m, 2) on the even input rows and columns,
the identity on the odd ones). The kernel transform is computed here, once
(``topi.nn.winograd_weight_transform``); the batched product is an ordinary
``matmul``, which the CPU rules tile and whose constant operand they pack like any
weight; bias, residual add and activation fuse into the output transform (an injective
function), which writes the convolution's output directly.

Choice of m per layer (``tile="auto"``, the default pipeline's setting under an llvm
target): Winograd replaces 9 m^2 multiply-adds per output tile and channel pair by a^2
(0.44 of them for F(2x2) and 0.25 for F(4x4) at stride 1; 0.69 and 0.56 at stride 2),
but its kernel has a^2 / 9 times the direct one's size and its transforms read and
write ``[a, a, P, C]`` tensors. A layer is converted when both channel counts are at
least ``MIN_CHANNELS``: with m = 4 when the output has at least ``MIN_TILES`` tiles of
4 x 4 (the batched product then has enough rows for the micro-kernel's register tile)
and the transformed kernel is within ``MAX_F4_WEIGHT_BYTES``, else with m = 2 when the
output has that many tiles of 2 x 2 and the kernel is within ``MAX_WEIGHT_BYTES``, else
not at all (at batch 1 a kernel is read from memory once per call, so its size sets a
floor on the layer's time); either m only while the tiles, partial ones at the edges
counted whole, keep at most ``MAX_WORK_RATIO`` of the direct multiplications. So large
outputs with moderate channel counts (ResNet's 56 x 56 x 64 and 28 x 28 x 128 layers)
take m = 4; smaller ones, or kernels too large for m = 4's 36 taps per channel pair,
take m = 2; a 7 x 7 output takes m = 2 (4 tiles of 4 x 4 would hold 64 outputs for its
49); and a stride-2 layer down to 7 x 7 stays direct, its partial tiles keeping too many
of the products. The measurements behind these bounds are the README's benchmark notes
(``benchmarks/cpu_models.py``).

``tile=2`` or ``tile=4`` (or, for the default pipeline, ``PassContext(config=
{"winograd.tile": 2})``) forces that tile size on every eligible convolution, whatever
the target and the kernel's size; ``PassContext(disabled_pass=["WinogradConv2D"])``
keeps every convolution direct.

Preconditions: the module is normalized; kernels are bound constants (``BindParams``),
otherwise nothing is converted. Postconditions: the program computes the same values up
to float32 rounding of the transforms (relative error around 1e-6 for m = 2 and 1e-5 for
m = 4 on typical activations).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.diagnostics import IRCError
from ..core.functor import Mutator
from ..core.module import IRModule
from ..core.target import Target
from ..core.transform import Pass, PassContext, register_pass_config
from ..ir.block_builder import normalize
from ..ir.expr import Call, Constant, Expr, Function, Op, Var
from ..ir.op import OPAQUE, make_call
from ..ir.ops import call_tir
from ..ir.struct_info_analysis import static_shape
from ..tir.topi.nn.pad import get_pad_tuple, pair
from ..tir.topi.nn.winograd import (
    KERNEL,
    TILE_SIZES,
    input_span,
    winograd_input_transform_nhwc,
    winograd_output_transform_nhwc,
    winograd_tiles,
    winograd_weight_transform,
)
from ._graph_utils import iter_bindings
from .dead_code_elimination import DeadCodeElimination
from .legalize import LegalizeContext
from .normalize import normalize_function

# Below this many input or output channels the batched product is too thin to run near
# the machine's peak, and the transforms cost as much as they save.
MIN_CHANNELS = 16
# Fewer output tiles than this make the batched product too short (rows of the
# micro-kernel's register tile) to pay for the transforms.
MIN_TILES = 16
# The largest transformed kernel (bytes) converted by "auto": a kernel is read from
# memory once per call, and beyond this its reading outweighs the saved arithmetic.
MAX_WEIGHT_BYTES = 32 << 20
# The same for F(4, 3), whose kernel is 4 times the direct one (F(2, 3)'s: 1.8 times):
# past a few MB, reading it takes longer than the multiplications it saves over F(2, 3)
# (ResNet's 256-channel stage at 14 x 14: 9.4 MB, slower than F(2, 3)'s 4.2 MB).
MAX_F4_WEIGHT_BYTES = 6 << 20
# The most multiplications, against the direct convolution's, that "auto" converts:
# partial tiles at the output's edges are computed whole, and at stride 2, where each
# output costs a^2 / m^2 = 25 / 4 against 9, a 7 x 7 output in 2 x 2 tiles keeps 0.91
# of them while its kernel grows 2.8 times (ResNet-18's 256 -> 512 layer: no faster).
MAX_WORK_RATIO = 0.75


def choose_tile(out_shape: tuple[int, int, int], in_channels: int, out_channels: int,
                itemsize: int = 4, stride: int = 1) -> int | None:
    """The output tile size ``tile="auto"`` uses for a layer with output ``(N, H, W)``
    (see the module docstring), or None to keep the direct convolution."""
    if min(in_channels, out_channels) < MIN_CHANNELS:
        return None
    n, h, w = out_shape
    for m in (4, 2):
        a = input_span(m, stride)
        th, tw = winograd_tiles(h, w, m)
        if n * th * tw < MIN_TILES:
            continue
        if a * a * n * th * tw > MAX_WORK_RATIO * KERNEL * KERNEL * n * h * w:
            continue
        limit = MAX_WEIGHT_BYTES if m == 2 else MAX_F4_WEIGHT_BYTES
        if a * a * in_channels * out_channels * itemsize > limit:
            continue
        return m
    return None


class _Rewriter(Mutator):
    def __init__(self, func: Function, ctx: LegalizeContext, tile: int | str,
                 made: dict[tuple, tuple[Any, Any]]):
        super().__init__()
        self.ctx = ctx
        self.made = made
        self.tile = tile
        self.values: dict[int, Expr] = {}
        for _, b in iter_bindings(func):
            if hasattr(b, "var") and hasattr(b, "value"):
                self.values[id(b.var)] = b.value
        self.changed = False

    def constant_kernel(self, w: Expr) -> np.ndarray | None:
        """The kernel as an HWIO array when it is a constant or a permutation of one."""
        if isinstance(w, Var):
            w = self.values.get(id(w), w)
        if isinstance(w, Constant):
            return np.asarray(w.data)
        if isinstance(w, Call) and isinstance(w.op, Op) and w.op.name == "permute_dims":
            src = w.args[0]
            if isinstance(src, Var):
                src = self.values.get(id(src), src)
            axes = w.attrs.get("axes")
            if isinstance(src, Constant) and axes is not None:
                return np.transpose(np.asarray(src.data), [int(x) for x in axes])
        return None

    def visit_Call(self, call: Call) -> Expr:
        call = self.generic_visit(call)
        if not (isinstance(call.op, Op) and call.op.name == "nn.conv2d"):
            return call
        new = self.convert(call)
        if new is None:
            return call
        self.changed = True
        return new

    def convert(self, call: Call) -> Expr | None:
        a = call.attrs
        if (a["data_layout"], a["kernel_layout"], a["out_layout"] or "NHWC") != \
                ("NHWC", "HWIO", "NHWC"):
            return None
        strides = pair(a["strides"], "strides")
        if int(a["groups"]) != 1 or strides not in ((1, 1), (2, 2)) or \
                pair(a["dilation"], "dilation") != (1, 1):
            return None
        stride = strides[0]
        x, w = call.args
        xs, ys = static_shape(x.struct_info), static_shape(call.struct_info)
        if xs is None or ys is None or len(xs) != 4:
            return None
        dtypes = {str(x.struct_info.dtype), str(w.struct_info.dtype),
                  str(call.struct_info.dtype)}
        if dtypes != {"float32"}:
            return None
        kernel = self.constant_kernel(w)
        if kernel is None or kernel.shape[:2] != (3, 3) or kernel.shape[2] != xs[3]:
            return None
        n, oh, ow, co = ys
        m = self.tile if self.tile != "auto" else \
            choose_tile((n, oh, ow), xs[3], co, stride=stride)
        if m is None:
            return None
        pads = get_pad_tuple(a["padding"], (3, 3))
        u = Constant.from_numpy(
            winograd_weight_transform(kernel.astype(np.float32), m, stride), "float32")
        v = self.transform("input", (xs, m, stride, pads, (oh, ow)), x,
                           lambda: self.ctx.call_te(
                               winograd_input_transform_nhwc, x, m=m, padding=pads,
                               out_hw=(oh, ow), stride=stride,
                               name="winograd_input_transform"))
        prod = normalize(make_call("matmul", v, u))
        return self.transform("output", (m, stride, ys), prod, lambda: self.ctx.call_te(
            winograd_output_transform_nhwc, prod, m=m, out_shape=ys, stride=stride,
            name="winograd_output_transform"))

    def transform(self, kind: str, key: tuple, arg: Expr, make: Any) -> Expr:
        """``R.call_tir`` of the ``kind`` transform on ``arg``; the loop function is made
        once per layer shape (``make()``) and reused by the layers that share it."""
        hit = self.made.get((kind, key))
        if hit is not None:
            gv, sinfo = hit
            return normalize(call_tir(gv, [arg], sinfo))
        call = make()
        gv = call.args[0]
        if kind == "input":
            # Nothing fuses into the input transform: its producer is usually the
            # previous layer's output transform, and the two tilings do not nest.
            f = self.ctx.new_funcs.get(gv.name_hint)
            if f is not None and "op_pattern" not in f.attrs:
                self.ctx.new_funcs[gv.name_hint] = f.replace(
                    attrs={**f.attrs, "op_pattern": OPAQUE})
        self.made[(kind, key)] = (gv, call.struct_info)
        return call


register_pass_config(
    "winograd.tile", (str, int), choices=("auto", *TILE_SIZES),
    doc="the Winograd tile size WinogradConv2D(tile='auto') uses: 'auto' (chosen per "
        "layer) or " + " or ".join(map(str, TILE_SIZES)))


@dataclass(frozen=True)
class WinogradConv2D(Pass):
    """Run eligible convolutions as Winograd F(m x m, 3 x 3) (see the module
    docstring). ``tile``: ``"auto"`` (choose per layer; only under an llvm target, the
    current one when the pass runs), 2 or 4."""

    tile: Any = "auto"

    def __post_init__(self) -> None:
        if self.tile != "auto" and self.tile not in TILE_SIZES:
            raise IRCError(f"WinogradConv2D: tile must be 'auto' or one of "
                           f"{', '.join(map(str, TILE_SIZES))}, got {self.tile!r}")

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        tile = self.tile
        if tile == "auto":
            tile = ctx.config.get("winograd.tile", "auto")
            if tile != "auto" and tile not in TILE_SIZES:
                raise IRCError(f"PassContext config 'winograd.tile' must be 'auto' or one of "
                               f"{', '.join(map(str, TILE_SIZES))}, got {tile!r}")
        if tile == "auto":
            target = Target.current()
            if target is None or target.kind.name != "llvm":
                return mod
        lctx = LegalizeContext(mod)
        made: dict[tuple, tuple[Any, Any]] = {}
        funcs: dict[Any, Any] = {}
        changed = False
        for gv, f in mod.functions.items():
            if isinstance(f, Function) and not f.attrs.get("Primitive"):
                rw = _Rewriter(f, lctx, tile, made)
                new = rw.visit(f)
                if rw.changed:
                    f = normalize_function(new, mod)
                    changed = True
            funcs[gv] = f
        if not changed:
            return mod
        # The kernels' layout permutations are now unused: drop them before anything
        # folds them.
        return DeadCodeElimination()(lctx.result_module(funcs))


__all__ = ["WinogradConv2D", "choose_tile"]

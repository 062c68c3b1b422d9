"""ConvertLayout: run convolutions (and their neighbours) in a desired data layout.

Algorithm: one forward walk over each dataflow block (graph-level operators, before
legalization). ``R.nn.conv2d`` whose data layout differs from the desired one (default
``{"nn.conv2d": ["NHWC", "default"]}``, "default" meaning HWIO kernels for NHWC data and
OIHW for NCHW, as seed 004 recommends for tuning) is rewritten to take its input and
weight in the desired layouts (``permute_dims`` of the weight, which ``FoldConstant``
removes once weights are constants) and produce its output in the desired layout. The
new layout then propagates through the operators that can follow it:

- elementwise unary operators (relu, gelu, sigmoid, clip, astype, ...) keep it;
- broadcasting binary operators (add, multiply, ...) take it, their other operand being
  permuted too (a lower-rank operand is first reshaped to full rank, a scalar or all-ones
  operand is left alone) — so a bias ``(1, C, 1, 1)`` becomes ``(1, 1, 1, C)``;
- ``concat`` joins along the same dimension in the new layout (its other parts are
  permuted), ``strided_slice`` and ``split`` cut the same dimension (every part of a
  split keeps the layout);
- ``max_pool2d``/``avg_pool2d``/``adaptive_avg_pool2d`` switch their ``layout``;
  ``batch_norm`` its ``axis`` (its projection 0 keeps the layout);
- reductions (``mean``, ``sum``, ``max``, ...) reduce the same dimensions in the new
  layout: with ``keepdims`` the result keeps it; without, when the dimensions left are
  in the same order in both layouts, the result is the original value.

A value in the new layout is converted back (``permute_dims``, or ``reshape`` when only
dimensions of size 1 move, as for a pooled ``(1, 1, 1, C)``) only where an operator that
cannot follow it uses it, or where it leaves the dataflow block; so a chain of
convolution blocks has permutations at its two ends only.

Preconditions: the module is normalized; convolutions have 4-D tensors of known rank.
Postconditions: the program computes the same values; every converted convolution has
the desired data and kernel layouts; block outputs keep their original layouts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.diagnostics import IRCError
from ..core.functor import Visitor
from ..core.module import IRModule
from ..core.target import Target
from ..core.transform import Pass, PassContext
from ..ir.expr import (
    Binding,
    Call,
    DataflowBlock,
    DataflowVar,
    Expr,
    Function,
    Op,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..ir.op import make_call
from ..ir.struct_info import TensorStructInfo
from ..ir.struct_info_analysis import const_value
from ._graph_utils import NameSupply, collect_names
from .normalize import normalize_function

UNARY = frozenset({
    "nn.relu", "nn.gelu", "nn.gelu_tanh", "nn.silu", "sigmoid", "tanh", "exp", "log",
    "sqrt", "rsqrt", "erf", "abs", "negative", "floor", "ceil", "round", "sin", "cos",
    "clip", "astype",
})
BINARY = frozenset({"add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
                    "floor_divide"})
POOLS = frozenset({"nn.max_pool2d", "nn.avg_pool2d", "nn.adaptive_avg_pool2d"})
REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod", "variance"})
_DEFAULT_KERNEL = {"NHWC": "HWIO", "NCHW": "OIHW"}


def _perm(src: str, dst: str) -> list[int]:
    """Axes for ``permute_dims`` taking a tensor from layout ``src`` to ``dst``."""
    return [src.index(c) for c in dst]


def _check_layout(layout: str, what: str, letters: str = "NCHW") -> str:
    if not isinstance(layout, str) or sorted(layout) != sorted(letters):
        raise IRCError(f"ConvertLayout: {what} layout {layout!r} is not a permutation of "
                       f"{letters}")
    return layout


class _Converted:
    """A value available in layout ``dst`` (its original layout is ``src``): ``var``
    holds it. A tuple has ``fields``: how many, and which of them are converted (a
    batch_norm's first, every part of a split); ``fields`` is None for a tensor."""

    def __init__(self, var: Var, src: str, dst: str,
                 fields: tuple[int, frozenset[int]] | None = None):
        self.var = var
        self.src = src
        self.dst = dst
        self.fields = fields
        self.restored = False  # the original variable is bound too (block outputs)
        # Set when the permutation back only moves dimensions of size 1: the original
        # shape, restored by a reshape (a copy in order, no transpose).
        self.back_shape: list | None = None


class _Uses(Visitor):
    def __init__(self) -> None:
        self.vars: list[Var] = []

    def visit_Var(self, v: Var) -> None:
        self.vars.append(v)

    visit_DataflowVar = visit_Var

    def visit_StructInfo(self, s: Any) -> None:
        return None


class _BlockConverter:
    def __init__(self, data_layout: str, kernel_layout: str, names: NameSupply):
        self.data_layout = data_layout
        self.kernel_layout = kernel_layout
        self.names = names
        self.conv: dict[int, _Converted] = {}
        self.out: list[Binding] = []
        # One permute per (value, layouts): the same call object is bound once by the
        # normalizer, however many operators use it.
        self.permuted: dict[tuple[int, str, str], Expr] = {}

    def new_var(self, base: Var) -> DataflowVar:
        return DataflowVar(name_hint=self.names.fresh(f"{base.name_hint}_t"), struct_info=None)

    # -- materialization ----------------------------------------------------------------------
    def restore(self, v: Var) -> None:
        """Bind ``v`` (in its original layout) from its converted value, once."""
        c = self.conv.pop(id(v), None)
        if c is None or c.restored:
            return
        self.out.append(VarBinding(var=v, value=self.back(c)))

    def back(self, c: _Converted) -> Expr:
        if c.back_shape is not None:
            return make_call("reshape", c.var, c.back_shape)
        perm = _perm(c.dst, c.src)
        if c.fields is not None:
            count, converted = c.fields
            items = [TupleGetItem(tuple_value=c.var, index=k) for k in range(count)]
            return Tuple(fields=tuple(make_call("permute_dims", f, axes=perm)
                                      if k in converted else f for k, f in enumerate(items)))
        return make_call("permute_dims", c.var, axes=perm)

    def emit_converted(self, b: VarBinding, value: Expr, src: str, dst: str,
                       fields: tuple[int, frozenset[int]] | None = None) -> None:
        tv = self.new_var(b.var)
        self.out.append(VarBinding(var=tv, value=value))
        c = _Converted(tv, src, dst, fields)
        if fields is None:
            c.back_shape = _unit_moves_only(b.var, src, dst)
        self.conv[id(b.var)] = c
        if not isinstance(b.var, DataflowVar):
            # Block outputs are used after the block: restore them right away.
            self.out.append(VarBinding(var=b.var, value=self.back(c)))
            c.restored = True

    # -- operands -------------------------------------------------------------------------------
    def to_layout(self, e: Expr, src: str, dst: str) -> Expr | None:
        """``e`` (a tensor of layout ``src``) in layout ``dst``; None when impossible."""
        c = self.conv.get(id(e)) if isinstance(e, Var) else None
        if c is not None and c.fields is None:
            if c.src == src and c.dst == dst:
                return c.var
            self.restore(e)
        s = e.struct_info
        if not isinstance(s, TensorStructInfo) or s.ndim != 4:
            return None
        if src == dst:
            return e
        key = (id(e), src, dst)
        if key not in self.permuted:
            self.permuted[key] = make_call("permute_dims", e, axes=_perm(src, dst))
        return self.permuted[key]

    def broadcast_operand(self, e: Expr, src: str, dst: str) -> Expr | None:
        """The other operand of a broadcasting binary operator, moved to layout ``dst``."""
        s = e.struct_info
        if not isinstance(s, TensorStructInfo) or s.ndim < 0 or s.ndim > 4:
            return None
        if isinstance(e, Var) and id(e) in self.conv:
            return self.to_layout(e, src, dst)
        if s.ndim == 0:
            return e
        if s.shape is None:
            return None
        dims = [const_value(d) for d in s.shape]
        if all(d == 1 for d in dims):
            return e
        if s.ndim == 4:
            return self.to_layout(e, src, dst)
        full = make_call("reshape", e, [1] * (4 - s.ndim) + list(s.shape))
        return make_call("permute_dims", full, axes=_perm(src, dst))

    # -- bindings ---------------------------------------------------------------------------------
    def binding(self, b: Binding) -> None:
        if isinstance(b, VarBinding) and self.try_convert(b):
            return
        uses = _Uses()
        uses.visit(b.value)
        for v in uses.vars:
            self.restore(v)
        self.out.append(b)

    def try_convert(self, b: VarBinding) -> bool:
        value = b.value
        if isinstance(value, TupleGetItem) and isinstance(value.tuple_value, Var):
            c = self.conv.get(id(value.tuple_value))
            if c is None or c.fields is None:
                return False
            item = TupleGetItem(tuple_value=c.var, index=value.index)
            if value.index in c.fields[1]:
                self.emit_converted(b, item, c.src, c.dst)
            else:  # a batch norm's statistics have no layout
                self.out.append(b.replace(value=item))
            return True
        if not isinstance(value, Call) or not isinstance(value.op, Op):
            return False
        name = value.op.name
        if name == "nn.conv2d":
            return self.conv2d(b, value)
        if name == "concat":
            return self.concat(b, value)
        converted = [self.conv[id(a)] for a in value.args
                     if isinstance(a, Var) and id(a) in self.conv
                     and self.conv[id(a)].fields is None]
        if not converted:
            return False
        c = converted[0]
        first = converted_arg(value, self.conv)
        if name in UNARY and first is not None:
            x = self.to_layout(first, c.src, c.dst)
            new = make_call(name, x, *value.args[1:], **value.attrs)
            self.emit_converted(b, new, c.src, c.dst)
            return True
        if name in BINARY:
            if not _same_rank4(b.var):
                return False
            lhs = self.broadcast_operand(value.args[0], c.src, c.dst)
            rhs = self.broadcast_operand(value.args[1], c.src, c.dst)
            if lhs is None or rhs is None:
                return False
            self.emit_converted(b, make_call(name, lhs, rhs, **value.attrs), c.src, c.dst)
            return True
        if name in POOLS and value.attrs.get("layout") == c.src and \
                value.attrs.get("out_layout") == c.src:
            x = self.to_layout(value.args[0], c.src, c.dst)
            attrs = {**value.attrs, "layout": c.dst, "out_layout": c.dst}
            self.emit_converted(b, make_call(name, x, **attrs), c.src, c.dst)
            return True
        if name == "strided_slice" and first is not None and _same_rank4(b.var):
            axes = [c.dst.index(c.src[int(a) % 4]) for a in value.attrs["axes"]]
            new = make_call(name, c.var, **{**value.attrs, "axes": axes})
            self.emit_converted(b, new, c.src, c.dst)
            return True
        if name in REDUCTIONS and first is not None:
            return self.reduction(b, value, c)
        if name == "nn.batch_norm" and first is not None:
            axis = value.attrs["axis"] % 4
            x = self.to_layout(value.args[0], c.src, c.dst)
            attrs = {**value.attrs, "axis": c.dst.index(c.src[axis])}
            new = make_call(name, x, *value.args[1:], **attrs)
            self.emit_converted(b, new, c.src, c.dst, fields=(3, frozenset({0})))
            return True
        if name == "split" and first is not None:
            count = len(getattr(b.var.struct_info, "fields", ()) or ())
            if not count or value.attrs.get("axis") is None:
                return False
            attrs = {**value.attrs, "axis": c.dst.index(c.src[int(value.attrs["axis"]) % 4])}
            self.emit_converted(b, make_call(name, c.var, **attrs), c.src, c.dst,
                                fields=(count, frozenset(range(count))))
            return True
        return False

    def concat(self, b: VarBinding, call: Call) -> bool:
        """A concatenation of 4-D tensors at least one of which is converted, done in
        the new layout along the same dimension (a DenseNet block, an inception module
        or a fire module joins the outputs of convolutions): the other parts are
        permuted to it."""
        parts, axis = call.args[0], call.attrs.get("axis")
        if not isinstance(parts, Tuple) or axis is None or not _same_rank4(b.var):
            return False
        found = [self.conv[id(f)] for f in parts.fields
                 if isinstance(f, Var) and id(f) in self.conv and self.conv[id(f)].fields is None]
        if not found:
            return False
        c = found[0]
        fields = [self.to_layout(f, c.src, c.dst) for f in parts.fields]
        if any(f is None for f in fields):
            return False
        new = make_call("concat", Tuple(fields=tuple(fields)),
                        axis=c.dst.index(c.src[int(axis) % 4]))
        self.emit_converted(b, new, c.src, c.dst)
        return True

    def reduction(self, b: VarBinding, call: Call, c: _Converted) -> bool:
        """A reduction of a converted tensor, done in the new layout: with ``keepdims``
        the result keeps that layout; without, it is bound as is when the dimensions left
        come in the same order in both layouts (the mean over H and W of a global
        average pool gives ``(N, C)`` from NCHW and NHWC alike), else not converted."""
        axis = call.attrs.get("axis")
        axes = range(4) if axis is None else axis
        src_axes = sorted({int(a) % 4 for a in axes})
        dst_axes = sorted(c.dst.index(c.src[a]) for a in src_axes)
        keepdims = bool(call.attrs.get("keepdims"))
        if not keepdims:
            kept_src = [d for k, d in enumerate(c.src) if k not in src_axes]
            kept_dst = [d for k, d in enumerate(c.dst) if k not in dst_axes]
            if kept_src != kept_dst:
                return False
        new = make_call(call.op.name, c.var, axis=dst_axes, keepdims=keepdims)
        if keepdims:
            self.emit_converted(b, new, c.src, c.dst)
        else:
            self.out.append(b.replace(value=new))
        return True

    def conv2d(self, b: VarBinding, call: Call) -> bool:
        a = call.attrs
        src = _check_layout(a["data_layout"], "data")
        if src == self.data_layout or a["out_layout"] != src:
            return False
        kernel_src = _check_layout(a["kernel_layout"], "kernel", "OIHW")
        kernel_dst = self.kernel_layout
        if kernel_dst == "default":
            kernel_dst = _DEFAULT_KERNEL.get(self.data_layout, kernel_src)
        data = self.to_layout(call.args[0], src, self.data_layout)
        ws = call.args[1].struct_info
        if data is None or not isinstance(ws, TensorStructInfo) or ws.ndim != 4:
            return False
        weight = call.args[1] if kernel_src == kernel_dst else make_call(
            "permute_dims", call.args[1], axes=_perm(kernel_src, kernel_dst))
        attrs = {**a, "data_layout": self.data_layout, "kernel_layout": kernel_dst,
                 "out_layout": self.data_layout}
        self.emit_converted(b, make_call("nn.conv2d", data, weight, **attrs), src,
                            self.data_layout)
        return True


def converted_arg(call: Call, conv: dict[int, _Converted]) -> Expr | None:
    """The first operand of ``call`` if it is a converted tensor."""
    a = call.args[0]
    if isinstance(a, Var) and id(a) in conv and conv[id(a)].fields is None:
        return a
    return None


def _unit_moves_only(v: Var, src: str, dst: str) -> list | None:
    """``v``'s shape (layout ``src``) when converting it to ``dst`` only moves dimensions
    of size 1 (then a reshape converts it back); None otherwise."""
    s = v.struct_info
    if not isinstance(s, TensorStructInfo) or s.shape is None or s.ndim != 4:
        return None
    dims = [const_value(d) for d in s.shape]
    if any(d is None for d in dims):
        return None
    order = [dst.index(src[k]) for k in range(4)]  # where each source dimension goes
    moved = [order[k] for k in range(4) if dims[k] != 1]
    return list(s.shape) if moved == sorted(moved) else None


def _same_rank4(v: Var) -> bool:
    s = v.struct_info
    return isinstance(s, TensorStructInfo) and s.ndim == 4


@dataclass(frozen=True)
class ConvertLayout(Pass):
    """Convert ``nn.conv2d`` (and the operators around it) to ``desired_layouts``, e.g.
    ``{"nn.conv2d": ["NHWC", "default"]}`` (data layout, kernel layout; TVM's spelling
    ``"relax.nn.conv2d"`` works too)."""

    desired_layouts: dict[str, Any] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        desired_layouts = self.desired_layouts
        if desired_layouts is not None and not isinstance(desired_layouts, dict):
            raise IRCError("ConvertLayout: desired_layouts must be a dict such as "
                           "{'nn.conv2d': ['NHWC', 'default']}, got "
                           f"{type(desired_layouts).__name__}")
        # TVM names operators with their namespace ("relax.nn.conv2d"); both spellings
        # are accepted.
        layouts = {(k[len("relax."):] if isinstance(k, str) and k.startswith("relax.")
                    else k): v
                   for k, v in (desired_layouts or {"nn.conv2d": ["NHWC", "default"]}).items()}
        unknown = [k for k in layouts if k != "nn.conv2d"]
        if unknown:
            raise IRCError(f"ConvertLayout: no layout conversion for {', '.join(unknown)}; "
                           "desired_layouts may name nn.conv2d")
        spec = list(layouts.get("nn.conv2d", ["NHWC", "default"]))
        if not spec or len(spec) > 2:
            raise IRCError("ConvertLayout: desired_layouts['nn.conv2d'] is [data_layout] or "
                           "[data_layout, kernel_layout]")
        kernel_layout = spec[1] if len(spec) > 1 else "default"
        if kernel_layout != "default":
            _check_layout(kernel_layout, "desired kernel", "OIHW")
        # Derived from the option, not options themselves (so not dataclass fields).
        object.__setattr__(self, "data_layout", _check_layout(spec[0], "desired data"))
        object.__setattr__(self, "kernel_layout", kernel_layout)

    def convert_function(self, func: Function, mod: IRModule) -> Function:
        body = func.body
        if not isinstance(body, SeqExpr):
            return func
        names = NameSupply(collect_names(func))
        blocks = []
        changed = False
        for block in body.blocks:
            if not isinstance(block, DataflowBlock):
                blocks.append(block)
                continue
            conv = _BlockConverter(self.data_layout, self.kernel_layout, names)
            for b in block.bindings:
                conv.binding(b)
            if len(conv.out) != len(block.bindings) or any(
                    x is not y for x, y in zip(conv.out, block.bindings)):
                changed = True
                blocks.append(block.replace(bindings=tuple(conv.out)))
            else:
                blocks.append(block)
        if not changed:
            return func
        return normalize_function(func.replace(body=body.replace(blocks=tuple(blocks))), mod)

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return mod.map_functions(lambda f: self.convert_function(f, mod), Function,
                                 where=lambda f: not f.attrs.get("Primitive"))


@dataclass(frozen=True)
class ConvertLayoutForTarget(Pass):
    """The default pipeline's layout choice: under an llvm target (the current one when
    the pass runs), convolutions run in NHWC with HWIO kernels (``ConvertLayout``'s
    default), converting only at the ends of convolution chains. The CPU rules
    vectorize an NHWC convolution along its output channels, which stay contiguous in
    every layer and divide by the vector width in nearly every network; in NCHW the
    vector runs along an output row, which is short and odd-sized in the deep layers
    (7 wide in ResNet's last stage). Under other targets (or none) the module is left as
    it is."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        target = Target.current()
        if target is None or target.kind.name != "llvm":
            return mod
        return ConvertLayout().transform_module(mod, ctx)


__all__ = ["ConvertLayout", "ConvertLayoutForTarget"]

"""Calls into lower levels: ``call_tir`` (a loop function of the module, destination-
passing style), ``call_dps_packed`` (an external function, destination-passing style),
``call_pure_packed`` (an external function returning its result), and ``shape_of``.

``call_tir(gvar, args, out_sinfo, tir_vars=None)``: operands are the ``GlobalVar``, a
``Tuple`` of input tensors and an optional ``ShapeExpr`` of extra int64 values; the
output struct infos are ``Call.sinfo_args``. The call's struct info is the output's, or
a tuple of them when there are several.
"""

from __future__ import annotations

from typing import Any, Sequence

from ...core import dtype as dt
from ...tir import expr as E
from ...tir.stmt import PrimFunc
from ..expr import Call, Expr, ExternFunc, GlobalVar
from ..op import OPAQUE, AttrSpec, conv_sinfo, make_call, register_op
from ..struct_info import (
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from ..struct_info_analysis import format_sinfo
from ._common import arg_sinfo, fail, tensor_arg, to_shape_expr, to_tuple_expr


def _result_of(call: Call, what: str) -> StructInfo:
    outs = call.sinfo_args
    if not outs:
        raise fail(call, f"needs {what}, e.g. {what}=R.Tensor((1, 256), \"float32\")")
    if len(outs) == 1:
        return outs[0]
    return TupleStructInfo(fields=tuple(outs))


def _check_dps_outputs(call: Call) -> None:
    for s in call.sinfo_args:
        if not isinstance(s, TensorStructInfo):
            raise fail(call, f"each out_sinfo must be a tensor, got {format_sinfo(s)}")


def _input_fields(call: Call) -> tuple[StructInfo, ...]:
    s = arg_sinfo(call, 1)
    if not isinstance(s, TupleStructInfo):
        raise fail(call, f"the arguments must be a tuple such as (x, w), got {format_sinfo(s)}")
    return s.fields


def _canonicalize_packed(operands: list, attrs: dict, sinfo_args: list) -> tuple:
    if isinstance(operands[0], str):
        operands[0] = ExternFunc(global_symbol=operands[0])
    operands[1] = to_tuple_expr(operands[1])
    return operands, attrs, sinfo_args


def _canonicalize_dps(operands: list, attrs: dict, sinfo_args: list) -> tuple:
    operands, attrs, sinfo_args = _canonicalize_packed(operands, attrs, sinfo_args)
    if len(operands) > 2:
        operands[2] = to_shape_expr(operands[2], "tir_vars")
    if len(sinfo_args) == 1 and isinstance(sinfo_args[0], TupleStructInfo):
        # One tuple of outputs and a list of outputs mean the same; keep the list.
        sinfo_args = list(sinfo_args[0].fields)
    return operands, attrs, sinfo_args


@register_op("call_tir", ["gvar", "args", "tir_vars"],
             [AttrSpec("out_sinfo", convert=conv_sinfo, sinfo=True)],
             pattern=OPAQUE, optional=["tir_vars"], extra={"canonicalize": _canonicalize_dps})
def _infer_call_tir(call: Call, ctx: Any) -> StructInfo:
    """R.call_tir(gvar, args, out_sinfo, tir_vars=None): call the loop function ``gvar``
    with the inputs and freshly allocated outputs; the value is the output(s)."""
    gvar = call.args[0]
    if not isinstance(gvar, GlobalVar):
        raise fail(call, "the callee must name a loop function of the module (cls.name)")
    inputs = _input_fields(call)
    _check_dps_outputs(call)
    n_extra = 0
    if len(call.args) > 2:
        s = arg_sinfo(call, 2)
        if not isinstance(s, ShapeStructInfo):
            raise fail(call, f"tir_vars must be a shape of int64 values, got {format_sinfo(s)}")
        n_extra = max(s.ndim, 0)
    func = ctx.lookup(gvar) if ctx is not None else None
    if func is not None:
        if not isinstance(func, PrimFunc):
            raise fail(call, f"@{gvar.name_hint} is a graph function, not a loop function; "
                             "call it directly instead of through R.call_tir")
        expected = len(inputs) + len(call.sinfo_args) + n_extra
        if len(func.params) != expected:
            raise fail(call, f"@{gvar.name_hint} takes {len(func.params)} parameters but the "
                             f"call passes {len(inputs)} inputs, {len(call.sinfo_args)} "
                             f"outputs and {n_extra} extra values")
    return _result_of(call, "out_sinfo")


@register_op("call_dps_packed", ["func", "args"],
             [AttrSpec("out_sinfo", convert=conv_sinfo, sinfo=True)],
             pattern=OPAQUE, extra={"canonicalize": _canonicalize_dps})
def _infer_call_dps_packed(call: Call, ctx: Any) -> StructInfo:
    """R.call_dps_packed(func, args, out_sinfo): call an external function with the inputs
    and freshly allocated outputs; the value is the output(s)."""
    if not isinstance(call.args[0], ExternFunc):
        raise fail(call, "the callee must be an external function name such as "
                         "\"my_kernel\"")
    _input_fields(call)
    _check_dps_outputs(call)
    return _result_of(call, "out_sinfo")


@register_op("call_pure_packed", ["func", "args"],
             [AttrSpec("sinfo_args", convert=conv_sinfo, sinfo=True)],
             pattern=OPAQUE, extra={"canonicalize": _canonicalize_packed})
def _infer_call_pure_packed(call: Call, ctx: Any) -> StructInfo:
    """R.call_pure_packed(func, args, sinfo_args): call a side-effect-free external function
    that returns its result (described by ``sinfo_args``)."""
    if not isinstance(call.args[0], ExternFunc):
        raise fail(call, "the callee must be an external function name such as "
                         "\"vm.builtin.copy\"")
    _input_fields(call)
    return _result_of(call, "sinfo_args")


@register_op("shape_of", ["x"], pattern=OPAQUE)
def _infer_shape_of(call: Call, ctx: Any) -> StructInfo:
    """R.shape_of(x): the shape of tensor ``x`` as a shape value."""
    x = tensor_arg(call, 0)
    if x.shape is not None:
        return ShapeStructInfo(values=x.shape)
    return ShapeStructInfo(ndim=x.ndim)


@register_op("tensor_to_shape", ["x"], pattern=OPAQUE)
def _infer_tensor_to_shape(call: Call, ctx: Any) -> StructInfo:
    """R.tensor_to_shape(x): the values of a 1-D integer tensor of known length as a shape
    value (read at run time; bind them to shape variables with ``R.match_cast``)."""
    x = tensor_arg(call, 0)
    if x.ndim != 1 or x.shape is None or not isinstance(x.shape[0], E.IntImm):
        raise fail(call, f"needs a 1-D tensor of known length, got {format_sinfo(x)}")
    if not dt.is_integer(x.dtype):
        raise fail(call, f"needs an integer tensor, got dtype {x.dtype}")
    return ShapeStructInfo(ndim=int(x.shape[0].value))


# Operators the VM executes itself (no loop function): legalization and constant folding
# leave them alone.
VM_NATIVE = frozenset({"call_tir", "call_dps_packed", "call_pure_packed", "shape_of",
                       "tensor_to_shape"})


def call_tir(gvar: GlobalVar, args: Any, out_sinfo: StructInfo | Sequence[StructInfo],
             tir_vars: Any = None) -> Expr:
    """``R.call_tir(gvar, args, out_sinfo, tir_vars)``: ``args`` a tuple expression or a
    list of expressions, ``out_sinfo`` one tensor struct info or a list."""
    return make_call("call_tir", gvar, args, tir_vars, out_sinfo=out_sinfo)


def call_dps_packed(func: str | ExternFunc, args: Any,
                    out_sinfo: StructInfo | Sequence[StructInfo]) -> Expr:
    """``R.call_dps_packed("symbol", args, out_sinfo)``."""
    return make_call("call_dps_packed", func, args, out_sinfo=out_sinfo)


def call_pure_packed(func: str | ExternFunc, args: Any,
                     sinfo_args: StructInfo | Sequence[StructInfo]) -> Expr:
    """``R.call_pure_packed("symbol", args, sinfo_args)`` (arguments as one tuple)."""
    return make_call("call_pure_packed", func, args, sinfo_args=sinfo_args)


def shape_of(x: Expr) -> Expr:
    """``R.shape_of(x)``."""
    return make_call("shape_of", x)


def tensor_to_shape(x: Expr) -> Expr:
    """``R.tensor_to_shape(x)``."""
    return make_call("tensor_to_shape", x)


__all__ = ["call_tir", "call_dps_packed", "call_pure_packed", "shape_of", "tensor_to_shape",
           "VM_NATIVE"]

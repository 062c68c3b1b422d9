"""Evaluation of graph-level (``R.`` dialect) expressions and struct info from syntax.

Operator calls are built with :func:`irc.ir.op.make_call` (which checks arguments against
the registry) and normalized right away with the module's BlockBuilder, so an ill-typed
call raises an IRTypeError located at the call. Symbolic dimensions are loop-IR ``int64``
variables: a string in a shape (``R.Tensor(("n", 784))``) or a module-level TypeVar
defines one at its first use in a function.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..core import dtype as dt
from ..core.diagnostics import IRParseError, SourceFile
from ..ir.expr import (
    Call,
    Constant,
    DataTypeImm,
    Expr,
    ExternFunc,
    GlobalVar,
    PrimValue,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
)
from ..ir.op import get_op_def, make_call
from ..ir.printer import MetadataRef
from ..ir.struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from ..tir import expr as E
from . import syntax as syn
from .context import (
    DTypeMarker,
    arg_syntax,
    bind_args,
    check_dimension,
    describe,
    expect_bool,
    expect_dtype,
    expect_int,
    expect_str,
    item_syntax,
    located,
    parse_error,
    type_error,
)
from .module_expr import ModuleEvaluator, TypeVarDecl
from .syntax import parse_syntax


class ModuleRef:
    """The value of ``cls`` (or the module class name): ``cls.f`` is a GlobalVar."""

    __slots__ = ("gvars", "name")

    def __init__(self, name: str, gvars: dict[str, GlobalVar]):
        self.name, self.gvars = name, gvars


_BARE_SINFO: dict[str, Callable[[], StructInfo]] = {
    "R.Tensor": lambda: TensorStructInfo(),
    "R.Object": lambda: ObjectStructInfo(),
    "R.Any": lambda: ObjectStructInfo(),
    "R.Shape": lambda: ShapeStructInfo(),
    "R.Tuple": lambda: TupleStructInfo(fields=()),
}


_SYMBOLIC_DIM_HINT = ("a dimension known only at run time is a symbolic name, e.g. "
                      "R.Tensor((\"n\", 4), \"float32\")")


class RelaxEvaluator(ModuleEvaluator):
    """Evaluates graph-level syntax; ``normalize`` fills in struct info (the module's
    BlockBuilder)."""

    def __init__(self, scopes: Any, normalize: Callable[[Expr], Expr]):
        super().__init__(scopes, int_default="int64")
        self.normalize = normalize
        self.define_dims = False
        # The syntax of the shape operand of the R.reshape being evaluated: there (only)
        # R.shape([...]) may hold -1, the dimension R.reshape infers.
        self.reshape_target: Any = None

    # -- names ---------------------------------------------------------------------------
    def eval_Name(self, node: syn.Name) -> Any:
        value = self.scopes.get(node.id, _MISSING)
        if value is _MISSING:
            if self.define_dims:
                return self.new_dim(node.id, node)
            raise self.scopes.undefined(node.id, node)
        if isinstance(value, TypeVarDecl):
            return self.new_dim(node.id, node)
        return value

    def new_dim(self, name: str, node: Any) -> E.Var:
        """A symbolic dimension defined in the current function at its first use."""
        var = E.Var(name=name, dtype="int64", span=node.span)
        self.scopes.frames[self.scopes.function_base][name] = var
        return var

    def namespace_attr(self, name: str, node: Any) -> Any:
        if name in _BARE_SINFO:
            return _BARE_SINFO[name]()
        if name.startswith("R."):
            raise parse_error(f"{name} must be called, e.g. {name}(...)", node)
        return super().namespace_attr(name, node)

    def eval_Attr(self, node: syn.Attr) -> Any:
        if isinstance(node.value, syn.Name):
            base = self.scopes.get(node.value.id)
            if isinstance(base, ModuleRef):
                gv = base.gvars.get(node.attr)
                if gv is None:
                    raise parse_error(f"module {base.name} has no function '{node.attr}'", node)
                return gv
        return super().eval_Attr(node)

    def eval_Index(self, node: syn.Index) -> Any:
        base = self.eval(node.value)
        if isinstance(base, Expr):
            if len(node.items) != 1 or isinstance(node.items[0], syn.Slice):
                raise parse_error("a tuple value is indexed with one integer, e.g. x[0]", node)
            index = expect_int(self.eval(node.items[0]), "a tuple index", node.items[0])
            with located(node):
                return self.normalize(TupleGetItem(tuple_value=base, index=index,
                                                   span=node.span))
        return super().eval_Index(node)

    def eval_BinOp(self, node: syn.BinOp) -> Any:
        a, b = self.eval(node.lhs), self.eval(node.rhs)
        if isinstance(a, Expr) or isinstance(b, Expr):
            # ``R.matmul(x, w) + b``: the operators of graph values, as TVM overloads them.
            name = _GRAPH_OPERATORS.get(node.op)
            if name is None:
                bad = node.lhs if isinstance(a, Expr) else node.rhs
                raise parse_error(f"operator '{node.op}' does not apply to graph values; "
                                  "call the operator, e.g. R.add(a, b) or "
                                  "R.multiply(a, b)", bad)
            operands = [self._graph_operand(v, other, n) for v, other, n in
                        ((a, b, node.lhs), (b, a, node.rhs))]
            with located(node):
                return self.normalize(make_call(name, *operands, span=node.span))
        return self.binary(node.op, a, b, node)

    def _graph_operand(self, value: Any, other: Any, node: Any) -> Expr:
        """A graph operand of an operator: a graph value, or a Python number as a scalar
        constant of the other operand's dtype (``x * 2.0``)."""
        if isinstance(value, Expr):
            return value
        if isinstance(value, (bool, int, float)) and isinstance(other, Expr):
            sinfo = other.struct_info
            dtype = getattr(sinfo, "dtype", "") or ("float32" if isinstance(value, float)
                                                    else "int64")
            return Constant(data=dt.storage(value, dtype),
                            struct_info=TensorStructInfo(shape=(), dtype=dtype))
        return self.to_expr(value, node)

    # -- conversions -----------------------------------------------------------------------
    def to_expr(self, value: Any, node: Any) -> Expr:
        """A graph expression from an evaluated value (tuples become ``Tuple``)."""
        if isinstance(value, Expr):
            return value
        if isinstance(value, (tuple, list)):
            fields = tuple(self.to_expr(v, node) for v in value)
            with located(node):
                return self.normalize(Tuple(fields=fields, span=getattr(node, "span", None)))
        if isinstance(value, MetadataRef):
            raise parse_error(f"{value.metadata_text()} is not in this text: it was printed "
                              "without show_meta=True; print it with show_meta=True or pass "
                              "metadata= to irc.parse", node)
        if isinstance(value, (bool, int, float)) or isinstance(value, E.PrimExpr):
            raise parse_error(f"expected a graph value, got {describe(value)}; write "
                              "R.const(...) for a tensor or R.prim_value(...) for a scalar",
                              node)
        raise parse_error(f"expected a graph value, got {describe(value)}", node)

    def sinfo(self, node: Any) -> StructInfo:
        """Evaluate an annotation to struct info."""
        return self.to_sinfo(self.eval(node), node)

    def to_sinfo(self, value: Any, node: Any) -> StructInfo:
        if isinstance(value, StructInfo):
            return value
        if isinstance(value, DTypeMarker) and value.dtype not in ("void", "handle"):
            return PrimStructInfo(dtype=value.dtype)
        if isinstance(value, (tuple, list)):
            return TupleStructInfo(fields=tuple(self.to_sinfo(v, node) for v in value))
        raise parse_error(f"expected struct info such as R.Tensor((1, 784), \"float32\"), got "
                          f"{describe(value)}", node)

    def dim(self, value: Any, node: Any) -> E.PrimExpr:
        """One shape dimension: an int, an int64 expression or a string naming one."""
        if isinstance(value, str):
            value = self.dim_string(value, node)
        if isinstance(value, bool) or not isinstance(value, (int, E.PrimExpr)):
            raise parse_error(f"a shape dimension must be an integer or a symbolic name, got "
                              f"{describe(value)}", node)
        e = self.prim(value, node, "int64")
        if not dt.is_integer(e.dtype) or dt.lanes(e.dtype) != 1:
            raise type_error(f"a shape dimension must be an integer, got dtype {e.dtype}", node)
        if e.dtype != "int64" and isinstance(e, E.IntImm):
            e = E.IntImm(dtype="int64", value=e.value)
        return e

    def dim_string(self, text: str, node: Any) -> Any:
        try:
            stmts = parse_syntax(SourceFile(f"<dimension {text!r}>", text))
        except IRParseError as e:
            raise parse_error(f"invalid symbolic dimension {text!r}: {e.message}", node) from None
        if len(stmts) != 1 or not isinstance(stmts[0], syn.ExprStmt):
            raise parse_error(f"invalid symbolic dimension {text!r}", node)
        saved = self.define_dims
        self.define_dims = True
        try:
            return self.eval(_relocate(stmts[0].value, node))
        finally:
            self.define_dims = saved

    def dims(self, value: Any, node: Any, what: str, syntax: Any = None,
             hint: str = _SYMBOLIC_DIM_HINT, infer: bool = False) -> tuple[E.PrimExpr, ...]:
        """The dimensions of a shape tuple; ``syntax`` (the tuple's syntax) locates errors
        about one dimension, such as a negative one, at that dimension. With ``infer`` a
        dimension may be -1 (R.reshape's target)."""
        if not isinstance(value, (tuple, list)):
            raise parse_error(f"{what} must be a tuple of dimensions, got {describe(value)}",
                              node)
        out = []
        for i, v in enumerate(value):
            at = node if syntax is None else item_syntax(syntax, i, len(value))
            e = self.dim(v, at)
            if not (infer and isinstance(e, E.IntImm) and e.value == -1):
                check_dimension(e, i, what, at, hint)
            out.append(e)
        return tuple(out)

    # -- calls -----------------------------------------------------------------------------
    def eval_Call(self, node: syn.Call) -> Any:
        name = syn.dotted_name(node.func)
        if name is not None and name.startswith("R.") and name.count(".") >= 1 and \
                self.scopes.get("R") is not None:
            return self.r_call(name[2:], node)
        if name is not None and name.startswith("T."):
            return super().eval_Call(node)
        func = self.eval(node.func)
        if isinstance(func, (GlobalVar, Var)):
            values, kw = self.args(node)
            if kw:
                raise parse_error("calls of graph functions take positional arguments only",
                                  node)
            args = tuple(self.to_expr(v, a) for v, a in zip(values, node.args))
            with located(node):
                return self.normalize(Call(op=func, args=args, span=node.span))
        if isinstance(func, DTypeMarker):
            return super().eval_Call(node)
        raise parse_error(f"{describe(func)} cannot be called", node)

    def r_call(self, name: str, node: syn.Call) -> Any:
        handler = R_BUILTINS.get(name)
        if handler is not None:
            with located(node):
                return handler(self, node)
        if name in R_STATEMENTS:
            raise parse_error(f"R.{name}(...) is a statement and cannot be used as a value",
                              node)
        return self.op_call(name, node)

    def op_call(self, name: str, node: syn.Call) -> Expr:
        with located(node):
            opdef = get_op_def(name)
        saved = self.reshape_target
        self.reshape_target = arg_syntax(node, list(opdef.operands), "shape") \
            if name == "reshape" else None
        try:
            values, kw = self.args(node)
        finally:
            self.reshape_target = saved
        sinfo_attr = next((a.name for a in opdef.attrs if a.sinfo), None)
        if "out_ty" in kw and sinfo_attr is not None and sinfo_attr not in kw:
            kw[sinfo_attr] = kw.pop("out_ty")  # TVM 0.27 spelling of out_sinfo
        values = [self.op_operand(v, a) for v, a in zip(values, node.args)]
        kw = {k: self.op_operand(v, node) for k, v in kw.items()}
        with located(node):
            call = make_call(name, *values, span=node.span, **kw)
            _check_tuple_fields(call, name, opdef.operands, node)
            return self.normalize(call)

    def op_operand(self, value: Any, node: Any) -> Any:
        """Tuples of graph values become ``Tuple`` expressions; other values stay Python
        values for the registry's converters."""
        if isinstance(value, (tuple, list)) and value and all(isinstance(v, Expr) for v in value):
            return self.to_expr(value, node)
        return value


_MISSING = object()

# Python operators on graph values and the graph operators they mean.
_GRAPH_OPERATORS = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide",
                    "//": "floor_divide", "**": "power", "<": "less", ">": "greater",
                    "<=": "less_equal", ">=": "greater_equal", "==": "equal",
                    "!=": "not_equal"}


def _check_tuple_fields(call: Call, name: str, operands: tuple, node: Any) -> None:
    """Reject tuple operands holding Python values (``R.concat([1, 2])``): the registry
    wraps lists into ``Tuple`` nodes without looking inside them."""
    stack = [(a, operands[i] if i < len(operands) else "?") for i, a in enumerate(call.args)]
    while stack:
        value, opname = stack.pop()
        if isinstance(value, Tuple):
            for f in value.fields:
                if not isinstance(f, Expr):
                    raise type_error(f"R.{name}: operand {opname} must hold graph values, got "
                                     f"{describe(f)}", node)
                stack.append((f, opname))


def _relocate(node: Any, anchor: Any) -> Any:
    """Point every span of a dimension string's syntax at the string literal itself."""
    span = getattr(anchor, "span", None)
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, syn.Syntax):
            n.span = span
            for slot in type(n).__slots__:
                stack.append(getattr(n, slot, None))
        elif isinstance(n, (list, tuple)):
            stack.extend(n)
    return node


# ---------------------------------------------------------------------------------
# R.<builtin>(...) handlers
# ---------------------------------------------------------------------------------


def _tensor(ev: RelaxEvaluator, call: syn.Call) -> StructInfo:
    values, kw = ev.args(call)
    if values and isinstance(values[0], str) and "dtype" not in kw:
        kw["dtype"] = values.pop(0)
    params = ["shape", "dtype", "ndim", "vdevice"]
    a = bind_args(call, "R.Tensor", params, 0, values, kw)
    shape = a.get("shape")
    # A leading positional dtype ("float32") was taken out of the values above.
    skip = len(call.args) - len(values)
    dims = None if shape is None else ev.dims(shape, call, "R.Tensor",
                                              arg_syntax(call, params, "shape", skip))
    dtype = a.get("dtype")
    dtype = "" if dtype in (None, "void") else expect_dtype(dtype, "the dtype of R.Tensor", call)
    ndim = -1 if a.get("ndim") is None else expect_int(a["ndim"], "ndim", call)
    if ndim < -1:
        raise parse_error("ndim must be -1 (unknown) or a rank", call)
    vdevice = a.get("vdevice")
    vdevice = None if vdevice is None else expect_str(vdevice, "vdevice", call)
    return TensorStructInfo(shape=dims, dtype=dtype, ndim=ndim, vdevice=vdevice)


def _tuple_sinfo(ev: RelaxEvaluator, call: syn.Call) -> StructInfo:
    values, kw = ev.args(call)
    if kw:
        raise parse_error("R.Tuple takes the field struct infos positionally", call)
    return TupleStructInfo(fields=tuple(ev.to_sinfo(v, a) for v, a in zip(values, call.args)))


def _shape_sinfo(ev: RelaxEvaluator, call: syn.Call) -> StructInfo:
    values, kw = ev.args(call)
    a = bind_args(call, "R.Shape", ["values", "ndim"], 0, values, kw)
    dims = None if a.get("values") is None else ev.dims(
        a["values"], call, "R.Shape", arg_syntax(call, ["values", "ndim"], "values"),
        hint="a dimension known only at run time is a symbolic name, e.g. R.Shape([\"n\", 4])")
    ndim = -1 if a.get("ndim") is None else expect_int(a["ndim"], "ndim", call)
    return ShapeStructInfo(values=dims, ndim=ndim)


def _prim_sinfo(ev: RelaxEvaluator, call: syn.Call) -> StructInfo:
    values, kw = ev.args(call)
    a = bind_args(call, "R.Prim", ["dtype", "value"], 0, values, kw)
    value = a.get("value")
    if isinstance(value, str):
        value = ev.dim_string(value, call)
    if value is not None:
        value = ev.prim(value, call)
    dtype = a.get("dtype")
    if dtype is None:
        if value is None:
            raise parse_error("R.Prim needs a dtype or a value, e.g. R.Prim(\"int64\")", call)
        dtype = value.dtype
    dtype = expect_dtype(dtype, "the dtype of R.Prim", call)
    if value is not None and value.dtype != dtype:
        raise type_error(f"R.Prim: the value has dtype {value.dtype}, not {dtype}", call)
    return PrimStructInfo(dtype=dtype, value=value)


def _object_sinfo(ev: RelaxEvaluator, call: syn.Call) -> StructInfo:
    if call.args or call.kwargs:
        raise parse_error("R.Object takes no arguments", call)
    return ObjectStructInfo()


def _callable_sinfo(ev: RelaxEvaluator, call: syn.Call) -> StructInfo:
    values, kw = ev.args(call)
    a = bind_args(call, "R.Callable", ["params", "ret", "purity"], 0, values, kw)
    params = a.get("params")
    if params is not None:
        if not isinstance(params, (tuple, list)):
            raise parse_error("the parameters of R.Callable are a tuple of struct infos", call)
        params = tuple(ev.to_sinfo(p, call) for p in params)
    ret = ObjectStructInfo() if a.get("ret") is None else ev.to_sinfo(a["ret"], call)
    purity = expect_bool(a.get("purity", True), "purity", call)
    return FuncStructInfo(params=params, ret=ret, purity=purity)


def _const(ev: RelaxEvaluator, call: syn.Call) -> Expr:
    values, kw = ev.args(call)
    a = bind_args(call, "R.const", ["value", "dtype"], 1, values, kw)
    dtype = a.get("dtype")
    dtype = None if dtype is None else expect_dtype(dtype, "the dtype of R.const", call)
    value = a["value"]
    if not _is_number_tree(value):
        raise parse_error(f"R.const takes a number or nested lists of numbers, got "
                          f"{describe(value)}", call)
    if dtype is None:
        if isinstance(value, bool):
            dtype = "bool"
        elif isinstance(value, float) or (isinstance(value, (list, tuple)) and
                                          _has_float(value)):
            dtype = "float32"
        elif isinstance(value, int):
            dtype = "int64"
    if dtype == "bfloat16":
        raise type_error("R.const cannot spell bfloat16 values; they come from the metadata "
                         "section", call)
    if dtype is not None and not dt.is_float(dtype) and _has_float(value):
        raise type_error(f"R.const: {value!r} is not a {dtype} value", call)
    try:
        arr = np.array(value) if dtype is None else np.array(value, dtype=dt.to_numpy(dtype))
    except (ValueError, OverflowError, TypeError):
        raise type_error(f"R.const: cannot make a {dtype or 'tensor'} constant of {value!r}",
                         call) from None
    if arr.dtype == object:
        raise type_error("R.const needs a rectangular nested list of numbers", call)
    with located(call):
        return ev.normalize(Constant.from_numpy(arr))


def _is_number_tree(v: Any) -> bool:
    if isinstance(v, (bool, int, float)):
        return True
    if isinstance(v, (list, tuple)):
        return all(_is_number_tree(x) for x in v)
    return False


def _has_float(v: Any) -> bool:
    if isinstance(v, float):
        return True
    if isinstance(v, (list, tuple)):
        return any(_has_float(x) for x in v)
    return False


def _shape_expr(ev: RelaxEvaluator, call: syn.Call) -> Expr:
    values, kw = ev.args(call)
    a = bind_args(call, "R.shape", ["values"], 1, values, kw)
    dims = ev.dims(a["values"], call, "R.shape", arg_syntax(call, ["values"], "values"),
                   hint="only the shape of R.reshape may hold -1 (the dimension it infers): "
                        "R.reshape(x, R.shape([-1, 4]))",
                   infer=call is ev.reshape_target)
    return ev.normalize(ShapeExpr(values=dims, span=call.span))


def _prim_value(ev: RelaxEvaluator, call: syn.Call) -> Expr:
    values, kw = ev.args(call)
    a = bind_args(call, "R.prim_value", ["value"], 1, values, kw)
    return ev.normalize(PrimValue(value=ev.prim(a["value"], call), span=call.span))


def _str(ev: RelaxEvaluator, call: syn.Call) -> Expr:
    values, kw = ev.args(call)
    a = bind_args(call, "R.str", ["value"], 1, values, kw)
    return ev.normalize(StringImm(value=expect_str(a["value"], "R.str", call), span=call.span))


def _dtype_imm(ev: RelaxEvaluator, call: syn.Call) -> Expr:
    values, kw = ev.args(call)
    a = bind_args(call, "R.dtype", ["value"], 1, values, kw)
    return ev.normalize(DataTypeImm(value=expect_dtype(a["value"], "R.dtype", call),
                                    span=call.span))


def _extern(ev: RelaxEvaluator, call: syn.Call) -> Expr:
    values, kw = ev.args(call)
    a = bind_args(call, "R.ExternFunc", ["global_symbol"], 1, values, kw)
    sym = expect_str(a["global_symbol"], "the symbol of R.ExternFunc", call)
    return ExternFunc(global_symbol=sym, span=call.span)


def _call_packed(ev: RelaxEvaluator, call: syn.Call) -> Expr:
    values, kw = ev.args(call)
    if not values or not isinstance(values[0], (str, ExternFunc)):
        raise parse_error("R.call_packed needs the function name first, e.g. "
                          "R.call_packed(\"my_func\", x, sinfo_args=R.Tensor(...))", call)
    unknown = set(kw) - {"sinfo_args"}
    if unknown:
        raise parse_error(f"R.call_packed has no argument '{sorted(unknown)[0]}'", call)
    func = values[0] if isinstance(values[0], ExternFunc) else ExternFunc(
        global_symbol=values[0])
    args = tuple(ev.to_expr(v, a) for v, a in zip(values[1:], call.args[1:]))
    sinfo = kw.get("sinfo_args")
    if sinfo is None:
        sinfo_args: tuple = ()
    elif isinstance(sinfo, (list, tuple)):
        sinfo_args = tuple(ev.to_sinfo(s, call) for s in sinfo)
    else:
        sinfo_args = (ev.to_sinfo(sinfo, call),)
    return ev.normalize(Call(op=func, args=args, sinfo_args=sinfo_args, span=call.span))


def _tuple_expr(ev: RelaxEvaluator, call: syn.Call) -> Expr:
    values, kw = ev.args(call)
    if kw:
        raise parse_error("R.tuple takes its fields positionally", call)
    fields = tuple(ev.to_expr(v, a) for v, a in zip(values, call.args))
    return ev.normalize(Tuple(fields=fields, span=call.span))


R_BUILTINS: dict[str, Callable[[RelaxEvaluator, syn.Call], Any]] = {
    "Tensor": _tensor, "Tuple": _tuple_sinfo, "Shape": _shape_sinfo, "Prim": _prim_sinfo,
    "Object": _object_sinfo, "Any": _object_sinfo, "Callable": _callable_sinfo,
    "const": _const, "shape": _shape_expr, "prim_value": _prim_value, "str": _str,
    "dtype": _dtype_imm, "ExternFunc": _extern, "call_packed": _call_packed,
    "tuple": _tuple_expr,
}
R_STATEMENTS = frozenset({"function", "func_attr", "dataflow", "output", "match_cast"})

__all__ = ["RelaxEvaluator", "ModuleRef", "R_BUILTINS"]

"""FoldConstant: evaluate at compile time what depends only on constants.

Algorithm: a forward walk over each graph function's bindings tracks the variables bound
to constants (or to tuples of constants). A binding is folded when its value is

- ``R.call_tir(f, args)`` whose tensor arguments are all constant, without extra integer
  arguments and with outputs of static shape: ``f`` is run on the constant arrays —
  through the reference interpreter when it does little work, else compiled for the host
  CPU with LLVM — and the call becomes a ``Constant`` (a tuple of them for several
  outputs);
- a graph operator with a legalization whose tensor operands are all constant (creation
  operators included): it is legalized on the spot and evaluated the same way;
- a tuple of constants, a projection of a constant tuple, or an alias of a constant.

Uses of folded variables are replaced by the constants themselves (the bindings are then
unused and ``DeadCodeElimination`` removes them, with the loop functions only they
called). ``size_limit`` (elements of one folded result; None: no limit) keeps huge
tensors made from small inputs (``zeros``, ``broadcast_to``) as computations.

Preconditions: the module is normalized. Postconditions: the program computes the same
values (up to floating-point rounding of the evaluator); no binding whose inputs are all
constants and whose result fits the size limit is left unevaluated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..codegen import build
from ..core import dtype as dt
from ..core.diagnostics import IRCError
from ..core.functor import Mutator, Visitor
from ..core.module import IRModule
from ..core.transform import Pass, PassContext
from ..ir.expr import (
    Call,
    Constant,
    DataTypeImm,
    Expr,
    Function,
    GlobalVar,
    Op,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
)
from ..ir.op import get_op_def
from ..ir.ops.call import VM_NATIVE
from ..ir.struct_info import TensorStructInfo, TupleStructInfo
from ..tir import expr as E
from ..tir.interpreter import run
from ..tir.interpreter.data_movement import run_data_movement
from ..tir.stmt import For, PrimFunc
from .legalize import LegalizeContext
from .legalize.rules import register_all

# Below this many loop iterations the interpreter is faster than compiling with LLVM.
_INTERPRETER_WORK = 20000


def _work(func: PrimFunc) -> float:
    """Roughly the number of innermost loop iterations ``func`` executes."""
    total = [0.0]

    class _W(Visitor):
        def __init__(self) -> None:
            self.scale = 1.0

        def visit_For(self, s: For) -> None:
            ext = s.extent.value if isinstance(s.extent, E.IntImm) else 1024
            self.scale *= max(int(ext), 1)
            before = total[0]
            self.visit(s.body)
            if total[0] == before:
                total[0] += self.scale
            self.scale /= max(int(ext), 1)

        def visit_PrimExpr(self, e: Any) -> None:
            return None

    _W().visit(func.body)
    return total[0]


def run_prim_func(func: PrimFunc, inputs: list[np.ndarray],
                  outputs: list[tuple[tuple[int, ...], str]]) -> list[np.ndarray]:
    """Run ``func`` on ``inputs`` and return new arrays for ``outputs`` (shape, dtype)."""
    outs = [np.zeros(shape, dtype=dt.to_numpy(dtype)) for shape, dtype in outputs]
    # (np.ascontiguousarray would turn 0-d arrays into 1-d ones.)
    args = [a if a.flags.c_contiguous else a.copy(order="C") for a in inputs] + outs
    if run_data_movement(func, args):  # transposes, reshapes, padding: a numpy gather
        return outs
    if _work(func) <= _INTERPRETER_WORK:
        run(func, *args)
        return outs
    module = build(func.with_attr("global_symbol", "fold_constant_kernel"), target="llvm")
    module["fold_constant_kernel"](*args)
    return outs


class _Folder:
    """Evaluates call_tir expressions over constants."""

    def __init__(self, mod: IRModule, size_limit: int | None):
        register_all()  # operators are folded through their legalization
        self.mod = mod
        self.size_limit = size_limit
        self.new_funcs: dict[str, PrimFunc] = {}

    def lookup(self, gv: GlobalVar) -> Any:
        return self.new_funcs.get(gv.name_hint) or self.mod.get(gv.name_hint)

    def fits(self, sinfos: list[Any]) -> bool:
        for s in sinfos:
            if not isinstance(s, TensorStructInfo) or s.static_shape is None or not s.dtype:
                return False
            if self.size_limit is not None and int(np.prod(s.static_shape)) > self.size_limit:
                return False
        return True

    def evaluate(self, e: Expr) -> Expr | None:
        """``e`` as a Constant (or a tuple of them), or None when it cannot be folded."""
        if isinstance(e, Constant):
            return e
        if isinstance(e, Tuple):
            fields = [self.evaluate(f) for f in e.fields]
            if any(f is None for f in fields):
                return None
            return Tuple(fields=tuple(fields), struct_info=e.struct_info)
        if isinstance(e, TupleGetItem):
            t = self.evaluate(e.tuple_value)
            return t.fields[e.index] if isinstance(t, Tuple) else None
        if isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == "call_tir":
            return self.call_tir(e)
        return None

    def call_tir(self, call: Call) -> Expr | None:
        if len(call.args) > 2:
            return None
        func = self.lookup(call.args[0]) if isinstance(call.args[0], GlobalVar) else None
        if not isinstance(func, PrimFunc):
            return None
        args = self.evaluate(call.args[1])
        if args is None:
            return None
        inputs = _tensors(args)
        if inputs is None:
            return None
        s = call.struct_info
        sinfos = list(s.fields) if isinstance(s, TupleStructInfo) else [s]
        if not self.fits(sinfos):
            return None
        try:
            arrays = run_prim_func(func, [c.data for c in inputs],
                                   [(x.static_shape, x.dtype) for x in sinfos])
        except IRCError as err:
            # The same computation would fail at run time: report it now, in context.
            raise IRCError(f"FoldConstant: evaluating R.call_tir({call.args[0].name_hint}) "
                           f"on constants failed: {err.message}", node=call,
                           span=call.span) from err
        consts = [Constant(data=a, struct_info=x) for a, x in zip(arrays, sinfos)]
        if isinstance(s, TupleStructInfo):
            return Tuple(fields=tuple(consts), struct_info=s)
        return consts[0]

    def operator(self, call: Call) -> Expr | None:
        opdef = get_op_def(call.op.name)
        if call.op.name in VM_NATIVE or not opdef.pure:
            return None
        if opdef.legalize is None or not all(_is_constant_operand(a) for a in call.args):
            return None
        s = call.struct_info
        if not self.fits(list(s.fields) if isinstance(s, TupleStructInfo) else [s]):
            return None
        lctx = LegalizeContext(self.mod)
        try:
            lowered = opdef.legalize(lctx, call)
        except IRCError:
            return None
        self.new_funcs.update(lctx.new_funcs)
        return self.evaluate(lowered)


def _is_constant_operand(e: Expr) -> bool:
    if isinstance(e, Tuple):
        return all(_is_constant_operand(f) for f in e.fields)
    return isinstance(e, (Constant, PrimValue, ShapeExpr, StringImm, DataTypeImm))


def _tensors(e: Expr) -> list[Constant] | None:
    if isinstance(e, Constant):
        return [e]
    if isinstance(e, Tuple):
        out: list[Constant] = []
        for f in e.fields:
            sub = _tensors(f)
            if sub is None:
                return None
            out.extend(sub)
        return out
    return None


class _Rewriter(Mutator):
    def __init__(self, folder: _Folder):
        super().__init__()
        self.folder = folder
        self.known: dict[int, Expr] = {}

    def visit_Var(self, v: Var) -> Expr:
        return self.known.get(id(v), v)

    visit_DataflowVar = visit_Var

    def visit_StructInfo(self, s: Any) -> Any:
        return s

    def visit_Function(self, f: Function) -> Expr:
        body = self.visit(f.body)
        return f if body is f.body else f.replace(body=body)

    def visit_SeqExpr(self, e: SeqExpr) -> Expr:
        blocks = []
        for block in e.blocks:
            out = []
            for b in block.bindings:
                value = self.visit(b.value)
                folded = self.fold(value)
                if folded is not None:
                    value = folded
                    self.known[id(b.var)] = folded
                elif isinstance(value, (Constant, Tuple)) and _tensors(value) is not None:
                    self.known[id(b.var)] = value
                out.append(b if value is b.value else b.replace(value=value))
            same = all(x is y for x, y in zip(out, block.bindings))
            blocks.append(block if same else block.replace(bindings=tuple(out)))
        body = self.visit(e.body)
        if body is e.body and all(x is y for x, y in zip(blocks, e.blocks)):
            return e
        return e.replace(blocks=tuple(blocks), body=body)

    def fold(self, value: Expr) -> Expr | None:
        if isinstance(value, Call) and isinstance(value.op, Op):
            if value.op.name == "call_tir":
                return self.folder.call_tir(value)
            return self.folder.operator(value)
        if isinstance(value, TupleGetItem):
            t = value.tuple_value
            if isinstance(t, Tuple) and isinstance(t.fields[value.index], Constant):
                return t.fields[value.index]
        return None


@dataclass(frozen=True)
class FoldConstant(Pass):
    """Evaluate bindings whose inputs are all constants (see the module docstring).

    ``size_limit``: the largest folded result, in elements (None: unlimited)."""

    size_limit: int | None = 1 << 24

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        folder = _Folder(mod, self.size_limit)
        return mod.map_functions(lambda f: _Rewriter(folder).visit(f), Function)


__all__ = ["FoldConstant", "run_prim_func"]

"""Helpers shared by the graph passes (not a pass): leaves, variable substitution, use
collection, purity, fresh names and module reachability."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from ..core.functor import Mutator, Visitor
from ..core.module import IRModule, unique_name
from ..ir.expr import (
    Binding,
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    Expr,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    MatchCast,
    Op,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..ir.op import get_op_def
from ..ir.struct_info import FuncStructInfo

LEAF_TYPES = (Var, GlobalVar, Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm, Op,
              ExternFunc)


def is_leaf(e: Expr) -> bool:
    """True for expressions that need no binding of their own (variables, constants,
    shapes, scalars, callee names)."""
    return isinstance(e, LEAF_TYPES)


def is_leaf_or_tuple(e: Expr) -> bool:
    """True for leaves and tuples (recursively) of leaves: what A-normal form allows as an
    argument."""
    if isinstance(e, Tuple):
        return all(is_leaf_or_tuple(f) for f in e.fields)
    return is_leaf(e)


class _VarSubstituter(Mutator):
    def __init__(self, mapping: dict[int, Expr]):
        super().__init__()
        self.mapping = mapping

    def visit_Var(self, v: Var) -> Expr:
        return self.mapping.get(id(v), v)

    visit_DataflowVar = visit_Var

    def visit_Constant(self, c: Constant) -> Expr:
        return self.mapping.get(id(c), c)

    def visit_StructInfo(self, s: Any) -> Any:
        # Struct info never mentions graph variables; skipping it keeps this fast.
        return s


def substitute_vars(node: Any, mapping: dict[int, Expr]) -> Any:
    """``node`` with graph variables (and constants) replaced (keys are ``id(var)``),
    binding sites included: mapping a bound variable renames its binding."""
    if not mapping:
        return node
    return _VarSubstituter(mapping).visit(node)


class _UseCollector(Visitor):
    def __init__(self) -> None:
        self.used: set[int] = set()

    def visit_Var(self, v: Var) -> None:
        self.used.add(id(v))

    visit_DataflowVar = visit_Var

    def visit_VarBinding(self, b: VarBinding) -> None:
        self.visit(b.value)

    def visit_MatchCast(self, b: MatchCast) -> None:
        self.visit(b.value)

    def visit_Function(self, f: Function) -> None:
        self.visit(f.body)

    def visit_StructInfo(self, s: Any) -> None:
        return None


def used_vars(node: Any) -> set[int]:
    """``id``s of the graph variables ``node`` reads (binding sites and parameters are not
    uses)."""
    c = _UseCollector()
    c.visit(node)
    return c.used


class _GlobalCollector(Visitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_GlobalVar(self, g: GlobalVar) -> None:
        self.names.add(g.name_hint)

    def visit_StructInfo(self, s: Any) -> None:
        return None


def referenced_globals(func: Any) -> set[str]:
    """Names of the module functions that a graph function refers to (calls, call_tir
    targets, function values)."""
    if not isinstance(func, Function):
        return set()
    c = _GlobalCollector()
    c.visit(func.body)
    return c.names


def reachable_functions(mod: IRModule, roots: Iterable[str]) -> set[str]:
    """Names of the functions reachable from ``roots`` through references."""
    seen: set[str] = set()
    stack = [r for r in roots if r in mod]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        for ref in referenced_globals(mod[name]):
            if ref in mod and ref not in seen:
                stack.append(ref)
    return seen


def is_pure_value(e: Expr, mod: IRModule | None = None) -> bool:
    """True when evaluating ``e`` has no side effect, so an unused binding of it may go."""
    if is_leaf(e) or isinstance(e, Function):
        return True
    if isinstance(e, Tuple):
        return all(is_pure_value(f, mod) for f in e.fields)
    if isinstance(e, TupleGetItem):
        return is_pure_value(e.tuple_value, mod)
    if isinstance(e, Call):
        if not all(is_pure_value(a, mod) for a in e.args):
            return False
        op = e.op
        if isinstance(op, Op):
            return get_op_def(op.name).pure
        if isinstance(op, GlobalVar):
            callee = mod.get(op.name_hint) if mod is not None else None
            return isinstance(callee, Function) and callee.is_pure
        if isinstance(op, Var):
            s = op.struct_info
            return isinstance(s, FuncStructInfo) and s.purity
        return False
    if isinstance(e, SeqExpr):
        return all(is_pure_value(b.value, mod) and not isinstance(b, MatchCast)
                   for blk in e.blocks for b in blk.bindings) and is_pure_value(e.body, mod)
    if isinstance(e, If):
        return is_pure_value(e.true_branch, mod) and is_pure_value(e.false_branch, mod)
    return False


def iter_bindings(func: Function) -> Iterator[tuple[BindingBlock, Binding]]:
    """The bindings of a function's top-level SeqExpr, with their blocks."""
    body = func.body
    if isinstance(body, SeqExpr):
        for block in body.blocks:
            for b in block.bindings:
                yield block, b


def collect_names(node: Any) -> set[str]:
    """The names of all graph variables bound or used in ``node``."""
    names: set[str] = set()

    class _Names(Visitor):
        def visit_Var(self, v: Var) -> None:
            # Shape expressions hold loop-IR variables, whose class is also called Var.
            if isinstance(v, Var):
                names.add(v.name_hint)

        visit_DataflowVar = visit_Var

        def visit_StructInfo(self, s: Any) -> None:
            return None

    _Names().visit(node)
    return names


class NameSupply:
    """Fresh variable names within one function: ``lv``, ``lv1``, ... never reusing a
    name already taken."""

    def __init__(self, taken: Iterable[str] = ()):
        self.taken = set(taken)
        # (base, sep) -> the lowest suffix that may be free: asking for one base n times
        # costs n steps in all, not n * n / 2 (a recurrence unrolled over 1,000 steps).
        self._next: dict[tuple[str, str], int] = {}

    def fresh(self, prefix: str, sep: str = "") -> str:
        """A name not taken yet: ``prefix``, else ``prefix{sep}1``, ``prefix{sep}2``, ..."""
        base = prefix.replace(".", "_") or "v"
        name = unique_name(base, self.taken, sep, self._next.get((base, sep), 1))
        if name != base:
            self._next[(base, sep)] = int(name[len(base) + len(sep):]) + 1
        self.taken.add(name)
        return name

    def var(self, value: Expr, dataflow: bool, prefix: str | None = None) -> Var:
        """A new variable typed like ``value`` (a DataflowVar inside dataflow blocks)."""
        if dataflow:
            return DataflowVar(name_hint=self.fresh(prefix or "lv"),
                               struct_info=value.struct_info)
        return Var(name_hint=self.fresh(prefix or "gv"), struct_info=value.struct_info)


def map_dataflow_blocks(func: Function, fn: Callable[[DataflowBlock], DataflowBlock]
                        ) -> Function:
    """``func`` with ``fn(block)`` in place of each dataflow block of its body (the
    function itself when nothing changed or its body is not a sequence of blocks)."""
    body = func.body
    if not isinstance(body, SeqExpr):
        return func
    blocks = tuple(fn(b) if isinstance(b, DataflowBlock) else b for b in body.blocks)
    if all(a is b for a, b in zip(blocks, body.blocks)):
        return func
    return func.replace(body=body.replace(blocks=blocks))


def make_block(bindings: list[Binding], dataflow: bool) -> BindingBlock:
    """A binding block of the requested kind."""
    cls = DataflowBlock if dataflow else BindingBlock
    return cls(bindings=tuple(bindings))


def merge_blocks(blocks: Iterable[BindingBlock]) -> tuple[BindingBlock, ...]:
    """Drop empty blocks and merge neighbours of the same kind (dataflow or not)."""
    out: list[BindingBlock] = []
    for b in blocks:
        if not b.bindings:
            continue
        if out and type(out[-1]) is type(b):
            out[-1] = out[-1].replace(bindings=out[-1].bindings + b.bindings)
        else:
            out.append(b)
    return tuple(out)


def entry_functions(mod: IRModule, extra: Iterable[str] = ()) -> list[str]:
    """Functions callable from outside the module: every graph function not marked
    ``Primitive`` (the VM exposes them all by name), every function with a
    ``global_symbol`` attribute, plus ``extra``."""
    names = []
    for gv, f in mod.functions.items():
        attrs = getattr(f, "attrs", None) or {}
        if "global_symbol" in attrs or (isinstance(f, Function) and
                                        not attrs.get("Primitive")):
            names.append(gv.name_hint)
    for e in extra:
        if e not in names:
            names.append(e)
    return names


__all__ = [
    "LEAF_TYPES", "NameSupply", "collect_names", "entry_functions", "is_leaf",
    "is_leaf_or_tuple", "is_pure_value", "iter_bindings", "make_block", "merge_blocks",
    "reachable_functions", "referenced_globals", "substitute_vars", "used_vars",
]
